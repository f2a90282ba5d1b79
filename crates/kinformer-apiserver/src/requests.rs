//! The log of the resource requests the server received, in order of arrival (for tests): off
//! until enabled.

use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::watch;

/// The resource requests the server received, each as its method and URI (`GET
/// /api/v1/pods?limit=500`), in order of arrival; nothing is recorded until
/// [`RequestLog::enable`]. Cheap to clone.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use kinformer_apiserver::TestServer;
///
/// let server = TestServer::start().await.unwrap();
/// server.requests().enable();
/// let client = server.client().unwrap();
/// let list = http::Request::get("/api/v1/pods?limit=5").body(Vec::new()).unwrap();
/// client.request_text(list).await.unwrap();
/// let seen = server.requests().wait_for(|r| r.contains("limit=5")).await;
/// assert_eq!(seen, "GET /api/v1/pods?limit=5");
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct RequestLog {
    state: Arc<Mutex<State>>,
    arrived: Arc<watch::Sender<u64>>,
}

#[derive(Debug, Default)]
struct State {
    enabled: bool,
    requests: Vec<String>,
}

impl Default for RequestLog {
    fn default() -> Self {
        Self {
            state: Arc::default(),
            arrived: Arc::new(watch::channel(0).0),
        }
    }
}

impl RequestLog {
    /// Starts recording.
    pub fn enable(&self) {
        self.state.lock().enabled = true;
    }

    /// The requests recorded so far, in order of arrival.
    pub fn requests(&self) -> Vec<String> {
        self.state.lock().requests.clone()
    }

    /// The first recorded request for which `pred` holds, once there is one.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn wait_for(&self, mut pred: impl FnMut(&str) -> bool) -> String {
        // Subscribed before looking, so that no arrival is missed in between.
        let mut arrived = self.arrived.subscribe();
        loop {
            if let Some(r) = self.state.lock().requests.iter().find(|r| pred(r)) {
                return r.clone();
            }
            // The sender lives as long as `self`.
            let _ = arrived.changed().await;
        }
    }

    /// Records a request, if enabled.
    pub(crate) fn record(&self, request: &str) {
        let mut state = self.state.lock();
        if state.enabled {
            state.requests.push(request.to_owned());
            drop(state);
            self.arrived.send_modify(|n| *n += 1);
        }
    }
}
