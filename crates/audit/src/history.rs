//! The write history rebuilt from the logs: every committed write whose
//! response carried its `resourceVersion` (a write logged at the
//! `RequestResponse` level), placed by that revision.
//!
//! The API concepts page defines an object's `metadata.resourceVersion` as
//! the version it was last modified at, and a list's as the version the
//! list was built at. On an etcd-backed API server both are etcd
//! revisions, one counter for the whole store, which is what lets writes
//! logged by different API servers be put in one order. (The page asks
//! *clients* to treat resource versions as opaque; this is an analysis of
//! what servers did, and it says so in [`crate::CannotJudge`] when a
//! version is not a number.)
//!
//! Memory is bounded by the cluster, not the log: a few versions per
//! object ([`VERSIONS_KEPT`]), and the most recent [`RECENT_WRITES`] writes
//! in revision order for "what did a read miss".

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};

use serde::Serialize;

use crate::time::Micros;

/// Versions kept per object: enough to tell what a stale read showed
/// (deleted, recreated, changed since) without keeping every version.
pub const VERSIONS_KEPT: usize = 8;

/// Recent writes kept in revision order, to count what a stale read missed.
pub const RECENT_WRITES: usize = 1 << 16;

/// Deleted objects whose history is kept (to tell a stale read that it
/// showed them alive); older ones are forgotten, so that a log of months
/// of churn does not grow the history without end.
pub const DELETED_KEPT: usize = 1 << 16;

/// A resource: its API group (empty for the core group) and its plural name.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Resource {
    /// The API group.
    pub group: String,
    /// The resource, e.g. `pods`.
    pub resource: String,
}

impl Resource {
    /// A resource of a group.
    pub fn new(group: &str, resource: &str) -> Resource {
        Resource { group: group.to_string(), resource: resource.to_string() }
    }

    /// Resources whose writes are not decisions on what a client read: Lease
    /// renewals (leader election, node heartbeats) and Events (records of
    /// what happened). A write to them after a stale read is not counted as
    /// acting on it.
    pub fn is_bookkeeping(&self) -> bool {
        matches!(
            (self.group.as_str(), self.resource.as_str()),
            ("coordination.k8s.io", "leases") | ("", "events") | ("events.k8s.io", "events")
        )
    }

    /// Resources commonly kept in an etcd of their own (Events, through the
    /// API server's `--etcd-servers-overrides`): their resourceVersions
    /// count in another sequence, so they are left out of the history.
    pub fn has_own_revisions(&self) -> bool {
        matches!((self.group.as_str(), self.resource.as_str()), ("", "events") | ("events.k8s.io", "events"))
    }
}

impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.group.is_empty() {
            write!(f, "{}", self.resource)
        } else {
            write!(f, "{}.{}", self.resource, self.group)
        }
    }
}

/// One object: resource, namespace and name (across incarnations).
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct ObjectId {
    /// Its resource.
    pub resource: Resource,
    /// Its namespace; empty for cluster-scoped objects.
    pub namespace: String,
    /// Its name.
    pub name: String,
}

impl fmt::Display for ObjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.namespace.is_empty() {
            write!(f, "{} {}", self.resource, self.name)
        } else {
            write!(f, "{} {}/{}", self.resource, self.namespace, self.name)
        }
    }
}

/// What a write did to its object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Change {
    /// Created it (a new incarnation, a new uid).
    Created,
    /// Changed it.
    Updated,
    /// Began its deletion: it is still there, marked with a `deletionTimestamp`.
    Terminating,
    /// Removed it.
    Deleted,
}

/// Where an event is: its file and line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct At {
    /// Index of the file among the inputs.
    pub source: usize,
    /// Line in that file.
    pub line: u64,
    /// Its `stageTimestamp`.
    pub time: Micros,
}

/// One committed version of an object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Version {
    /// The revision it was committed at.
    pub revision: u64,
    /// The incarnation.
    pub uid: String,
    /// What the write did.
    pub change: Change,
    /// Who wrote it: an index into the analysis' clients.
    pub by: usize,
    /// The API server that logged it (index into the inputs' servers).
    pub server: usize,
    /// Where the write is in the logs.
    pub at: At,
}

/// The versions of one object, oldest first (by revision).
#[derive(Clone, Debug, Default)]
pub struct ObjectHistory {
    versions: VecDeque<Version>,
}

