//! Repeated fields, objects written as maps or structs, and map keys.

use serde::Serialize;
use serde::ser::{self, Impossible, Serializer};

use super::*;
use crate::error::Error;
use crate::schema::{Field, MessageDesc, Scalar, Schema, Ty};
use crate::wire::{self, FIXED32, FIXED64};

/// The elements of a repeated field (or of a named string slice's `items`).
pub(crate) struct SeqSer<'a> {
    pub(crate) schema: &'static Schema,
    pub(crate) field: &'static Field,
    /// For a named string slice: its message being built, and its field number.
    pub(crate) buf: Option<(Vec<u8>, u32)>,
    pub(crate) out: &'a mut Vec<u8>,
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
pub(crate) enum ObjectSer<'a> {
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

pub(crate) fn write_zero(field: &Field, out: &mut Vec<u8>) {
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
pub(crate) struct KeySer;

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
