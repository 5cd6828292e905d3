//! Determinism across random scenarios, not only the shipped ones.
//!
//! Each seed draws a whole scenario: API servers with random caches, lags,
//! consistent reads and partitions; nodes with kubelets (naive or fixed);
//! the built-in controllers with random list modes, fail-over lists, late
//! starts and leader election; workloads; and a script of scaling, rolling
//! updates, deletions, cordons, crashes, restarts, disconnects and
//! compactions. For every one:
//!
//! - two runs give the byte-identical trace;
//! - the scenario written back to YAML parses to the same scenario and
//!   replays to the same trace (what sharing a run relies on);
//! - the pod-identity check agrees with a reference computed from the
//!   trace's own container starts and stops;
//! - with every controller as its Wasm plugin under wasmtime, the trace is
//!   byte-identical to the native one (a subset of seeds; needs
//!   `RECON_PLUGIN_DIR`, as `cargo xtask test` sets it).
//!
//! A failure prints "reproduce with seed=…" and the scenario file.

use std::collections::BTreeMap;

use recon_abi::PodRef;
use recon_scenario::{Check, Scenario};
use recon_sim::rng::Rng;
use recon_tests::{run, run_wasm, wasm_plugins};
use recon_trace::{Event, Trace};

/// How many random scenarios the native properties cover.
const SCENARIOS: u64 = 24;

/// How many of them also run under wasmtime.
const WASM_SCENARIOS: u64 = 6;

struct Draw(Rng);

impl Draw {
    fn below(&mut self, n: u64) -> u64 {
        self.0.range_inclusive(0, n - 1)
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[self.below(from.len() as u64) as usize]
    }
}

