//! The write audit: which client wrote which object, when — and a checker of the sharding
//! invariant over it.
//!
//! When enabled ([`WriteAudit::enable`]), every write request over HTTP (create, update,
//! patch, delete; refused ones too, with their status code) is recorded with its writer: the
//! `fieldManager` query parameter if given, else the `User-Agent` header. Writes through the
//! [`Store`](crate::Store) handle are not recorded (they are the test's own).
//!
//! The records are on the server's handle ([`ApiServer::audit`](crate::ApiServer::audit)) and,
//! as JSON, at `GET /debug/kinformer/writes`.
//!
//! [`check_write_windows`] then asserts that, for each object (or each owner's group of
//! objects), the write windows of different replicas never overlap outside a handover.

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::Value;
use tokio::time::Instant;

/// One recorded write request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteRecord {
    /// Order of arrival at the store (after the write was decided).
    pub seq: u64,
    /// When the write was decided.
    pub at: Instant,
    /// `fieldManager`, else `User-Agent`, else empty.
    pub writer: String,
    /// `POST`, `PUT`, `PATCH` or `DELETE`.
    pub verb: String,
    /// The resource's kind, e.g. `Pod`.
    pub kind: String,
    /// The object's namespace (empty for cluster-scoped objects).
    pub namespace: String,
    /// The object's name (empty if the request named none, e.g. a refused create).
    pub name: String,
    /// The object's controller owner as `Kind/name` (same namespace), if it has one.
    pub owner: Option<String>,
    /// The response status code.
    pub code: u16,
}

impl WriteRecord {
    /// The group a write belongs to for the invariant: its controller owner's
    /// `Kind/namespace/name` if it has one, else its own.
    pub fn group(&self) -> String {
        match &self.owner {
            Some(owner) => match owner.split_once('/') {
                Some((kind, name)) => format!("{kind}/{}/{name}", self.namespace),
                None => format!("{owner}/{}", self.namespace),
            },
            None => format!("{}/{}/{}", self.kind, self.namespace, self.name),
        }
    }
}

/// The server's write audit (see the module docs). Cheap to clone; off until enabled.
#[derive(Debug, Clone, Default)]
pub struct WriteAudit {
    inner: Arc<Mutex<State>>,
}

#[derive(Debug, Default)]
struct State {
    enabled: bool,
    next_seq: u64,
    records: Vec<WriteRecord>,
}

/// A write as the routes report it.
pub(crate) struct Write<'a> {
    pub writer: &'a str,
    pub verb: &'a str,
    pub kind: &'a str,
    pub namespace: &'a str,
    pub name: &'a str,
    pub object: Option<&'a Value>,
    pub code: u16,
}

/// The controller owner of an object as `Kind/name`.
pub(crate) fn controller_owner(object: &Value) -> Option<String> {
    object["metadata"]["ownerReferences"]
        .as_array()?
        .iter()
        .find(|r| r["controller"].as_bool() == Some(true))
        .and_then(|r| Some(format!("{}/{}", r["kind"].as_str()?, r["name"].as_str()?)))
}

impl WriteAudit {
    /// Starts recording.
    pub fn enable(&self) {
        self.inner.lock().enabled = true;
    }

    /// Stops recording (the records are kept).
    pub fn disable(&self) {
        self.inner.lock().enabled = false;
    }

    /// Whether writes are being recorded.
    pub fn is_enabled(&self) -> bool {
        self.inner.lock().enabled
    }

    /// The records so far, in arrival order.
    pub fn records(&self) -> Vec<WriteRecord> {
        self.inner.lock().records.clone()
    }

    /// The records as JSON (what `GET /debug/kinformer/writes` serves): each with its
    /// `seq`, `age_ms` (how long ago it was recorded), writer, verb, kind, namespace, name,
    /// owner and status code.
    pub fn to_json(&self) -> Value {
        let now = Instant::now();
        let records = self.inner.lock();
        Value::Array(
            records
                .records
                .iter()
                .map(|r| {
                    serde_json::json!({
                        "seq": r.seq,
                        "age_ms": u64::try_from(now.saturating_duration_since(r.at).as_millis()).unwrap_or(u64::MAX),
                        "writer": r.writer,
                        "verb": r.verb,
                        "kind": r.kind,
                        "namespace": r.namespace,
                        "name": r.name,
                        "owner": r.owner,
                        "code": r.code,
                    })
                })
                .collect(),
        )
    }

