//! Tests of the indexer, run in every storage mode.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;

use super::*;
use crate::cache::meta::{KeyError, ObjectKey, meta_namespace_key};
use crate::cache::store::{
    IndexFunc, IndexFuncError, NAMESPACE_INDEX, label_index_func, namespace_index_func,
    strip_managed_fields_transform,
};
use crate::test_support::pod;

/// The storage modes every behaviour test runs in.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Mode {
    Typed = 0,
    #[cfg(feature = "compact")]
    Compact = 1,
    /// Compact with a hot-object cache of two objects (so tests also evict).
    #[cfg(feature = "compact")]
    CompactHot = 2,
}

/// An indexer of `mode`; compact indexers train their dictionary early (after 3 objects)
/// so both raw and compressed entries are exercised.
pub(crate) fn build(mode: Mode, indexers: Indexers<Pod>) -> Indexer<Pod> {
    match mode {
        Mode::Typed => Indexer::new(indexers),
        #[cfg(feature = "compact")]
        Mode::Compact => {
            Indexer::compact(indexers, CompactOptions::default().train_after(3)).unwrap()
        }
        #[cfg(feature = "compact")]
        Mode::CompactHot => Indexer::compact(
            indexers,
            CompactOptions::default().train_after(3).hot_objects(2),
        )
        .unwrap(),
    }
}

/// The compact core of a compact indexer.
#[cfg(feature = "compact")]
fn compact_core<K>(idx: &Indexer<K>) -> &super::core::Core<K, super::compact::CompactBackend<K>> {
    match &idx.mode {
        super::indexer::Mode::Compact(c) => c,
        super::indexer::Mode::Typed(_) => panic!("not a compact indexer"),
    }
}

/// Replaces what is stored under `key` with bytes that are no valid blob (a zstd frame
/// header cut short), in the item map and the first index alike.
#[cfg(feature = "compact")]
fn corrupt<K>(idx: &Indexer<K>, key: &str) {
    let bad: Blob = Arc::from(&[1u8, 0x28, 0xb5, 0x2f, 0xfd, 9, 9][..]);
    let mut s = compact_core(idx).state.write();
    s.tables.items.get_mut(key).unwrap().v = Arc::clone(&bad);
    for set in s.tables.indices[0].sets_mut() {
        for (k, b) in set.iter_mut() {
            if k.as_str() == key {
                *b = Arc::clone(&bad);
            }
        }
    }
}

