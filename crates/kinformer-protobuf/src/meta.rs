//! Reading an object's metadata without decoding the object: `ObjectMeta` is field 1 of every
//! top-level Kubernetes message, so [`object_meta`] walks the object's top-level fields (only
//! their framing), parses field 1 by hand and skips the rest — no schema walk, no serde, and
//! the strings borrowed from the bytes.
//!
//! The values are those the schema-driven decode ([`from_slice`](crate::from_slice)) gives
//! for the same fields, i.e. Go's JSON form: string fields and `generation` that Go's JSON
//! omits when zero are `None` when empty or zero; an empty `Time` is `None`;
//! `deletionGracePeriodSeconds` (a pointer in Go) is kept when zero; empty maps and lists are
//! empty (absent in JSON).

use jiff::Timestamp;

use crate::envelope::Envelope;
use crate::error::Error;
use crate::wire::{Reader, Value};

/// The bytes of field `number` (first occurrence) of a message.
fn bytes_field(message: &[u8], number: u32) -> Option<&[u8]> {
    let mut r = Reader::new(message);
    while !r.is_empty() {
        match r.field().ok()? {
            (n, Value::Bytes(b)) if n == number => return Some(b),
            _ => {}
        }
    }
    None
}

/// `metadata.name` of a top-level object's bare message (a list item), if present and valid
/// — read leniently, for naming an object whose metadata is otherwise malformed.
///
/// ```
/// let raw = kinformer_protobuf::to_message(
///     &serde_json::json!({"metadata": {"name": "a"}}), "v1", "Pod").unwrap();
/// assert_eq!(kinformer_protobuf::object_name(&raw), Some("a"));
/// ```
pub fn object_name(message: &[u8]) -> Option<&str> {
    let meta = bytes_field(message, 1)?;
    std::str::from_utf8(bytes_field(meta, 1)?).ok()
}

/// The metadata fields a controller reads (`ObjectMeta` without `managedFields` and
/// `selfLink`), borrowed from an object's protobuf bytes. See [`object_meta`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ObjectMetaRef<'a> {
    /// `name`.
    pub name: Option<&'a str>,
    /// `generateName`.
    pub generate_name: Option<&'a str>,
    /// `namespace`.
    pub namespace: Option<&'a str>,
    /// `uid`.
    pub uid: Option<&'a str>,
    /// `resourceVersion`.
    pub resource_version: Option<&'a str>,
    /// `generation`.
    pub generation: Option<i64>,
    /// `creationTimestamp` (whole seconds, as its JSON form holds).
    pub creation_timestamp: Option<Timestamp>,
    /// `deletionTimestamp`.
    pub deletion_timestamp: Option<Timestamp>,
    /// `deletionGracePeriodSeconds`.
    pub deletion_grace_period_seconds: Option<i64>,
    /// `labels`, in wire order (a later duplicate key wins, as in a map).
    pub labels: Vec<(&'a str, &'a str)>,
    /// `annotations`, in wire order.
    pub annotations: Vec<(&'a str, &'a str)>,
    /// `ownerReferences`.
    pub owner_references: Vec<OwnerReferenceRef<'a>>,
    /// `finalizers`.
    pub finalizers: Vec<&'a str>,
}

/// One `ownerReferences` entry, borrowed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct OwnerReferenceRef<'a> {
    /// `apiVersion`.
    pub api_version: &'a str,
    /// `kind`.
    pub kind: &'a str,
    /// `name`.
    pub name: &'a str,
    /// `uid`.
    pub uid: &'a str,
    /// `controller`.
    pub controller: Option<bool>,
    /// `blockOwnerDeletion`.
    pub block_owner_deletion: Option<bool>,
}

