//! Writes with Kubernetes protobuf request bodies for built-in kinds, as client-go sends them.
//!
//! [`create`] and [`replace`] do what `kube::Api::create` and `Api::replace` do, but the body
//! of a built-in kind (one with a protobuf form, see [`kinformer_protobuf::has_schema`]) is
//! sent as `application/vnd.kubernetes.protobuf`; custom resources, and builds without the
//! `protobuf` feature, send JSON. The response is asked for in JSON. A server that answers
//! `415 Unsupported Media Type` to a protobuf body is sent the same write again in JSON; with
//! [`create_with`] and [`replace_with`] the refusal is remembered in the client's
//! [`ServerCapabilities`] (per API group and version), so later writes go in JSON at once and
//! the retry happens once per client. Patches stay JSON: Kubernetes has no protobuf patch.
//!
//! ```no_run
//! # async fn f(client: kube::Client) -> Result<(), kube::Error> {
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kube::Api;
//! use kube::api::PostParams;
//!
//! let api: Api<ConfigMap> = Api::namespaced(client, "default");
//! let mut cm = ConfigMap::default();
//! cm.metadata.name = Some("settings".into());
//! let created = kinformer::kube::create(&api, &PostParams::default(), &cm).await?;
//! # Ok(()) }
//! ```

use std::fmt::Debug;

use ::kube::api::PostParams;
use ::kube::{Api, Error};
use http::HeaderValue;
use http::header::{ACCEPT, CONTENT_TYPE};
use kube_core::{Request, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::ServerCapabilities;

/// A request body and its media type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WriteBody {
    pub(crate) bytes: Vec<u8>,
    /// True for Kubernetes protobuf, false for JSON.
    pub(crate) protobuf: bool,
}

/// The body of a write of `obj`, an object of `api_version` and `kind`: protobuf when the kind
/// has a protobuf form and `obj` fits it, JSON otherwise.
pub(crate) fn body_of<T: Serialize + ?Sized>(
    obj: &T,
    api_version: &str,
    kind: &str,
) -> Result<WriteBody, Error> {
    #[cfg(feature = "protobuf")]
    if kinformer_protobuf::has_schema(api_version, kind) {
        match kinformer_protobuf::to_vec(obj, api_version, kind) {
            Ok(bytes) => {
                return Ok(WriteBody {
                    bytes,
                    protobuf: true,
                });
            }
            Err(e) => tracing::debug!("{api_version} {kind}: sending JSON, not protobuf: {e}"),
        }
    }
    #[cfg(not(feature = "protobuf"))]
    let _ = (api_version, kind);
    json_body(obj)
}

fn json_body<T: Serialize + ?Sized>(obj: &T) -> Result<WriteBody, Error> {
    Ok(WriteBody {
        bytes: serde_json::to_vec(obj).map_err(Error::SerdeError)?,
        protobuf: false,
    })
}

/// Sets the body's media type on a request kube built for JSON, and asks for JSON back.
pub(crate) fn typed(mut req: http::Request<Vec<u8>>, protobuf: bool) -> http::Request<Vec<u8>> {
    if protobuf {
        req.headers_mut().insert(
            CONTENT_TYPE,
            HeaderValue::from_static(kinformer_protobuf_content_type()),
        );
    }
    req.headers_mut()
        .insert(ACCEPT, HeaderValue::from_static("application/json"));
    req
}

#[cfg(feature = "protobuf")]
fn kinformer_protobuf_content_type() -> &'static str {
    kinformer_protobuf::CONTENT_TYPE
}

#[cfg(not(feature = "protobuf"))]
fn kinformer_protobuf_content_type() -> &'static str {
    "application/json"
}

/// Sends a write of `obj` to `api`'s resource URL, built by `build` from a request there and
/// a body; a 415 to a protobuf body is remembered in `capabilities` and the write sent again
/// in JSON.
async fn send<K, F>(
    api: &Api<K>,
    capabilities: &ServerCapabilities,
    obj: &K,
    build: F,
) -> Result<K, Error>
where
    K: Resource<DynamicType = ()> + Serialize + DeserializeOwned + Clone + Debug,
    F: Fn(&Request, Vec<u8>) -> Result<http::Request<Vec<u8>>, kube_core::request::Error>,
{
    let url = api.resource_url();
    let request = Request::new(url);
    let body = if capabilities.protobuf_bodies(url) {
        body_of(obj, &K::api_version(&()), &K::kind(&()))?
    } else {
        json_body(obj)?
    };
    let client = api.clone().into_client();
    let protobuf = body.protobuf;
    let req = typed(
        build(&request, body.bytes).map_err(Error::BuildRequest)?,
        protobuf,
    );
    match client.request::<K>(req).await {
        Err(Error::Api(status)) if protobuf && status.code == 415 => {
            if capabilities.set_no_protobuf_bodies(url) {
                tracing::info!(
                    "the server refused a protobuf {} body; writes to {url} go in JSON from now on",
                    K::kind(&())
                );
            }
            let body = json_body(obj)?;
            let req = typed(
                build(&request, body.bytes).map_err(Error::BuildRequest)?,
                false,
            );
            client.request::<K>(req).await
        }
        other => other,
    }
}

