//! The timeline's view of a trace, built once per run: lanes, each lane's
//! marks sorted by time, the violations, partition windows, staleness bands,
//! and the time order used to step from entry to entry.
//!
//! Everything a frame needs is a binary search away, so drawing costs what
//! is visible, not what is in the trace.

use std::collections::BTreeMap;
use std::ops::Range;

use recon_scenario::Check;
use recon_trace::{EntryId, Event, Trace};

use super::lanes::{Lane, LaneRole, derive_lanes};
use super::staleness::{InformerBand, StalenessBand, StoreRevisions, informer_bands, staleness_bands};

/// What a mark stands for: its colour, and what survives when several
/// marks share a pixel. Declared most important first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MarkKind {
    /// A safety check failed.
    Violation,
    /// A component's view went back in time (a violation too).
    TimeTravel,
    /// A component instance died.
    Crash,
    /// A write committed to the store.
    Write,
    /// A list answered with state older than the store's.
    StaleRead,
    /// A refused or failed write or request.
    Failure,
    /// A node's runtime started or stopped a container.
    Container,
    /// A component started or failed over.
    Lifecycle,
    /// An API server lost or regained the store.
    Partition,
    /// A step of the scenario's script.
    Script,
    /// A Kubernetes Event was written about an object: drawn on the lane
    /// of the object it concerns, its reason and note on hover.
    KubeEvent,
    /// A component's plugin logged lines (`recon.log`): drawn above its
    /// reconcile, which happens at the same moment, so the author sees it.
    Log,
    /// A controller was called.
    Reconcile,
    /// A list answered with current state.
    Read,
    /// A watch cache applied an event or rebuilt itself; the store compacted.
    Cache,
    /// A watch event reached a component.
    Watch,
}

impl MarkKind {
    /// Every kind, most important first (the legend's order).
    pub const ALL: [MarkKind; 16] = [
        MarkKind::Violation,
        MarkKind::TimeTravel,
        MarkKind::Crash,
        MarkKind::Write,
        MarkKind::StaleRead,
        MarkKind::Failure,
        MarkKind::Container,
        MarkKind::Lifecycle,
        MarkKind::Partition,
        MarkKind::Script,
        MarkKind::KubeEvent,
        MarkKind::Log,
        MarkKind::Reconcile,
        MarkKind::Read,
        MarkKind::Cache,
        MarkKind::Watch,
    ];

    /// The kind of mark for an event.
    pub fn of(event: &Event) -> MarkKind {
        match event {
            Event::Violation { check: Check::TimeTravel, .. } => MarkKind::TimeTravel,
            Event::Violation { .. } => MarkKind::Violation,
            Event::ComponentCrashed { .. } => MarkKind::Crash,
            Event::StoreWrite { .. } | Event::WriteUnchanged { .. } => MarkKind::Write,
            event if event.is_stale_read() => MarkKind::StaleRead,
            Event::ListServed { .. } => MarkKind::Read,
            Event::WriteFailed { .. } | Event::RequestFailed { .. } | Event::ActionRefused { .. } => MarkKind::Failure,
            Event::ContainerStarted { .. } | Event::ContainerStopped { .. } => MarkKind::Container,
            Event::ComponentStarted { .. } | Event::Failover { .. } | Event::Leadership { .. } => MarkKind::Lifecycle,
            Event::Partition { .. } => MarkKind::Partition,
            Event::Script { .. } | Event::Halted { .. } => MarkKind::Script,
            Event::EventPublished { .. } => MarkKind::KubeEvent,
            Event::Logged { .. } => MarkKind::Log,
            Event::Reconcile { .. } | Event::SyncHeld { .. } => MarkKind::Reconcile,
            Event::CacheApply { .. } | Event::CacheRelist { .. } | Event::Compaction { .. } => MarkKind::Cache,
            Event::WatchDelivered { .. } => MarkKind::Watch,
        }
    }

