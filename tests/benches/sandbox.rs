//! The price of the sandbox: the same controllers linked natively and run as
//! Wasm plugins under wasmtime, measured in one run, reported as ratios.
//!
//! Run with `cargo xtask bench` (which builds the plugins and sets
//! `RECON_PLUGIN_DIR`). Wall-clock time is fine here: this is a benchmark,
//! not the simulator. Each case alternates native and Wasm runs so both see
//! the same machine, and reports medians. Under `cargo test` (no `--bench`
//! argument) it only checks, once and on the smallest case, that both ways
//! give the same run.

use std::time::{Duration, Instant};

use recon_abi::{ComponentConfig, Input, InputEvent, Instance, Object, ObjectMeta};
use recon_scenario::{Scenario, StepAction};

/// The `recon` CLI's allocator (mimalloc, tuned as the CLI tunes it in
/// `main`), so the host's side of both ways costs what it costs a user.
#[global_allocator]
static ALLOCATOR: recon_alloc::Allocator = recon_alloc::Allocator;

const ROUNDS: usize = 7;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// Times `native` and `wasm` alternately; returns their medians.
fn compare(mut native: impl FnMut(), mut wasm: impl FnMut()) -> (Duration, Duration) {
    let (mut n, mut w) = (Vec::new(), Vec::new());
    native();
    wasm();
    for _ in 0..ROUNDS {
        let t = Instant::now();
        native();
        n.push(t.elapsed());
        let t = Instant::now();
        wasm();
        w.push(t.elapsed());
    }
    (median(n), median(w))
}

fn report(case: &str, unit: &str, count: usize, (native, wasm): (Duration, Duration)) {
    let per = |d: Duration| d.as_secs_f64() / count as f64;
    println!(
        "{case:<34} native {:>10.2} µs/{unit}  wasm {:>10.2} µs/{unit}  wasm/native speed {:.2}",
        per(native) * 1e6,
        per(wasm) * 1e6,
        native.as_secs_f64() / wasm.as_secs_f64()
    );
}

fn scenario_case(
    name: &str,
    scenario: &Scenario,
    plugins: &std::collections::BTreeMap<String, recon_host::CompiledPlugin>,
) {
    let native = recon_tests::run(scenario);
    let entries = native.entries.len();
    assert_eq!(recon_tests::run_wasm(scenario, plugins).hash(), native.hash(), "{name}: same run both ways");
    let times = compare(
        || {
            recon_tests::run(scenario);
        },
        || {
            recon_tests::run_wasm(scenario, plugins);
        },
    );
    report(name, "entry", entries, times);
}

/// The same sandboxed runs with every plugin started in a slot of
/// wasmtime's pooling allocator (`Engine::pooled`, as the CLI runs them)
/// and each mapping its own memory (`Engine::new`); alternating, medians.
fn pool_case(pooled: &std::collections::BTreeMap<String, recon_host::CompiledPlugin>) {
    let plain = recon_tests::wasm_plugins_in(&recon_host::Engine::new().unwrap(), &recon_host::Limits::default());
    for (name, scenario) in [
        ("pod-safety-59848", recon_tests::load("pod-safety-59848")),
        ("kube pod-reconciler, 1 pod", scaled_pod_reconciler(1)),
    ] {
        let trace = recon_tests::run_wasm(&scenario, pooled);
        assert_eq!(recon_tests::run_wasm(&scenario, &plain).hash(), trace.hash(), "{name}: same run both ways");
        let (with, without) = compare(
            || {
                recon_tests::run_wasm(&scenario, pooled);
            },
            || {
                recon_tests::run_wasm(&scenario, &plain);
            },
        );
        let per = |d: Duration| d.as_secs_f64() * 1e6 / trace.entries.len() as f64;
        println!(
            "{:<34} pooled {:>8.2} µs/entry  unpooled {:>8.2} µs/entry  pooled/unpooled time {:.2}",
            format!("pool: {name}"),
            per(with),
            per(without),
            with.as_secs_f64() / without.as_secs_f64()
        );
    }
}

