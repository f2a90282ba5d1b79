//! Decoding: a serde [`Deserializer`] that walks protobuf bytes with the schema, so that any
//! serde type (k8s-openapi's, `serde_json::Value`, a custom struct) is built straight from the
//! wire with no intermediate message.
//!
//! Go's JSON form is the target: zero value fields tagged `omitempty` are left out, an empty
//! `Time` is absent, and the messages of [`Special`] take their JSON shapes.

use base64::Engine as _;
use serde::de::value::BorrowedStrDeserializer;
use serde::de::{self, DeserializeSeed, Deserializer, IntoDeserializer as _, Visitor};

use crate::envelope::Envelope;
use crate::error::Error;
use crate::schema::{Field, MessageDesc, MessageId, Scalar, Schema, Special, Ty};
use crate::time;
use crate::wire::{Reader, Value};

mod fields;
#[cfg(feature = "k8s-openapi")]
mod message_fields;

pub(crate) use fields::FieldDe;
#[cfg(feature = "k8s-openapi")]
pub(crate) use message_fields::Fields;

/// Deepest nesting of messages (and envelopes inside `RawExtension`s) decoded.
pub(crate) const MAX_DEPTH: usize = 100;

/// Deserializes `T` from the bytes of message `id`; `type_meta` (`apiVersion`, `kind`) comes
/// first, as in the JSON form of a top-level object.
pub(crate) fn from_message<'de, T: de::Deserialize<'de>>(
    schema: &'static Schema,
    id: MessageId,
    bytes: &'de [u8],
    type_meta: Option<(&'de str, &'de str)>,
) -> Result<T, Error> {
    T::deserialize(MessageDe {
        schema,
        id,
        bytes,
        depth: 0,
        type_meta,
    })
}

/// One message.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MessageDe<'de> {
    pub schema: &'static Schema,
    pub id: MessageId,
    pub bytes: &'de [u8],
    pub depth: usize,
    pub type_meta: Option<(&'de str, &'de str)>,
}

impl<'de> MessageDe<'de> {
    pub(crate) fn desc(&self) -> &'static MessageDesc {
        self.schema.message(self.id)
    }

    /// The first occurrence of field `number` (for the small special messages).
    fn first(&self, number: u32) -> Result<Option<Value<'de>>, Error> {
        let mut r = Reader::new(self.bytes);
        while !r.is_empty() {
            let (n, v) = r.field()?;
            if n == number {
                return Ok(Some(v));
            }
        }
        Ok(None)
    }

    /// The JSON form is `null` (an empty `Time`, an empty `RawExtension`).
    pub(crate) fn is_null(&self) -> Result<bool, Error> {
        Ok(match self.desc().special {
            Special::Time | Special::MicroTime => self.bytes.is_empty(),
            Special::RawJson => !matches!(self.first(1)?, Some(Value::Bytes(b)) if !b.is_empty()),
            _ => false,
        })
    }
}

fn varint_of(v: Option<Value<'_>>) -> Result<u64, Error> {
    match v {
        None => Ok(0),
        Some(Value::Varint(x)) => Ok(x),
        Some(_) => Err(Error::Invalid("expected a varint".into())),
    }
}

fn bytes_of(v: Option<Value<'_>>) -> Result<&[u8], Error> {
    match v {
        None => Ok(&[]),
        Some(Value::Bytes(b)) => Ok(b),
        Some(_) => Err(Error::Invalid("expected a length-delimited field".into())),
    }
}

fn utf8(b: &[u8]) -> Result<&str, Error> {
    std::str::from_utf8(b).map_err(|e| Error::Invalid(format!("string field is not UTF-8: {e}")))
}

