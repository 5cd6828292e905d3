//! Golden trace hashes: every shipped scenario, under several seeds, must
//! give exactly the trace it gave when the hashes were pinned, natively and
//! with every controller as a Wasm plugin under wasmtime.
//!
//! This is what lets the simulator be restructured safely (issue 13): a
//! refactor that moves code keeps every hash; a change that alters what a
//! run does or how a trace is written changes them on purpose, re-pins them
//! in the same commit (`RECON_BLESS=1 cargo xtask test`, or this test alone
//! with `RECON_PLUGIN_DIR` set) and says why in the commit message.

use std::collections::BTreeMap;
use std::path::PathBuf;

use recon_tests::{all_scenarios, run, run_wasm, wasm_plugins};

/// The seeds each scenario is pinned under: its own, and three others.
const SEEDS: [Option<u64>; 4] = [None, Some(2), Some(17), Some(4_242)];

fn golden_file() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("golden-hashes.txt")
}

/// `scenario seed` → hash, as the file holds them.
fn read_pinned() -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(golden_file()).unwrap_or_default();
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| l.rsplit_once(' ').map(|(k, h)| (k.to_owned(), h.to_owned())))
        .collect()
}

#[test]
fn every_shipped_scenario_keeps_its_pinned_trace_hash_under_every_seed_natively_and_under_wasmtime() {
    let plugins = wasm_plugins();
    let mut computed = BTreeMap::new();
    let mut differences = Vec::new();
    for path in all_scenarios() {
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&path).unwrap();
        let scenario = recon_scenario::parse(&path.display().to_string(), &text).unwrap();
        for seed in SEEDS {
            let mut seeded = scenario.clone();
            seeded.seed = seed.unwrap_or(scenario.seed);
            let native = run(&seeded).hash();
            let wasm = run_wasm(&seeded, &plugins).hash();
            let key = format!("{stem} {}", seeded.seed);
            if native != wasm {
                differences.push(format!("{key}: native {native} but wasmtime {wasm}"));
            }
            computed.insert(key, native);
        }
    }
    assert!(differences.is_empty(), "native and Wasm disagree:\n{}", differences.join("\n"));
    if std::env::var_os("RECON_BLESS").is_some() {
        let mut text = String::from(
            "# Golden trace hashes: `scenario seed hash`, written by tests/tests/golden.rs with RECON_BLESS=1.\n\
             # A change here must be explained in its commit message.\n",
        );
        for (key, hash) in &computed {
            text += &format!("{key} {hash}\n");
        }
        std::fs::write(golden_file(), text).unwrap();
        return;
    }
    let pinned = read_pinned();
    let mut changed = Vec::new();
    for (key, hash) in &computed {
        match pinned.get(key) {
            Some(was) if was == hash => {}
            Some(was) => changed.push(format!("{key}: pinned {was}, now {hash}")),
            None => changed.push(format!("{key}: not pinned (now {hash})")),
        }
    }
    for key in pinned.keys().filter(|k| !computed.contains_key(*k)) {
        changed.push(format!("{key}: pinned, but no such scenario and seed any more"));
    }
    assert!(
        changed.is_empty(),
        "trace hashes changed; if that is intended, re-pin with RECON_BLESS=1 and say why in the commit:\n{}",
        changed.join("\n")
    );
}
