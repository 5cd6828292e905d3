//! The catalogue of hostile plugins in a simulation: each replaces
//! `kubelet-node-2` in #59848, run by the engine of the target (wasmtime
//! natively, from recon-tests' `tests/hostile_plugins.rs`; the page's
//! `WebAssembly` in the browser, from this crate's `tests/browser.rs`).
//!
//! What "the rest of the run is unchanged" means, honestly, per stage:
//!
//! - **A crash** (`recon_init` or `recon_handle`): the run is compared with
//!   one where the component is a plain plugin, with the same manifest, that
//!   traps (`unreachable`) in the same call (for `requeue_spinner`, after as
//!   many calls with the same output). With every crash reason of that
//!   component replaced by a placeholder, the two traces must be identical,
//!   entry for entry: the same crashes at the same moments, the same
//!   back-off, and everything every other component did, byte for byte.
//!   The hostile plugin changes nothing but the words of its own crash.
//! - **It runs** (`log_out_of_bounds`, `nan_payload`): the trace must be
//!   identical, hash for hash, to a run with a plain plugin that returns
//!   the expected output outright.
//! - **It asks for what it may not do** (`forbidden_*`): every such action
//!   is refused with its message, nothing is written by it, and it does not
//!   crash. Not compared with another run: a refused write costs a round
//!   trip to the API server, which draws a latency from the run's one
//!   network RNG, so any other run's later timings differ by design.
//! - **Refused at load**: the plugin never reaches the simulator (the CLI
//!   and the playground refuse the file and run nothing else differently).
//!
//! And every engine gives the same run: the trace of each case that reaches
//! the simulator is pinned by its hash in `trace-hashes.txt` (written
//! natively, by recon-tests' `hostile_plugins` with `RECON_BLESS=1`), and the
//! browser must give the same hash, crash reasons and all.

use recon_host::{CompiledPlugin, Engine, Limits, Module};
use recon_sim::{Event, Sim, Trace};

use crate::hostile::{COMPONENT, Case, MANIFEST, Stage};

/// Runs #59848 with [`COMPONENT`] running `plugin`.
pub fn run_with(plugin: CompiledPlugin) -> Trace {
    let library = recon_catalog::scenario("pod-safety-59848").expect("the default scenario");
    let scenario = recon_scenario::parse(library.name, library.yaml).unwrap_or_else(|e| panic!("{e}"));
    let instantiate: recon_sim::Instantiate =
        Box::new(
            move |c| {
                if c.name == COMPONENT { Some(plugin.start()) } else { recon_catalog::instantiate(&c.controller) }
            },
        );
    let mut sim = Sim::new(&scenario, instantiate).expect("the scenario builds");
    sim.run();
    sim.into_trace()
}

/// Natively, in a pool of one slot: a crashed instance's successor starts
/// in the slot it leaves, or without the pool while the slot is still
/// taken, and either way the run must be the pinned one.
fn compile(name: &str, bytes: &[u8], limits: &Limits) -> CompiledPlugin {
    let module = Module::load(name, bytes, limits).unwrap_or_else(|e| panic!("{e}"));
    Engine::pooled(1).unwrap().compile(&module).unwrap_or_else(|e| panic!("{e}"))
}

