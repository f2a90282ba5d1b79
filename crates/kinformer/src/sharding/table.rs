//! [`ShardTable`]: what the sharder knows of each object — its shard key, version, shard
//! label and drain annotations — in a few dozen bytes per object.
//!
//! The sharder's informer feeds it from its handlers; the sharder's passes read it. Replica
//! names are interned, so a label costs one pointer per object.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use kube_core::metadata::ObjectMeta;
use parking_lot::Mutex;

use super::assignment::ShardKey;
use super::handover::ShardState;

/// One object's row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Row {
    /// The string hashed to pick the owner.
    pub(crate) shard_key: Box<str>,
    /// `metadata.resourceVersion`.
    pub(crate) version: Box<str>,
    pub(crate) shard: Option<Arc<str>>,
    pub(crate) drain_to: Option<Arc<str>>,
    pub(crate) drained: Option<Arc<str>>,
}

impl Row {
    /// The row's shard state.
    pub(crate) fn state(&self) -> ShardState<'_> {
        ShardState {
            shard: self.shard.as_deref(),
            drain_to: self.drain_to.as_deref(),
            drained: self.drained.as_deref(),
        }
    }
}

/// Rows by `namespace/name`.
#[derive(Debug, Default)]
pub(crate) struct ShardTable {
    rows: Mutex<HashMap<Box<str>, Row>>,
    names: Mutex<HashSet<Arc<str>>>,
}

impl ShardTable {
    fn intern(&self, name: Option<&str>) -> Option<Arc<str>> {
        let name = name?;
        let mut names = self.names.lock();
        if let Some(interned) = names.get(name) {
            return Some(Arc::clone(interned));
        }
        let interned: Arc<str> = Arc::from(name);
        names.insert(Arc::clone(&interned));
        Some(interned)
    }

    /// Records the current state of an object.
    pub(crate) fn upsert(&self, meta: &ObjectMeta, key: &ShardKey) {
        let (Some(name), Some(version), Some(shard_key)) = (
            meta.name.as_deref(),
            meta.resource_version.as_deref(),
            key.of_meta(meta),
        ) else {
            return;
        };
        let state = ShardState::of_meta(meta);
        let row = Row {
            shard_key: shard_key.into(),
            version: version.into(),
            shard: self.intern(state.shard),
            drain_to: self.intern(state.drain_to),
            drained: self.intern(state.drained),
        };
        let id = object_id(meta.namespace.as_deref(), name);
        self.rows.lock().insert(id, row);
    }

    /// Forgets a deleted object.
    pub(crate) fn remove(&self, meta: &ObjectMeta) {
        if let Some(name) = meta.name.as_deref() {
            let id = object_id(meta.namespace.as_deref(), name);
            self.rows.lock().remove(&id);
        }
    }

    /// Calls `f` with each object's `(namespace, name)` and row.
    pub(crate) fn for_each(&self, mut f: impl FnMut(&str, &str, &Row)) {
        for (id, row) in self.rows.lock().iter() {
            let (ns, name) = id.split_once('/').unwrap_or(("", id));
            f(ns, name, row);
        }
    }

    /// How many objects the table holds.
    pub(crate) fn len(&self) -> usize {
        self.rows.lock().len()
    }
}

fn object_id(namespace: Option<&str>, name: &str) -> Box<str> {
    format!("{}/{name}", namespace.unwrap_or_default()).into()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::sharding::{DRAIN_ANNOTATION, SHARD_LABEL};

    #[test]
    fn rows_follow_upserts_and_removals_and_share_replica_names() {
        let table = ShardTable::default();
        let meta = |name: &str, rv: &str, shard: Option<&str>| ObjectMeta {
            name: Some(name.into()),
            namespace: Some("ns".into()),
            resource_version: Some(rv.into()),
            labels: shard.map(|s| BTreeMap::from([(SHARD_LABEL.to_owned(), s.to_owned())])),
            annotations: Some(BTreeMap::from([(
                DRAIN_ANNOTATION.to_owned(),
                "b".to_owned(),
            )])),
            ..ObjectMeta::default()
        };
        table.upsert(&meta("x", "1", None), &ShardKey::NamespaceName);
        table.upsert(&meta("x", "2", Some("a")), &ShardKey::NamespaceName);
        table.upsert(&meta("y", "3", Some("a")), &ShardKey::Namespace);
        let mut seen = Vec::new();
        table.for_each(|ns, name, row| {
            seen.push((ns.to_owned(), name.to_owned(), row.clone()));
        });
        seen.sort_by(|a, b| a.1.cmp(&b.1));
        assert_eq!(seen.len(), 2);
        let (x, y) = (&seen[0].2, &seen[1].2);
        assert_eq!((&*x.version, &*x.shard_key), ("2", "ns/x"));
        assert_eq!(&*y.shard_key, "ns");
        assert_eq!(x.state().shard, Some("a"));
        assert_eq!(x.state().drain_to, Some("b"));
        assert!(Arc::ptr_eq(
            x.shard.as_ref().unwrap(),
            y.shard.as_ref().unwrap()
        ));
        table.remove(&meta("x", "2", None));
        assert_eq!(table.len(), 1);
    }
}
