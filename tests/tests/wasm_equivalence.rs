//! One implementation per controller, two ways to run it: linked natively,
//! or compiled to Wasm and run in the sandbox under wasmtime. Both must give
//! the byte-identical trace for every shipped scenario.
//!
//! The `.wasm` files come from `cargo xtask test`, which builds the plugins
//! first and says where through `RECON_PLUGIN_DIR`.

use recon_tests::{all_scenarios, run, run_wasm, wasm_plugins};

#[test]
fn every_shipped_scenario_gives_the_same_trace_natively_and_under_wasmtime() {
    let plugins = wasm_plugins();
    for path in all_scenarios() {
        let text = std::fs::read_to_string(&path).unwrap();
        let scenario = recon_scenario::parse(&path.display().to_string(), &text).unwrap();
        let native = run(&scenario);
        let wasm = run_wasm(&scenario, &plugins);
        assert!(native.entries.len() > 50, "{}: a real run", path.display());
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
