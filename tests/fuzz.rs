//! The bodies of the fuzz targets in `fuzz/`: ordinary functions, so that
//! the committed corpus and every crash ever found replay in a plain
//! `cargo test` (`tests/tests/fuzz_replay.rs`), with no fuzzer and on the
//! stable toolchain. Each takes arbitrary bytes and panics only on a bug.
//!
//! - [`scenario_file`]: the scenario parser. Whatever the text, parsing
//!   returns a scenario or located errors; a parsed scenario writes back to
//!   YAML that parses to the same scenario, and builds and runs.
//! - [`plugin_output`]: what the host decodes from a plugin (its manifest
//!   and its outputs, as JSON bytes) and then applies in the simulator.
//! - [`plugin_module`]: module validation and instrumentation, and for a
//!   module that loads, compiling and calling it under tight limits.

use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Once, OnceLock};

use recon_abi::{ABI_VERSION, ComponentConfig, Crash, Input, Instance, Manifest, Output};
use recon_host::{Engine, Limits, Module, PluginError};
use recon_sim::Sim;

/// A fuzz target's body: arbitrary bytes in, a panic only on a bug.
pub type Target = fn(&[u8]);

/// Every target by name (the name of its file in `fuzz/fuzz_targets/`).
pub const TARGETS: &[(&str, Target)] =
    &[("scenario_file", scenario_file), ("plugin_output", plugin_output), ("plugin_module", plugin_module)];

/// The most simulator steps a fuzzed run may take: enough for the small
/// scenarios here to get going, few enough to keep each input quick.
const MAX_STEPS: usize = 20_000;

/// The most virtual time a fuzzed scenario runs for.
const MAX_VIRTUAL_MS: u64 = 2_000;

/// Parses `data` as a scenario file and checks what the parser promises.
pub fn scenario_file(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let scenario = match recon_scenario::parse_with_source("fuzz.yaml", text) {
        Ok((scenario, _)) => scenario,
        Err(error) => {
            // Every problem is located inside the file and says something.
            // Lines as YAML counts them: a lone CR ends a line too.
            let lines = text.replace("\r\n", "\n").chars().filter(|c| matches!(c, '\n' | '\r')).count() + 1;
            assert!(!error.diagnostics.is_empty(), "an error without diagnostics");
            for d in &error.diagnostics {
                assert!(d.line >= 1 && d.column >= 1, "position {}:{} is not 1-based: {d}", d.line, d.column);
                assert!(d.line <= lines, "line {} is past the end of a {lines}-line file: {d}", d.line);
                assert!(!d.message.trim().is_empty(), "an empty message at {}:{}", d.line, d.column);
            }
            return;
        }
    };
    // `to_yaml` promises: parse(to_yaml(s)) == s for every parsed s.
    let written = recon_scenario::to_yaml(&scenario);
    match recon_scenario::parse("written.yaml", &written) {
        Ok(again) => assert_eq!(again, scenario, "the scenario changed when written back:\n{written}"),
        Err(e) => panic!("a parsed scenario was written back as a file that does not parse: {e}\n{written}"),
    }
    // A valid scenario builds (unless it names a controller that does not
    // exist) and runs without panicking.
    if let Ok(mut sim) = Sim::new(&scenario, Box::new(|c| linked(&c.controller))) {
        run_bounded(&mut sim);
        let _ = recon_trace::explain_all(sim.trace());
    }
}

thread_local! {
    /// Whether this thread is inside a call into a natively linked controller.
    static IN_CONTROLLER: Cell<bool> = const { Cell::new(false) };
    /// Panics on this thread outside controllers, caught or not.
    static PANICS_OUTSIDE_CONTROLLERS: Cell<usize> = const { Cell::new(0) };
}

/// Wraps the panic hook in place (libFuzzer's, which aborts, or the
/// default) so that it stays quiet inside a natively linked controller's
/// call and counts every other panic. Runs once; the fuzz targets call it.
pub fn install_panic_hook() {
    static INSTALLED: Once = Once::new();
    INSTALLED.call_once(|| {
        let outside = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !IN_CONTROLLER.get() {
                PANICS_OUTSIDE_CONTROLLERS.set(PANICS_OUTSIDE_CONTROLLERS.get() + 1);
                outside(info);
            }
        }));
    });
}