/// Runs each named test function (taking a [`Mode`]) in every mode.
macro_rules! both_modes {
    ($($name:ident),* $(,)?) => {
        mod typed {
            $( #[test] fn $name() { super::$name(super::Mode::Typed) } )*
        }
        #[cfg(feature = "compact")]
        mod compact {
            $( #[test] fn $name() { super::$name(super::Mode::Compact) } )*
        }
        #[cfg(feature = "compact")]
        mod compact_hot {
            $( #[test] fn $name() { super::$name(super::Mode::CompactHot) } )*
        }
    };
}

both_modes!(
    replace_with_duplicate_keys_keeps_the_later_object,
    add_get_list_delete_round_trip,
    objects_without_a_name_are_refused_with_a_key_error,
    multi_value_index_is_updated_from_old_and_new_values,
    empty_value_sets_are_removed_on_update,
    unknown_index_is_an_error_and_unknown_value_is_empty,
    index_keys_are_sorted,
    index_returns_objects_sharing_any_value,
    add_indexers_back_fills_and_refuses_conflicts,
    index_function_errors_are_typed_and_leave_the_store_unchanged,
    replace_rebuilds_items_and_indices,
    transform_runs_before_storing,
    upsert_reports_the_previous_object,
    index_functions_run_without_the_state_lock,
    by_index_returns_the_current_object_when_index_values_do_not_change,
    updates_move_only_the_values_that_changed,
    deletes_after_updates_leave_no_entries,
    replace_after_updates_starts_from_the_current_values,
    add_indexers_after_adds_is_maintained_by_later_writes,
    stored_index_values_never_go_stale,
);

/// Indexes by the comma-separated `users` label (several values per object).
fn users_index() -> IndexFunc<Pod> {
    Arc::new(|p: &Pod, out: &mut Vec<String>| {
        if let Some(u) = p.metadata.labels.as_ref().and_then(|l| l.get("users")) {
            out.extend(u.split('.').map(str::to_owned));
        }
        Ok(())
    })
}

fn users_indexer(mode: Mode) -> Indexer<Pod> {
    build(mode, [("by_user".to_string(), users_index())].into())
}

/// An indexer with one index, `app`, by the `app` label.
fn app_indexer(mode: Mode) -> Indexer<Pod> {
    build(mode, [("app".to_string(), label_index_func("app"))].into())
}

fn names(objs: Vec<Arc<Pod>>) -> Vec<String> {
    let mut v: Vec<String> = objs
        .iter()
        .map(|p| p.metadata.name.clone().unwrap_or_default())
        .collect();
    v.sort();
    v
}

fn add_get_list_delete_round_trip(mode: Mode) {
    let idx = build(mode, Indexers::new());
    idx.add(pod("ns", "a", &[])).unwrap();
    idx.add(pod("", "cluster", &[])).unwrap();
    assert_eq!(idx.len(), 2);
    assert!(idx.get_by_key("ns/a").is_some());
    assert!(idx.get_by_key("cluster").is_some());
    assert!(idx.get(&pod("ns", "a", &[])).unwrap().is_some());
    let mut keys: Vec<String> = idx.list_keys().iter().map(|k| k.to_string()).collect();
    keys.sort();
    assert_eq!(keys, ["cluster", "ns/a"]);
    assert!(idx.delete(&pod("ns", "a", &[])).unwrap().is_some());
    assert!(idx.delete(&pod("ns", "a", &[])).unwrap().is_none());
    assert_eq!(idx.len(), 1);
}

fn objects_without_a_name_are_refused_with_a_key_error(mode: Mode) {
    let idx = build(mode, Indexers::new());
    let err = idx.add(Arc::new(Pod::default())).unwrap_err();
    assert!(matches!(err, IndexerError::Key(KeyError::MissingName)));
    assert!(idx.is_empty());
}

fn multi_value_index_is_updated_from_old_and_new_values(mode: Mode) {
    let idx = users_indexer(mode);
    idx.add(pod("ns", "one", &[("users", "ernie.bert")]))
        .unwrap();
    idx.add(pod("ns", "two", &[("users", "bert.oscar")]))
        .unwrap();
    idx.add(pod("ns", "tre", &[("users", "ernie.elmo")]))
        .unwrap();
    assert_eq!(
        names(idx.by_index("by_user", "ernie").unwrap()),
        ["one", "tre"]
    );
    assert_eq!(
        names(idx.by_index("by_user", "bert").unwrap()),
        ["one", "two"]
    );

    // "one" moves from ernie,bert to elmo: ernie keeps tre, bert keeps two.
    idx.update(pod("ns", "one", &[("users", "elmo")])).unwrap();
    assert_eq!(names(idx.by_index("by_user", "ernie").unwrap()), ["tre"]);
    assert_eq!(names(idx.by_index("by_user", "bert").unwrap()), ["two"]);
    assert_eq!(
        names(idx.by_index("by_user", "elmo").unwrap()),
        ["one", "tre"]
    );

    // Deleting the last holder of a value removes the value.
    idx.delete(&pod("ns", "two", &[])).unwrap();
    let mut values = idx.list_index_func_values("by_user");
    values.sort();
    assert_eq!(values, ["elmo", "ernie"]);
}

fn empty_value_sets_are_removed_on_update(mode: Mode) {
    let idx = users_indexer(mode);
    idx.add(pod("ns", "a", &[("users", "x")])).unwrap();
    idx.update(pod("ns", "a", &[("users", "y")])).unwrap();
    assert_eq!(idx.list_index_func_values("by_user"), ["y"]);
    assert!(idx.by_index("by_user", "x").unwrap().is_empty());
}

fn unknown_index_is_an_error_and_unknown_value_is_empty(mode: Mode) {
    let idx = users_indexer(mode);
    idx.add(pod("ns", "a", &[("users", "x")])).unwrap();
    assert!(matches!(
        idx.by_index("nope", "x"),
        Err(IndexerError::UnknownIndex(_))
    ));
    assert!(idx.index_keys("nope", "x").is_err());
    assert!(idx.index("nope", &pod("ns", "a", &[])).is_err());
    assert!(idx.by_index("by_user", "zzz").unwrap().is_empty());
    assert!(idx.list_index_func_values("nope").is_empty());
}

fn index_keys_are_sorted(mode: Mode) {
    let idx = build(
        mode,
        [(NAMESPACE_INDEX.to_string(), namespace_index_func())].into(),
    );
    for name in ["d", "b", "a", "c"] {
        idx.add(pod("ns", name, &[])).unwrap();
    }
    let keys: Vec<String> = idx
        .index_keys(NAMESPACE_INDEX, "ns")
        .unwrap()
        .iter()
        .map(|k| k.to_string())
        .collect();
    assert_eq!(keys, ["ns/a", "ns/b", "ns/c", "ns/d"]);
}

fn index_returns_objects_sharing_any_value(mode: Mode) {
    let idx = users_indexer(mode);
    idx.add(pod("ns", "one", &[("users", "a.b")])).unwrap();
    idx.add(pod("ns", "two", &[("users", "b")])).unwrap();
    idx.add(pod("ns", "tre", &[("users", "c")])).unwrap();
    let probe = pod("ns", "probe", &[("users", "a.b")]);
    assert_eq!(names(idx.index("by_user", &probe).unwrap()), ["one", "two"]);
}

fn add_indexers_back_fills_and_refuses_conflicts(mode: Mode) {
    let idx = build(mode, Indexers::new());
    idx.add(pod("ns1", "a", &[("app", "web")])).unwrap();
    idx.add(pod("ns2", "b", &[("app", "db")])).unwrap();
    idx.add_indexers([("app".to_string(), label_index_func("app"))].into())
        .unwrap();
    assert_eq!(names(idx.by_index("app", "web").unwrap()), ["a"]);
    let err = idx
        .add_indexers(
            [
                ("app".to_string(), label_index_func("app")),
                ("ns".to_string(), namespace_index_func()),
            ]
            .into(),
        )
        .unwrap_err();
    assert!(matches!(err, IndexerError::IndexerConflict(ref n) if n == "app"));
    // Nothing of the refused set was added.
    assert!(!idx.has_index("ns"));
    // New writes maintain the back-filled index.
    idx.add(pod("ns3", "c", &[("app", "web")])).unwrap();
    assert_eq!(names(idx.by_index("app", "web").unwrap()), ["a", "c"]);
}

fn index_function_errors_are_typed_and_leave_the_store_unchanged(mode: Mode) {
    let failing: IndexFunc<Pod> = Arc::new(|p: &Pod, out: &mut Vec<String>| {
        match p.metadata.labels.as_ref().and_then(|l| l.get("v")) {
            Some(v) => {
                out.push(v.clone());
                Ok(())
            }
            None => Err(IndexFuncError("no v label".into())),
        }
    });
    let idx = build(mode, [("v".to_string(), failing)].into());
    idx.add(pod("ns", "a", &[("v", "1")])).unwrap();
    let err = idx.update(pod("ns", "a", &[])).unwrap_err();
    assert!(matches!(err, IndexerError::IndexFunc { ref index, .. } if index == "v"));
    assert_eq!(names(idx.by_index("v", "1").unwrap()), ["a"]);
    let err = idx
        .replace(vec![pod("ns", "b", &[("v", "2")]), pod("ns", "c", &[])])
        .unwrap_err();
    assert!(matches!(err, IndexerError::IndexFunc { .. }));
    assert_eq!(idx.list_keys().len(), 1);
    assert!(idx.get_by_key("ns/a").is_some());
}

fn replace_rebuilds_items_and_indices(mode: Mode) {
    let idx = app_indexer(mode);
    idx.add(pod("ns", "a", &[("app", "web")])).unwrap();
    idx.add(pod("ns", "b", &[("app", "web")])).unwrap();
    let old = idx
        .replace_take_old(vec![pod("ns", "b", &[("app", "db")]), pod("ns", "c", &[])])
        .unwrap();
    assert_eq!(old.len(), 2);
    assert!(idx.get_by_key("ns/a").is_none());
    assert!(idx.by_index("app", "web").unwrap().is_empty());
    assert_eq!(names(idx.by_index("app", "db").unwrap()), ["b"]);
    assert_eq!(idx.list_index_func_values("app"), ["db"]);
    assert_eq!(idx.len(), 2);
}

fn transform_runs_before_storing(mode: Mode) {
    let idx = build(mode, Indexers::new()).with_transform(strip_managed_fields_transform());
    let mut p = (*pod("ns", "a", &[])).clone();
    p.metadata.managed_fields = Some(vec![ManagedFieldsEntry::default()]);
    let up = idx.upsert(Arc::new(p)).unwrap();
    assert!(up.new.metadata.managed_fields.is_none());
    let stored = idx.get_by_key("ns/a").unwrap();
    assert!(stored.metadata.managed_fields.is_none());
}

fn upsert_reports_the_previous_object(mode: Mode) {
    let idx = build(mode, Indexers::new());
    let first = pod("ns", "a", &[]);
    assert!(idx.upsert(Arc::clone(&first)).unwrap().old.is_none());
    let up = idx.upsert(pod("ns", "a", &[("x", "y")])).unwrap();
    assert_eq!(up.old.as_deref(), Some(&*first));
    if matches!(mode, Mode::Typed) {
        assert!(Arc::ptr_eq(up.old.as_ref().unwrap(), &first));
    }
}

fn index_functions_run_without_the_state_lock(mode: Mode) {
    // An index function that reads the indexer would deadlock if it ran under the lock.
    static INDEXER: [OnceLock<Arc<Indexer<Pod>>>; 3] =
        [OnceLock::new(), OnceLock::new(), OnceLock::new()];
    static READS: [AtomicUsize; 3] = [
        AtomicUsize::new(0),
        AtomicUsize::new(0),
        AtomicUsize::new(0),
    ];
    let m = mode as usize;
    let reading: IndexFunc<Pod> = Arc::new(move |_p: &Pod, out: &mut Vec<String>| {
        if let Some(idx) = INDEXER[m].get() {
            let _ = idx.list();
            let _ = idx.by_index("r", "x");
            READS[m].fetch_add(1, Ordering::SeqCst);
        }
        out.push("x".into());
        Ok(())
    });
    let idx = INDEXER[m].get_or_init(|| Arc::new(build(mode, [("r".to_string(), reading)].into())));
    idx.add(pod("ns", "a", &[])).unwrap();
    idx.update(pod("ns", "a", &[("v", "2")])).unwrap();
    let reads = READS[m].load(Ordering::SeqCst);
    assert!(reads >= 2);
    // A delete finds the entries by the values stored beside the object: no index function
    // runs.
    idx.delete(&pod("ns", "a", &[])).unwrap();
    assert_eq!(READS[m].load(Ordering::SeqCst), reads);
}

fn by_index_returns_the_current_object_when_index_values_do_not_change(mode: Mode) {
    let idx = app_indexer(mode);
    idx.add(pod("ns", "a", &[("app", "web")])).unwrap();
    let newer = pod("ns", "a", &[("app", "web"), ("v", "2")]);
    idx.update(Arc::clone(&newer)).unwrap();
    let got = idx.by_index("app", "web").unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(*got[0], *newer);
    let got = idx.index("app", &newer).unwrap();
    assert_eq!(*got[0], *newer);
    if matches!(mode, Mode::Typed) {
        assert!(Arc::ptr_eq(&got[0], &newer));
    }
}

#[test]
fn a_typed_write_releases_every_reference_of_the_object_it_replaces() {
    // The write hands the replaced object and its index entries to the dropping thread
    // unread; a writing thread that exits releases what it has not handed over yet.
    let idx = Arc::new(build(
        Mode::Typed,
        [
            ("app".to_string(), label_index_func("app")),
            (NAMESPACE_INDEX.to_string(), namespace_index_func()),
        ]
        .into(),
    ));
    let first = pod("ns", "a", &[("app", "web")]);
    let kept = pod("ns", "a", &[("app", "db")]);
    let (weak_first, weak_second) = (Arc::downgrade(&first), Arc::downgrade(&kept));
    let writer = Arc::clone(&idx);
    let newer = pod("ns", "a", &[("app", "web")]);
    let stored = Arc::clone(&newer);
    std::thread::spawn(move || {
        writer.add(first).unwrap();
        // Moves the object to another `app` value, then back (entries freed and overwritten).
        writer.update(kept).unwrap();
        writer.add(newer).unwrap();
    })
    .join()
    .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while weak_first.strong_count() + weak_second.strong_count() > 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "a replaced object was kept"
        );
        std::thread::yield_now();
    }
    // Only the indexer holds the stored object: its item and its two index entries.
    assert_eq!(Arc::strong_count(&stored), 4);
    assert!(Arc::ptr_eq(&idx.get_by_key("ns/a").unwrap(), &stored));
    assert!(idx.by_index("app", "db").unwrap().is_empty());
    assert_eq!(idx.by_index("app", "web").unwrap().len(), 1);
    assert_eq!(idx.by_index(NAMESPACE_INDEX, "ns").unwrap().len(), 1);
}

#[cfg(feature = "compact")]
#[test]
fn hot_objects_serve_repeated_reads_and_never_a_stale_object() {
    let idx = Indexer::<Pod>::compact(
        [("app".to_string(), label_index_func("app"))].into(),
        CompactOptions::default().train_after(0).hot_objects(8),
    )
    .unwrap();
    let app = |p: &Pod| p.metadata.labels.as_ref().unwrap()["app"].clone();
    let first = pod("ns", "a", &[("app", "web")]);
    idx.add(Arc::clone(&first)).unwrap();
    // The object written is the one read back, without a decode.
    assert!(Arc::ptr_eq(&idx.get_by_key("ns/a").unwrap(), &first));
    let newer = pod("ns", "a", &[("app", "db")]);
    let up = idx.upsert(Arc::clone(&newer)).unwrap();
    assert!(Arc::ptr_eq(up.old.as_ref().unwrap(), &first));
    assert!(Arc::ptr_eq(&idx.get_by_key("ns/a").unwrap(), &newer));
    assert!(Arc::ptr_eq(&idx.by_index("app", "db").unwrap()[0], &newer));
    // A relist stores new bytes: the cached object is not served for them.
    idx.replace(vec![pod("ns", "a", &[("app", "x")])]).unwrap();
    let now = idx.get_by_key("ns/a").unwrap();
    assert_eq!(app(&now), "x");
    assert!(Arc::ptr_eq(&idx.get_by_key("ns/a").unwrap(), &now));
    idx.delete_by_key("ns/a").unwrap();
    assert!(idx.get_by_key("ns/a").is_none());
    assert_eq!(compact_core(&idx).backend.hot.as_ref().unwrap().len(), 0);
}

#[test]
fn indexer_is_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<Indexer<Pod>>();
}

