//! Reads: get, paged lists at a revision, the event history.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use crate::object::{StoredObject, object_key};
use crate::resource::ResourceDef;
use crate::status::ApiError;

use super::*;

impl Store {
    /// The current version of one object.
    pub fn get_at(
        &self,
        ridx: usize,
        namespace: Option<&str>,
        name: &str,
    ) -> Option<Arc<StoredObject>> {
        let g = self.inner.read();
        let ns = match g.resources.get(ridx) {
            Some(d) if d.namespaced => namespace.unwrap_or("default"),
            _ => "",
        };
        g.objects.get(ridx)?.get(&object_key(ns, name)).cloned()
    }

    pub(super) fn def(&self, ridx: usize) -> Result<Arc<ResourceDef>, ApiError> {
        self.inner
            .read()
            .resources
            .get(ridx)
            .cloned()
            .ok_or_else(|| ApiError::internal("unknown resource index"))
    }

    /// Reads one page of a list.
    ///
    /// `at`: the revision to read at (`None` = current); it must not be compacted (else 410
    /// Gone) nor in the future (else 504). `after`: exclusive start key (from a continue
    /// token). `limit` 0 = no limit. `filter` selects items.
    ///
    /// # Errors
    /// 410 Gone for a compacted revision, 504 for a future one.
    pub fn list_page(
        &self,
        ridx: usize,
        namespace: Option<&str>,
        at: Option<u64>,
        after: Option<&str>,
        limit: usize,
        mut filter: impl FnMut(&StoredObject) -> bool,
    ) -> Result<ListPage, ApiError> {
        let g = self.inner.read();
        let objects = g
            .objects
            .get(ridx)
            .ok_or_else(|| ApiError::internal("unknown resource index"))?;
        let revision = at.unwrap_or(g.revision);
        if revision > g.revision {
            return Err(ApiError::rv_too_large(revision, g.revision));
        }
        if revision < g.compacted {
            return Err(ApiError::too_old(revision));
        }
        // The state at `revision` = current state overridden by the pre-image of the first
        // later write of each key.
        let mut overlay: BTreeMap<String, Option<Arc<StoredObject>>> = BTreeMap::new();
        if revision < g.revision {
            let skip = (revision - g.compacted) as usize;
            for e in g.history.iter().skip(skip) {
                if e.resource == ridx {
                    overlay
                        .entry(e.object.key())
                        .or_insert_with(|| e.prev.clone());
                }
            }
        }
        let prefix = namespace.map(|n| format!("{n}/")).unwrap_or_default();
        let start: Bound<&str> = match after {
            Some(a) if a >= prefix.as_str() => Bound::Excluded(a),
            _ => Bound::Included(prefix.as_str()),
        };
        let range = (start, Bound::Unbounded);
        let mut cur = objects.range::<str, _>(range).peekable();
        let mut ov = overlay.range::<str, _>(range).peekable();
        let mut items = Vec::new();
        let mut more_after = None;
        loop {
            let next: Option<(&String, Option<&Arc<StoredObject>>)> = match (cur.peek(), ov.peek())
            {
                (None, None) => None,
                (Some(_), None) => cur.next().map(|(k2, v)| (k2, Some(v))),
                (None, Some(_)) => ov.next().map(|(k, v)| (k, v.as_ref())),
                (Some((ck, _)), Some((ok, _))) => {
                    if ck < ok {
                        cur.next().map(|(k, v)| (k, Some(v)))
                    } else if ok < ck {
                        ov.next().map(|(k, v)| (k, v.as_ref()))
                    } else {
                        cur.next();
                        ov.next().map(|(k, v)| (k, v.as_ref()))
                    }
                }
            };
            let Some((key, obj)) = next else { break };
            if !key.starts_with(prefix.as_str()) {
                break;
            }
            let Some(obj) = obj else { continue };
            if limit > 0 && items.len() >= limit {
                more_after = items.last().map(|o: &Arc<StoredObject>| o.key());
                break;
            }
            if filter(obj) {
                items.push(obj.clone());
            }
        }
        Ok(ListPage {
            revision,
            items,
            more_after,
        })
    }

    /// Events after `rev` (at most `max`), in revision order.
    ///
    /// # Errors
    /// 410 Gone when events after `rev` have been compacted away.
    pub fn events_after(&self, rev: u64, max: usize) -> Result<Vec<Event>, ApiError> {
        let g = self.inner.read();
        if rev < g.compacted {
            return Err(ApiError::too_old(rev));
        }
        let skip = (rev - g.compacted) as usize;
        Ok(g.history.iter().skip(skip).take(max).cloned().collect())
    }

    /// Every current object of a resource (all namespaces, key order) and the revision.
    pub fn snapshot_at(&self, ridx: usize) -> (u64, Vec<Arc<StoredObject>>) {
        let g = self.inner.read();
        let items = g
            .objects
            .get(ridx)
            .map(|m| m.values().cloned().collect())
            .unwrap_or_default();
        (g.revision, items)
    }

    /// Number of objects of a resource.
    pub fn len_at(&self, ridx: usize) -> usize {
        self.inner.read().objects.get(ridx).map_or(0, BTreeMap::len)
    }

    /// Every namespace some current object of a namespaced resource lives in, with the oldest
    /// such object (lowest revision): what [`crate::namespaces`] shows for a namespace that has
    /// no `Namespace` object of its own.
    pub fn namespaces_in_use(&self) -> BTreeMap<String, Arc<StoredObject>> {
        let g = self.inner.read();
        let mut out: BTreeMap<String, Arc<StoredObject>> = BTreeMap::new();
        for (def, objects) in g.resources.iter().zip(&g.objects) {
            if !def.namespaced {
                continue;
            }
            for o in objects.values() {
                match out.get(&o.namespace) {
                    Some(old) if old.revision <= o.revision => {}
                    _ => {
                        out.insert(o.namespace.clone(), o.clone());
                    }
                }
            }
        }
        out
    }

    /// True if a core `Namespace` object named `name` is stored.
    pub fn namespace_object_exists(&self, name: &str) -> bool {
        let g = self.inner.read();
        g.resources.iter().zip(&g.objects).any(|(d, objects)| {
            d.group.is_empty() && d.plural == "namespaces" && objects.contains_key(name)
        })
    }
}
