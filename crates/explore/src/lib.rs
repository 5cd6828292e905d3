//! Automatic search for fault schedules that break a controller.
//!
//! Given a scenario, [`Explorer::new`] takes its workload (the scenario
//! without its hand-written faults, [`workload`]) and runs it fault-free:
//! the *reference run*. [`Explorer::plans`] derives perturbation
//! [`Plan`]s from the reference trace, following the three patterns of
//! Sieve (OSDI'22): stale state (time travel), unobserved state and
//! intermediate state ([`generate`]). Each plan is a few faults applied to
//! the workload ([`Plan::apply`]); [`Explorer::run`] runs the result and
//! judges it with the [`oracle`]s: the simulator's safety checks, and
//! optionally a differential comparison with the reference run. [`search`]
//! runs plans on every core and reports failures by plan index, so the
//! answer does not depend on which thread finished first; [`shard`] splits
//! the plan list across machines (or, in the playground, across Web
//! Workers: on `wasm32` there are no threads nor a wall clock, so
//! [`search`] is native only, and a worker runs its shard with
//! [`Explorer::run`], which takes a [`LocalFactory`]). A failing plan is
//! shrunk to a minimal one ([`shrink`]) and written as an ordinary scenario
//! ([`Explorer::found_scenario`]) that `recon run` replays.
//!
//! Everything is deterministic: the same scenario, seed and controllers
//! give the same plans in the same order, the same first failure and the
//! same shrunk scenario.

pub mod generate;
pub mod oracle;
pub mod ordering;
pub mod plan;
pub mod shrink;

#[cfg(not(target_arch = "wasm32"))]
use std::sync::Mutex;
#[cfg(not(target_arch = "wasm32"))]
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;
#[cfg(not(target_arch = "wasm32"))]
use std::time::Instant;

use recon_scenario::Scenario;
use recon_sim::{Instantiate, Sim, SimError, Trace};

pub use oracle::{Broken, Finding, Outcome};
pub use plan::{Fault, Pattern, Plan, workload};
pub use shrink::Shrunk;

/// Makes a fresh [`Instantiate`] for each simulation (each run needs its
/// own; [`search`]'s workers call it from their own threads).
pub type Factory<'a> = &'a (dyn Fn() -> Instantiate + Sync);

/// A [`Factory`] used on one thread only: what [`Explorer`] needs. A
/// browser's compiled plugins cannot cross threads, so a Web Worker's
/// factory is only this. (A `Factory` is one too.)
pub type LocalFactory<'a> = &'a dyn Fn() -> Instantiate;

/// How many plans `recon explore` and the playground's search run at most,
/// unless told otherwise: the budget of [`shard`].
pub const DEFAULT_BUDGET: usize = 10_000;

/// The fault-free reference run of a scenario's workload, and everything
/// needed to run and judge plans against it.
pub struct Explorer {
    /// The workload: the scenario without its hand-written faults.
    pub workload: Scenario,
    /// The reference run's trace.
    pub trace: Trace,
    /// The reference run's outcome, for the differential oracle.
    pub outcome: Outcome,
    /// Whether the differential oracle is on (off by default: see the README).
    pub differential: bool,
}

impl Explorer {
    /// Runs the workload of `scenario` fault-free. Fails if the scenario
    /// cannot be simulated (e.g. it names an unknown controller).
    pub fn new(scenario: &Scenario, factory: LocalFactory, differential: bool) -> Result<Explorer, SimError> {
        let workload = workload(scenario);
        let mut sim = Sim::new(&workload, factory())?;
        sim.run();
        let outcome = Outcome::of(&sim);
        Ok(Explorer { workload, trace: sim.into_trace(), outcome, differential })
    }

    /// What the reference run itself broke, if anything (then there is
    /// nothing to search for: the workload fails without faults).
    pub fn reference_finding(&self) -> Option<Finding> {
        oracle::judge(&self.trace, None)
    }

    /// Every perturbation plan, in the deterministic order of [`generate::plans`].
    pub fn plans(&self) -> Vec<Plan> {
        generate::plans(&self.workload, &self.trace)
    }

    /// Runs the workload with `plan`'s faults and judges it: `None` if
    /// nothing broke. (A plan changes only the script and partitions of a
    /// scenario that already ran, so the simulation always builds; if it
    /// did not, the plan would count as not failing.)
    pub fn run(&self, plan: &Plan, factory: LocalFactory) -> Option<Finding> {
        let mut sim = Sim::new(&plan.apply(&self.workload), factory()).ok()?;
        sim.run();
        if self.differential {
            let outcome = Outcome::of(&sim);
            oracle::judge(sim.trace(), Some((&outcome, &self.outcome)))
        } else {
            oracle::judge(sim.trace(), None)
        }
    }

    /// Shrinks a failing plan to a minimal one that breaks the same thing.
    pub fn shrink(&self, plan: &Plan, finding: &Finding, factory: LocalFactory) -> Shrunk {
        shrink::shrink(plan, finding, &|p| self.run(p, factory))
    }

