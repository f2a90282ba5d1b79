//! The labelled-mode handover protocol: the labels and annotations, and the sharder's pure
//! decision for one object.
//!
//! An object's owner is the value of its [`SHARD_LABEL`]. To move an object from a live
//! owner `A` to `B` the sharder:
//!
//! 1. writes [`DRAIN_ANNOTATION`]` = B` (with a resourceVersion precondition);
//! 2. waits: `A` sees the annotation in its informer, stops starting reconciles of the object,
//!    waits for its in-flight reconcile of it to finish, and acknowledges with
//!    [`DRAINED_ANNOTATION`]` = B` (precondition again);
//! 3. on the acknowledgement, writes [`SHARD_LABEL`]` = B` and removes both annotations. The
//!    object leaves `A`'s informer (its selector is `shard=A`) and enters `B`'s.
//!
//! If `A` is not a live member (its lease expired by the sharder's clock, which is after `A`
//! itself stopped considering itself a member), or the label is missing, the sharder writes
//! the label at once. If the desired owner becomes `A` again before the acknowledgement,
//! the drain is cancelled. Every step is idempotent, so a new sharder (after a leader change)
//! continues where the old one stopped.

/// The label naming an object's owner (its shard): the replica identity.
pub const SHARD_LABEL: &str = "sharding.kinformer.io/shard";
/// The annotation the sharder writes to ask the owner to let go, naming the next owner.
pub const DRAIN_ANNOTATION: &str = "sharding.kinformer.io/drain-to";
/// The annotation the owner writes once it has let go, naming the next owner it
/// acknowledges.
pub const DRAINED_ANNOTATION: &str = "sharding.kinformer.io/drained";

/// The shard state of one object, as read from its label and annotations.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ShardState<'a> {
    /// [`SHARD_LABEL`].
    pub shard: Option<&'a str>,
    /// [`DRAIN_ANNOTATION`].
    pub drain_to: Option<&'a str>,
    /// [`DRAINED_ANNOTATION`].
    pub drained: Option<&'a str>,
}

impl<'a> ShardState<'a> {
    /// Reads the state from an object's metadata.
    pub fn of_meta(meta: &'a kube_core::metadata::ObjectMeta) -> Self {
        let label = |key: &str| meta.labels.as_ref()?.get(key).map(String::as_str);
        let annotation = |key: &str| meta.annotations.as_ref()?.get(key).map(String::as_str);
        Self {
            shard: label(SHARD_LABEL).filter(|s| !s.is_empty()),
            drain_to: annotation(DRAIN_ANNOTATION).filter(|s| !s.is_empty()),
            drained: annotation(DRAINED_ANNOTATION).filter(|s| !s.is_empty()),
        }
    }
}

/// What the sharder does next to one object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ShardAction {
    /// Nothing: the object is where it belongs, or a drain is waiting for its
    /// acknowledgement.
    Keep,
    /// Write the shard label `to` and remove the drain annotations: the object has no live
    /// owner, or its owner acknowledged the drain.
    Assign {
        /// The new owner.
        to: String,
    },
    /// Ask the live owner to let go in favour of `to`.
    Drain {
        /// The next owner.
        to: String,
    },
    /// Remove the drain annotations: the object stays with its current owner.
    CancelDrain,
}

/// The sharder's decision for an object in `state` whose rendezvous owner among the live
/// members is `desired` (`None`: no members), where `is_live` tells whether a replica is a
/// live member by the sharder's clock.
///
/// ```
/// use kinformer::sharding::{ShardAction, ShardState, decide};
/// let live = |m: &str| m == "a" || m == "b";
/// let owned_by_a = ShardState { shard: Some("a"), ..ShardState::default() };
/// assert_eq!(decide(&owned_by_a, Some("b"), live), ShardAction::Drain { to: "b".into() });
/// let acknowledged = ShardState { drain_to: Some("b"), drained: Some("b"), ..owned_by_a };
/// assert_eq!(decide(&acknowledged, Some("b"), live), ShardAction::Assign { to: "b".into() });
/// let owned_by_dead = ShardState { shard: Some("c"), ..ShardState::default() };
/// assert_eq!(decide(&owned_by_dead, Some("b"), live), ShardAction::Assign { to: "b".into() });
/// ```
pub fn decide(
    state: &ShardState<'_>,
    desired: Option<&str>,
    is_live: impl Fn(&str) -> bool,
) -> ShardAction {
    let Some(desired) = desired else {
        return ShardAction::Keep;
    };
    let assign = || ShardAction::Assign {
        to: desired.to_owned(),
    };
    match state.shard {
        None => assign(),
        Some(owner) if !is_live(owner) => assign(),
        Some(owner) if owner == desired => {
            if state.drain_to.is_some() || state.drained.is_some() {
                ShardAction::CancelDrain
            } else {
                ShardAction::Keep
            }
        }
        Some(_) => match (state.drain_to, state.drained) {
            (Some(to), Some(acked)) if to == desired && acked == desired => assign(),
            (Some(to), _) if to == desired => ShardAction::Keep,
            _ => ShardAction::Drain {
                to: desired.to_owned(),
            },
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state<'a>(
        shard: Option<&'a str>,
        drain_to: Option<&'a str>,
        drained: Option<&'a str>,
    ) -> ShardState<'a> {
        ShardState {
            shard,
            drain_to,
            drained,
        }
    }

    #[test]
    fn the_sharder_drains_live_owners_and_reassigns_dead_ones_at_once() {
        let live = |m: &str| ["a", "b"].contains(&m);
        let assign = |to: &str| ShardAction::Assign { to: to.into() };
        let drain = |to: &str| ShardAction::Drain { to: to.into() };
        assert_eq!(
            decide(&state(None, None, None), Some("a"), live),
            assign("a")
        );
        assert_eq!(
            decide(&state(None, None, None), None, live),
            ShardAction::Keep
        );
        assert_eq!(
            decide(&state(Some("a"), None, None), Some("a"), live),
            ShardAction::Keep
        );
        assert_eq!(
            decide(&state(Some("a"), None, None), Some("b"), live),
            drain("b")
        );
        // Waiting for the acknowledgement.
        assert_eq!(
            decide(&state(Some("a"), Some("b"), None), Some("b"), live),
            ShardAction::Keep
        );
        // An acknowledgement of another target does not count.
        assert_eq!(
            decide(&state(Some("a"), Some("b"), Some("c")), Some("b"), live),
            ShardAction::Keep
        );
        assert_eq!(
            decide(&state(Some("a"), Some("b"), Some("b")), Some("b"), live),
            assign("b")
        );
        // The target changed while draining: ask again for the new one.
        assert_eq!(
            decide(&state(Some("a"), Some("c"), Some("c")), Some("b"), live),
            drain("b")
        );
        // The object belongs to its owner again: cancel.
        assert_eq!(
            decide(&state(Some("a"), Some("b"), None), Some("a"), live),
            ShardAction::CancelDrain
        );
        assert_eq!(
            decide(&state(Some("a"), Some("b"), Some("b")), Some("a"), live),
            ShardAction::CancelDrain
        );
        // A dead owner (lease expired) is not asked.
        assert_eq!(
            decide(&state(Some("c"), Some("b"), None), Some("b"), live),
            assign("b")
        );
    }
}