    /// Forgets the records.
    pub fn clear(&self) {
        self.inner.lock().records.clear();
    }

    pub(crate) fn record(&self, write: Write<'_>) {
        let mut state = self.inner.lock();
        if !state.enabled {
            return;
        }
        let seq = state.next_seq;
        state.next_seq += 1;
        state.records.push(WriteRecord {
            seq,
            at: Instant::now(),
            writer: write.writer.to_owned(),
            verb: write.verb.to_owned(),
            kind: write.kind.to_owned(),
            namespace: write.namespace.to_owned(),
            name: write.name.to_owned(),
            owner: write.object.and_then(controller_owner),
            code: write.code,
        });
    }
}

/// Two replicas whose write windows on one group overlapped outside a handover.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overlap {
    /// The group ([`WriteRecord::group`]).
    pub group: String,
    /// The writers in the order their windows opened within one tenure.
    pub writers: Vec<String>,
    /// The record that completed the overlap.
    pub at_seq: u64,
}

impl std::fmt::Display for Overlap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: writers {} without a handover between (write #{})",
            self.group,
            self.writers.join(" → "),
            self.at_seq
        )
    }
}

/// What [`check_write_windows`] checks.
pub struct WindowCheck<'a> {
    /// Whether a writer is a replica whose writes are checked (others, such as a kubelet or
    /// the test itself, are ignored).
    pub is_replica: &'a dyn Fn(&str) -> bool,
    /// Whether a writer's writes to a group are handovers of that group (a sharder moving
    /// it): they end the group's tenure.
    pub is_handover: &'a dyn Fn(&str) -> bool,
    /// Instants at which every group's tenure ends (membership changes, when ownership is
    /// not written to the objects).
    pub handovers_at: &'a [Instant],
    /// How many replicas may write a group within one tenure, one after the other: 1 when
    /// every move is a handover write, 2 when the new owner may start after the old one
    /// stopped without a write between (the windows must still not interleave).
    pub writers_per_tenure: usize,
}

impl std::fmt::Debug for WindowCheck<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WindowCheck")
            .field("handovers_at", &self.handovers_at)
            .field("writers_per_tenure", &self.writers_per_tenure)
            .finish_non_exhaustive()
    }
}