/// The kube-rs pod reconciler's scenario with `pods` labelled pods
/// instead of one: each is created, then edited twice a second apart,
/// so each goes through the same conflicts and back-offs as `web` does.
fn scaled_pod_reconciler(pods: usize) -> Scenario {
    let mut scenario = recon_tests::load("pod-reconciler");
    let steps = std::mem::take(&mut scenario.script);
    for step in steps {
        let web = match &step.action {
            StepAction::Create { object, .. } | StepAction::Apply { object, .. } => object.metadata.name == "web",
            _ => false,
        };
        if !web {
            scenario.script.push(step);
            continue;
        }
        for i in 0..pods {
            let mut copy = step.clone();
            if let StepAction::Create { object, .. } | StepAction::Apply { object, .. } = &mut copy.action {
                object.metadata.name = format!("web-{i}");
            }
            scenario.script.push(copy);
        }
    }
    scenario.script.sort_by_key(|step| step.at);
    scenario
}

/// The async kube-style controller (issue 15): the pod reconciler, its
/// `main` and every reconcile on recon-kube's executor, linked natively
/// and as a Wasm plugin; the whole run, and per reconcile of it.
fn kube_case(pods: usize, plugins: &std::collections::BTreeMap<String, recon_host::CompiledPlugin>) {
    let scenario = scaled_pod_reconciler(pods);
    let native = recon_tests::run(&scenario);
    assert_eq!(recon_tests::run_wasm(&scenario, plugins).hash(), native.hash(), "same run both ways");
    let reconciles = native
        .entries
        .iter()
        .filter(|e| matches!(&e.event, recon_trace::Event::Reconcile(call) if call.component == "pod-reconciler"))
        .count();
    let times = compare(
        || {
            recon_tests::run(&scenario);
        },
        || {
            recon_tests::run_wasm(&scenario, plugins);
        },
    );
    report(&format!("kube pod-reconciler, {pods} pods (run)"), "entry", native.entries.len(), times);
    report(&format!("kube pod-reconciler, {pods} pods"), "reconcile", reconciles, times);
}

/// A kubelet's calls for the call cases: its configuration, its first
/// list (`pods` pods, bound to its node, in `status`), and 2,000 inputs of
/// one MODIFIED pod each (the pods in turn), each with the runtime's report
/// of `containers`.
struct KubeletCalls {
    config: ComponentConfig,
    listed: Input,
    inputs: Vec<Input>,
}

impl KubeletCalls {
    /// `pods` by name and uid.
    fn new(pods: &[(String, String)], status: serde_json::Value, containers: &[recon_abi::Container]) -> Self {
        let config =
            ComponentConfig { name: "kubelet-node-1".into(), node: Some("node-1".into()), ..Default::default() };
        // Versions share the parts they do not change, as the store's do (a
        // write that keeps the spec keeps the same `SharedValue`), so the host
        // compares them by pointer when it leaves them out of a watch event.
        let spec: recon_abi::SharedValue =
            serde_json::json!({ "nodeName": "node-1", "containers": [{ "name": "web", "image": "nginx" }] }).into();
        let status: recon_abi::SharedValue = status.into();
        let pod = |(name, uid): &(String, String), rv: usize| Object {
            api_version: "v1".into(),
            kind: "Pod".into(),
            metadata: ObjectMeta {
                name: name.clone(),
                namespace: "default".into(),
                uid: uid.clone(),
                resource_version: rv.to_string(),
                ..Default::default()
            },
            spec: spec.clone(),
            status: status.clone(),
            other: Default::default(),
        };
        // One list, shared by every input, as a node's runtime shows it
        // until a container starts or stops.
        let containers: std::sync::Arc<[recon_abi::Container]> = containers.into();
        let listed = Input {
            time_ms: 0,
            events: vec![InputEvent::Listed {
                watch: 0,
                resource_version: "1".into(),
                objects: pods.iter().map(|p| pod(p, 1).into()).collect(),
            }],
            containers: Some(containers.clone()),
        };
        let inputs = (0..2_000)
            .map(|i| Input {
                time_ms: i as u64,
                events: vec![InputEvent::Watch {
                    watch: 0,
                    event: recon_abi::WatchEvent::new(
                        recon_abi::EventType::Modified,
                        pod(&pods[i % pods.len()], i + 2).into(),
                    ),
                }],
                containers: Some(containers.clone()),
            })
            .collect();
        KubeletCalls { config, listed, inputs }
    }

