//! Stored objects: the serialized bytes of one object version plus its parsed metadata.
//!
//! An object is serialized once per write; lists and watch events only copy these bytes. Its
//! protobuf form is encoded once too, when first asked for (or at the write, see
//! [`crate::store::StoreConfig::encode_protobuf`]), and kept with it.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use serde_json::Value;

/// One stored version of an object.
#[derive(Debug, Clone)]
pub struct StoredObject {
    /// The object as served (JSON).
    pub bytes: Bytes,
    /// `metadata.name`.
    pub name: String,
    /// `metadata.namespace`, empty for cluster-scoped objects.
    pub namespace: String,
    /// `metadata.labels`.
    pub labels: BTreeMap<String, String>,
    /// The revision that wrote this version (its `resourceVersion`).
    pub revision: u64,
    /// The protobuf message (without the envelope), once encoded.
    protobuf: OnceLock<Result<Bytes, kinformer_protobuf::Error>>,
}

impl StoredObject {
    /// Builds a stored version from a complete object.
    ///
    /// # Errors
    /// `serde_json::Error` if the object cannot be serialized (non-string map keys never occur in
    /// a `Value`, so this is effectively infallible).
    pub fn from_value(v: &Value, revision: u64) -> Result<Arc<Self>, serde_json::Error> {
        let bytes = Bytes::from(serde_json::to_vec(v)?);
        let meta = v.get("metadata");
        let s = |k: &str| {
            meta.and_then(|m| m.get(k))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let labels = meta
            .and_then(|m| m.get("labels"))
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
                    .collect()
            })
            .unwrap_or_default();
        Ok(Self::from_parts(
            bytes,
            s("name"),
            s("namespace"),
            labels,
            revision,
        ))
    }

    /// A stored version from its JSON bytes and the metadata read from them.
    pub fn from_parts(
        bytes: Bytes,
        name: String,
        namespace: String,
        labels: BTreeMap<String, String>,
        revision: u64,
    ) -> Arc<Self> {
        Arc::new(Self {
            bytes,
            name,
            namespace,
            labels,
            revision,
            protobuf: OnceLock::new(),
        })
    }

    /// The object's protobuf message if it has been encoded already (by
    /// [`StoredObject::protobuf`] or at the write).
    pub fn encoded_protobuf(&self) -> Option<&Bytes> {
        self.protobuf.get().and_then(|r| r.as_ref().ok())
    }

    /// The object's protobuf message (without the envelope) as an object of `api_version` and
    /// `kind`: encoded from the JSON bytes on the first call, the same bytes afterwards. An
    /// object's kind never changes, so the first call's kind is the one kept.
    ///
    /// # Errors
    /// When the object has no protobuf form (a custom resource, or a field the kind's message
    /// lacks); the error is kept too.
    pub fn protobuf(
        &self,
        api_version: &str,
        kind: &str,
    ) -> Result<&Bytes, &kinformer_protobuf::Error> {
        self.protobuf
            .get_or_init(|| {
                let v: Value = serde_json::from_slice(&self.bytes).map_err(|e| {
                    kinformer_protobuf::Error::Custom(format!("stored object is not JSON: {e}"))
                })?;
                kinformer_protobuf::to_message(&v, api_version, kind).map(Bytes::from)
            })
            .as_ref()
    }

    /// Encodes the object's protobuf message from `v`, the value its JSON bytes were made from
    /// (see [`StoredObject::from_value`]), unless it is encoded already: the same message as
    /// [`StoredObject::protobuf`] gives, without parsing the JSON bytes back first.
    ///
    /// # Errors
    /// As [`StoredObject::protobuf`]'s.
    pub fn protobuf_from_value(
        &self,
        v: &Value,
        api_version: &str,
        kind: &str,
    ) -> Result<&Bytes, &kinformer_protobuf::Error> {
        self.protobuf
            .get_or_init(|| kinformer_protobuf::to_message(v, api_version, kind).map(Bytes::from))
            .as_ref()
    }

    /// Parses the stored bytes back into a JSON value.
    ///
    /// # Errors
    /// Never for bytes this crate wrote; `serde_json::Error` otherwise.
    pub fn to_value(&self) -> Result<Value, serde_json::Error> {
        serde_json::from_slice(&self.bytes)
    }

    /// The store key: `namespace/name`, or `name` for cluster-scoped objects.
    pub fn key(&self) -> String {
        object_key(&self.namespace, &self.name)
    }
}

/// The store key for a namespace and name.
pub fn object_key(namespace: &str, name: &str) -> String {
    if namespace.is_empty() {
        name.to_string()
    } else {
        format!("{namespace}/{name}")
    }
}

/// A random UUID v4 string.
pub fn new_uid() -> String {
    uuid::Builder::from_random_bytes(rand::random())
        .into_uuid()
        .to_string()
}

/// The current wall-clock time as RFC 3339 (seconds precision, UTC), as Kubernetes writes it.
pub fn now_rfc3339() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    rfc3339(secs)
}

/// Formats Unix seconds as RFC 3339 UTC (seconds outside jiff's range, years beyond ±9999,
/// clamp to its ends).
pub fn rfc3339(secs: i64) -> String {
    let clamped = secs.clamp(
        jiff::Timestamp::MIN.as_second(),
        jiff::Timestamp::MAX.as_second(),
    );
    jiff::Timestamp::from_second(clamped)
        .unwrap_or(jiff::Timestamp::UNIX_EPOCH)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_formats_known_instants() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_700_000_000), "2023-11-14T22:13:20Z");
    }

    #[test]
    fn uids_look_like_uuid_v4() {
        let u = new_uid();
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "4");
        assert_ne!(u, new_uid());
    }
}
