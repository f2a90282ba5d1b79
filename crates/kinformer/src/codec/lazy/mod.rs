//! [`Lazy<K>`]: an object as it came off the wire — its metadata parsed, its body kept as it
//! arrived (JSON, or Kubernetes protobuf for built-in kinds) and decoded into `K` only when
//! someone asks, at most once.
//!
//! An informer of `Lazy<K>` (e.g. `SharedIndexInformer<Lazy<Pod>>`) keys, indexes and
//! delivers objects from the metadata alone; most controllers' handlers only read a key and
//! some labels, so most objects are never fully decoded. With compact storage
//! ([`Storage::compact`](crate::cache::Storage::compact)) the store keeps the body as it
//! arrived, compressed, and a read decodes only the metadata again.
//!
//! Properties:
//! - **One metadata parse per object**: `metadata` without `managedFields` (which a
//!   controller rarely reads and which is often most of the metadata). Objects off the wire
//!   were split from their list or watch event by a validating parser, so the parse stops at
//!   the end of `metadata` (the spec and status are not read again); [`Lazy::from_json`],
//!   given text nobody checked, reads the whole body.
//! - **Full decode on demand, once**: [`Lazy::object`] decodes the body into `Arc<K>` the first
//!   time and returns the same `Arc` afterwards; every handler receives the same `Arc<Lazy<K>>`
//!   for one notification, so they share that decode.
//! - **Errors surface when read**: a body whose metadata parses but whose rest is not a valid
//!   `K` is stored and delivered; [`Lazy::object`] returns the [`DecodeError`] (with the name).
//! - **Read back from compact storage, parsed only if read**: a `Lazy` decoded from stored
//!   bytes (a lister read) parses its metadata on first access; the object an update or a
//!   delete replaced (`old`) is not even decompressed until its metadata or body is read, so
//!   the handler of an update that reads only `new` costs nothing for `old`. (Stored bytes
//!   were checked when they arrived; corrupt ones read as empty metadata, logged, and fail
//!   [`Lazy::object`].)
//! - **Metadata edits are kept**: a change made through `meta_mut` (e.g. by a transform) is
//!   written into the body for the view's fields before the body is decoded or stored.
//!
//! [`full_decodes`] counts full decodes process-wide, for metrics and tests.

mod meta;
#[cfg(feature = "kube")]
pub(crate) mod raw;

use std::borrow::Cow;
use std::cell::RefCell;
use std::fmt;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube_core::Resource;
use serde::de::{self, DeserializeOwned, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::value::RawValue;

use crate::codec::DecodeError;
#[cfg(all(feature = "fast-json", feature = "kube"))]
pub(crate) use meta::sonic_message;
use meta::{Envelope, MetaView, VIEW_KEYS};

static FULL_DECODES: AtomicU64 = AtomicU64::new(0);

/// The number of full decodes [`Lazy::object`] has done in this process (all types).
pub fn full_decodes() -> u64 {
    FULL_DECODES.load(Ordering::Relaxed)
}

/// True if `K` is a `Lazy<_>`: a lister-watcher hands it the object's bytes as they arrived
/// instead of decoding them, compact storage its stored bytes to read when needed.
///
/// `K` is only known to be `DeserializeOwned` (a trait of the codec's would have to be
/// implemented by every resource type, CRDs included, and stable Rust cannot let `Lazy`
/// override a blanket impl), so `K`'s own `Deserialize` is asked: a `Lazy` reads binary
/// formats as the newtype [`LAZY`], and the probe deserializer notes that name and fails at
/// once, without allocating, whatever `K` is.
#[cfg_attr(not(any(feature = "kube", feature = "compact")), allow(dead_code))]
pub(crate) fn keeps_bytes<K: DeserializeOwned>() -> bool {
    let asked_for_lazy = std::cell::Cell::new(false);
    let _ = K::deserialize(Probe(&asked_for_lazy));
    asked_for_lazy.get()
}

/// The deserializer of [`keeps_bytes`]: notes whether a newtype named [`LAZY`] is asked for,
/// fails every call.
struct Probe<'a>(&'a std::cell::Cell<bool>);