impl ObjectHistory {
    /// Adds a version in revision order (a write logged by another API
    /// server can arrive a little late); the oldest is dropped past
    /// [`VERSIONS_KEPT`]. A version already known is not added twice.
    pub fn add(&mut self, v: Version) {
        let pos = self.versions.iter().rposition(|x| x.revision <= v.revision).map_or(0, |i| i + 1);
        if pos > 0 && self.versions[pos - 1].revision == v.revision {
            return;
        }
        self.versions.insert(pos, v);
        if self.versions.len() > VERSIONS_KEPT {
            self.versions.pop_front();
        }
    }

    /// The newest version committed before `time` (its write's response
    /// complete before then), if any is known.
    pub fn as_of(&self, time: Micros) -> Option<&Version> {
        self.versions.iter().rev().find(|v| v.at.time < time)
    }

    /// The newest known version.
    pub fn latest(&self) -> Option<&Version> {
        self.versions.back()
    }

    /// Known versions after `revision` and committed before `time`, oldest first.
    pub fn after(&self, revision: u64, time: Micros) -> impl Iterator<Item = &Version> {
        self.versions.iter().filter(move |v| v.revision > revision && v.at.time < time)
    }
}

/// A write in the recent-writes index: its resource and namespace (as
/// indexes into the history's tables) and when its response was complete.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteMark {
    resource: u32,
    namespace: u32,
    /// The API server that logged it (index into the inputs' servers).
    pub server: usize,
    /// When its response was complete.
    pub time: Micros,
}

/// FNV-1a for the object index: fixed, so nothing depends on a random
/// seed (the index is only looked up, never iterated).
#[derive(Default)]
pub struct Fnv(u64);

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 { 0xcbf2_9ce4_8422_2325 } else { self.0 };
        for b in bytes {
            h = (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = h;
    }
}

/// Every object's history, and the recent writes by revision.
#[derive(Default)]
pub struct History {
    objects: HashMap<ObjectId, ObjectHistory, BuildHasherDefault<Fnv>>,
    /// Deleted objects, oldest first, to forget past [`DELETED_KEPT`].
    deleted: VecDeque<ObjectId>,
    recent: BTreeMap<u64, WriteMark>,
    /// Resources and namespaces by index, for the recent-writes index.
    resources: BTreeMap<Resource, u32>,
    namespaces: BTreeMap<String, u32>,
    /// Revisions of writes with a response revision, by resource.
    pub writes_by_resource: BTreeMap<Resource, u64>,
    /// The lowest and highest revision written.
    pub revisions: Option<(u64, u64)>,
}

impl History {
    /// Records a committed version.
    pub fn record(&mut self, object: &ObjectId, v: Version) {
        let revision = v.revision;
        let time = v.at.time;
        let deleted = v.change == Change::Deleted;
        let v_server = v.server;
        *self.writes_by_resource.entry(object.resource.clone()).or_default() += 1;
        self.revisions = Some(match self.revisions {
            None => (revision, revision),
            Some((lo, hi)) => (lo.min(revision), hi.max(revision)),
        });
        match self.objects.get_mut(object) {
            Some(h) => h.add(v),
            None => {
                let mut h = ObjectHistory::default();
                h.add(v);
                self.objects.insert(object.clone(), h);
            }
        }
        let resource = intern(&mut self.resources, &object.resource);
        let namespace = match self.namespaces.get(object.namespace.as_str()) {
            Some(&n) => n,
            None => {
                let n = self.namespaces.len() as u32;
                self.namespaces.insert(object.namespace.clone(), n);
                n
            }
        };
        self.recent.insert(revision, WriteMark { resource, namespace, server: v_server, time });
        if self.recent.len() > RECENT_WRITES {
            self.recent.pop_first();
        }
        if deleted {
            self.deleted.push_back(object.clone());
            if self.deleted.len() > DELETED_KEPT
                && let Some(old) = self.deleted.pop_front()
                && self.objects.get(&old).and_then(ObjectHistory::latest).is_some_and(|v| v.change == Change::Deleted)
            {
                self.objects.remove(&old);
            }
        }
    }

    /// One object's history.
    pub fn object(&self, id: &ObjectId) -> Option<&ObjectHistory> {
        self.objects.get(id)
    }

    /// How many objects have a history.
    pub fn objects(&self) -> usize {
        self.objects.len()
    }

    /// Whether any write to this resource carried its revision.
    pub fn audits(&self, resource: &Resource) -> bool {
        self.writes_by_resource.contains_key(resource)
    }

