//! Encoding: a serde [`Serializer`] that writes protobuf with the schema, so that any serde
//! value (a k8s-openapi object, a `serde_json::Value`) becomes Kubernetes protobuf directly.
//!
//! Fields are written as present in the value (a `None` or JSON `null` writes nothing; a
//! present zero is written), which Go's decoder reads back to the same object.

use base64::Engine as _;
use serde::Serialize;
use serde::ser::{self, Impossible, Serializer};

use crate::error::Error;
use crate::schema::{Field, MessageDesc, MessageId, Scalar, Schema, Special, Ty};
use crate::time;
use crate::wire::{self, FIXED32, FIXED64};

/// Encodes `value` as message `id`. At the top level, `apiVersion` and `kind` are not fields
/// of the message (the envelope carries them) and are skipped.
pub(crate) fn to_message<T: Serialize + ?Sized>(
    schema: &'static Schema,
    id: MessageId,
    value: &T,
) -> Result<Vec<u8>, Error> {
    let mut out = Vec::new();
    value.serialize(MessageSer {
        schema,
        desc: schema.message(id),
        out: &mut out,
        number: None,
        top: true,
    })?;
    Ok(out)
}

fn unsupported(what: &str, desc: &str) -> Error {
    Error::Custom(format!("cannot encode {what} as {desc}"))
}

/// A message: the top-level object, or a nested one (`number` is its field in the parent).
struct MessageSer<'a> {
    schema: &'static Schema,
    desc: &'static MessageDesc,
    out: &'a mut Vec<u8>,
    number: Option<u32>,
    top: bool,
}

impl<'a> MessageSer<'a> {
    fn fields(self) -> FieldsSer<'a> {
        FieldsSer {
            schema: self.schema,
            desc: self.desc,
            buf: Vec::new(),
            parent: self.out,
            number: self.number,
            top: self.top,
            key: None,
            inlined: Vec::new(),
        }
    }

    fn wrong(&self, what: &str) -> Error {
        unsupported(what, &format!("message {}", self.desc.name))
    }
}

macro_rules! refuse {
    ($($method:ident($($arg:ty),*) $what:literal;)*) => {
        $(fn $method(self, $(_: $arg),*) -> Result<(), Error> {
            Err(self.wrong($what))
        })*
    };
}

impl<'a> Serializer for MessageSer<'a> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = Impossible<(), Error>;
    type SerializeTuple = Impossible<(), Error>;
    type SerializeTupleStruct = Impossible<(), Error>;
    type SerializeTupleVariant = Impossible<(), Error>;
    type SerializeMap = FieldsSer<'a>;
    type SerializeStruct = FieldsSer<'a>;
    type SerializeStructVariant = Impossible<(), Error>;

    refuse! {
        serialize_bool(bool) "a boolean";
        serialize_i8(i8) "a number";
        serialize_i16(i16) "a number";
        serialize_i32(i32) "a number";
        serialize_i64(i64) "a number";
        serialize_u8(u8) "a number";
        serialize_u16(u16) "a number";
        serialize_u32(u32) "a number";
        serialize_u64(u64) "a number";
        serialize_f32(f32) "a number";
        serialize_f64(f64) "a number";
        serialize_char(char) "a string";
        serialize_str(&str) "a string";
        serialize_bytes(&[u8]) "bytes";
        serialize_unit_struct(&'static str) "a unit struct";
        serialize_unit_variant(&'static str, u32, &'static str) "an enum";
    }

    fn serialize_none(self) -> Result<(), Error> {
        Ok(())
    }

    fn serialize_unit(self) -> Result<(), Error> {
        Ok(())
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Error> {
        value.serialize(self)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<(), Error> {
        Err(self.wrong("an enum"))
    }

    fn serialize_seq(self, _len: Option<usize>) -> Result<Self::SerializeSeq, Error> {
        Err(self.wrong("an array"))
    }

    fn serialize_tuple(self, _len: usize) -> Result<Self::SerializeTuple, Error> {
        Err(self.wrong("a tuple"))
    }

    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, Error> {
        Err(self.wrong("a tuple"))
    }

    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, Error> {
        Err(self.wrong("an enum"))
    }

    fn serialize_map(self, _len: Option<usize>) -> Result<FieldsSer<'a>, Error> {
        Ok(self.fields())
    }

    fn serialize_struct(self, _: &'static str, _: usize) -> Result<FieldsSer<'a>, Error> {
        Ok(self.fields())
    }

    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, Error> {
        Err(self.wrong("an enum"))
    }
}

/// The fields of one message, gathered in a buffer and written to the parent at the end.
struct FieldsSer<'a> {
    schema: &'static Schema,
    desc: &'static MessageDesc,
    buf: Vec<u8>,
    parent: &'a mut Vec<u8>,
    number: Option<u32>,
    top: bool,
    key: Option<String>,
    /// The inlined fields written to so far: field number, message bytes.
    inlined: Vec<(u32, Vec<u8>)>,
}

impl FieldsSer<'_> {
    fn field<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) -> Result<(), Error> {
        if let Some(field) = self.desc.field_named(key) {
            return write_field(self.schema, field, &mut self.buf, value);
        }
        for &i in &self.desc.inlined {
            let Some(inline) = self.desc.fields.get(i) else {
                continue;
            };
            let Ty::Message(id) = inline.ty else {
                continue;
            };
            if let Some(field) = self.schema.message(id).field_named(key) {
                let pos = match self.inlined.iter().position(|(n, _)| *n == inline.number) {
                    Some(pos) => pos,
                    None => {
                        self.inlined.push((inline.number, Vec::new()));
                        self.inlined.len() - 1
                    }
                };
                let (_, buf) = &mut self.inlined[pos];
                return write_field(self.schema, field, buf, value);
            }
        }
        if self.top && (key == "apiVersion" || key == "kind") {
            return Ok(());
        }
        Err(Error::UnknownField {
            message: self.desc.name.to_string(),
            field: key.to_owned(),
        })
    }

    fn finish(mut self) {
        for (number, bytes) in std::mem::take(&mut self.inlined) {
            wire::put_bytes(&mut self.buf, number, &bytes);
        }
        match self.number {
            Some(n) => wire::put_bytes(self.parent, n, &self.buf),
            None => self.parent.extend_from_slice(&self.buf),
        }
    }
}

