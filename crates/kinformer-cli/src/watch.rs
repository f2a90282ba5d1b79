//! `kinformer watch RESOURCE`: mirror any resource into an informer and print its events as
//! they arrive (`kubectl get -w` style, or JSON lines), with optional indexes and a periodic
//! cache summary.
//!
//! The informer is lean: objects are `Lazy<DynamicObject>`s, their metadata parsed and their
//! bodies kept as they arrived (protobuf for built-in kinds by default, JSON otherwise), so the
//! cache holds bytes, not decoded trees. Events wait to be printed as keys: an added or
//! modified object is read from the cache when its line is printed (so after a burst of
//! changes to one object, its lines show its state at printing time; one deleted meanwhile
//! prints only its deletion), a deleted one is kept with its event. Text output reads the
//! metadata only; JSON output writes a JSON body as it arrived and converts a protobuf body
//! when it prints it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use clap::{Args, ValueEnum};
use kinformer::cache::listwatch::Selectors;
use kinformer::cache::reflector::{MAX_RETRY_AFTER, ReflectorError};
use kinformer::cache::store::{
    IndexFunc, Indexers, NAMESPACE_INDEX, label_index_func, namespace_index_func,
};
use kinformer::cache::{
    DeletedObject, HandlerOptions, HasSynced, Lazy, ObjectKey, ReadOnlyIndexer,
    ResourceEventHandler, SharedInformerFactory, meta_namespace_key,
};
use kinformer::kube::Wire;
use kube::core::{ApiResource, DynamicObject};
use kube::discovery::{Discovery, Scope};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::demo::connect::ConnectArgs;
use crate::store_mode::StoreMode;

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Output {
    /// One line per event: type, namespace/name, resourceVersion.
    Text,
    /// One JSON object per line: `{"type": ..., "object": ...}`.
    Json,
}

/// Options of `kinformer watch`.
#[derive(Debug, Args)]
pub struct WatchArgs {
    /// The resource: plural, singular, kind or short name, optionally `plural.group`
    /// (`pods`, `po`, `Deployment`, `deployments.apps`).
    resource: String,
    /// Only this namespace (default: all namespaces).
    #[arg(long, short = 'n')]
    namespace: Option<String>,
    /// Label selector, e.g. `app=web`.
    #[arg(long, short = 'l')]
    selector: Option<String>,
    /// Field selector, e.g. `metadata.name=web-0`.
    #[arg(long)]
    field_selector: Option<String>,
    /// Indexes to keep and summarise: `namespace` or `label:KEY` (repeatable).
    #[arg(long = "index")]
    indexes: Vec<String>,
    /// Output format.
    #[arg(long, short = 'o', value_enum, default_value_t = Output::Text)]
    output: Output,
    /// Seconds between cache summaries on stderr (0: none; at most a year).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(0..=crate::args::MAX_SECS))]
    summary_secs: u64,
    /// How the informer keeps objects: typed (the bodies as they arrived), or compact
    /// (compressed, a fraction of the memory; events still carry the objects as they
    /// arrived).
    #[arg(long, value_enum, default_value_t = StoreMode::Typed)]
    store: StoreMode,
    /// Stop after this many seconds, fractions allowed (default: until Ctrl-C; at most a
    /// year).
    #[arg(long, value_parser = crate::args::parse_secs)]
    duration_secs: Option<Duration>,
    /// Wire format to ask for: protobuf (built-in kinds; the default) or json.
    #[arg(long, default_value_t = Wire::Protobuf, value_parser = crate::demo::parse_wire)]
    wire: Wire,
    /// Seconds to wait for the first full list before giving up with the last error (0: as
    /// long as it takes). The default outlasts the longest wait between attempts: the
    /// backoff's 30 s ceiling (up to 60 s with its jitter) or a server's Retry-After (honoured
    /// up to 30 s).
    #[arg(long, default_value_t = DEFAULT_SYNC_TIMEOUT_SECS, value_parser = clap::value_parser!(u64).range(0..=crate::args::MAX_SECS))]
    sync_timeout: u64,
    #[command(flatten)]
    connect: ConnectArgs,
}