    /// How many recent writes to `resource` (in `namespace`, unless it is
    /// empty; logged by `server`, if given) after `revision` had completed
    /// before `time`, and whether the recent-writes index still reached
    /// back that far.
    pub fn writes_after(
        &self,
        resource: &Resource,
        namespace: &str,
        server: Option<usize>,
        revision: u64,
        time: Micros,
    ) -> (u64, bool) {
        let complete = self.recent.first_key_value().is_none_or(|(first, _)| *first <= revision.saturating_add(1))
            || self.revisions.is_some_and(|(lo, _)| lo > revision);
        let Some(&resource) = self.resources.get(resource) else { return (0, complete) };
        let namespace = if namespace.is_empty() { None } else { Some(self.namespaces.get(namespace).copied()) };
        let n = self
            .recent
            .range(revision.saturating_add(1)..)
            .filter(|(_, w)| {
                w.time < time
                    && w.resource == resource
                    && namespace.is_none_or(|ns| ns == Some(w.namespace))
                    && server.is_none_or(|s| s == w.server)
            })
            .count();
        (n as u64, complete)
    }

    /// The first write after `revision`: when the state at `revision` stopped being current.
    pub fn first_after(&self, revision: u64) -> Option<(u64, &WriteMark)> {
        self.recent.range(revision.saturating_add(1)..).next().map(|(r, w)| (*r, w))
    }
}

/// The index of a resource in a table, adding it if new.
fn intern(table: &mut BTreeMap<Resource, u32>, resource: &Resource) -> u32 {
    match table.get(resource) {
        Some(&i) => i,
        None => {
            let i = table.len() as u32;
            table.insert(resource.clone(), i);
            i
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(revision: u64, time: Micros, uid: &str, change: Change) -> Version {
        Version { revision, uid: uid.into(), change, by: 0, server: 0, at: At { source: 0, line: revision, time } }
    }

    #[test]
    fn versions_stay_in_revision_order_and_answer_as_of_a_time() {
        let mut h = ObjectHistory::default();
        h.add(v(4, 100, "a", Change::Created));
        h.add(v(14, 300, "a", Change::Deleted));
        // Logged by another server, arriving after a later revision.
        h.add(v(12, 250, "a", Change::Terminating));
        h.add(v(12, 250, "a", Change::Terminating));
        let revs: Vec<u64> = h.versions.iter().map(|v| v.revision).collect();
        assert_eq!(revs, [4, 12, 14]);
        assert_eq!(h.as_of(260).map(|v| v.revision), Some(12));
        assert_eq!(h.as_of(100), None, "a write is known once its response is complete");
        assert_eq!(h.after(4, 301).map(|v| v.revision).collect::<Vec<_>>(), [12, 14]);
    }

    #[test]
    fn an_object_keeps_a_bounded_number_of_versions() {
        let mut h = ObjectHistory::default();
        for r in 0..100 {
            h.add(v(r, r as Micros, "a", Change::Updated));
        }
        assert_eq!(h.versions.len(), VERSIONS_KEPT);
        assert_eq!(h.latest().map(|v| v.revision), Some(99));
    }

    #[test]
    fn long_deleted_objects_are_forgotten_so_churn_does_not_grow_the_history() {
        let mut history = History::default();
        let pod = |i: usize| ObjectId {
            resource: Resource::new("", "pods"),
            namespace: "default".into(),
            name: format!("p{i}"),
        };
        for i in 0..=DELETED_KEPT {
            let r = 2 * i as u64;
            history.record(&pod(i), v(r + 1, r as Micros, "a", Change::Created));
            history.record(&pod(i), v(r + 2, r as Micros + 1, "a", Change::Deleted));
        }
        assert!(history.object(&pod(0)).is_none(), "the oldest deletion is forgotten");
        assert!(history.object(&pod(1)).is_some());
        assert_eq!(history.objects(), DELETED_KEPT);
    }

    #[test]
    fn recent_writes_say_what_a_read_at_a_revision_missed() {
        let mut history = History::default();
        let pod = ObjectId { resource: Resource::new("", "pods"), namespace: "default".into(), name: "web-0".into() };
        history.record(&pod, v(5, 10, "a", Change::Created));
        history.record(&pod, v(7, 20, "a", Change::Updated));
        history.record(&pod, v(9, 40, "a", Change::Updated));
        let pods = Resource::new("", "pods");
        assert_eq!(history.writes_after(&pods, "default", None, 5, 30), (1, true));
        assert_eq!(history.writes_after(&pods, "", None, 5, 41), (2, true));
        assert_eq!(history.writes_after(&pods, "kube-system", None, 5, 41), (0, true));
        assert_eq!(history.writes_after(&pods, "", Some(1), 5, 41), (0, true), "logged by another server");
        assert_eq!(history.first_after(5).map(|(r, _)| r), Some(7));
        assert!(history.audits(&Resource::new("", "pods")) && !history.audits(&Resource::new("apps", "replicasets")));
    }
}