/// The scenario file drawn from `seed`.
fn random_yaml(seed: u64) -> String {
    let mut d = Draw(Rng::new(seed));
    let duration_ms = 8_000 + d.below(8) * 1_000;
    let servers: Vec<String> = (1..=1 + d.below(3)).map(|i| format!("apiserver-{i}")).collect();
    let nodes: Vec<String> = (1..=1 + d.below(4)).map(|i| format!("node-{i}")).collect();
    // Half the time with enough servers and nodes, #59848's shape: the
    // StatefulSet is created while only node-1 takes pods, node-1 is then
    // cordoned, the last server is cut off from the store, web-0 is deleted
    // (and recreated elsewhere), and node-1's kubelet restarts onto the
    // cut-off server.
    let motif = servers.len() >= 2 && nodes.len() >= 2 && d.chance(50);
    let stale = servers.last().expect("one server").clone();
    let mut y = format!("name: random-{seed}\nseed: {}\nduration: {duration_ms}ms\n", d.below(1_000));
    if d.chance(30) {
        y += &format!("network: {{ latency: {{ min: 1ms, max: {}ms }} }}\n", 1 + d.below(40));
    }
    y += "apiServers:\n";
    for s in &servers {
        y += &format!("  - name: {s}\n");
        y += &format!("    watchCache: {{ enabled: {}, lag: {}ms }}\n", !d.chance(15), d.below(3) * 150);
        if d.chance(30) {
            y += "    consistentReadsFromCache: true\n";
        }
        if motif && *s == stale {
            y += &format!("    partitions: [ {{ from: 2000ms, until: {}ms }} ]\n", duration_ms - 1_000);
        } else if d.chance(40) {
            let from = d.below(duration_ms / 2);
            let until =
                if d.chance(80) { format!(", until: {}ms", from + 200 + d.below(4_000)) } else { String::new() };
            y += &format!("    partitions: [ {{ from: {from}ms{until} }} ]\n");
        }
    }
    let server = |d: &mut Draw| servers[d.below(servers.len() as u64) as usize].clone();
    let others = |s: &str| servers.iter().filter(|o| *o != s).cloned().collect::<Vec<_>>().join(", ");
    y += "nodes:\n";
    for n in &nodes {
        y += &format!("  - {{ name: {n}, pods: {} }}\n", 2 + d.below(10));
    }
    y += "components:\n";
    let mut components = Vec::new();
    let mut component = |d: &mut Draw, name: String, controller: &str, node: Option<&str>, extra: &str| {
        let s = server(d);
        let mut line =
            format!("  - {{ name: {name}, controller: {controller}, apiServer: {s}, failover: [{}]", others(&s));
        if let Some(n) = node {
            line += &format!(", node: {n}");
        }
        if d.chance(40) {
            line += &format!(", listMode: {}", d.pick(&["any", "quorum", "consistent"]));
        }
        line += extra;
        components.push(name);
        line + " }\n"
    };
    for controller in ["scheduler", "deployment", "statefulset"] {
        let late = if d.chance(15) { format!(", startAt: {}ms", d.below(3_000)) } else { String::new() };
        y += &component(&mut d, format!("{controller}-controller"), controller, None, &late);
    }
    // The ReplicaSet controller, sometimes as two candidates for one Lease.
    let candidates = if d.chance(30) { 2 } else { 1 };
    for i in 1..=candidates {
        let election = if candidates > 1 { ", leaderElection: { lease: replicaset }" } else { "" };
        y += &component(&mut d, format!("replicaset-controller-{i}"), "replicaset", None, election);
    }
    for n in &nodes {
        let kubelet = if d.chance(25) { "kubelet-fixed" } else { "kubelet" };
        y += &component(&mut d, format!("kubelet-{n}"), kubelet, Some(n), "");
    }
    let template = |app: &str, image: u64| {
        format!(
            "selector: {{ matchLabels: {{ app: {app} }} }}, template: {{ metadata: {{ labels: {{ app: {app} }} }}, \
             spec: {{ containers: [ {{ name: c, image: \"{app}:{image}\" }} ] }} }}"
        )
    };
    let workload = |kind: &str, name: &str, replicas: u64, image: u64| {
        let service = if kind == "StatefulSet" { format!("serviceName: {name}, ") } else { String::new() };
        format!(
            "{{ apiVersion: apps/v1, kind: {kind}, metadata: {{ name: {name} }}, spec: {{ replicas: {replicas}, {service}{} }} }}",
            template(name, image)
        )
    };
    let kinds = [("Deployment", "app"), ("StatefulSet", "web"), ("ReplicaSet", "batch")];
    y += "objects:\n";
    for (kind, name) in kinds {
        let replicas = d.below(4);
        if motif && kind == "StatefulSet" {
            continue; // created by the script, below
        }
        y += &format!("  - {}\n", workload(kind, name, replicas, 1));
    }
    let steps = d.below(9);
    let mut times: Vec<u64> = (0..steps).map(|_| 1 + d.below(duration_ms - 1)).collect();
    times.sort();
    let mut script: Vec<(u64, String)> = Vec::new();
    if motif {
        let (first, rest) = nodes.split_first().expect("two nodes");
        script.extend(rest.iter().map(|n| (500, format!("cordon: {{ node: {n} }}"))));
        script.push((1_000, format!("create: {}", workload("StatefulSet", "web", 1 + d.below(3), 1))));
        script.extend(rest.iter().map(|n| (1_500, format!("uncordon: {{ node: {n} }}"))));
        script.push((1_500, format!("cordon: {{ node: {first} }}")));
        script.push((2_500, "delete: { kind: Pod, name: web-0 }".into()));
        script.push((5_000, format!("restart: {{ component: kubelet-{first}, apiServer: {stale} }}")));
    }
    for (i, at) in times.into_iter().enumerate() {
        let (kind, name) = kinds[d.below(3) as usize];
        let action = match d.below(10) {
            0 => format!("scale: {{ kind: {kind}, name: {name}, replicas: {} }}", d.below(5)),
            1 => format!("apply: {}", workload(kind, name, d.below(4), 2 + i as u64)),
            2 => format!("delete: {{ kind: Pod, name: web-{} }}", d.below(3)),
            3 => format!("cordon: {{ node: {} }}", nodes[d.below(nodes.len() as u64) as usize]),
            4 => format!("uncordon: {{ node: {} }}", nodes[d.below(nodes.len() as u64) as usize]),
            5 => format!("crash: {{ component: {} }}", components[d.below(components.len() as u64) as usize]),
            6 => format!(
                "restart: {{ component: {}, apiServer: {} }}",
                components[d.below(components.len() as u64) as usize],
                server(&mut d)
            ),
            7 => format!("disconnect: {{ component: {} }}", components[d.below(components.len() as u64) as usize]),
            8 => format!("compact: {{ keep: {} }}", d.below(20)),
            _ => format!("restart: {{ component: {} }}", components[d.below(components.len() as u64) as usize]),
        };
        script.push((at, action));
    }
    // Stable: steps at the same time keep the order they were drawn in.
    script.sort_by_key(|(at, _)| *at);
    if !script.is_empty() {
        y += "script:\n";
    }
    for (at, action) in script {
        y += &format!("  - {{ at: {at}ms, {action} }}\n");
    }
    y
}

