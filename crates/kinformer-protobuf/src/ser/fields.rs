//! The fields of one message and how each is written.

use serde::Serialize;
use serde::ser::{self};

use super::*;
use crate::error::Error;
use crate::schema::{Field, MessageDesc, Schema, Special, Ty};
use crate::wire::{self};

/// The fields of one message, gathered in a buffer and written to the parent at the end.
pub(crate) struct FieldsSer<'a> {
    pub(crate) schema: &'static Schema,
    pub(crate) desc: &'static MessageDesc,
    pub(crate) buf: Vec<u8>,
    pub(crate) parent: &'a mut Vec<u8>,
    pub(crate) number: Option<u32>,
    pub(crate) top: bool,
    pub(crate) key: Option<String>,
    /// The inlined fields written to so far: field number, message bytes.
    pub(crate) inlined: Vec<(u32, Vec<u8>)>,
}

impl FieldsSer<'_> {
    pub(crate) fn field<T: Serialize + ?Sized>(
        &mut self,
        key: &str,
        value: &T,
    ) -> Result<(), Error> {
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

    pub(crate) fn finish(mut self) {
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
pub(crate) fn write_field<T: Serialize + ?Sized>(
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
pub(crate) fn write_single<T: Serialize + ?Sized>(
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
pub(crate) fn write_raw_json<T: Serialize + ?Sized>(
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
