//! Shared helpers of the HTTP end-to-end tests: a handler that checks what it is told against
//! what it saw before, and convergence checks against the embedded API server.

#![allow(dead_code)] // each test binary uses a different subset

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use kinformer::cache::{DeletedObject, ReadOnlyIndexer, ResourceEventHandler, SharedIndexInformer};
use kinformer::wait::{BackoffManager, ExponentialBackoffManager};
use kinformer_apiserver::ApiServer;
use kube_core::Resource;
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

// Keys, versions and their differences, as the soak driver reads them.
pub use kinformer_bench::soak::driver::{
    KeyVersions, cache_versions as cache_pods, describe_diff, key_of, server_versions,
    version_of as rv_of,
};

/// One notification as a handler saw it, per key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seen {
    /// `on_add` with this version.
    Add(u64),
    /// `on_update` from, to.
    Update(u64, u64),
    /// `on_delete` with the server's final state at this version.
    Delete(u64),
    /// `on_delete` with a tombstone holding the last known version.
    Tombstone(u64),
}

/// What the tracking handler has recorded.
#[derive(Debug, Default)]
pub struct TrackState {
    /// The handler's view: every key added and not deleted since, with its newest version.
    pub view: KeyVersions,
    /// Every notification, per key, in delivery order.
    pub log: BTreeMap<String, Vec<Seen>>,
    /// Contract violations noticed while receiving (add for a present key, update that does
    /// not continue from the last version, delete of an unknown key, ...).
    pub violations: Vec<String>,
    /// Counts: adds, updates, live deletes, tombstones.
    pub adds: u64,
    /// Updates received.
    pub updates: u64,
    /// Deletes with the final state.
    pub deletes: u64,
    /// Deletes inferred from a relist.
    pub tombstones: u64,
    /// Adds flagged as part of the initial list.
    pub initial_adds: u64,
}

/// A handler that keeps a per-key view and checks each notification against it.
#[derive(Debug, Default)]
pub struct Tracker {
    /// The recorded state.
    pub state: Mutex<TrackState>,
    /// Signalled after every notification.
    pub changed: Arc<Notify>,
    /// Keep no per-key log (a long run's log would grow with every notification).
    pub no_log: bool,
}

/// Reads metadata only, so it serves typed and lazy (`Lazy<Pod>`) informers alike.
impl<K: Resource + Send + Sync + 'static> ResourceEventHandler<K> for Tracker {
    fn on_add(&self, obj: &Arc<K>, is_in_initial_list: bool) {
        let (key, rv) = (key_of(obj.as_ref()), rv_of(obj.as_ref()));
        let mut st = self.state.lock();
        st.adds += 1;
        if is_in_initial_list {
            st.initial_adds += 1;
        }
        if let Some(prev) = st.view.insert(key.clone(), rv) {
            st.violations
                .push(format!("add of {key}@{rv} while the handler holds @{prev}"));
        }
        if !self.no_log {
            st.log.entry(key).or_default().push(Seen::Add(rv));
        }
        drop(st);
        self.changed.notify_one();
    }

    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        let (key, from, to) = (
            key_of(new.as_ref()),
            rv_of(old.as_ref()),
            rv_of(new.as_ref()),
        );
        let mut st = self.state.lock();
        st.updates += 1;
        match st.view.insert(key.clone(), to) {
            None => st
                .violations
                .push(format!("update of unknown {key} {from}->{to}")),
            Some(prev) if prev != from => st.violations.push(format!(
                "update of {key} from @{from}, but the handler last saw @{prev}"
            )),
            Some(_) => {}
        }
        if to <= from {
            st.violations
                .push(format!("update of {key} does not advance: {from}->{to}"));
        }
        if !self.no_log {
            st.log.entry(key).or_default().push(Seen::Update(from, to));
        }
        drop(st);
        self.changed.notify_one();
    }

    fn on_delete(&self, obj: &DeletedObject<K>) {
        let (pod, tombstone) = match obj {
            DeletedObject::Live(p) => (Arc::clone(p), false),
            DeletedObject::Tombstone(t) => (Arc::clone(&t.obj), true),
        };
        let (key, rv) = (key_of(pod.as_ref()), rv_of(pod.as_ref()));
        let mut st = self.state.lock();
        match st.view.remove(&key) {
            None => st.violations.push(format!("delete of unknown {key}@{rv}")),
            Some(prev) if tombstone && prev != rv => st.violations.push(format!(
                "tombstone of {key} carries @{rv}, the handler last saw @{prev}"
            )),
            Some(prev) if !tombstone && rv < prev => st.violations.push(format!(
                "delete of {key}@{rv} older than the handler's @{prev}"
            )),
            Some(_) => {}
        }
        let seen = if tombstone {
            st.tombstones += 1;
            Seen::Tombstone(rv)
        } else {
            st.deletes += 1;
            Seen::Delete(rv)
        };
        if !self.no_log {
            st.log.entry(key).or_default().push(seen);
        }
        drop(st);
        self.changed.notify_one();
    }
}

