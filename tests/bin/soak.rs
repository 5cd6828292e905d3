//! The soak run: the large scenario of `recon_tests::soak` for a long
//! stretch of virtual time, natively, with the figures BENCHMARKS.md
//! reports: wall time, trace entries, and memory as the run goes.
//!
//! ```text
//! cargo run --release -p recon-tests --bin soak -- [--nodes N] [--pods P] [--minutes M]
//!     [--checks podIdentity,timeTravel,...] [--write FILE]
//! ```
//!
//! `--checks` replaces the scenario's enabled checks (default: every safety
//! check), e.g. to see what one check costs.
//! Defaults: 300 nodes, 3,000 pods, 60 minutes. `--write FILE` only writes
//! the scenario file (e.g. to load it in the playground) and exits.
//! Memory is read from `/proc/self/status` (Linux); elsewhere it shows `?`.

use std::time::Instant;

use recon_scenario::Check;
use recon_sim::{Event, Sim};
use recon_tests::soak::{self, SoakSize};

/// The allocator of the binaries that run big scenarios (`recon_alloc`:
/// mimalloc, keeping what a run frees for the run).
#[global_allocator]
static ALLOCATOR: recon_alloc::Allocator = recon_alloc::Allocator;

/// Virtual minutes between progress lines.
const REPORT_EVERY_MINUTES: u64 = 5;

fn main() {
    recon_alloc::tune_for_long_runs();
    let mut size = SoakSize::default();
    let mut write = None;
    let mut checks = None;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| usage(&format!("{flag} needs a value")));
        match flag.as_str() {
            "--nodes" => size.nodes = number(&value()),
            "--pods" => size.pods = number(&value()),
            "--minutes" => size.minutes = number(&value()) as u64,
            "--write" => write = Some(value()),
            "--checks" => checks = Some(value()),
            other => usage(&format!("unknown argument {other}")),
        }
    }
    if let Some(path) = write {
        std::fs::write(&path, soak::yaml(size)).unwrap_or_else(|e| usage(&format!("cannot write {path}: {e}")));
        println!("wrote {path}");
        return;
    }

    let started = Instant::now();
    let mut scenario = soak::scenario(size);
    if let Some(list) = checks {
        let parse = |name: &str| serde_json::from_value(serde_json::Value::String(name.trim().into()));
        scenario.checks.enabled = list
            .split(',')
            .filter(|c| !c.trim().is_empty())
            .map(|c| parse(c).unwrap_or_else(|_| usage(&format!("--checks: unknown check {c}"))))
            .collect();
    }
    let mut sim = Sim::new(&scenario, Box::new(|c| recon_catalog::instantiate(&c.controller))).expect("builds");
    println!(
        "soak: {} nodes, {} pods, {} virtual minutes ({} components, {} script steps, checks {:?}); built in {:.1}s",
        size.nodes,
        size.pods,
        size.minutes,
        scenario.components.len(),
        scenario.script.len(),
        scenario.checks.enabled,
        started.elapsed().as_secs_f64()
    );
    println!(
        "{:>8} {:>9} {:>11} {:>10} {:>9} {:>10} {:>8} {:>10}",
        "virtual", "wall", "entries", "revision", "history", "live keys", "RSS MiB", "bytes/entry"
    );
    let mut minute = 0;
    while minute < size.minutes {
        minute = (minute + REPORT_EVERY_MINUTES).min(size.minutes);
        sim.run_until(minute * 60_000);
        let entries = sim.trace().entries.len();
        let store = sim.store();
        let rss = recon_tests::proc_status_kib("VmRSS:");
        println!(
            "{:>7}m {:>8.1}s {:>11} {:>10} {:>9} {:>10} {:>8} {:>10}",
            minute,
            started.elapsed().as_secs_f64(),
            entries,
            store.revision(),
            store.revision() - store.compacted(),
            store.len(),
            rss.map_or("?".into(), |kb| (kb / 1024).to_string()),
            rss.map_or("?".into(), |kb| (kb * 1024 / entries.max(1) as u64).to_string()),
        );
    }
    sim.run();
    let wall = started.elapsed().as_secs_f64();
    let trace = sim.trace();
    let json_bytes = recon_abi::json_len(trace);
    let mut findings = std::collections::BTreeMap::<Check, usize>::new();
    for (_, check, _) in trace.violations() {
        *findings.entry(check).or_default() += 1;
    }
    let starts = trace.entries.iter().filter(|e| matches!(e.event, Event::ContainerStarted { .. })).count();
    println!();
    println!("wall time         {wall:.1} s");
    println!("trace entries     {} ({:.0} per wall second)", trace.entries.len(), trace.entries.len() as f64 / wall);
    println!("container starts  {starts}");
    println!("trace as JSON     {} MiB", json_bytes >> 20);
    println!("store             revision {}, {} live keys", sim.store().revision(), sim.store().len());
    println!(
        "peak RSS          {} MiB",
        recon_tests::proc_status_kib("VmHWM:").map_or("?".into(), |kb| (kb / 1024).to_string())
    );
    println!("findings          {findings:?}");
    if let Some((_, reason)) = trace.halted() {
        println!("halted            {reason}");
    }
}

fn number(text: &str) -> usize {
    text.parse().unwrap_or_else(|_| usage(&format!("{text}: not a number")))
}

fn usage(problem: &str) -> ! {
    eprintln!("soak: {problem}");
    eprintln!("usage: soak [--nodes N] [--pods P] [--minutes M] [--checks CHECK,...] [--write FILE]");
    std::process::exit(2);
}
