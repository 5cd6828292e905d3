//! A cluster of any size, as a scenario file: the scale benchmark's cluster
//! (issue 17), and what `recon cluster --nodes N --pods P` writes for a
//! controller author to run their own controller at scale
//! (`recon run cluster.yaml --plugin replicaset-controller=mine.wasm`).
//!
//! `nodes` nodes with a kubelet each, spread over three API servers (the
//! second and third with lagging watch caches), and `pods` pods in
//! Deployments of at most [`PODS_PER_DEPLOYMENT`] pods, run by the built-in
//! scheduler, Deployment and ReplicaSet controllers. The story, the same at
//! every size: the cluster starts and settles; at 1 minute every Deployment
//! rolls out a new image; at 2 minutes a kubelet restarts onto the most
//! stale API server and the scheduler restarts; the run ends at 5 virtual
//! minutes. Kubernetes tests itself up to 5,000 nodes and 150,000 pods
//! ("Considerations for large clusters" in its documentation).

use recon_scenario::{Node, PluginLimits, RunLimits};

/// Pods one node of the cluster holds: a scenario node's default, the
/// kubelet's `--max-pods` default.
pub const PODS_PER_NODE: u64 = Node::DEFAULT_PODS as u64;

/// The largest cluster Kubernetes tests ("Considerations for large
/// clusters" in its documentation): nodes, then pods.
pub const PUBLISHED_LIMITS: (u64, u64) = (5_000, 150_000);

/// Pods per Deployment, at most.
pub const PODS_PER_DEPLOYMENT: usize = 1_000;

/// The trace limit: the ceiling scenarios may ask for, since the largest
/// size writes millions of entries.
pub const MAX_TRACE_ENTRIES: u64 = RunLimits::MAX_TRACE_ENTRIES;

/// Each Wasm plugin's memory: the most a scenario may give. The default
/// (64 MiB) holds a few thousand pods in a controller's informer cache;
/// the ReplicaSet controller's cache of 30,000 pods does not fit in it.
pub const PLUGIN_MEMORY_BYTES: u64 = PluginLimits::MAX_MEMORY_BYTES;

/// Fuel per plugin call, for each pod in the cluster, on top of the
/// default (`limits.plugins.fuelPerCall`). A controller's first call
/// is handed every pod at once (the scheduler binds them all in it), and
/// decoding and answering a pod costs a Wasm plugin about 100,000
/// instructions: at 300 nodes and 9,000 pods the default billion ran out.
pub const FUEL_PER_CALL_PER_POD: u64 = 500_000;

/// Output bytes per plugin call, for each pod in the cluster: a create
/// of one pod from its template is about 1,200 bytes, and the ReplicaSet
/// controller's first call at 5,000 nodes returns 60.8 MB of them.
pub const OUTPUT_BYTES_PER_POD: u64 = 2_000;

/// The limits a Wasm plugin runs under in a cluster of `pods` pods, as a
/// scenario's `limits.plugins`: [`PLUGIN_MEMORY_BYTES`], fuel per call
/// that grows with the pods, as many actions in one call as there are
/// pods (the ReplicaSet controller creates 10,521 in its first call at
/// 1,000 nodes, above the default 10,000), and output for them. Built-in
/// controllers run natively under no such limits; a plugin that hit one
/// would crash, and the run would differ from the native one.
pub fn plugin_limits(pods: usize) -> String {
    let pods = pods as u64;
    let fuel =
        (PluginLimits::DEFAULT_FUEL_PER_CALL + FUEL_PER_CALL_PER_POD * pods).min(PluginLimits::MAX_FUEL_PER_CALL);
    let actions = pods.clamp(u64::from(PluginLimits::DEFAULT_MAX_ACTIONS_PER_CALL), PluginLimits::MAX_ACTIONS_PER_CALL);
    let output =
        (OUTPUT_BYTES_PER_POD * pods).clamp(PluginLimits::DEFAULT_MAX_OUTPUT_BYTES, PluginLimits::MAX_OUTPUT_BYTES);
    format!(
        "{{ memoryBytes: {PLUGIN_MEMORY_BYTES}, fuelPerCall: {fuel}, maxActionsPerCall: {actions}, \
         maxOutputBytes: {output} }}"
    )
}

/// The API servers, with each one's watch-cache lag.
const API_SERVERS: [(&str, &str); 3] = [("apiserver-1", "0ms"), ("apiserver-2", "50ms"), ("apiserver-3", "2s")];

/// The components that are not kubelets: (name, built-in controller).
/// `recon run --plugin NAME=FILE.wasm` runs one from a plugin instead.
pub const CONTROL_PLANE: [(&str, &str); 3] =
    [("scheduler", "scheduler"), ("deployment-controller", "deployment"), ("replicaset-controller", "replicaset")];

