//! A fake `coordination.k8s.io/v1` Lease endpoint behind a `kube::Client`, for tests of
//! [`LeaseLock`](crate::leaderelection::LeaseLock) without a network: GET, POST and PUT of one namespace's
//! leases, with resource versions and 404/409 answers like the API server's.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::Arc;

use http::{Method, Request, Response, StatusCode};
use kube::client::Body;
use parking_lot::Mutex;
use serde_json::{Value, json};

const BASE: &str = "/apis/coordination.k8s.io/v1/namespaces/";

#[derive(Clone, Debug, Default)]
pub(crate) struct FakeLeaseApi {
    state: Arc<Mutex<State>>,
}

#[derive(Debug, Default)]
struct State {
    /// Stored leases by `namespace/name`.
    leases: BTreeMap<String, Value>,
    last_version: u64,
    /// Status codes to answer the next requests with, in order.
    failures: Vec<u16>,
    requests: usize,
    protobuf_bodies: usize,
}

impl FakeLeaseApi {
    pub(crate) fn client(&self) -> kube::Client {
        let api = self.clone();
        let service = tower::service_fn(move |request: Request<Body>| {
            let api = api.clone();
            async move { Ok::<_, Infallible>(api.handle(request).await) }
        });
        kube::Client::new(service, "default")
    }

    /// Edits a stored lease out of band (as another client would), bumping its version.
    pub(crate) fn edit(&self, key: &str, edit: impl FnOnce(&mut Value)) {
        let mut state = self.state.lock();
        state.last_version += 1;
        let version = state.last_version.to_string();
        if let Some(lease) = state.leases.get_mut(key) {
            edit(lease);
            lease["metadata"]["resourceVersion"] = json!(version);
        }
    }

    pub(crate) fn get(&self, key: &str) -> Option<Value> {
        self.state.lock().leases.get(key).cloned()
    }

    /// Answers the next request with `code` instead of serving it.
    pub(crate) fn fail_next(&self, code: u16) {
        self.state.lock().failures.push(code);
    }

    pub(crate) fn requests(&self) -> usize {
        self.state.lock().requests
    }

    /// How many request bodies came in protobuf.
    pub(crate) fn protobuf_bodies(&self) -> usize {
        self.state.lock().protobuf_bodies
    }

    async fn handle(&self, request: Request<Body>) -> Response<Body> {
        let (parts, body) = request.into_parts();
        let Ok(bytes) = body.collect_bytes().await else {
            return status(400, "BadRequest", "unreadable body");
        };
        let mut state = self.state.lock();
        state.requests += 1;
        if !state.failures.is_empty() {
            let code = state.failures.remove(0);
            return status(code, "InternalError", "injected failure");
        }
        let Some(rest) = parts.uri.path().strip_prefix(BASE) else {
            return status(404, "NotFound", "unknown path");
        };
        let segments: Vec<&str> = rest.split('/').collect();
        // A body in JSON, or in Kubernetes protobuf (as `kube::create` and `kube::replace`
        // send a lease).
        let protobuf = parts
            .headers
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|ct| ct.starts_with("application/vnd.kubernetes.protobuf"));
        state.protobuf_bodies += usize::from(protobuf);
        let body: Option<Value> = if protobuf {
            decode_protobuf(&bytes)
        } else {
            serde_json::from_slice(&bytes).ok()
        };
        match (&parts.method, &segments[..]) {
            (&Method::GET, &[namespace, "leases", name]) => {
                match state.leases.get(&format!("{namespace}/{name}")) {
                    Some(lease) => respond(StatusCode::OK, lease),
                    None => status(404, "NotFound", "lease not found"),
                }
            }
            (&Method::POST, &[namespace, "leases"]) => {
                let Some(mut lease) = body else {
                    return status(400, "BadRequest", "no lease in the body");
                };
                let name = lease["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                let key = format!("{namespace}/{name}");
                if state.leases.contains_key(&key) {
                    return status(409, "AlreadyExists", "lease already exists");
                }
                state.last_version += 1;
                lease["metadata"]["resourceVersion"] = json!(state.last_version.to_string());
                lease["metadata"]["namespace"] = json!(namespace);
                state.leases.insert(key, lease.clone());
                respond(StatusCode::CREATED, &lease)
            }
            (&Method::PUT, &[namespace, "leases", name]) => {
                let Some(mut lease) = body else {
                    return status(400, "BadRequest", "no lease in the body");
                };
                let key = format!("{namespace}/{name}");
                let Some(stored) = state.leases.get(&key) else {
                    return status(404, "NotFound", "lease not found");
                };
                let expected = &lease["metadata"]["resourceVersion"];
                if expected != &stored["metadata"]["resourceVersion"] {
                    return status(409, "Conflict", "the object has been modified");
                }
                state.last_version += 1;
                lease["metadata"]["resourceVersion"] = json!(state.last_version.to_string());
                state.leases.insert(key, lease.clone());
                respond(StatusCode::OK, &lease)
            }
            _ => status(405, "MethodNotAllowed", "unsupported"),
        }
    }
}

fn respond(code: StatusCode, value: &Value) -> Response<Body> {
    let mut response = Response::new(Body::from(value.to_string().into_bytes()));
    *response.status_mut() = code;
    response
}

fn status(code: u16, reason: &str, message: &str) -> Response<Body> {
    let body = json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": reason, "code": code,
    });
    respond(
        StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        &body,
    )
}

#[cfg(feature = "protobuf")]
fn decode_protobuf(bytes: &[u8]) -> Option<Value> {
    kinformer_protobuf::from_slice(bytes).ok()
}

#[cfg(not(feature = "protobuf"))]
fn decode_protobuf(_: &[u8]) -> Option<Value> {
    None
}
