//! Fault injection: make the server misbehave on purpose, by script or at random from a seed.
//!
//! Properties:
//! - A [`FaultRule`] applies a [`Fault`] to requests of one [`Target`] (optionally one
//!   resource), at most `times` times, each matching request with probability `probability`
//!   (drawn from a generator seeded by [`Faults::seed`], so runs are reproducible).
//! - Immediate faults ([`Fault::Compact`], [`Fault::RefuseConnections`]) act when injected.
//! - Every fault that fires is recorded: [`Faults::injected`] lists them, [`Faults::counts`]
//!   counts them by name.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::store::Store;

/// One kind of misbehaviour.
#[derive(Debug, Clone, PartialEq)]
pub enum Fault {
    /// Close the watch stream after this many events (0 = right after the headers).
    CloseWatch {
        /// Events sent before closing.
        after_events: usize,
    },
    /// Close the watch stream after a number of events drawn uniformly from `0..=max_events`
    /// (from the seeded generator; recorded as the `CloseWatch` it became).
    CloseWatchRandom {
        /// Largest number of events sent before closing.
        max_events: usize,
    },
    /// Answer the watch with a single ERROR event carrying 410 Gone (reason Expired), then close.
    WatchGone,
    /// Reject the next list continuation with 410 Gone, as after a compaction.
    ExpireContinue,
    /// Answer 429 TooManyRequests with `Retry-After`.
    TooManyRequests {
        /// Seconds in `Retry-After`.
        retry_after_secs: u32,
    },
    /// Answer 500 InternalError.
    InternalError,
    /// Delay the response.
    Delay(Duration),
    /// After this many events, send half an event line and close the stream.
    TruncateWatchFrame {
        /// Events sent intact first.
        after_events: usize,
    },
    /// After this many events, send a line that is not JSON, then close the stream.
    GarbleWatchFrame {
        /// Events sent intact first.
        after_events: usize,
    },
    /// After this many events, send the next event as a line that is not JSON and keep the
    /// stream going: that change is lost on the wire, and a client that skips the bad line
    /// misses it.
    GarbleWatchEvent {
        /// Events sent intact first.
        after_events: usize,
    },
    /// After this many events, send the next event with an unknown event type (`ADDDED`) and
    /// keep the stream going.
    UnknownWatchEventType {
        /// Events sent intact first.
        after_events: usize,
    },
    /// Simulated restart: close every open watch and refuse new connections for this long.
    RefuseConnections(Duration),
    /// Compact the history up to the current revision now.
    Compact,
}

impl Fault {
    /// A short name used in counts: `close-watch`, `watch-gone`, `429`, ...
    pub fn name(&self) -> &'static str {
        match self {
            Fault::CloseWatch { .. } | Fault::CloseWatchRandom { .. } => "close-watch",
            Fault::WatchGone => "watch-gone",
            Fault::ExpireContinue => "expire-continue",
            Fault::TooManyRequests { .. } => "429",
            Fault::InternalError => "500",
            Fault::Delay(_) => "delay",
            Fault::TruncateWatchFrame { .. } => "truncate",
            Fault::GarbleWatchFrame { .. } => "garble",
            Fault::GarbleWatchEvent { .. } => "garble-event",
            Fault::UnknownWatchEventType { .. } => "unknown-type",
            Fault::RefuseConnections(_) => "refuse",
            Fault::Compact => "compact",
        }
    }

    /// The requests this fault applies to by default.
    pub fn default_target(&self) -> Target {
        match self {
            Fault::CloseWatch { .. }
            | Fault::CloseWatchRandom { .. }
            | Fault::WatchGone
            | Fault::TruncateWatchFrame { .. }
            | Fault::GarbleWatchFrame { .. }
            | Fault::GarbleWatchEvent { .. }
            | Fault::UnknownWatchEventType { .. } => Target::Watch,
            Fault::ExpireContinue => Target::ListContinue,
            _ => Target::Any,
        }
    }
}

