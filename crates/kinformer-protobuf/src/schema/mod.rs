//! The message schema: Kubernetes' `generated.proto` files, compiled into a descriptor set
//! (`proto/descriptors.bin`), indexed for the transcoder.
//!
//! Field names in Kubernetes' `.proto` files are the JSON names, so a message's fields map
//! one to one onto the JSON object's keys. A few messages have a JSON form of their own
//! ([`Special`]).

use std::collections::HashMap;
use std::sync::OnceLock;

use prost::Message as _;

use self::descriptor::{DescriptorProto, FileDescriptorSet, Label, Type};

use crate::error::Error;

mod descriptor;

/// The descriptor set compiled from `proto/k8s.io/**/generated.proto` (see `proto/README.md`).
pub(crate) const DESCRIPTORS: &[u8] = include_bytes!("../../proto/descriptors.bin");
/// Per message, the value fields Go's JSON encoder omits when zero (see `proto/vendor.py`).
const OMITEMPTY: &str = include_str!("../../proto/omitempty.txt");
/// Per message, the embedded structs whose fields Go's JSON inlines (see `proto/vendor.py`).
const INLINE: &str = include_str!("../../proto/inline.txt");

/// Index of a message in [`Schema::messages`].
pub(crate) type MessageId = u32;

/// A scalar protobuf type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scalar {
    Double,
    Float,
    Int64,
    UInt64,
    Int32,
    UInt32,
    SInt32,
    SInt64,
    Fixed64,
    Fixed32,
    SFixed64,
    SFixed32,
    Bool,
    String,
    Bytes,
}

/// A field's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ty {
    Scalar(Scalar),
    Message(MessageId),
    /// A `map<K, V>`: the id of its entry message (`key = 1`, `value = 2`).
    Map(MessageId),
}

/// Messages whose JSON form is not an object of their fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Special {
    None,
    /// `meta.v1.Time` `{seconds, nanos}` ⇄ RFC 3339 in seconds; an empty message is `null`.
    Time,
    /// `meta.v1.MicroTime` ⇄ RFC 3339 with six fractional digits.
    MicroTime,
    /// `resource.Quantity` `{string}` ⇄ its string.
    Quantity,
    /// `intstr.IntOrString` `{type, intVal, strVal}` ⇄ a number or a string.
    IntOrString,
    /// `runtime.RawExtension` and `meta.v1.FieldsV1`: `{raw}` ⇄ the JSON value in `raw`.
    RawJson,
    /// A named string slice (`Verbs`, `ExtraValue`, ...): `{repeated string items}` ⇄ an array.
    StringArray,
    /// A message this crate cannot transcode (e.g. `meta.v1.Duration`): an error either way.
    Unsupported,
}

/// One field of a message.
#[derive(Debug)]
pub(crate) struct Field {
    pub name: Box<str>,
    pub number: u32,
    pub ty: Ty,
    pub repeated: bool,
    /// Go's JSON form omits this field when it holds its zero value (a value field tagged
    /// `omitempty`); Go's protobuf form always writes it.
    pub omit_zero: bool,
    /// An embedded struct whose fields are the parent's in JSON (`Probe.handler`).
    pub inline: bool,
    /// Repeated or a map: its occurrences make one JSON value.
    pub many: bool,
    /// An occurrence holding its zero value has no JSON key: an `omit_zero` scalar, or an
    /// empty `Time`/`MicroTime` (Go's JSON omits neither, but its zero time is `null`).
    pub skip_zero: bool,
}

/// One message.
#[derive(Debug)]
pub(crate) struct MessageDesc {
    pub name: Box<str>,
    pub fields: Vec<Field>,
    /// Field number → index in `fields` + 1 (0: no such field), for numbers below 1024.
    by_number: Vec<u16>,
    /// Indices in `fields`, in the order of the fields' names (a binary search finds a name
    /// without a second copy of it).
    by_name: Box<[u32]>,
    pub special: Special,
    /// Indices in `fields` of the inlined fields.
    pub inlined: Vec<usize>,
}

impl MessageDesc {
    /// The field with this number.
    #[inline]
    pub(crate) fn field(&self, number: u32) -> Option<&Field> {
        match self.by_number.get(number as usize) {
            Some(0) => None,
            Some(i) => self.fields.get(usize::from(*i) - 1),
            None => self.fields.iter().find(|f| f.number == number),
        }
    }

    /// The field with this JSON name.
    pub(crate) fn field_named(&self, name: &str) -> Option<&Field> {
        let i = self
            .by_name
            .binary_search_by(|&i| self.fields[i as usize].name.as_ref().cmp(name))
            .ok()?;
        self.fields.get(self.by_name[i] as usize)
    }
}

/// Every message of the vendored `.proto` files.
#[derive(Debug)]
pub(crate) struct Schema {
    pub messages: Vec<MessageDesc>,
    by_name: HashMap<Box<str>, MessageId>,
}