fn replace_with_duplicate_keys_keeps_the_later_object(mode: Mode) {
    let idx = app_indexer(mode);
    for i in 0..8 {
        idx.add(pod("ns", &format!("p{i}"), &[("app", "old")]))
            .unwrap();
    }
    // Twice: the first relist may train the dictionary, the second replaces in place.
    for _ in 0..2 {
        idx.replace(vec![
            pod("ns", "p0", &[("app", "x")]),
            pod("ns", "p1", &[("app", "old")]),
            pod("ns", "p0", &[("app", "y")]),
            pod("ns", "p9", &[("app", "x")]),
        ])
        .unwrap();
        assert_eq!(names(idx.by_index("app", "x").unwrap()), ["p9"]);
        assert_eq!(names(idx.by_index("app", "y").unwrap()), ["p0"]);
        assert_eq!(names(idx.by_index("app", "old").unwrap()), ["p1"]);
        let mut values = idx.list_index_func_values("app");
        values.sort();
        assert_eq!(values, ["old", "x", "y"]);
        assert_eq!(idx.len(), 3);
    }
}

#[cfg(feature = "compact")]
#[test]
fn corrupt_stored_bytes_are_typed_errors_on_every_read_and_write() {
    let idx = app_indexer(Mode::Compact);
    for i in 0..5 {
        idx.add(pod("ns", &format!("p{i}"), &[("app", "web")]))
            .unwrap();
    }
    // Corrupt one stored entry, in the item map and the index alike.
    corrupt(&idx, "ns/p1");
    let is_decode =
        |e: &IndexerError| matches!(e, IndexerError::Decode { key, .. } if key.as_str() == "ns/p1");
    assert!(is_decode(&idx.try_get_by_key("ns/p1").unwrap_err()));
    assert!(idx.get_by_key("ns/p1").is_none());
    assert!(idx.get_by_key("ns/p2").is_some());
    assert!(is_decode(&idx.by_index("app", "web").unwrap_err()));
    assert!(is_decode(&idx.try_list().unwrap_err()));
    assert_eq!(idx.list().len(), 4);
    assert!(is_decode(
        &idx.upsert(pod("ns", "p1", &[("app", "db")])).unwrap_err()
    ));
    assert!(is_decode(&idx.delete_by_key("ns/p1").unwrap_err()));
    assert!(idx.contains_key("ns/p1"));
    // A replace drops the corrupt entry; its previous content reports it as an error.
    let old = idx
        .replace_take_old(vec![pod("ns", "p1", &[("app", "db")])])
        .unwrap();
    assert!(is_decode(&old.try_get("ns/p1").unwrap_err()));
    assert_eq!(idx.by_index("app", "db").unwrap().len(), 1);
}

