//! A plugin's `recon.log` lines in the trace, and a panicking SDK plugin's
//! crash reason (issue 20), under wasmtime, with the test plugin
//! `tests/plugins/logging` (built by `cargo xtask plugins` into
//! `RECON_PLUGIN_DIR`).

use recon_host::CompiledPlugin;
use recon_sim::{Event, Sim, Trace};

/// The test plugin, compiled.
fn logging_plugin() -> CompiledPlugin {
    recon_tests::wasm_plugin("recon_test_plugin_logging", "logging.wasm")
}

/// One API server and the component `logger` running the test plugin
/// (with `params`), and a pod created at 1s.
fn run(params: &str) -> Trace {
    let yaml = format!(
        "name: logs\nduration: 5s\napiServers: [ {{ name: a }} ]\ncomponents:\n  - {{ name: logger, controller: logging, apiServer: a, params: {{ {params} }} }}\nscript:\n  - {{ at: 1s, create: {{ apiVersion: v1, kind: Pod, metadata: {{ name: p }} }} }}\n"
    );
    let scenario = recon_scenario::parse("logs.yaml", &yaml).unwrap_or_else(|e| panic!("{e}"));
    let plugin = logging_plugin();
    let mut sim = Sim::new(&scenario, Box::new(move |_| Some(plugin.start()))).expect("the scenario builds");
    sim.run();
    sim.into_trace()
}

/// Every line `logger` logged, with the time it was recorded.
fn logged(trace: &Trace) -> Vec<(u64, String)> {
    let mut out = Vec::new();
    for e in &trace.entries {
        if let Event::Logged { component, lines } = &e.event {
            assert_eq!(component, "logger");
            assert_eq!(trace.lane_name(e), "logger", "on the component's lane");
            out.extend(lines.iter().map(|l| (e.time_ms, l.clone())));
        }
    }
    out
}

/// Why `logger` first crashed.
fn crash_reason(trace: &Trace) -> String {
    trace
        .entries
        .iter()
        .find_map(|e| match &e.event {
            Event::ComponentCrashed { reason, .. } => Some(reason.clone()),
            _ => None,
        })
        .expect("the plugin crashes")
}

#[test]
fn a_wasm_plugins_log_lines_are_in_the_trace_in_the_order_it_wrote_them() {
    let trace = run("");
    let lines = logged(&trace);
    assert_eq!(lines[0].1, "init logger");
    assert!(lines[1].1.starts_with("handle at "), "{lines:?}");
    assert!(lines.iter().any(|(t, l)| *t >= 1_000 && l.ends_with(": 1 events")), "the pod's watch event: {lines:?}");
    assert_eq!(trace.hash(), run("").hash(), "the same lines every run");
}

#[test]
fn a_panicking_sdk_plugin_crashes_with_its_panic_message_and_location() {
    let trace = run("panicAtMs: 1000");
    let reason = crash_reason(&trace);
    let prefix = "logging.wasm: recon_handle panicked at tests/plugins/logging/src/lib.rs:";
    assert!(reason.starts_with(prefix), "{reason}");
    assert!(reason.contains(": asked to panic at 1"), "{reason}");
    assert!(reason.ends_with("; restarting in 1000ms (back-off)"), "{reason}");
    // The hook's line is in the log too, just before the crash.
    let lines = logged(&trace);
    assert!(lines.iter().any(|(_, l)| l.starts_with("panicked at tests/plugins/logging/src/lib.rs:")), "{lines:?}");
}

#[test]
fn a_plugin_that_reads_the_real_clock_crashes_saying_it_has_none_and_what_to_use() {
    let reason = crash_reason(&run("readClockAtMs: 1000"));
    assert!(reason.contains("time not implemented on this platform"), "{reason}");
    assert!(reason.contains("a plugin has no clock: use the virtual time of its input"), "{reason}");
    assert!(!reason.contains('\n'), "one line: {reason}");
}