/// Why there is no cluster of `nodes` nodes and `pods` pods: its pods do
/// not fit on its nodes, [`PODS_PER_NODE`] to a node. `None` when it fits.
pub fn refusal(nodes: u64, pods: u64) -> Option<String> {
    (!fits(nodes, pods)).then(|| {
        format!(
            "{pods} pods do not fit on {nodes} nodes of {PODS_PER_NODE} pods each (Kubernetes' default); \
             give at least {} nodes",
            pods.div_ceil(PODS_PER_NODE)
        )
    })
}

/// Whether `pods` pods fit on `nodes` nodes, [`PODS_PER_NODE`] to a node.
pub fn fits(nodes: u64, pods: u64) -> bool {
    pods <= nodes.saturating_mul(PODS_PER_NODE)
}

/// Whether a cluster of `nodes` nodes and `pods` pods is within
/// [`PUBLISHED_LIMITS`].
pub fn within_published_limits(nodes: u64, pods: u64) -> bool {
    let (max_nodes, max_pods) = PUBLISHED_LIMITS;
    nodes <= max_nodes && pods <= max_pods
}

/// The cluster's scenario name, `scale-{nodes}-nodes-{pods}-pods`: what
/// its file's `name:` says, and how the playground's menu and address
/// name it.
pub fn name(nodes: usize, pods: usize) -> String {
    format!("scale-{nodes}-nodes-{pods}-pods")
}

/// The size of the cluster [`name`] gives `name`, if it is such a name
/// (written as [`name`] writes it, without leading zeros) and its pods fit
/// its nodes.
pub fn size_of(name: &str) -> Option<(usize, usize)> {
    let (nodes, pods) = name.strip_prefix("scale-")?.strip_suffix("-pods")?.split_once("-nodes-")?;
    let (nodes, pods) = (nodes.parse().ok()?, pods.parse().ok()?);
    let canonical = self::name(nodes, pods) == name;
    (canonical && fits(nodes as u64, pods as u64)).then_some((nodes, pods))
}

/// The cluster of `nodes` nodes and `pods` pods as a scenario file.
pub fn yaml(nodes: usize, pods: usize) -> String {
    let deployments = pods.div_ceil(PODS_PER_DEPLOYMENT).max(1);
    let in_deployments =
        if deployments == 1 { "1 Deployment".to_owned() } else { format!("{deployments} Deployments") };
    let plugins = plugin_limits(pods);
    let name = name(nodes, pods);
    let mut y = format!(
        "# Generated by `recon cluster --nodes {nodes} --pods {pods}`.\n\
         name: {name}\n\
         description: |\n  \
           {nodes} nodes over three API servers and {pods} pods in {in_deployments}: every\n  \
           Deployment rolls out a new image at 1m; a kubelet restarts onto the lagging apiserver-3 and\n  \
           the scheduler restarts at 2m.\n\
         seed: 1\n\
         duration: 5m\n\
         limits: {{ maxTraceEntries: {MAX_TRACE_ENTRIES}, plugins: {plugins} }}\n\
         apiServers:\n"
    );
    for (name, lag) in API_SERVERS {
        y += &format!("  - {{ name: {name}, watchCache: {{ lag: {lag} }} }}\n");
    }
    y += "nodes:\n";
    for n in 1..=nodes {
        y += &format!("  - name: node-{n}\n");
    }
    y += "components:\n";
    for (name, controller) in CONTROL_PLANE {
        y += &format!("  - {{ name: {name}, controller: {controller}, apiServer: apiserver-1 }}\n");
    }
    for n in 1..=nodes {
        let server = API_SERVERS[n % 2].0;
        y += &format!("  - {{ name: kubelet-node-{n}, controller: kubelet, node: node-{n}, apiServer: {server} }}\n");
    }
    y += "objects:\n";
    let share = |d: usize| pods / deployments + usize::from(d < pods % deployments);
    for d in 0..deployments {
        y += &format!("  - {}\n", deployment(d, share(d), 0));
    }
    y += "script:\n";
    for d in 0..deployments {
        y += &format!("  - {{ at: 60s, apply: {} }}\n", deployment(d, share(d), 1));
    }
    y += "  - { at: 120s, restart: { component: kubelet-node-1, apiServer: apiserver-3 } }\n";
    y += "  - { at: 120s, restart: { component: scheduler } }\n";
    y
}