/// A compact relist that moves every object to another index value frees the old entries
/// before it places the new ones, so the sets reuse their slots and none grows.
#[cfg(feature = "compact")]
#[test]
fn a_compact_relist_moving_every_object_grows_no_set() {
    let idx = app_indexer(Mode::Compact);
    // Object `i` has app `a<(i + shift) % 4>`: in key order, the first object enters the
    // set of `a1` before any object leaves it.
    let pods = |shift: usize| -> Vec<Arc<Pod>> {
        (0..200)
            .map(|i| {
                pod(
                    "ns",
                    &format!("p{i:03}"),
                    &[("app", &format!("a{}", (i + shift) % 4))],
                )
            })
            .collect()
    };
    let slots = |idx: &Indexer<Pod>| -> Vec<usize> {
        let s = compact_core(idx).state.read();
        s.tables.assert_places();
        let mut v: Vec<usize> = s.tables.indices[0].sets().map(|s| s.slots()).collect();
        v.sort_unstable();
        v
    };
    idx.replace(pods(0)).unwrap();
    let before = slots(&idx);
    assert_eq!(before, [50; 4]);
    idx.replace(pods(1)).unwrap();
    assert_eq!(slots(&idx), before);
    for v in 0..4 {
        let keys = idx.index_keys("app", &format!("a{v}")).unwrap();
        assert_eq!(keys.len(), 50);
        assert!(keys.iter().all(|k| {
            let i: usize = k.as_str()["ns/p".len()..].parse().unwrap();
            (i + 1) % 4 == v
        }));
    }
}

