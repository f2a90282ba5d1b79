//! The server as an instrument: kube-runtime's reflector converges to the server's state
//! through random faults.

// Helpers outside #[test] functions fail the test by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kinformer_apiserver::{
    Fault, FaultRule, ServerConfig, TestServer, bench_pod, bench_pod_update, seed_bench_pods,
};
use kube::api::Api;
use kube::runtime::{WatchStreamExt, reflector, watcher};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_runtime_reflector_converges_through_faults() {
    let mut config = ServerConfig::for_tests();
    config.store.max_events = 200;
    let server = TestServer::start_with(config).await.unwrap();
    seed_bench_pods(server.store(), 200).unwrap();
    server
        .faults()
        .apply_spec("seed=5,500@0.05,watch-gone@0.1,429:0@0.05,garble:3@0.1,truncate:5@0.1")
        .unwrap();
    // Every watch ends after at most 20 events, so the reflector re-watches all the time.
    server.faults().add_rule(FaultRule::random(
        Fault::CloseWatchRandom { max_events: 20 },
        1.0,
    ));

    let api: Api<Pod> = Api::all(server.client().unwrap());
    let (reader, writer) = reflector::store();
    let cfg = watcher::Config::default().page_size(50);
    let stream = reflector(writer, watcher(api, cfg))
        .default_backoff()
        .applied_objects();
    let task = tokio::spawn(async move {
        futures::pin_mut!(stream);
        while stream.next().await.is_some() {}
    });

    // Churn until enough faults have hit the reflector (bounded).
    let started = std::time::Instant::now();
    for k in 0u64.. {
        if (k >= 400 && server.faults().total() >= 15)
            || started.elapsed() > Duration::from_secs(20)
        {
            break;
        }
        let i = (k * 7 % 200) as usize;
        server
            .store()
            .update("pods", "", bench_pod_update(i, k))
            .unwrap();
        if k % 50 == 0 {
            server
                .store()
                .delete("pods", &format!("ns-{}", i % 100), &format!("pod-{i}"))
                .unwrap();
            server.store().create("pods", "", bench_pod(i)).unwrap();
        }
        if k % 10 == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
    server.faults().clear();
    // One final write so the cache has a change to catch up to.
    server
        .store()
        .update("pods", "", bench_pod_update(1, 9999))
        .unwrap();

    let want: BTreeMap<String, String> = server
        .store()
        .keys_and_versions("pods")
        .unwrap()
        .into_iter()
        .collect();
    let converged = tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            let have: BTreeMap<String, String> = reader
                .state()
                .iter()
                .map(|p| {
                    let m = &p.metadata;
                    (
                        format!(
                            "{}/{}",
                            m.namespace.clone().unwrap_or_default(),
                            m.name.clone().unwrap_or_default()
                        ),
                        m.resource_version.clone().unwrap_or_default(),
                    )
                })
                .collect();
            if have == want {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    task.abort();
    assert!(
        converged.is_ok(),
        "reflector did not converge to the server state"
    );
    assert!(
        server.faults().total() >= 15,
        "faults should have fired: {:?}",
        server.faults().counts()
    );
    eprintln!("faults fired: {:?}", server.faults().counts());
}