    /// Position in [`MarkKind::ALL`] (the declaration order): 0 is the most important.
    pub fn rank(self) -> usize {
        self as usize
    }

    /// Which mark is drawn when several share a pixel column: the highest.
    pub fn importance(self) -> u8 {
        (MarkKind::ALL.len() - self.rank()) as u8
    }

    /// Whether this mark is a failed safety check.
    pub fn is_violation(self) -> bool {
        matches!(self, MarkKind::Violation | MarkKind::TimeTravel)
    }

    /// A short name for the legend.
    pub fn label(self) -> &'static str {
        match self {
            MarkKind::Violation => "violation",
            MarkKind::TimeTravel => "time travel",
            MarkKind::Crash => "crash",
            MarkKind::Write => "write",
            MarkKind::StaleRead => "stale read",
            MarkKind::Failure => "failure",
            MarkKind::Container => "container",
            MarkKind::Lifecycle => "start / failover",
            MarkKind::Partition => "partition",
            MarkKind::Script => "script",
            MarkKind::KubeEvent => "Event",
            MarkKind::Log => "plugin log",
            MarkKind::Reconcile => "reconcile",
            MarkKind::Read => "list",
            MarkKind::Cache => "cache",
            MarkKind::Watch => "watch event",
        }
    }
}

/// One lane's marks, sorted by time (then id), in parallel arrays so a
/// frame's scan touches only what it needs, and summaries of them for
/// zoomed-out frames.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LaneMarks {
    /// Each mark's time.
    pub times: Vec<u64>,
    /// Each mark's entry.
    pub ids: Vec<EntryId>,
    /// Each mark's kind.
    pub kinds: Vec<MarkKind>,
    /// The marks gathered into buckets of 1, 2, 4, … ms ([`MarkSummary`]),
    /// finest first; made by [`LaneMarks::summarise`]. A level that would
    /// not halve the one before is left out.
    pub summaries: Vec<MarkSummary>,
}

/// A lane's marks gathered into buckets of `1 << shift` ms (aligned to
/// multiples of that): for each bucket holding marks, the most important
/// mark (the earliest among equals), at its own time, and how many marks
/// the bucket holds. A frame zoomed out so far that a bucket is a small
/// fraction of a pixel reads these instead of every mark: its cost then
/// grows with the pixels, not with the marks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MarkSummary {
    /// The bucket's width: `1 << shift` ms.
    pub shift: u32,
    /// Each bucket's most important mark's time.
    pub times: Vec<u64>,
    /// Its entry.
    pub ids: Vec<EntryId>,
    /// Its kind.
    pub kinds: Vec<MarkKind>,
    /// How many marks the bucket holds.
    pub counts: Vec<u32>,
}

impl MarkSummary {
    /// Gathers `(time, kind, id, count)` rows, sorted by time, into buckets
    /// of `1 << shift` ms.
    fn gather(shift: u32, rows: impl Iterator<Item = (u64, MarkKind, EntryId, u32)>) -> MarkSummary {
        let mut summary = MarkSummary { shift, ..MarkSummary::default() };
        let mut bucket = None;
        for (time, kind, id, count) in rows {
            if bucket == Some(time >> shift) {
                let last = summary.times.len() - 1;
                summary.counts[last] += count;
                // Strictly more important: among equals the earlier stays.
                if kind.importance() > summary.kinds[last].importance() {
                    (summary.times[last], summary.kinds[last], summary.ids[last]) = (time, kind, id);
                }
            } else {
                bucket = Some(time >> shift);
                summary.times.push(time);
                summary.kinds.push(kind);
                summary.ids.push(id);
                summary.counts.push(count);
            }
        }
        summary
    }