impl ser::SerializeStruct for FieldsSer<'_> {
    type Ok = ();
    type Error = Error;

    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        self.field(key, value)
    }

    fn end(self) -> Result<(), Error> {
        self.finish();
        Ok(())
    }
}

impl ser::SerializeMap for FieldsSer<'_> {
    type Ok = ();
    type Error = Error;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Error> {
        self.key = Some(key.serialize(KeySer)?);
        Ok(())
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        let key = self
            .key
            .take()
            .ok_or_else(|| Error::Custom("map value before its key".into()))?;
        self.field(&key, value)
    }

    fn end(self) -> Result<(), Error> {
        self.finish();
        Ok(())
    }
}

/// Writes one field (every element of a repeated one).
fn write_field<T: Serialize + ?Sized>(
    schema: &'static Schema,
    field: &'static Field,
    out: &mut Vec<u8>,
    value: &T,
) -> Result<(), Error> {
    if !field.repeated
        && let Ty::Message(id) = field.ty
        && schema.message(id).special == Special::RawJson
    {
        return write_raw_json(field.number, out, value);
    }
    value.serialize(FieldSer {
        schema,
        field,
        out,
        element: false,
    })
}

/// Writes one occurrence of a field.
fn write_single<T: Serialize + ?Sized>(
    schema: &'static Schema,
    field: &'static Field,
    out: &mut Vec<u8>,
    value: &T,
) -> Result<(), Error> {
    if let Ty::Message(id) = field.ty
        && schema.message(id).special == Special::RawJson
    {
        return write_raw_json(field.number, out, value);
    }
    value.serialize(FieldSer {
        schema,
        field,
        out,
        element: true,
    })
}

/// A `RawExtension`/`FieldsV1`: the value's JSON in `raw` (field 1); `null` writes nothing.
fn write_raw_json<T: Serialize + ?Sized>(
    number: u32,
    out: &mut Vec<u8>,
    value: &T,
) -> Result<(), Error> {
    let json = serde_json::to_vec(value).map_err(|e| Error::Custom(e.to_string()))?;
    if json == b"null" {
        return Ok(());
    }
    let mut inner = Vec::with_capacity(json.len() + 4);
    wire::put_bytes(&mut inner, 1, &json);
    wire::put_bytes(out, number, &inner);
    Ok(())
}

/// One field's value.
struct FieldSer<'a> {
    schema: &'static Schema,
    field: &'static Field,
    out: &'a mut Vec<u8>,
    /// Inside a repeated field's sequence: one element.
    element: bool,
}