/// A plain plugin with [`MANIFEST`] whose `recon_init` (`Stage::Init`) or
/// `recon_handle` (`Stage::Handle`) traps, whose `recon_handle` returns
/// `output` (`Stage::Runs`), or returns it `calls` times and then traps
/// (`Stage::HandleAfter`).
fn reference(stage: Stage, output: &str) -> Vec<u8> {
    let packed = |ptr: u64, len: usize| ((ptr << 32) | len as u64) as i64;
    let init = match stage {
        Stage::Init => "unreachable".to_owned(),
        _ => format!("i64.const {}", packed(0x100, MANIFEST.len())),
    };
    let returned = |output: &str| format!("i64.const {}", packed(0x10000, output.len()));
    let (handle, output) = match stage {
        Stage::Handle => ("unreachable".to_owned(), output),
        Stage::HandleAfter { calls, output } => (
            // A count of calls in a global: a fresh instance starts at 0.
            format!(
                "(if (i32.ge_u (global.get $calls) (i32.const {calls})) (then unreachable))
                 (global.set $calls (i32.add (global.get $calls) (i32.const 1)))
                 {}",
                returned(output)
            ),
            output,
        ),
        _ => (returned(output), output),
    };
    let escape = |s: &str| s.replace('\\', "\\\\").replace('"', "\\\"");
    let wat = format!(
        r#"(module
             (memory (export "memory") 2)
             (data (i32.const 0x100) "{}")
             (data (i32.const 0x10000) "{}")
             (global $calls (mut i32) (i32.const 0))
             (func (export "recon_abi_version") (result i32) i32.const 1)
             (func (export "recon_alloc") (param i32) (result i32) i32.const 0x1000)
             (func (export "recon_init") (param i32 i32) (result i64) {init})
             (func (export "recon_handle") (param i32 i32) (result i64) {handle}))"#,
        escape(MANIFEST),
        escape(output),
    );
    wat::parse_str(wat).unwrap()
}

/// The crash reasons of [`COMPONENT`], but the scenario's scripted ones.
fn crashes(trace: &Trace) -> Vec<&str> {
    trace
        .entries
        .iter()
        .filter_map(|e| match &e.event {
            Event::ComponentCrashed { component, reason }
                if component == COMPONENT && !reason.ends_with("(script)") =>
            {
                Some(reason.as_str())
            }
            _ => None,
        })
        .collect()
}

/// The trace as JSON lines, each crash reason of [`COMPONENT`] reduced to
/// what the simulator adds (the back-off).
fn without_crash_reasons(trace: &Trace) -> Vec<String> {
    let mut trace = trace.clone();
    for entry in &mut trace.entries {
        if let Event::ComponentCrashed { component, reason } = &mut entry.event
            && component == COMPONENT
            && !reason.ends_with("(script)")
        {
            let backoff = reason.rfind("; restarting in").map_or("", |at| &reason[at..]);
            *reason = format!("(crash){backoff}");
        }
    }
    trace.entries.iter().map(|e| serde_json::to_string(e).unwrap()).collect()
}

/// The trace without [`COMPONENT`]'s log entries (the others renumbered,
/// their causes too), and the lines they held.
fn without_logs(trace: &Trace) -> (Trace, Vec<String>) {
    let mut kept = Trace {
        scenario: trace.scenario.clone(),
        seed: trace.seed,
        lanes: trace.lanes.clone(),
        entries: Default::default(),
    };
    let (mut ids, mut lines) = (std::collections::BTreeMap::new(), Vec::new());
    for e in &trace.entries {
        match &e.event {
            Event::Logged { component, lines: logged } if component == COMPONENT => {
                lines.extend(logged.iter().cloned())
            }
            _ => {
                let causes = e.causes.iter().filter_map(|c| ids.get(c).copied()).collect();
                ids.insert(e.id, kept.push(e.time_ms, e.lane, e.event.clone(), causes));
            }
        }
    }
    (kept, lines)
}

/// The rest of the cluster kept working: the StatefulSet controller created
/// pods and the scheduler bound them, and kubelet-node-1 reconciled after
/// its restart.
fn assert_rest_goes_on(case: &str, trace: &Trace) {
    let writes = |who: &str| {
        trace.entries.iter().filter(|e| matches!(&e.event, Event::StoreWrite { by, .. } if by == who)).count()
    };
    assert!(writes("statefulset-controller") >= 2 && writes("scheduler") >= 2, "{case}: the controllers stopped");
    assert!(
        trace
            .entries
            .iter()
            .any(|e| e.time_ms > 5_000
                && matches!(&e.event, Event::Reconcile(call) if call.component == "kubelet-node-1")),
        "{case}: kubelet-node-1 stopped"
    );
}

/// The file of pinned trace hashes: `case hash` lines.
pub const TRACE_HASHES: &str = include_str!("trace-hashes.txt");

/// The pinned hash of `case`'s trace, if it has one.
pub fn pinned_hash(case: &str) -> Option<&'static str> {
    TRACE_HASHES
        .lines()
        .filter(|line| !line.starts_with('#'))
        .find_map(|line| line.split_once(' ').filter(|(name, _)| *name == case).map(|(_, hash)| hash.trim()))
}

