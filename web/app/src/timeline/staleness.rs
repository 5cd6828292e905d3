//! How far each watch cache, and each component's informers, trail the
//! store over time.
//!
//! A component's band is client-go's `store_resource_version` metric (the
//! latest resourceVersion each informer has synced, Kubernetes 1.36, KEP-5647)
//! set against etcd's revision: its view is at the revision of its last
//! informer list, or of the newest watch event (or bookmark) delivered
//! to it, whichever came later; a relist from a stale cache moves it back.
//! A fresh instance has no view until its first list, and draws nothing.
//!
//! The store's revision comes from its writes, a cache's from the events it
//! applied (or the revision it rebuilt itself at). Between two entries both
//! stay put, so the lag is a step function: one sample per change. How long
//! a cache has been behind grows between samples, so a sample keeps when
//! the oldest revision the cache lacks was committed, and the lag in
//! milliseconds is worked out at the time asked for.

use std::collections::BTreeMap;

use recon_trace::{EntryId, Event, ReadPurpose, Trace};

/// The store and a cache at one moment, until the next sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LagSample {
    /// From when this holds.
    pub time_ms: u64,
    /// The store's revision.
    pub store_revision: u64,
    /// The cache's revision.
    pub cache_revision: u64,
    /// When the oldest revision the cache lacks was committed, if it lacks any.
    pub missing_since_ms: Option<u64>,
}

impl LagSample {
    /// How many revisions the cache is behind.
    pub fn behind(&self) -> u64 {
        self.store_revision.saturating_sub(self.cache_revision)
    }

    /// How long, at `time_ms`, the cache has been missing a committed write.
    pub fn lag_ms_at(&self, time_ms: u64) -> u64 {
        self.missing_since_ms.map_or(0, |since| time_ms.saturating_sub(since))
    }
}

/// One watch cache's lag behind the store over the whole run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StalenessBand {
    /// The API server whose cache this is.
    pub api_server: String,
    /// The cache's lane.
    pub lane: usize,
    /// The lag, one sample per change, in time order; the first at the start of the run.
    pub samples: Vec<LagSample>,
    /// The most revisions it was ever behind.
    pub max_behind: u64,
    /// The longest it was ever missing a committed write, in milliseconds.
    pub max_lag_ms: u64,
    /// When the run ends (the last sample holds until then).
    pub end_ms: u64,
}

impl StalenessBand {
    /// The sample in force at `time_ms`, if the run had started.
    pub fn at(&self, time_ms: f64) -> Option<&LagSample> {
        let i = self.samples.partition_point(|s| s.time_ms as f64 <= time_ms);
        i.checked_sub(1).map(|i| &self.samples[i])
    }

    /// When sample `i` stops holding.
    pub fn sample_end(&self, i: usize) -> u64 {
        self.samples.get(i + 1).map_or(self.end_ms, |next| next.time_ms)
    }
}

