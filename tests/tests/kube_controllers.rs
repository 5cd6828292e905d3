//! Controllers written against kube-rs's API (issue 15), run by Recon
//! through `recon-kube`: natively and under wasmtime, with the same trace.

use recon_abi::ObjectKey;
use recon_sim::Sim;
use recon_tests::{load, wasm_plugins};
use recon_trace::{Event, explain};

/// Runs the scenario `name` natively or with every controller under
/// wasmtime; returns the trace hash, the violations and the ConfigMap
/// `default/gen` at the end.
fn run(name: &str, wasm: bool) -> (String, usize, Option<recon_abi::Object>, Vec<String>) {
    let scenario = load(name);
    let mut sim = if wasm {
        let plugins = wasm_plugins();
        Sim::new(
            &scenario,
            Box::new(move |c| {
                let plugin = plugins.get(&c.controller)?;
                Some(Box::new(plugin.instantiate().expect("built-in plugins instantiate"))
                    as Box<dyn recon_abi::Instance>)
            }),
        )
    } else {
        Sim::new(&scenario, Box::new(|c| recon_catalog::instantiate(&c.controller)))
    }
    .expect("scenario builds");
    sim.run();
    let key = ObjectKey::new("ConfigMap", "default", "gen");
    let map = sim.store().get(&key, None).expect("the store answers").map(|kv| kv.value);
    let trace = sim.into_trace();
    let crashes = explain::crashes(&trace);
    assert!(crashes.is_empty(), "{:?}", crashes.iter().map(|c| &c.reason).collect::<Vec<_>>());
    let writes = trace
        .entries
        .iter()
        .filter_map(|e| match &e.event {
            Event::StoreWrite { verb, key, by, .. } if by == "configmap-generator" => Some(format!("{verb} {key}")),
            _ => None,
        })
        .collect();
    (trace.hash(), trace.violations().count(), map, writes)
}

#[test]
fn the_kube_rs_configmap_generator_gives_the_same_trace_natively_and_under_wasmtime_and_owns_its_config_map() {
    let (native, violations, map, writes) = run("configmap-generator", false);
    let (wasm, _, wasm_map, _) = run("configmap-generator", true);
    assert_eq!(native, wasm, "native and Wasm traces differ");
    assert_eq!(map, wasm_map);
    assert_eq!(violations, 0);

    let map = map.expect("the ConfigMap exists at the end");
    assert_eq!(map.other["data"], serde_json::json!({ "content": "world" }), "the generator's last content");
    let owner = map.controller_owner().expect("a controller owner reference");
    assert_eq!((owner.kind.as_str(), owner.name.as_str()), ("ConfigMapGenerator", "gen"));
    assert_eq!(owner.api_version, "nullable.se/v1");
    // Applied at creation, after the content changed, and again after the
    // ConfigMap was deleted by hand (the controller owns ConfigMaps).
    let applies = writes.iter().filter(|w| w.ends_with("ConfigMap default/gen")).count();
    assert!(applies >= 3, "{writes:?}");
}