impl<'de> Deserializer<'de> for MessageDe<'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        if self.depth > MAX_DEPTH {
            return Err(Error::TooDeep(MAX_DEPTH));
        }
        let desc = self.desc();
        match desc.special {
            Special::None => visitor.visit_map(FieldsAccess::new(self)),
            Special::Time | Special::MicroTime => {
                if self.bytes.is_empty() {
                    return visitor.visit_unit();
                }
                let seconds = varint_of(self.first(1)?)? as i64;
                let nanos = varint_of(self.first(2)?)? as i32;
                let fast = if desc.special == Special::Time {
                    time::Text::seconds(seconds)
                } else {
                    time::Text::micros(seconds, nanos)
                };
                if let Some(text) = fast {
                    return visitor.visit_str(text.as_str());
                }
                let s = if desc.special == Special::Time {
                    time::format_seconds(seconds)?
                } else {
                    time::format_micros(seconds, nanos)?
                };
                visitor.visit_string(s)
            }
            Special::Quantity => match self.first(1)? {
                None => visitor.visit_borrowed_str("0"),
                v => visitor.visit_borrowed_str(utf8(bytes_of(v)?)?),
            },
            Special::IntOrString => {
                if varint_of(self.first(1)?)? == 1 {
                    visitor.visit_borrowed_str(utf8(bytes_of(self.first(3)?)?)?)
                } else {
                    visitor.visit_i32(varint_of(self.first(2)?)? as i32)
                }
            }
            Special::RawJson => {
                let raw = bytes_of(self.first(1)?)?;
                embedded(self.schema, raw, self.depth + 1, visitor)
            }
            Special::StringArray => {
                let mut r = Reader::new(self.bytes);
                let mut first = None;
                while !r.is_empty() {
                    let (n, v) = r.field()?;
                    if n == 1 {
                        first = Some(v);
                        break;
                    }
                }
                match (first, desc.field(1)) {
                    (Some(v), Some(field)) => {
                        visitor.visit_seq(RepeatedAccess::new(self.schema, field, v, r, self.depth))
                    }
                    _ => visitor.visit_seq(de::value::SeqDeserializer::<
                        std::iter::Empty<&str>,
                        Error,
                    >::new(std::iter::empty())),
                }
            }
            Special::Unsupported => Err(Error::Custom(format!(
                "{} has no JSON form in this crate",
                desc.name
            ))),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        if self.is_null()? {
            visitor.visit_none()
        } else {
            visitor.visit_some(self)
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_unit()
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct seq tuple tuple_struct map struct enum identifier
    }
}

/// The JSON value held in a `RawExtension`/`FieldsV1`: JSON bytes, or an enveloped protobuf
/// object (as in a watch event).
fn embedded<'de, V: Visitor<'de>>(
    schema: &'static Schema,
    raw: &'de [u8],
    depth: usize,
    visitor: V,
) -> Result<V::Value, Error> {
    if raw.is_empty() {
        return visitor.visit_unit();
    }
    if depth > MAX_DEPTH {
        return Err(Error::TooDeep(MAX_DEPTH));
    }
    if raw.starts_with(&crate::envelope::MAGIC) {
        let env = Envelope::parse(raw)?;
        let id = env.message_id(schema)?;
        return MessageDe {
            schema,
            id,
            bytes: env.raw,
            depth,
            type_meta: Some((env.api_version, env.kind)),
        }
        .deserialize_any(visitor);
    }
    let mut de = serde_json::Deserializer::from_slice(raw);
    let value = de
        .deserialize_any(visitor)
        .map_err(|e| Error::Custom(format!("embedded JSON: {e}")))?;
    de.end()
        .map_err(|e| Error::Custom(format!("embedded JSON: {e}")))?;
    Ok(value)
}

/// A small set of field numbers (the repeated and map fields already handed out).
#[derive(Debug, Default)]
struct Seen {
    low: u64,
    high: Vec<u32>,
}

impl Seen {
    fn insert(&mut self, n: u32) {
        if n < 64 {
            self.low |= 1 << n;
        } else {
            self.high.push(n);
        }
    }

    fn contains(&self, n: u32) -> bool {
        if n < 64 {
            self.low & (1 << n) != 0
        } else {
            self.high.contains(&n)
        }
    }
}

enum Pending<'de> {
    None,
    Str(&'de str),
    /// A field, its first value, and the rest of its message (for repeated fields).
    Field(&'static Field, Value<'de>, Reader<'de>),
}

/// The message of an inlined field being read (its fields are the parent's in JSON).
struct Inline<'de> {
    desc: &'static MessageDesc,
    reader: Reader<'de>,
    seen: Seen,
}

/// The fields of a message as a serde map: one key per field, repeated fields gathered into
/// one sequence wherever their occurrences are, inlined fields' fields in place.
struct FieldsAccess<'de> {
    schema: &'static Schema,
    desc: &'static MessageDesc,
    reader: Reader<'de>,
    depth: usize,
    type_meta: Option<(&'de str, &'de str)>,
    meta_keys: u8,
    seen: Seen,
    inline: Option<Inline<'de>>,
    pending: Pending<'de>,
}

