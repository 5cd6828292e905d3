//! Simulator throughput: the #59848 workload scaled to many nodes and pods.
//!
//! Run with `cargo xtask bench` (or `cargo bench -p recon-sim`). Each case
//! reports trace entries per second; the README of BENCHMARKS.md explains
//! how to read the numbers.

use recon_scenario::Scenario;
use recon_sim::Sim;

fn main() {
    divan::main();
}

/// The #59848 story at scale: `nodes` nodes with a kubelet each, a
/// ReplicaSet of `pods` pods and a StatefulSet, a partitioned second API
/// server, a cordon and rolling update, and a kubelet restart that relists
/// from the stale cache.
fn scaled(nodes: usize, pods: usize) -> Scenario {
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

fn run(scenario: &Scenario) -> usize {
    let mut sim = Sim::new(scenario, Box::new(|c| recon_catalog::instantiate(&c.controller))).expect("builds");
    sim.run();
    sim.trace().entries.len()
}

/// The shipped #59848 scenario, as a baseline.
#[divan::bench]
fn pod_safety_59848(bencher: divan::Bencher) {
    let text = include_str!("../../../scenarios/pod-safety-59848.yaml");
    let scenario = recon_scenario::parse("pod-safety-59848.yaml", text).expect("valid");
    let entries = run(&scenario);
    bencher.counter(divan::counter::ItemsCount::new(entries)).bench(|| run(&scenario));
}

/// The scaled workload: (nodes, pods).
#[divan::bench(args = [(10, 100), (50, 500), (100, 2000)], sample_count = 5, sample_size = 1)]
fn scaled_59848(bencher: divan::Bencher, (nodes, pods): (usize, usize)) {
    let scenario = scaled(nodes, pods);
    let entries = run(&scenario);
    bencher.counter(divan::counter::ItemsCount::new(entries)).bench(|| run(&scenario));
}