/// Checks that `case` gave the trace pinned for it (`hash`, `None` when it
/// never reached the simulator): the same in every engine.
pub fn assert_pinned(case: &Case, hash: Option<&str>) {
    assert_eq!(
        hash,
        pinned_hash(case.name),
        "{}: the trace differs from the one pinned natively; if the change is meant, re-pin with RECON_BLESS=1 \
         (recon-tests' hostile_plugins) and say why in the commit",
        case.name
    );
}

/// Runs `case` in #59848 and checks that it is contained (see the module
/// docs for what is compared with what). Returns its trace's hash, `None`
/// if it was refused at load.
pub fn assert_contained(case: &Case) -> Option<String> {
    let name = case.name;
    let bytes = (case.module)();
    let module = match Module::load(&case.file(), &bytes, &case.limits) {
        Err(refused) => {
            assert_eq!(case.stage, Stage::Load, "{name}: {refused}");
            assert!(case.matches(&refused.to_string()), "{name}: {refused}");
            return None;
        }
        Ok(module) => module,
    };
    let plugin = Engine::new().unwrap().compile(&module).unwrap_or_else(|e| panic!("{e}"));
    let trace = run_with(plugin);
    assert_rest_goes_on(name, &trace);
    let crashes = crashes(&trace);
    match case.stage {
        Stage::Load => panic!("{name} loaded"),
        Stage::Init | Stage::Handle | Stage::HandleAfter { .. } => {
            assert!(crashes.len() >= 2, "{name}: restarted with back-off and crashed again: {crashes:?}");
            for reason in &crashes {
                let (said, backoff) = reason.split_once("; restarting in").expect("the simulator adds the back-off");
                assert!(case.matches(said), "{name}:\n  expected {}\n  got      {said}", case.message);
                assert!(!reason.contains('\n') && backoff.ends_with("ms (back-off)"), "{reason}");
            }
            let crasher = compile("reference.wasm", &reference(case.stage, ""), &Limits::default());
            let expected = without_crash_reasons(&run_with(crasher));
            let got = without_crash_reasons(&trace);
            if let Some((e, g)) = expected.iter().zip(&got).find(|(e, g)| e != g) {
                panic!("{name}: the run differs from a plain crash in the same call:\n  expected {e}\n  got      {g}");
            }
            assert_eq!(expected.len(), got.len(), "{name}: as many entries as with a plain crash");
        }
        Stage::Runs => {
            assert!(crashes.is_empty(), "{name}: {crashes:?}");
            let refusals: Vec<&str> = trace
                .entries
                .iter()
                .filter_map(|e| match &e.event {
                    Event::WriteFailed { by, status, .. } if by == COMPONENT => Some(status.message.as_str()),
                    Event::ActionRefused { component, status, .. } if component == COMPONENT => {
                        Some(status.message.as_str())
                    }
                    _ => None,
                })
                .collect();
            let wrote =
                trace.entries.iter().any(|e| matches!(&e.event, Event::StoreWrite { by, .. } if by == COMPONENT));
            assert!(!wrote, "{name}: wrote to the store");
            if case.refused.is_empty() {
                assert!(refusals.is_empty(), "{name}: {refusals:?}");
                let plain = compile("reference.wasm", &reference(Stage::Runs, case.message), &Limits::default());
                // What it logged is in the trace; the rest is a plain plugin's run.
                let (trace, logged) = without_logs(&trace);
                if name == "log_out_of_bounds" {
                    assert!(logged.iter().any(|l| l.starts_with("(recon.log was given ")), "{name}: {logged:?}");
                }
                assert_eq!(trace.hash(), run_with(plain).hash(), "{name}: the run differs from a plain plugin's");
            } else {
                for expected in case.refused {
                    assert!(refusals.contains(expected), "{name}: {expected:?} not in {refusals:?}");
                }
                assert!(refusals.iter().all(|r| case.refused.contains(r)), "{name}: {refusals:?}");
            }
        }
    }
    Some(trace.hash())
}