/// The error of [`Probe`]: nothing to say, nothing allocated.
#[derive(Debug)]
struct Probed;

impl fmt::Display for Probed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("probed")
    }
}

impl std::error::Error for Probed {}

impl de::Error for Probed {
    fn custom<T: fmt::Display>(_: T) -> Self {
        Probed
    }
}

impl<'de> Deserializer<'de> for Probe<'_> {
    type Error = Probed;

    fn is_human_readable(&self) -> bool {
        false
    }

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Probed> {
        Err(Probed)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        _: V,
    ) -> Result<V::Value, Probed> {
        self.0.set(name == LAZY);
        Err(Probed)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct seq tuple tuple_struct map struct enum identifier ignored_any
    }
}

/// An object whose metadata is parsed and whose body stays as it arrived (JSON, or an
/// enveloped Kubernetes protobuf object) until it is read.
///
/// Implements [`Resource`] with `K`'s kind, group, version and scope, so it goes wherever
/// `K` goes: a [`KubeListerWatcher`](crate::kube::KubeListerWatcher) (which asks for protobuf
/// for built-in kinds and keeps the protobuf bytes), an informer, index functions (which see
/// the metadata), listers. Serializes as the JSON body in JSON, as the body's bytes as they
/// arrived in binary formats (which is how compact storage keeps it).
///
/// ```
/// use k8s_openapi::api::core::v1::Pod;
/// use kinformer::cache::Lazy;
/// use kube_core::Resource;
///
/// let json = r#"{"apiVersion":"v1","kind":"Pod",
///     "metadata":{"name":"web-0","namespace":"default","labels":{"app":"web"},
///                 "managedFields":[{"manager":"kubectl"}]},
///     "spec":{"containers":[{"name":"app","image":"nginx"}]}}"#;
/// let pod: Lazy<Pod> = serde_json::from_str(json).unwrap();
/// assert_eq!(pod.meta().name.as_deref(), Some("web-0"));
/// assert!(pod.meta().managed_fields.is_none()); // not parsed
/// assert!(!pod.is_decoded());
///
/// let full = pod.object().unwrap(); // decoded now, once
/// assert_eq!(full.spec.as_ref().unwrap().containers[0].image.as_deref(), Some("nginx"));
/// assert!(pod.is_decoded());
/// ```
pub struct Lazy<K> {
    /// Parsed on arrival; for a `Lazy` read back from storage, on first access (the stored
    /// body was checked when it arrived).
    meta: OnceLock<ObjectMeta>,
    /// The body as it arrived; read from `stored` on first access when that is set.
    body: OnceLock<Body>,
    /// Where the body is read from when first needed (an object compact storage replaced).
    stored: Option<Arc<dyn StoredBody>>,
    /// Set by `meta_mut`: `meta` may differ from the metadata in `raw`.
    meta_changed: bool,
    decoded: OnceLock<Result<Arc<K>, DecodeError>>,
    _k: PhantomData<fn() -> K>,
}

/// A body as it arrived.
#[derive(Clone)]
enum Body {
    /// Valid JSON: split from a list or an event by a validating parser, read whole by
    /// [`Lazy::from_json`], or a stored copy of either. (Bytes a foreign binary deserializer
    /// hands over are taken as they are; if the rest of such a body is not JSON, reading
    /// it fails.)
    Json(Box<str>),
    /// An enveloped protobuf object (`k8s\0` + `runtime.Unknown`), whose metadata decoded.
    #[cfg(feature = "protobuf")]
    Protobuf(Box<[u8]>),
    /// A stored body that could not be read back (why): empty metadata, and every read of
    /// the body fails.
    Unreadable(Box<str>),
}

/// The stored form of an object's body, read back only when the body is first needed.
pub(crate) trait StoredBody: Send + Sync {
    /// The body, as a `Lazy` of no particular type (its metadata not parsed).
    ///
    /// # Errors
    /// The stored bytes cannot be read back (why, with the object's key).
    fn read(&self) -> Result<Lazy<()>, String>;
}

thread_local! {
    /// A stored body on its way into [`deferred`]'s `Lazy` (see there).
    static HANDOFF: RefCell<Option<Arc<dyn StoredBody>>> = const { RefCell::new(None) };
}