impl FieldSer<'_> {
    fn special(&self) -> Special {
        match self.field.ty {
            Ty::Message(id) => self.schema.message(id).special,
            _ => Special::None,
        }
    }

    fn wrong(&self, what: &str) -> Error {
        let ty = match self.field.ty {
            Ty::Scalar(s) => format!("{s:?}"),
            Ty::Message(id) | Ty::Map(id) => self.schema.message(id).name.to_string(),
        };
        unsupported(what, &format!("field {} ({ty})", self.field.name))
    }

    fn int(self, x: i128) -> Result<(), Error> {
        let n = self.field.number;
        let range = |lo: i128, hi: i128| {
            if (lo..=hi).contains(&x) {
                Ok(())
            } else {
                Err(Error::Custom(format!(
                    "{x} is out of range for field {}",
                    self.field.name
                )))
            }
        };
        match self.field.ty {
            Ty::Scalar(s) => match s {
                Scalar::Int32 => {
                    range(i32::MIN.into(), i32::MAX.into())?;
                    wire::put_varint_field(self.out, n, x as i64 as u64);
                }
                Scalar::Int64 => {
                    range(i64::MIN.into(), i64::MAX.into())?;
                    wire::put_varint_field(self.out, n, x as i64 as u64);
                }
                Scalar::UInt32 => {
                    range(0, u32::MAX.into())?;
                    wire::put_varint_field(self.out, n, x as u64);
                }
                Scalar::UInt64 => {
                    range(0, u64::MAX.into())?;
                    wire::put_varint_field(self.out, n, x as u64);
                }
                Scalar::SInt32 => {
                    range(i32::MIN.into(), i32::MAX.into())?;
                    let v = x as i32;
                    wire::put_varint_field(self.out, n, u64::from(((v << 1) ^ (v >> 31)) as u32));
                }
                Scalar::SInt64 => {
                    range(i64::MIN.into(), i64::MAX.into())?;
                    let v = x as i64;
                    wire::put_varint_field(self.out, n, ((v << 1) ^ (v >> 63)) as u64);
                }
                Scalar::Fixed32 | Scalar::SFixed32 => {
                    if s == Scalar::Fixed32 {
                        range(0, u32::MAX.into())?;
                    } else {
                        range(i32::MIN.into(), i32::MAX.into())?;
                    }
                    wire::put_key(self.out, n, FIXED32);
                    self.out.extend_from_slice(&(x as u32).to_le_bytes());
                }
                Scalar::Fixed64 | Scalar::SFixed64 => {
                    if s == Scalar::Fixed64 {
                        range(0, u64::MAX.into())?;
                    } else {
                        range(i64::MIN.into(), i64::MAX.into())?;
                    }
                    wire::put_key(self.out, n, FIXED64);
                    self.out.extend_from_slice(&(x as u64).to_le_bytes());
                }
                Scalar::Double | Scalar::Float => return self.float(x as f64),
                Scalar::Bool | Scalar::String | Scalar::Bytes => return Err(self.wrong("a number")),
            },
            Ty::Message(_) if self.special() == Special::IntOrString => {
                range(i32::MIN.into(), i32::MAX.into())?;
                let mut inner = Vec::with_capacity(12);
                wire::put_varint_field(&mut inner, 1, 0);
                wire::put_varint_field(&mut inner, 2, x as i32 as i64 as u64);
                wire::put_bytes(&mut inner, 3, b"");
                wire::put_bytes(self.out, n, &inner);
            }
            _ => return Err(self.wrong("a number")),
        }
        Ok(())
    }

    fn float(self, x: f64) -> Result<(), Error> {
        match self.field.ty {
            Ty::Scalar(Scalar::Double) => {
                wire::put_key(self.out, self.field.number, FIXED64);
                self.out.extend_from_slice(&x.to_bits().to_le_bytes());
                Ok(())
            }
            Ty::Scalar(Scalar::Float) => {
                wire::put_key(self.out, self.field.number, FIXED32);
                self.out
                    .extend_from_slice(&(x as f32).to_bits().to_le_bytes());
                Ok(())
            }
            _ => Err(self.wrong("a floating-point number")),
        }
    }
}

