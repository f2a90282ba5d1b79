//! Kubernetes protobuf on the wire, straight into and out of serde types.
//!
//! Kubernetes' own clients talk protobuf to the API server for built-in types; this crate lets
//! Rust do the same with the types it already holds (k8s-openapi's, `serde_json::Value`, ...).
//! Kubernetes' `generated.proto` files (vendored, compiled into a descriptor set) drive a
//! serde `Deserializer` and `Serializer`: decoding builds the target type directly from the
//! wire, with no intermediate message, and produces exactly what Go's JSON form would hold:
//!
//! - `Time` and `MicroTime` (`{seconds, nanos}`) become RFC 3339 strings (an empty one is
//!   absent), `Quantity` its string, `IntOrString` a number or a string, `RawExtension` and
//!   `FieldsV1` the JSON they carry, `bytes` fields base64 strings;
//! - value fields that Go's JSON leaves out when zero (`omitempty`), and that Go's protobuf
//!   always writes, are left out when zero; pointer fields (`replicas: 0`) are kept.
//!
//! The formats: an object is [`MAGIC`] + `runtime.Unknown{typeMeta, raw}` ([`Envelope`]); a
//! list is an object whose items are decoded one by one ([`List`]); a watch stream is frames
//! of a 4-byte big-endian length and a `WatchEvent` ([`FrameReader`], [`WatchEvent`]).
//! Custom resources have no protobuf form ([`has_schema`] says which kinds do).
//!
//! ```
//! use k8s_openapi::api::core::v1::ConfigMap;
//!
//! let mut cm = ConfigMap::default();
//! cm.metadata.name = Some("settings".into());
//! cm.data = Some([("mode".to_owned(), "fast".to_owned())].into());
//! let bytes = kinformer_protobuf::to_vec(&cm, "v1", "ConfigMap").unwrap();
//! assert!(bytes.starts_with(b"k8s\0"));
//! let back: ConfigMap = kinformer_protobuf::from_slice(&bytes).unwrap();
//! assert_eq!(back, cm);
//! ```

mod de;
mod envelope;
mod error;
mod kinds;
mod list;
mod list_stream;
mod meta;
mod owned;
mod raw_list;
mod schema;
mod ser;
mod time;
#[cfg(feature = "k8s-openapi")]
mod typed;
mod watch;
mod wire;

use serde::{Deserialize, Serialize};

pub use envelope::{Envelope, MAGIC};
pub use error::Error;
pub use kinds::is_builtin_group;
pub use list::{Item, List, ListBuilder, ListMeta};
pub use list_stream::{ListBatch, ListSplitter};
pub use meta::{ObjectMetaRef, OwnerReferenceRef, object_meta, object_name};
pub use raw_list::RawList;
pub use watch::{DEFAULT_MAX_FRAME, FrameReader, WatchEvent};

use schema::Schema;

/// The media type of Kubernetes protobuf.
pub const CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf";
/// The media type of a protobuf watch stream.
pub const WATCH_CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf;stream=watch";

/// True if objects of `api_version` and `kind` have a protobuf form (a built-in kind known to
/// the vendored schema).
///
/// ```
/// assert!(kinformer_protobuf::has_schema("apps/v1", "Deployment"));
/// assert!(!kinformer_protobuf::has_schema("example.com/v1", "Widget"));
/// ```
pub fn has_schema(api_version: &str, kind: &str) -> bool {
    Schema::get().is_ok_and(|s| kinds::message_for(s, api_version, kind).is_some())
}

/// Builds the schema now. It is otherwise built at the first decode or encode of the process
/// (5–10 ms of CPU on a 2-core machine): a client can have it built on another thread
/// while its first request is in flight.
///
/// ```
/// kinformer_protobuf::prepare().unwrap();
/// assert!(kinformer_protobuf::has_schema("v1", "Pod"));
/// ```
///
/// # Errors
/// The vendored descriptors do not load (a broken build).
pub fn prepare() -> Result<(), Error> {
    Schema::get().map(drop)
}

