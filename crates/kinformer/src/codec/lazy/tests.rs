use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use kube_core::Resource;

use crate::cache::meta::Lazy;
use crate::cache::store::{
    CompactOptions, Indexer, NAMESPACE_INDEX, label_index_func, namespace_index_func,
};

const POD: &str = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-0","namespace":"ns","resourceVersion":"7","labels":{"app":"web"},"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web","uid":"u1","controller":true}],"managedFields":[{"manager":"kubectl","operation":"Update"}]},"spec":{"containers":[{"name":"app","image":"nginx"}]}}"#;

#[test]
fn metadata_is_parsed_without_managed_fields_and_the_body_is_kept_verbatim() {
    let pod: Lazy<Pod> = serde_json::from_str(POD).unwrap();
    let meta = pod.meta();
    assert_eq!(meta.name.as_deref(), Some("web-0"));
    assert_eq!(meta.namespace.as_deref(), Some("ns"));
    assert_eq!(meta.resource_version.as_deref(), Some("7"));
    assert_eq!(meta.labels.as_ref().unwrap()["app"], "web");
    assert_eq!(meta.owner_references.as_ref().unwrap()[0].uid, "u1");
    assert!(meta.managed_fields.is_none());
    assert_eq!(pod.json().unwrap(), POD);
    assert_eq!(serde_json::to_string(&pod).unwrap(), POD);
    assert!(!pod.is_decoded());
}

#[test]
fn object_decodes_once_and_returns_the_same_arc() {
    let pod: Lazy<Pod> = serde_json::from_str(POD).unwrap();
    let a = pod.object().unwrap();
    let b = pod.object().unwrap();
    assert!(Arc::ptr_eq(&a, &b));
    assert_eq!(
        a.metadata.managed_fields.as_ref().unwrap()[0]
            .manager
            .as_deref(),
        Some("kubectl")
    );
    assert!(pod.is_decoded());
}

#[test]
fn a_body_that_is_not_a_valid_object_fails_when_read_with_its_name() {
    let json = r#"{"metadata":{"name":"bad","namespace":"ns"},"spec":{"containers":"nope"}}"#;
    let pod: Lazy<Pod> = serde_json::from_str(json).unwrap();
    let err = pod.object().unwrap_err();
    assert_eq!(err.name.as_deref(), Some("bad"));
    assert!(pod.object().is_err(), "the error is kept");
}

#[test]
fn malformed_metadata_or_a_non_object_is_a_decode_error() {
    for bad in [
        r#"[1,2]"#,
        r#"[{"name":"read-as-metadata"}]"#,
        r#""pod""#,
        r#"{"metadata":{"name":5}}"#,
        r#"{"metadata":{"labels":{"a":1}}}"#,
    ] {
        assert!(serde_json::from_str::<Lazy<Pod>>(bad).is_err(), "{bad}");
    }
}