/// Which requests a rule applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// Every resource request (not discovery).
    Any,
    /// GET of one object.
    Get,
    /// LIST (any page).
    List,
    /// LIST with a `continue` token.
    ListContinue,
    /// WATCH.
    Watch,
    /// POST, PUT, PATCH, DELETE.
    Write,
}

/// A request as the fault layer sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestKind {
    /// GET one.
    Get,
    /// LIST (`continued` when it carries a continue token).
    List {
        /// Whether a continue token was sent.
        continued: bool,
    },
    /// WATCH.
    Watch,
    /// A write.
    Write,
}

impl Target {
    fn matches(self, r: RequestKind) -> bool {
        match self {
            Target::Any => true,
            Target::Get => r == RequestKind::Get,
            Target::List => matches!(r, RequestKind::List { .. }),
            Target::ListContinue => r == RequestKind::List { continued: true },
            Target::Watch => r == RequestKind::Watch,
            Target::Write => r == RequestKind::Write,
        }
    }
}

/// A scripted or random fault.
#[derive(Debug, Clone, PartialEq)]
pub struct FaultRule {
    /// What to do.
    pub fault: Fault,
    /// Which requests.
    pub target: Target,
    /// Only this resource (plural name), if set.
    pub resource: Option<String>,
    /// Fire at most this many times (`None` = no limit).
    pub times: Option<u64>,
    /// Chance that a matching request triggers it (1.0 = always).
    pub probability: f64,
}

impl FaultRule {
    /// A rule firing once on the next request of the fault's default target.
    pub fn once(fault: Fault) -> Self {
        let target = fault.default_target();
        Self {
            fault,
            target,
            resource: None,
            times: Some(1),
            probability: 1.0,
        }
    }

    /// A rule firing on every matching request with probability `p`, without limit.
    pub fn random(fault: Fault, p: f64) -> Self {
        let target = fault.default_target();
        Self {
            fault,
            target,
            resource: None,
            times: None,
            probability: p,
        }
    }

    /// Sets the number of times.
    #[must_use]
    pub fn times(mut self, n: u64) -> Self {
        self.times = Some(n);
        self
    }

    /// Restricts to one target.
    #[must_use]
    pub fn on(mut self, target: Target) -> Self {
        self.target = target;
        self
    }

    /// Restricts to one resource (plural name).
    #[must_use]
    pub fn for_resource(mut self, plural: &str) -> Self {
        self.resource = Some(plural.into());
        self
    }
}

/// A fault that fired.
#[derive(Debug, Clone, PartialEq)]
pub struct InjectedFault {
    /// The fault.
    pub fault: Fault,
    /// The request it hit (`METHOD path`), or `-` for immediate faults.
    pub request: String,
}

/// Errors parsing a fault spec.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FaultSpecError {
    /// An item could not be parsed.
    #[error("invalid fault spec item {0:?}: {1}")]
    Item(String, &'static str),
}

#[derive(Debug)]
struct State {
    rules: Vec<FaultRule>,
    rng: SmallRng,
    log: Vec<InjectedFault>,
    counts: BTreeMap<&'static str, u64>,
    refuse_until: Option<Instant>,
}

/// The fault-injection handle. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Faults {
    state: Arc<Mutex<State>>,
    store: Store,
    restart_tx: Arc<watch::Sender<u64>>,
    close_tx: Arc<watch::Sender<u64>>,
}

const LOG_CAP: usize = 100_000;

impl Faults {
    pub(crate) fn new(store: Store, seed: u64) -> Self {
        let (restart_tx, _) = watch::channel(0);
        let (close_tx, _) = watch::channel(0);
        Self {
            state: Arc::new(Mutex::new(State {
                rules: Vec::new(),
                rng: SmallRng::seed_from_u64(seed),
                log: Vec::new(),
                counts: BTreeMap::new(),
                refuse_until: None,
            })),
            store,
            restart_tx: Arc::new(restart_tx),
            close_tx: Arc::new(close_tx),
        }
    }

