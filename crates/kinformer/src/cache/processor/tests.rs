//! Tests of listeners and the shared processor.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::*;
use crate::cache::handler::{ResourceEventHandler, ResourceEventHandlerFuncs};
use crate::cache::meta::DeletedObject;
use crate::cache::processor::Notification;
use crate::cache::sync::{HasSynced, SyncedFlag, wait_for_cache_sync};

fn cm(name: &str, rv: &str) -> Arc<ConfigMap> {
    Arc::new(ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            resource_version: Some(rv.into()),
            ..Default::default()
        },
        ..Default::default()
    })
}

fn name_of(o: &ConfigMap) -> String {
    o.metadata.name.clone().unwrap_or_default()
}

fn add(name: &str, initial: bool) -> Notification<ConfigMap> {
    Notification::Add {
        obj: cm(name, "1"),
        is_in_initial_list: initial,
    }
}

fn update(name: &str, old_rv: &str, new_rv: &str) -> Notification<ConfigMap> {
    Notification::Update {
        old: cm(name, old_rv),
        new: cm(name, new_rv),
    }
}

/// A handler that reports every event as a line on a channel.
fn recorder() -> (
    Arc<dyn ResourceEventHandler<ConfigMap>>,
    UnboundedReceiver<String>,
) {
    let (tx, rx) = unbounded_channel();
    (Arc::new(Recorder(tx)), rx)
}

struct Recorder(UnboundedSender<String>);

impl ResourceEventHandler<ConfigMap> for Recorder {
    fn on_add(&self, obj: &Arc<ConfigMap>, initial: bool) {
        let _ = self.0.send(format!("add {} {initial}", name_of(obj)));
    }
    fn on_update(&self, old: &Arc<ConfigMap>, new: &Arc<ConfigMap>) {
        let rv = |o: &ConfigMap| o.metadata.resource_version.clone().unwrap_or_default();
        let _ = self
            .0
            .send(format!("update {} {}->{}", name_of(new), rv(old), rv(new)));
    }
    fn on_delete(&self, obj: &DeletedObject<ConfigMap>) {
        let _ = self.0.send(format!("delete {}", name_of(obj.object())));
    }
}

async fn recv_n(rx: &mut UnboundedReceiver<String>, n: usize) -> Vec<String> {
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        out.push(rx.recv().await.expect("handler dropped before delivering"));
    }
    out
}

fn synced() -> Arc<SyncedFlag> {
    Arc::new(SyncedFlag::new_set())
}

fn never() -> ResyncPeriods {
    ResyncPeriods::NEVER
}

/// Blocks in its first call until released; reports entry and every event.
struct Gate {
    entered: UnboundedSender<()>,
    release: Mutex<std::sync::mpsc::Receiver<()>>,
    first: AtomicBool,
    events: UnboundedSender<String>,
    returned_from_first: AtomicBool,
}

impl ResourceEventHandler<ConfigMap> for Gate {
    fn on_add(&self, obj: &Arc<ConfigMap>, _initial: bool) {
        if !self.first.swap(true, Ordering::SeqCst) {
            let _ = self.entered.send(());
            let _ = self.release.lock().unwrap().recv();
            // Still slow after release: shutdown must wait for this call to return.
            std::thread::sleep(Duration::from_millis(20));
            self.returned_from_first.store(true, Ordering::SeqCst);
        }
        let _ = self.events.send(name_of(obj));
    }
}

#[allow(clippy::type_complexity)]
fn gate() -> (
    Arc<Gate>,
    UnboundedReceiver<()>,
    std::sync::mpsc::Sender<()>,
    UnboundedReceiver<String>,
) {
    let (entered_tx, entered_rx) = unbounded_channel();
    let (release_tx, release_rx) = std::sync::mpsc::channel();
    let (events_tx, events_rx) = unbounded_channel();
    let g = Arc::new(Gate {
        entered: entered_tx,
        release: Mutex::new(release_rx),
        first: AtomicBool::new(false),
        events: events_tx,
        returned_from_first: AtomicBool::new(false),
    });
    (g, entered_rx, release_tx, events_rx)
}