impl Tracker {
    /// A tracker that checks and counts every notification but keeps no per-key log.
    pub fn without_log() -> Self {
        Self {
            no_log: true,
            ..Self::default()
        }
    }

    /// Notifications received: adds, updates, deletes and tombstones.
    pub fn notifications(&self) -> u64 {
        let st = self.state.lock();
        st.adds + st.updates + st.deletes + st.tombstones
    }

    /// A copy of the handler's view.
    pub fn view(&self) -> KeyVersions {
        self.state.lock().view.clone()
    }

    /// The violations recorded so far.
    pub fn violations(&self) -> Vec<String> {
        self.state.lock().violations.clone()
    }

    /// Keys for which the handler got a delete (live or tombstone) at some point.
    pub fn deleted_keys(&self) -> BTreeSet<String> {
        self.state
            .lock()
            .log
            .iter()
            .filter(|(_, evs)| {
                evs.iter()
                    .any(|e| matches!(e, Seen::Delete(_) | Seen::Tombstone(_)))
            })
            .map(|(k, _)| k.clone())
            .collect()
    }
}

/// The server's pods in `namespace` (all namespaces when `None`).
pub fn server_pods(server: &ApiServer, namespace: Option<&str>) -> KeyVersions {
    let prefix = namespace.map(|ns| format!("{ns}/"));
    server_versions(server)
        .unwrap()
        .into_iter()
        .filter(|(k, _)| prefix.as_deref().is_none_or(|p| k.starts_with(p)))
        .collect()
}

/// Describes how two key/version maps differ (at most a few entries).
pub fn diff(label: &str, got: &KeyVersions, want: &KeyVersions) -> String {
    format!("{label}: {}", describe_diff(got, want))
}

/// Waits until both the cache and the handler's view equal the server's pods in `namespace`.
///
/// # Errors
/// The differences left when `limit` expires.
pub async fn wait_converged<K: Resource>(
    server: &ApiServer,
    namespace: Option<&str>,
    cache: &ReadOnlyIndexer<K>,
    tracker: &Tracker,
    limit: Duration,
) -> Result<(), String> {
    let deadline = Instant::now() + limit;
    loop {
        let notified = tracker.changed.notified();
        let want = server_pods(server, namespace);
        let got = cache_pods(cache);
        let view = tracker.view();
        if got == want && view == want {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "no convergence after {limit:?}: {}; {}",
                diff("cache", &got, &want),
                diff("handler", &view, &want)
            ));
        }
        // The handler signals each notification; the short timeout only re-checks the
        // server, whose writes do not signal.
        let _ = tokio::time::timeout(Duration::from_millis(25), notified).await;
    }
}

/// A small pod `name` in `namespace` with a generation label.
pub fn small_pod(namespace: &str, name: &str, generation: u64) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"gen": generation.to_string()}
        },
        "spec": {"containers": [{"name": "c", "image": "registry.example/c:1"}]}
    })
}

/// client-go's backoff shortened for tests: 5 ms doubling to 40 ms.
pub fn short_backoff() -> Box<dyn BackoffManager> {
    Box::new(
        ExponentialBackoffManager::new(
            Duration::from_millis(5),
            Duration::from_millis(40),
            Duration::from_secs(120),
            2.0,
            0.5,
        )
        .unwrap(),
    )
}

/// Runs `informer` on a task; returns the token that stops it and the task.
pub fn spawn_informer<K: Resource + Send + Sync + 'static>(
    informer: &SharedIndexInformer<K>,
) -> (CancellationToken, tokio::task::JoinHandle<()>) {
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (informer, cancel) = (informer.clone(), cancel.clone());
        async move { informer.run(cancel).await.unwrap() }
    });
    (cancel, task)
}

/// Stops an informer [`spawn_informer`] started and waits for it.
pub async fn stop(cancel: CancellationToken, task: tokio::task::JoinHandle<()>) {
    cancel.cancel();
    tokio::time::timeout(Duration::from_secs(10), task)
        .await
        .expect("informer stops")
        .unwrap();
}