impl<'a> Serializer for FieldSer<'a> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = SeqSer<'a>;
    type SerializeTuple = Impossible<(), Error>;
    type SerializeTupleStruct = Impossible<(), Error>;
    type SerializeTupleVariant = Impossible<(), Error>;
    type SerializeMap = ObjectSer<'a>;
    type SerializeStruct = ObjectSer<'a>;
    type SerializeStructVariant = Impossible<(), Error>;

    fn serialize_bool(self, v: bool) -> Result<(), Error> {
        match self.field.ty {
            Ty::Scalar(Scalar::Bool) => {
                wire::put_varint_field(self.out, self.field.number, u64::from(v));
                Ok(())
            }
            _ => Err(self.wrong("a boolean")),
        }
    }

    fn serialize_i8(self, v: i8) -> Result<(), Error> {
        self.int(v.into())
    }
    fn serialize_i16(self, v: i16) -> Result<(), Error> {
        self.int(v.into())
    }
    fn serialize_i32(self, v: i32) -> Result<(), Error> {
        self.int(v.into())
    }
    fn serialize_i64(self, v: i64) -> Result<(), Error> {
        self.int(v.into())
    }
    fn serialize_u8(self, v: u8) -> Result<(), Error> {
        self.int(v.into())
    }
    fn serialize_u16(self, v: u16) -> Result<(), Error> {
        self.int(v.into())
    }
    fn serialize_u32(self, v: u32) -> Result<(), Error> {
        self.int(v.into())
    }
    fn serialize_u64(self, v: u64) -> Result<(), Error> {
        self.int(v.into())
    }
    fn serialize_f32(self, v: f32) -> Result<(), Error> {
        self.float(v.into())
    }
    fn serialize_f64(self, v: f64) -> Result<(), Error> {
        self.float(v)
    }

    fn serialize_char(self, v: char) -> Result<(), Error> {
        self.serialize_str(v.encode_utf8(&mut [0u8; 4]))
    }

    fn serialize_str(self, v: &str) -> Result<(), Error> {
        let n = self.field.number;
        match (self.field.ty, self.special()) {
            (Ty::Scalar(Scalar::String), _) => wire::put_bytes(self.out, n, v.as_bytes()),
            (Ty::Scalar(Scalar::Bytes), _) => {
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(v)
                    .map_err(|e| {
                        Error::Custom(format!("field {}: invalid base64: {e}", self.field.name))
                    })?;
                wire::put_bytes(self.out, n, &bytes);
            }
            (_, Special::Quantity) => {
                let mut inner = Vec::with_capacity(v.len() + 2);
                wire::put_bytes(&mut inner, 1, v.as_bytes());
                wire::put_bytes(self.out, n, &inner);
            }
            (_, Special::IntOrString) => {
                let mut inner = Vec::with_capacity(v.len() + 6);
                wire::put_varint_field(&mut inner, 1, 1);
                wire::put_varint_field(&mut inner, 2, 0);
                wire::put_bytes(&mut inner, 3, v.as_bytes());
                wire::put_bytes(self.out, n, &inner);
            }
            (_, special @ (Special::Time | Special::MicroTime)) => {
                let (seconds, nanos) = time::parse(v)?;
                let nanos = if special == Special::Time {
                    0
                } else {
                    nanos - nanos % 1000
                };
                let mut inner = Vec::with_capacity(16);
                wire::put_varint_field(&mut inner, 1, seconds as u64);
                wire::put_varint_field(&mut inner, 2, i64::from(nanos) as u64);
                wire::put_bytes(self.out, n, &inner);
            }
            _ => return Err(self.wrong("a string")),
        }
        Ok(())
    }

    fn serialize_bytes(self, v: &[u8]) -> Result<(), Error> {
        match self.field.ty {
            Ty::Scalar(Scalar::Bytes) => {
                wire::put_bytes(self.out, self.field.number, v);
                Ok(())
            }
            _ => Err(self.wrong("bytes")),
        }
    }

    fn serialize_none(self) -> Result<(), Error> {
        Ok(())
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Error> {
        if self.element {
            write_single(self.schema, self.field, self.out, value)
        } else {
            write_field(self.schema, self.field, self.out, value)
        }
    }

    fn serialize_unit(self) -> Result<(), Error> {
        Ok(())
    }

    fn serialize_unit_struct(self, _: &'static str) -> Result<(), Error> {
        Ok(())
    }

    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
    ) -> Result<(), Error> {
        self.serialize_str(variant)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        self.serialize_some(value)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<(), Error> {
        Err(self.wrong("an enum"))
    }

    fn serialize_seq(self, _len: Option<usize>) -> Result<SeqSer<'a>, Error> {
        if self.field.repeated && !self.element {
            return Ok(SeqSer {
                schema: self.schema,
                field: self.field,
                buf: None,
                out: self.out,
            });
        }
        if let Ty::Message(id) = self.field.ty
            && self.special() == Special::StringArray
            && let Some(items) = self.schema.message(id).field(1)
        {
            return Ok(SeqSer {
                schema: self.schema,
                field: items,
                buf: Some((Vec::new(), self.field.number)),
                out: self.out,
            });
        }
        Err(self.wrong("an array"))
    }

    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, Error> {
        Err(self.wrong("a tuple"))
    }

    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, Error> {
        Err(self.wrong("a tuple"))
    }

    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, Error> {
        Err(self.wrong("an enum"))
    }

    fn serialize_map(self, _len: Option<usize>) -> Result<ObjectSer<'a>, Error> {
        match self.field.ty {
            Ty::Map(entry) => Ok(ObjectSer::Map {
                schema: self.schema,
                entry: self.schema.message(entry),
                number: self.field.number,
                out: self.out,
                key: None,
            }),
            Ty::Message(id) if self.special() == Special::None => {
                Ok(ObjectSer::Message(FieldsSer {
                    schema: self.schema,
                    desc: self.schema.message(id),
                    buf: Vec::new(),
                    parent: self.out,
                    number: Some(self.field.number),
                    top: false,
                    key: None,
                    inlined: Vec::new(),
                }))
            }
            _ => Err(self.wrong("an object")),
        }
    }

    fn serialize_struct(self, _: &'static str, len: usize) -> Result<ObjectSer<'a>, Error> {
        self.serialize_map(Some(len))
    }

    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, Error> {
        Err(self.wrong("an enum"))
    }
}

