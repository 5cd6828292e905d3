//! `recon`: run Recon scenarios headless.
//!
//! `recon run scenarios/pod-safety-59848.yaml` runs a scenario with the
//! built-in controllers, prints what happened and why, and exits with 1 if
//! a safety property broke, 0 if none did, 2 if the input was bad.
//! `recon explore` searches for a fault schedule that breaks one.
//! `recon audit` checks a real cluster's audit logs for stale reads.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use recon_prepare::{Prepared, Preparer, ScenarioFile};
use recon_sim::Trace;

/// The allocator of the binaries that run big scenarios (`recon_alloc`:
/// mimalloc, keeping what a run frees for the run).
#[global_allocator]
static ALLOCATOR: recon_alloc::Allocator = recon_alloc::Allocator;

/// Prints a line to standard output, like `println!`, except that a reader
/// who stops reading (`recon run … | head`) ends the printing quietly
/// instead of panicking on the broken pipe; the command still finishes and
/// exits with its own status.
macro_rules! say {
    () => { $crate::stdout::line(format_args!("")) };
    ($($arg:tt)*) => { $crate::stdout::line(format_args!($($arg)*)) };
}

mod audit;
mod cluster;
mod explore;
mod plugins;
mod progress;
mod report;
mod stdout;
mod trace_file;
mod whole;

