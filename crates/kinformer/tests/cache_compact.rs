//! Compact indexers: anything stored reads back equal to what was stored (after the configured
//! transform), before and after the dictionary is trained; relists behave as in typed mode.

#![allow(clippy::unwrap_used)] // test code: a failed step is a failed test

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Container, EnvVar, Pod, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
use kinformer::cache::fifo::Delta;
use kinformer::cache::store::{
    CompactOptions, Format, Indexer, IndexerError, Indexers, NAMESPACE_INDEX, label_index_func,
    namespace_index_func, strip_managed_fields_transform,
};
use kinformer::cache::{Notification, meta_namespace_key, process_deltas};
use proptest::prelude::*;

fn indexers() -> Indexers<Pod> {
    [
        (NAMESPACE_INDEX.to_string(), namespace_index_func()),
        ("app".to_string(), label_index_func("app")),
    ]
    .into()
}

/// A pod with arbitrary names, labels, annotations, containers and managed fields.
fn arb_pod() -> impl Strategy<Value = Pod> {
    let text = "[a-z0-9.-]{0,12}";
    (
        "[a-z][a-z0-9-]{0,10}",
        prop_oneof![Just(None), "[a-z][a-z0-9-]{0,6}".prop_map(Some)],
        proptest::collection::btree_map("[a-z]{1,5}", text, 0..4),
        proptest::collection::btree_map("[a-z./]{1,12}", any::<String>(), 0..3),
        proptest::collection::vec(
            ("[a-z]{1,6}", text, proptest::option::of(any::<String>())),
            0..3,
        ),
        proptest::option::of(any::<u32>()),
        any::<bool>(),
    )
        .prop_map(|(name, ns, labels, annotations, containers, rv, managed)| {
            let mut p = Pod::default();
            p.metadata.name = Some(name);
            p.metadata.namespace = ns;
            p.metadata.labels = (!labels.is_empty()).then_some(labels);
            p.metadata.annotations = (!annotations.is_empty()).then_some(annotations);
            p.metadata.resource_version = rv.map(|v| v.to_string());
            if managed {
                p.metadata.managed_fields = Some(vec![ManagedFieldsEntry {
                    manager: Some("kubelet".into()),
                    ..Default::default()
                }]);
            }
            if !containers.is_empty() {
                p.spec = Some(PodSpec {
                    containers: containers
                        .into_iter()
                        .map(|(name, image, env)| Container {
                            name,
                            image: Some(image),
                            env: env.map(|v| {
                                vec![EnvVar {
                                    name: "E".into(),
                                    value: Some(v),
                                    ..Default::default()
                                }]
                            }),
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                });
            }
            p
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn stored_objects_read_back_equal_after_the_transform(
        pods in proptest::collection::vec(arb_pod(), 1..60),
        json in any::<bool>(),
        strip in any::<bool>(),
    ) {
        let format = if json { Format::Json } else { Format::MessagePack };
        let mut idx = Indexer::compact(
            indexers(),
            CompactOptions::default().format(format).train_after(20),
        )
        .unwrap();
        if strip {
            idx = idx.with_transform(strip_managed_fields_transform());
        }
        // The expected content: the last pod per key, transformed.
        let mut expected: BTreeMap<String, Pod> = BTreeMap::new();
        for p in &pods {
            let up = idx.upsert(Arc::new(p.clone())).unwrap();
            let mut want = p.clone();
            if strip {
                want.metadata.managed_fields = None;
            }
            prop_assert_eq!(&*up.new, &want);
            let key = meta_namespace_key(p).unwrap().to_string();
            prop_assert_eq!(up.old.as_deref(), expected.get(&key));
            expected.insert(key, want);
        }
        prop_assert_eq!(idx.len(), expected.len());
        for (key, want) in &expected {
            let got = idx.try_get_by_key(key).unwrap();
            prop_assert_eq!(got.as_deref(), Some(want));
        }
        // by_index agrees with a scan of the expected content.
        for ns in expected.values().map(|p| p.metadata.namespace.clone().unwrap_or_default()) {
            let mut got: Vec<Pod> = idx
                .by_index(NAMESPACE_INDEX, &ns)
                .unwrap()
                .into_iter()
                .map(Arc::unwrap_or_clone)
                .collect();
            got.sort_by_key(|p| p.metadata.name.clone());
            let mut want: Vec<Pod> = expected
                .values()
                .filter(|p| p.metadata.namespace.clone().unwrap_or_default() == ns)
                .cloned()
                .collect();
            want.sort_by_key(|p| p.metadata.name.clone());
            prop_assert_eq!(got, want);
        }
        // A replace with the same content keeps it; the previous content reads back too.
        let list: Vec<Arc<Pod>> = pods.iter().cloned().map(Arc::new).collect();
        let old = idx.replace_take_old(list).unwrap();
        for (key, want) in &expected {
            let prev = old.try_get(key).unwrap();
            prop_assert_eq!(prev.as_deref(), Some(want));
            prop_assert_eq!(old.get(key).map(|p| &**p), Some(want));
            let now = idx.get_by_key(key);
            prop_assert_eq!(now.as_deref(), Some(want));
        }
    }
}

/// A pod from a small space of names, namespaces, `app` labels and annotation values, so
/// lists repeat keys, keep some objects unchanged and move others between index values.
fn small_pod() -> impl Strategy<Value = Pod> {
    (
        0..8u8,
        prop_oneof![Just(None), Just(Some("a")), Just(Some("b"))],
        prop_oneof![
            Just(None),
            Just(Some("x")),
            Just(Some("y")),
            Just(Some("z"))
        ],
        0..3u8,
    )
        .prop_map(|(name, ns, app, note)| {
            let mut p = Pod::default();
            p.metadata.name = Some(format!("p{name}"));
            p.metadata.namespace = ns.map(str::to_string);
            p.metadata.labels = app.map(|a| [("app".to_string(), a.to_string())].into());
            p.metadata.annotations = Some([("note".to_string(), note.to_string())].into());
            p
        })
}

fn describe(n: Notification<Pod>) -> String {
    let show = |p: &Pod| serde_json::to_string(p).unwrap();
    match n {
        Notification::Add { obj, .. } => format!("add {}", show(&obj)),
        Notification::Update { old, new } => format!("update {} -> {}", show(&old), show(&new)),
        Notification::Delete(d) => format!("delete {}", show(d.object())),
    }
}

/// Everything readable from an indexer, in a comparable form.
fn snapshot(idx: &Indexer<Pod>) -> Vec<String> {
    let mut out: Vec<String> = idx
        .list()
        .iter()
        .map(|p| serde_json::to_string(&**p).unwrap())
        .collect();
    out.sort();
    for name in [NAMESPACE_INDEX, "app"] {
        let mut values = idx.list_index_func_values(name);
        values.sort();
        for v in values {
            let keys: Vec<String> = idx
                .index_keys(name, &v)
                .unwrap()
                .iter()
                .map(|k| k.to_string())
                .collect();
            let mut objs: Vec<String> = idx
                .by_index(name, &v)
                .unwrap()
                .iter()
                .map(|p| serde_json::to_string(&**p).unwrap())
                .collect();
            objs.sort();
            out.push(format!("{name}={v}: {keys:?} {objs:?}"));
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// Compact relists (replace by staged difference, no dictionary training) notify and
    /// leave the same content and indices as typed relists, for any content before and any
    /// list (keys repeated, unchanged, changed, moved between index values, vanished).
    #[test]
    fn compact_relists_reconcile_exactly_like_typed_relists(
        before in proptest::collection::vec(small_pod(), 0..12),
        lists in proptest::collection::vec(proptest::collection::vec(small_pod(), 0..12), 1..4),
    ) {
        let typed = Indexer::new(indexers());
        let compact = Indexer::compact(indexers(), CompactOptions::default().train_after(0)).unwrap();
        for idx in [&typed, &compact] {
            for p in &before {
                idx.add(Arc::new(p.clone())).unwrap();
            }
        }
        for list in lists {
            let mut seen = Vec::new();
            for idx in [&typed, &compact] {
                let mut notes = Vec::new();
                let objects = list.iter().cloned().map(Arc::new).collect();
                let delta = Delta::ReplacedAll { objects, resource_version: "7".into() };
                process_deltas(idx, vec![delta], false, &mut |n| notes.push(describe(n))).unwrap();
                notes.sort();
                seen.push(notes);
            }
            prop_assert_eq!(&seen[0], &seen[1]);
            prop_assert_eq!(snapshot(&typed), snapshot(&compact));
        }
    }
}

/// A compact relist hands handlers the listed objects themselves (no decoded copies), and an
/// object whose encoding did not change is its own old object.
#[test]
fn compact_relists_notify_with_the_listed_objects_not_decoded_copies() {
    let idx = Indexer::compact(indexers(), CompactOptions::default().train_after(0)).unwrap();
    let list = |app: usize| -> Vec<Arc<Pod>> { (0..20).map(|i| bench_like(i, i % app)).collect() };
    for (round, app) in [(0, 3), (1, 3), (2, 4)] {
        let objects = list(app);
        let mut seen = Vec::new();
        let delta = Delta::ReplacedAll {
            objects: objects.clone(),
            resource_version: round.to_string(),
        };
        process_deltas(&idx, vec![delta], false, &mut |n| seen.push(n)).unwrap();
        assert_eq!(seen.len(), objects.len());
        for (n, listed) in seen.iter().zip(&objects) {
            match (round, n) {
                (0, Notification::Add { obj, .. }) => assert!(Arc::ptr_eq(obj, listed)),
                (1, Notification::Update { old, new }) => {
                    // Same content as before: the listed object is also the old one.
                    assert!(Arc::ptr_eq(new, listed));
                    assert!(Arc::ptr_eq(old, listed));
                }
                (2, Notification::Update { old, new }) => {
                    assert!(Arc::ptr_eq(new, listed));
                    let i: usize = listed.metadata.name.as_ref().unwrap()[4..].parse().unwrap();
                    assert_eq!(*old, bench_like(i, i % 3));
                }
                (r, n) => panic!("round {r}: unexpected {n:?}"),
            }
        }
    }
}

fn bench_like(i: usize, app: usize) -> Arc<Pod> {
    let mut p = Pod::default();
    p.metadata.name = Some(format!("pod-{i}"));
    p.metadata.namespace = Some(format!("ns-{}", i % 10));
    p.metadata.labels = Some([("app".to_string(), format!("a{app}"))].into());
    Arc::new(p)
}

#[test]
fn a_large_replace_trains_the_dictionary_and_reconciles_like_typed_mode() {
    let typed = Indexer::new(indexers());
    let compact = Indexer::compact(indexers(), CompactOptions::default().train_after(500)).unwrap();
    for idx in [&typed, &compact] {
        for i in 0..100 {
            idx.add(bench_like(i, i % 7)).unwrap();
        }
    }
    assert_eq!(compact.compact_dictionary_len(), None);
    // Relist: 0..50 vanish, 50..100 change app, 100..2000 are new.
    let list = || (50..2000).map(|i| bench_like(i, i % 5)).collect::<Vec<_>>();
    let mut seen = Vec::new();
    for idx in [&typed, &compact] {
        let mut notes = Vec::new();
        let delta = Delta::ReplacedAll {
            objects: list(),
            resource_version: "7".into(),
        };
        process_deltas(idx, vec![delta], false, &mut |n| {
            notes.push(match n {
                Notification::Add { obj, .. } => format!("add {:?}", obj.metadata.name),
                Notification::Update { old, new } => format!(
                    "update {:?} {:?}->{:?}",
                    new.metadata.name, old.metadata.labels, new.metadata.labels
                ),
                Notification::Delete(d) => format!("delete {:?}", d.object().metadata.name),
            })
        })
        .unwrap();
        notes.sort();
        seen.push(notes);
        let mut a = idx.index_keys("app", "a3").unwrap();
        a.sort();
        assert_eq!(a.len(), 390);
        assert_eq!(idx.len(), 1950);
    }
    assert!(compact.compact_dictionary_len().is_some());
    assert_eq!(seen[0], seen[1]);
    assert_eq!(seen[0].len(), 2000);
}

#[test]
fn an_unknown_index_and_a_bad_key_are_the_same_errors_in_compact_mode() {
    let idx = Indexer::<Pod>::compact(indexers(), CompactOptions::default()).unwrap();
    assert!(matches!(
        idx.by_index("nope", "x"),
        Err(IndexerError::UnknownIndex(_))
    ));
    assert!(matches!(
        idx.add(Arc::new(Pod::default())),
        Err(IndexerError::Key(_))
    ));
    assert!(idx.is_compact());
    assert!(idx.is_empty());
}
