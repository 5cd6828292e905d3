//! Simulator throughput: the #59848 workload scaled to many nodes and pods.
//!
//! Run with `cargo xtask bench` (or `cargo bench -p recon-tests --bench throughput`). Each case
//! reports trace entries per second; the README of BENCHMARKS.md explains
//! how to read the numbers.

use recon_scenario::Scenario;
use recon_tests::scaled_59848 as scaled;

fn main() {
    divan::main();
}

fn run(scenario: &Scenario) -> usize {
    recon_tests::run(scenario).entries.len()
}

/// The shipped #59848 scenario, as a baseline.
#[divan::bench]
fn pod_safety_59848(bencher: divan::Bencher) {
    let scenario = recon_tests::load("pod-safety-59848");
    let entries = run(&scenario);
    bencher.counter(divan::counter::ItemsCount::new(entries)).bench(|| run(&scenario));
}

/// The scaled workload: (nodes, pods).
#[divan::bench(args = [(10, 100), (50, 500), (100, 2000)], sample_count = 5, sample_size = 1)]
fn scaled_59848(bencher: divan::Bencher, (nodes, pods): (usize, usize)) {
    let scenario = scaled(nodes, pods);
    let entries = run(&scenario);
    bencher.counter(divan::counter::ItemsCount::new(entries)).bench(|| run(&scenario));
}