/// `K`, if it is a `Lazy<_>`, with its body in the stored form `stored` makes, read when first
/// needed; `None` (and `stored` not called) if `K` is another type.
///
/// `K` is only known to be some `Lazy<_>` at run time, so the body goes through serde: `K`'s
/// `Deserialize` (this module's) is handed a deserializer that asks for a unit, and takes the
/// body from a thread-local slot filled just before.
#[cfg_attr(not(feature = "compact"), allow(dead_code))]
pub(crate) fn deferred<K: DeserializeOwned>(
    stored: impl FnOnce() -> Arc<dyn StoredBody>,
) -> Option<K> {
    if !keeps_bytes::<K>() {
        return None;
    }
    HANDOFF.with(|slot| *slot.borrow_mut() = Some(stored()));
    let out = K::deserialize(Handoff).ok();
    HANDOFF.with(|slot| slot.borrow_mut().take());
    out
}

/// The deserializer of [`deferred`]: a `Lazy`'s newtype visitor gets a unit.
struct Handoff;

impl<'de> Deserializer<'de> for Handoff {
    type Error = de::value::Error;

    fn is_human_readable(&self) -> bool {
        false
    }

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
        Err(de::Error::custom("not a Lazy"))
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        if name == LAZY {
            visitor.visit_unit()
        } else {
            self.deserialize_any(visitor)
        }
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct seq tuple tuple_struct map struct enum identifier ignored_any
    }
}

/// The newtype name a `Lazy` deserializes as from binary formats.
const LAZY: &str = "Lazy";

const NOT_AN_OBJECT: &str = "expected a JSON object";

/// True if `json` starts (after whitespace) with `{`. serde's derived structs also read
/// arrays, field by field, so anything else is refused before its metadata parse.
fn opens_object(json: &str) -> bool {
    json.trim_ascii_start().starts_with('{')
}

impl Body {
    /// Bytes as a binary format carries a body: an enveloped protobuf object (its `k8s\0`
    /// prefix) or a JSON object.
    fn of(bytes: Vec<u8>) -> Result<Body, String> {
        #[cfg(feature = "protobuf")]
        if bytes.starts_with(&kinformer_protobuf::MAGIC) {
            return Ok(Body::Protobuf(bytes.into_boxed_slice()));
        }
        if bytes.starts_with(b"k8s\0") {
            return Err("a protobuf body, but the protobuf feature is off".into());
        }
        Body::json(String::from_utf8(bytes).map_err(|e| e.to_string())?)
    }

    /// [`Body::of`] for text, which needs no second UTF-8 check.
    fn of_text(text: String) -> Result<Body, String> {
        if text.starts_with("k8s\0") {
            return Body::of(text.into_bytes());
        }
        Body::json(text)
    }

    /// JSON text, refused unless it is an object.
    fn json(text: String) -> Result<Body, String> {
        if !opens_object(&text) {
            return Err(NOT_AN_OBJECT.into());
        }
        Ok(Body::Json(text.into_boxed_str()))
    }

    /// Parses the metadata (without `managedFields`) of a body whose JSON is known to be
    /// valid (see [`meta::metadata_first`]): the members after `metadata` are not read.
    fn metadata(&self) -> Result<ObjectMeta, String> {
        match self {
            Body::Json(raw) => meta::metadata_first(raw)
                .map(ObjectMeta::from)
                .map_err(|e| e.to_string()),
            #[cfg(feature = "protobuf")]
            Body::Protobuf(bytes) => kinformer_protobuf::object_meta(bytes)
                .map(meta::from_protobuf)
                .map_err(|e| e.to_string()),
            Body::Unreadable(why) => Err(why.to_string()),
        }
    }

    fn len(&self) -> usize {
        match self {
            Body::Json(j) => j.len(),
            #[cfg(feature = "protobuf")]
            Body::Protobuf(p) => p.len(),
            Body::Unreadable(_) => 0,
        }
    }