#[test]
fn the_metadata_of_checked_json_is_read_up_to_its_end_and_no_further() {
    // What follows `metadata` is not read: even text that is not JSON (which a validating
    // parser splitting lists and events never hands over) is left alone.
    let view = super::meta::metadata_first(
        r#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","labels":{"x":"1"}},"spec":nope"#,
    )
    .unwrap();
    let meta = k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta::from(view);
    assert_eq!(meta.name.as_deref(), Some("a"));
    assert_eq!(meta.labels.unwrap()["x"], "1");
    // Metadata last, or none at all.
    let last =
        super::meta::metadata_first(r#"{"spec":{"a":[1,{"b":"}"}]},"metadata":{"name":"z"}}"#);
    let last = k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta::from(last.unwrap());
    assert_eq!(last.name.as_deref(), Some("z"));
    let none = super::meta::metadata_first(r#"{"spec":{}}"#).unwrap();
    assert!(
        k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta::from(none)
            .name
            .is_none()
    );
    // Malformed metadata is still an error, and so is a bad member before it.
    for bad in [
        r#"{"metadata":{"name":5},"spec":{}}"#,
        r#"{"metadata":{"labels":{"a":1}}}"#,
        r#"{"spec":nope,"metadata":{"name":"a"}}"#,
        r#"{"metadata":"#,
    ] {
        assert!(super::meta::metadata_first(bad).is_err(), "{bad}");
    }
    // Text nobody checked is read whole.
    assert!(Lazy::<Pod>::from_json(r#"{"metadata":{"name":"a"},"spec":nope"#).is_err());
}

#[test]
fn metadata_edits_are_written_into_the_body_keeping_managed_fields() {
    let mut pod: Lazy<Pod> = serde_json::from_str(POD).unwrap();
    pod.meta_mut()
        .labels
        .get_or_insert_with(Default::default)
        .insert("tier".into(), "t1".into());
    pod.meta_mut().annotations = Some([("a".to_string(), "b".to_string())].into());
    let full = pod.object().unwrap();
    let labels = full.metadata.labels.as_ref().unwrap();
    assert_eq!(labels["tier"], "t1");
    assert_eq!(labels["app"], "web");
    assert_eq!(full.metadata.annotations.as_ref().unwrap()["a"], "b");
    assert_eq!(full.metadata.managed_fields.as_ref().unwrap().len(), 1);
    assert_eq!(
        full.spec.as_ref().unwrap().containers[0].image.as_deref(),
        Some("nginx")
    );
    let again: Lazy<Pod> = serde_json::from_str(&serde_json::to_string(&pod).unwrap()).unwrap();
    assert_eq!(again.meta().labels.as_ref().unwrap()["tier"], "t1");
}

#[test]
fn binary_formats_carry_the_json_body_as_bytes() {
    let pod: Lazy<Pod> = serde_json::from_str(POD).unwrap();
    let bytes = rmp_serde::to_vec_named(&pod).unwrap();
    let back: Lazy<Pod> = rmp_serde::from_slice(&bytes).unwrap();
    assert_eq!(back, pod);
    assert_eq!(back.meta().name.as_deref(), Some("web-0"));
}

#[test]
fn from_object_is_already_decoded() {
    let mut p = Pod::default();
    p.metadata.name = Some("x".into());
    let p = Arc::new(p);
    let lazy = Lazy::from_object(Arc::clone(&p)).unwrap();
    assert!(lazy.is_decoded());
    assert!(Arc::ptr_eq(&lazy.object().unwrap(), &p));
    assert_eq!(lazy.meta().name.as_deref(), Some("x"));
}

#[test]
fn a_compact_indexer_of_lazy_objects_indexes_by_metadata_and_never_fully_decodes() {
    let indexer = Indexer::<Lazy<Pod>>::compact(
        [
            (NAMESPACE_INDEX.to_string(), namespace_index_func()),
            ("app".to_string(), label_index_func("app")),
        ]
        .into(),
        CompactOptions::default().train_after(10),
    )
    .unwrap();
    let mut stored = Vec::new();
    for i in 0..50 {
        let json = POD
            .replace("web-0", &format!("web-{i}"))
            .replace(r#""app":"web""#, &format!(r#""app":"a{}""#, i % 5));
        let lazy: Lazy<Pod> = serde_json::from_str(&json).unwrap();
        indexer.add(Arc::new(lazy.clone())).unwrap();
        stored.push(lazy);
    }
    assert!(
        indexer.compact_dictionary_len().is_some(),
        "dictionary trained"
    );
    let got = indexer.get_by_key("ns/web-7").unwrap();
    assert_eq!(*got, stored[7]);
    assert!(!got.is_decoded());
    let app2 = indexer.by_index("app", "a2").unwrap();
    assert_eq!(app2.len(), 10);
    assert!(app2.iter().all(|o| !o.is_decoded()));
    // An update moves the object between index values (the old object decoded from storage).
    let moved: Lazy<Pod> =
        serde_json::from_str(&POD.replace(r#""app":"web""#, r#""app":"a2""#)).unwrap();
    let up = indexer.upsert(Arc::new(moved)).unwrap();
    assert_eq!(up.old.unwrap().meta().labels.as_ref().unwrap()["app"], "a0");
    assert_eq!(indexer.by_index("app", "a2").unwrap().len(), 11);
}

#[test]
fn an_update_in_compact_storage_reads_the_old_objects_metadata_only_if_asked() {
    let indexer = Indexer::<Lazy<Pod>>::compact(
        [("app".to_string(), label_index_func("app"))].into(),
        CompactOptions::default().train_after(10),
    )
    .unwrap();
    let version = |rv: &str, app: &str| -> Arc<Lazy<Pod>> {
        let json = POD
            .replace(
                r#""resourceVersion":"7""#,
                &format!(r#""resourceVersion":"{rv}""#),
            )
            .replace(r#""app":"web""#, &format!(r#""app":"{app}""#));
        Arc::new(serde_json::from_str(&json).unwrap())
    };
    for (i, trained) in [(0, false), (1, true)] {
        if trained {
            for n in 0..20 {
                let other = POD.replace("web-0", &format!("other-{n}"));
                indexer
                    .add(Arc::new(serde_json::from_str(&other).unwrap()))
                    .unwrap();
            }
            assert!(indexer.compact_dictionary_len().is_some());
        }
        indexer.add(version(&format!("{i}0"), "a")).unwrap();
        // A new resourceVersion: an update, not a sync, told without parsing the old object.
        let up = indexer.upsert(version(&format!("{i}1"), "b")).unwrap();
        assert!(!up.is_sync());
        let old = up.old.unwrap();
        assert!(!old.meta_parsed());
        assert!(!old.body_read(), "not even decompressed");
        // Read when asked, from the stored bytes.
        assert_eq!(old.meta().labels.as_ref().unwrap()["app"], "a");
        assert_eq!(
            old.meta().resource_version.as_deref(),
            Some(format!("{i}0").as_str())
        );
        // The same resourceVersion with other bytes: a sync, again without a parse.
        let up = indexer.upsert(version(&format!("{i}1"), "c")).unwrap();
        assert!(up.is_sync());
        assert!(!up.old.unwrap().body_read());
        assert_eq!(indexer.by_index("app", "c").unwrap().len(), 1);
        assert!(indexer.by_index("app", "b").unwrap().is_empty());
    }
}

/// A stored body that counts its reads and gives `body` (or fails).
struct Counted {
    reads: std::sync::atomic::AtomicUsize,
    body: Option<&'static str>,
}

impl super::StoredBody for Counted {
    fn read(&self) -> Result<Lazy<()>, String> {
        self.reads
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        match self.body {
            Some(json) => Lazy::from_json(json).map_err(|e| e.to_string()),
            None => Err("ns/web-0: zstd: corrupt".to_owned()),
        }
    }
}

#[test]
fn a_body_left_in_storage_is_read_once_when_first_needed() {
    let stored = Arc::new(Counted {
        reads: Default::default(),
        body: Some(POD),
    });
    let reads = || stored.reads.load(std::sync::atomic::Ordering::Relaxed);
    let lazy: Lazy<Pod> =
        super::deferred(|| Arc::clone(&stored) as Arc<dyn super::StoredBody>).unwrap();
    let copy = lazy.clone();
    assert_eq!(reads(), 0);
    assert_eq!(lazy.meta().name.as_deref(), Some("web-0"));
    assert_eq!(lazy.json().unwrap(), POD);
    assert_eq!(
        lazy.object().unwrap().spec.as_ref().unwrap().containers[0]
            .image
            .as_deref(),
        Some("nginx")
    );
    assert_eq!(
        reads(),
        1,
        "one read for the metadata, the body and the decode"
    );
    // A clone made before the read shares the stored body, and reads it itself.
    assert_eq!(copy, lazy);
    assert_eq!(reads(), 2);
    // Only a `Lazy` takes a stored body.
    assert!(
        super::deferred::<Pod>(|| unreachable!("no stored form made for a typed object")).is_none()
    );
}

#[test]
fn a_body_that_cannot_be_read_back_gives_empty_metadata_and_errors() {
    let stored = Arc::new(Counted {
        reads: Default::default(),
        body: None,
    });
    let lazy: Lazy<Pod> = super::deferred(|| stored as Arc<dyn super::StoredBody>).unwrap();
    assert!(lazy.meta().name.is_none());
    assert_eq!(lazy.body_len(), 0);
    assert!(!lazy.is_protobuf());
    let err = lazy.json().unwrap_err().to_string();
    assert!(err.contains("ns/web-0: zstd: corrupt"), "{err}");
    assert!(lazy.object().is_err());
    assert!(serde_json::to_string(&lazy).is_err());
}

#[test]
fn lazy_types_are_recognised_for_the_wire_choice() {
    assert!(super::keeps_bytes::<Lazy<Pod>>());
    assert!(super::keeps_bytes::<Lazy<kube_core::DynamicObject>>());
    assert!(!super::keeps_bytes::<Pod>());
    assert!(!super::keeps_bytes::<kube_core::DynamicObject>());
    assert!(!super::keeps_bytes::<Vec<Lazy<Pod>>>());
    assert!(!super::keeps_bytes::<Option<Lazy<Pod>>>());
}

#[cfg(feature = "protobuf")]
mod protobuf {
    use super::*;

    fn from_protobuf() -> (Lazy<Pod>, Vec<u8>) {
        let value: serde_json::Value = serde_json::from_str(POD).unwrap();
        let bytes = kinformer_protobuf::json_to_vec(&value).unwrap();
        (Lazy::from_protobuf(bytes.clone()).unwrap(), bytes)
    }

    #[test]
    fn a_protobuf_body_gives_the_same_metadata_and_object_as_its_json() {
        let (pb, _) = from_protobuf();
        let json: Lazy<Pod> = serde_json::from_str(POD).unwrap();
        assert!(pb.is_protobuf() && !json.is_protobuf());
        assert_eq!(pb.meta(), json.meta());
        assert!(pb.meta().managed_fields.is_none());
        assert!(!pb.is_decoded());
        assert_eq!(pb.object().unwrap(), json.object().unwrap());
        let as_json: serde_json::Value = serde_json::from_str(&pb.json().unwrap()).unwrap();
        assert_eq!(
            as_json,
            serde_json::from_str::<serde_json::Value>(POD).unwrap()
        );
    }

    #[test]
    fn binary_formats_keep_the_protobuf_bytes() {
        let (pb, bytes) = from_protobuf();
        assert_eq!(pb.body_len(), bytes.len());
        let stored = rmp_serde::to_vec_named(&pb).unwrap();
        let back: Lazy<Pod> = rmp_serde::from_slice(&stored).unwrap();
        assert!(back.is_protobuf());
        assert_eq!(back, pb);
        assert_eq!(back.meta().name.as_deref(), Some("web-0"));
    }

    #[test]
    fn a_metadata_edit_of_a_protobuf_body_is_kept_as_json() {
        let (mut pb, _) = from_protobuf();
        pb.meta_mut()
            .labels
            .get_or_insert_default()
            .insert("edited".into(), "yes".into());
        assert!(!pb.is_protobuf());
        let stored = rmp_serde::to_vec_named(&pb).unwrap();
        let back: Lazy<Pod> = rmp_serde::from_slice(&stored).unwrap();
        assert_eq!(back.meta().labels.as_ref().unwrap()["edited"], "yes");
        let pod = back.object().unwrap();
        assert_eq!(pod.metadata.labels.as_ref().unwrap()["edited"], "yes");
        assert_eq!(
            pod.spec.as_ref().unwrap().containers[0].image.as_deref(),
            Some("nginx")
        );
    }

    /// Metadata shapes whose protobuf and JSON forms differ most: zero and empty values Go's
    /// JSON omits, a pointer kept at zero, times, maps with empty values, owner references
    /// with and without their flags, and a realistic pod with managedFields.
    /// Each with whether it is in Go's JSON form (zero values that Go's JSON omits, which
    /// protobuf cannot tell from absent, are not).
    fn metadata_cases() -> Vec<(serde_json::Value, bool)> {
        let realistic: serde_json::Value = serde_json::from_str(include_str!(
            "../../../../kinformer-protobuf/tests/data/realistic-pod.json"
        ))
        .unwrap();
        let pod = |metadata: serde_json::Value| {
            serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": metadata,
                               "spec": {"containers": [{"name": "app"}]}})
        };
        vec![
            (realistic, true),
            (pod(serde_json::json!({})), true),
            (
                pod(serde_json::json!({"name": "", "namespace": "", "generation": 0, "uid": ""})),
                false,
            ),
            (
                pod(serde_json::json!({
                "name": "a", "generateName": "a-", "namespace": "ns", "uid": "u",
                "resourceVersion": "9", "generation": 4,
                "creationTimestamp": "2024-01-02T03:04:05Z",
                "deletionTimestamp": "1970-01-01T00:00:01Z", "deletionGracePeriodSeconds": 0,
                "labels": {"a": "", "b": "2"}, "annotations": {"": "x"},
                "ownerReferences": [
                    {"apiVersion": "v1", "kind": "Node", "name": "n", "uid": "",
                     "controller": false, "blockOwnerDeletion": true},
                    {"apiVersion": "", "kind": "", "name": "", "uid": ""}],
                "finalizers": ["x", ""],
                "managedFields": [{"manager": "m", "fieldsType": "FieldsV1",
                                   "fieldsV1": {"f:metadata": {}}}]})),
                true,
            ),
        ]
    }

    #[test]
    fn the_protobuf_metadata_parse_agrees_with_the_json_parse_and_the_schema_decode() {
        for (case, go_json) in metadata_cases() {
            let bytes = kinformer_protobuf::json_to_vec(&case).unwrap();
            let pb = Lazy::<Pod>::from_protobuf(bytes.clone()).unwrap();
            let schema: super::super::meta::Envelope =
                kinformer_protobuf::from_slice(&bytes).unwrap();
            let schema: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta =
                schema.metadata.into();
            assert_eq!(pb.meta(), &schema, "{case}");
            // The view is the full decode's metadata without managedFields.
            let mut full = pb.object().unwrap().metadata.clone();
            full.managed_fields = None;
            assert_eq!(pb.meta(), &full, "{case}");
            if !go_json {
                continue;
            }
            let json = Lazy::<Pod>::from_json(case.to_string()).unwrap();
            assert_eq!(pb.meta(), json.meta(), "{case}");
            // Read in full, both give the pod the JSON path gives.
            let typed: Pod = serde_json::from_value(case.clone()).unwrap();
            assert_eq!(*pb.object().unwrap(), typed, "{case}");
            assert_eq!(*json.object().unwrap(), typed, "{case}");
        }
    }

    #[test]
    fn bad_protobuf_bytes_are_errors() {
        assert!(Lazy::<Pod>::from_protobuf(b"k8s\0garbage".to_vec()).is_err());
        // MessagePack `bin 8` of a broken enveloped object: stored bytes are parsed when
        // read, so a corrupt one reads as an object without metadata (logged) that fails to
        // decode.
        let stored = [0xc4, 5, b'k', b'8', b's', 0, 1];
        let read = rmp_serde::from_slice::<Lazy<Pod>>(&stored).unwrap();
        assert_eq!(read.meta().name, None);
        assert!(read.object().is_err());
        // Bytes that are neither protobuf nor a JSON object are refused at once.
        let stored = [0xc4, 3, b'[', b'1', b']'];
        assert!(rmp_serde::from_slice::<Lazy<Pod>>(&stored).is_err());
    }
}
