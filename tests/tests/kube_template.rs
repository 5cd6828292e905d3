//! The kube-rs template (`plugins/kube-template`) runs its own scenario as
//! its README says: natively, and built for wasm32 under wasmtime, with
//! the same trace, annotating what it should and nothing else.

use recon_abi::ObjectKey;
use recon_sim::{Instantiate, Sim};
use recon_trace::{Event, explain};

const SCENARIO: &str = include_str!("../../plugins/kube-template/scenario.yaml");

/// Runs the template's scenario; returns its trace hash, the annotation of
/// each ConfigMap at the end and the template's store writes.
fn run(instantiate: Instantiate) -> (String, Vec<Option<String>>, Vec<String>) {
    let scenario = recon_scenario::parse("scenario.yaml", SCENARIO).unwrap_or_else(|e| panic!("{e}"));
    let mut sim = Sim::new(&scenario, instantiate).expect("the scenario builds");
    sim.run();
    let annotation = |name: &str| {
        let key = ObjectKey::new("ConfigMap", "default", name);
        let map = sim.store().get(&key, None).expect("the store answers").expect("the map exists").value;
        map.metadata.annotations.get(recon_plugin_kube_template::ANNOTATION).cloned()
    };
    let annotations = vec![annotation("settings"), annotation("plain")];
    let trace = sim.into_trace();
    assert!(explain::crashes(&trace).is_empty(), "no crash");
    assert_eq!(trace.violations().count(), 0);
    let writes = trace
        .entries
        .iter()
        .filter_map(|e| match &e.event {
            Event::StoreWrite { verb, key, by, .. } if by == "annotator" => Some(format!("{verb} {key}")),
            _ => None,
        })
        .collect();
    (trace.hash(), annotations, writes)
}

#[test]
fn the_template_annotates_its_labelled_config_map_with_the_same_trace_natively_and_as_wasm() {
    let native = run(Box::new(|c| {
        (c.controller == "kube-template").then(|| {
            Box::new(recon_kube::Native::new(recon_plugin_kube_template::controller())) as Box<dyn recon_abi::Instance>
        })
    }));
    let plugin = recon_tests::wasm_plugin("recon_plugin_kube_template", "kube-template.wasm");
    let wasm = run(recon_tests::wasm_instantiate([("kube-template".to_owned(), plugin)].into()));
    assert_eq!(native.0, wasm.0, "native and Wasm traces differ");
    let (_, annotations, writes) = native;
    assert_eq!(annotations, [Some("mode,size".to_owned()), None], "the last keys of settings; plain untouched");
    assert!(writes.iter().all(|w| w == "patch ConfigMap default/settings"), "{writes:?}");
    assert!(writes.len() >= 2, "annotated at creation and after the apply: {writes:?}");
}
