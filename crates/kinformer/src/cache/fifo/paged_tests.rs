//! The paged replace of both queues (the initial list page by page), through the traits the
//! informer uses.

use std::sync::Arc;

use futures::FutureExt;
use k8s_openapi::api::core::v1::Pod;

use crate::cache::fifo::{DeltaFifo, DeltaQueue, DeltaType, KnownObjects, Popped, RealFifo};
use crate::cache::meta::CacheError;
use crate::cache::store::Indexer;
use crate::test_support::pod_rv;

type Queue = Arc<dyn DeltaQueue<Pod>>;

/// Both queues, each over its own (empty) consumer store.
fn queues() -> Vec<(&'static str, Queue, Arc<Indexer<Pod>>)> {
    let real = Arc::new(Indexer::default());
    let delta = Arc::new(Indexer::default());
    vec![
        (
            "RealFifo",
            Arc::new(
                RealFifo::new().with_known_objects(Arc::clone(&real) as Arc<dyn KnownObjects<Pod>>),
            ) as Queue,
            real,
        ),
        (
            "DeltaFifo",
            Arc::new(
                DeltaFifo::new()
                    .with_known_objects(Arc::clone(&delta) as Arc<dyn KnownObjects<Pod>>),
            ) as Queue,
            delta,
        ),
    ]
}

/// Pops once; returns the deltas as (key name, type, is tombstone).
async fn pop(q: &Queue) -> Vec<(String, DeltaType, bool)> {
    let mut out = Vec::new();
    let mut f = |p: Popped<Pod>| {
        for d in &p.deltas {
            let name = d
                .object()
                .and_then(|o| o.metadata.name.clone())
                .unwrap_or_default();
            out.push((name, d.delta_type(), d.is_tombstone()));
        }
    };
    q.pop(&mut f).await.unwrap();
    out
}

async fn drain(q: &Queue) -> Vec<(String, DeltaType, bool)> {
    let mut all = Vec::new();
    while !q.is_empty() {
        all.extend(pop(q).await);
    }
    all
}

#[tokio::test]
async fn the_first_population_completes_at_the_finish_once_every_page_is_processed() {
    for (name, q, _) in queues() {
        assert!(q.begin_paged_replace(), "{name}");
        q.replace_page(vec![pod_rv("ns", "a", "5"), pod_rv("ns", "b", "5")])
            .unwrap();
        let first = drain(&q).await;
        assert_eq!(
            first,
            [
                ("a".into(), DeltaType::Replaced, false),
                ("b".into(), DeltaType::Replaced, false)
            ],
            "{name}: a page is queued at once, object by object"
        );
        assert!(!q.has_synced(), "{name}: not before the finish");
        q.replace_page(vec![pod_rv("ns", "c", "5")]).unwrap();
        q.finish_paged_replace("5").unwrap();
        assert!(!q.has_synced(), "{name}: c is still queued");
        assert_eq!(drain(&q).await.len(), 1, "{name}");
        assert!(q.has_synced(), "{name}");
        // Relists are atomic: no second paged replace.
        assert!(!q.begin_paged_replace(), "{name}");
        assert!(
            matches!(
                q.replace_page(vec![pod_rv("ns", "d", "6")]),
                Err(CacheError::NoPagedReplace)
            ),
            "{name}"
        );
    }
}

#[tokio::test]
async fn a_list_begun_again_tombstones_what_an_abandoned_one_left_and_the_new_one_lacks() {
    for (name, q, known) in queues() {
        // An attempt that failed after its first page: a and b reached the store.
        assert!(q.begin_paged_replace());
        q.replace_page(vec![pod_rv("ns", "a", "5"), pod_rv("ns", "b", "5")])
            .unwrap();
        drain(&q).await;
        for n in ["a", "b"] {
            known.add(pod_rv("ns", n, "5")).unwrap();
        }
        // Also queued but not yet popped: c.
        q.replace_page(vec![pod_rv("ns", "c", "5")]).unwrap();
        // The next attempt lists only b.
        assert!(
            q.begin_paged_replace(),
            "{name}: still the first population"
        );
        q.replace_page(vec![pod_rv("ns", "b", "7")]).unwrap();
        q.finish_paged_replace("7").unwrap();
        let mut rest = drain(&q).await;
        rest.sort_by_key(|(n, t, tomb)| (n.clone(), format!("{t:?}"), *tomb));
        assert_eq!(
            rest,
            [
                ("a".into(), DeltaType::Deleted, true),
                ("b".into(), DeltaType::Replaced, false),
                ("c".into(), DeltaType::Deleted, true),
                ("c".into(), DeltaType::Replaced, false),
            ],
            "{name}"
        );
        assert!(q.has_synced(), "{name}");
    }
}

#[tokio::test]
async fn room_for_a_page_waits_for_the_consumer() {
    for (name, q, _) in queues() {
        assert!(q.begin_paged_replace());
        let page: Vec<_> = (0..3)
            .map(|i| pod_rv("ns", &format!("p{i}"), "5"))
            .collect();
        q.replace_page(page).unwrap();
        assert!(
            q.room_for(2).now_or_never().is_none(),
            "{name}: three items wait"
        );
        assert!(q.room_for(4).now_or_never().is_some(), "{name}");
        let waiting = tokio::spawn({
            let q = Arc::clone(&q);
            async move { q.room_for(2).await }
        });
        drain(&q).await;
        tokio::time::timeout(std::time::Duration::from_secs(5), waiting)
            .await
            .expect("a pop made room")
            .unwrap();
        // A closed queue never holds the reflector back.
        q.close();
        assert!(q.room_for(0).now_or_never().is_some(), "{name}");
    }
}
