//! One field at a time: what [`FieldsAccess`](super::FieldsAccess) hands to serde as a key's
//! value, and the fields of a message in its order, for the direct path into typed structs.

use serde::de::DeserializeSeed;

use super::{EntriesAccess, MapDe, MessageDe, RepeatedAccess, Seen, SeqDe, ValueDe, next_field};
use crate::error::Error;
use crate::schema::{Field, MessageDesc, Schema, Ty};
use crate::wire::{Reader, Value};

/// One field of a message as its JSON value: a repeated field's occurrences (this one and
/// those in `rest`) as a sequence, a map field's as a map, any other field's one value.
#[derive(Clone, Copy)]
pub(crate) struct FieldDe<'de> {
    pub schema: &'static Schema,
    pub field: &'static Field,
    pub value: Value<'de>,
    /// The rest of the message, after this occurrence.
    pub rest: Reader<'de>,
    /// The depth of the message holding the field.
    pub depth: usize,
}

impl<'de> FieldDe<'de> {
    /// The value as `seed` reads it.
    pub(crate) fn deserialize<S: DeserializeSeed<'de>>(self, seed: S) -> Result<S::Value, Error> {
        if self.field.repeated {
            seed.deserialize(SeqDe(self.occurrences()))
        } else if let Ty::Map(entry) = self.field.ty {
            seed.deserialize(MapDe(EntriesAccess {
                inner: self.occurrences(),
                entry: self.schema.message(entry),
                value: None,
            }))
        } else {
            seed.deserialize(self.single())
        }
    }

    /// Every occurrence of the field, from this one on.
    pub(crate) fn occurrences(self) -> RepeatedAccess<'de> {
        RepeatedAccess::new(self.schema, self.field, self.value, self.rest, self.depth)
    }

    /// This occurrence alone.
    pub(crate) fn single(self) -> ValueDe<'de> {
        ValueDe {
            schema: self.schema,
            ty: self.field.ty,
            value: self.value,
            depth: self.depth,
        }
    }
}

/// A message's fields as [`FieldsAccess`] hands them out (unknown fields, repeated fields
/// already handed out and omitted zeros skipped), for a message without inlined fields.
pub(crate) struct Fields<'de> {
    schema: &'static Schema,
    desc: &'static MessageDesc,
    reader: Reader<'de>,
    depth: usize,
    seen: Seen,
}

impl<'de> Fields<'de> {
    pub(crate) fn new(m: &MessageDe<'de>) -> Self {
        Self {
            schema: m.schema,
            desc: m.desc(),
            reader: Reader::new(m.bytes),
            depth: m.depth,
            seen: Seen::default(),
        }
    }

    /// The next field; an inlined one is an error (its fields would be the parent's).
    #[inline]
    pub(crate) fn next_field(&mut self) -> Result<Option<FieldDe<'de>>, Error> {
        let Some((field, value)) = next_field(self.desc, &mut self.reader, &mut self.seen)? else {
            return Ok(None);
        };
        if field.inline {
            return Err(Error::Custom(format!("{}: inlined field", self.desc.name)));
        }
        Ok(Some(FieldDe {
            schema: self.schema,
            field,
            value,
            rest: self.reader,
            depth: self.depth,
        }))
    }
}