/// Creates `obj` (POST), as `Api::create` does, with a protobuf body for a built-in kind.
/// Learns nothing across calls: [`create_with`] remembers a server's refusal of protobuf
/// bodies.
///
/// # Errors
/// As `Api::create`.
pub async fn create<K>(api: &Api<K>, pp: &PostParams, obj: &K) -> Result<K, Error>
where
    K: Resource<DynamicType = ()> + Serialize + DeserializeOwned + Clone + Debug,
{
    create_with(api, &ServerCapabilities::new(), pp, obj).await
}

/// [`create`], consulting and updating the client's `capabilities`: after one `415` to a
/// protobuf body in an API group and version, writes there go in JSON at once.
///
/// # Errors
/// As `Api::create`.
pub async fn create_with<K>(
    api: &Api<K>,
    capabilities: &ServerCapabilities,
    pp: &PostParams,
    obj: &K,
) -> Result<K, Error>
where
    K: Resource<DynamicType = ()> + Serialize + DeserializeOwned + Clone + Debug,
{
    send(api, capabilities, obj, |r, body| r.create(pp, body)).await
}

/// Replaces object `name` with `obj` (PUT), as `Api::replace` does, with a protobuf body for
/// a built-in kind. Learns nothing across calls: see [`replace_with`].
///
/// # Errors
/// As `Api::replace`.
pub async fn replace<K>(api: &Api<K>, name: &str, pp: &PostParams, obj: &K) -> Result<K, Error>
where
    K: Resource<DynamicType = ()> + Serialize + DeserializeOwned + Clone + Debug,
{
    replace_with(api, &ServerCapabilities::new(), name, pp, obj).await
}

/// [`replace`], consulting and updating the client's `capabilities` as [`create_with`] does.
///
/// # Errors
/// As `Api::replace`.
pub async fn replace_with<K>(
    api: &Api<K>,
    capabilities: &ServerCapabilities,
    name: &str,
    pp: &PostParams,
    obj: &K,
) -> Result<K, Error>
where
    K: Resource<DynamicType = ()> + Serialize + DeserializeOwned + Clone + Debug,
{
    send(api, capabilities, obj, |r, body| r.replace(name, pp, body)).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(feature = "protobuf")]
    #[test]
    fn built_in_kinds_get_a_protobuf_body_custom_resources_json() {
        use k8s_openapi::api::core::v1::ConfigMap;

        let mut cm = ConfigMap::default();
        cm.metadata.name = Some("settings".into());
        cm.data = Some([("mode".to_owned(), "fast".to_owned())].into());
        let body = body_of(&cm, "v1", "ConfigMap").unwrap();
        assert!(body.protobuf);
        let back: ConfigMap = kinformer_protobuf::from_slice(&body.bytes).unwrap();
        assert_eq!(back, cm);

        let widget = serde_json::json!({"apiVersion": "example.com/v1", "kind": "Widget",
                                        "metadata": {"name": "w"}});
        let body = body_of(&widget, "example.com/v1", "Widget").unwrap();
        assert!(!body.protobuf);
        assert_eq!(
            serde_json::from_slice::<serde_json::Value>(&body.bytes).unwrap(),
            widget
        );
        // A value that does not fit the kind's message goes in JSON.
        let odd = serde_json::json!({"metadata": {"name": "x"}, "notAField": 1});
        assert!(!body_of(&odd, "v1", "ConfigMap").unwrap().protobuf);
    }

    #[test]
    fn the_request_says_its_body_type_and_asks_for_json() {
        let req = Request::new("/api/v1/namespaces/ns/configmaps")
            .create(&PostParams::default(), b"x".to_vec())
            .unwrap();
        let pb = typed(req.clone(), true);
        assert_eq!(
            pb.headers()[CONTENT_TYPE],
            kinformer_protobuf_content_type()
        );
        assert_eq!(pb.headers()[ACCEPT], "application/json");
        let json = typed(req, false);
        assert_eq!(json.headers()[CONTENT_TYPE], "application/json");
    }
}
