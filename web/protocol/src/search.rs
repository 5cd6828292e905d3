//! The messages of the search for a violation ("Find a violation"): the
//! page asks several search workers for one shard each of `recon
//! explore`'s plans ([`SearchRequest`]) and the one that found the first
//! failure to shrink it ([`ShrinkRequest`]); each answers with
//! [`SearchReport`]s. The search over orderings (`recon explore
//! --orderings`) runs in one worker ([`OrderingRequest`]) and answers with
//! [`SearchReport::OrderingProgress`] and [`SearchReport::Orderings`].
//! The worker side is `recon_worker::search`.

use serde::{Deserialize, Serialize};

use crate::UploadRef;

/// Search one shard of a scenario's plans.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchRequest {
    /// Request id.
    pub id: u64,
    /// The scenario, as YAML text; its workload (the scenario without its
    /// faults) is what gets searched.
    pub scenario: String,
    /// Components whose controller is an uploaded plugin.
    pub uploads: Vec<UploadRef>,
    /// Which shard, from 0.
    pub shard: usize,
    /// How many shards (workers) share the plans.
    pub shards: usize,
    /// Only the first this many plans of the whole list are searched,
    /// by all shards together (`recon_explore::shard`); `None` for
    /// `recon explore`'s default budget.
    #[serde(default)]
    pub budget: Option<usize>,
}

impl SearchRequest {
    /// Shard `shard` of `shards` of a search with the default budget.
    pub fn new(id: u64, scenario: String, uploads: Vec<UploadRef>, shard: usize, shards: usize) -> SearchRequest {
        SearchRequest { id, scenario, uploads, shard, shards, budget: None }
    }
}

/// Shrink the failing plan at `index` into the scenario that replays it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ShrinkRequest {
    /// Request id.
    pub id: u64,
    /// The scenario searched, as YAML text.
    pub scenario: String,
    /// Components whose controller is an uploaded plugin.
    pub uploads: Vec<UploadRef>,
    /// The failing plan's index in the whole list.
    pub index: usize,
}

/// Search the orders in which controllers with work due at the same moment
/// reconcile (and, with `stale_views`, reconciles given stale views), as
/// `recon explore --orderings` does, depth-first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OrderingRequest {
    /// Request id.
    pub id: u64,
    /// The scenario, as YAML text, searched as given (faults included).
    pub scenario: String,
    /// Components whose controller is an uploaded plugin.
    pub uploads: Vec<UploadRef>,
    /// At most this many runs.
    pub max_runs: usize,
    /// At most this many reconciles per run get a stale view (0: orderings alone).
    #[serde(default)]
    pub stale_views: usize,
}

/// One run an ordering search found, ready to open.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FoundOrdering {
    /// The ordering (and stale views) in words.
    pub description: String,
    /// The scenario that replays it (its `ordering` and `staleViews`), as YAML.
    pub scenario: String,
}

/// What a search worker tells the page.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "report")]
pub enum SearchReport {
    /// The reference run is done and the plans are known.
    #[serde(rename_all = "camelCase")]
    Plans {
        /// Request id.
        id: u64,
        /// Plans the whole search runs at most (all shards, within the budget).
        total: usize,
        /// Plans derived from the reference run (before the budget).
        generated: usize,
        /// Plans in this shard.
        in_shard: usize,
        /// The index of this shard's first plan; `None` if it has none.
        next: Option<usize>,
    },
    /// A plan ran and broke nothing.
    #[serde(rename_all = "camelCase")]
    Progress {
        /// Request id.
        id: u64,
        /// Plans of this shard run so far.
        done: usize,
        /// The index of the next plan this shard runs; `None` when the
        /// shard is finished (nothing in it broke anything).
        next: Option<usize>,
    },
    /// This shard's first failing plan; the worker stops here.
    #[serde(rename_all = "camelCase")]
    Found {
        /// Request id.
        id: u64,
        /// The plan's index in the whole list.
        index: usize,
        /// Plans of this shard run, this one included.
        done: usize,
        /// The plan in one line.
        plan: String,
        /// What it broke, in one line.
        broken: String,
    },
    /// The workload breaks something without any fault: nothing to search.
    #[serde(rename_all = "camelCase")]
    Unsearchable {
        /// Request id.
        id: u64,
        /// What it breaks, in one line.
        broken: String,
    },
    /// A failing plan, shrunk.
    #[serde(rename_all = "camelCase")]
    Shrunk {
        /// Request id.
        id: u64,
        /// The plan's index in the whole list.
        index: usize,
        /// The scenario that replays the shrunk plan, as `recon explore`
        /// writes it (YAML).
        scenario: String,
        /// The shrunk plan's faults, one line each.
        faults: Vec<String>,
        /// How many runs shrinking took.
        runs: usize,
        /// What it breaks, in one line.
        broken: String,
    },
    /// An ordering search has made this many runs.
    #[serde(rename_all = "camelCase")]
    OrderingProgress {
        /// Request id.
        id: u64,
        /// Runs so far.
        runs: usize,
    },
    /// An ordering search is over.
    #[serde(rename_all = "camelCase")]
    Orderings {
        /// Request id.
        id: u64,
        /// Runs made.
        runs: usize,
        /// Whether every ordering the search reaches was run.
        exhausted: bool,
        /// The runs found: two whose outcomes differ (with `diff`), one
        /// that breaks a check (with `broken`), or none.
        found: Vec<FoundOrdering>,
        /// Where the two runs' end states differ, a line per field
        /// (`object field: ordering 1 | ordering 2`).
        diff: Vec<String>,
        /// What the one run breaks, in one line.
        broken: Option<String>,
    },
}

impl SearchReport {
    /// The request id.
    pub fn id(&self) -> u64 {
        match self {
            SearchReport::Plans { id, .. }
            | SearchReport::Progress { id, .. }
            | SearchReport::Found { id, .. }
            | SearchReport::Unsearchable { id, .. }
            | SearchReport::Shrunk { id, .. }
            | SearchReport::OrderingProgress { id, .. }
            | SearchReport::Orderings { id, .. } => *id,
        }
    }

    /// Whether the worker is done with the request after this report.
    pub fn is_final(&self) -> bool {
        match self {
            SearchReport::Plans { .. } | SearchReport::OrderingProgress { .. } => false,
            SearchReport::Progress { next, .. } => next.is_none(),
            SearchReport::Found { .. }
            | SearchReport::Unsearchable { .. }
            | SearchReport::Shrunk { .. }
            | SearchReport::Orderings { .. } => true,
        }
    }
}