    /// Starts `instance` and makes every call.
    fn drive(&self, instance: &mut dyn Instance) {
        instance.init(&self.config).unwrap();
        instance.handle(&self.listed).unwrap();
        for input in &self.inputs {
            instance.handle(input).unwrap();
        }
    }

    /// The calls' time with the kubelet linked natively and as its plugin.
    fn compare(
        &self,
        plugins: &std::collections::BTreeMap<String, recon_host::CompiledPlugin>,
    ) -> (Duration, Duration) {
        compare(
            || self.drive(recon_catalog::instantiate("kubelet").unwrap().as_mut()),
            || self.drive(&mut plugins["kubelet"].instantiate().unwrap()),
        )
    }
}

/// One kubelet call with a typical input: one pod event for its node.
fn call_case(plugins: &std::collections::BTreeMap<String, recon_host::CompiledPlugin>) {
    let kubelet = KubeletCalls::new(&[("web-0".into(), "u-1".into())], serde_json::json!({ "phase": "Running" }), &[]);
    let calls = kubelet.inputs.len();
    report("kubelet handle() call", "call", calls, kubelet.compare(plugins));
    // What dropping wasmtime's own fuel bought (issue 17): the same plugin
    // with it on again, as the fuzz target runs modules.
    let dir = std::path::PathBuf::from(std::env::var_os("RECON_PLUGIN_DIR").expect("set by cargo xtask bench"));
    let bytes = std::fs::read(dir.join("recon_plugin_kubelet.wasm")).expect("the kubelet plugin is built");
    let module = recon_host::Module::load("kubelet.wasm", &bytes, &recon_host::Limits::default()).unwrap();
    let metered_twice = recon_host::Engine::with_fuel_backstop().unwrap().compile(&module).unwrap();
    let (once, twice) = compare(
        || kubelet.drive(&mut plugins["kubelet"].instantiate().unwrap()),
        || kubelet.drive(&mut metered_twice.instantiate().unwrap()),
    );
    let per = |d: Duration| d.as_secs_f64() * 1e6 / calls as f64;
    println!(
        "{:<34} metered once {:>6.2} µs/call  with wasmtime's fuel too {:>6.2} µs/call",
        "kubelet handle() call, fuel",
        per(once),
        per(twice)
    );
    let encoded: Vec<Vec<u8>> = kubelet.inputs.iter().map(|input| serde_json::to_vec(input).unwrap()).collect();
    let listed = serde_json::to_vec(&kubelet.listed).unwrap();
    metering_case(&encoded, &serde_json::to_vec(&kubelet.config).unwrap(), &listed);
}

/// One kubelet call on a node that runs `pods` pods, every one with its
/// container: each call one pod event, and the runtime's report of the
/// same containers (a large cluster's common case: the list changes only
/// when a container starts or stops). A plugin is sent the list once and
/// then that it is unchanged (`containerChanges`); the controller, native
/// or not, reads the whole list on every call.
fn full_node_call_case(pods: usize, plugins: &std::collections::BTreeMap<String, recon_host::CompiledPlugin>) {
    let names: Vec<(String, String)> =
        (0..pods).map(|i| (format!("web-{i:02}"), format!("4f6c8a9e-1d2b-4c3a-9e8f-{i:012}"))).collect();
    let containers: Vec<recon_abi::Container> = names
        .iter()
        .map(|(name, uid)| recon_abi::Container {
            pod: recon_abi::PodRef { namespace: "default".into(), name: name.clone(), uid: uid.clone() },
            started_at_ms: 0,
        })
        .collect();
    let ready = serde_json::json!({ "phase": "Running", "conditions": [{ "type": "Ready", "status": "True" }] });
    let kubelet = KubeletCalls::new(&names, ready, &containers);
    report(&format!("kubelet call, {pods} pods on its node"), "call", kubelet.inputs.len(), kubelet.compare(plugins));
}