impl<'de> FieldsAccess<'de> {
    fn new(m: MessageDe<'de>) -> Self {
        Self {
            schema: m.schema,
            desc: m.desc(),
            reader: Reader::new(m.bytes),
            depth: m.depth,
            type_meta: m.type_meta,
            meta_keys: 0,
            seen: Seen::default(),
            inline: None,
            pending: Pending::None,
        }
    }
}

/// The next field of `reader` that has a JSON key: unknown fields, repeated fields already
/// handed out and omitted zeros are skipped.
fn next_field<'de>(
    desc: &'static MessageDesc,
    reader: &mut Reader<'de>,
    seen: &mut Seen,
) -> Result<Option<(&'static Field, Value<'de>)>, Error> {
    while !reader.is_empty() {
        let (number, value) = reader.field()?;
        let Some(field) = desc.field(number) else {
            continue; // unknown to this schema: a newer server's field, skipped as Go does
        };
        if field.many {
            if seen.contains(number) {
                continue;
            }
            seen.insert(number);
        } else if field.skip_zero && value.is_zero() {
            continue;
        }
        return Ok(Some((field, value)));
    }
    Ok(None)
}

impl<'de> de::MapAccess<'de> for FieldsAccess<'de> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        if let Some((api_version, kind)) = self.type_meta {
            let (key, value) = match self.meta_keys {
                0 => ("apiVersion", api_version),
                1 => ("kind", kind),
                _ => ("", ""),
            };
            if !key.is_empty() {
                self.meta_keys += 1;
                self.pending = Pending::Str(value);
                return seed
                    .deserialize(BorrowedStrDeserializer::new(key))
                    .map(Some);
            }
        }
        let (field, value, rest) = loop {
            if let Some(inline) = &mut self.inline {
                if let Some((field, value)) =
                    next_field(inline.desc, &mut inline.reader, &mut inline.seen)?
                {
                    if field.inline {
                        return Err(Error::Custom(format!(
                            "{}: inlined field inside an inlined field",
                            inline.desc.name
                        )));
                    }
                    break (field, value, inline.reader);
                }
                self.inline = None;
            }
            let Some((field, value)) = next_field(self.desc, &mut self.reader, &mut self.seen)?
            else {
                return Ok(None);
            };
            if field.inline
                && let (Ty::Message(id), Value::Bytes(bytes)) = (field.ty, value)
            {
                self.inline = Some(Inline {
                    desc: self.schema.message(id),
                    reader: Reader::new(bytes),
                    seen: Seen::default(),
                });
                continue;
            }
            break (field, value, self.reader);
        };
        self.pending = Pending::Field(field, value, rest);
        seed.deserialize(BorrowedStrDeserializer::new(&field.name))
            .map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        match std::mem::replace(&mut self.pending, Pending::None) {
            Pending::None => Err(Error::Custom("value asked for before its key".into())),
            Pending::Str(s) => seed.deserialize(BorrowedStrDeserializer::new(s)),
            Pending::Field(field, value, rest) => FieldDe {
                schema: self.schema,
                field,
                value,
                rest,
                depth: self.depth,
            }
            .deserialize(seed),
        }
    }
}

/// Every occurrence of one repeated field: the first one, then those further on (packed
/// scalars unpacked).
pub(crate) struct RepeatedAccess<'de> {
    schema: &'static Schema,
    field: &'static Field,
    first: Option<Value<'de>>,
    rest: Reader<'de>,
    packed: Option<Reader<'de>>,
    depth: usize,
}

impl<'de> RepeatedAccess<'de> {
    fn new(
        schema: &'static Schema,
        field: &'static Field,
        first: Value<'de>,
        rest: Reader<'de>,
        depth: usize,
    ) -> Self {
        Self {
            schema,
            field,
            first: Some(first),
            rest,
            packed: None,
            depth,
        }
    }

