//! `recon explore`: search for a fault schedule that breaks the scenario's
//! controllers, shrink it, write it as a scenario and explain it.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Mutex;
use std::time::Instant;

use recon_explore::{Explorer, Progress, SearchOptions, search, shard};
use recon_sim::{Instantiate, Sim};

use crate::{bad_input, progress, report};

/// The `recon explore` arguments.
pub struct Args {
    /// The scenario file.
    pub scenario: PathBuf,
    /// The seed, fixes and plugins the command line gives.
    pub options: crate::RunOptions,
    /// At most this many plans of the whole list ([`shard`]).
    pub budget: usize,
    /// Worker threads; default every core.
    pub jobs: Option<usize>,
    /// `i/n`.
    pub shard: Option<String>,
    /// Run every plan instead of stopping at the first failure.
    pub keep_going: bool,
    /// Where to write the minimal scenario.
    pub out: Option<PathBuf>,
    /// Also compare each run with the fault-free one.
    pub differential: bool,
}

fn parse_shard(text: &str) -> Option<(usize, usize)> {
    let (i, n) = text.split_once('/')?;
    let (i, n) = (i.trim().parse().ok()?, n.trim().parse().ok()?);
    (n > 0 && i < n).then_some((i, n))
}

/// Runs `recon explore`.
pub fn explore(args: Args) -> ExitCode {
    let (shard_i, shard_n) = match args.shard.as_deref().map(parse_shard) {
        None => (0, 1),
        Some(Some(s)) => s,
        Some(None) => return bad_input("--shard: expected i/n with 0 <= i < n, e.g. 0/4"),
    };
    if args.jobs == Some(0) {
        return bad_input("--jobs: at least 1");
    }
    let prepared = match crate::prepare(&args.scenario, &args.options) {
        Ok(prepared) => prepared,
        Err(status) => return status,
    };
    let scenario = prepared.scenario();
    let factory = || -> Instantiate { prepared.instantiate() };
    let explorer = match Explorer::new(scenario, &factory, args.differential) {
        Ok(e) => e,
        Err(e) => return bad_input(prepared.file.explain(e)),
    };
    if let Some(finding) = explorer.reference_finding() {
        say!("The workload breaks {} without any fault: {}", finding.broken, finding.message);
        say!("Nothing to search for; `recon run` explains it.");
        return ExitCode::from(1);
    }
    let all = explorer.plans();
    let total_plans = all.len();
    let plans = shard(all, args.budget, shard_i, shard_n);
    let jobs = args.jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    say!("scenario  {} (workload: {} script steps, no faults)", scenario.name, explorer.workload.script.len());
    say!("seed      {}", scenario.seed);
    say!("reference {} trace entries, trace {}", explorer.trace.entries.len(), explorer.trace.hash());
    say!(
        "plans     {total_plans} from the reference run; running {} (shard {shard_i}/{shard_n}, budget {}) on {jobs} thread(s)",
        plans.len(),
        args.budget
    );

    let reporter = Reporter::new();
    let options = SearchOptions { jobs, stop_at_first: !args.keep_going };
    let result = search(&explorer, &plans, &factory, options, &|p| reporter.update(p, false, "plans"));
    reporter.update(
        &Progress { done: result.run, total: plans.len(), failures: result.failures.len(), elapsed: result.elapsed },
        true,
        "plans",
    );

    let Some(first) = result.failures.first() else {
        say!();
        say!("No violation found in {} plan(s).", result.run);
        return ExitCode::SUCCESS;
    };
    say!();
    if args.keep_going {
        say!("{} failing plan(s):", result.failures.len());
        for f in &result.failures {
            say!("- #{}: {} — {}", f.index, f.plan.describe(), f.finding.broken);
        }
        say!();
    }
    say!(
        "First failing plan: #{} (found after {:.2}s; {} plans run in {:.2}s)",
        first.index,
        first.found_after.as_secs_f64(),
        result.run,
        result.elapsed.as_secs_f64()
    );
    say!("  {}", first.plan.describe());
    say!("  why this plan: {}", first.plan.rationale);
    say!("  broke: {}: {}", first.finding.broken, first.finding.message);
    let started = Instant::now();
    let shrunk = explorer.shrink(&first.plan, &first.finding, &factory);
    say!(
        "Shrunk to {} fault(s) in {} run(s), {:.2}s:",
        shrunk.plan.faults.len(),
        shrunk.runs,
        started.elapsed().as_secs_f64()
    );
    for f in &shrunk.plan.faults {
        say!("  - {}", f.describe());
    }
    let found = explorer.found_scenario(&shrunk);
    let out = args.out.unwrap_or_else(|| default_out(&args.scenario));
    if let Err(e) = std::fs::write(&out, recon_scenario::to_yaml(&found)) {
        eprintln!("cannot write the scenario to {}: {e}", out.display());
        return ExitCode::from(2);
    }
    say!("Wrote {} (replay: recon run {})", out.display(), out.display());
    say!();
    let mut sim = match Sim::new(&found, factory()) {
        Ok(sim) => sim,
        Err(e) => return bad_input(prepared.file.explain(e)),
    };
    sim.run();
    let trace = sim.into_trace();
    report::print(&found, &trace, &trace.hash(), false);
    ExitCode::from(1)
}