    /// Re-seeds the random generator.
    pub fn seed(&self, seed: u64) {
        self.state.lock().rng = SmallRng::seed_from_u64(seed);
    }

    /// Injects a fault once: immediate faults act now; others hit the next matching request.
    pub fn inject(&self, fault: Fault) {
        self.add_rule(FaultRule::once(fault));
    }

    /// Adds a rule. Immediate faults with probability 1 act now (once).
    pub fn add_rule(&self, rule: FaultRule) {
        if matches!(rule.fault, Fault::Compact | Fault::RefuseConnections(_))
            && rule.probability >= 1.0
        {
            self.fire_immediate(&rule.fault, "-".into());
            return;
        }
        self.state.lock().rules.push(rule);
    }

    /// Adds every rule of a spec (see [`parse_spec`]).
    ///
    /// # Errors
    /// [`FaultSpecError`] for an unknown item; no rule is added then.
    pub fn apply_spec(&self, spec: &str) -> Result<(), FaultSpecError> {
        let (seed, rules) = parse_spec(spec)?;
        if let Some(s) = seed {
            self.seed(s);
        }
        for r in rules {
            self.add_rule(r);
        }
        Ok(())
    }

    /// Removes every pending rule (the log stays).
    pub fn clear(&self) {
        self.state.lock().rules.clear();
    }

    /// Every fault that fired, oldest first (the last 100,000).
    pub fn injected(&self) -> Vec<InjectedFault> {
        self.state.lock().log.clone()
    }

    /// How many times each fault fired, by [`Fault::name`].
    pub fn counts(&self) -> BTreeMap<&'static str, u64> {
        self.state.lock().counts.clone()
    }

    /// Total number of faults fired.
    pub fn total(&self) -> u64 {
        self.state.lock().counts.values().sum()
    }

    fn record(st: &mut State, fault: &Fault, request: String) {
        *st.counts.entry(fault.name()).or_default() += 1;
        if st.log.len() >= LOG_CAP {
            st.log.remove(0);
        }
        st.log.push(InjectedFault {
            fault: fault.clone(),
            request,
        });
    }

    fn fire_immediate(&self, fault: &Fault, request: String) {
        Self::record(&mut self.state.lock(), fault, request);
        match fault {
            Fault::Compact => {
                self.store.compact_all();
            }
            Fault::RefuseConnections(d) => {
                self.state.lock().refuse_until = Some(Instant::now() + *d);
                self.restart_tx.send_modify(|e| *e += 1);
                self.close_tx.send_modify(|e| *e += 1);
            }
            _ => {}
        }
    }

    /// Whether new connections are refused now (a simulated restart is in progress).
    pub fn refusing(&self) -> bool {
        let mut st = self.state.lock();
        match st.refuse_until {
            Some(t) if Instant::now() < t => true,
            Some(_) => {
                st.refuse_until = None;
                false
            }
            None => false,
        }
    }

    /// A receiver whose value changes at each simulated restart (connections accepted before
    /// it break).
    pub fn restarts(&self) -> watch::Receiver<u64> {
        self.restart_tx.subscribe()
    }

    /// A receiver whose value changes whenever open watches must end (a simulated restart,
    /// [`Faults::close_all_watches`], server shutdown).
    pub fn watch_closes(&self) -> watch::Receiver<u64> {
        self.close_tx.subscribe()
    }

    /// Closes every open watch stream now (without refusing connections).
    pub fn close_all_watches(&self) {
        self.close_tx.send_modify(|e| *e += 1);
    }

    /// Decides which faults hit a request, consuming rule budgets, and records them.
    /// Immediate faults drawn here act at once and are not returned.
    pub fn on_request(&self, kind: RequestKind, resource: &str, request: &str) -> Vec<Fault> {
        let mut out = Vec::new();
        let mut immediate = Vec::new();
        {
            let mut st = self.state.lock();
            if st.rules.is_empty() {
                return out;
            }
            let st = &mut *st;
            for rule in st.rules.iter_mut() {
                if !rule.target.matches(kind)
                    || rule.resource.as_deref().is_some_and(|r| r != resource)
                {
                    continue;
                }
                if rule.times == Some(0) {
                    continue;
                }
                if rule.probability < 1.0 && !st.rng.random_bool(rule.probability.clamp(0.0, 1.0)) {
                    continue;
                }
                if let Some(t) = rule.times.as_mut() {
                    *t -= 1;
                }
                if matches!(rule.fault, Fault::Compact | Fault::RefuseConnections(_)) {
                    immediate.push(rule.fault.clone());
                } else if let Fault::CloseWatchRandom { max_events } = rule.fault {
                    let after_events = st.rng.random_range(0..=max_events);
                    out.push(Fault::CloseWatch { after_events });
                } else {
                    out.push(rule.fault.clone());
                }
            }
            st.rules.retain(|r| r.times != Some(0));
            for f in &out {
                Self::record(st, f, request.to_string());
            }
        }
        for f in immediate {
            self.fire_immediate(&f, request.to_string());
        }
        out
    }
}

