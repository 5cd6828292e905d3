//! The Recon trace: everything that happened in a run, each entry linked to
//! its causes. It is the contract between the simulator, which writes it,
//! and every reader: the CLI prints it, the playground draws it, the
//! explorer judges it, and exports hand it to other tools.
//!
//! - [`Trace`], [`Entry`], [`Event`]: what happened, where and why, the
//!   entries kept in chunks that never move ([`Entries`]), each with its
//!   [`Causes`], a reconcile's inputs and actions as [`Line`]s;
//! - [`Name`], [`Key`], [`Interner`]: the names and object keys entries
//!   repeat, each stored once and shared;
//! - [`text`]: how times, uids, entries and script steps read;
//! - [`explain`](mod@explain): a violation's causal chain in plain words, and the other
//!   findings (crashes, unavailability);
//! - [`inspect`]: the types of a snapshot of every view beside the store;
//! - [`export`]: the trace in other tools' formats (Perfetto).
//!
//! The JSON encoding is stable (no floats, no hash maps, fields in
//! declaration order), so [`Trace::hash`] identifies a run: same scenario
//! and seed, same hash, on every platform. This crate depends on no
//! simulator, so a reader (the page in the browser) can hold a trace
//! without carrying the machinery that made it.

mod causes;
pub mod entries;
pub mod explain;
pub mod export;
pub mod inspect;
mod lanes;
mod line;
mod shared;
pub mod text;
pub mod waits;

pub use causes::Causes;
pub use entries::Entries;
pub use lanes::{Lane, LaneId, LaneRole};
pub use line::Line;
pub use shared::{Interner, Key, Name, read_shared};

pub use explain::{
    CrashSummary, Explanation, ExplanationStep, Unavailability, crashes, explain, explain_all, unavailability,
};

use recon_abi::{EventType, HeldSync, Mitigation, PatchType, PodRef, Status, Verb};
use recon_scenario::Check;
use serde::{Deserialize, Serialize};

/// Index of an entry in the trace.
pub type EntryId = u64;

/// A whole run.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Trace {
    /// Scenario name.
    pub scenario: String,
    /// The seed the run used.
    pub seed: u64,
    /// Where things happen, in the order a reader shows them (see
    /// [`Lane`]); entries name their lane by index.
    pub lanes: Vec<Lane>,
    /// Every entry, in the order it happened; `entries[i].id == i`.
    pub entries: Entries,
}

/// One thing that happened.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    /// Position in the trace.
    pub id: EntryId,
    /// Virtual time in milliseconds.
    pub time_ms: u64,
    /// Where it happened: an index into [`Trace::lanes`].
    pub lane: LaneId,
    /// What happened.
    pub event: Event,
    /// Entries that led to this one, most direct first.
    #[serde(default, skip_serializing_if = "Causes::is_empty")]
    pub causes: Causes,
}

/// Where a read was served from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ServedFrom {
    /// The API server's watch cache.
    Cache,
    /// The store (a quorum read).
    Store,
}

/// Why a read was made: what its answer feeds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ReadPurpose {
    /// An informer's list, or the initial state of its watch-list: what
    /// the component's cache (its view of the cluster) is rebuilt from.
    InformerList,
    /// Leader election reading its Lease.
    LeaseGet,
    /// A controller's read that bypasses its informers.
    DirectRead,
    /// The user (from the script) or a console.
    Kubectl,
}

/// A short reference to one object version, as carried in list entries.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectVersion {
    /// Kind, namespace and name.
    pub key: Key,
    /// Incarnation.
    pub uid: Name,
    /// Revision of this version.
    pub revision: u64,
}

/// How a patch was asked for: what the timeline says beside its verb.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PatchNote {
    /// Merge, JSON, strategic merge or apply.
    pub patch_type: PatchType,
    /// The field manager (for patches other than apply, the writer's name
    /// when it gave none).
    pub field_manager: Name,
    /// Whether an apply forced its conflicts.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub force: bool,
    /// Whether it was a dry run (nothing stored).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dry_run: bool,
}

impl std::fmt::Display for PatchNote {
    /// `merge patch by manager-a`, `apply (force) by manager-a`, with
    /// `dry run of` in front of a dry run.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.dry_run {
            f.write_str("dry run of ")?;
        }
        write!(f, "{}", self.patch_type)?;
        if self.force {
            f.write_str(" (force)")?;
        }
        write!(f, " by {}", self.field_manager)
    }
}