    /// The buckets in `range` as `(time, kind, id, count)` rows.
    pub fn rows(&self, range: Range<usize>) -> impl Iterator<Item = (u64, MarkKind, EntryId, u32)> + '_ {
        let (times, kinds) = (&self.times[range.clone()], &self.kinds[range.clone()]);
        let (ids, counts) = (&self.ids[range.clone()], &self.counts[range]);
        times.iter().zip(kinds).zip(ids).zip(counts).map(|(((t, k), i), c)| (*t, *k, *i, *c))
    }

    /// How many buckets hold marks.
    pub fn len(&self) -> usize {
        self.times.len()
    }

    /// Whether no bucket does.
    pub fn is_empty(&self) -> bool {
        self.times.is_empty()
    }
}

impl LaneMarks {
    /// The marks with `from_ms <= time <= to_ms`.
    pub fn range(&self, from_ms: f64, to_ms: f64) -> Range<usize> {
        range_of(&self.times, from_ms, to_ms)
    }

    /// How many marks the lane has.
    pub fn len(&self) -> usize {
        self.times.len()
    }

    /// Whether the lane has no marks.
    pub fn is_empty(&self) -> bool {
        self.times.is_empty()
    }

    /// The marks in `range` as `(time, kind, id, count)` rows, each a
    /// count of one.
    pub fn rows(&self, range: Range<usize>) -> impl Iterator<Item = (u64, MarkKind, EntryId, u32)> + '_ {
        let (times, kinds, ids) = (&self.times[range.clone()], &self.kinds[range.clone()], &self.ids[range]);
        times.iter().zip(kinds).zip(ids).map(|((t, k), i)| (*t, *k, *i, 1))
    }

    /// Builds [`LaneMarks::summaries`] from the marks: each level from the
    /// one before, so the whole costs about twice one pass over the marks.
    pub fn summarise(&mut self) {
        self.summaries.clear();
        let mut level = MarkSummary::gather(0, self.rows(0..self.len()));
        let mut kept = self.len();
        loop {
            let coarser = (level.len() > 1 && level.shift < 40)
                .then(|| MarkSummary::gather(level.shift + 1, level.rows(0..level.len())));
            // Keep a level only where it reads at most half what the finer one does.
            if level.len() * 2 <= kept {
                kept = level.len();
                self.summaries.push(level);
            }
            match coarser {
                Some(coarser) => level = coarser,
                None => break,
            }
        }
    }

    /// The coarsest summary whose buckets are at most `1 / SUMMARY_BUCKETS_PER_PX`
    /// of a pixel at `ms_per_px`, or the one of whole milliseconds (marks at
    /// one time always share a pixel column, so it is exact); `None`: read
    /// the marks themselves.
    pub fn summary_for(&self, ms_per_px: f64) -> Option<&MarkSummary> {
        let fits = |s: &&MarkSummary| s.shift == 0 || ((1u64 << s.shift) as f64) * SUMMARY_BUCKETS_PER_PX <= ms_per_px;
        self.summaries.iter().rev().find(fits)
    }
}

/// How many summary buckets a pixel spans at least before a frame reads a
/// summary instead of the marks: a bucket's marks all land in its most
/// important mark's column, so a bucket of at most an eighth of a pixel
/// moves a lesser mark by a pixel at most, and only at a column's edge.
pub const SUMMARY_BUCKETS_PER_PX: f64 = 8.0;

/// The positions in `times` (sorted) with `from_ms <= time <= to_ms`.
pub fn range_of(times: &[u64], from_ms: f64, to_ms: f64) -> Range<usize> {
    let start = times.partition_point(|t| (*t as f64) < from_ms);
    let end = times.partition_point(|t| (*t as f64) <= to_ms);
    start..end.max(start)
}

/// A time an API server could not reach the store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionWindow {
    /// The API server's lane.
    pub lane: usize,
    /// Its cache's lane, if it has one (the cache is frozen too).
    pub cache_lane: Option<usize>,
    /// When the partition started.
    pub from_ms: u64,
    /// When it healed; `None` if it lasted to the end of the run.
    pub until_ms: Option<u64>,
}

