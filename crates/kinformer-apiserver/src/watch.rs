//! WATCH: a chunked stream of JSON events, one per line, or (when the client asks for
//! protobuf) of length-prefixed protobuf `WatchEvent` frames.
//!
//! Properties:
//! - Events after the start revision arrive in revision order, then live; the history cursor
//!   advances over every revision, so a BOOKMARK carries the revision up to which the watcher
//!   has seen everything.
//! - Selectors apply to both sides of a change: an object entering the selection is ADDED, one
//!   leaving it is DELETED.
//! - A start revision that is compacted (or becomes compacted while the watcher lags) yields one
//!   ERROR event with a 410 `Status` (reason Expired) and the stream ends.
//! - `timeoutSeconds` ends the stream cleanly; so does a simulated restart.

use std::sync::Arc;
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use serde_json::json;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use crate::faults::Fault;
use crate::list::selects;
use crate::object::StoredObject;
use crate::resource::ResourceDef;
use crate::selector::{FieldSelector, LabelSelector};
use crate::status::ApiError;
use crate::store::{EventType, Store};
use crate::table::{IncludeObject, object_table};
pub use crate::watch_chunks::{WatchChunkCounts, WatchChunks};

/// Events fetched from the history per lock.
const BATCH: usize = 512;

/// Where a watch starts.
#[derive(Debug, Clone)]
pub enum WatchStart {
    /// After this revision.
    After(u64),
    /// Synthetic ADDED events for the current objects, then live; with `end_bookmark`, a
    /// BOOKMARK annotated `k8s.io/initial-events-end` after them.
    Initial {
        /// Send the initial-events-end bookmark.
        end_bookmark: bool,
    },
}

/// Everything a watch stream needs.
#[derive(Debug)]
pub struct WatchRequest {
    /// The store.
    pub store: Store,
    /// Resource index.
    pub ridx: usize,
    /// Resource definition.
    pub def: ResourceDef,
    /// Namespace filter.
    pub namespace: Option<String>,
    /// Label selector.
    pub label: LabelSelector,
    /// Field selector.
    pub field: FieldSelector,
    /// Start point.
    pub start: WatchStart,
    /// Periodic bookmarks.
    pub bookmarks: Option<Duration>,
    /// End of the stream.
    pub timeout: Duration,
    /// Faults drawn for this request.
    pub faults: Vec<Fault>,
    /// Ends the stream when it changes; subscribed when the request arrived, so a close made
    /// between the request and the stream's start still ends it.
    pub closes: watch::Receiver<u64>,
    /// Protobuf frames instead of JSON lines.
    pub protobuf: bool,
    /// Each event's object as a one-row `Table` (`kubectl get -w`), JSON only.
    pub table: Option<IncludeObject>,
    /// Where the stream counts its chunks.
    pub chunks: Arc<WatchChunks>,
}

/// An `{"type":T,"object":O}` line.
pub fn event_line(buf: &mut BytesMut, kind: &str, object: &[u8]) {
    buf.put_slice(b"{\"type\":\"");
    buf.put_slice(kind.as_bytes());
    buf.put_slice(b"\",\"object\":");
    buf.put_slice(object);
    buf.put_slice(b"}\n");
}

/// The ERROR line for an API error.
pub fn error_line(e: &ApiError) -> Bytes {
    let mut b = BytesMut::new();
    event_line(&mut b, "ERROR", e.to_status().to_string().as_bytes());
    b.freeze()
}

/// The ERROR event for an API error, as a JSON line or a protobuf frame.
pub fn error_event(e: &ApiError, protobuf: bool) -> Bytes {
    if !protobuf {
        return error_line(e);
    }
    match kinformer_protobuf::json_to_vec(&e.to_status()) {
        Ok(status) => Bytes::from(kinformer_protobuf::WatchEvent::encode_frame(
            "ERROR", &status,
        )),
        Err(err) => {
            tracing::warn!("cannot encode an error status in protobuf: {err}");
            Bytes::new()
        }
    }
}

fn bookmark_object(def: &ResourceDef, rev: u64, initial_end: bool) -> serde_json::Value {
    let mut meta = json!({"resourceVersion": rev.to_string()});
    if initial_end {
        meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
    }
    json!({"kind": def.kind, "apiVersion": def.api_version(), "metadata": meta})
}

fn bookmark_line(buf: &mut BytesMut, def: &ResourceDef, rev: u64, initial_end: bool) {
    let obj = bookmark_object(def, rev, initial_end);
    event_line(buf, "BOOKMARK", obj.to_string().as_bytes());
}