/// An API server answered a list (or the initial state of a watch-list).
///
/// Boxed in [`Event::ListServed`]: the largest kinds of entry would
/// otherwise set the size of every entry.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListServed {
    /// Which component asked.
    pub component: Name,
    /// The API server that answered.
    pub api_server: Name,
    /// The request, e.g. `list Pods spec.nodeName=node-1 resourceVersion="0"`.
    pub request: String,
    /// Why it was asked: an informer's list, a Lease get, kubectl.
    pub purpose: ReadPurpose,
    /// Cache or store.
    pub served_from: ServedFrom,
    /// The revision of the state returned (the list's resourceVersion).
    pub revision: u64,
    /// The store's revision at that moment.
    pub store_revision: u64,
    /// How long the returned state had been out of date (0 if current).
    pub stale_ms: u64,
    /// Whether the API server was cut off from the store.
    pub partitioned: bool,
    /// The objects returned.
    pub objects: Vec<ObjectVersion>,
}

/// A Kubernetes Event (`v1` or `events.k8s.io/v1`, one stored
/// resource) was written: created, or updated as a recorder does when
/// it sees the same thing again. Recorded after its store write (its
/// cause) on the lane of the object it is about: a Node's lane, a
/// pod's node's lane once it is bound; otherwise its writer's lane.
///
/// Boxed in [`Event::EventPublished`]: the largest kinds of entry would
/// otherwise set the size of every entry.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EventPublished {
    /// `Normal` or `Warning` (empty if the Event has no type).
    pub event_type: String,
    /// Why, in one CamelCase word (`Scheduled`, `FailedMount`).
    pub reason: String,
    /// What happened, for people (`note`; `message` in `v1`).
    pub note: String,
    /// The object it is about, if it names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regarding: Option<Key>,
    /// Who wrote it (component name, or `kubectl`).
    pub by: Name,
}

/// A component's controller was called.
///
/// Boxed in [`Event::Reconcile`]: the largest kinds of entry would
/// otherwise set the size of every entry.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Reconcile {
    /// The component.
    pub component: Name,
    /// The highest revision the component had observed when called.
    pub view_revision: u64,
    /// What the call was given, one short line per input.
    pub inputs: Vec<Line>,
    /// What it returned, one short line per action.
    pub actions: Vec<Line>,
    /// Inputs delivered to it that the call went without (a stale view
    /// chosen by a scenario's `staleViews` or a search), one line
    /// each: they reach it in the next call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub held_back: Vec<Line>,
}