#[cfg(feature = "compact")]
#[test]
fn compact_mode_trains_a_dictionary_and_re_encodes_earlier_objects() {
    let idx = app_indexer(Mode::Compact);
    let pods: Vec<Arc<Pod>> = (0..50)
        .map(|i| {
            pod(
                &format!("ns-{}", i % 3),
                &format!("p{i}"),
                &[("app", "web")],
            )
        })
        .collect();
    for p in &pods {
        idx.add(Arc::clone(p)).unwrap();
    }
    assert!(idx.compact_dictionary_len().is_some());
    let s = compact_core(&idx).state.read();
    assert!(s.tables.items.values().all(|i| i.v[0] == 1));
    for set in s.tables.indices[0].sets() {
        assert!(set.iter().all(|(_, b)| b[0] == 1));
    }
    drop(s);
    for p in &pods {
        let key = meta_namespace_key(p.as_ref()).unwrap();
        assert_eq!(*idx.get_by_key(key.as_str()).unwrap(), **p);
    }
}

#[test]
fn per_object_entries_and_the_typed_indexer_keep_their_sizes() {
    use std::mem::size_of;
    // A typed index entry: the object's `Arc`.
    assert_eq!(size_of::<Option<Arc<Pod>>>(), 8);
    #[cfg(feature = "compact")]
    {
        // A compact index entry: the shared key and the encoding; a staged relist record.
        assert_eq!(size_of::<Option<(ObjectKey, Blob)>>(), 32);
        assert_eq!(size_of::<super::staged::Staged>(), 40);
    }
    // One storage's tables, the writer lock (with its list of displaced entries), the lock
    // and the transform; compact storage is boxed.
    assert!(
        size_of::<Indexer<Pod>>() <= 136,
        "{}",
        size_of::<Indexer<Pod>>()
    );
}