    /// The error reading an unreadable body gives.
    fn unreadable(why: &str) -> serde_json::Error {
        <serde_json::Error as de::Error>::custom(format!("stored body unreadable: {why}"))
    }
}

impl<K> Lazy<K> {
    /// Parses the metadata of a JSON object and keeps the body as it is.
    ///
    /// # Errors
    /// The body is not a JSON object, or its `metadata` is malformed.
    pub fn from_json(json: impl Into<String>) -> Result<Self, serde_json::Error> {
        let raw = json.into().into_boxed_str();
        if !opens_object(&raw) {
            return Err(<serde_json::Error as de::Error>::custom(NOT_AN_OBJECT));
        }
        // Not known to be valid: the parse reads (and so checks) the whole body.
        let envelope: Envelope = meta::from_json(&raw)?;
        Ok(Self::with(envelope.metadata.into(), Body::Json(raw)))
    }

    /// Decodes the metadata of an enveloped Kubernetes protobuf object (`k8s\0` +
    /// `runtime.Unknown`, as a server sends one object, e.g. in a watch event) and keeps the
    /// bytes as they are.
    ///
    /// The metadata is read straight from the bytes, without the protobuf schema (which is
    /// built only when an object is decoded in full).
    ///
    /// # Errors
    /// The bytes are not an enveloped object of a built-in API group, or its metadata is
    /// malformed. (An unknown kind of a built-in group fails when [`object`](Self::object)
    /// decodes it.)
    #[cfg(feature = "protobuf")]
    #[cfg_attr(docsrs, doc(cfg(feature = "protobuf")))]
    pub fn from_protobuf(bytes: impl Into<Vec<u8>>) -> Result<Self, kinformer_protobuf::Error> {
        let bytes = bytes.into().into_boxed_slice();
        let meta = meta::from_protobuf(kinformer_protobuf::object_meta(&bytes)?);
        Ok(Self::with(meta, Body::Protobuf(bytes)))
    }

    fn with(meta: ObjectMeta, body: Body) -> Self {
        Lazy {
            meta: OnceLock::from(meta),
            body: OnceLock::from(body),
            stored: None,
            meta_changed: false,
            decoded: OnceLock::new(),
            _k: PhantomData,
        }
    }

    /// A body's bytes as they came off the wire: JSON text, or an enveloped protobuf object
    /// (told apart by its `k8s\0` prefix); the metadata is parsed now.
    fn from_bytes(bytes: Vec<u8>) -> Result<Self, String> {
        Body::of(bytes).and_then(Self::parsed)
    }

    /// `body` (checked JSON, see [`Body::Json`], or protobuf), its metadata parsed now.
    fn parsed(body: Body) -> Result<Self, String> {
        let meta = body.metadata()?;
        Ok(Self::with(meta, body))
    }

    /// A body's bytes as a binary format stored them (compact storage): the metadata is
    /// parsed when first read. These are the bytes of a `Lazy` whose metadata parsed when it
    /// arrived, and a reader that does not look at them (the old object of most updates)
    /// costs no parse.
    fn from_stored_bytes(bytes: Vec<u8>) -> Result<Self, String> {
        Body::of(bytes).map(Self::unparsed)
    }

    fn unparsed(body: Body) -> Self {
        Lazy {
            meta: OnceLock::new(),
            body: OnceLock::from(body),
            stored: None,
            meta_changed: false,
            decoded: OnceLock::new(),
            _k: PhantomData,
        }
    }

    /// A `Lazy` whose body is read from `stored` when first needed (see [`deferred`]).
    fn from_stored(stored: Arc<dyn StoredBody>) -> Self {
        Lazy {
            meta: OnceLock::new(),
            body: OnceLock::new(),
            stored: Some(stored),
            meta_changed: false,
            decoded: OnceLock::new(),
            _k: PhantomData,
        }
    }

    /// The body, read back from storage on first access if it was left there.
    fn body(&self) -> &Body {
        self.body.get_or_init(|| {
            let read = match &self.stored {
                Some(stored) => stored.read(),
                None => Err("no body".to_owned()),
            };
            // Not logged here: a metadata read logs it (`parse_meta`), a body read returns it.
            match read.map(|lazy| lazy.body.into_inner()) {
                Ok(Some(body)) => body,
                Ok(None) => Body::Unreadable("no body".into()),
                Err(why) => Body::Unreadable(why.into_boxed_str()),
            }
        })
    }