/// The kinds of trace entries.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum Event {
    /// A step of the scenario's script ran (a user action or a fault).
    #[serde(rename_all = "camelCase")]
    Script {
        /// Plain-language description, e.g. `kubectl cordon node-1`.
        description: String,
    },
    /// An API server lost (or regained) its connection to the store.
    #[serde(rename_all = "camelCase")]
    Partition {
        /// The API server.
        api_server: Name,
        /// True when the partition starts, false when it heals.
        started: bool,
    },
    /// A write was committed to the store.
    #[serde(rename_all = "camelCase")]
    StoreWrite {
        /// What it did to the object.
        verb: Verb,
        /// Which object.
        key: Key,
        /// The object's uid.
        uid: Name,
        /// The new store revision.
        revision: u64,
        /// Whether the object is gone after this write.
        removed: bool,
        /// Whether this write began a graceful deletion.
        terminating: bool,
        /// Who asked (component name, or `kubectl`).
        by: Name,
        /// Through which API server.
        via: Name,
        /// For a patch: its type, field manager and options.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        patch: Option<Box<PatchNote>>,
    },
    /// A write was refused or failed.
    #[serde(rename_all = "camelCase")]
    WriteFailed {
        /// The attempted verb.
        verb: Verb,
        /// Which object.
        key: Key,
        /// Why.
        status: Box<Status>,
        /// Who asked.
        by: Name,
        /// Through which API server (empty if refused before sending).
        via: Name,
        /// For a patch: its type, field manager and options.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        patch: Option<Box<PatchNote>>,
    },
    /// A write the API server accepted that changed nothing (a delete of an
    /// object already being deleted, with no shorter grace period, or a dry
    /// run): it answered with the object as it is (or would be), and the
    /// store did not move.
    #[serde(rename_all = "camelCase")]
    WriteUnchanged {
        /// The verb.
        verb: Verb,
        /// Which object.
        key: Key,
        /// The object's uid.
        uid: Name,
        /// The revision it is at.
        revision: u64,
        /// Who asked.
        by: Name,
        /// Through which API server.
        via: Name,
        /// For a patch: its type, field manager and options.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        patch: Option<Box<PatchNote>>,
        /// Whether it was a dry run of a create, update, status update or
        /// delete (a patch's dry run is in its `patch` note).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        dry_run: bool,
    },
    /// The run stopped before its end: it reached a limit.
    #[serde(rename_all = "camelCase")]
    Halted {
        /// Which limit, and how to raise it.
        reason: String,
    },
    /// The store compacted its history.
    #[serde(rename_all = "camelCase")]
    Compaction {
        /// Revisions before this one can no longer be read.
        revision: u64,
    },
    /// An API server's watch cache applied a store event.
    #[serde(rename_all = "camelCase")]
    CacheApply {
        /// The API server.
        api_server: Name,
        /// The revision the cache is now at.
        revision: u64,
        /// The object it changed.
        key: Key,
        /// The kind of change.
        event_type: EventType,
    },
    /// An API server's watch cache rebuilt itself from the store (its
    /// history had been compacted while it was cut off).
    #[serde(rename_all = "camelCase")]
    CacheRelist {
        /// The API server.
        api_server: Name,
        /// The revision the cache is now at.
        revision: u64,
    },
    /// An API server answered a list (or the initial state of a watch-list).
    ListServed(Box<ListServed>),
    /// A list or watch request failed.
    #[serde(rename_all = "camelCase")]
    RequestFailed {
        /// Which component asked.
        component: Name,
        /// The API server.
        api_server: Name,
        /// The request.
        request: String,
        /// The error.
        status: Box<Status>,
    },
    /// A watch event reached a component.
    #[serde(rename_all = "camelCase")]
    WatchDelivered {
        /// Which component.
        component: Name,
        /// From which API server.
        api_server: Name,
        /// Index of the watch in the component's manifest.
        watch: usize,
        /// The event type.
        event_type: EventType,
        /// The object.
        key: Key,
        /// Its uid.
        uid: Name,
        /// Its revision.
        revision: u64,
    },
    /// A component instance started (first start or restart).
    #[serde(rename_all = "camelCase")]
    ComponentStarted {
        /// The component.
        component: Name,
        /// The API server it connects to.
        api_server: Name,
        /// How many times it has started before.
        restarts: u32,
        /// The staleness mitigations switched on for it (empty for most:
        /// then the field is left out of the trace).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        mitigations: Vec<Mitigation>,
    },
    /// A component instance died; its memory is lost.
    #[serde(rename_all = "camelCase")]
    ComponentCrashed {
        /// The component.
        component: Name,
        /// Why.
        reason: String,
    },
    /// A component's plugin wrote lines with `recon.log` during one call
    /// (`recon_init` or `recon_handle`): recorded before what the call
    /// led to (its reconcile, or its crash), with the same causes. Bounded
    /// by the host (lines per call, bytes per line) and by the simulator
    /// (lines per component per run); a cut is said in a last line.
    #[serde(rename_all = "camelCase")]
    Logged {
        /// The component.
        component: Name,
        /// The lines, in the order they were written.
        lines: Vec<String>,
    },
    /// A Kubernetes Event (`v1` or `events.k8s.io/v1`, one stored
    /// resource) was written: created, or updated as a recorder does when
    /// it sees the same thing again. Recorded after its store write (its
    /// cause) on the lane of the object it is about: a Node's lane, a
    /// pod's node's lane once it is bound; otherwise its writer's lane.
    EventPublished(Box<EventPublished>),
    /// A component won (or lost) its Lease: its controller starts (or stops).
    Leadership {
        /// The component.
        component: Name,
        /// The Lease's name.
        lease: String,
        /// True when it starts leading, false when it stops.
        leading: bool,
    },
    /// A component switched to another API server after repeated failures.
    #[serde(rename_all = "camelCase")]
    Failover {
        /// The component.
        component: Name,
        /// The API server it gave up on.
        from: Name,
        /// The API server it uses now.
        to: Name,
    },
    /// A component's controller was called.
    Reconcile(Box<Reconcile>),
    /// A staleness mitigation began, or ended, holding back a component's
    /// reconcile of one object until its informer observed the component's
    /// own write (KEP-5647's skipped sync; controller-runtime's
    /// read-your-own-writes wait). Recorded after the call that reported it
    /// (its cause). An ended wait carries when it began, so a reader draws
    /// the whole wait from that one entry.
    #[serde(rename_all = "camelCase")]
    SyncHeld {
        /// The component.
        component: Name,
        /// What was held, on which write, and since when.
        held: Box<HeldSync>,
    },
    /// The host refused an action that the component's manifest does not allow.
    #[serde(rename_all = "camelCase")]
    ActionRefused {
        /// The component.
        component: Name,
        /// The action, in words.
        action: String,
        /// The refusal.
        status: Box<Status>,
    },
    /// A node's runtime started a container.
    #[serde(rename_all = "camelCase")]
    ContainerStarted {
        /// The node.
        node: Name,
        /// The pod incarnation.
        pod: Box<PodRef>,
    },
    /// A node's runtime stopped a container.
    #[serde(rename_all = "camelCase")]
    ContainerStopped {
        /// The node.
        node: Name,
        /// The pod incarnation.
        pod: Box<PodRef>,
    },
    /// A safety check failed.
    #[serde(rename_all = "camelCase")]
    Violation {
        /// Which check.
        check: Check,
        /// One-line summary.
        message: String,
    },
}