    pub(crate) fn next_value(&mut self) -> Result<Option<Value<'de>>, Error> {
        loop {
            if let Some(p) = &mut self.packed {
                if !p.is_empty() {
                    return packed_element(self.field, p).map(Some);
                }
                self.packed = None;
            }
            let v = match self.first.take() {
                Some(v) => v,
                None => loop {
                    if self.rest.is_empty() {
                        return Ok(None);
                    }
                    let (n, v) = self.rest.field()?;
                    if n == self.field.number {
                        break v;
                    }
                },
            };
            match (self.field.ty, v) {
                (Ty::Scalar(s), Value::Bytes(b)) if is_packable(s) => {
                    self.packed = Some(Reader::new(b));
                }
                _ => return Ok(Some(v)),
            }
        }
    }
}

fn is_packable(s: Scalar) -> bool {
    !matches!(s, Scalar::String | Scalar::Bytes)
}

fn packed_element<'de>(field: &Field, r: &mut Reader<'de>) -> Result<Value<'de>, Error> {
    match field.ty {
        Ty::Scalar(Scalar::Double | Scalar::Fixed64 | Scalar::SFixed64) => {
            r.fixed64().map(Value::Fixed64)
        }
        Ty::Scalar(Scalar::Float | Scalar::Fixed32 | Scalar::SFixed32) => {
            r.fixed32().map(Value::Fixed32)
        }
        _ => r.varint().map(Value::Varint),
    }
}

impl<'de> de::SeqAccess<'de> for RepeatedAccess<'de> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Error> {
        match self.next_value()? {
            None => Ok(None),
            Some(value) => seed
                .deserialize(ValueDe {
                    schema: self.schema,
                    ty: self.field.ty,
                    value,
                    depth: self.depth,
                })
                .map(Some),
        }
    }
}

/// A field holding many values (repeated, map) as a serde collection: `$visit` hands the
/// access (the tuple struct's field) to the visitor; `Option`s are `Some`, newtypes are seen
/// through, and an ignored collection is skipped whole.
macro_rules! collection_deserializer {
    ($de:ident, $visit:ident) => {
        impl<'de> Deserializer<'de> for $de<'de> {
            type Error = Error;

            fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
                visitor.$visit(self.0)
            }

            fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
                visitor.visit_some(self)
            }

            fn deserialize_newtype_struct<V: Visitor<'de>>(
                self,
                _name: &'static str,
                visitor: V,
            ) -> Result<V::Value, Error> {
                visitor.visit_newtype_struct(self)
            }

            fn deserialize_ignored_any<V: Visitor<'de>>(
                self,
                visitor: V,
            ) -> Result<V::Value, Error> {
                visitor.visit_unit()
            }

            serde::forward_to_deserialize_any! {
                bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
                bytes byte_buf unit unit_struct seq tuple tuple_struct map struct enum identifier
            }
        }
    };
}

/// A repeated field as a serde sequence.
struct SeqDe<'de>(RepeatedAccess<'de>);

collection_deserializer!(SeqDe, visit_seq);

/// The entries of a `map<K, V>` field.
struct EntriesAccess<'de> {
    inner: RepeatedAccess<'de>,
    entry: &'static MessageDesc,
    value: Option<Value<'de>>,
}

/// Zero value of a type (for an entry without key or value).
fn zero(ty: Ty) -> Value<'static> {
    match ty {
        Ty::Scalar(Scalar::Double | Scalar::Fixed64 | Scalar::SFixed64) => Value::Fixed64(0),
        Ty::Scalar(Scalar::Float | Scalar::Fixed32 | Scalar::SFixed32) => Value::Fixed32(0),
        Ty::Scalar(Scalar::String | Scalar::Bytes) | Ty::Message(_) | Ty::Map(_) => {
            Value::Bytes(&[])
        }
        Ty::Scalar(_) => Value::Varint(0),
    }
}

