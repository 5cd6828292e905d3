//! Hostile plugins swapped into the #59848 scenario: each is contained as a
//! crash (or a refusal) of its own component, with a one-line reason, and
//! the rest of the simulation goes on.

use recon_abi::Instance;
use recon_host::{Engine, Limits, Module};
use recon_sim::{Event, Sim, Trace};

const MANIFEST: &str = r#"{"name":"hostile","abiVersion":1,"watches":[{"kind":"Pod"}]}"#;

/// A module with the ABI's exports whose `recon_handle` runs `handle` and
/// whose memory holds `output` at 0x400.
fn plugin(handle: &str, output: &str) -> Vec<u8> {
    let escape = |s: &str| s.replace('\\', "\\\\").replace('"', "\\\"");
    let packed = |ptr: u64, len: usize| ((ptr << 32) | len as u64) as i64;
    let wat = format!(
        r#"(module
          (memory (export "memory") 1)
          (data (i32.const 0x100) "{}")
          (data (i32.const 0x400) "{}")
          (func (export "recon_abi_version") (result i32) i32.const 1)
          (func (export "recon_alloc") (param i32) (result i32) i32.const 0x1000)
          (func (export "recon_init") (param i32 i32) (result i64) i64.const {})
          (func (export "recon_handle") (param i32 i32) (result i64) {handle} i64.const {}))"#,
        escape(MANIFEST),
        escape(output),
        packed(0x100, MANIFEST.len()),
        packed(0x400, output.len()),
    );
    wat::parse_str(&wat).unwrap()
}

/// Runs #59848 with `kubelet-node-2` replaced by the module.
fn run_with_kubelet_2(bytes: &[u8]) -> Trace {
    let scenario = recon_tests::load("pod-safety-59848");
    let module = Module::load("hostile.wasm", bytes, &Limits::default()).expect("valid module");
    let plugin = Engine::new().unwrap().compile(&module).unwrap();
    let instantiate: recon_sim::Instantiate = Box::new(move |c| {
        if c.name == "kubelet-node-2" {
            Some(Box::new(plugin.instantiate().unwrap()) as Box<dyn Instance>)
        } else {
            recon_catalog::instantiate(&c.controller)
        }
    });
    let mut sim = Sim::new(&scenario, instantiate).unwrap();
    sim.run();
    sim.into_trace()
}

/// Crashes other than the scenario's own scripted restart of kubelet-node-1.
fn crashes(trace: &Trace) -> Vec<(String, String)> {
    trace
        .entries
        .iter()
        .filter_map(|e| match &e.event {
            Event::ComponentCrashed { component, reason } if !reason.ends_with("(script)") => {
                Some((component.clone(), reason.clone()))
            }
            _ => None,
        })
        .collect()
}

/// The rest of the cluster kept working: the StatefulSet controller created
/// pods and the scheduler bound them, long after the first crash.
fn assert_rest_goes_on(trace: &Trace) {
    let by = |who: &str| {
        trace.entries.iter().filter(|e| matches!(&e.event, Event::StoreWrite { by, .. } if by == who)).count()
    };
    assert!(by("statefulset-controller") >= 2 && by("scheduler") >= 2);
    assert!(trace.entries.iter().any(|e| e.time_ms > 3_000
        && matches!(&e.event, Event::Reconcile { component, .. } if component == "kubelet-node-1")));
}

#[test]
fn an_infinite_loop_runs_out_of_fuel_and_crashes_only_its_component() {
    let trace = run_with_kubelet_2(&plugin("(loop $l (br $l))", "{}"));
    let crashes = crashes(&trace);
    assert!(crashes.len() >= 3, "it is restarted with back-off and crashes again: {crashes:?}");
    for (component, reason) in &crashes {
        assert_eq!(component, "kubelet-node-2");
        assert!(reason.starts_with("hostile.wasm: recon_handle ran out of fuel"), "{reason}");
        assert!(!reason.contains('\n'), "one line");
    }
    assert_rest_goes_on(&trace);
}

#[test]
fn a_trap_crashes_only_its_component() {
    let trace = run_with_kubelet_2(&plugin("unreachable", "{}"));
    let crashes = crashes(&trace);
    assert!(
        !crashes.is_empty() && crashes.iter().all(|(c, r)| c == "kubelet-node-2" && r.starts_with("hostile.wasm:"))
    );
    assert_rest_goes_on(&trace);
}

#[test]
fn output_that_does_not_decode_crashes_only_its_component() {
    let trace = run_with_kubelet_2(&plugin("", r#"{"actions":[{"type":"launchMissiles"}]}"#));
    let crashes = crashes(&trace);
    assert!(!crashes.is_empty());
    assert!(crashes[0].1.starts_with("hostile.wasm:") && crashes[0].1.contains("launchMissiles"), "{}", crashes[0].1);
    assert_rest_goes_on(&trace);
}

#[test]
fn undeclared_writes_are_refused_and_change_nothing() {
    let delete = r#"{"actions":[{"type":"delete","key":{"kind":"StatefulSet","namespace":"default","name":"web"}}]}"#;
    let trace = run_with_kubelet_2(&plugin("", delete));
    let refused: Vec<String> = trace
        .entries
        .iter()
        .filter_map(|e| match &e.event {
            Event::WriteFailed { by, status, .. } if by == "kubelet-node-2" => Some(status.message.clone()),
            _ => None,
        })
        .collect();
    assert!(!refused.is_empty());
    assert!(refused[0].contains("hostile may not delete StatefulSets"), "{}", refused[0]);
    assert!(crashes(&trace).is_empty(), "a refusal is not a crash");
    assert!(
        !trace
            .entries
            .iter()
            .any(|e| matches!(&e.event, Event::StoreWrite { key, removed: true, .. } if key.kind == "StatefulSet"))
    );
}
