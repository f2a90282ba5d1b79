//! An object's bytes handed to a `Deserialize` impl the way a binary format hands over bytes,
//! so that a [`Lazy`](super::Lazy) keeps them as its body (one copy) and parses only its
//! metadata, instead of first scanning them again as a JSON value. The decoders use them only
//! for a type that [`keeps_bytes`](super::keeps_bytes) says is a `Lazy`.

/// The shared body of the raw deserializers: `deserialize_any` calls `$visit` with the bytes.
macro_rules! raw_deserializer {
    ($de:lifetime, $visit:ident) => {
        type Error = serde::de::value::Error;

        fn deserialize_any<V: serde::de::Visitor<$de>>(
            self,
            v: V,
        ) -> Result<V::Value, Self::Error> {
            v.$visit(self.0)
        }

        fn is_human_readable(&self) -> bool {
            false
        }

        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
            option unit unit_struct newtype_struct seq tuple tuple_struct map struct enum
            identifier ignored_any
        }
    };
}

/// One object's JSON text, borrowed.
pub(crate) struct RawJson<'a>(pub(crate) &'a str);

impl<'de> serde::Deserializer<'de> for RawJson<'de> {
    raw_deserializer!('de, visit_borrowed_str);
}

/// One object's enveloped protobuf bytes (`k8s\0` magic, then the `Unknown` envelope).
#[cfg(feature = "protobuf")]
pub(crate) struct RawBytes(pub(crate) Vec<u8>);

#[cfg(feature = "protobuf")]
impl<'de> serde::Deserializer<'de> for RawBytes {
    raw_deserializer!('de, visit_byte_buf);
}
