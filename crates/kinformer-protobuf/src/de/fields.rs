//! One field at a time: what [`FieldsAccess`](super::FieldsAccess) hands to serde as a key's
//! value.

use serde::de::DeserializeSeed;

use super::{EntriesAccess, MapDe, RepeatedAccess, SeqDe, ValueDe};
use crate::error::Error;
use crate::schema::{Field, Schema, Ty};
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