/// What the metering costs one kubelet call (issue 17): the kubelet
/// plugin as the host runs it (instrumented for fuel, depth and stack)
/// against the same module unmetered, both driven through wasmtime alone
/// with the same JSON bytes, so the difference is the instrumentation's.
fn metering_case(compiled_inputs: &[Vec<u8>], init: &[u8], listed: &[u8]) {
    use wasmtime::{Engine, Linker, Module, Store, TypedFunc, Val};
    let dir = std::path::PathBuf::from(std::env::var_os("RECON_PLUGIN_DIR").expect("set by cargo xtask bench"));
    let raw = std::fs::read(dir.join("recon_plugin_kubelet.wasm")).expect("the kubelet plugin is built");
    let metered = recon_host::Module::load("kubelet.wasm", &raw, &recon_host::Limits::default()).unwrap();
    let mut config = wasmtime::Config::new();
    config.cranelift_nan_canonicalization(true);
    let engine = Engine::new(&config).unwrap();
    let drive = |module: &Module| {
        let mut linker = Linker::new(&engine);
        linker.func_wrap("recon", "log", |_: i32, _: i32| {}).unwrap();
        let mut store = Store::new(&engine, ());
        let instance = linker.instantiate(&mut store, module).unwrap();
        let memory = instance.get_memory(&mut store, "memory").unwrap();
        let alloc = instance.get_typed_func::<i32, i32>(&mut store, "recon_alloc").unwrap();
        let init_fn = instance.get_typed_func::<(i32, i32), i64>(&mut store, "recon_init").unwrap();
        let handle = instance.get_typed_func::<(i32, i32), i64>(&mut store, "recon_handle").unwrap();
        // The meters, where the module has them: fuel that never runs out.
        let meter = |store: &mut Store<()>, name: &str, value: Val| {
            if let Some(global) = instance.get_global(&mut *store, name) {
                global.set(&mut *store, value).unwrap();
            }
        };
        let call = |store: &mut Store<()>, f: &TypedFunc<(i32, i32), i64>, bytes: &[u8]| {
            meter(store, recon_host::FUEL_EXPORT, Val::I64(i64::MAX / 2));
            meter(store, recon_host::DEPTH_EXPORT, Val::I32(0));
            meter(store, recon_host::STACK_EXPORT, Val::I32(0));
            let at = alloc.call(&mut *store, bytes.len() as i32).unwrap();
            memory.write(&mut *store, at as usize, bytes).unwrap();
            let packed = f.call(&mut *store, (at, bytes.len() as i32)).unwrap() as u64;
            let mut output = vec![0; (packed & 0xffff_ffff) as usize];
            memory.read(&*store, (packed >> 32) as usize, &mut output).unwrap();
        };
        call(&mut store, &init_fn, init);
        call(&mut store, &handle, listed);
        for input in compiled_inputs {
            call(&mut store, &handle, input);
        }
    };
    let unmetered = Module::from_binary(&engine, &raw).unwrap();
    let metered = Module::from_binary(&engine, metered.bytes()).unwrap();
    let (plain, instrumented) = compare(|| drive(&unmetered), || drive(&metered));
    let per = |d: Duration| d.as_secs_f64() * 1e6 / compiled_inputs.len() as f64;
    println!(
        "{:<34} unmetered {:>6.2} µs/call  metered {:>6.2} µs/call  metering adds {:.0} %",
        "kubelet handle() call, metering",
        per(plain),
        per(instrumented),
        (instrumented.as_secs_f64() / plain.as_secs_f64() - 1.0) * 100.0
    );
}