#[test]
fn public_handles_are_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<SharedProcessor<ConfigMap>>();
    check::<ProcessorListener<Pod>>();
    check::<ResourceEventHandlerRegistration>();
    check::<ResourceEventHandlerFuncs<Pod>>();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_handler_does_not_delay_a_fast_one() {
    const N: usize = 200;
    let processor = SharedProcessor::<ConfigMap>::new(synced());
    let (slow, mut entered, release, mut slow_events) = gate();
    let slow_reg = processor.add_listener(slow.clone(), never()).unwrap();
    let (fast, mut fast_events) = recorder();
    processor.add_listener(fast, never()).unwrap();
    processor.start().unwrap();

    for i in 0..N {
        processor.distribute(add(&format!("cm-{i}"), false));
    }
    entered.recv().await.unwrap();
    // The slow handler is stuck in its first call; the fast one still gets everything.
    let got = recv_n(&mut fast_events, N).await;
    assert_eq!(got.last().map(String::as_str), Some("add cm-199 false"));
    assert!(!slow.returned_from_first.load(Ordering::SeqCst));
    assert_eq!(
        slow_reg.pending(),
        N - 1,
        "all but the one in flight wait in its buffer"
    );

    release.send(()).unwrap();
    let slow_got = recv_n(&mut slow_events, N).await;
    let want: Vec<String> = (0..N).map(|i| format!("cm-{i}")).collect();
    assert_eq!(slow_got, want);
    processor.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn buffer_grows_beyond_its_initial_size_and_drains_in_order() {
    const N: usize = 3000;
    let processor = SharedProcessor::<ConfigMap>::new(synced());
    let (h, mut rx) = recorder();
    let reg = processor.add_listener(h, never()).unwrap();
    assert_eq!(reg.buffer_capacity(), INITIAL_BUFFER_SIZE);

    for i in 0..INITIAL_BUFFER_SIZE {
        processor.distribute(add(&format!("cm-{i}"), false));
    }
    assert_eq!(
        reg.buffer_capacity(),
        INITIAL_BUFFER_SIZE,
        "full, not grown yet"
    );
    processor.distribute(add(&format!("cm-{INITIAL_BUFFER_SIZE}"), false));
    assert_eq!(reg.buffer_capacity(), 2 * INITIAL_BUFFER_SIZE, "doubled");
    for i in INITIAL_BUFFER_SIZE + 1..N {
        processor.distribute(add(&format!("cm-{i}"), false));
    }
    assert_eq!(reg.pending(), N);
    assert_eq!(reg.buffer_capacity(), 4 * INITIAL_BUFFER_SIZE);

    processor.start().unwrap();
    let got = recv_n(&mut rx, N).await;
    let want: Vec<String> = (0..N).map(|i| format!("add cm-{i} false")).collect();
    assert_eq!(got, want);
    assert_eq!(reg.pending(), 0);
    assert_eq!(reg.delivered(), N as u64);
    assert_eq!(
        reg.buffer_capacity(),
        4 * INITIAL_BUFFER_SIZE,
        "never shrinks"
    );
    processor.shutdown().await;
}

/// Counts the adds it is handed.
#[derive(Default)]
struct Counter(std::sync::atomic::AtomicUsize);

impl ResourceEventHandler<ConfigMap> for Counter {
    fn on_add(&self, _obj: &Arc<ConfigMap>, _initial: bool) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[tokio::test]
async fn a_listener_delivers_its_backlog_in_one_turn_not_in_slices_of_tokios_budget() {
    // Another ready task runs between the listener's turns: it sees how many notifications
    // each turn delivered. Yielding after tokio's budget of 128 took 4 turns for 500 (a
    // process loop buffering a page of 500 per turn then outran its listeners).
    const N: usize = 500;
    let processor = SharedProcessor::<ConfigMap>::new(synced());
    let counter = Arc::new(Counter::default());
    processor
        .add_listener(
            Arc::clone(&counter) as Arc<dyn ResourceEventHandler<ConfigMap>>,
            never(),
        )
        .unwrap();
    for i in 0..N {
        processor.distribute(add(&format!("cm-{i}"), false));
    }
    processor.start().unwrap();
    let mut turns_seen = Vec::new();
    while counter.0.load(Ordering::SeqCst) < N {
        tokio::task::yield_now().await;
        turns_seen.push(counter.0.load(Ordering::SeqCst));
    }
    // One turn for the whole backlog; one more in case the turn outlasted its time slice
    // on a busy machine.
    assert!(
        turns_seen.len() <= 2,
        "deliveries seen between turns: {turns_seen:?}"
    );
    processor.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn resync_notifications_go_only_to_due_listeners() {
    let s = Duration::from_secs;
    let processor = SharedProcessor::<ConfigMap>::new(synced());
    let mk = |period: u64| ResyncPeriods {
        requested: s(period),
        effective: s(period),
    };
    let (a, mut a_rx) = recorder();
    let (b, mut b_rx) = recorder();
    let (c, mut c_rx) = recorder();
    processor.add_listener(a, mk(1)).unwrap();
    processor.add_listener(b, mk(10)).unwrap();
    processor.add_listener(c, mk(0)).unwrap();
    processor.start().unwrap();

    assert!(
        !processor.should_resync(Instant::now()),
        "nothing due at start"
    );
    tokio::time::advance(s(1)).await;
    assert!(processor.should_resync(Instant::now()));
    processor.distribute(update("x", "5", "5"));
    processor.distribute(update("x", "5", "6"));
    assert_eq!(
        recv_n(&mut a_rx, 2).await,
        ["update x 5->5", "update x 5->6"]
    );
    assert_eq!(recv_n(&mut b_rx, 1).await, ["update x 5->6"]);
    assert_eq!(recv_n(&mut c_rx, 1).await, ["update x 5->6"]);

    // At 10 s both periodic listeners are due; the zero-period one never is.
    tokio::time::advance(s(9)).await;
    assert!(processor.should_resync(Instant::now()));
    processor.distribute(update("y", "7", "7"));
    processor.distribute(add("marker", false));
    assert_eq!(
        recv_n(&mut a_rx, 2).await,
        ["update y 7->7", "add marker false"]
    );
    assert_eq!(
        recv_n(&mut b_rx, 2).await,
        ["update y 7->7", "add marker false"]
    );
    assert_eq!(recv_n(&mut c_rx, 1).await, ["add marker false"]);

    // Half a second later nobody is due: the marks are cleared and syncs go nowhere.
    tokio::time::advance(Duration::from_millis(500)).await;
    assert!(!processor.should_resync(Instant::now()));
    processor.distribute(update("z", "8", "8"));
    processor.distribute(add("marker2", false));
    assert_eq!(recv_n(&mut a_rx, 1).await, ["add marker2 false"]);
    assert_eq!(recv_n(&mut b_rx, 1).await, ["add marker2 false"]);
    processor.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_lowered_check_period_recomputes_listener_periods() {
    let s = Duration::from_secs;
    let processor = SharedProcessor::<ConfigMap>::new(synced());
    // Informer check period 30 s. A first handler asks for 25 s and gets 30 s.
    let first = plan_handler_resync(s(25), s(30), false);
    assert_eq!(first.check_period, s(25), "lowered before start");
    let (h0, mut rx0) = recorder();
    processor
        .add_listener(
            h0,
            ResyncPeriods {
                requested: s(25),
                effective: s(30),
            },
        )
        .unwrap();
    // A second handler asks for 20 s: the informer lowers its check period, then adds it.
    let second = plan_handler_resync(s(20), s(30), false);
    assert_eq!(second.check_period, s(20));
    processor.resync_check_period_changed(second.check_period);
    let (h1, mut rx1) = recorder();
    processor.add_listener(h1, second.periods).unwrap();
    processor.start().unwrap();

    // 20 s: only the second is due.
    tokio::time::advance(s(20)).await;
    assert!(processor.should_resync(Instant::now()));
    processor.distribute(update("s1", "1", "1"));
    processor.distribute(add("m1", false));
    assert_eq!(
        recv_n(&mut rx1, 2).await,
        ["update s1 1->1", "add m1 false"]
    );
    assert_eq!(recv_n(&mut rx0, 1).await, ["add m1 false"]);
    // 30 s: the first listener's first resync (scheduled when it was added).
    tokio::time::advance(s(10)).await;
    assert!(processor.should_resync(Instant::now()));
    processor.distribute(update("s2", "1", "1"));
    processor.distribute(add("m2", false));
    assert_eq!(
        recv_n(&mut rx0, 2).await,
        ["update s2 1->1", "add m2 false"]
    );
    // 55 s: due again after its recomputed 25 s period (it would be 60 s with 30 s).
    tokio::time::advance(s(25)).await;
    assert!(processor.should_resync(Instant::now()));
    processor.distribute(update("s3", "1", "1"));
    assert_eq!(recv_n(&mut rx0, 1).await, ["update s3 1->1"]);
    processor.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn removing_a_handler_is_idempotent_and_stops_its_task() {
    let processor = SharedProcessor::<ConfigMap>::new(synced());
    let (a, mut a_rx) = recorder();
    let (b, mut b_rx) = recorder();
    let ra = processor.add_listener(a, never()).unwrap();
    let rb = processor.add_listener(b, never()).unwrap();
    processor.start().unwrap();
    processor.distribute(add("one", false));
    assert_eq!(recv_n(&mut a_rx, 1).await, ["add one false"]);
    assert_eq!(recv_n(&mut b_rx, 1).await, ["add one false"]);

    assert!(processor.remove_listener(&ra));
    assert!(!processor.remove_listener(&ra), "second removal is a no-op");
    assert!(ra.is_removed());
    ra.stopped().await;
    assert_eq!(processor.listener_count(), 1);
    assert_eq!(processor.running_tasks(), 1);

    processor.distribute(add("two", false));
    assert_eq!(recv_n(&mut b_rx, 1).await, ["add two false"]);
    // The removed handler was dropped with its task: its channel ends without "two".
    assert_eq!(a_rx.recv().await, None);
    assert!(!rb.is_removed());
    processor.shutdown().await;
    assert!(
        !processor.remove_listener(&rb),
        "already gone after shutdown"
    );
}

#[tokio::test(start_paused = true)]
async fn removing_before_start_needs_no_task() {
    let processor = SharedProcessor::<ConfigMap>::new(synced());
    let (a, _a_rx) = recorder();
    let ra = processor.add_listener(a, never()).unwrap();
    processor.distribute(add("one", false));
    assert_eq!(ra.pending(), 1);
    assert!(processor.remove_listener(&ra));
    assert_eq!(ra.pending(), 0, "the buffer is dropped");
    ra.stopped().await;
    processor.start().unwrap();
    assert_eq!(processor.running_tasks(), 0);
    processor.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn registration_syncs_after_upstream_and_all_initial_adds() {
    let upstream = Arc::new(SyncedFlag::new());
    let processor = SharedProcessor::<ConfigMap>::new(upstream.clone());
    let (h, mut rx) = recorder();
    let reg = processor.add_listener(h, never()).unwrap();
    assert!(!reg.has_synced());

    for i in 0..3 {
        processor.distribute(add(&format!("init-{i}"), true));
    }
    processor.distribute(add("live", false));
    assert_eq!(reg.pending_initial_adds(), 3);
    assert!(!reg.has_synced(), "upstream not synced");
    upstream.set();
    assert!(!reg.has_synced(), "initial adds not delivered yet");

    let waiter = tokio::spawn({
        let reg = reg.clone();
        async move { reg.wait_synced().await }
    });
    processor.start().unwrap();
    waiter.await.unwrap();
    assert!(reg.has_synced());
    assert_eq!(reg.pending_initial_adds(), 0);
    assert_eq!(recv_n(&mut rx, 3).await.len(), 3);

    // A handler added late gets the store replayed; it is not synced until it has seen it,
    // although the informer is.
    let (late, mut late_rx) = recorder();
    let late_reg = processor
        .add_listener_with_initial_list(late, never(), vec![cm("a", "1"), cm("b", "1")])
        .unwrap();
    assert!(!late_reg.has_synced());
    let cancel = CancellationToken::new();
    assert!(wait_for_cache_sync(&cancel, &[&reg, &late_reg]).await);
    assert_eq!(recv_n(&mut late_rx, 2).await, ["add a true", "add b true"]);
    processor.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_panicking_handler_is_caught_and_the_listener_goes_on() {
    let processor = SharedProcessor::<ConfigMap>::new(synced());
    let (tx, mut rx) = unbounded_channel();
    let handler = ResourceEventHandlerFuncs::<ConfigMap>::new().on_add(move |obj, _| {
        let name = name_of(obj);
        assert!(!name.starts_with("boom"), "handler failure on {name}");
        let _ = tx.send(name);
    });
    let reg = processor.add_listener(Arc::new(handler), never()).unwrap();
    processor.start().unwrap();
    processor.distribute(add("a", true));
    processor.distribute(add("boom-1", true));
    processor.distribute(add("b", false));
    assert_eq!(recv_n(&mut rx, 2).await, ["a", "b"]);
    assert_eq!(reg.delivered(), 3);
    assert!(
        reg.has_synced(),
        "an initial add that panicked still counts as delivered"
    );
    processor.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_waits_for_every_listener_task() {
    let processor = Arc::new(SharedProcessor::<ConfigMap>::new(synced()));
    let (slow, mut entered, release, _events) = gate();
    let slow_reg = processor.add_listener(slow.clone(), never()).unwrap();
    let (idle, _idle_rx) = recorder();
    let idle_reg = processor.add_listener(idle, never()).unwrap();
    processor.start().unwrap();
    assert_eq!(processor.running_tasks(), 2);
    processor.distribute(add("one", false));
    processor.distribute(add("two", false));
    entered.recv().await.unwrap();

    let shutdown = tokio::spawn({
        let p = Arc::clone(&processor);
        async move { p.shutdown().await }
    });
    idle_reg.stopped().await;
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    assert!(!shutdown.is_finished(), "a handler is still inside a call");
    release.send(()).unwrap();
    shutdown.await.unwrap();
    assert!(slow.returned_from_first.load(Ordering::SeqCst));
    assert_eq!(processor.running_tasks(), 0);
    assert!(slow_reg.is_removed());
    slow_reg.stopped().await;

    let (late, _late_rx) = recorder();
    assert_eq!(
        processor.add_listener(late, never()).unwrap_err(),
        ProcessorError::Stopped
    );
    assert_eq!(processor.start(), Err(ProcessorError::Stopped));
}

#[tokio::test(start_paused = true)]
async fn run_starts_listeners_and_stops_on_cancel() {
    let processor = Arc::new(SharedProcessor::<ConfigMap>::new(synced()));
    let (h, mut rx) = recorder();
    processor.add_listener(h, never()).unwrap();
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (p, cancel) = (Arc::clone(&processor), cancel.clone());
        async move { p.run(cancel).await }
    });
    processor.distribute(add("x", false));
    assert_eq!(recv_n(&mut rx, 1).await, ["add x false"]);
    assert!(processor.is_started());
    cancel.cancel();
    run.await.unwrap().unwrap();
    assert!(processor.is_stopped());
    assert_eq!(processor.running_tasks(), 0);
    assert_eq!(
        rx.recv().await,
        None,
        "the handler was dropped with its task"
    );
}

#[tokio::test(start_paused = true)]
async fn handlers_added_after_start_run_at_once_and_see_only_later_events() {
    let processor = SharedProcessor::<ConfigMap>::new(synced());
    processor.start().unwrap();
    processor.distribute(add("before", false));
    let (h, mut rx) = recorder();
    processor.add_listener(h, never()).unwrap();
    processor.distribute(add("after", false));
    processor.distribute(Notification::Delete(DeletedObject::Live(cm("after", "2"))));
    assert_eq!(
        recv_n(&mut rx, 2).await,
        ["add after false", "delete after"]
    );
    processor.shutdown().await;
}

#[test]
fn start_outside_a_runtime_is_an_error() {
    let processor = SharedProcessor::<ConfigMap>::new(synced());
    assert_eq!(processor.start(), Err(ProcessorError::NoRuntime));
}

#[test]
fn sync_means_equal_resource_versions() {
    assert!(is_sync(&update("a", "3", "3")));
    assert!(!is_sync(&update("a", "3", "4")));
    assert!(!is_sync(&add("a", false)));
    let bare = Arc::new(Pod::default());
    assert!(is_sync(&Notification::Update {
        old: bare.clone(),
        new: bare
    }));
}

#[tokio::test(start_paused = true)]
async fn a_handler_may_remove_itself_from_inside_a_call() {
    let processor = Arc::new(SharedProcessor::<ConfigMap>::new(synced()));
    let own: Arc<std::sync::OnceLock<ResourceEventHandlerRegistration>> = Arc::default();
    let (tx, mut rx) = unbounded_channel();
    let handler = ResourceEventHandlerFuncs::<ConfigMap>::new().on_add({
        let (processor, own) = (Arc::clone(&processor), Arc::clone(&own));
        move |obj, _| {
            let _ = tx.send(name_of(obj));
            if let Some(reg) = own.get() {
                processor.remove_listener(reg);
            }
        }
    });
    let reg = processor.add_listener(Arc::new(handler), never()).unwrap();
    own.set(reg.clone()).unwrap();
    processor.distribute(add("first", false));
    processor.distribute(add("second", false));
    processor.start().unwrap();
    assert_eq!(rx.recv().await.as_deref(), Some("first"));
    reg.stopped().await;
    assert_eq!(processor.listener_count(), 0);
    processor.shutdown().await;
    // "second" was dropped with the buffer; the handler (holding the sender) is gone.
    assert_eq!(rx.recv().await, None);
}

#[tokio::test(start_paused = true)]
async fn dropping_the_processor_stops_its_listener_tasks() {
    let processor = SharedProcessor::<ConfigMap>::new(synced());
    let (h, mut rx) = recorder();
    let reg = processor.add_listener(h, never()).unwrap();
    processor.start().unwrap();
    drop(processor);
    reg.stopped().await;
    assert!(reg.is_removed());
    assert_eq!(rx.recv().await, None, "the handler went away with its task");
}

// ---------------------------------------------------------------- non-blocking handlers

/// A non-blocking listener for `handler` with `budget` per call, whose task is parked
/// (current-thread runtime: it runs only when the test yields).
async fn parked_nonblocking_listener(
    handler: Arc<dyn ResourceEventHandler<ConfigMap>>,
    budget: Duration,
) -> (
    Arc<ProcessorListener<ConfigMap>>,
    tokio::task::JoinHandle<()>,
) {
    let listener = Arc::new(ProcessorListener::new(
        Consumer::Nonblocking(handler, budget),
        ResyncPeriods::NEVER,
        Arc::new(SyncedFlag::new_set()),
    ));
    let task = tokio::spawn(Arc::clone(&listener).run());
    // Let the task start and park on its wake-up.
    tokio::task::yield_now().await;
    (listener, task)
}

/// Offered, a non-blocking listener with nothing buffered is delivered to on the offering
/// task, before `help` returns; with a backlog, or registered as an ordinary handler, the
/// offer is declined and the task delivers, in order.
#[tokio::test(flavor = "current_thread")]
async fn a_nonblocking_listener_takes_an_offer_only_with_nothing_buffered() {
    let (handler, mut rx) = recorder();
    // No call overruns it, even preempted on a loaded machine.
    let (listener, task) = parked_nonblocking_listener(handler, Duration::from_secs(10)).await;
    assert!(listener.add_all_for([add("a", false)], true), "offer taken");
    assert!(rx.try_recv().is_err(), "not delivered before help");
    listener.help();
    assert_eq!(
        rx.try_recv().unwrap(),
        "add a false",
        "delivered by help, on this task"
    );

    // A backlog (added without an offer) is the task's: the next offer is declined.
    listener.add(add("b", false));
    assert!(!listener.add_all_for([add("c", false)], true), "declined");
    tokio::task::yield_now().await;
    assert_eq!(rx.recv().await.unwrap(), "add b false");
    assert_eq!(rx.recv().await.unwrap(), "add c false", "in order");
    listener.close();
    task.await.unwrap();

    // An ordinary handler never takes an offer.
    let (handler, mut rx) = recorder();
    let ordinary = Arc::new(ProcessorListener::new(
        Consumer::Handler(handler),
        ResyncPeriods::NEVER,
        Arc::new(SyncedFlag::new_set()),
    ));
    let task = tokio::spawn(Arc::clone(&ordinary).run());
    tokio::task::yield_now().await;
    assert!(!ordinary.add_all_for([add("d", false)], true));
    assert_eq!(rx.recv().await.unwrap(), "add d false", "from its task");
    ordinary.close();
    task.await.unwrap();
}

/// A call that overruns the budget moves the listener to its task: the next offer is
/// declined; after `PROMOTE_AFTER` quick calls there, offers are taken again.
#[tokio::test(flavor = "current_thread")]
async fn a_slow_call_moves_a_nonblocking_listener_to_its_task_until_it_is_quick_again() {
    // Longer than the library's, so that a quick call preempted on a loaded machine does not
    // overrun it.
    const BUDGET: Duration = Duration::from_millis(25);
    let (tx, mut rx) = unbounded_channel::<String>();
    let handler = ResourceEventHandlerFuncs::<ConfigMap>::new().on_add(move |obj, _| {
        let name = name_of(obj);
        if name == "slow" {
            // The behaviour under test: a call longer than the budget.
            std::thread::sleep(BUDGET * 4);
        }
        let _ = tx.send(name);
    });
    let (listener, task) = parked_nonblocking_listener(Arc::new(handler), BUDGET).await;
    assert!(listener.add_all_for([add("slow", false)], true));
    listener.help();
    assert_eq!(rx.try_recv().unwrap(), "slow");
    assert!(listener.is_demoted());
    assert!(
        !listener.add_all_for([add("next", false)], true),
        "declined"
    );
    assert_eq!(rx.recv().await.unwrap(), "next", "from its task");

    let quick = PROMOTE_AFTER as usize;
    listener.add_all((0..quick).map(|i| add(&format!("q{i}"), false)));
    for i in 0..quick {
        assert_eq!(rx.recv().await.unwrap(), format!("q{i}"));
    }
    // The task counts the last call once its handler returned: let it finish the turn.
    for _ in 0..100 {
        if !listener.is_demoted() {
            break;
        }
        tokio::task::yield_now().await;
    }
    assert!(!listener.is_demoted(), "promoted after {quick} quick calls");
    assert!(
        listener.add_all_for([add("again", false)], true),
        "offer taken again"
    );
    listener.help();
    assert_eq!(rx.try_recv().unwrap(), "again");
    listener.close();
    task.await.unwrap();
}

/// A `Delivery` delivers to the listeners that took the offer on the task that runs it;
/// dropped undelivered, it wakes their tasks, so nothing stays buffered unseen.
#[tokio::test(flavor = "current_thread")]
async fn a_delivery_delivers_on_this_task_or_dropped_wakes_the_listeners_task() {
    let (handler, mut rx) = recorder();
    let (listener, task) = parked_nonblocking_listener(handler, Duration::from_secs(10)).await;
    let mut delivery = Delivery::none();
    assert!(listener.add_all_for([add("a", false)], true), "offer taken");
    delivery.push(Arc::clone(&listener));
    delivery.deliver();
    assert_eq!(
        rx.try_recv().unwrap(),
        "add a false",
        "delivered on this task"
    );

    let mut dropped = Delivery::none();
    assert!(listener.add_all_for([add("b", false)], true), "offer taken");
    dropped.push(Arc::clone(&listener));
    drop(dropped);
    assert!(rx.try_recv().is_err(), "not on this task");
    let woken = tokio::time::timeout(Duration::from_secs(10), rx.recv()).await;
    assert_eq!(
        woken.ok().flatten().as_deref(),
        Some("add b false"),
        "from its own task, woken by the drop"
    );
    listener.close();
    task.await.unwrap();
}