/// The metadata of an enveloped top-level object (`k8s\0` + `runtime.Unknown`) of a built-in
/// API group, parsed without decoding the rest of the object — and without the schema, which
/// a process that only reads metadata then never builds (about 5.6 MiB).
///
/// ```
/// use serde_json::json;
///
/// let pod = json!({"apiVersion": "v1", "kind": "Pod",
///     "metadata": {"name": "web-0", "namespace": "default", "labels": {"app": "web"},
///                  "creationTimestamp": "2024-05-01T10:00:00Z"},
///     "spec": {"containers": [{"name": "app", "image": "nginx"}]}});
/// let bytes = kinformer_protobuf::json_to_vec(&pod).unwrap();
/// let meta = kinformer_protobuf::object_meta(&bytes).unwrap();
/// assert_eq!((meta.namespace, meta.name), (Some("default"), Some("web-0")));
/// assert_eq!(meta.labels, [("app", "web")]);
/// assert_eq!(meta.creation_timestamp.unwrap().to_string(), "2024-05-01T10:00:00Z");
/// ```
///
/// # Errors
/// The bytes are not an enveloped object of a built-in API group (or are compressed), the
/// object's framing is broken, or its metadata is malformed.
pub fn object_meta(enveloped: &[u8]) -> Result<ObjectMetaRef<'_>, Error> {
    let env = Envelope::parse(enveloped)?;
    check_builtin(&env)?;
    let mut meta: &[u8] = &[];
    let mut r = Reader::new(env.raw);
    while !r.is_empty() {
        match r.field()? {
            (1, Value::Bytes(b)) => meta = b,
            (1, _) => return Err(wrong_type("metadata")),
            _ => {}
        }
    }
    parse_object_meta(meta)
}

/// An envelope of a kind of a built-in API group, uncompressed: what a top-level object with
/// `ObjectMeta` as field 1 comes in (checked without the schema; a kind the schema does not
/// know fails when the object is decoded in full).
pub(crate) fn check_builtin(env: &Envelope<'_>) -> Result<(), Error> {
    if !env.content_encoding.is_empty() {
        return Err(Error::ContentEncoding(env.content_encoding.to_owned()));
    }
    let (group, version) = env
        .api_version
        .rsplit_once('/')
        .unwrap_or(("", env.api_version));
    if version.is_empty() || env.kind.is_empty() || !crate::kinds::is_builtin_group(group) {
        return Err(Error::UnknownKind {
            api_version: env.api_version.to_owned(),
            kind: env.kind.to_owned(),
        });
    }
    Ok(())
}

fn wrong_type(field: &str) -> Error {
    Error::Invalid(format!("{field}: field of the wrong wire type"))
}

fn text<'a>(v: Value<'a>, field: &str) -> Result<&'a str, Error> {
    match v {
        Value::Bytes(b) => std::str::from_utf8(b)
            .map_err(|e| Error::Invalid(format!("{field}: string field is not UTF-8: {e}"))),
        _ => Err(wrong_type(field)),
    }
}

/// A string Go's JSON omits when empty.
pub(crate) fn nonempty<'a>(v: Value<'a>, field: &str) -> Result<Option<&'a str>, Error> {
    text(v, field).map(|s| (!s.is_empty()).then_some(s))
}

fn varint(v: Value<'_>, field: &str) -> Result<u64, Error> {
    match v {
        Value::Varint(x) => Ok(x),
        _ => Err(wrong_type(field)),
    }
}

/// A `meta.v1.Time`: `None` when empty (Go's zero time, `null` in JSON); whole seconds.
fn time(v: Value<'_>, field: &str) -> Result<Option<Timestamp>, Error> {
    let Value::Bytes(b) = v else {
        return Err(wrong_type(field));
    };
    if b.is_empty() {
        return Ok(None);
    }
    let mut seconds = 0i64;
    let mut r = Reader::new(b);
    while !r.is_empty() {
        match r.field()? {
            (1, v) => seconds = varint(v, field)? as i64,
            (2, v) => {
                varint(v, field)?;
            }
            _ => {}
        }
    }
    Timestamp::from_second(seconds)
        .map(Some)
        .map_err(|e| Error::Invalid(format!("{field}: {e}")))
}

/// A `map<string, string>` entry.
fn entry<'a>(v: Value<'a>, field: &str) -> Result<(&'a str, &'a str), Error> {
    let Value::Bytes(b) = v else {
        return Err(wrong_type(field));
    };
    let (mut key, mut value) = ("", "");
    let mut r = Reader::new(b);
    while !r.is_empty() {
        match r.field()? {
            (1, v) => key = text(v, field)?,
            (2, v) => value = text(v, field)?,
            _ => {}
        }
    }
    Ok((key, value))
}

