//! Helpers shared by the end-to-end tests: load a shipped scenario, run it
//! with the built-in controllers, look at the trace. [`fuzz`] holds the
//! bodies of the fuzz targets in `fuzz/`, [`soak`] the generator of the
//! large scenario of the soak run, [`scale`] the cluster of the scale
//! benchmark.

pub mod fuzz;
pub mod scale;
pub mod soak;

use std::collections::BTreeMap;
use std::path::PathBuf;

use recon_host::{CompiledPlugin, Engine, Limits, Module};
use recon_scenario::Scenario;
use recon_sim::{Sim, Trace};

/// The repository's `scenarios/` directory.
pub fn scenarios_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scenarios")
}

/// Every shipped scenario file, sorted by name.
pub fn all_scenarios() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(scenarios_dir())
        .expect("scenarios/ exists")
        .map(|e| e.expect("readable entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    files.sort();
    files
}

/// Loads a shipped scenario by file stem, e.g. `pod-safety-59848`.
pub fn load(name: &str) -> Scenario {
    let path = scenarios_dir().join(format!("{name}.yaml"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    recon_scenario::parse(&path.display().to_string(), &text).unwrap_or_else(|e| panic!("{e}"))
}

/// Runs a scenario to the end with the built-in controllers.
pub fn run(scenario: &Scenario) -> Trace {
    let mut sim = Sim::new(scenario, Box::new(|c| recon_catalog::instantiate(&c.controller))).expect("scenario builds");
    sim.run();
    sim.into_trace()
}

/// Runs a scenario with another seed.
pub fn run_with_seed(scenario: &Scenario, seed: u64) -> Trace {
    let mut s = scenario.clone();
    s.seed = seed;
    run(&s)
}

/// Every built-in controller compiled from its `.wasm` file, by controller name.
///
/// The files come from `cargo xtask test` (or `cargo xtask plugins`), which
/// builds the plugin crates for wasm32 and passes their directory in
/// `RECON_PLUGIN_DIR`.
///
/// Compiled once per test binary and shared: validating, instrumenting
/// and compiling every plugin takes tens of seconds in a debug build, and
/// a compiled plugin is immutable (each `instantiate` is a fresh instance).
pub fn wasm_plugins() -> BTreeMap<String, CompiledPlugin> {
    static COMPILED: std::sync::OnceLock<BTreeMap<String, CompiledPlugin>> = std::sync::OnceLock::new();
    COMPILED.get_or_init(|| wasm_plugins_under(&Limits::default())).clone()
}

/// [`wasm_plugins`], loaded under `limits` rather than the defaults.
pub fn wasm_plugins_under(limits: &Limits) -> BTreeMap<String, CompiledPlugin> {
    // Pooled, as the CLI's: the traces the tests pin are the shipped engine's.
    wasm_plugins_in(&Engine::pooled(recon_host::MAX_POOL_SLOTS).expect("wasmtime starts"), limits)
}

/// The built-in controllers `scenario`'s components run, compiled under
/// the limits it sets (`limits.plugins`), as `recon run --plugin` loads
/// them: for a run of its own, where compiling every built-in and the
/// defaults' limits (sized for one controller of a small story) would not
/// do.
pub fn wasm_plugins_for(scenario: &Scenario) -> BTreeMap<String, CompiledPlugin> {
    let engine = Engine::pooled(recon_host::MAX_POOL_SLOTS).expect("wasmtime starts");
    let limits = Limits::from(&scenario.limits.plugins);
    let fixes = scenario.fixes.iter().flat_map(|f| &f.components).filter_map(|c| c.controller.as_deref());
    let used: std::collections::BTreeSet<&str> =
        scenario.components.iter().map(|c| c.controller.as_str()).chain(fixes).collect();
    compile_builtins(&engine, &limits, |name| used.contains(name))
}

/// [`wasm_plugins_under`], compiled by `engine`.
pub fn wasm_plugins_in(engine: &Engine, limits: &Limits) -> BTreeMap<String, CompiledPlugin> {
    compile_builtins(engine, limits, |_| true)
}

/// The built-in controllers `wanted` names, compiled by `engine` under
/// `limits`, by controller name.
fn compile_builtins(
    engine: &Engine,
    limits: &Limits,
    wanted: impl Fn(&str) -> bool,
) -> BTreeMap<String, CompiledPlugin> {
    let dir = plugin_dir();
    recon_catalog::BUILTINS
        .iter()
        .filter(|b| wanted(b.name))
        .map(|b| (b.name.to_string(), compile(engine, &dir, b.crate_name, b.name, limits)))
        .collect()
}

/// One plugin built by `cargo xtask plugins`, by its crate name with `_`
/// (`recon_test_plugin_logging`), compiled under the name `name` (which
/// its crash reasons start with).
pub fn wasm_plugin(crate_name: &str, name: &str) -> CompiledPlugin {
    compile(&Engine::new().expect("wasmtime starts"), &plugin_dir(), crate_name, name, &Limits::default())
}

/// The file of a plugin that `cargo xtask plugins` builds only where its
/// compiler is found (a plugin written in C needs clang), by its name
/// without `.wasm`; `None` once the reason it was skipped, from the note
/// the xtask left in its place, is printed. Neither the file nor a note
/// is an error that says to build it.
pub fn optional_plugin_file(file_stem: &str) -> Option<PathBuf> {
    let dir = plugin_dir();
    let file = dir.join(format!("{file_stem}.wasm"));
    if file.exists() {
        return Some(file);
    }
    let note = dir.join(format!("{file_stem}.skipped"));
    let why = std::fs::read_to_string(&note).unwrap_or_else(|_| {
        panic!("{}: neither the plugin nor a note why it was skipped (run `cargo xtask plugins`)", file.display())
    });
    eprintln!("skipped: {}", why.trim());
    None
}

/// Where `cargo xtask test` (or `cargo xtask plugins`) put the `.wasm` files.
fn plugin_dir() -> PathBuf {
    std::env::var_os("RECON_PLUGIN_DIR").map(PathBuf::from).unwrap_or_else(|| {
        panic!(
            "RECON_PLUGIN_DIR is not set: run the tests with `cargo xtask test`, which builds the Wasm plugins \
             first, or run `cargo xtask plugins` and set RECON_PLUGIN_DIR to the directory it prints"
        )
    })
}

fn compile(engine: &Engine, dir: &std::path::Path, crate_name: &str, name: &str, limits: &Limits) -> CompiledPlugin {
    let path = dir.join(format!("{crate_name}.wasm"));
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e} (run `cargo xtask plugins`)", path.display()));
    let module = Module::load(name, &bytes, limits).unwrap_or_else(|e| panic!("{e}"));
    engine.compile(&module).unwrap_or_else(|e| panic!("{e}"))
}

/// The simulator's instantiate for `plugins` by controller name: a
/// controller without a plugin is refused.
pub fn wasm_instantiate(plugins: BTreeMap<String, CompiledPlugin>) -> recon_sim::Instantiate {
    Box::new(move |c| {
        let plugin = plugins.get(&c.controller)?;
        Some(Box::new(plugin.instantiate().expect("built-in plugins instantiate")) as Box<dyn recon_abi::Instance>)
    })
}

/// Runs a scenario with every controller as a Wasm plugin under wasmtime.
pub fn run_wasm(scenario: &Scenario, plugins: &BTreeMap<String, CompiledPlugin>) -> Trace {
    let mut sim = Sim::new(scenario, wasm_instantiate(plugins.clone())).expect("scenario builds");
    sim.run();
    sim.into_trace()
}

/// A `/proc/self/status` field in KiB, e.g. `VmHWM:` (peak resident set);
/// `None` where there is no such file (outside Linux). For the soak and
/// scale runs' memory figures.
pub fn proc_status_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The #59848 story at scale: `nodes` nodes with a kubelet each, a
/// ReplicaSet of `pods` pods and a StatefulSet, a partitioned second API
/// server, a cordon and rolling update, and a kubelet restart that relists
/// from the stale cache.
pub fn scaled_59848(nodes: usize, pods: usize) -> Scenario {
    let mut yaml = String::from(
        "name: scaled\nseed: 7\nduration: 30s\napiServers:\n  - name: apiserver-1\n  - name: apiserver-2\n    partitions: [ { from: 5s, until: 20s } ]\nnodes:\n",
    );
    for n in 1..=nodes {
        yaml += &format!("  - name: node-{n}\n");
    }
    yaml += "components:\n  - { name: scheduler, controller: scheduler, apiServer: apiserver-1 }\n";
    yaml += "  - { name: replicaset-controller, controller: replicaset, apiServer: apiserver-1 }\n";
    yaml += "  - { name: statefulset-controller, controller: statefulset, apiServer: apiserver-1 }\n";
    for n in 1..=nodes {
        let server = if n % 2 == 0 { "apiserver-2" } else { "apiserver-1" };
        yaml += &format!(
            "  - {{ name: kubelet-node-{n}, controller: kubelet, node: node-{n}, apiServer: {server}, failover: [apiserver-1, apiserver-2] }}\n"
        );
    }
    let template =
        "template: { metadata: { labels: { app: APP } }, spec: { containers: [ { name: c, image: IMAGE } ] } }";
    let rs = template.replace("APP", "batch").replace("IMAGE", "busybox");
    let sts = |image: &str| template.replace("APP", "web").replace("IMAGE", image);
    yaml += &format!(
        "objects:\n  - {{ apiVersion: apps/v1, kind: ReplicaSet, metadata: {{ name: batch }}, spec: {{ replicas: {pods}, selector: {{ matchLabels: {{ app: batch }} }}, {rs} }} }}\n"
    );
    yaml += &format!(
        "  - {{ apiVersion: apps/v1, kind: StatefulSet, metadata: {{ name: web }}, spec: {{ replicas: 3, selector: {{ matchLabels: {{ app: web }} }}, {} }} }}\n",
        sts("nginx:1.25")
    );
    yaml += "script:\n  - { at: 8s, cordon: { node: node-1 } }\n";
    yaml += &format!(
        "  - {{ at: 9s, apply: {{ apiVersion: apps/v1, kind: StatefulSet, metadata: {{ name: web }}, spec: {{ replicas: 3, selector: {{ matchLabels: {{ app: web }} }}, {} }} }} }}\n",
        sts("nginx:1.26")
    );
    yaml += &format!("  - {{ at: 10s, scale: {{ kind: ReplicaSet, name: batch, replicas: {} }} }}\n", pods / 2);
    yaml += "  - { at: 12s, restart: { component: kubelet-node-1, apiServer: apiserver-2 } }\n";
    yaml += "  - { at: 14s, restart: { component: scheduler } }\n";
    recon_scenario::parse("scaled.yaml", &yaml).expect("generated scenario is valid")
}