/// The bands of the given caches (API server name, cache lane), built in one
/// pass over the entries in time order (`order`).
pub fn staleness_bands(trace: &Trace, order: &[EntryId], caches: &[(String, usize)]) -> Vec<StalenessBand> {
    let start_ms = order.first().and_then(|id| trace.get(*id)).map_or(0, |e| e.time_ms);
    let end_ms = order.last().and_then(|id| trace.get(*id)).map_or(0, |e| e.time_ms);
    let bootstrap_revision = trace
        .entries
        .iter()
        .filter_map(|e| match &e.event {
            Event::StoreWrite { revision, via, .. } if via.is_empty() => Some(*revision),
            _ => None,
        })
        .max()
        .unwrap_or(0);

    let mut bands: Vec<StalenessBand> = caches
        .iter()
        .map(|(api_server, lane)| StalenessBand {
            api_server: api_server.clone(),
            lane: *lane,
            samples: Vec::new(),
            max_behind: 0,
            max_lag_ms: 0,
            end_ms,
        })
        .collect();
    // A cache starts where its first applied event says it was (the cache
    // only applies the revision after its own); a cache that first rebuilt
    // itself started from the scenario's initial objects.
    let mut cache_revision: Vec<u64> = bands
        .iter()
        .map(|band| {
            trace
                .entries
                .iter()
                .find_map(|e| match &e.event {
                    Event::CacheApply { api_server, revision, .. } if *api_server == band.api_server => {
                        Some(revision.saturating_sub(1))
                    }
                    Event::CacheRelist { api_server, .. } if *api_server == band.api_server => Some(bootstrap_revision),
                    _ => None,
                })
                .unwrap_or(bootstrap_revision)
        })
        .collect();
    let by_server: BTreeMap<&str, usize> =
        caches.iter().enumerate().map(|(i, (api_server, _))| (api_server.as_str(), i)).collect();

    let mut store_revision = 0;
    let mut committed_at: BTreeMap<u64, u64> = BTreeMap::new();
    let sample = |store_revision: u64, cache_revision: u64, committed_at: &BTreeMap<u64, u64>, time_ms| LagSample {
        time_ms,
        store_revision,
        cache_revision,
        missing_since_ms: (store_revision > cache_revision)
            .then(|| committed_at.range(cache_revision + 1..).next().map(|(_, t)| *t))
            .flatten(),
    };
    for (band, cache) in bands.iter_mut().zip(&cache_revision) {
        band.samples.push(sample(store_revision, *cache, &committed_at, start_ms));
    }
    for entry in order.iter().filter_map(|id| trace.get(*id)) {
        let changed = match &entry.event {
            Event::StoreWrite { revision, .. } => {
                store_revision = store_revision.max(*revision);
                committed_at.entry(*revision).or_insert(entry.time_ms);
                None // every band
            }
            Event::CacheApply { api_server, revision, .. } | Event::CacheRelist { api_server, revision } => {
                match by_server.get(api_server.as_str()) {
                    Some(&i) => {
                        cache_revision[i] = *revision;
                        Some(i)
                    }
                    None => continue,
                }
            }
            _ => continue,
        };
        for (i, band) in bands.iter_mut().enumerate() {
            if changed.is_none_or(|c| c == i) {
                record(&mut band.samples, sample(store_revision, cache_revision[i], &committed_at, entry.time_ms));
            }
        }
    }
    for band in &mut bands {
        band.max_behind = band.samples.iter().map(LagSample::behind).max().unwrap_or(0);
        band.max_lag_ms =
            (0..band.samples.len()).map(|i| band.samples[i].lag_ms_at(band.sample_end(i))).max().unwrap_or(0);
    }
    bands
}

/// The store's revision over the run: one step per write that moved it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StoreRevisions {
    /// (from when, revision), in time order.
    pub steps: Vec<(u64, u64)>,
}

impl StoreRevisions {
    /// The store's revision at `time_ms` (0 before its first write).
    pub fn at(&self, time_ms: f64) -> u64 {
        let i = self.steps.partition_point(|(t, _)| *t as f64 <= time_ms);
        i.checked_sub(1).map_or(0, |i| self.steps[i].1)
    }

    /// The store's revision just before `time_ms`: its writes at that very
    /// moment not yet counted.
    pub fn before(&self, time_ms: f64) -> u64 {
        let i = self.steps.partition_point(|(t, _)| (*t as f64) < time_ms);
        i.checked_sub(1).map_or(0, |i| self.steps[i].1)
    }
}

/// One component's informer view over the run, to set against the store's
/// revision: its own steps only, so a run with many components and many
/// writes costs one step per write plus one per delivery, never their product.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InformerBand {
    /// The component.
    pub component: String,
    /// Its lane.
    pub lane: usize,
    /// (from when, the revision its view is at; `None`: no view), in time order.
    pub views: Vec<(u64, Option<u64>)>,
    /// For each of `views`, the most revisions it was behind while it
    /// held (0 with no view).
    pub peaks: Vec<u64>,
    /// The most revisions it was ever behind.
    pub max_behind: u64,
}

impl InformerBand {
    /// Its view's revision at `time_ms`, if it had one.
    pub fn view_at(&self, time_ms: f64) -> Option<u64> {
        let i = self.views.partition_point(|(t, _)| *t as f64 <= time_ms);
        i.checked_sub(1).and_then(|i| self.views[i].1)
    }

    /// How many revisions its view is behind the store at `time_ms`.
    pub fn behind_at(&self, store: &StoreRevisions, time_ms: f64) -> u64 {
        self.view_at(time_ms).map_or(0, |view| store.at(time_ms).saturating_sub(view))
    }