/// Everything the timeline draws, derived from one trace.
#[derive(Clone, Debug, Default)]
pub struct TimelineModel {
    /// The lanes, top to bottom.
    pub lanes: Vec<Lane>,
    /// Each lane's marks (same index as `lanes`).
    pub marks: Vec<LaneMarks>,
    /// The violations, in time order.
    pub violations: Vec<EntryId>,
    /// Partition windows, in time order.
    pub partitions: Vec<PartitionWindow>,
    /// One band per watch cache.
    pub bands: Vec<StalenessBand>,
    /// The store's revision over the run (what informer bands trail).
    pub store: StoreRevisions,
    /// One band per component: how far its informers' view trails the store.
    pub informers: Vec<InformerBand>,
    /// Reconciles a staleness mitigation held, in the order their waits ended
    /// (those still held at the end last).
    pub waits: Vec<WaitSpan>,
    /// Time of the first entry.
    pub start_ms: u64,
    /// Time of the last entry.
    pub end_ms: u64,
    /// Per entry (by id): its lane.
    entry_lane: Vec<u32>,
    /// Per entry: its kind.
    entry_kind: Vec<MarkKind>,
    /// Per entry: its time.
    entry_time: Vec<u64>,
    /// Entry ids in time order (ties by id).
    order: Vec<EntryId>,
    /// Per entry: its position in `order`.
    rank: Vec<u32>,
}

impl TimelineModel {
    /// Builds the model of a trace. Entry ids are positions in the trace.
    pub fn build(trace: &Trace) -> TimelineModel {
        let (lanes, row_of) = derive_lanes(trace);

        let n = trace.entries.len();
        let mut entry_lane = Vec::with_capacity(n);
        let mut entry_kind = Vec::with_capacity(n);
        let mut entry_time = Vec::with_capacity(n);
        for entry in &trace.entries {
            // A lane with entries is always shown, so the lookup cannot miss.
            let lane = row_of.get(entry.lane.index()).copied().flatten().unwrap_or(0);
            entry_lane.push(lane as u32);
            entry_kind.push(MarkKind::of(&entry.event));
            entry_time.push(entry.time_ms);
        }

        // Entries are recorded in time order; sorting keeps the model right
        // for any trace, and is linear on sorted input.
        let mut order: Vec<EntryId> = (0..n as EntryId).collect();
        order.sort_by_key(|id| (entry_time[*id as usize], *id));
        let mut rank = vec![0u32; n];
        for (position, id) in order.iter().enumerate() {
            rank[*id as usize] = position as u32;
        }

        let mut marks = vec![LaneMarks::default(); lanes.len()];
        for id in &order {
            let i = *id as usize;
            let lane = &mut marks[entry_lane[i] as usize];
            lane.times.push(entry_time[i]);
            lane.ids.push(*id);
            lane.kinds.push(entry_kind[i]);
        }
        marks.iter_mut().for_each(LaneMarks::summarise);

        let violations = order.iter().copied().filter(|id| entry_kind[*id as usize].is_violation()).collect();
        let partitions = partition_windows(trace, &order, &lanes, &row_of);
        let caches: Vec<(String, usize)> = lanes
            .iter()
            .enumerate()
            .filter(|(_, l)| matches!(l.role, LaneRole::Cache { .. }))
            .filter_map(|(i, l)| l.owner.clone().map(|server| (server, i)))
            .collect();
        let bands = staleness_bands(trace, &order, &caches);
        let components: Vec<(String, usize)> = lanes
            .iter()
            .enumerate()
            .filter(|(_, l)| matches!(l.role, LaneRole::Controller | LaneRole::NodeAgent { .. }))
            .map(|(i, l)| (l.name.clone(), i))
            .collect();
        let (store, informers) = informer_bands(trace, &order, &components);

        let start_ms = order.first().map_or(0, |id| entry_time[*id as usize]);
        let end_ms = order.last().map_or(0, |id| entry_time[*id as usize]);
        let waits = wait_spans(trace, &entry_lane);
        TimelineModel {
            lanes,
            marks,
            violations,
            partitions,
            bands,
            store,
            informers,
            waits,
            start_ms,
            end_ms,
            entry_lane,
            entry_kind,
            entry_time,
            order,
            rank,
        }
    }

