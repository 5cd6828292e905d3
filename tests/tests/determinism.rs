//! Same scenario and seed, same trace; different seeds, different interleavings.

use std::collections::BTreeSet;

use recon_tests::{load, run_with_seed};
use recon_trace::Trace;

/// The order in which things happened, without uids, names or times: what
/// differs when the interleaving differs.
fn interleaving(trace: &Trace) -> Vec<String> {
    trace
        .entries
        .iter()
        .map(|e| {
            let json = serde_json::to_value(&e.event).unwrap();
            format!("{} {}", trace.lane_name(e), json["kind"].as_str().unwrap())
        })
        .collect()
}

#[test]
fn same_seed_gives_the_same_trace_hash_for_100_seeds() {
    let scenario = load("pod-safety-59848");
    for seed in 0..100 {
        let a = run_with_seed(&scenario, seed);
        let b = run_with_seed(&scenario, seed);
        assert_eq!(a.hash(), b.hash(), "reproduce with seed={seed}");
        assert_eq!(a.to_json(), b.to_json(), "reproduce with seed={seed}");
    }
}

#[test]
fn different_seeds_explore_different_interleavings() {
    let scenario = load("pod-safety-59848");
    let hashes: BTreeSet<String> = (0..30).map(|s| run_with_seed(&scenario, s).hash()).collect();
    assert_eq!(hashes.len(), 30, "every seed gives its own trace");
    let orders: BTreeSet<Vec<String>> = (0..30).map(|s| interleaving(&run_with_seed(&scenario, s))).collect();
    assert!(orders.len() >= 10, "only {} distinct orders of events in 30 seeds", orders.len());
}