/// The resource's `apiVersion` and `kind`, for protobuf frames.
#[derive(Debug, Clone)]
struct Protobuf {
    api_version: String,
    kind: String,
}

impl Protobuf {
    /// The frame for an event about a stored object (its protobuf form, encoded once).
    fn frame(&self, kind: &str, object: &StoredObject) -> Result<Vec<u8>, ApiError> {
        let raw = object
            .protobuf(&self.api_version, &self.kind)
            .map_err(|e| {
                ApiError::internal(format!(
                    "{} {} has no protobuf form: {e}",
                    self.api_version, self.kind
                ))
            })?;
        let encoded = kinformer_protobuf::Envelope::encode(&self.api_version, &self.kind, raw);
        Ok(kinformer_protobuf::WatchEvent::encode_frame(kind, &encoded))
    }
}

struct Sink {
    tx: mpsc::Sender<Bytes>,
    buf: BytesMut,
    protobuf: Option<Protobuf>,
    table: Option<(ResourceDef, IncludeObject)>,
    sent: usize,
    /// `sent` at the last flush.
    flushed: usize,
    chunks: Arc<WatchChunks>,
    close_after: Option<usize>,
    truncate_after: Option<usize>,
    garble_after: Option<usize>,
    garble_event_after: Option<usize>,
    unknown_type_after: Option<usize>,
}

impl Sink {
    /// Appends an event; returns false when a fault ends the stream here.
    fn push(&mut self, kind: &str, obj: &StoredObject) -> bool {
        if self.close_after == Some(self.sent) {
            return false;
        }
        let mut event = BytesMut::new();
        match &self.protobuf {
            None => match &self.table {
                Some((def, include)) => match object_table(def, obj, *include) {
                    Ok(t) => event_line(&mut event, kind, &t),
                    Err(e) => {
                        tracing::warn!("ending a table watch: {}", e.message);
                        self.buf.put_slice(&error_event(&e, false));
                        return false;
                    }
                },
                None => event_line(&mut event, kind, &obj.bytes),
            },
            Some(p) => match p.frame(kind, obj) {
                Ok(frame) => event.put_slice(&frame),
                Err(e) => {
                    tracing::warn!("ending a protobuf watch: {}", e.message);
                    self.buf.put_slice(&error_event(&e, true));
                    return false;
                }
            },
        }
        if self.truncate_after == Some(self.sent) {
            self.buf.put_slice(&event[..event.len() / 2]);
            return false;
        }
        if self.garble_after == Some(self.sent) {
            if self.protobuf.is_some() {
                // A frame whose payload is not a watch event.
                self.buf.put_slice(&[0, 0, 0, 4, 0xff, 0xff, 0xff, 0xff]);
            } else {
                self.buf
                    .put_slice(b"{\"type\":\"MODIFIED\",\"object\":{\"kind\":\x01garbled\n");
            }
            return false;
        }
        if self
            .garble_event_after
            .take_if(|n| *n == self.sent)
            .is_some()
        {
            // The event is lost on the wire; the stream goes on.
            if self.protobuf.is_some() {
                self.buf.put_slice(&[0, 0, 0, 4, 0xff, 0xff, 0xff, 0xff]);
            } else {
                self.buf
                    .put_slice(b"{\"type\":\"MODIFIED\",\"object\":{\x01}}\n");
            }
            self.sent += 1;
            return true;
        }
        if self
            .unknown_type_after
            .take_if(|n| *n == self.sent)
            .is_some()
        {
            match &self.protobuf {
                None => event_line(&mut self.buf, "ADDDED", &obj.bytes),
                Some(p) => match p.frame("ADDDED", obj) {
                    Ok(frame) => self.buf.put_slice(&frame),
                    Err(e) => {
                        tracing::warn!("ending a protobuf watch: {}", e.message);
                        self.buf.put_slice(&error_event(&e, true));
                        return false;
                    }
                },
            }
            self.sent += 1;
            return true;
        }
        self.buf.put_slice(&event);
        self.sent += 1;
        true
    }

    fn bookmark(&mut self, def: &ResourceDef, rev: u64, initial_end: bool) {
        if self.protobuf.is_none() {
            return bookmark_line(&mut self.buf, def, rev, initial_end);
        }
        let obj = bookmark_object(def, rev, initial_end);
        match kinformer_protobuf::json_to_vec(&obj) {
            Ok(b) => self
                .buf
                .put_slice(&kinformer_protobuf::WatchEvent::encode_frame(
                    "BOOKMARK", &b,
                )),
            Err(e) => tracing::warn!("cannot encode a bookmark in protobuf: {e}"),
        }
    }

