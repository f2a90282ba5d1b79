//! Tests of the store's revision, history and write rules.

use super::*;

fn store(max_events: usize) -> (Store, usize) {
    let s = Store::new(
        ResourceDef::builtins(),
        StoreConfig {
            max_events,
            ..StoreConfig::default()
        },
    );
    let (ridx, _) = s.resolve("configmaps").unwrap();
    (s, ridx)
}

fn cm(name: &str) -> Value {
    json!({"metadata": {"name": name}})
}

#[test]
fn every_write_bumps_the_one_global_revision() {
    let (s, cms) = store(100);
    let (pods, _) = s.resolve("pods").unwrap();
    assert_eq!(s.create_at(cms, Some("a"), cm("x")).unwrap().revision, 1);
    assert_eq!(s.create_at(pods, Some("a"), cm("x")).unwrap().revision, 2);
    assert_eq!(
        s.delete_at(cms, Some("a"), "x", None, None)
            .unwrap()
            .revision,
        3
    );
    assert_eq!(s.revision(), 3);
    let evs = s.events_after(0, 10).unwrap();
    assert_eq!(
        evs.iter().map(|e| e.revision).collect::<Vec<_>>(),
        vec![1, 2, 3]
    );
    assert_eq!(evs[2].kind, EventType::Deleted);
}

#[test]
fn history_is_bounded_and_compaction_makes_old_revisions_gone() {
    let (s, cms) = store(3);
    for i in 0..5 {
        s.create_at(cms, Some("a"), cm(&format!("c{i}"))).unwrap();
    }
    assert_eq!(s.compacted_revision(), 2);
    assert_eq!(s.events_after(1, 10).unwrap_err().code, 410);
    assert_eq!(s.events_after(2, 10).unwrap().len(), 3);
    assert_eq!(
        s.list_page(cms, None, Some(1), None, 0, |_| true)
            .unwrap_err()
            .code,
        410
    );
    assert_eq!(
        s.list_page(cms, None, Some(3), None, 0, |_| true)
            .unwrap()
            .items
            .len(),
        3
    );
    s.compact_all();
    assert_eq!(s.events_after(4, 10).unwrap_err().code, 410);
    assert!(s.events_after(5, 10).unwrap().is_empty());
}

#[test]
fn lists_at_a_past_revision_undo_later_writes() {
    let (s, cms) = store(100);
    s.create_at(cms, Some("a"), cm("x")).unwrap();
    s.create_at(cms, Some("a"), cm("y")).unwrap();
    s.patch_at(
        cms,
        Some("a"),
        "x",
        PatchType::Merge,
        &json!({"data": {"k": "v"}}),
        false,
    )
    .unwrap();
    s.delete_at(cms, Some("a"), "y", None, None).unwrap();
    s.create_at(cms, Some("a"), cm("z")).unwrap();
    let at2 = s.list_page(cms, None, Some(2), None, 0, |_| true).unwrap();
    let keys: Vec<(String, u64)> = at2.items.iter().map(|o| (o.key(), o.revision)).collect();
    assert_eq!(keys, vec![("a/x".into(), 1), ("a/y".into(), 2)]);
    let page = s
        .list_page(cms, None, Some(2), Some("a/x"), 1, |_| true)
        .unwrap();
    assert_eq!(page.items[0].key(), "a/y");
    assert_eq!(page.more_after, None);
    let first = s
        .list_page(cms, Some("a"), None, None, 1, |_| true)
        .unwrap();
    assert_eq!(first.more_after.as_deref(), Some("a/x"));
    assert!(
        s.list_page(cms, Some("b"), None, None, 0, |_| true)
            .unwrap()
            .items
            .is_empty()
    );
    assert_eq!(
        s.list_page(cms, None, Some(99), None, 0, |_| true)
            .unwrap_err()
            .code,
        504
    );
}

#[test]
fn identical_updates_write_nothing() {
    let (s, cms) = store(100);
    let o = s.create_at(cms, Some("a"), cm("x")).unwrap();
    let same = s
        .update_at(cms, Some("a"), "x", o.to_value().unwrap(), false)
        .unwrap();
    assert_eq!(same.revision, 1);
    assert_eq!(s.revision(), 1);
}

