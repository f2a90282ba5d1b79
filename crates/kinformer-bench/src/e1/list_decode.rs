//! The list floors: F0 (every page fetched, nothing decoded), L0 / L0-fast (the served list
//! decoded with serde_json / sonic-rs) and L0P / L0P-1 (decoded from protobuf).

use std::sync::Arc;
use std::time::Instant;

use k8s_openapi::api::core::v1::Pod;

use super::{Encode, PODS, ServerProcess};
use crate::group::Metrics;
use crate::proc_status::peak_rss_mib;

/// The items of a pod list, nothing else.
#[derive(serde::Deserialize)]
struct PodItems {
    items: Vec<Pod>,
}

/// F0: every page (500 pods) of the list fetched, nothing decoded but the continue token.
pub(super) async fn f0() -> Result<Metrics, String> {
    let server = ServerProcess::spawn(PODS, false, Encode::Json)?;
    let client = server.client()?;
    let start = Instant::now();
    let mut token: Option<String> = None;
    let (mut bytes, mut pages) = (0usize, 0usize);
    loop {
        let mut params = kube::api::ListParams::default().limit(500);
        if let Some(t) = &token {
            params = params.continue_token(t);
        }
        let request = kube::core::Request::new("/api/v1/pods")
            .list(&params)
            .map_err(|e| e.to_string())?;
        let body = client
            .request_text(request)
            .await
            .map_err(|e| format!("listing pods: {e}"))?;
        bytes += body.len();
        pages += 1;
        token = continue_token(&body);
        if token.is_none() {
            break;
        }
    }
    let ms = start.elapsed().as_secs_f64() * 1e3;
    if pages != PODS.div_ceil(500) {
        return Err(format!(
            "{pages} pages fetched, expected {}",
            PODS.div_ceil(500)
        ));
    }
    Ok(vec![
        ("fetch_ms".into(), ms),
        ("mb_per_s".into(), bytes as f64 / 1e6 / (ms / 1e3)),
    ])
}

/// The `metadata.continue` of a list body, found without parsing the items: the token is the
/// first `"continue":"…"` (the list's metadata precedes its items; tokens are base64).
fn continue_token(body: &str) -> Option<String> {
    const KEY: &str = "\"continue\":\"";
    let items = body.find("\"items\"").unwrap_or(body.len());
    let at = body[..items].find(KEY)? + KEY.len();
    let len = body[at..].find('"')?;
    (len > 0).then(|| body[at..at + len].to_string())
}

/// The whole pod list as a server sends it in JSON (one request, no `limit`): what L0 and the
/// JSON decoding benchmarks decode.
///
/// # Errors
/// The request failed (as text).
pub async fn pod_list_json(client: &kube::Client) -> Result<Vec<u8>, String> {
    let request = http::Request::get("/api/v1/pods")
        .body(Vec::new())
        .map_err(|e| e.to_string())?;
    let body = client
        .request_text(request)
        .await
        .map_err(|e| format!("listing pods: {e}"))?;
    Ok(body.into_bytes())
}

/// The decoder an L0 run decodes the list with.
#[derive(Debug, Clone, Copy)]
pub(super) enum JsonDecoder {
    /// serde_json (L0): what a user of serde gets by default.
    SerdeJson,
    /// sonic-rs (L0-fast): the decoder of kinformer's `fast-json` feature.
    SonicRs,
}

/// L0 and L0-fast: the served list (fetched whole, outside the timing) decoded into pods.
pub(super) async fn l0(decoder: JsonDecoder) -> Result<Metrics, String> {
    let server = ServerProcess::spawn(PODS, false, Encode::Json)?;
    let body = pod_list_json(&server.client()?).await?;
    drop(server);
    let start = Instant::now();
    let list: PodItems = match decoder {
        JsonDecoder::SerdeJson => serde_json::from_slice(&body).map_err(|e| e.to_string()),
        JsonDecoder::SonicRs => sonic_rs::from_slice(&body).map_err(|e| e.to_string()),
    }
    .map_err(|e| format!("decoding: {e}"))?;
    decoded(list.items.len(), start, body.len())
}

