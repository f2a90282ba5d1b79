//! Encoding: a serde [`Serializer`] that writes protobuf with the schema, so that any serde
//! value (a k8s-openapi object, a `serde_json::Value`) becomes Kubernetes protobuf directly.
//!
//! Fields are written as present in the value (a `None` or JSON `null` writes nothing; a
//! present zero is written), which Go's decoder reads back to the same object.

use serde::Serialize;
use serde::ser::{Impossible, Serializer};

use crate::error::Error;
use crate::schema::{MessageDesc, MessageId, Schema};

mod compound;
mod field;
mod fields;

use compound::*;
use field::*;
use fields::*;

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

pub(crate) fn unsupported(what: &str, desc: &str) -> Error {
    Error::Custom(format!("cannot encode {what} as {desc}"))
}

/// A message: the top-level object, or a nested one (`number` is its field in the parent).
pub(crate) struct MessageSer<'a> {
    pub(crate) schema: &'static Schema,
    pub(crate) desc: &'static MessageDesc,
    pub(crate) out: &'a mut Vec<u8>,
    pub(crate) number: Option<u32>,
    pub(crate) top: bool,
}

impl<'a> MessageSer<'a> {
    pub(crate) fn fields(self) -> FieldsSer<'a> {
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

    pub(crate) fn wrong(&self, what: &str) -> Error {
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
