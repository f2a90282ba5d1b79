//! Assignment: which member owns a key, by rendezvous (highest-random-weight) hashing.
//!
//! Properties:
//! - **Deterministic and stable**: every replica computes the same owner from the same member
//!   set, on any machine and in any build — the weight is FNV-1a (64 bit) of the member and the
//!   key, finished with MurmurHash3's 64-bit mixer, never a randomly seeded hasher.
//! - **Minimal movement**: when a member joins, only the keys it now wins move (to it); when
//!   one leaves, only its keys move. With `N` members about `1/N` of the keys move per change.
//! - **Order independent**: the owner does not depend on the order of the member list.

use std::sync::Arc;

use kube_core::Resource;
use kube_core::metadata::ObjectMeta;

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// FNV-1a, 64 bit, continuing from `state`.
fn fnv1a(mut state: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        state ^= u64::from(b);
        state = state.wrapping_mul(FNV_PRIME);
    }
    state
}

/// MurmurHash3's 64-bit finaliser: spreads FNV's weak low bits over the whole word.
fn fmix64(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^= h >> 33;
    h
}

/// The rendezvous weight of `member` for `key`: the member with the highest weight owns the
/// key. Stable across processes, machines and releases.
///
/// ```
/// use kinformer::sharding::rendezvous_weight;
/// assert_eq!(rendezvous_weight("a", "ns/x"), rendezvous_weight("a", "ns/x"));
/// assert_ne!(rendezvous_weight("a", "ns/x"), rendezvous_weight("b", "ns/x"));
/// ```
pub fn rendezvous_weight(member: &str, key: &str) -> u64 {
    // The 0xff separator cannot occur in UTF-8, so ("ab", "c") and ("a", "bc") differ.
    let state = fnv1a(fnv1a(FNV_OFFSET, member.as_bytes()), &[0xff]);
    fmix64(fnv1a(state, key.as_bytes()))
}

/// The owner of `key` among `members` (highest weight; equal weights, which practically never
/// happen, go to the smaller name); `None` if there are no members.
///
/// ```
/// use kinformer::sharding::rendezvous_owner;
/// let members = ["replica-0", "replica-1", "replica-2"];
/// let owner = rendezvous_owner(members, "default/web").unwrap();
/// assert!(members.contains(&owner));
/// // Removing a member that does not own the key does not move it.
/// let others: Vec<&str> = members.iter().copied().filter(|m| *m != owner).collect();
/// let rest: Vec<&str> = members.iter().copied().filter(|m| *m == owner || *m != others[0]).collect();
/// assert_eq!(rendezvous_owner(rest, "default/web"), Some(owner));
/// assert_eq!(rendezvous_owner(Vec::<&str>::new(), "default/web"), None);
/// ```
pub fn rendezvous_owner<'a, I>(members: I, key: &str) -> Option<&'a str>
where
    I: IntoIterator<Item = &'a str>,
{
    members
        .into_iter()
        .map(|member| (rendezvous_weight(member, key), member))
        .max_by(|(wa, ma), (wb, mb)| wa.cmp(wb).then_with(|| mb.cmp(ma)))
        .map(|(_, member)| member)
}

/// A function from an object's metadata to its shard key.
pub type ShardKeyFunc = Arc<dyn Fn(&ObjectMeta) -> Option<String> + Send + Sync>;

/// What an object is sharded by: the string whose rendezvous hash picks its owner.
///
/// Objects with equal keys always share an owner, so [`Namespace`](Self::Namespace) keeps a
/// namespace's objects together (for controllers that reconcile across a namespace).
#[derive(Clone, Default)]
#[non_exhaustive]
pub enum ShardKey {
    /// `namespace/name` (or `name` for cluster-scoped objects), the work queue key.
    #[default]
    NamespaceName,
    /// The namespace only (cluster-scoped objects: their name).
    Namespace,
    /// `metadata.uid`: a re-created object may move.
    Uid,
    /// A function of the metadata.
    Custom(ShardKeyFunc),
}

impl std::fmt::Debug for ShardKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::NamespaceName => "NamespaceName",
            Self::Namespace => "Namespace",
            Self::Uid => "Uid",
            Self::Custom(_) => "Custom",
        })
    }
}

