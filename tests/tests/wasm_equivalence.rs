//! One implementation per controller, two ways to run it: linked natively,
//! or compiled to Wasm and run in the sandbox under wasmtime. Both must give
//! the byte-identical trace for every shipped scenario.
//!
//! The `.wasm` files come from `cargo xtask test`, which builds the plugins
//! first and says where through `RECON_PLUGIN_DIR`.

use recon_host::Limits;
use recon_tests::{all_scenarios, run, run_wasm, wasm_plugins, wasm_plugins_under};

#[test]
fn every_shipped_scenario_gives_the_same_trace_natively_and_under_wasmtime() {
    let plugins = wasm_plugins();
    for path in all_scenarios() {
        let text = std::fs::read_to_string(&path).unwrap();
        let scenario = recon_scenario::parse(&path.display().to_string(), &text).unwrap();
        let native = run(&scenario);
        let wasm = run_wasm(&scenario, &plugins);
        // A real run: its controllers reconciled (the smallest library
        // scenarios, the ordering races, are a few dozen entries long).
        let reconciles =
            native.entries.iter().filter(|e| matches!(e.event, recon_trace::Event::Reconcile { .. })).count();
        assert!(reconciles >= 2, "{}: a real run", path.display());
        if native.hash() != wasm.hash() {
            let first = native
                .entries
                .iter()
                .zip(&wasm.entries)
                .find(|(a, b)| serde_json::to_string(a).unwrap() != serde_json::to_string(b).unwrap());
            panic!("{}: traces differ; first difference: {first:#?}", path.display());
        }
    }
}

#[test]
fn the_naive_kubelet_plugin_reproduces_59848_and_the_fixed_one_does_not() {
    let plugins = wasm_plugins();
    let mut scenario = recon_tests::load("pod-safety-59848");
    let naive = run_wasm(&scenario, &plugins);
    assert!(naive.violations().any(|(_, c, _)| c == recon_scenario::Check::PodIdentity));
    // Swap node-1's kubelet for the fixed twin, which declares a quorum first list.
    let kubelet = scenario.components.iter_mut().find(|c| c.name == "kubelet-node-1").unwrap();
    kubelet.controller = "kubelet-fixed".into();
    kubelet.list_mode = None;
    let fixed = run_wasm(&scenario, &plugins);
    assert_eq!(fixed.violations().count(), 0);
    assert_eq!(fixed.hash(), run(&scenario).hash(), "the fixed twin also runs identically natively");
}

/// Issue 20: a plugin's frames are charged against a stack budget, by their
/// size, so that recursion stops at the same call in every engine. What
/// real compilers emit must stay well within it: the built-in plugins give
/// every shipped scenario's trace with a quarter of the budget (the golden
/// hashes hold them to their traces under the whole).
#[test]
fn the_built_in_plugins_run_every_shipped_scenario_in_a_quarter_of_the_stack_budget() {
    let quarter = Limits { stack_bytes: Limits::DEFAULT.stack_bytes / 4, ..Limits::DEFAULT };
    let plugins = wasm_plugins_under(&quarter);
    for path in all_scenarios() {
        let text = std::fs::read_to_string(&path).unwrap();
        let scenario = recon_scenario::parse(&path.display().to_string(), &text).unwrap();
        let wasm = run_wasm(&scenario, &plugins);
        let crashes: Vec<_> = wasm
            .entries
            .iter()
            .filter_map(|e| match &e.event {
                recon_sim::Event::ComponentCrashed { reason, .. } if reason.contains("stack budget") => Some(reason),
                _ => None,
            })
            .collect();
        assert!(crashes.is_empty(), "{}: {crashes:?}", path.display());
        assert_eq!(wasm.hash(), run(&scenario).hash(), "{}", path.display());
    }
}