    /// How many entries the model holds.
    pub fn len(&self) -> usize {
        self.order.len()
    }

    /// Whether the trace was empty.
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// The lane names, top to bottom.
    pub fn lane_names(&self) -> impl Iterator<Item = &str> {
        self.lanes.iter().map(|l| l.name.as_str())
    }

    /// The index of the lane with this name.
    pub fn lane_named(&self, name: &str) -> Option<usize> {
        self.lanes.iter().position(|l| l.name == name)
    }

    /// The lane an entry is drawn on.
    pub fn lane_of(&self, id: EntryId) -> Option<usize> {
        self.entry_lane.get(id as usize).map(|l| *l as usize)
    }

    /// An entry's kind.
    pub fn kind_of(&self, id: EntryId) -> Option<MarkKind> {
        self.entry_kind.get(id as usize).copied()
    }

    /// An entry's time.
    pub fn time_of(&self, id: EntryId) -> Option<u64> {
        self.entry_time.get(id as usize).copied()
    }

    /// The first violation in time.
    pub fn first_violation(&self) -> Option<EntryId> {
        self.violations.first().copied()
    }

    /// The entry after `from` in time; with nothing selected, the first at
    /// or after `cursor_ms`.
    pub fn next(&self, from: Option<EntryId>, cursor_ms: f64) -> Option<EntryId> {
        let position = match from.and_then(|id| self.rank.get(id as usize)) {
            Some(rank) => *rank as usize + 1,
            None => self.order.partition_point(|id| (self.entry_time[*id as usize] as f64) < cursor_ms),
        };
        self.order.get(position).copied()
    }

    /// The entry before `from` in time; with nothing selected, the last at
    /// or before `cursor_ms`.
    pub fn previous(&self, from: Option<EntryId>, cursor_ms: f64) -> Option<EntryId> {
        match from.and_then(|id| self.rank.get(id as usize)) {
            Some(rank) => (*rank as usize).checked_sub(1).map(|p| self.order[p]),
            None => self.last_at_or_before(cursor_ms),
        }
    }

    /// The last entry at or before `time_ms`.
    pub fn last_at_or_before(&self, time_ms: f64) -> Option<EntryId> {
        let end = self.order.partition_point(|id| (self.entry_time[*id as usize] as f64) <= time_ms);
        end.checked_sub(1).map(|p| self.order[p])
    }

    /// The kinds of mark the run has, most important first (for the legend).
    pub fn kinds_present(&self) -> Vec<MarkKind> {
        let mut present = [false; MarkKind::ALL.len()];
        for kind in &self.entry_kind {
            present[kind.rank()] = true;
        }
        MarkKind::ALL.iter().zip(present).filter(|(_, p)| *p).map(|(k, _)| *k).collect()
    }

    /// The staleness band drawn on a lane, if it is a cache lane.
    pub fn band_on(&self, lane: usize) -> Option<&StalenessBand> {
        self.bands.iter().find(|b| b.lane == lane)
    }

    /// The informer band drawn on a lane, if it is a component's lane.
    pub fn informer_on(&self, lane: usize) -> Option<&InformerBand> {
        self.informers.iter().find(|b| b.lane == lane)
    }

    /// The waits as the browser tests' hook reads them:
    /// `lane-name:from_ms-until_ms`, comma-separated.
    pub fn waits_hook(&self) -> String {
        let name = |lane: usize| self.lanes.get(lane).map_or("", |l| l.name.as_str());
        let until = |w: &WaitSpan| w.until_ms.map(|u| u.to_string()).unwrap_or_default();
        self.waits.iter().map(|w| format!("{}:{}-{}", name(w.lane), w.from_ms, until(w))).collect::<Vec<_>>().join(",")
    }