impl<'de> de::MapAccess<'de> for EntriesAccess<'de> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        let Some(entry) = self.inner.next_value()? else {
            return Ok(None);
        };
        let Value::Bytes(bytes) = entry else {
            return Err(Error::Invalid("map entry is not length-delimited".into()));
        };
        let (Some(kf), Some(vf)) = (self.entry.field(1), self.entry.field(2)) else {
            return Err(Error::Invalid(format!(
                "{} is not a map entry",
                self.entry.name
            )));
        };
        let (mut key, mut value) = (zero(kf.ty), zero(vf.ty));
        let mut r = Reader::new(bytes);
        while !r.is_empty() {
            match r.field()? {
                (1, v) => key = v,
                (2, v) => value = v,
                _ => {}
            }
        }
        self.value = Some(value);
        let schema = self.inner.schema;
        let depth = self.inner.depth;
        seed.deserialize(ValueDe {
            schema,
            ty: kf.ty,
            value: key,
            depth,
        })
        .map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        let value = self
            .value
            .take()
            .ok_or_else(|| Error::Custom("map value asked for before its key".into()))?;
        let ty = self
            .entry
            .field(2)
            .map(|f| f.ty)
            .unwrap_or(Ty::Scalar(Scalar::String));
        seed.deserialize(ValueDe {
            schema: self.inner.schema,
            ty,
            value,
            depth: self.inner.depth,
        })
    }
}

/// A map field as a serde map.
struct MapDe<'de>(EntriesAccess<'de>);

collection_deserializer!(MapDe, visit_map);

/// One value of a field (a scalar or a message).
pub(crate) struct ValueDe<'de> {
    schema: &'static Schema,
    ty: Ty,
    value: Value<'de>,
    depth: usize,
}

impl<'de> ValueDe<'de> {
    pub(crate) fn message(&self, id: MessageId) -> Result<MessageDe<'de>, Error> {
        match self.value {
            Value::Bytes(bytes) => Ok(MessageDe {
                schema: self.schema,
                id,
                bytes,
                depth: self.depth + 1,
                type_meta: None,
            }),
            _ => Err(Error::Invalid(format!(
                "{} field is not length-delimited",
                self.schema.message(id).name
            ))),
        }
    }
}

fn wrong(s: Scalar) -> Error {
    Error::Invalid(format!("wrong wire type for a {s:?} field"))
}

impl<'de> Deserializer<'de> for ValueDe<'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let s = match self.ty {
            Ty::Message(id) => return self.message(id)?.deserialize_any(visitor),
            Ty::Map(id) => return self.message(id)?.deserialize_any(visitor),
            Ty::Scalar(s) => s,
        };
        match (s, self.value) {
            (Scalar::String, Value::Bytes(b)) => visitor.visit_borrowed_str(utf8(b)?),
            (Scalar::Bytes, Value::Bytes(b)) => {
                visitor.visit_string(base64::engine::general_purpose::STANDARD.encode(b))
            }
            (Scalar::Bool, Value::Varint(x)) => visitor.visit_bool(x != 0),
            (Scalar::Int32, Value::Varint(x)) => visitor.visit_i32(x as i32),
            (Scalar::Int64, Value::Varint(x)) => visitor.visit_i64(x as i64),
            (Scalar::UInt32, Value::Varint(x)) => visitor.visit_u32(x as u32),
            (Scalar::UInt64, Value::Varint(x)) => visitor.visit_u64(x),
            (Scalar::SInt32, Value::Varint(x)) => {
                let x = x as u32;
                visitor.visit_i32(((x >> 1) as i32) ^ -((x & 1) as i32))
            }
            (Scalar::SInt64, Value::Varint(x)) => {
                visitor.visit_i64(((x >> 1) as i64) ^ -((x & 1) as i64))
            }
            (Scalar::Fixed32, Value::Fixed32(x)) => visitor.visit_u32(x),
            (Scalar::SFixed32, Value::Fixed32(x)) => visitor.visit_i32(x as i32),
            (Scalar::Float, Value::Fixed32(x)) => visitor.visit_f32(f32::from_bits(x)),
            (Scalar::Fixed64, Value::Fixed64(x)) => visitor.visit_u64(x),
            (Scalar::SFixed64, Value::Fixed64(x)) => visitor.visit_i64(x as i64),
            (Scalar::Double, Value::Fixed64(x)) => visitor.visit_f64(f64::from_bits(x)),
            (s, _) => Err(wrong(s)),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.ty {
            Ty::Message(id) => self.message(id)?.deserialize_option(visitor),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_unit()
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        // A string-valued enum (unit variants), as JSON spells it.
        match (self.ty, self.value) {
            (Ty::Scalar(Scalar::String), Value::Bytes(b)) => {
                visitor.visit_enum(utf8(b)?.into_deserializer())
            }
            _ => self.deserialize_any(visitor),
        }
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct seq tuple tuple_struct map struct identifier
    }
}
