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
//! The search over orderings ([`OrderingRequest`]) runs in one worker,
//! depth-first as `recon explore --orderings` does (its runs replay from
//! the start, one after another, so they do not split into shards), and
//! answers with the scenarios that replay what it found.
//!
//! Plain Rust: it runs natively in the tests, as [`crate::runner`] does.

use recon_explore::{DEFAULT_BUDGET, Explorer, shard};
use recon_web_protocol::FromWorker;
use recon_web_protocol::search::{FoundOrdering, OrderingRequest, SearchReport, SearchRequest, ShrinkRequest};

use crate::runner::{Progress, Runner};

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
    let budget = request.budget.unwrap_or(DEFAULT_BUDGET);
    let total = generated.min(budget);
    let plans = shard(all, budget, request.shard, request.shards);
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

/// How often an ordering search reports its progress, in runs.
const ORDERING_PROGRESS_EVERY: usize = 5;

/// Runs an ordering search request: reports progress, and returns what it found.
pub(crate) fn orderings(runner: &mut Runner, request: &OrderingRequest, progress: &mut dyn Progress) -> FromWorker {
    use recon_explore::ordering::{self, Bounds, OrderingFinding, Strategy};
    let id = request.id;
    let prepared = match runner.prepare(id, &request.scenario, &request.uploads) {
        Ok(prepared) => prepared,
        Err(failed) => return failed,
    };
    let factory = || prepared.instantiate();
    let scenario = prepared.scenario();
    let bounds = Bounds { max_runs: request.max_runs.max(1), stale_views: request.stale_views };
    let mut tell = |runs: usize| {
        if runs.is_multiple_of(ORDERING_PROGRESS_EVERY) {
            progress.report(FromWorker::Search(SearchReport::OrderingProgress { id, runs }));
        }
    };
    let result = match ordering::search(scenario, &factory, Strategy::DepthFirst, bounds, &mut tell) {
        Ok(result) => result,
        Err(e) => return FromWorker::Failed { id, component: None, error: prepared.file.explain(e) },
    };
    let (mut found, mut diff, mut broken) = (Vec::new(), Vec::new(), None);
    if let Some(finding) = &result.finding {
        let runs: Vec<&ordering::OrderedRun> = match finding {
            OrderingFinding::DependsOnOrder { first, second, diff: lines } => {
                diff = lines.clone();
                vec![first, second]
            }
            OrderingFinding::Violation(run) => {
                broken = run.finding.as_ref().map(|f| format!("{}: {}", f.broken, f.message));
                vec![run]
            }
        };
        let scenarios = ordering::found_scenarios(scenario, finding);
        found = runs
            .into_iter()
            .zip(scenarios)
            .map(|(run, s)| FoundOrdering { description: run.describe(), scenario: recon_scenario::to_yaml(&s) })
            .collect();
    }
    FromWorker::Search(SearchReport::Orderings {
        id,
        runs: result.runs,
        exhausted: result.exhausted,
        found,
        diff,
        broken,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use recon_web_protocol::ToWorker;

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
        assert_eq!((back.shard, back.shards, back.budget, request.id()), (1, 2, None, 5));
    }
}