/// The `recon explore --orderings` arguments.
pub struct OrderingArgs {
    /// The scenario file.
    pub scenario: PathBuf,
    /// The seed, fixes and plugins the command line gives.
    pub options: crate::RunOptions,
    /// At most this many runs.
    pub max_runs: usize,
    /// Random walks instead of depth-first.
    pub random_walks: bool,
    /// At most this many reconciles per run get a stale view.
    pub stale_views: usize,
    /// Where to write the first replay scenario (the second gets `-2`).
    pub out: Option<PathBuf>,
}

/// Runs `recon explore --orderings`: searches the orders in which
/// controllers with work due at the same moment reconcile, and reports an
/// outcome that depends on the order (two orderings, the diff of their end
/// states, a scenario replaying each) or an ordering that breaks a check.
pub fn explore_orderings(args: OrderingArgs) -> ExitCode {
    use recon_explore::ordering::{self, OrderingFinding, Strategy};
    if args.max_runs == 0 {
        return bad_input("--orderings: at least 1 run");
    }
    let prepared = match crate::prepare(&args.scenario, &args.options) {
        Ok(prepared) => prepared,
        Err(status) => return status,
    };
    let scenario = prepared.scenario();
    let factory = || -> Instantiate { prepared.instantiate() };
    let strategy = if args.random_walks { Strategy::RandomWalks { seed: scenario.seed } } else { Strategy::DepthFirst };
    say!("scenario  {} (seed {})", scenario.name, scenario.seed);
    say!(
        "orderings {} of at most {} runs{}",
        if args.random_walks { "random walks" } else { "depth-first, de-duplicated by state" },
        args.max_runs,
        match args.stale_views {
            0 => String::new(),
            k => format!(", up to {k} stale view(s) a run"),
        }
    );
    let reporter = Reporter::new();
    let started = Instant::now();
    let progress = |runs: usize, last: bool| {
        let p = Progress { done: runs, total: args.max_runs, failures: 0, elapsed: started.elapsed() };
        reporter.update(&p, last, "runs");
    };
    let bounds = ordering::Bounds { max_runs: args.max_runs, stale_views: args.stale_views };
    let result = match ordering::search(scenario, &factory, strategy, bounds, &mut |runs| progress(runs, false)) {
        Ok(result) => result,
        Err(e) => return bad_input(prepared.file.explain(e)),
    };
    progress(result.runs, true);
    let elapsed = started.elapsed().as_secs_f64();
    let Some(finding) = &result.finding else {
        say!();
        let how = if result.exhausted { "every ordering the search reaches" } else { "the run budget" };
        say!(
            "No order dependence found in {} run(s) ({how}; {} moment(s) skipped as already seen, {} run(s) not quiesced), {elapsed:.2}s.",
            result.runs,
            result.pruned,
            result.unquiesced
        );
        return ExitCode::SUCCESS;
    };
    say!();
    let found = ordering::found_scenarios(scenario, finding);
    match finding {
        OrderingFinding::DependsOnOrder { first, second, diff } => {
            say!("The outcome depends on the order (found in run {} after {elapsed:.2}s):", result.runs);
            say!("  ordering 1: {}", first.describe());
            say!("  ordering 2: {}", second.describe());
            say!("  end states (ordering 1 | ordering 2):");
            for line in diff {
                say!("  - {line}");
            }
        }
        OrderingFinding::Violation(run) => {
            say!("An ordering breaks a safety check (run {} after {elapsed:.2}s):", result.runs);
            say!("  ordering: {}", run.describe());
        }
    }
    let first_out = args.out.unwrap_or_else(|| default_out_named(&args.scenario, "order-1"));
    for (i, s) in found.iter().enumerate() {
        let out = if i == 0 { first_out.clone() } else { numbered(&first_out, i + 1) };
        if let Err(e) = std::fs::write(&out, recon_scenario::to_yaml(s)) {
            eprintln!("cannot write the scenario to {}: {e}", out.display());
            return ExitCode::from(2);
        }
        say!("Wrote {} (replay: recon run {})", out.display(), out.display());
    }
    if let OrderingFinding::Violation(run) = finding {
        let mut sim = match Sim::new(&found[0], factory()) {
            Ok(sim) => sim,
            Err(e) => return bad_input(prepared.file.explain(e)),
        };
        sim.run();
        say!();
        let trace = sim.into_trace();
        report::print(&found[0], &trace, &trace.hash(), false);
        debug_assert!(run.finding.is_some());
    }
    ExitCode::from(1)
}

