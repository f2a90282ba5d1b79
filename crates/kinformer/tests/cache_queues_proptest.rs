//! Property: whatever a server does (adds, updates, deletes, relists with missed events,
//! resyncs) and however pops interleave, applying the popped deltas to an empty indexer ends
//! in exactly the server's final state, and the handler's view (built only from
//! notifications) agrees — so every key that disappeared got a delete or a tombstone.

#![allow(clippy::unwrap_used)] // test code: a failed step is a failed test

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use k8s_openapi::api::core::v1::ConfigMap;
use kinformer::cache::fifo::{DeltaFifo, DeltaQueue, Popped, RealFifo};
use kinformer::cache::store::{CompactOptions, Indexer};
use kinformer::cache::{Notification, meta_namespace_key, process_deltas};
use proptest::prelude::*;

const KEYS: u8 = 6;

#[derive(Debug, Clone)]
enum Op {
    /// Create or modify key `k`.
    Upsert(u8),
    /// Delete key `k` if it exists.
    Delete(u8),
    /// A relist after missed events: `present` bit i says key i exists now; `bumped` bit i
    /// says it changed while unseen.
    Relist { present: u8, bumped: u8 },
    /// A periodic resync.
    Resync,
    /// The consumer pops up to `n` items.
    Pop(u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..KEYS).prop_map(Op::Upsert),
        2 => (0..KEYS).prop_map(Op::Delete),
        1 => (any::<u8>(), any::<u8>()).prop_map(|(present, bumped)| Op::Relist { present, bumped }),
        1 => Just(Op::Resync),
        3 => (1u8..4).prop_map(Op::Pop),
    ]
}

fn cm(k: u8, rv: u64) -> Arc<ConfigMap> {
    let mut c = ConfigMap::default();
    c.metadata.name = Some(format!("cm-{k}"));
    c.metadata.namespace = Some("ns".into());
    c.metadata.resource_version = Some(rv.to_string());
    Arc::new(c)
}

fn key_rv(c: &ConfigMap) -> (String, String) {
    let key = meta_namespace_key(c)
        .map(|k| k.to_string())
        .unwrap_or_default();
    (key, c.metadata.resource_version.clone().unwrap_or_default())
}

struct Consumer {
    indexer: Arc<Indexer<ConfigMap>>,
    /// What the handler saw: key → resourceVersion.
    view: BTreeMap<String, String>,
}

impl Consumer {
    fn apply(&mut self, popped: Popped<ConfigMap>) {
        let view = &mut self.view;
        process_deltas(
            &self.indexer,
            popped.deltas,
            popped.is_in_initial_list,
            &mut |n| match n {
                Notification::Add { obj, .. } => {
                    let (k, rv) = key_rv(&obj);
                    assert!(
                        !view.contains_key(&k),
                        "add of a key the handler already has: {k}"
                    );
                    view.insert(k, rv);
                }
                Notification::Update { new, .. } => {
                    let (k, rv) = key_rv(&new);
                    assert!(
                        view.contains_key(&k),
                        "update of a key the handler lacks: {k}"
                    );
                    view.insert(k, rv);
                }
                Notification::Delete(d) => {
                    let (k, _) = key_rv(d.object());
                    assert!(
                        view.remove(&k).is_some(),
                        "delete of a key the handler lacks: {k}"
                    );
                }
            },
        )
        .unwrap();
    }
}

/// Runs `ops` against a typed or (with `compact`) a compact indexer.
fn run(
    ops: &[Op],
    compact: bool,
    make: impl FnOnce(Arc<Indexer<ConfigMap>>) -> Arc<dyn DeltaQueue<ConfigMap>>,
) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let indexer = Arc::new(if compact {
        Indexer::<ConfigMap>::compact(Default::default(), CompactOptions::default().train_after(4))
            .unwrap()
    } else {
        Indexer::<ConfigMap>::default()
    });
    let queue = make(Arc::clone(&indexer));
    let mut consumer = Consumer {
        indexer,
        view: BTreeMap::new(),
    };
    let mut server: HashMap<u8, u64> = HashMap::new();
    let mut rv = 0u64;
    let pop_one = |queue: &Arc<dyn DeltaQueue<ConfigMap>>, consumer: &mut Consumer| {
        let mut got = None;
        rt.block_on(queue.pop(&mut |p| got = Some(p))).unwrap();
        if let Some(p) = got {
            consumer.apply(p);
        }
    };
    for op in ops {
        match op {
            Op::Upsert(k) => {
                rv += 1;
                if server.insert(*k, rv).is_some() {
                    queue.update(cm(*k, rv)).unwrap();
                } else {
                    queue.add(cm(*k, rv)).unwrap();
                }
            }
            Op::Delete(k) => {
                if server.remove(k).is_some() {
                    rv += 1;
                    queue.delete(cm(*k, rv)).unwrap();
                }
            }
            Op::Relist { present, bumped } => {
                let mut list = Vec::new();
                for k in 0..KEYS {
                    if present & (1 << k) == 0 {
                        server.remove(&k);
                        continue;
                    }
                    let changed = bumped & (1 << k) != 0 || !server.contains_key(&k);
                    if changed {
                        rv += 1;
                        server.insert(k, rv);
                    }
                    list.push(cm(k, server[&k]));
                }
                rv += 1;
                queue.replace(list, &rv.to_string()).unwrap();
            }
            Op::Resync => queue.resync().unwrap(),
            Op::Pop(n) => {
                for _ in 0..*n {
                    if queue.is_empty() {
                        break;
                    }
                    pop_one(&queue, &mut consumer);
                }
            }
        }
    }
    queue.close();
    while !queue.is_empty() {
        pop_one(&queue, &mut consumer);
    }
    let expected: BTreeMap<String, String> = server
        .iter()
        .map(|(k, v)| (format!("ns/cm-{k}"), v.to_string()))
        .collect();
    let stored: BTreeMap<String, String> =
        consumer.indexer.list().iter().map(|c| key_rv(c)).collect();
    assert_eq!(stored, expected, "indexer differs from the server");
    assert_eq!(
        consumer.view, expected,
        "handler view differs from the server"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn delta_fifo_converges_to_the_server_state(ops in prop::collection::vec(op(), 0..60), compact in any::<bool>()) {
        run(&ops, compact, |idx| Arc::new(DeltaFifo::new().with_known_objects(idx)));
    }

    #[test]
    fn delta_fifo_with_sync_on_relist_converges(ops in prop::collection::vec(op(), 0..60), compact in any::<bool>()) {
        run(&ops, compact, |idx| {
            Arc::new(DeltaFifo::new().with_known_objects(idx).with_emit_delta_type_replaced(false))
        });
    }

    #[test]
    fn atomic_real_fifo_converges_to_the_server_state(ops in prop::collection::vec(op(), 0..60), compact in any::<bool>()) {
        run(&ops, compact, |idx| Arc::new(RealFifo::new().with_known_objects(idx)));
    }

    #[test]
    fn non_atomic_real_fifo_converges_to_the_server_state(ops in prop::collection::vec(op(), 0..60), compact in any::<bool>()) {
        run(&ops, compact, |idx| {
            Arc::new(RealFifo::new().with_known_objects(idx).with_atomic_events(false).with_max_batch(3))
        });
    }
}
