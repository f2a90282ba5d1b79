//! `--metrics-addr`: Prometheus `/metrics` with the workqueue metrics (client-go's names) and
//! the informers', controller's and chaos' figures.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::routing::get;
use kinformer::workqueue::PrometheusMetricsProvider;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use tokio_util::sync::CancellationToken;

type Labels = Vec<(String, String)>;

/// The demo's metric families.
#[derive(Debug, Clone, Default)]
pub struct DemoMetrics {
    /// `kinformer_informer_objects{informer}`: objects in each informer cache.
    pub informer_objects: Family<Labels, Gauge>,
    /// `kinformer_informer_pending_notifications{informer}`: notifications buffered for the
    /// controller's handler.
    pub informer_pending: Family<Labels, Gauge>,
    /// `kinformer_controller_operations_total{op}`: syncs, requeues, conflicts, pod creations, ...
    pub controller: Family<Labels, Counter>,
    /// `kinformer_apiserver_faults_injected_total{fault}`.
    pub faults: Family<Labels, Counter>,
}

/// Brings a counter up to `total`, a monotonic count kept elsewhere (a counter never goes
/// down: a smaller `total` leaves it as it is).
pub fn advance(counter: &Counter, total: u64) {
    counter.inc_by(total.saturating_sub(counter.get()));
}

/// One label pair.
pub fn label(name: &str, value: &str) -> Labels {
    vec![(name.to_owned(), value.to_owned())]
}

/// Builds the registry: the workqueue provider (for the controller's queue) and the demo's
/// families.
pub fn registry() -> (Registry, PrometheusMetricsProvider, DemoMetrics) {
    let mut registry = Registry::default();
    let provider = PrometheusMetricsProvider::register(&mut registry);
    let demo = DemoMetrics::default();
    let r = registry.sub_registry_with_prefix("kinformer");
    r.register(
        "informer_objects",
        "Objects in the informer cache",
        demo.informer_objects.clone(),
    );
    r.register(
        "informer_pending_notifications",
        "Notifications buffered for the controller's handler",
        demo.informer_pending.clone(),
    );
    r.register(
        "controller_operations",
        "What the ReplicaSet controller did, by operation",
        demo.controller.clone(),
    );
    r.register(
        "apiserver_faults_injected",
        "Faults the embedded API server injected, by kind",
        demo.faults.clone(),
    );
    (registry, provider, demo)
}

/// Serves `GET /metrics` on `addr` until `cancel` fires.
///
/// # Errors
/// The bind error.
///
/// # Cancel safety
/// Cancel-safe: binding is the only await before the server task is spawned.
pub async fn serve(
    addr: SocketAddr,
    registry: Arc<Registry>,
    cancel: CancellationToken,
) -> std::io::Result<SocketAddr> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    let app = Router::new().route(
        "/metrics",
        get(move || {
            let registry = registry.clone();
            async move {
                let mut text = String::new();
                match prometheus_client::encoding::text::encode(&mut text, &registry) {
                    Ok(()) => (
                        [(
                            axum::http::header::CONTENT_TYPE,
                            "application/openmetrics-text; version=1.0.0; charset=utf-8",
                        )],
                        text,
                    ),
                    Err(e) => (
                        [(axum::http::header::CONTENT_TYPE, "text/plain")],
                        format!("# encoding failed: {e}\n"),
                    ),
                }
            }
        }),
    );
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app)
            .with_graceful_shutdown(cancel.cancelled_owned())
            .await
        {
            tracing::warn!(error = %e, "metrics server stopped");
        }
    });
    Ok(bound)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operations_and_faults_are_exported_as_counters() {
        let (registry, _provider, demo) = registry();
        let syncs = demo.controller.get_or_create(&label("op", "syncs"));
        advance(&syncs, 5);
        advance(&syncs, 3);
        advance(&syncs, 7);
        assert_eq!(syncs.get(), 7);
        advance(&demo.faults.get_or_create(&label("fault", "gone")), 2);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        assert!(
            text.contains("# TYPE kinformer_controller_operations counter"),
            "{text}"
        );
        assert!(
            text.contains("kinformer_controller_operations_total{op=\"syncs\"} 7"),
            "{text}"
        );
        assert!(
            text.contains("kinformer_apiserver_faults_injected_total{fault=\"gone\"} 2"),
            "{text}"
        );
    }
}