/// Recon: a deterministic Kubernetes control-plane simulator.
#[derive(Parser)]
#[command(name = "recon", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a scenario and explain what went wrong.
    ///
    /// Exit status: 0 when no check failed, 1 when one did (a safety
    /// property, or convergence when the scenario enables it), 2 on bad input
    /// (unreadable or invalid scenario).
    Run {
        /// The scenario file (YAML).
        scenario: PathBuf,
        /// Override the scenario's seed.
        #[arg(long)]
        seed: Option<u64>,
        /// Write the full trace as JSON to this file. `-` (or a path that
        /// is standard output, as `/dev/stdout`) writes it to standard
        /// output, and the summary to standard error.
        #[arg(long, value_name = "FILE")]
        trace: Option<PathBuf>,
        /// Print every trace entry, not just the summary.
        #[arg(long)]
        timeline: bool,
        /// Also fail (exit 1) when the outcome differs from the scenario's `expect`.
        #[arg(long)]
        expect: bool,
        /// Run a component's controller from a Wasm plugin instead:
        /// `COMPONENT=FILE.wasm` (repeatable; a `*` in COMPONENT matches any
        /// run of characters, so `'kubelet-*=FILE.wasm'` is every kubelet).
        #[arg(long = "plugin", value_name = "COMPONENT=FILE")]
        plugins: Vec<String>,
        /// Turn on the scenario's upstream fix NAME (repeatable; the
        /// scenario's `fixes` lists them).
        #[arg(long = "fix", value_name = "NAME")]
        fixes: Vec<String>,
        /// Switch an upstream staleness mitigation on for a component:
        /// `COMPONENT=staleControllerConsistency` (KEP-5647) or
        /// `COMPONENT=readYourOwnWrites` (controller-runtime's
        /// read-your-own-writes client); repeatable.
        #[arg(long = "mitigate", value_name = "COMPONENT=MITIGATION")]
        mitigations: Vec<String>,
        /// Also write the run as audit logs in DIR, one `<api-server>.jsonl`
        /// per API server, as a real cluster's would be (`recon audit` reads them).
        #[arg(long, value_name = "DIR")]
        audit_log: Option<PathBuf>,
        /// Print the run's progress on standard error (it is printed anyway
        /// when standard error is a terminal and the run takes more than a
        /// tenth of a second).
        #[arg(long)]
        progress: bool,
    },
    /// Validate a Wasm plugin and print its manifest, or say precisely why it is rejected.
    ///
    /// Exit status: 0 when the plugin is valid, 2 when it is not.
    CheckPlugin {
        /// The plugin (`.wasm`).
        plugin: PathBuf,
        /// Check it under the limits this scenario sets (`limits.plugins`)
        /// rather than the defaults.
        #[arg(long, value_name = "FILE")]
        scenario: Option<PathBuf>,
    },
    /// Search for a fault schedule that breaks the scenario's controllers.
    ///
    /// Runs the scenario's workload (its hand-written faults removed)
    /// fault-free, derives perturbation plans from that run (stale state,
    /// unobserved state, intermediate state), runs them on every core,
    /// shrinks the first failing one to a minimal scenario, writes it and
    /// explains it. Exit status: 1 when something broke, 0 when nothing
    /// did, 2 on bad input.
    Explore {
        /// The scenario file (YAML).
        scenario: PathBuf,
        /// Run a component's controller from a Wasm plugin instead:
        /// `COMPONENT=FILE.wasm` (repeatable; a `*` in COMPONENT matches any
        /// run of characters, so `'kubelet-*=FILE.wasm'` is every kubelet).
        #[arg(long = "plugin", value_name = "COMPONENT=FILE")]
        plugins: Vec<String>,
        /// Run at most this many plans: the first this many of the whole
        /// list, of which a shard runs its share.
        #[arg(long, default_value_t = recon_explore::DEFAULT_BUDGET)]
        budget: usize,
        /// Override the scenario's seed.
        #[arg(long)]
        seed: Option<u64>,
        /// Turn on the scenario's upstream fix NAME (repeatable; the
        /// scenario's `fixes` lists them).
        #[arg(long = "fix", value_name = "NAME")]
        fixes: Vec<String>,
        /// Worker threads (default: every core).
        #[arg(long)]
        jobs: Option<usize>,
        /// Run only shard I of N: the plans whose index is I modulo N.
        #[arg(long, value_name = "I/N")]
        shard: Option<String>,
        /// Run every plan instead of stopping at the first failure.
        #[arg(long = "continue")]
        keep_going: bool,
        /// Where to write the minimal failing scenario (default: `<scenario>.found.yaml` here).
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
        /// Also fail a run whose final store state or per-object create/delete
        /// counts differ from the fault-free run's.
        #[arg(long)]
        differential: bool,
        /// Search over orderings instead of faults: who reconciles first
        /// when several controllers have work due at the same moment, at
        /// most N runs; finds a safety violation or an outcome that depends
        /// on the order.
        #[arg(long, value_name = "N")]
        orderings: Option<usize>,
        /// With --orderings: seeded random walks (from --seed or the
        /// scenario's seed) instead of the depth-first search.
        #[arg(long, requires = "orderings")]
        random_walks: bool,
        /// With --orderings: also give up to K reconciles per run a stale
        /// view (the newest inputs delivered to the component held back
        /// past the call); 0, the default, searches orderings alone.
        #[arg(long, value_name = "K", default_value_t = 0, requires = "orderings")]
        stale_views: usize,
    },
    /// List the built-in controllers a scenario can name.
    Controllers,
    /// Write a scenario of a cluster of any size, to run a controller at scale.
    ///
    /// NODES nodes with a kubelet each, over three API servers (two with
    /// lagging watch caches), and PODS pods in Deployments of at most
    /// 1,000, run by the built-in scheduler, deployment-controller and
    /// replicaset-controller. Every Deployment rolls out a new image at 1
    /// minute; a kubelet and the scheduler restart at 2; the run ends at 5
    /// (the scale benchmark's cluster). Run your own controller in it with
    /// `recon run FILE --plugin replicaset-controller=mine.wasm`.
    /// Kubernetes tests clusters up to 5,000 nodes and 150,000 pods.
    ///
    /// Exit status: 0 when written, 2 when the pods do not fit on the nodes
    /// or the file cannot be written.
    Cluster {
        /// Nodes, each with its kubelet (at least 1).
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
        nodes: u64,
        /// Pods, in Deployments of at most 1,000; at most 110 per node,
        /// Kubernetes' default.
        #[arg(long)]
        pods: u64,
        /// Write the scenario to this file instead of standard output.
        #[arg(long, short)]
        output: Option<PathBuf>,
    },
    /// Check a cluster's audit logs for stale reads, and what acted on them.
    ///
    /// Reads audit.k8s.io/v1 logs (JSON lines, plain or gzip), one file
    /// per API server, named by the file (or `--server NAME=FILE`); a
    /// directory gives its logs. Exit status: 1 when a stale read was
    /// acted on, 0 when none was, 2 on bad input (the report still says
    /// what it found in the rest).
    Audit {
        /// Audit log files, or directories of them.
        files: Vec<PathBuf>,
        /// A log with its API server's name: `NAME=FILE` (repeatable; one
        /// name may have several files, e.g. rotated logs).
        #[arg(long = "server", value_name = "NAME=FILE")]
        servers: Vec<String>,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
        /// Print progress on standard error (it is printed anyway when standard error is a terminal and the
        /// reading takes more than a tenth of a second).
        #[arg(long)]
        progress: bool,
        /// Also write a scenario that replays the logs in the simulator
        /// (objects as first seen, users' writes as the script, controllers
        /// as components, the API servers' staleness as they showed it).
        #[arg(long, value_name = "OUT.yaml")]
        scenario: Option<PathBuf>,
    },
}

fn main() -> ExitCode {
    recon_alloc::tune_for_long_runs();
    let cli = Cli::parse();
    match cli.command {
        Command::Run { scenario, seed, trace, timeline, expect, plugins, fixes, mitigations, audit_log, progress } => {
            let options = RunOptions { seed, fixes, plugins, mitigations };
            let progress = progress::Show::asked(progress);
            let trace = trace.map(trace_file::TraceOut::of);
            run(&scenario, &options, RunOutputs { trace, timeline, expect, audit_log, progress })
        }
        Command::Explore {
            scenario,
            plugins,
            fixes,
            seed,
            out,
            orderings: Some(max_runs),
            random_walks,
            stale_views,
            ..
        } => explore::explore_orderings(explore::OrderingArgs {
            scenario,
            options: RunOptions { seed, fixes, plugins, mitigations: Vec::new() },
            max_runs,
            random_walks,
            stale_views,
            out,
        }),
        Command::Explore {
            scenario, plugins, fixes, budget, seed, jobs, shard, keep_going, out, differential, ..
        } => explore::explore(explore::Args {
            scenario,
            options: RunOptions { seed, fixes, plugins, mitigations: Vec::new() },
            budget,
            jobs,
            shard,
            keep_going,
            out,
            differential,
        }),
        Command::CheckPlugin { plugin, scenario } => plugins::check(&plugin, scenario.as_deref()),
        Command::Audit { files, servers, json, progress, scenario } => {
            audit::audit(audit::Args { files, servers, json, progress, scenario })
        }
        Command::Cluster { nodes, pods, output } => cluster::write(nodes, pods, output.as_deref()),
        Command::Controllers => {
            for b in recon_catalog::BUILTINS {
                say!("{:<12} {}", b.name, b.description);
            }
            ExitCode::SUCCESS
        }
    }
}