    /// True once the body is at hand (always, but for an object read back from storage
    /// whose metadata and body nobody has read yet).
    #[cfg(test)]
    pub(crate) fn body_read(&self) -> bool {
        self.body.get().is_some()
    }

    /// True once the metadata is parsed (at arrival, or at the first read of a stored body).
    #[cfg(test)]
    pub(crate) fn meta_parsed(&self) -> bool {
        self.meta.get().is_some()
    }

    /// The metadata, parsed from the body on first access.
    fn view(&self) -> &ObjectMeta {
        self.meta.get_or_init(|| self.parse_meta())
    }

    /// Parses the body's metadata. Only bodies read back from storage come here, which parsed
    /// when they arrived; should one not (corrupt stored bytes), the error is logged and the
    /// metadata is empty, so the object has no key and every keyed use reports it.
    fn parse_meta(&self) -> ObjectMeta {
        let body = self.body();
        body.metadata().unwrap_or_else(|error| {
            tracing::error!(%error, body_len = body.len(), "stored object: its metadata does not parse");
            ObjectMeta::default()
        })
    }

    /// True if the body is Kubernetes protobuf (and no metadata edit has been made since).
    pub fn is_protobuf(&self) -> bool {
        #[cfg(feature = "protobuf")]
        if let Body::Protobuf(_) = self.body() {
            return !self.meta_changed;
        }
        false
    }

    /// The body as a JSON object.
    fn json_object(&self) -> Result<serde_json::Map<String, serde_json::Value>, serde_json::Error> {
        match self.body() {
            Body::Json(raw) => serde_json::from_str(raw),
            #[cfg(feature = "protobuf")]
            Body::Protobuf(bytes) => kinformer_protobuf::from_slice(bytes)
                .map_err(<serde_json::Error as serde::de::Error>::custom),
            Body::Unreadable(why) => Err(Body::unreadable(why)),
        }
    }

    /// The bytes a binary format stores: the body as it arrived, or the JSON with the
    /// metadata edits.
    fn stored_bytes(&self) -> Result<Cow<'_, [u8]>, serde_json::Error> {
        match self.body() {
            #[cfg(feature = "protobuf")]
            Body::Protobuf(bytes) if !self.meta_changed => Ok(Cow::Borrowed(bytes)),
            _ => Ok(match self.json()? {
                Cow::Borrowed(s) => Cow::Borrowed(s.as_bytes()),
                Cow::Owned(s) => Cow::Owned(s.into_bytes()),
            }),
        }
    }

    /// The body as JSON, with edits made through `meta_mut` written in (a protobuf body is
    /// converted).
    ///
    /// # Errors
    /// After a `meta_mut`, the stored body is not a JSON object; a protobuf body does not
    /// convert.
    pub fn json(&self) -> Result<Cow<'_, str>, serde_json::Error> {
        if !self.meta_changed {
            return match self.body() {
                Body::Json(raw) => Ok(Cow::Borrowed(raw)),
                #[cfg(feature = "protobuf")]
                Body::Protobuf(_) => serde_json::to_string(&self.json_object()?).map(Cow::Owned),
                Body::Unreadable(why) => Err(Body::unreadable(why)),
            };
        }
        let mut body = self.json_object()?;
        let mut meta = match body.remove("metadata") {
            Some(serde_json::Value::Object(m)) => m,
            _ => serde_json::Map::new(),
        };
        for k in VIEW_KEYS {
            meta.remove(*k);
        }
        if let serde_json::Value::Object(view) = serde_json::to_value(MetaView::from(self.view()))?
        {
            meta.extend(view);
        }
        if let Some(mf) = &self.view().managed_fields {
            meta.insert("managedFields".to_owned(), serde_json::to_value(mf)?);
        }
        body.insert("metadata".to_owned(), serde_json::Value::Object(meta));
        serde_json::to_string(&body).map(Cow::Owned)
    }

    /// True once the body has been decoded (by [`object`](Self::object), or because this
    /// `Lazy` was made from a typed object).
    pub fn is_decoded(&self) -> bool {
        self.decoded.get().is_some()
    }

    /// The size of the body as it arrived, in bytes (JSON or protobuf); 0 for a stored body
    /// that cannot be read back.
    pub fn body_len(&self) -> usize {
        self.body().len()
    }
}