    /// The scenario that replays a shrunk plan: the workload with its
    /// faults, named `<workload>-found`, described in words, expecting the
    /// violations it shows.
    pub fn found_scenario(&self, shrunk: &Shrunk) -> Scenario {
        let mut s = shrunk.plan.apply(&self.workload);
        s.name = format!("{}-found", self.workload.name);
        let faults: Vec<String> = shrunk.plan.faults.iter().map(|f| format!("- {}", f.describe())).collect();
        s.description = format!(
            "Found by `recon explore` in the workload of {name} (seed {seed}) and shrunk to {n} fault(s), \
             following the {pattern} pattern on {component}:\n{faults}\n\
             What breaks: {broken}: {message}\n\
             The plan was built from the fault-free run: {rationale}.\n\
             `recon run` on this file replays it and explains the causal chain.\n",
            name = self.workload.name,
            seed = self.workload.seed,
            n = shrunk.plan.faults.len(),
            pattern = shrunk.plan.pattern,
            component = shrunk.plan.component,
            faults = faults.join("\n"),
            broken = shrunk.finding.broken,
            message = shrunk.finding.message,
            rationale = shrunk.plan.rationale,
        );
        s.expect.violations = shrunk.finding.checks.clone();
        s
    }
}

/// The plans shard `i` of `n` runs within a budget, each with its index in
/// the full list: of the first `budget` plans of the full list, those whose
/// index is `i` modulo `n`.
///
/// The budget counts the plans of the whole search, not of one shard, so
/// shards `0..n` with the same budget partition exactly the plans one
/// unsharded search with that budget runs, and a plan's index is the same
/// wherever it runs. This is the one meaning of a budget: `recon explore
/// --budget B --shard I/N` (one machine of N) and the playground's search
/// (one Web Worker of N) both take their plans from here, and with one
/// shard (`0`, `1`) it is `recon explore --budget B` on its own. A shard
/// may get no plan at all (a budget smaller than the number of shards).
pub fn shard(plans: Vec<Plan>, budget: usize, i: usize, n: usize) -> Vec<(usize, Plan)> {
    plans.into_iter().take(budget).enumerate().filter(|(index, _)| n > 0 && index % n == i).collect()
}

/// How a search runs.
#[derive(Clone, Copy, Debug)]
pub struct SearchOptions {
    /// Worker threads (at least 1).
    pub jobs: usize,
    /// Stop at the first failing plan (the default) or run them all.
    pub stop_at_first: bool,
}

/// How far a search is, for progress reports.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    /// Plans run so far.
    pub done: usize,
    /// Plans to run.
    pub total: usize,
    /// Failing plans so far.
    pub failures: usize,
    /// Wall-clock time since the search started.
    pub elapsed: Duration,
}

/// A plan that broke something.
#[derive(Clone, Debug)]
pub struct Failure {
    /// The plan's index in the full plan list.
    pub index: usize,
    /// The plan.
    pub plan: Plan,
    /// What it broke.
    pub finding: Finding,
    /// When it was found, since the search started (wall clock: for
    /// reports only, it varies from run to run).
    pub found_after: Duration,
}

/// What a search found.
#[derive(Clone, Debug)]
pub struct SearchResult {
    /// Plans run (with an early stop, possibly a few past the first failure).
    pub run: usize,
    /// Failing plans, by index. With an early stop the first one is the
    /// lowest-index failing plan of the whole list, whatever the threads did.
    pub failures: Vec<Failure>,
    /// Wall-clock time the search took.
    pub elapsed: Duration,
}

/// Runs `plans` (index, plan) on `options.jobs` threads, each building its
/// own simulations. Workers take plans in list order; after a failure no
/// new plan is started (if `stop_at_first`), but every plan already taken
/// finishes, so every plan before the first failure in the list has run
/// and the lowest-index failure is always the same one. `progress` is
/// called after every plan, from the worker that ran it. Native only (it
/// needs threads and a clock).
#[cfg(not(target_arch = "wasm32"))]
pub fn search(
    explorer: &Explorer,
    plans: &[(usize, Plan)],
    factory: Factory,
    options: SearchOptions,
    progress: &(dyn Fn(&Progress) + Sync),
) -> SearchResult {
    let start = Instant::now();
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let failed = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let failures = Mutex::new(Vec::new());
    let worker = || {
        loop {
            if stop.load(Ordering::SeqCst) {
                break;
            }
            let k = next.fetch_add(1, Ordering::SeqCst);
            let Some((index, plan)) = plans.get(k) else { break };
            let finding = explorer.run(plan, factory);
            if let Some(finding) = finding {
                failures.lock().expect("no worker panics holding it").push(Failure {
                    index: *index,
                    plan: plan.clone(),
                    finding,
                    found_after: start.elapsed(),
                });
                failed.fetch_add(1, Ordering::SeqCst);
                if options.stop_at_first {
                    stop.store(true, Ordering::SeqCst);
                }
            }
            let done = done.fetch_add(1, Ordering::SeqCst) + 1;
            progress(&Progress {
                done,
                total: plans.len(),
                failures: failed.load(Ordering::SeqCst),
                elapsed: start.elapsed(),
            });
        }
    };
    let jobs = options.jobs.max(1);
    if jobs == 1 {
        worker();
    } else {
        std::thread::scope(|s| {
            for _ in 0..jobs {
                s.spawn(worker);
            }
        });
    }
    let mut failures = failures.into_inner().expect("no worker panicked");
    failures.sort_by_key(|f| f.index);
    SearchResult { run: done.into_inner(), failures, elapsed: start.elapsed() }
}