/// Deployment `app-{d}` with `replicas` pods running image version
/// `version`, as a scenario's flow-style object.
pub fn deployment(d: usize, replicas: usize, version: usize) -> String {
    format!(
        "{{ apiVersion: apps/v1, kind: Deployment, metadata: {{ name: app-{d} }}, spec: {{ replicas: {replicas}, \
         selector: {{ matchLabels: {{ app: app-{d} }} }}, template: {{ metadata: {{ labels: {{ app: app-{d} }} }}, \
         spec: {{ containers: [ {{ name: app, image: \"app:{version}\" }} ] }} }} }} }}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(nodes: usize, pods: usize) -> recon_scenario::Scenario {
        recon_scenario::parse("cluster.yaml", &yaml(nodes, pods)).unwrap_or_else(|e| panic!("invalid: {e}"))
    }

    #[test]
    fn the_pods_are_shared_out_exactly_and_the_scenario_is_valid() {
        let scenario = scenario(7, 2_501);
        assert_eq!(scenario.nodes.len(), 7);
        assert_eq!(scenario.components.len(), 3 + 7);
        let replicas: u64 =
            scenario.objects.iter().map(|o| o.spec["replicas"].as_u64().expect("a Deployment's replicas")).sum();
        assert_eq!(replicas, 2_501);
        assert_eq!(scenario.objects.len(), 3, "Deployments of at most 1,000 pods");
    }

    /// A cluster's name gives its size back, and nothing else is a
    /// cluster's name: other spellings of the numbers, other words, and
    /// pods that do not fit.
    #[test]
    fn a_clusters_name_gives_its_size_back_and_only_its_own_spelling_does() {
        assert_eq!(name(1_000, 30_000), "scale-1000-nodes-30000-pods");
        assert_eq!(scenario(3, 30).name, name(3, 30), "the file's name is the cluster's name");
        for (nodes, pods) in [(1, 0), (1, 110), (1_000, 30_000), (5_000, 150_000)] {
            assert_eq!(size_of(&name(nodes, pods)), Some((nodes, pods)));
        }
        for not_one in [
            "scale-01-nodes-30-pods",
            "scale-+1-nodes-30-pods",
            "scale-1-nodes-111-pods",
            "scale-1-nodes-30-pod",
            "scale--nodes-30-pods",
            "scale-1-nodes--pods",
            "scale-99999999999999999999-nodes-1-pods",
            "pod-safety-59848",
            "",
        ] {
            assert_eq!(size_of(not_one), None, "{not_one:?}");
        }
    }

    /// Pods fit their nodes up to Kubernetes' default of 110 a node; one
    /// more is refused with the nodes it would take.
    #[test]
    fn pods_beyond_110_a_node_are_refused_with_the_nodes_they_need() {
        assert_eq!(refusal(10, 1_100), None);
        let refused = refusal(10, 1_101).expect("one pod too many");
        assert!(refused.contains("give at least 11 nodes"), "{refused}");
        assert!(refusal(0, 1).is_some());
        assert_eq!(refusal(0, 0), None);
        assert!(refusal(u64::MAX, u64::MAX).is_none(), "no overflow");
    }

    /// Kubernetes' published limits are inside them, one more node or pod
    /// is not.
    #[test]
    fn the_published_limits_are_5000_nodes_and_150000_pods() {
        assert!(within_published_limits(5_000, 150_000));
        assert!(!within_published_limits(5_001, 0));
        assert!(!within_published_limits(0, 150_001));
    }

    /// A plugin's limits never fall below the defaults, grow with the
    /// pods, and stop at the most a scenario may ask for (which validation
    /// checks: the published limits' cluster parses).
    #[test]
    fn plugin_limits_grow_with_the_pods_between_the_default_and_the_most() {
        let small = scenario(1, 10).limits.plugins;
        assert_eq!(small.fuel_per_call, Some(PluginLimits::DEFAULT_FUEL_PER_CALL + 10 * FUEL_PER_CALL_PER_POD));
        assert_eq!(small.max_actions_per_call, Some(PluginLimits::DEFAULT_MAX_ACTIONS_PER_CALL));
        assert_eq!(small.max_output_bytes, Some(PluginLimits::DEFAULT_MAX_OUTPUT_BYTES));
        let published = scenario(5_000, 150_000).limits.plugins;
        assert_eq!(published.max_actions_per_call, Some(150_000));
        // 300 MB for 150,000 pods, held to the most a scenario may ask.
        assert_eq!(published.max_output_bytes, Some(PluginLimits::MAX_OUTPUT_BYTES));
        let middle = scenario(1_000, 30_000).limits.plugins;
        assert_eq!(middle.max_output_bytes, Some(30_000 * OUTPUT_BYTES_PER_POD));
        let huge = plugin_limits(10_000_000);
        assert!(huge.contains(&format!("fuelPerCall: {},", PluginLimits::MAX_FUEL_PER_CALL)), "{huge}");
        assert!(huge.contains(&format!("maxActionsPerCall: {},", PluginLimits::MAX_ACTIONS_PER_CALL)), "{huge}");
        assert!(huge.contains(&format!("maxOutputBytes: {} ", PluginLimits::MAX_OUTPUT_BYTES)), "{huge}");
    }
}
