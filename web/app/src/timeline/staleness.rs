//! How far each watch cache trails the store, over time.
//!
//! The store's revision comes from its writes, a cache's from the events it
//! applied (or the revision it rebuilt itself at). Between two entries both
//! stay put, so the lag is a step function: one sample per change. How long
//! a cache has been behind grows between samples, so a sample keeps when
//! the oldest revision the cache lacks was committed, and the lag in
//! milliseconds is worked out at the time asked for.

use std::collections::BTreeMap;

use recon_trace::{EntryId, Event, Trace};

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
