//! Server settings, read by the server that starts and by the routes that answer.

use std::net::SocketAddr;
use std::time::Duration;

use crate::resource::ResourceDef;
use crate::store::StoreConfig;

/// Server settings. The defaults are kube-apiserver's where it has one; tests shorten the
/// intervals.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Address to bind; `127.0.0.1:0` by default (a free port on loopback only).
    pub bind: SocketAddr,
    /// History bounds.
    pub store: StoreConfig,
    /// Interval of BOOKMARK events on watches that allow them.
    pub bookmark_interval: Duration,
    /// Watch length when the client sends no `timeoutSeconds`.
    pub default_watch_timeout: Duration,
    /// How long a request for a future resourceVersion waits before 504.
    pub rv_wait: Duration,
    /// Largest accepted request body (413 beyond; Kubernetes' limit is 3 MiB).
    pub max_body_bytes: usize,
    /// A connection must send a request's headers within this time, and an idle keep-alive
    /// connection is closed after it (one hyper timer serves both). Never applies while a
    /// response (a watch) is being sent. 30 s by default.
    pub header_read_timeout: Duration,
    /// A request body must arrive within this time (408 `Timeout` otherwise). 60 s by default.
    pub body_read_timeout: Duration,
    /// Open connections at most. A connection beyond closes the oldest idle connection (one
    /// waiting for a request) and takes its place; only when none is idle is it answered
    /// `503 ServiceUnavailable` and closed. 1024 by default.
    pub max_connections: usize,
    /// Answer requests whatever their `Host` header (needed when binding a non-loopback
    /// address). Off by default: only loopback host names are answered (403 otherwise), which
    /// keeps web pages from reaching the server through DNS rebinding.
    pub allow_remote: bool,
    /// Seed of random faults.
    pub seed: u64,
    /// Resources served (the built-ins by default).
    pub resources: Vec<ResourceDef>,
    /// Refuse watch-list requests (`watch=true&sendInitialEvents=true`) with `422 Invalid`,
    /// as Kubernetes 1.26–1.31 do by default (the `WatchList` feature off). Off by default:
    /// watch-list is served. [`ApiServer::watch_lists_refused`](crate::ApiServer::watch_lists_refused)
    /// counts the refusals.
    pub no_watch_list: bool,
    /// Answer JSON whatever the client asks for, as a server without protobuf does (406 to a
    /// request that accepts protobuf only). Off by default: built-in kinds speak protobuf.
    pub json_only: bool,
    /// Answer a list at `resourceVersion=0` (without a continue token) as a real API server's
    /// watch cache does: everything in one response, whatever `limit` says. Off by default:
    /// such a list is paged like any other.
    pub watch_cache_lists: bool,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            bind: SocketAddr::from(([127, 0, 0, 1], 0)),
            store: StoreConfig::default(),
            bookmark_interval: Duration::from_secs(60),
            default_watch_timeout: Duration::from_secs(1800),
            rv_wait: Duration::from_secs(1),
            max_body_bytes: 3 * 1024 * 1024,
            header_read_timeout: Duration::from_secs(30),
            body_read_timeout: Duration::from_secs(60),
            max_connections: 1024,
            allow_remote: false,
            seed: 0,
            resources: ResourceDef::builtins(),
            no_watch_list: false,
            json_only: false,
            watch_cache_lists: false,
        }
    }
}

impl ServerConfig {
    /// Settings for fast tests: bookmarks every 100 ms, 200 ms wait for future revisions.
    pub fn for_tests() -> Self {
        Self {
            bookmark_interval: Duration::from_millis(100),
            rv_wait: Duration::from_millis(200),
            ..Self::default()
        }
    }

    /// Answers any `Host` header (see [`ServerConfig::allow_remote`]).
    #[must_use]
    pub fn with_allow_remote(mut self, allow: bool) -> Self {
        self.allow_remote = allow;
        self
    }

    /// Refuses watch-list requests as Kubernetes 1.26–1.31 do (see
    /// [`ServerConfig::no_watch_list`]).
    #[must_use]
    pub fn with_no_watch_list(mut self, refuse: bool) -> Self {
        self.no_watch_list = refuse;
        self
    }

    /// Answers JSON only (see [`ServerConfig::json_only`]).
    #[must_use]
    pub fn with_json_only(mut self, json_only: bool) -> Self {
        self.json_only = json_only;
        self
    }

    /// Answers lists at `resourceVersion=0` in one response (see
    /// [`ServerConfig::watch_cache_lists`]).
    #[must_use]
    pub fn with_watch_cache_lists(mut self, on: bool) -> Self {
        self.watch_cache_lists = on;
        self
    }

    /// Adds a resource (e.g. a custom resource) to serve.
    #[must_use]
    pub fn with_resource(mut self, def: ResourceDef) -> Self {
        self.resources.push(def);
        self
    }
}