/// Parses a fault spec: comma-separated items.
///
/// - `seed=N` — seed of the random draws;
/// - `FAULT[@P][xN]` — apply `FAULT` to each matching request with probability `P` (default 1),
///   at most `N` times (default: once without `@P`, unlimited with it).
///
/// `FAULT` is one of `close-watch:N` (close after N events), `close-watch:rand:MAX` (after a
/// random number of events up to MAX), `watch-gone`, `expire-continue`,
/// `429[:SECS]`, `500`, `delay:MS`, `truncate[:N]`, `garble[:N]`, `garble-event[:N]`, `unknown-type[:N]`, `refuse:MS`, `compact`.
/// Example: `seed=7,500@0.01,close-watch:100@0.2,429:1x3`.
///
/// # Errors
/// [`FaultSpecError`] naming the item that failed.
pub fn parse_spec(spec: &str) -> Result<(Option<u64>, Vec<FaultRule>), FaultSpecError> {
    let mut seed = None;
    let mut rules = Vec::new();
    for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let bad = |why| FaultSpecError::Item(item.to_string(), why);
        if let Some(s) = item.strip_prefix("seed=") {
            seed = Some(s.parse().map_err(|_| bad("seed must be an integer"))?);
            continue;
        }
        let (mut body, mut times) = (item, None);
        if let Some((b, n)) = body
            .rsplit_once('x')
            .filter(|(_, n)| n.chars().all(|c| c.is_ascii_digit()) && !n.is_empty())
        {
            body = b;
            times = Some(n.parse().map_err(|_| bad("bad count"))?);
        }
        let mut probability = 1.0;
        if let Some((b, p)) = body.split_once('@') {
            body = b;
            probability = p.parse().map_err(|_| bad("bad probability"))?;
            if !(0.0..=1.0).contains(&probability) {
                return Err(bad("probability must be within 0..=1"));
            }
        }
        let (name, arg) = body
            .split_once(':')
            .map_or((body, None), |(n, a)| (n, Some(a)));
        let num = |default: u64| -> Result<u64, FaultSpecError> {
            arg.map_or(Ok(default), |a| a.parse().map_err(|_| bad("bad number")))
        };
        let fault = match name {
            "close-watch" => match arg.and_then(|a| a.strip_prefix("rand:")) {
                Some(max) => Fault::CloseWatchRandom {
                    max_events: max.parse().map_err(|_| bad("bad number"))?,
                },
                None => Fault::CloseWatch {
                    after_events: num(0)? as usize,
                },
            },
            "watch-gone" | "410" => Fault::WatchGone,
            "expire-continue" => Fault::ExpireContinue,
            "429" => Fault::TooManyRequests {
                retry_after_secs: num(1)? as u32,
            },
            "500" => Fault::InternalError,
            "delay" => Fault::Delay(Duration::from_millis(num(100)?)),
            "truncate" => Fault::TruncateWatchFrame {
                after_events: num(0)? as usize,
            },
            "garble" => Fault::GarbleWatchFrame {
                after_events: num(0)? as usize,
            },
            "garble-event" => Fault::GarbleWatchEvent {
                after_events: num(0)? as usize,
            },
            "unknown-type" => Fault::UnknownWatchEventType {
                after_events: num(0)? as usize,
            },
            "refuse" => Fault::RefuseConnections(Duration::from_millis(num(1000)?)),
            "compact" => Fault::Compact,
            _ => return Err(bad("unknown fault")),
        };
        let target = fault.default_target();
        let times = times.or(if probability < 1.0 { None } else { Some(1) });
        rules.push(FaultRule {
            fault,
            target,
            resource: None,
            times,
            probability,
        });
    }
    Ok((seed, rules))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::ResourceDef;
    use crate::store::StoreConfig;

    fn faults() -> Faults {
        Faults::new(
            Store::new(ResourceDef::builtins(), StoreConfig::default()),
            1,
        )
    }

    #[test]
    fn spec_parses_counts_probabilities_and_seed() {
        let (seed, rules) = parse_spec("seed=7,500@0.01,close-watch:100@0.2,429:2x3").unwrap();
        assert_eq!(seed, Some(7));
        assert_eq!(rules.len(), 3);
        assert_eq!(rules[0].times, None);
        assert_eq!(rules[1].fault, Fault::CloseWatch { after_events: 100 });
        assert_eq!(rules[2].times, Some(3));
        assert_eq!(
            rules[2].fault,
            Fault::TooManyRequests {
                retry_after_secs: 2
            }
        );
        assert!(parse_spec("nonsense").is_err());
        assert!(parse_spec("500@2").is_err());
    }

    #[test]
    fn random_watch_closes_draw_their_event_count() {
        let (_, rules) = parse_spec("close-watch:rand:50@1x20").unwrap();
        assert_eq!(rules[0].fault, Fault::CloseWatchRandom { max_events: 50 });
        let f = faults();
        f.add_rule(rules[0].clone());
        let drawn: Vec<Fault> = (0..20)
            .flat_map(|_| f.on_request(RequestKind::Watch, "pods", ""))
            .collect();
        assert_eq!(drawn.len(), 20);
        assert!(
            drawn
                .iter()
                .all(|d| matches!(d, Fault::CloseWatch { after_events } if *after_events <= 50))
        );
        assert!(drawn.windows(2).any(|w| w[0] != w[1]), "draws should vary");
    }

    #[test]
    fn once_rules_fire_once_and_are_counted() {
        let f = faults();
        f.inject(Fault::InternalError);
        assert_eq!(
            f.on_request(RequestKind::Get, "pods", "GET /x"),
            vec![Fault::InternalError]
        );
        assert!(f.on_request(RequestKind::Get, "pods", "GET /x").is_empty());
        assert_eq!(f.counts().get("500"), Some(&1));
        assert_eq!(f.injected().len(), 1);
    }

    #[test]
    fn targets_and_resources_filter_requests() {
        let f = faults();
        f.add_rule(FaultRule::once(Fault::WatchGone).for_resource("pods"));
        assert!(
            f.on_request(RequestKind::List { continued: false }, "pods", "")
                .is_empty()
        );
        assert!(
            f.on_request(RequestKind::Watch, "configmaps", "")
                .is_empty()
        );
        assert_eq!(f.on_request(RequestKind::Watch, "pods", "").len(), 1);
    }

    #[test]
    fn random_rules_are_reproducible_from_the_seed() {
        let draw = || {
            let f = faults();
            f.seed(42);
            f.add_rule(FaultRule::random(Fault::InternalError, 0.3));
            (0..200)
                .map(|_| f.on_request(RequestKind::Get, "pods", "").len())
                .collect::<Vec<_>>()
        };
        let a = draw();
        assert_eq!(a, draw());
        let hits: usize = a.iter().sum();
        assert!((30..90).contains(&hits), "{hits}");
    }
}