/// Every index of `idx` (by name, with its function) holds exactly the entries `model`
/// (key → object) gives, each pointing at the current object.
fn assert_indices_match(
    idx: &Indexer<Pod>,
    funcs: &[(&str, IndexFunc<Pod>)],
    model: &std::collections::BTreeMap<String, Arc<Pod>>,
) {
    use std::collections::{BTreeMap, BTreeSet};
    for (name, f) in funcs {
        if !idx.has_index(name) {
            continue;
        }
        let mut want: BTreeMap<String, BTreeSet<&str>> = BTreeMap::new();
        for (key, obj) in model {
            let mut values = Vec::new();
            f(obj, &mut values).unwrap();
            for v in values {
                want.entry(v).or_default().insert(key);
            }
        }
        let mut values = idx.list_index_func_values(name);
        values.sort();
        assert_eq!(
            values,
            want.keys().cloned().collect::<Vec<_>>(),
            "values of {name}"
        );
        for (value, keys) in &want {
            let got = idx.index_keys(name, value).unwrap();
            let got: Vec<&str> = got.iter().map(|k| k.as_str()).collect();
            assert_eq!(
                got,
                keys.iter().copied().collect::<Vec<_>>(),
                "{name}={value}"
            );
            for obj in idx.by_index(name, value).unwrap() {
                let key = meta_namespace_key(obj.as_ref()).unwrap();
                assert_eq!(*obj, *model[key.as_str()], "{name}={value}: a stale object");
            }
        }
    }
}

/// The `users` (several values) and `app` (zero or one value) indices.
fn users_and_app() -> Vec<(&'static str, IndexFunc<Pod>)> {
    vec![("by_user", users_index()), ("app", label_index_func("app"))]
}

fn indexer_of(mode: Mode, funcs: &[(&str, IndexFunc<Pod>)]) -> Indexer<Pod> {
    let indexers = funcs
        .iter()
        .map(|(n, f)| (n.to_string(), Arc::clone(f)))
        .collect();
    build(mode, indexers)
}

fn updates_move_only_the_values_that_changed(mode: Mode) {
    let funcs = users_and_app();
    let idx = indexer_of(mode, &funcs);
    let mut model = std::collections::BTreeMap::new();
    let mut put = |p: Arc<Pod>| {
        idx.update(Arc::clone(&p)).unwrap();
        model.insert(meta_namespace_key(p.as_ref()).unwrap().to_string(), p);
        assert_indices_match(&idx, &funcs, &model);
    };
    put(pod("ns", "a", &[("users", "x.y"), ("app", "web")]));
    put(pod("ns", "b", &[("users", "y")]));
    // Adds a value, keeps one, removes one; the app label goes away.
    put(pod("ns", "a", &[("users", "y.z")]));
    // No value at all, then several again (a value listed twice is kept once).
    put(pod("ns", "a", &[]));
    put(pod("ns", "a", &[("users", "w.w.x"), ("app", "db")]));
    // Unchanged values: the entries point at the newer object.
    put(pod(
        "ns",
        "a",
        &[("users", "x.w"), ("app", "db"), ("v", "2")],
    ));
    put(pod("ns", "b", &[("users", "y"), ("app", "db")]));
}

fn deletes_after_updates_leave_no_entries(mode: Mode) {
    let idx = build(
        mode,
        users_and_app()
            .into_iter()
            .map(|(n, f)| (n.to_string(), f))
            .collect(),
    );
    idx.add(pod("ns", "a", &[("users", "x.y"), ("app", "web")]))
        .unwrap();
    idx.add(pod("ns", "b", &[("users", "y")])).unwrap();
    idx.update(pod("ns", "a", &[("users", "y.z"), ("app", "db")]))
        .unwrap();
    idx.upsert(pod("ns", "a", &[("users", "q.z")])).unwrap();
    assert!(idx.delete_by_key("ns/a").unwrap().is_some());
    assert_eq!(idx.list_index_func_values("by_user"), ["y"]);
    assert!(idx.list_index_func_values("app").is_empty());
    assert!(idx.delete_by_key("ns/b").unwrap().is_some());
    assert!(idx.list_index_func_values("by_user").is_empty());
    // The keys come back with other values, and nothing of the earlier ones is left.
    idx.add(pod("ns", "a", &[("users", "x")])).unwrap();
    assert_eq!(idx.list_index_func_values("by_user"), ["x"]);
    assert_eq!(names(idx.by_index("by_user", "x").unwrap()), ["a"]);
}

fn replace_after_updates_starts_from_the_current_values(mode: Mode) {
    let funcs = users_and_app();
    let idx = indexer_of(mode, &funcs);
    for i in 0..6 {
        idx.add(pod(
            "ns",
            &format!("p{i}"),
            &[("users", "a.b"), ("app", "web")],
        ))
        .unwrap();
    }
    for i in 0..6 {
        idx.update(pod("ns", &format!("p{i}"), &[("users", "b.c")]))
            .unwrap();
    }
    // Twice: the first replace may rebuild (dictionary), the second stages in place.
    for round in 0..2 {
        let list: Vec<Arc<Pod>> = (0..4)
            .map(|i| {
                let users = if i % 2 == 0 { "c.d" } else { "b" };
                pod(
                    "ns",
                    &format!("p{i}"),
                    &[("users", users), ("r", &round.to_string())],
                )
            })
            .collect();
        idx.replace(list.clone()).unwrap();
        let model = list
            .into_iter()
            .map(|p| (meta_namespace_key(p.as_ref()).unwrap().to_string(), p))
            .collect();
        assert_indices_match(&idx, &funcs, &model);
        // Writes after the replace find the values it stored.
        idx.update(pod("ns", "p1", &[("users", "e")])).unwrap();
        idx.delete_by_key("ns/p2").unwrap();
        assert_eq!(idx.list_index_func_values("by_user").len(), 4);
        assert_eq!(names(idx.by_index("by_user", "c").unwrap()), ["p0"]);
    }
}