/// How many panics this thread has had outside natively linked
/// controllers since [`install_panic_hook`]: a replay without the fuzzer
/// checks this did not grow, since the fuzzer fails on a panic even when
/// something catches it.
pub fn panics_outside_controllers() -> usize {
    PANICS_OUTSIDE_CONTROLLERS.get()
}

/// The built-in controller `name`, linked natively as the catalog links
/// it, behind a [`Linked`] guard.
fn linked(name: &str) -> Option<Box<dyn Instance>> {
    Some(Box::new(Linked(recon_catalog::instantiate(name)?)))
}

/// A natively linked controller as the fuzz targets run it. A controller
/// built on `recon-kube` turns its own panic into its crash, as a trap
/// ends a Wasm plugin (an object that does not decode as the watch's type
/// is one: an API server that validated it would have refused it, and a
/// fuzzed scenario does not). The fuzzer's panic hook aborts on every panic,
/// caught or not, so inside a call the hook stays quiet
/// ([`install_panic_hook`]); a panic that escapes the instance is still a
/// bug, re-raised outside the call.
struct Linked(Box<dyn Instance>);

impl Linked {
    fn call<T>(&mut self, call: impl FnOnce(&mut dyn Instance) -> T) -> T {
        install_panic_hook();
        IN_CONTROLLER.set(true);
        let result = catch_unwind(AssertUnwindSafe(|| call(&mut *self.0)));
        IN_CONTROLLER.set(false);
        result.unwrap_or_else(|payload| {
            let message = recon_abi::panic_message(&*payload).unwrap_or("a non-string payload");
            panic!("a natively linked controller's panic escaped its instance: {message}")
        })
    }
}

impl Instance for Linked {
    fn init(&mut self, config: &ComponentConfig) -> Result<Manifest, Crash> {
        self.call(|instance| instance.init(config))
    }

    fn handle(&mut self, input: &Input) -> Result<Output, Crash> {
        self.call(|instance| instance.handle(input))
    }

    fn take_logs(&mut self) -> Vec<String> {
        self.0.take_logs()
    }
}

/// Runs a simulation for at most [`MAX_VIRTUAL_MS`] of virtual time and
/// [`MAX_STEPS`] steps.
fn run_bounded(sim: &mut Sim) {
    for _ in 0..MAX_STEPS {
        if sim.now_ms() > MAX_VIRTUAL_MS || !sim.step() {
            break;
        }
    }
}

/// The scenario `plugin_output` runs: the fuzzed component on node-1, a
/// working scheduler, ReplicaSet controller and kubelet on node-2, and
/// objects of each kind for the fuzzed actions to hit.
const OUTPUT_SCENARIO: &str = r#"
name: fuzz-plugin-output
duration: 5s
apiServers:
  - name: a
  - name: b
    watchCache: { lag: 200ms }
    partitions: [ { from: 1s, until: 2s } ]
nodes: [ { name: node-1 }, { name: node-2 } ]
components:
  - { name: fuzzed, controller: fuzzed, node: node-1, apiServer: b, failover: [a] }
  - { name: scheduler, controller: scheduler, apiServer: a }
  - { name: replicaset-controller, controller: replicaset, apiServer: a }
  - { name: kubelet-node-2, controller: kubelet, node: node-2, apiServer: a }
objects:
  - { apiVersion: v1, kind: Pod, metadata: { name: p }, spec: { nodeName: node-1 } }
  - apiVersion: apps/v1
    kind: ReplicaSet
    metadata: { name: rs }
    spec:
      replicas: 2
      selector: { matchLabels: { app: rs } }
      template: { metadata: { labels: { app: rs } }, spec: { containers: [ { name: c, image: busybox } ] } }
  - apiVersion: apps/v1
    kind: Deployment
    metadata: { name: d }
    spec:
      replicas: 1
      selector: { matchLabels: { app: d } }
      template: { metadata: { labels: { app: d } }, spec: { containers: [ { name: c, image: busybox } ] } }
  - apiVersion: apps/v1
    kind: StatefulSet
    metadata: { name: s }
    spec:
      replicas: 1
      serviceName: s
      selector: { matchLabels: { app: s } }
      template: { metadata: { labels: { app: s } }, spec: { containers: [ { name: c, image: busybox } ] } }