/// Checks that the write windows of different replicas on one group never overlap outside a
/// handover: within each tenure (between handovers of the group), the replicas' writes form
/// at most `writers_per_tenure` consecutive runs by distinct writers — so a pattern such as
/// `A … B … A` (both working on it at once) is an [`Overlap`].
///
/// ```
/// use kinformer_apiserver::audit::{WindowCheck, WriteRecord, check_write_windows};
/// use tokio::time::Instant;
/// let at = Instant::now();
/// let write = |seq, writer: &str| WriteRecord {
///     seq, at, writer: writer.into(), verb: "PUT".into(), kind: "ReplicaSet".into(),
///     namespace: "ns".into(), name: "web".into(), owner: None, code: 200,
/// };
/// let check = WindowCheck {
///     is_replica: &|w| w.starts_with("replica-"),
///     is_handover: &|w| w == "sharder",
///     handovers_at: &[],
///     writers_per_tenure: 1,
/// };
/// let moved = [write(0, "replica-a"), write(1, "sharder"), write(2, "replica-b")];
/// assert!(check_write_windows(&moved, &check).is_ok());
/// let overlapping = [write(0, "replica-a"), write(1, "replica-b"), write(2, "replica-a")];
/// assert_eq!(check_write_windows(&overlapping, &check).unwrap_err().len(), 1);
/// ```
///
/// # Errors
///
/// Every overlap found (one per group at most).
pub fn check_write_windows(
    records: &[WriteRecord],
    check: &WindowCheck<'_>,
) -> Result<(), Vec<Overlap>> {
    let mut marks: Vec<Instant> = check.handovers_at.to_vec();
    marks.sort();
    let mut by_group: BTreeMap<String, Vec<&WriteRecord>> = BTreeMap::new();
    for record in records {
        by_group.entry(record.group()).or_default().push(record);
    }
    let mut overlaps = Vec::new();
    for (group, mut writes) in by_group {
        writes.sort_by_key(|w| w.seq);
        let mut runs: Vec<String> = Vec::new();
        let mut next_mark = 0;
        for write in writes {
            while next_mark < marks.len() && marks[next_mark] <= write.at {
                next_mark += 1;
                runs.clear();
            }
            if (check.is_handover)(&write.writer) {
                runs.clear();
                continue;
            }
            if !(check.is_replica)(&write.writer) {
                continue;
            }
            if runs.last() == Some(&write.writer) {
                continue;
            }
            runs.push(write.writer.clone());
            if runs.len() > check.writers_per_tenure.max(1) {
                overlaps.push(Overlap {
                    group: group.clone(),
                    writers: runs.clone(),
                    at_seq: write.seq,
                });
                break;
            }
        }
    }
    if overlaps.is_empty() {
        Ok(())
    } else {
        Err(overlaps)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn record(seq: u64, at: Instant, writer: &str, name: &str, owner: Option<&str>) -> WriteRecord {
        WriteRecord {
            seq,
            at,
            writer: writer.into(),
            verb: "POST".into(),
            kind: "Pod".into(),
            namespace: "ns".into(),
            name: name.into(),
            owner: owner.map(str::to_owned),
            code: 201,
        }
    }

    fn check<'a>(marks: &'a [Instant], per_tenure: usize) -> WindowCheck<'a> {
        WindowCheck {
            is_replica: &|w| w.starts_with('r'),
            is_handover: &|w| w == "sharder",
            handovers_at: marks,
            writers_per_tenure: per_tenure,
        }
    }

    #[test]
    fn writes_are_grouped_by_controller_owner() {
        let now = Instant::now();
        let pod = record(0, now, "r0", "web-1", Some("ReplicaSet/web"));
        assert_eq!(pod.group(), "ReplicaSet/ns/web");
        let rs = WriteRecord {
            kind: "ReplicaSet".into(),
            ..record(1, now, "r0", "web", None)
        };
        assert_eq!(rs.group(), "ReplicaSet/ns/web");
        let object = serde_json::json!({"metadata": {"ownerReferences": [
            {"kind": "Deployment", "name": "d", "controller": false},
            {"kind": "ReplicaSet", "name": "web", "controller": true},
        ]}});
        assert_eq!(controller_owner(&object).as_deref(), Some("ReplicaSet/web"));
    }

    #[test]
    fn interleaved_replicas_fail_the_check_and_handovers_separate_tenures() {
        let t = Instant::now();
        let s = |i: u64| t + Duration::from_secs(i);
        let rs = Some("ReplicaSet/web");
        // Two replicas creating pods of one ReplicaSet at once: must fail, even with two
        // writers allowed per tenure.
        let overlapping = [
            record(0, s(0), "r0", "web-1", rs),
            record(1, s(1), "r1", "web-2", rs),
            record(2, s(2), "r0", "web-3", rs),
        ];
        let found = check_write_windows(&overlapping, &check(&[], 2)).unwrap_err();
        assert_eq!(found[0].writers, ["r0", "r1", "r0"]);
        assert_eq!(found[0].group, "ReplicaSet/ns/web");
        assert!(found[0].to_string().contains("r0 → r1 → r0"));
        // One writer after the other without a handover: fine with 2, not with 1.
        let sequential = &overlapping[..2];
        assert!(check_write_windows(sequential, &check(&[], 2)).is_ok());
        assert!(check_write_windows(sequential, &check(&[], 1)).is_err());
        // A handover write between them, or a membership change, separates the tenures.
        let handed = [
            record(0, s(0), "r0", "web-1", rs),
            record(1, s(1), "sharder", "web", rs),
            record(2, s(2), "r1", "web-2", rs),
        ];
        assert!(check_write_windows(&handed, &check(&[], 1)).is_ok());
        assert!(check_write_windows(sequential, &check(&[s(1)], 1)).is_ok());
        assert!(check_write_windows(&handed, &check(&[], 1)).is_ok());
        // Writers that are not replicas are ignored.
        let kubelet = [
            overlapping[0].clone(),
            record(1, s(1), "kubelet", "web-2", rs),
            record(2, s(2), "r0", "web-3", rs),
        ];
        assert!(check_write_windows(&kubelet, &check(&[], 1)).is_ok());
    }
}