/// The elements of a repeated field (or of a named string slice's `items`).
struct SeqSer<'a> {
    schema: &'static Schema,
    field: &'static Field,
    /// For a named string slice: its message being built, and its field number.
    buf: Option<(Vec<u8>, u32)>,
    out: &'a mut Vec<u8>,
}

impl ser::SerializeSeq for SeqSer<'_> {
    type Ok = ();
    type Error = Error;

    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        let out = match &mut self.buf {
            Some((buf, _)) => buf,
            None => &mut *self.out,
        };
        write_single(self.schema, self.field, out, value)
    }

    fn end(self) -> Result<(), Error> {
        if let Some((buf, number)) = self.buf {
            wire::put_bytes(self.out, number, &buf);
        }
        Ok(())
    }
}

/// A JSON object: a nested message, or a `map<K, V>` field.
enum ObjectSer<'a> {
    Message(FieldsSer<'a>),
    Map {
        schema: &'static Schema,
        entry: &'static MessageDesc,
        number: u32,
        out: &'a mut Vec<u8>,
        key: Option<String>,
    },
}

impl ser::SerializeMap for ObjectSer<'_> {
    type Ok = ();
    type Error = Error;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Error> {
        match self {
            ObjectSer::Message(m) => ser::SerializeMap::serialize_key(m, key),
            ObjectSer::Map { key: k, .. } => {
                *k = Some(key.serialize(KeySer)?);
                Ok(())
            }
        }
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        match self {
            ObjectSer::Message(m) => ser::SerializeMap::serialize_value(m, value),
            ObjectSer::Map {
                schema,
                entry,
                number,
                out,
                key,
            } => {
                let key = key
                    .take()
                    .ok_or_else(|| Error::Custom("map value before its key".into()))?;
                let (schema, entry): (&'static Schema, &'static MessageDesc) = (*schema, *entry);
                let (Some(kf), Some(vf)) = (entry.field(1), entry.field(2)) else {
                    return Err(Error::Invalid(format!("{} is not a map entry", entry.name)));
                };
                let mut buf = Vec::with_capacity(key.len() + 16);
                write_single(schema, kf, &mut buf, key.as_str())?;
                let before = buf.len();
                write_single(schema, vf, &mut buf, value)?;
                if buf.len() == before {
                    // A null value: Go writes the entry with the value's zero.
                    write_zero(vf, &mut buf);
                }
                wire::put_bytes(out, *number, &buf);
                Ok(())
            }
        }
    }

    fn end(self) -> Result<(), Error> {
        match self {
            ObjectSer::Message(m) => ser::SerializeMap::end(m),
            ObjectSer::Map { .. } => Ok(()),
        }
    }
}

