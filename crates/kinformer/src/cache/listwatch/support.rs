//! [`WatchListSupport`]: whether a server supports watch-list, learnt once for every source
//! that shares the record.

use std::fmt;
use std::sync::Arc;

use tokio::sync::watch;

/// What the sources sharing this record know of their server's watch-list support.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Nobody asked yet (or the last try was inconclusive: a transport error, say).
    Unknown,
    /// One reflector's watch-list request is out; the others wait for its answer.
    Probing,
    /// The server accepted a watch-list request.
    Supported,
    /// The server refused one as a server without the feature does.
    Unsupported,
}

/// Whether the server of a client supports watch-list (`sendInitialEvents`), shared by every
/// [`ListerWatcher`](super::ListerWatcher) of that client
/// ([`ListerWatcher::watch_list_support`](super::ListerWatcher::watch_list_support)).
///
/// While nothing is known, the first reflector to start a watch-list asks the server and the
/// others wait for its answer, so that a server without the feature (Kubernetes 1.26–1.31 by
/// default) sees one refused request in total, however many informers start together; after
/// a refusal every reflector sharing the record lists and watches. An inconclusive try (the
/// request failed for another reason, or was dropped) lets the next one ask. Clones share
/// one record.
///
/// ```
/// use kinformer::cache::listwatch::WatchListSupport;
///
/// let support = WatchListSupport::new();
/// assert!(!support.is_unsupported());
/// assert!(support.clone().set_unsupported(), "news the first time");
/// assert!(!support.set_unsupported());
/// assert!(support.is_unsupported());
/// ```
#[derive(Clone)]
pub struct WatchListSupport {
    state: Arc<watch::Sender<State>>,
}

impl Default for WatchListSupport {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for WatchListSupport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("WatchListSupport")
            .field(&*self.state.borrow())
            .finish()
    }
}

/// What a reflector may do about a watch-list ([`WatchListSupport::acquire`]).
#[derive(Debug)]
pub(crate) enum Gate {
    /// The server does not support watch-list: list and watch.
    Unsupported,
    /// Go ahead; with a probe to report the answer through when nothing was known.
    Try(Option<WatchListProbe>),
}

/// The one watch-list request out while nothing is known. Dropped without an answer (an
/// inconclusive try), it lets the next reflector ask.
#[derive(Debug)]
pub(crate) struct WatchListProbe {
    support: WatchListSupport,
    answered: bool,
}

impl WatchListProbe {
    /// The server accepted the watch-list request.
    pub(crate) fn supported(mut self) {
        self.answered = true;
        self.support.state.send_replace(State::Supported);
    }
}

impl Drop for WatchListProbe {
    fn drop(&mut self) {
        if !self.answered {
            self.support.state.send_if_modified(|s| {
                let probing = *s == State::Probing;
                if probing {
                    *s = State::Unknown;
                }
                probing
            });
        }
    }
}

impl WatchListSupport {
    /// A record that knows nothing yet.
    pub fn new() -> Self {
        Self {
            state: Arc::new(watch::Sender::new(State::Unknown)),
        }
    }

    /// True once the server refused a watch-list request as unsupported.
    pub fn is_unsupported(&self) -> bool {
        *self.state.borrow() == State::Unsupported
    }

    /// Records that the server does not support watch-list; true if this is news.
    pub fn set_unsupported(&self) -> bool {
        self.state.send_replace(State::Unsupported) != State::Unsupported
    }

    /// Waits while another reflector's watch-list request is out, then says whether to try
    /// (claiming the probe when nothing is known).
    ///
    /// # Cancel safety
    /// Cancel safe: it only waits, and claims the probe in the same step as it returns.
    pub(crate) async fn acquire(&self) -> Gate {
        let mut rx = self.state.subscribe();
        loop {
            let claimed = self.state.send_if_modified(|s| {
                let unknown = *s == State::Unknown;
                if unknown {
                    *s = State::Probing;
                }
                unknown
            });
            if claimed {
                return Gate::Try(Some(WatchListProbe {
                    support: self.clone(),
                    answered: false,
                }));
            }
            match *rx.borrow_and_update() {
                State::Supported => return Gate::Try(None),
                State::Unsupported => return Gate::Unsupported,
                State::Unknown => continue,
                State::Probing => {}
            }
            // The sender lives as long as `self`: `changed` cannot fail while we wait.
            if rx.changed().await.is_err() {
                return Gate::Try(None);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn one_probe_at_a_time_and_the_others_wait_for_its_answer() {
        let support = WatchListSupport::new();
        let Gate::Try(Some(probe)) = support.acquire().await else {
            panic!("the first asks");
        };
        let other = tokio::spawn({
            let s = support.clone();
            async move { matches!(s.acquire().await, Gate::Unsupported) }
        });
        tokio::task::yield_now().await;
        assert!(!other.is_finished(), "waits while the probe is out");
        assert!(support.set_unsupported());
        drop(probe);
        assert!(other.await.unwrap());
        assert!(support.is_unsupported());
    }

    #[tokio::test]
    async fn an_inconclusive_probe_lets_the_next_one_ask_and_success_is_kept() {
        let support = WatchListSupport::new();
        let Gate::Try(Some(probe)) = support.acquire().await else {
            panic!("the first asks");
        };
        drop(probe);
        let Gate::Try(Some(probe)) = support.acquire().await else {
            panic!("asks again after an inconclusive try");
        };
        probe.supported();
        assert!(matches!(support.acquire().await, Gate::Try(None)));
        assert!(!support.is_unsupported());
    }
}