#[test]
fn finalizers_hold_a_deleted_object_until_the_last_is_removed() {
    let (s, cms) = store(100);
    s.create_at(
        cms,
        Some("a"),
        json!({"metadata": {"name": "x", "finalizers": ["f1", "f2"]}}),
    )
    .unwrap();
    let marked = s.delete_at(cms, Some("a"), "x", None, None).unwrap();
    assert!(marked.to_value().unwrap()["metadata"]["deletionTimestamp"].is_string());
    assert!(s.get_at(cms, Some("a"), "x").is_some());
    s.patch_at(
        cms,
        Some("a"),
        "x",
        PatchType::Merge,
        &json!({"metadata": {"finalizers": ["f2"]}}),
        false,
    )
    .unwrap();
    assert!(s.get_at(cms, Some("a"), "x").is_some());
    s.patch_at(
        cms,
        Some("a"),
        "x",
        PatchType::Merge,
        &json!({"metadata": {"finalizers": []}}),
        false,
    )
    .unwrap();
    assert!(s.get_at(cms, Some("a"), "x").is_none());
    assert_eq!(s.events_after(3, 10).unwrap()[0].kind, EventType::Deleted);
}

#[test]
fn strategic_merge_directives_are_not_stored() {
    let (s, cms) = store(100);
    s.create_at(
        cms,
        Some("a"),
        json!({"metadata": {"name": "x"}, "data": {"k": "v", "old": "1"}}),
    )
    .unwrap();
    let patch = json!({
        "$setElementOrder/items": [{"name": "a"}],
        "metadata": {"labels": {"l": "1"}, "$retainKeys": ["labels"]},
        "data": {"k": "w", "$deleteFromPrimitiveList/x": ["y"]},
        "binaryData": {"$patch": "delete"},
    });
    let o = s
        .patch_at(
            cms,
            Some("a"),
            "x",
            PatchType::StrategicMerge,
            &patch,
            false,
        )
        .unwrap()
        .to_value()
        .unwrap();
    assert_eq!(o["data"], json!({"k": "w", "old": "1"}));
    assert_eq!(o["metadata"]["labels"], json!({"l": "1"}));
    assert!(o.get("$setElementOrder/items").is_none(), "{o}");
    assert!(o.get("binaryData").is_none(), "{o}");
}

#[test]
fn namespaces_in_use_names_each_namespace_with_its_oldest_object() {
    let (s, cms) = store(100);
    let (pods, _) = s.resolve("pods").unwrap();
    let (nss, _) = s.resolve("namespaces").unwrap();
    s.create_at(pods, Some("b"), cm("p")).unwrap();
    s.create_at(cms, Some("a"), cm("x")).unwrap();
    s.create_at(cms, Some("b"), cm("y")).unwrap();
    s.create_at(nss, None, cm("c")).unwrap();
    let used = s.namespaces_in_use();
    let seen: Vec<(&str, u64)> = used.iter().map(|(n, o)| (n.as_str(), o.revision)).collect();
    assert_eq!(seen, [("a", 2), ("b", 1)]);
    assert!(s.namespace_object_exists("c") && !s.namespace_object_exists("a"));
}

#[test]
fn objects_are_encoded_in_protobuf_at_the_write_when_configured() {
    let s = Store::new(
        ResourceDef::builtins(),
        StoreConfig {
            encode_protobuf: true,
            ..StoreConfig::default()
        },
    );
    let (ridx, _) = s.resolve("configmaps").unwrap();
    let stored = s.create_at(ridx, Some("default"), cm("a")).unwrap();
    // Already encoded: the same bytes as an encoding of the stored JSON.
    let encoded = stored.encoded_protobuf().unwrap().clone();
    let v = stored.to_value().unwrap();
    let expected = kinformer_protobuf::to_message(&v, "v1", "ConfigMap").unwrap();
    assert_eq!(&encoded[..], &expected[..]);
    // An update too (encoded from the written value, not from its JSON bytes read back).
    let updated = s
        .update_at(
            ridx,
            Some("default"),
            "a",
            json!({"metadata": {"name": "a"}, "data": {"k": "v"}}),
            false,
        )
        .unwrap();
    let again = kinformer_protobuf::to_message(&updated.to_value().unwrap(), "v1", "ConfigMap");
    assert_eq!(
        &updated.encoded_protobuf().unwrap()[..],
        &again.unwrap()[..]
    );
    assert_ne!(updated.encoded_protobuf(), Some(&encoded));
    let back: Value = kinformer_protobuf::from_slice(&kinformer_protobuf::Envelope::encode(
        "v1",
        "ConfigMap",
        &encoded,
    ))
    .unwrap();
    assert_eq!(back["metadata"]["name"], "a");
}

#[test]
fn objects_are_encoded_in_protobuf_at_the_first_protobuf_read_by_default() {
    let (s, ridx) = store(10);
    let stored = s.create_at(ridx, Some("default"), cm("a")).unwrap();
    assert!(stored.encoded_protobuf().is_none());
    let first = stored.protobuf("v1", "ConfigMap").unwrap().clone();
    assert_eq!(stored.encoded_protobuf(), Some(&first));
    assert_eq!(stored.protobuf("v1", "ConfigMap").unwrap(), &first);
}