/// `x.order-1.yaml` → `x.order-2.yaml`; another name gets `-2` before its extension.
fn numbered(first: &Path, n: usize) -> PathBuf {
    let text = first.to_string_lossy();
    if let Some(stem) = text.strip_suffix(".order-1.yaml") {
        return PathBuf::from(format!("{stem}.order-{n}.yaml"));
    }
    let stem = first.file_stem().map_or_else(|| "scenario".into(), |s| s.to_string_lossy().into_owned());
    first.with_file_name(format!("{stem}-{n}.yaml"))
}

/// `scenarios/x.yaml` → `x.<what>.yaml` in the current directory.
fn default_out_named(scenario: &Path, what: &str) -> PathBuf {
    let stem = scenario.file_stem().map_or_else(|| "scenario".into(), |s| s.to_string_lossy().into_owned());
    PathBuf::from(format!("{stem}.{what}.yaml"))
}

/// `scenarios/x.yaml` → `x.found.yaml` in the current directory.
fn default_out(scenario: &Path) -> PathBuf {
    default_out_named(scenario, "found")
}

/// The search's progress on standard error, always shown, as
/// [`progress::Progress`] shows `recon run`'s: rewritten in place on a
/// terminal, a line every five seconds otherwise, and a last line. Runs
/// report from every thread, hence the lock.
struct Reporter {
    progress: Mutex<progress::Progress>,
}

impl Reporter {
    fn new() -> Reporter {
        Reporter { progress: Mutex::new(progress::Progress::new(progress::Show::Always)) }
    }

    /// `what` names the units: `plans` or `runs`.
    fn update(&self, p: &Progress, last: bool, what: &str) {
        let line = |_| {
            let rate = p.done as f64 / p.elapsed.as_secs_f64().max(1e-9);
            let (done, total, failures, seconds) = (p.done, p.total, p.failures, p.elapsed.as_secs_f64());
            format!("{what} {done}/{total}  violations {failures}  {rate:.0} {what}/s  {seconds:.2}s")
        };
        let mut progress = self.progress.lock().expect("no panics while printing");
        if last { progress.finish(line) } else { progress.tick(line) }
    }
}
