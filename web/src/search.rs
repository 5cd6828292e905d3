//! The search for a violation, worker side: the same Sieve-style search as
//! `recon explore` ([`recon_explore`]), one shard per Web Worker.
//!
//! The page starts several search workers and sends each a
//! [`SearchRequest`] for shard `i` of `n` ([`recon_explore::shard`]: the
//! plans whose index is `i` modulo `n`, among the first `budget` of the
//! whole list, the budget meaning what `recon explore --budget` means). A worker runs the fault-free
//! reference run, derives the plans exactly as `recon explore` does, and
//! runs its shard in index order, reporting after every plan which index
//! it will run next; it stops at its first failure (the lowest failing
//! index of its shard). The page knows the answer as soon as one worker
//! has failed at index `m` and every other one has failed too or gone past
//! `m`: the lowest failing index of the whole list, the one `recon explore`
//! reports, however fast each worker ran. One worker then shrinks it
//! ([`ShrinkRequest`]) into the scenario `recon explore` would write.
//!
//! Plain Rust: it runs natively in the tests, as [`crate::runner`] does.

use recon_explore::{DEFAULT_BUDGET, Explorer, shard};
use serde::{Deserialize, Serialize};

use crate::protocol::{FromWorker, UploadRef};
use crate::runner::{Progress, Runner};

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
    /// by all shards together ([`shard`]; [`DEFAULT_BUDGET`], as `recon
    /// explore`, unless told otherwise).
    pub budget: usize,
}

impl SearchRequest {
    /// Shard `shard` of `shards` of a search with the default budget.
    pub fn new(id: u64, scenario: String, uploads: Vec<UploadRef>, shard: usize, shards: usize) -> SearchRequest {
        SearchRequest { id, scenario, uploads, shard, shards, budget: DEFAULT_BUDGET }
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
}

impl SearchReport {
    /// The request id.
    pub fn id(&self) -> u64 {
        match self {
            SearchReport::Plans { id, .. }
            | SearchReport::Progress { id, .. }
            | SearchReport::Found { id, .. }
            | SearchReport::Unsearchable { id, .. }
            | SearchReport::Shrunk { id, .. } => *id,
        }
    }

    /// Whether the worker is done with the request after this report.
    pub fn is_final(&self) -> bool {
        match self {
            SearchReport::Plans { .. } => false,
            SearchReport::Progress { next, .. } => next.is_none(),
            SearchReport::Found { .. } | SearchReport::Unsearchable { .. } | SearchReport::Shrunk { .. } => true,
        }
    }
}

/// What a finding broke, in one line.
fn broken(finding: &recon_explore::Finding) -> String {
    format!("{}: {}", finding.broken, finding.message)
}

/// Runs a search request: reports as it goes, and returns the last answer.
pub(crate) fn search(runner: &mut Runner, request: &SearchRequest, progress: &mut dyn Progress) -> FromWorker {
    let id = request.id;
    let prepared = match runner.prepare(id, &request.scenario, &request.uploads) {
        Ok(prepared) => prepared,
        Err(failed) => return failed,
    };
    let factory = || prepared.instantiate();
    let explorer = match Explorer::new(prepared.scenario(), &factory, false) {
        Ok(explorer) => explorer,
        Err(e) => return FromWorker::Failed { id, component: None, error: prepared.file.explain(e) },
    };
    if let Some(finding) = explorer.reference_finding() {
        return FromWorker::Search(SearchReport::Unsearchable { id, broken: broken(&finding) });
    }
    let all = explorer.plans();
    let generated = all.len();
    let total = generated.min(request.budget);
    let plans = shard(all, request.budget, request.shard, request.shards);
    let next = |k: usize| plans.get(k).map(|(index, _)| *index);
    progress.report(FromWorker::Search(SearchReport::Plans {
        id,
        total,
        generated,
        in_shard: plans.len(),
        next: next(0),
    }));
    for (k, (index, plan)) in plans.iter().enumerate() {
        if let Some(finding) = explorer.run(plan, &factory) {
            let (index, done, plan, broken) = (*index, k + 1, plan.describe(), broken(&finding));
            return FromWorker::Search(SearchReport::Found { id, index, done, plan, broken });
        }
        if k + 1 < plans.len() {
            progress.report(FromWorker::Search(SearchReport::Progress { id, done: k + 1, next: next(k + 1) }));
        }
    }
    FromWorker::Search(SearchReport::Progress { id, done: plans.len(), next: None })
}

/// Runs a shrink request.
pub(crate) fn shrink(runner: &mut Runner, request: &ShrinkRequest) -> FromWorker {
    let id = request.id;
    let prepared = match runner.prepare(id, &request.scenario, &request.uploads) {
        Ok(prepared) => prepared,
        Err(failed) => return failed,
    };
    let factory = || prepared.instantiate();
    let explorer = match Explorer::new(prepared.scenario(), &factory, false) {
        Ok(explorer) => explorer,
        Err(e) => return FromWorker::Failed { id, component: None, error: prepared.file.explain(e) },
    };
    let failed = |error: String| FromWorker::Failed { id, component: None, error };
    let Some(plan) = explorer.plans().into_iter().nth(request.index) else {
        return failed(format!("the search has no plan #{}", request.index));
    };
    let Some(finding) = explorer.run(&plan, &factory) else {
        return failed(format!("plan #{} no longer breaks anything", request.index));
    };
    let shrunk = explorer.shrink(&plan, &finding, &factory);
    let scenario = recon_scenario::to_yaml(&explorer.found_scenario(&shrunk));
    FromWorker::Search(SearchReport::Shrunk {
        id,
        index: request.index,
        scenario,
        faults: shrunk.plan.faults.iter().map(|f| f.describe()).collect(),
        runs: shrunk.runs,
        broken: broken(&shrunk.finding),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::ToWorker;

    #[test]
    fn reports_cross_to_the_page_inside_worker_messages() {
        let reports = [
            SearchReport::Plans { id: 4, total: 131, generated: 131, in_shard: 66, next: Some(0) },
            SearchReport::Progress { id: 4, done: 3, next: None },
            SearchReport::Found { id: 4, index: 94, done: 48, plan: "p".into(), broken: "b".into() },
        ];
        for report in reports {
            let text = serde_json::to_string(&FromWorker::Search(report.clone())).unwrap();
            let FromWorker::Search(back) = serde_json::from_str(&text).unwrap() else { panic!("{text}") };
            assert_eq!(back, report, "{text}");
        }
        let request = ToWorker::Search(SearchRequest::new(5, "name: x".into(), Vec::new(), 1, 2));
        let text = serde_json::to_string(&request).unwrap();
        let ToWorker::Search(back) = serde_json::from_str(&text).unwrap() else { panic!("{text}") };
        assert_eq!((back.shard, back.shards, back.budget, request.id()), (1, 2, DEFAULT_BUDGET, 5));
    }
}