    async fn flush(&mut self) -> bool {
        if self.buf.is_empty() {
            return true;
        }
        let b = self.buf.split().freeze();
        self.chunks.record(self.sent - self.flushed);
        self.flushed = self.sent;
        self.tx.send(b).await.is_ok()
    }
}

/// Runs a watch, writing lines to `tx` until the timeout, a fault, a restart or the client
/// going away.
///
/// # Cancel safety
/// Dropping the future ends the stream; nothing else is affected.
pub async fn run(mut req: WatchRequest, tx: mpsc::Sender<Bytes>) {
    // A client's timeout is at most a year (the query clamps it): the deadline cannot overflow.
    let deadline = Instant::now() + req.timeout.min(crate::query::MAX_TIMEOUT);
    let mut sink = Sink {
        tx,
        buf: BytesMut::with_capacity(64 * 1024),
        protobuf: req.protobuf.then(|| Protobuf {
            api_version: req.def.api_version(),
            kind: req.def.kind.clone(),
        }),
        table: req
            .table
            .filter(|_| !req.protobuf)
            .map(|include| (req.def.clone(), include)),
        sent: 0,
        flushed: 0,
        chunks: Arc::clone(&req.chunks),
        close_after: None,
        truncate_after: None,
        garble_after: None,
        garble_event_after: None,
        unknown_type_after: None,
    };
    for f in &req.faults {
        match f {
            Fault::CloseWatch { after_events } => sink.close_after = Some(*after_events),
            Fault::TruncateWatchFrame { after_events } => sink.truncate_after = Some(*after_events),
            Fault::GarbleWatchFrame { after_events } => sink.garble_after = Some(*after_events),
            Fault::GarbleWatchEvent { after_events } => {
                sink.garble_event_after = Some(*after_events);
            }
            Fault::UnknownWatchEventType { after_events } => {
                sink.unknown_type_after = Some(*after_events);
            }
            _ => {}
        }
    }
    let mut rev_rx = req.store.subscribe();
    rev_rx.borrow_and_update();
    let ns = req.namespace.as_deref();
    let mut cursor = match req.start {
        WatchStart::After(r) => r,
        WatchStart::Initial { end_bookmark } => {
            let Ok(page) = req.store.list_page(req.ridx, ns, None, None, 0, |o| {
                selects(&req.label, &req.field, o)
            }) else {
                return;
            };
            for o in &page.items {
                if !sink.push("ADDED", o) {
                    sink.flush().await;
                    return;
                }
                if sink.buf.len() > 256 * 1024 && !sink.flush().await {
                    return;
                }
            }
            if end_bookmark {
                sink.bookmark(&req.def, page.revision, true);
            }
            page.revision
        }
    };
    let mut bookmark_at = req.bookmarks.map(|d| Instant::now() + d);
    loop {
        // Drain the history after the cursor.
        loop {
            rev_rx.borrow_and_update();
            let events = match req.store.events_after(cursor, BATCH) {
                Ok(e) => e,
                Err(e) => {
                    sink.buf.put_slice(&error_event(&e, req.protobuf));
                    sink.flush().await;
                    return;
                }
            };
            if events.is_empty() {
                break;
            }
            for e in &events {
                cursor = e.revision;
                if e.resource != req.ridx || ns.is_some_and(|n| n != e.object.namespace) {
                    continue;
                }
                let now_in = selects(&req.label, &req.field, &e.object);
                let was_in = e
                    .prev
                    .as_ref()
                    .is_some_and(|p| selects(&req.label, &req.field, p));
                let kind = match (e.kind, was_in, now_in) {
                    (EventType::Deleted, _, true) => "DELETED",
                    (EventType::Deleted, _, false) => continue,
                    (_, false, true) => "ADDED",
                    (_, true, true) => "MODIFIED",
                    (_, true, false) => "DELETED",
                    (_, false, false) => continue,
                };
                if !sink.push(kind, &e.object) {
                    sink.flush().await;
                    return;
                }
            }
            if !sink.flush().await {
                return;
            }
        }
        if !sink.flush().await {
            return;
        }
        let bookmark_sleep = async {
            match bookmark_at {
                Some(t) => tokio::time::sleep_until(t).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            r = rev_rx.changed() => if r.is_err() { return },
            _ = tokio::time::sleep_until(deadline) => return,
            _ = req.closes.changed() => return,
            _ = sink.tx.closed() => return,
            _ = bookmark_sleep => {
                sink.bookmark(&req.def, cursor, false);
                bookmark_at = req.bookmarks.map(|d| Instant::now() + d);
            }
        }
    }
}