fn owner_reference(v: Value<'_>) -> Result<OwnerReferenceRef<'_>, Error> {
    const FIELD: &str = "ownerReferences";
    let Value::Bytes(b) = v else {
        return Err(wrong_type(FIELD));
    };
    let mut o = OwnerReferenceRef::default();
    let mut r = Reader::new(b);
    while !r.is_empty() {
        match r.field()? {
            (1, v) => o.kind = text(v, FIELD)?,
            (3, v) => o.name = text(v, FIELD)?,
            (4, v) => o.uid = text(v, FIELD)?,
            (5, v) => o.api_version = text(v, FIELD)?,
            (6, v) => o.controller = Some(varint(v, FIELD)? != 0),
            (7, v) => o.block_owner_deletion = Some(varint(v, FIELD)? != 0),
            _ => {}
        }
    }
    Ok(o)
}

/// Parses the bytes of a `meta.v1.ObjectMeta` (`managedFields`, `selfLink` and unknown
/// fields skipped).
pub(crate) fn parse_object_meta(bytes: &[u8]) -> Result<ObjectMetaRef<'_>, Error> {
    let mut m = ObjectMetaRef::default();
    let mut r = Reader::new(bytes);
    while !r.is_empty() {
        match r.field()? {
            (1, v) => m.name = nonempty(v, "name")?,
            (2, v) => m.generate_name = nonempty(v, "generateName")?,
            (3, v) => m.namespace = nonempty(v, "namespace")?,
            (4, v) => {
                text(v, "selfLink")?;
            }
            (5, v) => m.uid = nonempty(v, "uid")?,
            (6, v) => m.resource_version = nonempty(v, "resourceVersion")?,
            (7, v) => {
                m.generation = Some(varint(v, "generation")? as i64).filter(|g| *g != 0);
            }
            (8, v) => m.creation_timestamp = time(v, "creationTimestamp")?,
            (9, v) => m.deletion_timestamp = time(v, "deletionTimestamp")?,
            (10, v) => {
                m.deletion_grace_period_seconds =
                    Some(varint(v, "deletionGracePeriodSeconds")? as i64);
            }
            (11, v) => m.labels.push(entry(v, "labels")?),
            (12, v) => m.annotations.push(entry(v, "annotations")?),
            (13, v) => m.owner_references.push(owner_reference(v)?),
            (14, v) => m.finalizers.push(text(v, "finalizers")?),
            _ => {}
        }
    }
    Ok(m)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn fields_as_go_json_holds_them() {
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": "a", "namespace": "ns", "uid": "u-1", "resourceVersion": "17",
            "generation": 3, "deletionGracePeriodSeconds": 0,
            "creationTimestamp": "2024-05-01T10:00:00Z",
            "deletionTimestamp": "2024-05-02T10:00:00Z",
            "labels": {"app": "web", "tier": ""},
            "annotations": {"note": "x"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs",
                                 "uid": "u-0", "controller": true}],
            "finalizers": ["f1", "f2"],
            "managedFields": [{"manager": "kubectl", "operation": "Apply"}]}});
        let bytes = crate::json_to_vec(&pod).unwrap();
        let m = object_meta(&bytes).unwrap();
        assert_eq!(m.name, Some("a"));
        assert_eq!(m.uid, Some("u-1"));
        assert_eq!(m.generation, Some(3));
        assert_eq!(m.deletion_grace_period_seconds, Some(0));
        assert_eq!(
            m.deletion_timestamp.unwrap().to_string(),
            "2024-05-02T10:00:00Z"
        );
        assert_eq!(m.labels, [("app", "web"), ("tier", "")]);
        assert_eq!(m.owner_references[0].kind, "ReplicaSet");
        assert_eq!(m.owner_references[0].controller, Some(true));
        assert_eq!(m.owner_references[0].block_owner_deletion, None);
        assert_eq!(m.finalizers, ["f1", "f2"]);

        let bare = crate::json_to_vec(&json!({"apiVersion": "v1", "kind": "Pod"})).unwrap();
        assert_eq!(object_meta(&bare).unwrap(), ObjectMetaRef::default());
    }

    #[test]
    fn broken_bytes_are_errors() {
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"}});
        let good = crate::json_to_vec(&pod).unwrap();
        assert!(object_meta(&good[..good.len() - 3]).is_err());
        assert!(object_meta(b"k8s\0\x01\x02").is_err());
        assert!(object_meta(b"{}").is_err());
        let widget = Envelope::encode("example.com/v1", "Widget", &[0x0a, 0]);
        assert!(matches!(
            object_meta(&widget),
            Err(Error::UnknownKind { .. })
        ));
        // metadata.name that is not UTF-8, and metadata as a varint.
        let bad_name = Envelope::encode("v1", "Pod", &[0x0a, 3, 0x0a, 1, 0xff]);
        assert!(object_meta(&bad_name).is_err());
        let varint_meta = Envelope::encode("v1", "Pod", &[0x08, 1]);
        assert!(object_meta(&varint_meta).is_err());
    }
}