fn bad_input(message: impl std::fmt::Display) -> ExitCode {
    eprintln!("{message}");
    ExitCode::from(2)
}

/// Reads a scenario file, applies a `--seed` and prepares it with the
/// `--plugin` swaps; on bad input, says why and returns exit status 2.
/// Warnings about where a plugin stands in go to standard error.
/// What the command line changes in a scenario before it runs.
pub(crate) struct RunOptions {
    /// `--seed`.
    seed: Option<u64>,
    /// `--fix`: fixes to turn on.
    fixes: Vec<String>,
    /// `--plugin COMPONENT=FILE`.
    plugins: Vec<String>,
    /// `--mitigate COMPONENT=MITIGATION`.
    mitigations: Vec<String>,
}

fn prepare(path: &Path, options: &RunOptions) -> Result<Prepared, ExitCode> {
    let name = path.display().to_string();
    let text =
        std::fs::read_to_string(path).map_err(|e| bad_input(format!("{name}: cannot read the scenario: {e}")))?;
    let mut file = ScenarioFile::parse(&name, &text).map_err(bad_input)?;
    if let Some(seed) = options.seed {
        file.scenario.seed = seed;
    }
    for fix in &options.fixes {
        file.scenario.set_fix(fix, true).map_err(|e| bad_input(format!("{name}: --fix {fix}: {e}")))?;
    }
    for switch in &options.mitigations {
        let (component, mitigation) = switch
            .split_once('=')
            .ok_or_else(|| bad_input(format!("{name}: --mitigate {switch}: expected COMPONENT=MITIGATION")))?;
        file.scenario
            .set_mitigation(component, mitigation, true)
            .map_err(|e| bad_input(format!("{name}: --mitigate {switch}: {e}")))?;
    }
    let swaps = plugins::load_swaps(&file, &options.plugins).map_err(bad_input)?;
    let mut preparer = Preparer::new().map_err(bad_input)?;
    let prepared = preparer.prepare(file, &swaps).map_err(bad_input)?;
    // One plugin given to a cluster's kubelets warns once per kubelet:
    // a few say what, the count says how many.
    const WARNINGS_SHOWN: usize = 3;
    for warning in prepared.warnings.iter().take(WARNINGS_SHOWN) {
        eprintln!("warning: {warning}");
    }
    if prepared.warnings.len() > WARNINGS_SHOWN {
        eprintln!("warning: and {} more like these, one per component", prepared.warnings.len() - WARNINGS_SHOWN);
    }
    Ok(prepared)
}

/// What `recon run` writes besides its summary, and how.
struct RunOutputs {
    /// `--trace FILE`.
    trace: Option<trace_file::TraceOut>,
    /// `--timeline`.
    timeline: bool,
    /// `--expect`.
    expect: bool,
    /// `--audit-log DIR`.
    audit_log: Option<PathBuf>,
    /// When to show the run's progress: `--progress`, or on a terminal.
    progress: progress::Show,
}

fn run(path: &Path, options: &RunOptions, outputs: RunOutputs) -> ExitCode {
    let RunOutputs { trace: trace_out, timeline, expect, audit_log, progress } = outputs;
    if trace_out == Some(trace_file::TraceOut::Stdout) {
        stdout::summary_to_stderr();
    }
    let prepared = match prepare(path, options) {
        Ok(prepared) => prepared,
        Err(status) => return status,
    };
    let mut sim = match prepared.sim() {
        Ok(sim) => sim,
        Err(message) => return bad_input(message),
    };
    progress::run(&mut sim, prepared.scenario().duration.0, progress);
    // Written before the trace is taken: the logs' bodies come from the run's store.
    if let Some(dir) = audit_log
        && let Err(e) = audit::write_logs(&dir, &sim)
    {
        eprintln!("{e}");
        return ExitCode::from(2);
    }
    let trace: Trace = sim.into_trace();
    let hash = match trace_out.map(|out| trace_file::write_trace(&trace, &out, progress)) {
        Some(Ok(hash)) => hash,
        Some(Err(message)) => {
            eprintln!("{message}");
            return ExitCode::from(2);
        }
        None => trace_file::hash_trace(&trace, progress),
    };
    let outcome = report::print(prepared.scenario(), &trace, &hash, timeline);
    if outcome.violated || (expect && !outcome.as_expected) { ExitCode::from(1) } else { ExitCode::SUCCESS }
}