    /// The most revisions it was behind at any moment in `[from_ms,
    /// to_ms)`. Between two changes of its view the store only moves
    /// forward, so a view is furthest behind just before it ends: the views
    /// held wholly inside the stretch answer from [`InformerBand::peaks`],
    /// the two cut by its ends with a binary search each. A frame's column
    /// costs the same however many writes it spans.
    pub fn max_behind_in(&self, store: &StoreRevisions, from_ms: f64, to_ms: f64) -> u64 {
        // The views held in the stretch: `first..last` (`last` exclusive).
        let first = self.views.partition_point(|(t, _)| *t as f64 <= from_ms).saturating_sub(1);
        let last = self.views.partition_point(|(t, _)| (*t as f64) < to_ms);
        if first >= last {
            return 0;
        }
        let behind_until = |i: usize, end: f64| self.views[i].1.map_or(0, |v| store.before(end).saturating_sub(v));
        let inner = self.peaks.get(first + 1..last - 1).map_or(0, |p| p.iter().copied().max().unwrap_or(0));
        let first_end = if last - first == 1 { to_ms } else { self.views[first + 1].0 as f64 };
        inner.max(behind_until(first, first_end)).max(if last - first > 1 { behind_until(last - 1, to_ms) } else { 0 })
    }
}

/// The store's revisions, and the views of the given components' informers
/// (component name, its lane), in one pass over the entries in time order
/// (`order`), from what the trace says was delivered to each.
pub fn informer_bands(
    trace: &Trace,
    order: &[EntryId],
    components: &[(String, usize)],
) -> (StoreRevisions, Vec<InformerBand>) {
    let by_name: BTreeMap<&str, usize> =
        components.iter().enumerate().map(|(i, (name, _))| (name.as_str(), i)).collect();
    let mut bands: Vec<InformerBand> = components
        .iter()
        .map(|(name, lane)| InformerBand {
            component: name.clone(),
            lane: *lane,
            views: Vec::new(),
            peaks: Vec::new(),
            max_behind: 0,
        })
        .collect();
    let mut store = StoreRevisions::default();
    let mut store_revision = 0;
    for entry in order.iter().filter_map(|id| trace.get(*id)) {
        let (i, view) = match &entry.event {
            Event::StoreWrite { revision, .. } => {
                if *revision > store_revision {
                    store_revision = *revision;
                    match store.steps.last_mut() {
                        Some(last) if last.0 == entry.time_ms => last.1 = store_revision,
                        _ => store.steps.push((entry.time_ms, store_revision)),
                    }
                }
                continue;
            }
            Event::ListServed(list) if list.purpose == ReadPurpose::InformerList => {
                let Some(&i) = by_name.get(list.component.as_str()) else { continue };
                (i, Some(list.revision))
            }
            Event::WatchDelivered { component, revision, .. } => {
                let Some(&i) = by_name.get(component.as_str()) else { continue };
                let before = bands[i].views.last().and_then(|(_, v)| *v);
                (i, Some(before.map_or(*revision, |b| b.max(*revision))))
            }
            Event::ComponentStarted { component, .. } | Event::ComponentCrashed { component, .. } => {
                let Some(&i) = by_name.get(component.as_str()) else { continue };
                (i, None)
            }
            _ => continue,
        };
        let band = &mut bands[i];
        if band.views.last().is_some_and(|(_, v)| *v == view) {
            continue;
        }
        match band.views.last_mut() {
            Some(last) if last.0 == entry.time_ms => last.1 = view,
            _ => band.views.push((entry.time_ms, view)),
        }
    }
    // The store only moves forward, so a view is furthest behind at the end
    // of the stretch it holds for.
    let end_ms = order.last().and_then(|id| trace.get(*id)).map_or(0, |e| e.time_ms);
    for band in &mut bands {
        band.peaks = (0..band.views.len())
            .map(|i| {
                let Some(view) = band.views[i].1 else { return 0 };
                let until = band.views.get(i + 1).map_or(end_ms, |(t, _)| *t);
                store.before(until.max(band.views[i].0 + 1) as f64).saturating_sub(view)
            })
            .collect();
        band.max_behind = band.peaks.iter().copied().max().unwrap_or(0);
    }
    (store, bands)
}

/// Appends a sample, keeping one per instant and none that repeats the last.
fn record(samples: &mut Vec<LagSample>, next: LagSample) {
    let same =
        |a: &LagSample, b: &LagSample| a.store_revision == b.store_revision && a.cache_revision == b.cache_revision;
    if let Some(last) = samples.last_mut()
        && last.time_ms == next.time_ms
    {
        *last = next;
        // The instant may have ended where the one before it did.
        if let [.., before, last] = samples.as_slice()
            && same(before, last)
        {
            samples.pop();
        }
        return;
    }
    if samples.last().is_some_and(|last| same(last, &next)) {
        return;
    }
    samples.push(next);
}