impl Event {
    /// Whether this is a stale read: a read answered from a state the store
    /// had already moved past (its revision below the store's). The one
    /// definition every reader uses: the explanation, the timeline's marks,
    /// the CLI.
    pub fn is_stale_read(&self) -> bool {
        matches!(self, Event::ListServed(list) if list.revision < list.store_revision)
    }

    /// Whether this is a read an informer made: what a component's view is
    /// built from (not a Lease get, not kubectl).
    pub fn is_informer_read(&self) -> bool {
        matches!(self, Event::ListServed(list) if list.purpose == ReadPurpose::InformerList)
    }
}

impl Trace {
    /// The entry with this id.
    pub fn get(&self, id: EntryId) -> Option<&Entry> {
        self.entries.get(usize::try_from(id).ok()?)
    }

    /// Why the run stopped before its end (a run limit), and the entry that
    /// says so: the last one, when it is [`Event::Halted`].
    pub fn halted(&self) -> Option<(&Entry, &str)> {
        let last = self.entries.last()?;
        match &last.event {
            Event::Halted { reason } => Some((last, reason)),
            _ => None,
        }
    }

    /// The trace as stable JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("trace serialization cannot fail: plain data")
    }

    /// Writes [`Trace::to_json`]'s bytes to `writer` as they are encoded,
    /// never holding them: a run at Kubernetes' published limits writes
    /// gigabytes of JSON. Give it a buffered writer; only the writer's own
    /// errors can make it fail.
    pub fn write_json(&self, writer: impl std::io::Write) -> std::io::Result<()> {
        serde_json::to_writer(writer, self).map_err(std::io::Error::from)
    }

    /// [`Trace::write_json`], returning the [`Trace::hash`] of what it
    /// wrote, taken as it went: one encoding for both, where a big run's
    /// takes seconds.
    pub fn write_json_and_hash(&self, writer: impl std::io::Write) -> std::io::Result<String> {
        let mut both = Hashed { writer, hasher: Fnv1a::default() };
        serde_json::to_writer(&mut both, self).map_err(std::io::Error::from)?;
        Ok(format!("{:016x}", both.hasher.0))
    }

    /// A stable 64-bit hash of the JSON encoding (FNV-1a), as 16 hex digits.
    /// Equal hashes mean byte-identical traces, on any platform.
    ///
    /// The encoding is hashed as it is written, never held: at a million
    /// entries it would be hundreds of megabytes.
    pub fn hash(&self) -> String {
        self.write_json_and_hash(std::io::sink()).expect("trace serialization cannot fail: plain data")
    }

    /// A lane by id. Panics on an id from another trace.
    pub fn lane(&self, id: LaneId) -> &Lane {
        &self.lanes[id.index()]
    }

    /// The name of the lane an entry happened on.
    pub fn lane_name(&self, entry: &Entry) -> &str {
        self.lanes.get(entry.lane.index()).map_or("", |l| l.name.as_str())
    }

    /// The lane with this name, if the trace has one.
    pub fn lane_named(&self, name: &str) -> Option<LaneId> {
        self.lanes.iter().position(|l| l.name == name).map(LaneId::from_index)
    }

    /// Adds a lane (the simulator does, from the scenario, before the run);
    /// returns its id.
    pub fn add_lane(&mut self, name: impl Into<String>, role: LaneRole) -> LaneId {
        self.lanes.push(Lane { name: name.into(), role });
        LaneId::from_index(self.lanes.len() - 1)
    }

    /// The violations, in order.
    pub fn violations(&self) -> impl Iterator<Item = (&Entry, Check, &str)> {
        self.entries.iter().filter_map(|e| match &e.event {
            Event::Violation { check, message } => Some((e, *check, message.as_str())),
            _ => None,
        })
    }

    /// Appends an entry (the simulator's only way to write), dropping
    /// repeated causes; returns its id.
    pub fn push(&mut self, time_ms: u64, lane: LaneId, event: Event, causes: Vec<EntryId>) -> EntryId {
        let id = self.entries.len() as EntryId;
        // Order matters to readers (a violation lists the offending entry
        // first), so duplicates are dropped without sorting.
        let mut causes = causes;
        if causes.len() <= 16 {
            // Most entries have one cause: no set to build for them.
            let mut kept = 0;
            for i in 0..causes.len() {
                let cause = causes[i];
                if !causes[..kept].contains(&cause) {
                    causes[kept] = cause;
                    kept += 1;
                }
            }
            causes.truncate(kept);
        } else {
            // A hashed set: only asked whether it holds an id, never
            // iterated, so its order is never seen. A reconcile handed a
            // relist has a cause per object, and a tree of them cost 0.7 %
            // of a run at 5,000 nodes.
            let mut seen = rustc_hash::FxHashSet::default();
            seen.reserve(causes.len());
            causes.retain(|c| seen.insert(*c));
        }
        self.entries.push(Entry { id, time_ms, lane, event, causes: causes.into() });
        id
    }
}