script:
  - { at: 500ms, create: { apiVersion: v1, kind: Pod, metadata: { name: q } } }
  - { at: 1500ms, restart: { component: fuzzed } }
  - { at: 3s, scale: { kind: ReplicaSet, name: rs, replicas: 1 } }
"#;

/// Decodes bytes as the host decodes a plugin's result: UTF-8, then JSON.
fn decode<T>(bytes: &[u8], from_str: impl FnOnce(&str) -> serde_json::Result<T>) -> Result<T, Crash> {
    let text = std::str::from_utf8(bytes).map_err(|e| Crash::new(format!("fuzzed: not UTF-8 ({e})")))?;
    from_str(text).map_err(|e| Crash::new(format!("fuzzed: does not decode: {e}")))
}

/// A plugin that returns the fuzzed bytes: the first NUL-separated chunk as
/// its manifest, each next chunk as the output of one call.
struct Replayed {
    chunks: Vec<Vec<u8>>,
    next: usize,
}

impl Instance for Replayed {
    fn init(&mut self, _: &ComponentConfig) -> Result<Manifest, Crash> {
        let manifest = decode(&self.chunks[0], |s| serde_json::from_str::<Manifest>(s))?;
        if manifest.abi_version != ABI_VERSION {
            return Err(Crash::new("fuzzed: a manifest for another ABI version"));
        }
        Ok(manifest)
    }

    fn handle(&mut self, _: &Input) -> Result<Output, Crash> {
        self.next += 1;
        match self.chunks.get(self.next) {
            Some(chunk) => decode(chunk, |s| serde_json::from_str::<Output>(s)),
            None => Ok(Output::default()),
        }
    }
}

/// `data` is a manifest and outputs, as JSON, separated by NUL bytes. The
/// host decodes them as it decodes a plugin's, and the simulator applies
/// whatever decodes (each restart of the component replays them from the
/// start). Whatever the bytes, only that component may suffer.
pub fn plugin_output(data: &[u8]) {
    let chunks: Vec<Vec<u8>> = data.split(|b| *b == 0).map(<[u8]>::to_vec).collect();
    let scenario = recon_scenario::parse("plugin-output.yaml", OUTPUT_SCENARIO).expect("the fixed scenario parses");
    let instantiate: recon_sim::Instantiate = Box::new(move |c| match c.controller.as_str() {
        "fuzzed" => Some(Box::new(Replayed { chunks: chunks.clone(), next: 0 }) as Box<dyn Instance>),
        name => linked(name),
    });
    let mut sim = Sim::new(&scenario, instantiate).expect("the fixed scenario builds");
    run_bounded(&mut sim);
    let trace = sim.trace();
    for (i, entry) in trace.entries.iter().enumerate() {
        assert_eq!(entry.id, i as u64, "trace ids are positions");
        assert!(entry.causes.iter().all(|c| *c < entry.id), "entry {i} is caused by a later entry");
    }
    let _ = recon_trace::explain_all(trace);
    let _ = trace.to_json();
}

