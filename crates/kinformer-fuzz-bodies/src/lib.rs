//! The bodies of the fuzz targets (`fuzz/`, cargo-fuzz), in a crate of the main workspace so
//! that its test (`tests/corpus.rs`) runs every corpus file through them: the targets keep
//! compiling and the corpora keep passing without nightly.
//!
//! Each body feeds arbitrary bytes to one decoder or parser; a panic is a finding. Results are
//! checked where a property is cheap to state.

use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kinformer::cache::Selector;
use kinformer::cache::listwatch::{ListWatchError, WatchEvent};
use kinformer::kube::{decode_list, decode_watch_line};
use kinformer_apiserver::query::{Query, percent_decode};
use kinformer_apiserver::selector::FieldSelector;
use kinformer_apiserver::{ResourceDef, Store, StoreConfig};
use kube_core::DynamicObject;

/// Watch frames: each line through the kube adapter's line decoder, typed and dynamic.
pub fn watch_frame(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for line in text.lines() {
        let typed = decode_watch_line::<ConfigMap>(line);
        let dynamic = decode_watch_line::<DynamicObject>(line);
        if line.trim().is_empty() {
            assert!(typed.is_none() && dynamic.is_none());
        }
        // An object event comes only from a line whose type says so: nothing is invented.
        if let Some(Ok(WatchEvent::Added(_) | WatchEvent::Modified(_) | WatchEvent::Deleted(_))) =
            &typed
        {
            let v: serde_json::Value = serde_json::from_str(line).unwrap_or_default();
            let kind = v.get("type").and_then(serde_json::Value::as_str);
            assert!(
                matches!(kind, Some("ADDED" | "MODIFIED" | "DELETED")),
                "{line}"
            );
        }
        let _ = decode_watch_line::<Pod>(line);
    }
}

/// List bodies: decoded items plus undecodable ones never exceed the items in the body.
pub fn list_body(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match decode_list::<Pod>(text) {
        Ok(list) => {
            let total = list.items.len() + list.undecodable.len();
            // Counted from the raw items: a `serde_json::Value` refuses numbers beyond f64
            // (valid JSON, which the decoder skips in fields it does not know, as Go does).
            type Raw = Box<serde_json::value::RawValue>;
            let n = serde_json::from_str::<std::collections::HashMap<String, Raw>>(text)
                .ok()
                .and_then(|top| {
                    let items = top.get("items")?;
                    serde_json::from_str::<Option<Vec<Raw>>>(items.get()).ok()
                })
                .flatten()
                .map_or(0, |items| items.len());
            assert_eq!(total, n, "every item is either decoded or reported");
        }
        Err(e) => assert!(matches!(e, ListWatchError::Decode(_))),
    }
    let _ = decode_list::<DynamicObject>(text);
}

/// Label selectors (one parser, client and server side) and field selectors.
pub fn selectors(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let labels = [("app", "web"), ("tier", "")]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    if let Ok(s) = Selector::parse(text) {
        let _ = s.matches(Some(&labels));
        // What parses once parses again, to the same selector, from its own rendering.
        let again = Selector::parse(&s.to_string());
        assert!(again.as_ref() == Ok(&s), "{text:?} → {s} gives {again:?}");
    }
    if let Ok(f) = FieldSelector::parse(text) {
        let _ = f.matches_with(|_| Some("x".to_owned()));
    }
}

/// The server's query-string parsing.
pub fn query(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = percent_decode(text);
    if let Ok(q) = Query::parse(Some(text))
        && let Some(t) = q.timeout
    {
        assert!(t <= kinformer_apiserver::query::MAX_TIMEOUT);
    }
}

/// Request bodies: a create, then the same bytes as a merge patch, on a fresh store.
pub fn request_body(data: &[u8]) {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    let store = Store::new(ResourceDef::builtins(), StoreConfig::default());
    for resource in ["configmaps", "pods", "namespaces"] {
        if let Ok(created) = store.create(resource, "default", value.clone()) {
            let name = created["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            let _ = store.patch(resource, "default", &name, &value);
        }
    }
}