/// Decodes an enveloped object (`k8s\0` + `runtime.Unknown`) into `T`, the envelope's
/// `apiVersion` and `kind` first.
///
/// # Errors
/// When the bytes are not Kubernetes protobuf, the kind is unknown, or the object does not
/// decode as `T`.
pub fn from_slice<'de, T: Deserialize<'de>>(bytes: &'de [u8]) -> Result<T, Error> {
    let (schema, id, env) = opened(bytes)?;
    de::from_message(schema, id, env.raw, Some((env.api_version, env.kind)))
}

/// The schema, and an enveloped object's envelope and message.
fn opened(bytes: &[u8]) -> Result<(&'static Schema, schema::MessageId, Envelope<'_>), Error> {
    let schema = Schema::get()?;
    let env = Envelope::parse(bytes)?;
    let id = env.message_id(schema)?;
    Ok((schema, id, env))
}

/// Decodes an enveloped object as [`from_slice`] does, into an owned type. With the
/// `k8s-openapi` feature, a k8s-openapi `Pod` is built field by field from the wire rather
/// than through its `Deserialize` impl (the same value, in less time).
///
/// ```
/// use k8s_openapi::api::core::v1::Pod;
///
/// let pod = serde_json::json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "app"}]}});
/// let bytes = kinformer_protobuf::to_vec(&pod, "v1", "Pod").unwrap();
/// let owned: Pod = kinformer_protobuf::from_slice_owned(&bytes).unwrap();
/// assert_eq!(owned, kinformer_protobuf::from_slice::<Pod>(&bytes).unwrap());
/// ```
///
/// # Errors
/// As [`from_slice`].
pub fn from_slice_owned<T: serde::de::DeserializeOwned + 'static>(
    bytes: &[u8],
) -> Result<T, Error> {
    let (schema, id, env) = opened(bytes)?;
    owned::from_message_owned(schema, id, env.raw, Some((env.api_version, env.kind)))
}

/// Encodes `value` (an object of `api_version` and `kind`) as an enveloped object. Its own
/// `apiVersion` and `kind` fields, if any, are not encoded: the envelope carries them.
///
/// # Errors
/// When the kind has no protobuf form, or the value has a field or a shape the message does
/// not have.
pub fn to_vec<T: Serialize + ?Sized>(
    value: &T,
    api_version: &str,
    kind: &str,
) -> Result<Vec<u8>, Error> {
    let raw = to_message(value, api_version, kind)?;
    Ok(Envelope::encode(api_version, kind, &raw))
}

/// Encodes `value` (an object of `api_version` and `kind`) as its bare message, without the
/// envelope: what a list holds as an item ([`ListBuilder::push_message`]), and what
/// [`Envelope::encode`] wraps into [`to_vec`]'s form.
///
/// ```
/// use kinformer_protobuf::{Envelope, to_message, to_vec};
/// use serde_json::json;
///
/// let cm = json!({"metadata": {"name": "settings"}, "data": {"mode": "fast"}});
/// let raw = to_message(&cm, "v1", "ConfigMap").unwrap();
/// assert_eq!(Envelope::encode("v1", "ConfigMap", &raw), to_vec(&cm, "v1", "ConfigMap").unwrap());
/// ```
///
/// # Errors
/// As [`to_vec`].
pub fn to_message<T: Serialize + ?Sized>(
    value: &T,
    api_version: &str,
    kind: &str,
) -> Result<Vec<u8>, Error> {
    let schema = Schema::get()?;
    let id = kinds::message_for(schema, api_version, kind).ok_or_else(|| Error::UnknownKind {
        api_version: api_version.to_owned(),
        kind: kind.to_owned(),
    })?;
    ser::to_message(schema, id, value)
}

/// Encodes a JSON object, whose `apiVersion` and `kind` name its type, as an enveloped object.
///
/// ```
/// use serde_json::json;
///
/// let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
///                  "spec": {"containers": [{"name": "app", "image": "nginx"}]}});
/// let bytes = kinformer_protobuf::json_to_vec(&pod).unwrap();
/// let back: serde_json::Value = kinformer_protobuf::from_slice(&bytes).unwrap();
/// assert_eq!(back, pod);
/// ```
///
/// # Errors
/// As [`to_vec`]; also when `apiVersion` or `kind` is missing.
pub fn json_to_vec(value: &serde_json::Value) -> Result<Vec<u8>, Error> {
    let field = |k: &str| {
        value
            .get(k)
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default()
    };
    to_vec(value, field("apiVersion"), field("kind"))
}
