//! The fields of a message in their order, as [`FieldsAccess`](super::FieldsAccess) hands them
//! to serde, for the direct path into typed structs (feature `k8s-openapi`).

use super::{FieldDe, MessageDe, Seen, next_field};
use crate::error::Error;
use crate::schema::{MessageDesc, Schema};
use crate::wire::Reader;

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