    /// The wait drawn on `lane` at `time_ms`, if any.
    pub fn wait_at(&self, lane: usize, time_ms: f64) -> Option<&WaitSpan> {
        self.waits.iter().find(|w| {
            w.lane == lane && w.from_ms as f64 <= time_ms && w.until_ms.map_or(self.end_ms, |u| u) as f64 >= time_ms
        })
    }

    /// The scale shared by every informer band: the most revisions any
    /// component's view was behind.
    pub fn max_informer_behind(&self) -> u64 {
        self.informers.iter().map(|b| b.max_behind).max().unwrap_or(0)
    }

    /// The scale shared by every band: the most revisions any cache was behind.
    pub fn max_behind(&self) -> u64 {
        self.bands.iter().map(|b| b.max_behind).max().unwrap_or(0)
    }
}

/// A reconcile held by a staleness mitigation until the component's
/// informer observed its own write: drawn on the component's lane from
/// when it was held to when it went ahead (or its instance crashed or
/// restarted), as `recon_trace::waits` pairs them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WaitSpan {
    /// The component's lane.
    pub lane: usize,
    /// When the wait began.
    pub from_ms: u64,
    /// When it ended (see `released`); `None`: still held when the run
    /// ended.
    pub until_ms: Option<u64>,
    /// Whether the reconcile went ahead at `until_ms`; if not, the
    /// component crashed or restarted then, and the wait ended with it.
    pub released: bool,
    /// Its last report: the release, or the beginning if it was not
    /// released.
    pub entry: EntryId,
    /// The kind whose informer it waited on.
    pub kind: String,
    /// The resourceVersion of the own write it waited to see.
    pub resource_version: u64,
    /// The mitigation that held it.
    pub mitigation: String,
    /// The object whose reconcile waited.
    pub object: String,
}

impl WaitSpan {
    /// `waiting for own Pod write rv 12`.
    pub fn label(&self) -> String {
        format!("waiting for own {} write rv {}", self.kind, self.resource_version)
    }
}

/// The waits the trace's `SyncHeld` entries report: an ended wait carries
/// its start, so each is one entry; a wait begun and never ended runs to
/// the end of the run.
fn wait_spans(trace: &Trace, entry_lane: &[u32]) -> Vec<WaitSpan> {
    recon_trace::waits::waits(trace)
        .into_iter()
        .map(|wait| {
            let held = wait.held();
            WaitSpan {
                lane: entry_lane.get(wait.last.id as usize).map_or(0, |l| *l as usize),
                from_ms: held.since_ms,
                until_ms: wait.ended_by().and_then(|id| trace.get(id)).map(|e| e.time_ms),
                released: matches!(wait.end, recon_trace::waits::WaitEnd::Released(_)),
                entry: wait.last.id,
                kind: held.kind.clone(),
                resource_version: held.resource_version,
                mitigation: held.mitigation.to_string(),
                object: held.object.to_string(),
            }
        })
        .collect()
}

/// Partition windows from the started/healed entries, in time order.
fn partition_windows(
    trace: &Trace,
    order: &[EntryId],
    lanes: &[Lane],
    row_of: &[Option<usize>],
) -> Vec<PartitionWindow> {
    let mut open: BTreeMap<recon_trace::Name, usize> = BTreeMap::new();
    let mut windows: Vec<PartitionWindow> = Vec::new();
    for entry in order.iter().filter_map(|id| trace.get(*id)) {
        let Event::Partition { api_server, started } = &entry.event else { continue };
        let Some(lane) = row_of.get(entry.lane.index()).copied().flatten() else { continue };
        if *started {
            if !open.contains_key(api_server) {
                open.insert(api_server.clone(), windows.len());
                let cache_lane = lanes.iter().position(|l| l.role == LaneRole::Cache { api_server: entry.lane });
                windows.push(PartitionWindow { lane, cache_lane, from_ms: entry.time_ms, until_ms: None });
            }
        } else if let Some(i) = open.remove(api_server) {
            windows[i].until_ms = Some(entry.time_ms);
        }
    }
    windows
}