impl Schema {
    /// The schema of the vendored Kubernetes types, built once.
    pub(crate) fn get() -> Result<&'static Schema, Error> {
        static SCHEMA: OnceLock<Result<Schema, Error>> = OnceLock::new();
        SCHEMA
            .get_or_init(|| Schema::build(DESCRIPTORS, OMITEMPTY, INLINE))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// The message with this id.
    #[inline]
    pub(crate) fn message(&self, id: MessageId) -> &MessageDesc {
        // Ids are only made by `build`, as indices into `messages`.
        &self.messages[id as usize]
    }

    /// The message with this full name (`k8s.io.api.core.v1.Pod`).
    pub(crate) fn message_id(&self, full_name: &str) -> Option<MessageId> {
        self.by_name.get(full_name).copied()
    }

    pub(crate) fn build(
        descriptors: &[u8],
        omitempty: &str,
        inline: &str,
    ) -> Result<Schema, Error> {
        let set = FileDescriptorSet::decode(descriptors)
            .map_err(|e| Error::Invalid(format!("descriptor set: {e}")))?;
        // First pass: names of every message, nested ones included.
        let mut protos = Vec::new();
        for file in &set.file {
            let package = file.package();
            for m in &file.message_type {
                collect(package, m, &mut protos);
            }
        }
        let by_name: HashMap<Box<str>, MessageId> = protos
            .iter()
            .enumerate()
            .map(|(i, (name, _))| (name.clone().into_boxed_str(), i as MessageId))
            .collect();
        let omit = numbers_table(omitempty);
        let inlined = numbers_table(inline);
        let mut messages = Vec::with_capacity(protos.len());
        for (name, proto) in &protos {
            let omitted = omit.get(name.as_str());
            let inline = inlined.get(name.as_str());
            let mut fields = Vec::with_capacity(proto.field.len());
            for f in &proto.field {
                let number = u32::try_from(f.number())
                    .map_err(|_| Error::Invalid(format!("{name}: bad field number")))?;
                let scalar = match f.r#type() {
                    Type::Double => Some(Scalar::Double),
                    Type::Float => Some(Scalar::Float),
                    Type::Int64 => Some(Scalar::Int64),
                    Type::Uint64 => Some(Scalar::UInt64),
                    Type::Int32 | Type::Enum => Some(Scalar::Int32),
                    Type::Fixed64 => Some(Scalar::Fixed64),
                    Type::Fixed32 => Some(Scalar::Fixed32),
                    Type::Bool => Some(Scalar::Bool),
                    Type::String => Some(Scalar::String),
                    Type::Bytes => Some(Scalar::Bytes),
                    Type::Uint32 => Some(Scalar::UInt32),
                    Type::Sfixed32 => Some(Scalar::SFixed32),
                    Type::Sfixed64 => Some(Scalar::SFixed64),
                    Type::Sint32 => Some(Scalar::SInt32),
                    Type::Sint64 => Some(Scalar::SInt64),
                    Type::Message | Type::Group => None,
                };
                let mut repeated = f.label() == Label::Repeated;
                let ty = match scalar {
                    Some(s) => Ty::Scalar(s),
                    None => {
                        let target = f.type_name().trim_start_matches('.');
                        let id = *by_name.get(target).ok_or_else(|| {
                            Error::Invalid(format!("{name}.{}: unknown type {target}", f.name()))
                        })?;
                        let is_map = protos[id as usize]
                            .1
                            .options
                            .as_ref()
                            .is_some_and(|o| o.map_entry());
                        if is_map {
                            repeated = false;
                            Ty::Map(id)
                        } else {
                            Ty::Message(id)
                        }
                    }
                };
                fields.push(Field {
                    name: f.name().into(),
                    number,
                    ty,
                    repeated,
                    omit_zero: omitted.is_some_and(|o| o.contains(&number)),
                    inline: inline.is_some_and(|o| o.contains(&number)),
                    many: false,
                    skip_zero: false,
                });
            }
            let max = fields.iter().map(|f| f.number).max().unwrap_or(0);
            let mut by_number = vec![0u16; (max.min(1023) + 1) as usize];
            for (i, f) in fields.iter().enumerate() {
                if let (Some(slot), Ok(idx)) =
                    (by_number.get_mut(f.number as usize), u16::try_from(i + 1))
                {
                    *slot = idx;
                }
            }
            let mut by_name: Vec<u32> = (0..).take(fields.len()).collect();
            by_name
                .sort_unstable_by(|&a, &b| fields[a as usize].name.cmp(&fields[b as usize].name));
            let special = special_of(name, &fields);
            messages.push(MessageDesc {
                name: name.clone().into_boxed_str(),
                fields,
                by_number,
                by_name: by_name.into_boxed_slice(),
                special,
                inlined: Vec::new(),
            });
        }
        // Inlining applies to plain messages only (not to `Duration`'s or `Unknown`'s).
        let plain: Vec<bool> = messages
            .iter()
            .map(|m| m.special == Special::None)
            .collect();
        let times: Vec<bool> = messages
            .iter()
            .map(|m| matches!(m.special, Special::Time | Special::MicroTime))
            .collect();
        for m in &mut messages {
            for (i, f) in m.fields.iter_mut().enumerate() {
                f.many = f.repeated || matches!(f.ty, Ty::Map(_));
                f.skip_zero = !f.many
                    && match f.ty {
                        Ty::Scalar(_) => f.omit_zero,
                        Ty::Message(id) => times[id as usize],
                        Ty::Map(_) => false,
                    };
                f.inline &= matches!(f.ty, Ty::Message(id) if plain[id as usize]) && !f.repeated;
                if f.inline {
                    m.inlined.push(i);
                }
            }
        }
        Ok(Schema { messages, by_name })
    }
}

