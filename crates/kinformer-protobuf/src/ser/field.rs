//! One field's value, by its schema type.

use base64::Engine as _;
use serde::Serialize;
use serde::ser::{Impossible, Serializer};

use super::*;
use crate::error::Error;
use crate::schema::{Field, Scalar, Schema, Special, Ty};
use crate::time;
use crate::wire::{self, FIXED32, FIXED64};

/// One field's value.
pub(crate) struct FieldSer<'a> {
    pub(crate) schema: &'static Schema,
    pub(crate) field: &'static Field,
    pub(crate) out: &'a mut Vec<u8>,
    /// Inside a repeated field's sequence: one element.
    pub(crate) element: bool,
}

impl FieldSer<'_> {
    pub(crate) fn special(&self) -> Special {
        match self.field.ty {
            Ty::Message(id) => self.schema.message(id).special,
            _ => Special::None,
        }
    }

    pub(crate) fn wrong(&self, what: &str) -> Error {
        let ty = match self.field.ty {
            Ty::Scalar(s) => format!("{s:?}"),
            Ty::Message(id) | Ty::Map(id) => self.schema.message(id).name.to_string(),
        };
        unsupported(what, &format!("field {} ({ty})", self.field.name))
    }

    pub(crate) fn int(self, x: i128) -> Result<(), Error> {
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

    pub(crate) fn float(self, x: f64) -> Result<(), Error> {
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
