//! The direct path into k8s-openapi types (feature `k8s-openapi`): for the kinds informers hold
//! most (pods), the decoder fills the struct field by field from the wire, by field number,
//! instead of handing each field's JSON name to the type's serde `Deserialize` (a string match
//! per field, a local per struct field, and the struct moved at every level).
//!
//! It decodes exactly what the general path (`de`) does: each field's value is read by the
//! general path's own deserializer for that field (so `omitempty` zeros, empty times, repeated
//! fields gathered wherever their occurrences are, and last-one-wins for a singular field are
//! the same), only the structs of [`pod`] are built here. Any field it does not know (one that
//! a newer k8s-openapi version has), a message of another shape, or any error, makes it give
//! up: the general path then decodes the object, and reports its own error.

mod pod;

use std::any::Any;

use crate::de::{FieldDe, Fields, MAX_DEPTH, MessageDe};
use crate::error::Error;
use crate::schema::{Special, Ty};

/// A struct the direct path builds.
pub(crate) trait Direct: Default {
    /// The full name of its protobuf message.
    const MESSAGE: &'static str;

    /// Sets the struct field of this protobuf field; false for a field it does not know.
    fn set(&mut self, field: FieldDe<'_>) -> Result<bool, Error>;
}

/// The general path decodes this message instead (never seen by a caller).
fn general() -> Error {
    Error::Custom("decoded by the general path".into())
}

/// `T` decoded by the direct path, or `None` if `T` has none or it gave up.
pub(crate) fn decode<T: 'static>(m: MessageDe<'_>) -> Option<T> {
    let mut out: Option<T> = None;
    let slot: &mut dyn Any = &mut out;
    if let Some(slot) = slot.downcast_mut::<Option<k8s_openapi::api::core::v1::Pod>>() {
        *slot = pod::top_level(m).ok();
    }
    out
}

/// A message as a struct, as the general path reads a message with no special form.
pub(crate) fn message<D: Direct>(m: MessageDe<'_>) -> Result<D, Error> {
    let mut out = D::default();
    message_into(m, &mut out)?;
    Ok(out)
}

/// A message decoded into `out`, a default `D` where it is to stay: a struct is filled in
/// place, not built on the stack and moved (a `Container` is 2.3 KB, a `Pod` 2.5 KB).
pub(crate) fn message_into<D: Direct>(m: MessageDe<'_>, out: &mut D) -> Result<(), Error> {
    if m.depth > MAX_DEPTH {
        return Err(Error::TooDeep(MAX_DEPTH));
    }
    let desc = m.desc();
    if desc.special != Special::None || &*desc.name != D::MESSAGE {
        return Err(general());
    }
    let mut fields = Fields::new(&m);
    while let Some(field) = fields.next_field()? {
        if !out.set(field)? {
            return Err(general());
        }
    }
    Ok(())
}

/// A singular message field's message.
fn single<'de>(f: FieldDe<'de>) -> Result<MessageDe<'de>, Error> {
    let Ty::Message(id) = f.field.ty else {
        return Err(general());
    };
    if f.field.many {
        return Err(general());
    }
    f.single().message(id)
}

/// A singular message field into `slot` (`None` for an empty `Time`-like message); a later
/// occurrence replaces an earlier one.
pub(crate) fn optional<D: Direct>(f: FieldDe<'_>, slot: &mut Option<D>) -> Result<(), Error> {
    let m = single(f)?;
    if m.is_null()? {
        *slot = None;
        return Ok(());
    }
    message_into(m, slot.insert(D::default()))
}

/// A singular message field of a non-optional struct field into `slot`: the default for an
/// empty `Time`-like message, as k8s-openapi reads a missing one.
pub(crate) fn required_message<D: Direct>(f: FieldDe<'_>, slot: &mut D) -> Result<(), Error> {
    let m = single(f)?;
    *slot = D::default();
    if m.is_null()? {
        return Ok(());
    }
    message_into(m, slot)
}

/// A repeated message field as `Vec<D>` (every occurrence, from this one on).
pub(crate) fn repeated<D: Direct>(f: FieldDe<'_>) -> Result<Vec<D>, Error> {
    let Ty::Message(id) = f.field.ty else {
        return Err(general());
    };
    if !f.field.repeated {
        return Err(general());
    }
    // Sized once: a vector grown by pushes holds up to twice the room (serde's grows so).
    let mut out: Vec<D> = Vec::with_capacity(1 + f.rest.count(f.field.number));
    let mut occurrences = f.occurrences();
    while let Some(value) = occurrences.next_value()? {
        let m = FieldDe { value, ..f }.single().message(id)?;
        out.push(D::default());
        if let Some(slot) = out.last_mut() {
            message_into(m, slot)?;
        }
    }
    Ok(out)
}

/// Any other field as serde reads it, into the struct field's own type.
pub(crate) fn serde<'de, T: serde::Deserialize<'de>>(f: FieldDe<'de>) -> Result<T, Error> {
    f.deserialize(std::marker::PhantomData)
}

/// The struct's fields: `number "jsonName" field: how`, where `how` is `serde` (an optional
/// field read by serde), `required` (a non-optional one: k8s-openapi reads it as an `Option`
/// and takes the default for `None`), `message`/`messages` (an optional message or list of
/// messages built by the direct path) and `required_messages`.
macro_rules! direct {
    ($ty:ty, $message:literal, { $($number:literal $json:literal $field:ident: $how:ident,)* }) => {
        impl crate::typed::Direct for $ty {
            const MESSAGE: &'static str = $message;

            fn set(&mut self, f: crate::de::FieldDe<'_>) -> Result<bool, crate::error::Error> {
                match f.field.number {
                    $($number => direct!(@set self, f, $field, $how),)*
                    _ => return Ok(false),
                }
                Ok(true)
            }
        }

        #[cfg(test)]
        impl crate::typed::pod::Listed for $ty {
            const FIELDS: &'static [(u32, &'static str)] = &[$(($number, $json)),*];
        }
    };
    (@set $self:ident, $f:ident, $field:ident, serde) => {
        $self.$field = crate::typed::serde($f)?
    };
    (@set $self:ident, $f:ident, $field:ident, required) => {
        $self.$field = crate::typed::serde::<Option<_>>($f)?.unwrap_or_default()
    };
    (@set $self:ident, $f:ident, $field:ident, message) => {
        crate::typed::optional($f, &mut $self.$field)?
    };
    (@set $self:ident, $f:ident, $field:ident, required_message) => {
        crate::typed::required_message($f, &mut $self.$field)?
    };
    (@set $self:ident, $f:ident, $field:ident, messages) => {
        $self.$field = Some(crate::typed::repeated($f)?)
    };
    (@set $self:ident, $f:ident, $field:ident, required_messages) => {
        $self.$field = crate::typed::repeated($f)?
    };
}

pub(crate) use direct;