impl<K: DeserializeOwned> Lazy<K> {
    /// The full object: decoded from the body the first time, the same `Arc` afterwards.
    ///
    /// # Errors
    /// The body is not a valid `K` (the error names the object); the error is kept and
    /// returned again on later calls.
    pub fn object(&self) -> Result<Arc<K>, DecodeError> {
        self.decoded
            .get_or_init(|| {
                FULL_DECODES.fetch_add(1, Ordering::Relaxed);
                let decode_error = |e: serde_json::Error| DecodeError {
                    name: self.view().name.clone(),
                    message: e.to_string(),
                };
                #[cfg(feature = "protobuf")]
                if let (Body::Protobuf(bytes), false) = (self.body(), self.meta_changed) {
                    return kinformer_protobuf::from_slice::<K>(bytes)
                        .map(Arc::new)
                        .map_err(|e| DecodeError {
                            name: self.view().name.clone(),
                            message: e.to_string(),
                        });
                }
                let body = self.json().map_err(decode_error)?;
                meta::from_json::<K>(&body)
                    .map(Arc::new)
                    .map_err(decode_error)
            })
            .clone()
    }
}

impl<K: Resource + Serialize> Lazy<K> {
    /// A `Lazy` of a typed object: its JSON encoding, already decoded (so
    /// [`object`](Self::object) returns `obj` itself).
    ///
    /// # Errors
    /// `obj` cannot be serialized to JSON.
    pub fn from_object(obj: Arc<K>) -> Result<Self, serde_json::Error> {
        let lazy = Self::from_json(serde_json::to_string(obj.as_ref())?)?;
        let _ = lazy.decoded.set(Ok(obj));
        Ok(lazy)
    }
}

impl<K> Clone for Lazy<K> {
    fn clone(&self) -> Self {
        Lazy {
            meta: self.meta.clone(),
            body: self.body.clone(),
            stored: self.stored.clone(),
            meta_changed: self.meta_changed,
            decoded: self.decoded.clone(),
            _k: PhantomData,
        }
    }
}

impl<K> PartialEq for Lazy<K> {
    /// Equal when the bodies (with metadata edits) are equal byte for byte, as JSON unless
    /// both are protobuf.
    fn eq(&self, other: &Self) -> bool {
        if self.is_protobuf() && other.is_protobuf() {
            return matches!(
                (self.stored_bytes(), other.stored_bytes()),
                (Ok(a), Ok(b)) if a == b
            );
        }
        match (self.json(), other.json()) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        }
    }
}

impl<K> fmt::Debug for Lazy<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lazy")
            .field("namespace", &self.view().namespace)
            .field("name", &self.view().name)
            .field("resource_version", &self.view().resource_version)
            .field("body_len", &self.body_len())
            .field("protobuf", &self.is_protobuf())
            .field("decoded", &self.is_decoded())
            .finish()
    }
}

impl<K: Resource> Resource for Lazy<K> {
    type DynamicType = K::DynamicType;
    type Scope = K::Scope;

    fn kind(dt: &Self::DynamicType) -> Cow<'_, str> {
        K::kind(dt)
    }
    fn group(dt: &Self::DynamicType) -> Cow<'_, str> {
        K::group(dt)
    }
    fn version(dt: &Self::DynamicType) -> Cow<'_, str> {
        K::version(dt)
    }
    fn api_version(dt: &Self::DynamicType) -> Cow<'_, str> {
        K::api_version(dt)
    }
    fn plural(dt: &Self::DynamicType) -> Cow<'_, str> {
        K::plural(dt)
    }
    /// The metadata view (parsed on first access for an object read back from compact
    /// storage).
    fn meta(&self) -> &ObjectMeta {
        self.view()
    }
    /// The metadata view, for editing: the edit is written into the body when the body is
    /// next read (decoded, stored or serialized); a decoded object is discarded.
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        if self.meta.get().is_none() {
            self.meta = OnceLock::from(self.parse_meta());
        }
        self.meta_changed = true;
        self.decoded = OnceLock::new();
        match self.meta.get_mut() {
            Some(meta) => meta,
            None => unreachable!("the metadata was parsed above"),
        }
    }
}

