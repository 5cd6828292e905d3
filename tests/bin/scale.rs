//! The scale benchmark (issue 17): the cluster of `recon_tests::scale` at
//! several sizes, each run in a process of its own so that its peak memory
//! is its own, natively and (up to `--wasm-up-to` nodes) with every
//! controller as a Wasm plugin under wasmtime, loaded under the limits
//! the cluster sets (`recon_tests::scale::plugin_limits`); the Wasm/native
//! ratio of each size is measured in the same invocation.
//!
//! ```text
//! cargo xtask bench scale [--sizes 100x3000,1000x30000,5000x150000] [--wasm-up-to NODES] [--min-seconds S]
//! cargo run --profile dist -p recon-tests --bin scale -- [same flags]   # RECON_PLUGIN_DIR for Wasm
//! cargo run --release -p recon-tests --bin scale -- --write NODES PODS FILE
//! ```
//!
//! Each run prints progress to standard error every virtual 30 s. A size
//! and engine is run again until its runs have taken `--min-seconds` (30 by
//! default) of wall time, so a small size's time, which varies from run to
//! run by more than a big one's, is the median of several. The table at the
//! end has, per size and engine: how many runs, wall time to build and the
//! median, fastest and slowest run, trace entries, entries per wall second
//! (of the median run) and that rate as a share of the first size's, and
//! the highest peak resident memory (`/proc/self/status`, Linux; `?`
//! elsewhere). Medians, not the fastest runs: a big size runs once or
//! twice, so its fastest run is a typical one, and a small size's fastest
//! of twenty is a lucky one; comparing the two overstated how the rate
//! falls with size. Runs of one size and engine that give different traces, or
//! a Wasm run whose trace differs from the native one, are reported and
//! fail the benchmark.

use std::process::Command;
use std::time::Instant;

use recon_sim::Sim;

/// The allocator of the binaries that run big scenarios (`recon_alloc`:
/// mimalloc, keeping what a run frees for the run).
#[global_allocator]
static ALLOCATOR: recon_alloc::Allocator = recon_alloc::Allocator;

/// The sizes run by default: Kubernetes' published limits (5,000 nodes,
/// 150,000 pods) and two steps below.
const DEFAULT_SIZES: &str = "100x3000,1000x30000,5000x150000";

/// Sizes above this many nodes run natively only by default.
const DEFAULT_WASM_UP_TO: usize = 1_000;

/// Wall time a size and engine is run for, at least once, by default.
const DEFAULT_MIN_SECONDS: f64 = 30.0;

/// What one run measured, as the child prints it on its last line.
#[derive(Clone, Debug)]
struct Measured {
    build_s: f64,
    run_s: f64,
    entries: u64,
    peak_kib: Option<u64>,
    /// The trace's hash: a Wasm run must give the native one.
    hash: String,
}

fn main() {
    recon_alloc::tune_for_long_runs();
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("--one") => one(&args[1..]),
        Some("--write") => {
            let [nodes, pods, path] = &args[1..] else { usage("--write needs NODES PODS FILE") };
            std::fs::write(path, recon_tests::scale::yaml(number(nodes), number(pods)))
                .unwrap_or_else(|e| usage(&format!("cannot write {path}: {e}")));
            println!("wrote {path}");
        }
        _ => all(&args),
    }
}

