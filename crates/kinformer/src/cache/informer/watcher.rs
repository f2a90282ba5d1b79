//! An informer as the `watcher::Event` stream kube-runtime consumes (feature `kube-runtime`),
//! so a `kube_runtime::Controller` or `reflector` runs on a kinformer informer's list/watch.

use std::sync::Arc;

use futures::{Stream, StreamExt};
use kube::runtime::watcher::{Error, Event};
use kube_core::Resource;

use crate::cache::informer::{EventStream, InformerError, SharedIndexInformer};
use crate::cache::meta::DeletedObject;
use crate::cache::processor::Notification;
use crate::cache::sync::HasSynced;

enum Phase {
    /// Nothing sent yet: `Init` comes first.
    Start,
    /// Between `Init` and `InitDone`: initial adds become `InitApply`.
    Initial,
    /// After `InitDone`: adds and updates are `Apply`, deletes `Delete`.
    Live,
}

struct State<K: Resource + Send + Sync + 'static> {
    events: EventStream<K>,
    phase: Phase,
    /// The first live notification, read while looking for the end of the initial list.
    stash: Option<Notification<K>>,
}

#[cfg_attr(docsrs, doc(cfg(feature = "kube-runtime")))]
impl<K: Resource + Clone + Send + Sync + 'static> SharedIndexInformer<K> {
    /// The informer's notifications as kube-runtime's watcher events: `Init`, an `InitApply`
    /// per object of the cache, `InitDone` once this stream has received all of them (the
    /// informer has synced), then `Apply` for every add and update and `Delete` for every
    /// delete (a tombstone's last known state). Feed it to `kube_runtime::reflector` and
    /// `Controller::for_stream`, or to `Controller::new_with`-style code that takes a watcher
    /// stream; see the `kube_runtime_controller` example.
    ///
    /// Items are never `Err`: the informer's reflector handles list/watch errors itself (and
    /// reports them through its watch-error handler). Each event carries a clone of the object,
    /// as kube-runtime's events own their objects. At most `capacity` notifications wait in
    /// the stream (see [`EventStream`]); the relist after a compaction reaches it as the
    /// updates and deletes it causes, not as a new `Init`.
    ///
    /// # Errors
    /// [`InformerError::Stopped`] once the informer has stopped.
    pub fn watcher_stream(
        &self,
        capacity: usize,
    ) -> Result<impl Stream<Item = Result<Event<K>, Error>> + Send + 'static, InformerError> {
        let events = self.event_stream(capacity)?;
        let state = State {
            events,
            phase: Phase::Start,
            stash: None,
        };
        Ok(futures::stream::unfold(state, next_event))
    }
}

async fn next_event<K: Resource + Clone + Send + Sync + 'static>(
    mut st: State<K>,
) -> Option<(Result<Event<K>, Error>, State<K>)> {
    loop {
        match st.phase {
            Phase::Start => {
                st.phase = Phase::Initial;
                return Some((Ok(Event::Init), st));
            }
            Phase::Initial => {
                let next = if st.events.has_synced() {
                    // Every initial add is in the stream: what is buffered now ends the list.
                    st.events.try_next()
                } else {
                    let registration = st.events.registration().clone();
                    tokio::select! {
                        biased;
                        n = st.events.next() => Some(n?),
                        () = registration.wait_synced() => continue,
                    }
                };
                match next {
                    Some(Notification::Add {
                        obj,
                        is_in_initial_list: true,
                    }) => return Some((Ok(Event::InitApply(Arc::unwrap_or_clone(obj))), st)),
                    other => {
                        st.stash = other;
                        st.phase = Phase::Live;
                        return Some((Ok(Event::InitDone), st));
                    }
                }
            }
            Phase::Live => {
                let n = match st.stash.take() {
                    Some(n) => n,
                    None => st.events.next().await?,
                };
                let event = match n {
                    Notification::Add { obj, .. } => Event::Apply(Arc::unwrap_or_clone(obj)),
                    Notification::Update { new, .. } => Event::Apply(Arc::unwrap_or_clone(new)),
                    Notification::Delete(DeletedObject::Live(obj)) => {
                        Event::Delete(Arc::unwrap_or_clone(obj))
                    }
                    Notification::Delete(DeletedObject::Tombstone(t)) => {
                        Event::Delete(Arc::unwrap_or_clone(t.obj))
                    }
                };
                return Some((Ok(event), st));
            }
        }
    }
}