fn write_zero(field: &Field, out: &mut Vec<u8>) {
    match field.ty {
        Ty::Scalar(Scalar::Double | Scalar::Fixed64 | Scalar::SFixed64) => {
            wire::put_key(out, field.number, FIXED64);
            out.extend_from_slice(&[0; 8]);
        }
        Ty::Scalar(Scalar::Float | Scalar::Fixed32 | Scalar::SFixed32) => {
            wire::put_key(out, field.number, FIXED32);
            out.extend_from_slice(&[0; 4]);
        }
        Ty::Scalar(Scalar::String | Scalar::Bytes) | Ty::Message(_) | Ty::Map(_) => {
            wire::put_bytes(out, field.number, b"");
        }
        Ty::Scalar(_) => wire::put_varint_field(out, field.number, 0),
    }
}

impl ser::SerializeStruct for ObjectSer<'_> {
    type Ok = ();
    type Error = Error;

    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        ser::SerializeMap::serialize_key(self, key)?;
        ser::SerializeMap::serialize_value(self, value)
    }

    fn end(self) -> Result<(), Error> {
        ser::SerializeMap::end(self)
    }
}

/// A map key, as a string.
struct KeySer;

impl Serializer for KeySer {
    type Ok = String;
    type Error = Error;
    type SerializeSeq = Impossible<String, Error>;
    type SerializeTuple = Impossible<String, Error>;
    type SerializeTupleStruct = Impossible<String, Error>;
    type SerializeTupleVariant = Impossible<String, Error>;
    type SerializeMap = Impossible<String, Error>;
    type SerializeStruct = Impossible<String, Error>;
    type SerializeStructVariant = Impossible<String, Error>;

    fn serialize_str(self, v: &str) -> Result<String, Error> {
        Ok(v.to_owned())
    }

    fn serialize_bool(self, _: bool) -> Result<String, Error> {
        Err(Error::Custom("map keys must be strings".into()))
    }
    fn serialize_i8(self, _: i8) -> Result<String, Error> {
        Err(Error::Custom("map keys must be strings".into()))
    }
    fn serialize_i16(self, _: i16) -> Result<String, Error> {
        Err(Error::Custom("map keys must be strings".into()))
    }
    fn serialize_i32(self, _: i32) -> Result<String, Error> {
        Err(Error::Custom("map keys must be strings".into()))
    }
    fn serialize_i64(self, _: i64) -> Result<String, Error> {
        Err(Error::Custom("map keys must be strings".into()))
    }
    fn serialize_u8(self, _: u8) -> Result<String, Error> {
        Err(Error::Custom("map keys must be strings".into()))
    }
    fn serialize_u16(self, _: u16) -> Result<String, Error> {
        Err(Error::Custom("map keys must be strings".into()))
    }
    fn serialize_u32(self, _: u32) -> Result<String, Error> {
        Err(Error::Custom("map keys must be strings".into()))
    }
    fn serialize_u64(self, _: u64) -> Result<String, Error> {
        Err(Error::Custom("map keys must be strings".into()))
    }
    fn serialize_f32(self, _: f32) -> Result<String, Error> {
        Err(Error::Custom("map keys must be strings".into()))
    }
    fn serialize_f64(self, _: f64) -> Result<String, Error> {
        Err(Error::Custom("map keys must be strings".into()))
    }
    fn serialize_char(self, v: char) -> Result<String, Error> {
        Ok(v.to_string())
    }
    fn serialize_bytes(self, _: &[u8]) -> Result<String, Error> {
        Err(Error::Custom("map keys must be strings".into()))
    }
    fn serialize_none(self) -> Result<String, Error> {
        Err(Error::Custom("map keys must be strings".into()))
    }
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> Result<String, Error> {
        v.serialize(self)
    }
    fn serialize_unit(self) -> Result<String, Error> {
        Err(Error::Custom("map keys must be strings".into()))
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<String, Error> {
        Err(Error::Custom("map keys must be strings".into()))
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        v: &'static str,
    ) -> Result<String, Error> {
        Ok(v.to_owned())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        v: &T,
    ) -> Result<String, Error> {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<String, Error> {
        Err(Error::Custom("map keys must be strings".into()))
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, Error> {
        Err(Error::Custom("map keys must be strings".into()))
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, Error> {
        Err(Error::Custom("map keys must be strings".into()))
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, Error> {
        Err(Error::Custom("map keys must be strings".into()))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, Error> {
        Err(Error::Custom("map keys must be strings".into()))
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, Error> {
        Err(Error::Custom("map keys must be strings".into()))
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct, Error> {
        Err(Error::Custom("map keys must be strings".into()))
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, Error> {
        Err(Error::Custom("map keys must be strings".into()))
    }
}