fn add_indexers_after_adds_is_maintained_by_later_writes(mode: Mode) {
    let funcs = users_and_app();
    let idx = indexer_of(mode, &funcs[..1]);
    let mut model = std::collections::BTreeMap::new();
    for (name, users, app) in [("a", "x.y", "web"), ("b", "y", "db"), ("c", "z", "")] {
        let labels: Vec<(&str, &str)> = [("users", users), ("app", app)]
            .into_iter()
            .filter(|(_, v)| !v.is_empty())
            .collect();
        let p = pod("ns", name, &labels);
        idx.add(Arc::clone(&p)).unwrap();
        model.insert(format!("ns/{name}"), p);
    }
    idx.add_indexers([("app".to_string(), Arc::clone(&funcs[1].1))].into())
        .unwrap();
    idx.add_indexers([(NAMESPACE_INDEX.to_string(), namespace_index_func())].into())
        .unwrap();
    let mut all = funcs.clone();
    all.push((NAMESPACE_INDEX, namespace_index_func()));
    assert_indices_match(&idx, &all, &model);
    for p in [
        pod("ns", "a", &[("users", "y"), ("app", "db")]),
        pod("ns", "c", &[("users", "z.x"), ("app", "web")]),
        pod("ns2", "d", &[("app", "web")]),
    ] {
        idx.update(Arc::clone(&p)).unwrap();
        model.insert(meta_namespace_key(p.as_ref()).unwrap().to_string(), p);
        assert_indices_match(&idx, &all, &model);
    }
    idx.delete_by_key("ns/b").unwrap();
    model.remove("ns/b");
    assert_indices_match(&idx, &all, &model);
}

/// One write of [`stored_index_values_never_go_stale`].
#[derive(Debug, Clone)]
enum Op {
    /// `update` (or `upsert`) of key `k` with these `users` and `app` labels.
    Put {
        k: u8,
        users: String,
        app: u8,
        upsert: bool,
    },
    Delete(u8),
    Replace(Vec<(u8, String, u8)>),
    /// Adds the namespace index (once).
    AddIndexer,
}

fn op() -> impl proptest::strategy::Strategy<Value = Op> {
    use proptest::prelude::*;
    let users = prop::collection::vec(prop::sample::select(vec!["a", "b", "c", "d"]), 0..4)
        .prop_map(|v| v.join("."));
    prop_oneof![
        6 => (0u8..6, users.clone(), 0u8..3, any::<bool>())
            .prop_map(|(k, users, app, upsert)| Op::Put { k, users, app, upsert }),
        2 => (0u8..6).prop_map(Op::Delete),
        1 => prop::collection::vec((0u8..6, users, 0u8..3), 0..6).prop_map(Op::Replace),
        1 => Just(Op::AddIndexer),
    ]
}

/// A pod `k` in one of two namespaces, with these labels (`app` 0: none).
fn op_pod(k: u8, users: &str, app: u8) -> Arc<Pod> {
    let app = format!("app{app}");
    let mut labels = vec![];
    if !users.is_empty() {
        labels.push(("users", users));
    }
    if app != "app0" {
        labels.push(("app", app.as_str()));
    }
    pod(&format!("ns{}", k % 2), &format!("p{k}"), &labels)
}

/// Random writes (multi-valued values changing, appearing and vanishing, deletes, relists,
/// an index added to a populated indexer): after each, every index is exactly what the
/// objects give.
fn stored_index_values_never_go_stale(mode: Mode) {
    use proptest::test_runner::{Config, TestRunner};
    let mut runner = TestRunner::new(Config {
        cases: 48,
        failure_persistence: None,
        ..Config::default()
    });
    let ops = proptest::collection::vec(op(), 1..40);
    runner
        .run(&ops, |ops| {
            let mut funcs = users_and_app();
            let idx = indexer_of(mode, &funcs);
            let mut model = std::collections::BTreeMap::new();
            for op in ops {
                match op {
                    Op::Put {
                        k,
                        users,
                        app,
                        upsert,
                    } => {
                        let p = op_pod(k, &users, app);
                        if upsert {
                            idx.upsert(Arc::clone(&p)).unwrap();
                        } else {
                            idx.update(Arc::clone(&p)).unwrap();
                        }
                        model.insert(meta_namespace_key(p.as_ref()).unwrap().to_string(), p);
                    }
                    Op::Delete(k) => {
                        let key = format!("ns{}/p{k}", k % 2);
                        let gone = idx.delete_by_key(&key).unwrap();
                        assert_eq!(gone.as_deref(), model.remove(&key).as_deref());
                    }
                    Op::Replace(list) => {
                        let list: Vec<Arc<Pod>> =
                            list.iter().map(|(k, u, a)| op_pod(*k, u, *a)).collect();
                        idx.replace(list.clone()).unwrap();
                        model = list
                            .into_iter()
                            .map(|p| (meta_namespace_key(p.as_ref()).unwrap().to_string(), p))
                            .collect();
                    }
                    Op::AddIndexer => {
                        if !idx.has_index(NAMESPACE_INDEX) {
                            idx.add_indexers(
                                [(NAMESPACE_INDEX.to_string(), namespace_index_func())].into(),
                            )
                            .unwrap();
                            funcs.push((NAMESPACE_INDEX, namespace_index_func()));
                        }
                    }
                }
                assert_indices_match(&idx, &funcs, &model);
                match &idx.mode {
                    super::indexer::Mode::Typed(c) => c.state.read().tables.assert_places(),
                    #[cfg(feature = "compact")]
                    super::indexer::Mode::Compact(c) => c.state.read().tables.assert_places(),
                }
                assert_eq!(idx.len(), model.len());
            }
            Ok(())
        })
        .unwrap();
}