impl ShardKey {
    /// The shard key of an object's metadata; `None` if the field it uses is missing.
    pub fn of_meta(&self, meta: &ObjectMeta) -> Option<String> {
        let name = meta.name.as_deref();
        let namespace = meta.namespace.as_deref().filter(|ns| !ns.is_empty());
        match self {
            Self::NamespaceName => Some(match (namespace, name?) {
                (Some(ns), name) => format!("{ns}/{name}"),
                (None, name) => name.to_owned(),
            }),
            Self::Namespace => namespace.or(name).map(str::to_owned),
            Self::Uid => meta.uid.clone(),
            Self::Custom(key) => key(meta),
        }
    }

    /// The shard key of an object.
    pub fn of<K: Resource>(&self, obj: &K) -> Option<String> {
        self.of_meta(obj.meta())
    }

    /// The shard key from a work-queue key (`namespace/name`), for the keys that can be
    /// computed from it ([`NamespaceName`](Self::NamespaceName) and
    /// [`Namespace`](Self::Namespace)); `None` for the others.
    pub fn of_queue_key(&self, key: &str) -> Option<String> {
        match self {
            Self::NamespaceName => Some(key.to_owned()),
            Self::Namespace => Some(key.split_once('/').map_or(key, |(ns, _)| ns).to_owned()),
            Self::Uid | Self::Custom(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_are_stable_across_builds() {
        // Fixed values: a change here would move objects between replicas of different
        // versions during a rolling upgrade.
        // (Computed independently of this code.)
        assert_eq!(
            fnv1a(FNV_OFFSET, b"a"),
            0xaf63_dc4c_8601_ec8c,
            "FNV-1a's test vector"
        );
        assert_eq!(rendezvous_weight("", ""), 0x1bbd_5c81_3c69_a8d7);
        assert_eq!(
            rendezvous_weight("replica-0", "default/web"),
            0x90ba_6f09_9a5f_11f5
        );
    }

    #[test]
    fn keys_spread_evenly_and_a_join_moves_only_keys_to_the_new_member() {
        let three = ["r0", "r1", "r2"];
        let four = ["r0", "r1", "r2", "r3"];
        let mut counts = [0usize; 4];
        let mut moved = 0;
        for i in 0..30_000 {
            let key = format!("ns-{}/pod-{i}", i % 7);
            let before = rendezvous_owner(three, &key).unwrap();
            let after = rendezvous_owner(four, &key).unwrap();
            if before != after {
                assert_eq!(after, "r3", "a join moves keys only to the joiner");
                moved += 1;
            }
            counts[four.iter().position(|m| *m == after).unwrap()] += 1;
        }
        for count in counts {
            assert!((6_500..8_500).contains(&count), "{counts:?}");
        }
        assert!((6_500..8_500).contains(&moved), "{moved}");
    }

    #[test]
    fn shard_keys_read_the_fields_they_name() {
        let meta = ObjectMeta {
            name: Some("web".into()),
            namespace: Some("prod".into()),
            uid: Some("u-1".into()),
            ..ObjectMeta::default()
        };
        assert_eq!(
            ShardKey::NamespaceName.of_meta(&meta).as_deref(),
            Some("prod/web")
        );
        assert_eq!(ShardKey::Namespace.of_meta(&meta).as_deref(), Some("prod"));
        assert_eq!(ShardKey::Uid.of_meta(&meta).as_deref(), Some("u-1"));
        let custom = ShardKey::Custom(Arc::new(|m: &ObjectMeta| m.name.clone()));
        assert_eq!(custom.of_meta(&meta).as_deref(), Some("web"));
        assert_eq!(
            ShardKey::Namespace.of_queue_key("prod/web").as_deref(),
            Some("prod")
        );
        assert_eq!(ShardKey::Uid.of_queue_key("prod/web"), None);
        let cluster = ObjectMeta {
            name: Some("node-1".into()),
            ..ObjectMeta::default()
        };
        assert_eq!(
            ShardKey::NamespaceName.of_meta(&cluster).as_deref(),
            Some("node-1")
        );
        assert_eq!(
            ShardKey::Namespace.of_meta(&cluster).as_deref(),
            Some("node-1")
        );
    }
}