/// FNV-1a, 64-bit: a stable hash of bytes, the same on every platform and
/// in every release (unlike `std`'s hashers).
pub fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hasher = Fnv1a::default();
    hasher.add(bytes);
    hasher.0
}

/// FNV-1a over bytes written in pieces: the hash of their concatenation.
struct Fnv1a(u64);

impl Default for Fnv1a {
    fn default() -> Self {
        Fnv1a(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv1a {
    fn add(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

/// A writer, and the hash of what was written to it.
struct Hashed<W> {
    writer: W,
    hasher: Fnv1a,
}

impl<W: std::io::Write> std::io::Write for Hashed<W> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let written = self.writer.write(bytes)?;
        self.hasher.add(&bytes[..written]);
        Ok(written)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.writer.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hash is taken, and a file written, as the encoding streams out;
    /// the hash must stay the hash of the whole encoding, or every pinned
    /// golden hash would move, and the file must hold the same bytes.
    #[test]
    fn the_hash_is_fnv1a_of_the_whole_json() {
        let mut trace = Trace { scenario: "hash".into(), seed: 7, ..Trace::default() };
        let lane = trace.add_lane("etcd", LaneRole::Store);
        for n in 0..100 {
            let first = trace.push(n, lane, Event::Compaction { revision: n }, Vec::new());
            trace.push(n, lane, Event::Script { description: format!("step «{n}»\n") }, vec![first]);
        }
        assert_eq!(trace.hash(), format!("{:016x}", fnv1a(trace.to_json().as_bytes())));
        let mut written = Vec::new();
        trace.write_json(&mut written).unwrap();
        assert_eq!(written, trace.to_json().into_bytes(), "written as encoded: the same bytes");
        let mut again = Vec::new();
        assert_eq!(trace.write_json_and_hash(&mut again).unwrap(), trace.hash(), "hashed as written");
        assert_eq!(again, written);
        assert_ne!(trace.hash(), Trace::default().hash());
    }

    /// A trace of millions of entries holds each one inline, so the
    /// largest kind of event sets the size of all: the large, rarer kinds
    /// (lists, reconciles, Kubernetes Events) and rare parts (a patch's
    /// note, a failure's status, a container's pod) are boxed. An entry
    /// was 136 bytes before they were, 96 since.
    #[cfg(target_pointer_width = "64")]
    #[test]
    fn an_entry_stays_small() {
        assert!(std::mem::size_of::<Event>() <= 56, "an event takes {} bytes", std::mem::size_of::<Event>());
        assert!(std::mem::size_of::<Entry>() <= 96, "an entry takes {} bytes", std::mem::size_of::<Entry>());
    }

    /// An entry's causes keep their order, most direct first, and each
    /// cause once: the short lists and the long ones (a reconcile handed a
    /// relist) alike.
    #[test]
    fn causes_keep_their_first_place_and_lose_their_repeats() {
        let mut trace = Trace::default();
        let lane = trace.add_lane("etcd", LaneRole::Store);
        let short = trace.push(0, lane, Event::Compaction { revision: 0 }, vec![9, 3, 9, 1, 3]);
        assert_eq!(trace.entries[short as usize].causes, [9, 3, 1]);
        let long: Vec<EntryId> = (0..40).rev().chain(0..40).chain([7, 100]).collect();
        let long_entry = trace.push(0, lane, Event::Compaction { revision: 0 }, long);
        let wanted: Vec<EntryId> = (0..40).rev().chain([100]).collect();
        assert_eq!(trace.entries[long_entry as usize].causes, wanted);
    }
}
