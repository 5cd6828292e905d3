//! The browser engine in a real browser: run by `wasm-bindgen-test-runner`
//! in a dedicated Web Worker of headless Chromium, where the simulator runs
//! in the playground.
//!
//! - The run-time tests shared with the wasmtime engine (`common/run_time.rs`):
//!   hostile and well-behaved plugins give the same crash reasons, byte for
//!   byte, and the same fuel counts as natively.
//! - The catalogue of hostile plugins (`hostile/`): each gives exactly its
//!   answer (`common/catalogue.rs`), and each in place of a component of
//!   #59848 crashes only that component and leaves the rest of the run as
//!   a plain crash would (`hostile/sim.rs`), with the very trace it gives
//!   natively (pinned by hash in `hostile/trace-hashes.txt`).
//! - Every shipped scenario gives the same trace with the built-in
//!   controllers linked into this module and with each of them as a Wasm
//!   plugin in the browser's `WebAssembly`.
//!
//! The plugins' `.wasm` files are built into the test at compile time from
//! the directory `RECON_PLUGIN_DIR` names (`cargo xtask plugins` prints it).
//! See the crate's README for the command.

#![cfg(target_arch = "wasm32")]

mod common;
#[path = "hostile/mod.rs"]
mod hostile;
#[path = "hostile/sim.rs"]
mod hostile_sim;

use std::collections::BTreeMap;

use recon_host::{CompiledPlugin, Engine, Limits, Module};
use recon_sim::{Instantiate, Sim, Trace};
use wasm_bindgen_test::{wasm_bindgen_test, wasm_bindgen_test_configure};

wasm_bindgen_test_configure!(run_in_dedicated_worker);

/// The `.wasm` file of one built-in plugin crate.
macro_rules! plugin {
    ($crate_name:literal) => {
        ($crate_name, include_bytes!(concat!(env!("RECON_PLUGIN_DIR"), "/", $crate_name, ".wasm")).as_slice())
    };
}

/// Every built-in controller's plugin, by crate name.
const PLUGINS: &[(&str, &[u8])] = &[
    plugin!("recon_plugin_condition_writer"),
    plugin!("recon_plugin_configmap_generator"),
    plugin!("recon_plugin_database_operator"),
    plugin!("recon_plugin_deployment"),
    plugin!("recon_plugin_garbage_collector"),
    plugin!("recon_plugin_kubelet"),
    plugin!("recon_plugin_kubelet_fixed"),
    plugin!("recon_plugin_pod_reconciler"),
    plugin!("recon_plugin_grove_operator"),
    plugin!("recon_plugin_hdfs_operator"),
    plugin!("recon_plugin_rabbitmq_cluster_operator"),
    plugin!("recon_plugin_replicaset"),
    plugin!("recon_plugin_scheduler"),
    plugin!("recon_plugin_secret_syncer"),
    plugin!("recon_plugin_statefulset"),
    plugin!("recon_plugin_template"),
];

/// Every built-in compiled by the browser, by controller name.
fn compiled_plugins() -> BTreeMap<String, CompiledPlugin> {
    let engine = Engine::new().unwrap();
    recon_catalog::BUILTINS
        .iter()
        .map(|builtin| {
            let (_, bytes) = PLUGINS
                .iter()
                .find(|(crate_name, _)| *crate_name == builtin.crate_name)
                .unwrap_or_else(|| panic!("add {} to PLUGINS", builtin.crate_name));
            let module = Module::load(builtin.name, bytes, &Limits::default()).unwrap_or_else(|e| panic!("{e}"));
            (builtin.name.to_owned(), engine.compile(&module).unwrap_or_else(|e| panic!("{e}")))
        })
        .collect()
}

fn run(scenario: &recon_scenario::Scenario, instantiate: Instantiate) -> Trace {
    let mut sim = Sim::new(scenario, instantiate).expect("the scenario builds");
    sim.run();
    sim.into_trace()
}

#[wasm_bindgen_test]
fn the_tests_run_in_a_dedicated_worker_as_the_simulator_does() {
    let scope = js_sys::global().constructor().name();
    assert_eq!(String::from(scope), "DedicatedWorkerGlobalScope");
}

#[wasm_bindgen_test]
fn every_shipped_scenario_gives_the_same_trace_linked_in_and_as_browser_plugins() {
    assert_eq!(PLUGINS.len(), recon_catalog::BUILTINS.len(), "one plugin per built-in");
    let plugins = compiled_plugins();
    // The scenario library, embedded by recon-catalog: the browser cannot read `scenarios/`.
    for library in recon_catalog::SCENARIOS {
        let (file, text) = (library.name, library.yaml);
        let scenario = recon_scenario::parse(file, text).unwrap_or_else(|e| panic!("{e}"));
        let linked = run(&scenario, Box::new(|c| recon_catalog::instantiate(&c.controller)));
        let as_plugins = {
            let plugins = plugins.clone();
            run(&scenario, Box::new(move |c| plugins.get(&c.controller).map(CompiledPlugin::start)))
        };
        // The smallest story (#774, one operator) has 48 entries.
        assert!(linked.entries.len() > 20, "{file}: a real run");
        if linked.hash() != as_plugins.hash() {
            let first = linked
                .entries
                .iter()
                .zip(&as_plugins.entries)
                .find(|(a, b)| serde_json::to_string(a).unwrap() != serde_json::to_string(b).unwrap());
            panic!("{file}: traces differ; first difference: {first:#?}");
        }
    }
}

/// Issue 20: every case gives the very trace it gives natively, whose hash
/// is pinned.
#[wasm_bindgen_test]
fn every_hostile_plugin_in_a_simulation_crashes_only_its_component_with_the_native_trace() {
    for case in hostile::CASES {
        let hash = hostile_sim::assert_contained(case);
        hostile_sim::assert_pinned(case, hash.as_deref());
    }
}