/// What loading a module costs (validation, metering and wasmtime's
/// compile): a built-in controller's release build, and the deepest
/// nesting validation lets through (1,000 blocks in one function, 3 KB),
/// whose compile time grows faster than its size.
fn load_case() {
    let dir = std::path::PathBuf::from(std::env::var_os("RECON_PLUGIN_DIR").expect("set by cargo xtask bench"));
    let replicaset = std::fs::read(dir.join("recon_plugin_replicaset.wasm")).unwrap();
    let skeleton = r#"(memory (export "memory") 1)
        (func (export "recon_abi_version") (result i32) i32.const 1)
        (func (export "recon_alloc") (param i32) (result i32) i32.const 0)
        (func (export "recon_init") (param i32 i32) (result i64) i64.const 0)
        (func (export "recon_handle") (param i32 i32) (result i64) i64.const 0)"#;
    let nested =
        wat::parse_str(format!("(module {skeleton} (func {}{}))", "(block ".repeat(1_000), ")".repeat(1_000))).unwrap();
    let engine = recon_host::Engine::new().unwrap();
    let load = |bytes: &[u8]| {
        let module = recon_host::Module::load("bench.wasm", bytes, &recon_host::Limits::default()).unwrap();
        engine.compile(&module).unwrap();
    };
    let (real, deep) = compare(|| load(&replicaset), || load(&nested));
    println!(
        "{:<40} replicaset plugin ({} KB) {:>9.1} ms   1,000 nested blocks ({} KB) {:>9.1} ms",
        "load and compile",
        replicaset.len() / 1024,
        real.as_secs_f64() * 1e3,
        nested.len() / 1024,
        deep.as_secs_f64() * 1e3
    );
}

fn main() {
    recon_alloc::tune_for_long_runs();
    let plugins = recon_tests::wasm_plugins();
    if !std::env::args().any(|a| a == "--bench") {
        let scenario = recon_tests::load("pod-safety-59848");
        assert_eq!(recon_tests::run(&scenario).hash(), recon_tests::run_wasm(&scenario, &plugins).hash());
        let kube = scaled_pod_reconciler(3);
        assert_eq!(recon_tests::run(&kube).hash(), recon_tests::run_wasm(&kube, &plugins).hash());
        println!("sandbox benchmark: smoke run only (use `cargo xtask bench` to measure)");
        return;
    }
    println!("sandbox overhead: medians of {ROUNDS} alternating rounds; speed ratio = native time / wasm time");
    // `cargo xtask bench -- load` (any word after the flags) runs the cases it names.
    let only = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let wanted = |case: &str| only.as_deref().is_none_or(|o| case.contains(o));
    if wanted("load") {
        load_case();
    }
    if wanted("call") {
        call_case(&plugins);
        full_node_call_case(30, &plugins);
    }
    if wanted("pool") {
        pool_case(&plugins);
    }
    for pods in [1, 100, 1_000] {
        if wanted(&format!("kube pod-reconciler, {pods} pods")) {
            kube_case(pods, &plugins);
        }
    }
    let scenarios = [
        ("pod-safety-59848 (whole run)", 0, 0),
        ("scaled 10 nodes / 100 pods", 10, 100),
        ("scaled 50 nodes / 500 pods", 50, 500),
        ("scaled 100 nodes / 2000 pods", 100, 2000),
    ];
    for (case, nodes, pods) in scenarios.into_iter().filter(|(case, ..)| wanted(case)) {
        let scenario =
            if nodes == 0 { recon_tests::load("pod-safety-59848") } else { recon_tests::scaled_59848(nodes, pods) };
        scenario_case(case, &scenario, &plugins);
    }
}