impl<K> Serialize for Lazy<K> {
    /// The JSON body itself in human-readable formats (JSON), the body's bytes as they
    /// arrived in binary ones (e.g. MessagePack: JSON text or enveloped protobuf).
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if s.is_human_readable() {
            let body = self.json().map_err(serde::ser::Error::custom)?;
            // Valid JSON by construction; `RawValue` is how serde_json writes it verbatim.
            let raw: &RawValue = serde_json::from_str(&body).map_err(serde::ser::Error::custom)?;
            raw.serialize(s)
        } else {
            let bytes = self.stored_bytes().map_err(serde::ser::Error::custom)?;
            s.serialize_bytes(&bytes)
        }
    }
}

impl<'de, K> Deserialize<'de> for Lazy<K> {
    /// From JSON: the object itself, its metadata parsed. From a binary format (which wrote
    /// the body's bytes, see `Serialize`): the body, its metadata parsed when first read —
    /// these are stored bytes, as compact storage keeps them, which were checked when they
    /// arrived. (The lister-watchers hand the bytes of each object off the wire straight to
    /// this impl; those are parsed at once.)
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        if d.is_human_readable() {
            let raw: Box<str> = Box::<RawValue>::deserialize(d)?.into();
            // Checked by `RawValue`; an array or a string fails the metadata parse.
            return Self::parsed(Body::Json(raw)).map_err(de::Error::custom);
        }
        d.deserialize_newtype_struct(LAZY, BinaryBody(PhantomData))
    }
}

/// A body in a binary format: a binary format (the storage's) calls `visit_newtype_struct`
/// and then hands over the bytes; the decoders (`codec::json`, `codec::protobuf`) hand over
/// the bytes at once.
struct BinaryBody<K>(PhantomData<fn() -> K>);

impl<'de, K> Visitor<'de> for BinaryBody<K> {
    type Value = Lazy<K>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the bytes of a JSON or enveloped protobuf object")
    }
    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<Lazy<K>, D::Error> {
        Lazy::from_stored_bytes(d.deserialize_bytes(BodyBytes)?).map_err(de::Error::custom)
    }
    /// From [`deferred`] only: the stored body it put in the slot.
    fn visit_unit<E: de::Error>(self) -> Result<Lazy<K>, E> {
        match HANDOFF.with(|slot| slot.borrow_mut().take()) {
            Some(stored) => Ok(Lazy::from_stored(stored)),
            None => Err(E::invalid_type(de::Unexpected::Unit, &self)),
        }
    }
    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Lazy<K>, E> {
        Lazy::from_bytes(v.to_vec()).map_err(E::custom)
    }
    fn visit_byte_buf<E: de::Error>(self, v: Vec<u8>) -> Result<Lazy<K>, E> {
        Lazy::from_bytes(v).map_err(E::custom)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Lazy<K>, E> {
        Body::of_text(v.to_owned())
            .and_then(Lazy::parsed)
            .map_err(E::custom)
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Lazy<K>, E> {
        Body::of_text(v).and_then(Lazy::parsed).map_err(E::custom)
    }
}

/// Reads a body stored as bytes (or a string) by a binary format.
struct BodyBytes;

impl Visitor<'_> for BodyBytes {
    type Value = Vec<u8>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the bytes of a JSON or enveloped protobuf object")
    }
    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Vec<u8>, E> {
        Ok(v.to_vec())
    }
    fn visit_byte_buf<E: de::Error>(self, v: Vec<u8>) -> Result<Vec<u8>, E> {
        Ok(v)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Vec<u8>, E> {
        Ok(v.as_bytes().to_vec())
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Vec<u8>, E> {
        Ok(v.into_bytes())
    }
}

#[cfg(test)]
mod tests;