/// Why watching could not start.
#[derive(Debug, thiserror::Error)]
enum WatchError {
    #[error(transparent)]
    Connect(#[from] crate::demo::connect::ConnectError),
    #[error("{0}")]
    Kube(#[from] kube::Error),
    #[error("cannot reach the API server at {url}: {source}")]
    Unreachable { url: String, source: kube::Error },
    #[error("unknown resource {0:?}")]
    UnknownResource(String),
    #[error("bad --index {0:?}: use `namespace` or `label:KEY`")]
    BadIndex(String),
    #[error(transparent)]
    Informer(#[from] kinformer::cache::InformerError),
    #[error("{url}: {source}")]
    NoSync {
        url: String,
        source: kinformer::cache::CacheSyncTimeout,
    },
}

/// How long `watch` waits by default for its informer's first sync before giving up with the
/// last error: twice the longest wait between two attempts.
const DEFAULT_SYNC_TIMEOUT_SECS: u64 = 120;

/// Runs `kinformer watch`. Returns the exit code.
pub fn run(args: WatchArgs) -> i32 {
    crate::args::init_logging("warn");
    crate::args::run_to_exit_code(watch(args))
}

/// What an error before the first sync means for the wait: the server's answer and when the
/// next attempt comes if the server said, or the error (logged in full beside it).
fn why_waiting(e: &ReflectorError) -> String {
    let code = e
        .list_watch_error()
        .and_then(|e| e.status())
        .map(|s| s.code);
    match (e.retry_after(), code) {
        (Some(asked), Some(code)) => format!(
            "{code} from the server, which asks to retry after {} s; retrying in {} s",
            asked.as_secs(),
            asked.min(MAX_RETRY_AFTER).as_secs().max(1)
        ),
        _ => format!("{e}; retrying with backoff"),
    }
}

/// Short names of common built-in resources (discovery does not return them).
const SHORT_NAMES: &[(&str, &str)] = &[
    ("po", "pods"),
    ("svc", "services"),
    ("cm", "configmaps"),
    ("ns", "namespaces"),
    ("no", "nodes"),
    ("deploy", "deployments"),
    ("rs", "replicasets"),
    ("sts", "statefulsets"),
    ("ds", "daemonsets"),
    ("ep", "endpoints"),
    ("sa", "serviceaccounts"),
    ("ev", "events"),
];

/// Whether `name` designates the resource.
fn matches(name: &str, ar: &ApiResource) -> bool {
    let name = SHORT_NAMES
        .iter()
        .find(|(s, _)| *s == name)
        .map_or(name, |(_, p)| *p);
    if let Some((plural, group)) = name.split_once('.') {
        return plural == ar.plural && group == ar.group;
    }
    name == ar.plural || name.eq_ignore_ascii_case(&ar.kind)
}

/// The objects `watch` mirrors.
type Object = Lazy<DynamicObject>;

fn parse_index(spec: &str) -> Result<(String, IndexFunc<Object>), WatchError> {
    if spec == NAMESPACE_INDEX {
        return Ok((NAMESPACE_INDEX.to_owned(), namespace_index_func()));
    }
    match spec.strip_prefix("label:") {
        Some(key) if !key.is_empty() => Ok((spec.to_owned(), label_index_func(key))),
        _ => Err(WatchError::BadIndex(spec.to_owned())),
    }
}

/// An event waiting to be printed: a key (the object is read from the cache when printed),
/// or a deleted object.
enum Event {
    Added(ObjectKey, bool),
    Modified(ObjectKey),
    Deleted(Arc<Object>, bool),
}

struct Forward(mpsc::UnboundedSender<Event>);

impl ResourceEventHandler<Object> for Forward {
    fn on_add(&self, obj: &Arc<Object>, initial: bool) {
        if let Ok(key) = meta_namespace_key(obj.as_ref()) {
            let _ = self.0.send(Event::Added(key, initial));
        }
    }
    fn on_update(&self, _old: &Arc<Object>, new: &Arc<Object>) {
        if let Ok(key) = meta_namespace_key(new.as_ref()) {
            let _ = self.0.send(Event::Modified(key));
        }
    }
    fn on_delete(&self, obj: &DeletedObject<Object>) {
        let _ = self
            .0
            .send(Event::Deleted(obj.object().clone(), obj.is_tombstone()));
    }
}

/// Writes one event to stdout, reading an added or modified object from `cache` (nothing is
/// printed for one deleted since: its deletion follows). An error (a closed pipe: `kinformer
/// watch ... | head -1`) ends the watch; a body that does not convert to JSON is reported on
/// stderr and skipped.
fn print(event: &Event, cache: &ReadOnlyIndexer<Object>, output: Output) -> std::io::Result<()> {
    use kube::Resource;
    use std::io::Write;
    let read = |key: &ObjectKey| cache.get_by_key(key.as_str());
    let (kind, obj, note) = match event {
        Event::Added(key, initial) => match read(key) {
            Some(o) => ("ADDED", o, if *initial { " (initial list)" } else { "" }),
            None => return Ok(()),
        },
        Event::Modified(key) => match read(key) {
            Some(o) => ("MODIFIED", o, ""),
            None => return Ok(()),
        },
        Event::Deleted(o, true) => ("DELETED", Arc::clone(o), " (missed; last known state)"),
        Event::Deleted(o, false) => ("DELETED", Arc::clone(o), ""),
    };
    let m = obj.meta();
    let mut out = std::io::stdout().lock();
    match output {
        Output::Text => writeln!(
            out,
            "{kind:<9} {}{}  rv={}{note}",
            m.namespace
                .as_deref()
                .map(|n| format!("{n}/"))
                .unwrap_or_default(),
            m.name.as_deref().unwrap_or_default(),
            m.resource_version.as_deref().unwrap_or_default(),
        ),
        Output::Json => match obj.json() {
            // The body as it arrived (or converted from protobuf), not decoded.
            Ok(body) => writeln!(out, "{{\"type\":\"{kind}\",\"object\":{body}}}"),
            Err(e) => {
                eprintln!(
                    "error: {kind} {}: the object does not convert to JSON: {e}",
                    m.name.as_deref().unwrap_or_default()
                );
                Ok(())
            }
        },
    }
}

async fn watch(args: WatchArgs) -> Result<(), WatchError> {
    let mut config = args
        .connect
        .config(true)
        .await?
        .ok_or_else(|| WatchError::UnknownResource(args.resource.clone()))?;
    config.default_retry = false;
    let url = config.cluster_url.to_string();
    let client = kube::Client::try_from(config)?;
    let discovery = Discovery::new(client.clone())
        .run()
        .await
        .map_err(|source| WatchError::Unreachable {
            url: url.clone(),
            source,
        })?;
    let (ar, caps) = discovery
        .groups()
        .flat_map(|g| g.recommended_resources())
        .find(|(ar, _)| matches(&args.resource, ar))
        .ok_or_else(|| WatchError::UnknownResource(args.resource.clone()))?;
    let mut factory = SharedInformerFactory::new(client)
        .with_wire(args.wire)
        .with_selectors(Selectors {
            label_selector: args.selector.clone(),
            field_selector: args.field_selector.clone(),
        })
        .with_storage::<Object>(args.store.storage(0));
    if let (Some(ns), Scope::Namespaced) = (&args.namespace, &caps.scope) {
        factory = factory.with_namespace(ns.clone());
    }
    let informer = factory.dynamic_lazy_informer(&ar);
    let mut indexers = Indexers::new();
    for spec in &args.indexes {
        let (name, f) = parse_index(spec)?;
        indexers.insert(name, f);
    }
    let index_names: Vec<String> = indexers.keys().cloned().collect();
    informer.add_indexers(indexers)?;
    let synced = Arc::new(AtomicBool::new(false));
    informer.set_watch_error_handler({
        let synced = Arc::clone(&synced);
        move |e| {
            if !synced.load(Ordering::Acquire) {
                eprintln!("waiting for the first sync: {}", why_waiting(e));
            }
        }
    })?;
    let (tx, mut rx) = mpsc::unbounded_channel();
    // Sending on an unbounded channel never blocks.
    informer
        .add_event_handler_with_options(Forward(tx), HandlerOptions::new().nonblocking(true))?;

    let cancel = CancellationToken::new();
    factory.start(&cancel);
    eprintln!(
        "watching {} ({}/{}){}",
        ar.plural,
        if ar.group.is_empty() {
            "core"
        } else {
            &ar.group
        },
        ar.version,
        args.namespace
            .as_deref()
            .map(|n| format!(" in {n}"))
            .unwrap_or_default()
    );
    let started = std::time::Instant::now();
    if args.sync_timeout == 0 {
        informer.wait_synced().await;
    } else if let Err(source) = factory
        .wait_for_cache_sync_timeout(Duration::from_secs(args.sync_timeout))
        .await
    {
        factory.shutdown().await;
        return Err(WatchError::NoSync { url, source });
    }
    synced.store(true, Ordering::Release);
    eprintln!(
        "synced: {} objects in {} ms",
        informer.get_indexer().len(),
        started.elapsed().as_millis()
    );
    let stop = {
        let cancel = cancel.clone();
        let duration = args.duration_secs;
        async move {
            match duration {
                Some(d) => tokio::time::sleep(d).await,
                None => {
                    let _ = tokio::signal::ctrl_c().await;
                }
            }
            cancel.cancel();
        }
    };
    tokio::spawn(stop);
    let period = Duration::from_secs(args.summary_secs.max(1));
    let mut summary = crate::ticker::every(period, period);
    let mut events = 0u64;
    let cache = informer.get_indexer();
    loop {
        tokio::select! {
            () = cancel.cancelled() => break,
            e = rx.recv() => match e {
                Some(e) => {
                    events += 1;
                    if let Err(e) = print(&e, &cache, args.output) {
                        if e.kind() != std::io::ErrorKind::BrokenPipe {
                            eprintln!("error: cannot write to stdout: {e}");
                        }
                        break;
                    }
                }
                None => break,
            },
            _ = summary.tick(), if args.summary_secs > 0 => {
                let cache = informer.get_indexer();
                let m = informer.metrics().reflector;
                let mut line = format!(
                    "cache: {} objects, {events} events, resourceVersion {}; reflector: {} lists ({} failed), {} watches, {} watch events, {} errors",
                    cache.len(),
                    m.last_sync_resource_version,
                    m.lists,
                    m.list_failures,
                    m.watches,
                    m.events,
                    m.errors
                );
                for name in &index_names {
                    let mut values: Vec<(usize, String)> = cache
                        .list_index_func_values(name)
                        .into_iter()
                        .map(|v| (cache.index_keys(name, &v).map(|k| k.len()).unwrap_or(0), v))
                        .collect();
                    values.sort_by(|a, b| b.cmp(a));
                    let top: Vec<String> = values.iter().take(5).map(|(n, v)| format!("{v}={n}")).collect();
                    line.push_str(&format!("; {name}: {} values (top: {})", values.len(), top.join(", ")));
                }
                eprintln!("{line}");
            }
        }
    }
    factory.shutdown().await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_names() {
        let ar = ApiResource {
            group: "apps".into(),
            version: "v1".into(),
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            plural: "deployments".into(),
        };
        for n in [
            "deployments",
            "deploy",
            "Deployment",
            "deployment",
            "deployments.apps",
        ] {
            assert!(matches(n, &ar), "{n}");
        }
        for n in ["pods", "deployments.extensions", "dep"] {
            assert!(!matches(n, &ar), "{n}");
        }
    }

    #[test]
    fn index_specs() {
        assert_eq!(parse_index("namespace").unwrap().0, "namespace");
        assert_eq!(parse_index("label:app").unwrap().0, "label:app");
        assert!(parse_index("label:").is_err());
        assert!(parse_index("owner").is_err());
    }
}