/// An L0 row's metrics, taken while the `pods` decoded since `start` from `body_len` bytes
/// are still held (for the peak RSS).
fn decoded(pods: usize, start: Instant, body_len: usize) -> Result<Metrics, String> {
    let secs = start.elapsed().as_secs_f64();
    if pods != PODS {
        return Err(format!("{pods} pods decoded, expected {PODS}"));
    }
    Ok(vec![
        ("decode_ms".into(), secs * 1e3),
        ("mb_per_s".into(), body_len as f64 / 1e6 / secs),
        ("peak_rss_mib".into(), peak_rss_mib()?),
    ])
}

/// How L0P decodes the list.
#[derive(Debug, Clone, Copy)]
pub(super) enum ProtobufDecode {
    /// `kinformer::kube::decode_protobuf_list`, as the kube source decodes a list body (a body
    /// this large on up to 4 threads).
    Library,
    /// Item by item on this thread.
    OneThread,
}

pub(super) async fn l0p(decode: ProtobufDecode) -> Result<Metrics, String> {
    let server = ServerProcess::spawn(PODS, false, Encode::JsonAndProtobuf)?;
    let client = server.client()?;
    let request = http::Request::get("/api/v1/pods")
        .header(http::header::ACCEPT, kinformer_protobuf::CONTENT_TYPE)
        .body(kube::client::Body::empty())
        .map_err(|e| e.to_string())?;
    let response = client
        .send(request)
        .await
        .map_err(|e| format!("listing pods: {e}"))?;
    let content_type = response
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    if response.status() != http::StatusCode::OK || content_type != kinformer_protobuf::CONTENT_TYPE
    {
        return Err(format!(
            "listing pods: {} {content_type:?}",
            response.status()
        ));
    }
    let body = response
        .into_body()
        .collect_bytes()
        .await
        .map_err(|e| format!("listing pods: {e}"))?;
    drop(server);
    // The protobuf schema is built once per process, at its first use (a few ms): not part of
    // decoding a list.
    if !kinformer_protobuf::has_schema("v1", "Pod") {
        return Err("no protobuf schema for pods".into());
    }
    let start = Instant::now();
    let pods: Vec<Arc<Pod>> = match decode {
        ProtobufDecode::Library => {
            let list = kinformer::kube::decode_protobuf_list::<Pod>(&body)
                .map_err(|e| format!("decoding: {e}"))?;
            if let Some(e) = list.undecodable.first() {
                return Err(format!("decoding: {e}"));
            }
            list.items
        }
        ProtobufDecode::OneThread => {
            let list =
                kinformer_protobuf::List::parse(&body).map_err(|e| format!("decoding: {e}"))?;
            // A protobuf list says how many items it holds: the pods' vector is allocated once.
            let mut pods = Vec::with_capacity(list.len());
            for item in list.items() {
                pods.push(Arc::new(
                    item.decode_owned::<Pod>()
                        .map_err(|e| format!("decoding: {e}"))?,
                ));
            }
            pods
        }
    };
    decoded(pods.len(), start, body.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_continue_token_is_read_from_the_list_metadata_only() {
        let body = r#"{"kind":"PodList","metadata":{"resourceVersion":"5","continue":"abc=="},"items":[{"metadata":{"continue":"no"}}]}"#;
        assert_eq!(continue_token(body).as_deref(), Some("abc=="));
        let last = r#"{"kind":"PodList","metadata":{"resourceVersion":"5"},"items":[{"metadata":{"continue":"no"}}]}"#;
        assert_eq!(continue_token(last), None);
        assert_eq!(
            continue_token(r#"{"metadata":{"continue":""},"items":[]}"#),
            None
        );
    }
}