/// `name n n n` lines, `#` comments.
fn numbers_table(text: &str) -> HashMap<&str, Vec<u32>> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let mut parts = l.split_whitespace();
            let name = parts.next()?;
            Some((name, parts.filter_map(|n| n.parse().ok()).collect()))
        })
        .collect()
}

/// Every message of `m` (itself and the nested ones) with its full name, borrowed from the
/// descriptor set: copying them would double what building the schema allocates.
fn collect<'a>(prefix: &str, m: &'a DescriptorProto, out: &mut Vec<(String, &'a DescriptorProto)>) {
    let name = format!("{prefix}.{}", m.name());
    for nested in &m.nested_type {
        collect(&name, nested, out);
    }
    out.push((name, m));
}

fn special_of(name: &str, fields: &[Field]) -> Special {
    match name {
        "k8s.io.apimachinery.pkg.apis.meta.v1.Time" => Special::Time,
        "k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime" => Special::MicroTime,
        "k8s.io.apimachinery.pkg.api.resource.Quantity" => Special::Quantity,
        "k8s.io.apimachinery.pkg.util.intstr.IntOrString" => Special::IntOrString,
        "k8s.io.apimachinery.pkg.runtime.RawExtension"
        | "k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1" => Special::RawJson,
        "k8s.io.apimachinery.pkg.apis.meta.v1.Duration"
        | "k8s.io.apimachinery.pkg.apis.meta.v1.Timestamp"
        | "k8s.io.apimachinery.pkg.runtime.Unknown"
        | "k8s.io.apimachinery.pkg.api.resource.QuantityValue" => Special::Unsupported,
        _ => match fields {
            [f] if &*f.name == "items" && f.repeated && f.ty == Ty::Scalar(Scalar::String) => {
                Special::StringArray
            }
            _ => Special::None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_vendored_schema_loads_with_special_types_and_omitempty() {
        let s = Schema::get().unwrap();
        let pod = s.message(s.message_id("k8s.io.api.core.v1.Pod").unwrap());
        assert_eq!(pod.field(1).map(|f| &*f.name), Some("metadata"));
        let meta = s.message(
            s.message_id("k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta")
                .unwrap(),
        );
        let labels = meta.field_named("labels").unwrap();
        assert!(matches!(labels.ty, Ty::Map(_)) && !labels.repeated);
        assert!(meta.field_named("generateName").unwrap().omit_zero);
        let ts = meta.field_named("creationTimestamp").unwrap();
        assert!(matches!(ts.ty, Ty::Message(id) if s.message(id).special == Special::Time));
        let spec = s.message(s.message_id("k8s.io.api.apps.v1.DeploymentSpec").unwrap());
        // `replicas` is a pointer in Go: zero is kept.
        assert!(!spec.field_named("replicas").unwrap().omit_zero);
        let verbs = s.message(
            s.message_id("k8s.io.apimachinery.pkg.apis.meta.v1.Verbs")
                .unwrap(),
        );
        assert_eq!(verbs.special, Special::StringArray);
        let c = s.message(s.message_id("k8s.io.api.core.v1.Container").unwrap());
        assert!(c.field_named("containers").is_none() && c.field_named("env").unwrap().repeated);
        let probe = s.message(s.message_id("k8s.io.api.core.v1.Probe").unwrap());
        assert!(probe.field_named("handler").unwrap().inline && probe.inlined.len() == 1);
    }

    #[test]
    fn every_field_is_found_by_its_name_and_no_other() {
        let s = Schema::get().unwrap();
        let mut fields = 0;
        for m in &s.messages {
            for f in &m.fields {
                let found = m.field_named(&f.name).unwrap();
                assert_eq!(
                    (found.number, &found.name),
                    (f.number, &f.name),
                    "{}",
                    m.name
                );
                fields += 1;
            }
            assert!(m.field_named("").is_none() && m.field_named("~none").is_none());
        }
        assert!(
            s.messages.len() > 1_000 && fields > 1_000,
            "{} messages, {fields} fields",
            s.messages.len()
        );
    }
}