fn random_scenario(seed: u64) -> Scenario {
    let yaml = random_yaml(seed);
    recon_scenario::parse(&format!("random-{seed}.yaml"), &yaml)
        .unwrap_or_else(|e| panic!("reproduce with seed={seed}: the generated scenario is invalid: {e}\n{yaml}"))
}

/// The pod-identity verdicts a trace should hold, from its container starts
/// and stops alone: (the start that broke it, the start it clashes with).
fn reference_pod_identity(trace: &Trace) -> Vec<(u64, u64)> {
    // node -> pod -> the entry that started it
    let mut running: BTreeMap<String, BTreeMap<PodRef, u64>> = BTreeMap::new();
    let mut verdicts = Vec::new();
    for e in &trace.entries {
        match &e.event {
            Event::ContainerStarted { node, pod } => {
                for (other_node, pods) in &running {
                    if other_node == node {
                        continue;
                    }
                    for (other, started) in pods {
                        if other.namespace == pod.namespace && other.name == pod.name {
                            verdicts.push((e.id, *started));
                        }
                    }
                }
                running.entry(node.to_string()).or_default().insert((**pod).clone(), e.id);
            }
            Event::ContainerStopped { node, pod } => {
                running.entry(node.to_string()).or_default().remove(&**pod);
            }
            _ => {}
        }
    }
    verdicts.sort();
    verdicts
}

fn pod_identity_verdicts(trace: &Trace) -> Vec<(u64, u64)> {
    let mut verdicts: Vec<(u64, u64)> = trace
        .violations()
        .filter(|(_, check, _)| *check == Check::PodIdentity)
        .map(|(e, _, _)| (e.causes[0], e.causes[1]))
        .collect();
    verdicts.sort();
    verdicts
}

#[test]
fn random_scenarios_run_deterministically_and_replay_from_their_written_file() {
    let mut entries = 0;
    let mut identity_violations = 0;
    for seed in 0..SCENARIOS {
        let scenario = random_scenario(seed);
        let context = format!("reproduce with seed={seed}:\n{}", random_yaml(seed));
        let first = run(&scenario);
        let second = run(&scenario);
        assert_eq!(first.hash(), second.hash(), "{context}");
        assert_eq!(first.to_json(), second.to_json(), "{context}");

        let written = recon_scenario::to_yaml(&scenario);
        let reread = recon_scenario::parse("written.yaml", &written).unwrap_or_else(|e| panic!("{e}; {context}"));
        assert_eq!(reread, scenario, "{context}");
        assert_eq!(run(&reread).hash(), first.hash(), "{context}");

        assert_eq!(pod_identity_verdicts(&first), reference_pod_identity(&first), "{context}");
        entries += first.entries.len();
        identity_violations += pod_identity_verdicts(&first).len();
    }
    // The scenarios must be real runs, and some must break pod identity, or
    // the comparison with the reference proves little.
    assert!(entries > SCENARIOS as usize * 200, "only {entries} trace entries in {SCENARIOS} scenarios");
    assert!(identity_violations > 0, "no random scenario broke pod identity");
}

#[test]
fn random_scenarios_give_the_same_trace_natively_and_under_wasmtime() {
    let plugins = wasm_plugins();
    for seed in 0..WASM_SCENARIOS {
        let scenario = random_scenario(seed);
        let native = run(&scenario);
        let wasm = run_wasm(&scenario, &plugins);
        if native.hash() != wasm.hash() {
            let first = native
                .entries
                .iter()
                .zip(&wasm.entries)
                .find(|(a, b)| serde_json::to_string(a).unwrap() != serde_json::to_string(b).unwrap());
            panic!("reproduce with seed={seed}: traces differ; first difference: {first:#?}\n{}", random_yaml(seed));
        }
    }
}