/// A seed for [`plugin_output`]: what the built-in `controller` really
/// returns when it runs as the fuzzed component (its manifest, then its
/// first outputs), in the target's format.
pub fn recorded_output_seed(controller: &str) -> Vec<u8> {
    use std::cell::RefCell;
    use std::rc::Rc;

    /// Passes calls through to a built-in and keeps what it returned, as JSON.
    struct Recording {
        inner: Box<dyn Instance>,
        chunks: Rc<RefCell<Vec<Vec<u8>>>>,
    }
    impl Instance for Recording {
        fn init(&mut self, config: &ComponentConfig) -> Result<Manifest, Crash> {
            let manifest = self.inner.init(config)?;
            let mut chunks = self.chunks.borrow_mut();
            if chunks.is_empty() {
                chunks.push(serde_json::to_vec(&manifest).expect("a manifest encodes"));
            }
            Ok(manifest)
        }
        fn handle(&mut self, input: &Input) -> Result<Output, Crash> {
            let output = self.inner.handle(input)?;
            let mut chunks = self.chunks.borrow_mut();
            if chunks.len() < 16 && !output.actions.is_empty() {
                chunks.push(serde_json::to_vec(&output).expect("an output encodes"));
            }
            Ok(output)
        }
    }

    let chunks = Rc::new(RefCell::new(Vec::new()));
    let recorded = chunks.clone();
    let controller = controller.to_owned();
    let name = controller.clone();
    let scenario = recon_scenario::parse("plugin-output.yaml", OUTPUT_SCENARIO).expect("the fixed scenario parses");
    let instantiate: recon_sim::Instantiate = Box::new(move |c| match c.controller.as_str() {
        "fuzzed" => Some(Box::new(Recording { inner: recon_catalog::instantiate(&name)?, chunks: recorded.clone() })
            as Box<dyn Instance>),
        name => recon_catalog::instantiate(name),
    });
    let mut sim = Sim::new(&scenario, instantiate).expect("the fixed scenario builds");
    run_bounded(&mut sim);
    // A controller with nothing to do in the fixed scenario (an operator of
    // a custom resource it does not declare) is recorded in the first
    // library scenario that runs it.
    if chunks.borrow().len() < 2 {
        let library = recon_catalog::SCENARIOS.iter().find_map(|s| {
            let parsed = recon_scenario::parse(s.name, s.yaml).ok()?;
            parsed.components.iter().any(|c| c.controller == controller).then_some(parsed)
        });
        if let Some(mut scenario) = library {
            for c in &mut scenario.components {
                if c.controller == controller {
                    c.controller = "fuzzed".into();
                }
            }
            let recorded = chunks.clone();
            let inner = controller.clone();
            let instantiate: recon_sim::Instantiate = Box::new(move |c| match c.controller.as_str() {
                "fuzzed" => {
                    Some(Box::new(Recording { inner: recon_catalog::instantiate(&inner)?, chunks: recorded.clone() })
                        as Box<dyn Instance>)
                }
                name => recon_catalog::instantiate(name),
            });
            let mut sim = Sim::new(&scenario, instantiate).expect("a library scenario builds");
            // The whole story: its script acts late (a deletion at 10 s).
            while chunks.borrow().len() < 2 && sim.step() {}
        }
    }
    chunks.borrow().join(&0u8)
}

/// The limits `plugin_module` loads modules with: small, so that a module
/// that loops or grows its memory stops quickly.
fn module_limits() -> Limits {
    Limits { memory_bytes: 4 << 20, fuel_per_call: 200_000, max_call_depth: 200, ..Limits::default() }
}

/// Validates and instruments `data` as a plugin; if it loads, compiles it
/// and calls it once through every export.
pub fn plugin_module(data: &[u8]) {
    let module = match Module::load("fuzz.wasm", data, &module_limits()) {
        Ok(module) => module,
        Err(PluginError::Host { reason, .. }) => panic!("a host bug on a module: {reason}"),
        Err(error) => {
            let message = error.to_string();
            assert!(message.starts_with("fuzz.wasm"), "the message does not start with the name: {message}");
            assert!(!message.contains('\n'), "the message is not one line: {message}");
            return;
        }
    };
    // The instrumented module exports the meters, which a plugin may not:
    // loading it again must be refused, never instrumented twice.
    match Module::load("again.wasm", module.bytes(), &module_limits()) {
        Err(PluginError::ReservedExport { .. }) => {}
        other => panic!("an instrumented module loaded again gave {other:?}"),
    }
    // With wasmtime's own fuel on as well: the instrumented counter must
    // always run out first (real runs have no backstop on the strength of
    // this check).
    static ENGINE: OnceLock<Engine> = OnceLock::new();
    let engine = ENGINE.get_or_init(|| Engine::with_fuel_backstop().expect("wasmtime starts"));
    let plugin = match engine.compile(&module) {
        Ok(plugin) => plugin,
        Err(PluginError::Host { reason, .. }) => panic!("a validated module did not compile: {reason}"),
        Err(_) => return,
    };
    let mut instance = plugin.start();
    let config = ComponentConfig { name: "fuzzed".into(), node: Some("node-1".into()), ..Default::default() };
    let not_a_host_bug = |crash: Crash| assert!(!crash.reason.contains("a host bug"), "{}", crash.reason);
    match instance.init(&config) {
        Ok(_) => instance.handle(&Input::default()).err().into_iter().for_each(not_a_host_bug),
        Err(crash) => not_a_host_bug(crash),
    }
}