/// The parent: every size and engine, each in a child process, then the table.
fn all(args: &[String]) {
    let mut sizes = DEFAULT_SIZES.to_owned();
    let mut wasm_up_to = DEFAULT_WASM_UP_TO;
    let mut min_seconds = DEFAULT_MIN_SECONDS;
    let mut rest = args.iter();
    while let Some(flag) = rest.next() {
        let mut value = || rest.next().cloned().unwrap_or_else(|| usage(&format!("{flag} needs a value")));
        match flag.as_str() {
            "--sizes" => sizes = value(),
            "--wasm-up-to" => wasm_up_to = number(&value()),
            "--min-seconds" => {
                let v = value();
                min_seconds = v.parse().unwrap_or_else(|_| usage(&format!("--min-seconds: {v} is not a number")));
            }
            other => usage(&format!("unknown argument {other}")),
        }
    }
    let sizes: Vec<(usize, usize)> = sizes
        .split(',')
        .map(|s| {
            let (n, p) = s.split_once('x').unwrap_or_else(|| usage(&format!("{s}: a size is NODESxPODS")));
            (number(n), number(p))
        })
        .collect();
    let wasm_available = std::env::var_os("RECON_PLUGIN_DIR").is_some();
    if !wasm_available {
        eprintln!("scale: RECON_PLUGIN_DIR is not set, so only native runs (cargo xtask bench scale sets it)");
    }
    let exe = std::env::current_exe().expect("the benchmark's own path");
    let mut differ = false;
    let mut repeated = |nodes, pods, engine| {
        let runs = runs(&exe, nodes, pods, engine, min_seconds);
        if runs.iter().any(|r| r.hash != runs[0].hash) {
            differ = true;
            eprintln!("scale: {nodes} nodes, {pods} pods, {engine}: runs gave different traces");
        }
        runs
    };
    let mut rows = Vec::new();
    for &(nodes, pods) in &sizes {
        let native = repeated(nodes, pods, "native");
        let wasm = (wasm_available && nodes <= wasm_up_to).then(|| repeated(nodes, pods, "wasm"));
        rows.push((nodes, pods, native, wasm));
    }
    println!();
    println!(
        "| nodes | pods | engine | runs | build | run, median | fastest | slowest | trace entries | entries/s \
         | ÷ first size | peak memory | Wasm/native run time |"
    );
    println!("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let first_rate = rows.first().map(|(_, _, native, _)| rate(native));
    for (nodes, pods, native, wasm) in rows {
        row(nodes, pods, "native", &native, first_rate, None);
        if let Some(wasm) = wasm {
            row(nodes, pods, "Wasm", &wasm, None, Some(median(&wasm).run_s / median(&native).run_s));
            if wasm[0].hash != native[0].hash {
                differ = true;
                eprintln!("scale: {nodes} nodes, {pods} pods: the Wasm run's trace differs from the native one");
            }
        }
    }
    if differ {
        std::process::exit(1);
    }
}

/// Runs one size and engine until its runs have taken `min_seconds` of
/// wall time (at least once).
fn runs(exe: &std::path::Path, nodes: usize, pods: usize, engine: &str, min_seconds: f64) -> Vec<Measured> {
    let mut runs = vec![child(exe, nodes, pods, engine)];
    while runs.iter().map(|r| r.build_s + r.run_s).sum::<f64>() < min_seconds {
        runs.push(child(exe, nodes, pods, engine));
    }
    runs
}

/// The runs from fastest to slowest.
fn by_time(runs: &[Measured]) -> Vec<&Measured> {
    let mut sorted: Vec<&Measured> = runs.iter().collect();
    sorted.sort_by(|a, b| a.run_s.total_cmp(&b.run_s));
    sorted
}

/// The median run (of an even number, the slower of the middle two).
fn median(runs: &[Measured]) -> &Measured {
    let sorted = by_time(runs);
    sorted[sorted.len() / 2]
}

/// Entries per wall second of the median run.
fn rate(runs: &[Measured]) -> f64 {
    let m = median(runs);
    m.entries as f64 / m.run_s.max(1e-9)
}

fn row(nodes: usize, pods: usize, engine: &str, runs: &[Measured], first_rate: Option<f64>, ratio: Option<f64>) {
    let m = median(runs);
    let sorted = by_time(runs);
    let (fastest, slowest) = (sorted[0].run_s, sorted[sorted.len() - 1].run_s);
    let peak = runs.iter().filter_map(|r| r.peak_kib).max();
    println!(
        "| {nodes} | {pods} | {engine} | {} | {:.1} s | {:.1} s | {:.1} s | {:.1} s | {} | {:.0} | {} | {} | {} |",
        runs.len(),
        m.build_s,
        m.run_s,
        fastest,
        slowest,
        m.entries,
        rate(runs),
        first_rate.map_or(String::new(), |first| format!("{:.2}", rate(runs) / first)),
        peak.map_or("?".to_owned(), |k| format!("{} MiB", k / 1024)),
        ratio.map_or(String::new(), |r| format!("{r:.2}×")),
    );
}

/// Runs one size and engine in a child process and reads its last line.
fn child(exe: &std::path::Path, nodes: usize, pods: usize, engine: &str) -> Measured {
    eprintln!("scale: {nodes} nodes, {pods} pods, {engine} …");
    let output = Command::new(exe)
        .args(["--one", &nodes.to_string(), &pods.to_string(), engine])
        .stderr(std::process::Stdio::inherit())
        .output()
        .unwrap_or_else(|e| usage(&format!("cannot start a run: {e}")));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let last = stdout.lines().last().unwrap_or_default();
    let fields: Vec<&str> = last.split_whitespace().collect();
    let [build_s, run_s, entries, peak, hash] = fields[..] else {
        eprintln!("{stdout}");
        usage(&format!("the run of {nodes} nodes, {pods} pods ({engine}) failed: {}", output.status));
    };
    Measured {
        build_s: build_s.parse().expect("seconds"),
        run_s: run_s.parse().expect("seconds"),
        entries: entries.parse().expect("a count"),
        peak_kib: peak.parse().ok(),
        hash: hash.to_owned(),
    }
}

/// The child: one size and engine; progress on standard error, the
/// measurements on the last line of standard output.
fn one(args: &[String]) {
    let [nodes, pods, engine] = args else { usage("--one needs NODES PODS ENGINE") };
    let (nodes, pods) = (number(nodes), number(pods));
    let started = Instant::now();
    let scenario = recon_tests::scale::scenario(nodes, pods);
    let instantiate: recon_sim::Instantiate = match engine.as_str() {
        "native" => Box::new(|c| recon_catalog::instantiate(&c.controller)),
        "wasm" => recon_tests::wasm_instantiate(recon_tests::wasm_plugins_for(&scenario)),
        other => usage(&format!("{other}: the engine is native or wasm")),
    };
    let mut sim = Sim::new(&scenario, instantiate).expect("the scale scenario builds");
    let build_s = started.elapsed().as_secs_f64();
    let running = Instant::now();
    let end = scenario.duration.0;
    let mut at = 0;
    while at < end {
        at = (at + 30_000).min(end);
        sim.run_until(at);
        eprintln!(
            "  {:>4}s virtual  {:>7.1}s wall  {:>10} entries",
            at / 1000,
            running.elapsed().as_secs_f64(),
            sim.trace().entries.len()
        );
    }
    sim.run();
    let run_s = running.elapsed().as_secs_f64();
    if let Some((_, reason)) = sim.trace().halted() {
        eprintln!("  halted: {reason}");
    }
    // A crash is why a Wasm run leaves the native one's path: say which.
    for crash in recon_trace::explain::crashes(sim.trace()).iter().take(5) {
        eprintln!("  crashed: {} ({} times); last: {}", crash.component, crash.count, crash.reason);
    }
    let peak = recon_tests::proc_status_kib("VmHWM:").map_or("?".to_owned(), |k| k.to_string());
    println!("{build_s:.3} {run_s:.3} {} {peak} {}", sim.trace().entries.len(), sim.trace().hash());
}

fn number(text: &str) -> usize {
    text.parse().unwrap_or_else(|_| usage(&format!("{text}: not a number")))
}

fn usage(problem: &str) -> ! {
    eprintln!("scale: {problem}");
    eprintln!("usage: scale [--sizes NODESxPODS,...] [--wasm-up-to NODES] | --write NODES PODS FILE");
    std::process::exit(2)
}