#[cfg(feature = "compact")]
#[test]
fn compact_update_and_add_replace_a_stored_object_whose_bytes_are_corrupt() {
    let idx = app_indexer(Mode::Compact);
    for i in 0..5 {
        idx.add(pod("ns", &format!("p{i}"), &[("app", "web")]))
            .unwrap();
    }
    // `update` and `add` discard the object they replace, so they never decode it: the
    // index values kept beside it are enough to move its entries.
    corrupt(&idx, "ns/p1");
    idx.update(pod("ns", "p1", &[("app", "db")])).unwrap();
    corrupt(&idx, "ns/p2");
    idx.add(pod("ns", "p2", &[("app", "web"), ("v", "2")]))
        .unwrap();
    assert_eq!(names(idx.by_index("app", "db").unwrap()), ["p1"]);
    assert_eq!(
        names(idx.by_index("app", "web").unwrap()),
        ["p0", "p2", "p3", "p4"]
    );
    assert_eq!(
        idx.get_by_key("ns/p2")
            .unwrap()
            .metadata
            .labels
            .as_ref()
            .unwrap()["v"],
        "2"
    );
    // `upsert` hands the old object on, so it still needs it (the store stays unchanged),
    // as does `delete`, which returns it.
    corrupt(&idx, "ns/p3");
    assert!(idx.upsert(pod("ns", "p3", &[("app", "db")])).is_err());
    assert!(idx.delete_by_key("ns/p3").is_err());
    assert_eq!(names(idx.by_index("app", "db").unwrap()), ["p1"]);
    assert!(idx.try_get_by_key("ns/p3").is_err());
    // A relist stages in place without decoding it either.
    idx.replace(vec![pod("ns", "p3", &[("app", "x")])]).unwrap();
    assert_eq!(idx.list_index_func_values("app"), ["x"]);
}

#[cfg(feature = "compact")]
#[test]
fn a_lazy_object_replaced_or_deleted_is_handed_on_unread_even_when_its_bytes_are_corrupt() {
    use kube_core::Resource;

    use crate::cache::meta::Lazy;
    let idx = Indexer::<Lazy<Pod>>::compact(
        [("app".to_string(), label_index_func("app"))].into(),
        CompactOptions::default().train_after(3),
    )
    .unwrap();
    let lazy = |name: &str, app: &str, rv: u32| -> Arc<Lazy<Pod>> {
        let mut p = Arc::unwrap_or_clone(pod("ns", name, &[("app", app)]));
        p.metadata.resource_version = Some(rv.to_string());
        Arc::new(Lazy::from_json(serde_json::to_string(&p).unwrap()).unwrap())
    };
    for i in 0..40 {
        idx.add(lazy(
            &format!("p{i}"),
            if i < 5 { "web" } else { "other" },
            1,
        ))
        .unwrap();
    }
    assert!(idx.compact_dictionary_len().is_some(), "stored compressed");
    // Intact: the old object is read back only when its metadata or body is asked for.
    let up = idx.upsert(lazy("p0", "db", 2)).unwrap();
    let old = up.old.unwrap();
    assert!(!old.body_read() && !old.meta_parsed());
    assert_eq!(old.meta().labels.as_ref().unwrap()["app"], "web");
    assert!(old.body_read());
    assert_eq!(
        old.object().unwrap().metadata.resource_version.as_deref(),
        Some("1")
    );
    // Corrupt: the write goes through (nothing reads the old bytes), and the old object
    // handed on reads as empty metadata and fails to decode, naming the key.
    corrupt(&idx, "ns/p1");
    corrupt(&idx, "ns/p2");
    let up = idx.upsert(lazy("p1", "db", 2)).unwrap();
    assert!(!up.is_sync());
    let old = up.old.unwrap();
    assert!(old.meta().name.is_none());
    assert!(old.json().unwrap_err().to_string().contains("ns/p1"));
    assert!(old.object().is_err());
    assert_eq!(idx.by_index("app", "db").unwrap().len(), 2);
    let deleted = idx.delete_by_key("ns/p2").unwrap().unwrap();
    assert!(!idx.contains_key("ns/p2"));
    assert!(deleted.object().is_err());
    assert_eq!(idx.by_index("app", "web").unwrap().len(), 2);
}
