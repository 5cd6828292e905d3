//! The safety checks against hand-built histories: node agents that start
//! and stop exactly the containers a test says, when it says, so that the
//! checks' verdicts can be compared with a reference written out here.
//!
//! - Named histories: each check fires where it must and stays quiet where
//!   it must (a checker that can never fire is a bug).
//! - Random histories (seeded; a failure prints "reproduce with seed=…"):
//!   the pod-identity and StatefulSet-ordinal verdicts equal the reference
//!   model's, violation for violation.

use std::collections::BTreeMap;

use recon_abi::{
    Action, ComponentConfig, Crash, Input, InputEvent, Instance, Manifest, Object, OwnerReference, PodRef, Verb,
    WatchSpec, WritePermission,
};
use recon_scenario::Check;
use recon_sim::rng::Rng;
use recon_sim::{Event, Sim, Trace};

/// The pods in the store: (namespace, name, owning StatefulSet, ordinal
/// label). The ordinal comes from the label, else from the name's suffix.
const PODS: [(&str, &str, Option<&str>, Option<&str>); 6] = [
    ("default", "web-0", Some("web"), None),
    ("default", "web-1", Some("web"), None),
    // Ordinal 0 by its label, whatever its name says.
    ("default", "web-x", Some("web"), Some("0")),
    // Same set name and ordinal, other namespace: another StatefulSet.
    ("other", "web-0", Some("web"), None),
    ("default", "db-0", Some("db"), None),
    ("default", "solo", None, None),
];

const NODES: usize = 3;

/// One step of a history: at `at_ms`, `node` starts or stops a container
/// for pod `pod` (an index into [`PODS`]); `ghost` names an incarnation the
/// store has never held (uid `ghost-N`), else it is the stored pod's uid.
#[derive(Clone, Copy, Debug)]
struct Op {
    at_ms: u64,
    node: usize,
    start: bool,
    pod: usize,
    ghost: Option<u8>,
}

fn start(at_ms: u64, node: usize, pod: usize) -> Op {
    Op { at_ms, node, start: true, pod, ghost: None }
}

fn stop(at_ms: u64, node: usize, pod: usize) -> Op {
    Op { at_ms, node, start: false, pod, ghost: None }
}

fn ghost(at_ms: u64, node: usize, pod: usize, n: u8) -> Op {
    Op { at_ms, node, start: true, pod, ghost: Some(n) }
}

/// A node agent that does nothing but its node's steps of the history.
struct Agent {
    ops: Vec<(usize, Op)>,
    uids: BTreeMap<(String, String), String>,
    scheduled: bool,
}

impl Instance for Agent {
    fn init(&mut self, _: &ComponentConfig) -> Result<Manifest, Crash> {
        Ok(Manifest {
            name: "agent".into(),
            abi_version: recon_abi::ABI_VERSION,
            watches: vec![WatchSpec { kind: "Pod".into(), ..Default::default() }],
            node_agent: true,
            ..Default::default()
        })
    }

    fn handle(&mut self, input: &Input) -> Result<recon_abi::Output, Crash> {
        let mut actions = Vec::new();
        for event in &input.events {
            match event {
                InputEvent::Listed { objects, .. } => {
                    for o in objects {
                        let key = (o.metadata.namespace.clone(), o.metadata.name.clone());
                        self.uids.insert(key, o.metadata.uid.clone());
                    }
                    if !self.scheduled {
                        self.scheduled = true;
                        for (i, op) in &self.ops {
                            assert!(op.at_ms > input.time_ms, "history step {i} is before the agent listed");
                            actions
                                .push(Action::RequeueAfter { key: i.to_string(), after_ms: op.at_ms - input.time_ms });
                        }
                    }
                }
                InputEvent::Timer { key } => {
                    let i: usize = key.parse().expect("timer keys are step numbers");
                    let op = self.ops.iter().find(|(j, _)| *j == i).expect("own step").1;
                    let pod = pod_ref(op, |ns, name| self.uids[&(ns.to_string(), name.to_string())].clone());
                    actions.push(if op.start { Action::StartContainer { pod } } else { Action::StopContainer { pod } });
                }
                _ => {}
            }
        }
        Ok(recon_abi::Output::new(actions))
    }
}

/// The incarnation a step is about.
fn pod_ref(op: Op, uid: impl Fn(&str, &str) -> String) -> PodRef {
    let (namespace, name, _, _) = PODS[op.pod];
    let uid = match op.ghost {
        Some(n) => format!("ghost-{n}"),
        None => uid(namespace, name),
    };
    PodRef { namespace: namespace.into(), name: name.into(), uid }
}

/// The scenario: `NODES` nodes with an agent each, and the pods of [`PODS`].
fn history_scenario(duration_ms: u64) -> recon_scenario::Scenario {
    let mut y = format!("name: checks\nduration: {duration_ms}ms\napiServers: [ {{ name: a }} ]\nnodes:\n");
    for n in 1..=NODES {
        y += &format!("  - name: node-{n}\n");
    }
    y += "components:\n";
    for n in 1..=NODES {
        y += &format!("  - {{ name: agent-{n}, controller: agent, node: node-{n}, apiServer: a }}\n");
    }
    y += "objects:\n";
    for (ns, name, set, index) in PODS {
        let mut meta = format!("name: {name}, namespace: {ns}");
        if let Some(set) = set {
            meta += &format!(
                ", ownerReferences: [ {{ apiVersion: apps/v1, kind: StatefulSet, name: {set}, uid: {set}-uid, controller: true }} ]"
            );
        }
        if let Some(i) = index {
            meta += &format!(", labels: {{ apps.kubernetes.io/pod-index: \"{i}\" }}");
        }
        y += &format!("  - {{ apiVersion: v1, kind: Pod, metadata: {{ {meta} }} }}\n");
    }
    recon_scenario::parse("checks.yaml", &y).unwrap_or_else(|e| panic!("{e}\n{y}"))
}

/// Runs a history and returns the trace.
fn run_history(ops: &[Op]) -> Trace {
    let end = ops.iter().map(|o| o.at_ms).max().unwrap_or(0) + 1_000;
    let scenario = history_scenario(end);
    let ops: Vec<(usize, Op)> = ops.iter().copied().enumerate().collect();
    let mut sim = Sim::new(
        &scenario,
        Box::new(move |c| {
            let node: usize = c.node.as_deref()?.strip_prefix("node-")?.parse().ok()?;
            let mine = ops.iter().filter(|(_, op)| op.node + 1 == node).copied().collect();
            Some(Box::new(Agent { ops: mine, uids: BTreeMap::new(), scheduled: false }) as Box<dyn Instance>)
        }),
    )
    .expect("the history scenario builds");
    sim.run();
    sim.into_trace()
}

/// A verdict, told by what it points at: the check, the container start
/// that broke it, and the one it clashes with (node index, pod).
type Verdict = (Check, (usize, PodRef), (usize, PodRef));

fn node_index(node: &str) -> usize {
    node.strip_prefix("node-").and_then(|n| n.parse::<usize>().ok()).expect("node-N") - 1
}

/// The container start an entry records.
fn started(trace: &Trace, id: u64) -> (usize, PodRef) {
    match &trace.get(id).expect("cause exists").event {
        Event::ContainerStarted { node, pod } => (node_index(node), (**pod).clone()),
        other => panic!("a container check's cause is not a container start: {other:?}"),
    }
}

/// The simulator's verdicts on container checks, in order.
fn verdicts(trace: &Trace) -> Vec<Verdict> {
    trace
        .violations()
        .filter(|(_, check, _)| matches!(check, Check::PodIdentity | Check::StatefulSetOrdinals))
        .map(|(entry, check, message)| {
            assert_eq!(entry.causes.len(), 2, "{message}");
            (check, started(trace, entry.causes[0]), started(trace, entry.causes[1]))
        })
        .collect()
}

/// A StatefulSet pod's namespace, set name and ordinal.
type Ordinal = (String, String, u64);

/// The reference: which starts break which check, from the definitions.
/// `uid` gives a stored pod's uid.
fn reference(ops: &[Op], uid: impl Fn(&str, &str) -> String) -> Vec<Verdict> {
    // What runs on each node, with the pod's (namespace, set, ordinal) if
    // the incarnation is the stored StatefulSet pod.
    let mut running: Vec<BTreeMap<PodRef, Option<Ordinal>>> = vec![BTreeMap::new(); NODES];
    let mut verdicts = Vec::new();
    let mut ops = ops.to_vec();
    ops.sort_by_key(|o| o.at_ms);
    for op in ops {
        let pod = pod_ref(op, &uid);
        if !op.start {
            running[op.node].remove(&pod);
            continue;
        }
        if running[op.node].contains_key(&pod) {
            continue; // already running there: nothing starts
        }
        let (ns, name, set, index) = PODS[op.pod];
        let ordinal = match (set, op.ghost) {
            (Some(set), None) => {
                let i = index.map(str::to_string).or_else(|| name.strip_prefix(&format!("{set}-")).map(str::to_string));
                i.and_then(|i| i.parse().ok()).map(|i| (ns.to_string(), set.to_string(), i))
            }
            _ => None,
        };
        running[op.node].insert(pod.clone(), ordinal.clone());
        let me = (op.node, pod.clone());
        for (m, node) in running.iter().enumerate().filter(|(m, _)| *m != op.node) {
            for other in node.keys().filter(|p| p.namespace == pod.namespace && p.name == pod.name) {
                verdicts.push((Check::PodIdentity, me.clone(), (m, other.clone())));
            }
        }
        if ordinal.is_some() {
            for (m, node) in running.iter().enumerate() {
                for (other, o) in node {
                    if *o == ordinal && !(m == op.node && *other == pod) {
                        verdicts.push((Check::StatefulSetOrdinals, me.clone(), (m, other.clone())));
                    }
                }
            }
        }
    }
    verdicts
}

/// The uid each stored pod got, read from the trace's container starts.
fn uids(trace: &Trace) -> impl Fn(&str, &str) -> String {
    let mut uids = BTreeMap::new();
    for e in &trace.entries {
        if let Event::StoreWrite { key, uid, .. } = &e.event {
            uids.insert((key.namespace.clone(), key.name.clone()), uid.clone());
        }
    }
    move |ns: &str, name: &str| uids[&(ns.to_string(), name.to_string())].to_string()
}

/// Runs a history and checks the simulator's verdicts against the reference.
fn check_history(ops: &[Op], context: &str) -> Vec<Verdict> {
    let trace = run_history(ops);
    let got = verdicts(&trace);
    let want = reference(ops, uids(&trace));
    assert_eq!(got, want, "{context}");
    let starts = trace.entries.iter().filter(|e| matches!(e.event, Event::ContainerStarted { .. })).count();
    assert!(starts > 0 || ops.iter().all(|o| !o.start), "no container started; {context}");
    got
}

fn count(verdicts: &[Verdict], check: Check) -> usize {
    verdicts.iter().filter(|v| v.0 == check).count()
}

#[test]
fn pod_identity_fires_when_a_second_node_starts_the_same_pod_name() {
    // node-1 runs web-0; node-2 starts a different incarnation of it.
    let v = check_history(&[start(1_000, 0, 0), ghost(1_100, 1, 0, 1)], "web-0 on two nodes");
    assert_eq!(count(&v, Check::PodIdentity), 1);
    // A third node makes two more pairs.
    let v = check_history(&[start(1_000, 0, 0), ghost(1_100, 1, 0, 1), ghost(1_200, 2, 0, 2)], "three nodes");
    assert_eq!(count(&v, Check::PodIdentity), 3);
}

#[test]
fn pod_identity_stays_quiet_for_a_move_a_restart_and_another_namespace() {
    let moved = [start(1_000, 0, 0), stop(1_100, 0, 0), ghost(1_200, 1, 0, 1)];
    let restarted = [start(1_000, 0, 0), start(1_100, 0, 0)];
    let namespaces = [start(1_000, 0, 0), start(1_100, 1, 3)];
    for (ops, what) in [(&moved[..], "moved"), (&restarted[..], "started twice on one node"), (&namespaces[..], "ns")] {
        assert!(check_history(ops, what).is_empty(), "{what}");
    }
}

#[test]
fn statefulset_ordinals_fire_for_two_live_pods_with_one_ordinal() {
    // web-x carries ordinal 0 in its label: on the same node as web-0, the
    // names differ (no identity problem) but the ordinal is taken twice.
    let v = check_history(&[start(1_000, 0, 0), start(1_100, 0, 2)], "web-0 and web-x");
    assert_eq!((count(&v, Check::StatefulSetOrdinals), count(&v, Check::PodIdentity)), (1, 0));
    // The #59848 shape: the same stored pod on two nodes breaks both.
    let v = check_history(&[start(1_000, 0, 0), start(1_100, 1, 0)], "web-0 twice");
    assert_eq!((count(&v, Check::StatefulSetOrdinals), count(&v, Check::PodIdentity)), (1, 1));
}

#[test]
fn statefulset_ordinals_stay_quiet_for_other_ordinals_sets_namespaces_and_strangers() {
    let cases: [(&[Op], &str); 4] = [
        (&[start(1_000, 0, 0), start(1_100, 1, 1)], "ordinals 0 and 1"),
        (&[start(1_000, 0, 0), start(1_100, 1, 4)], "web-0 and db-0"),
        (&[start(1_000, 0, 0), start(1_100, 1, 3)], "default/web-0 and other/web-0"),
        // An incarnation the store never held has no owner to take an ordinal from.
        (&[start(1_000, 0, 2), ghost(1_100, 0, 0, 1)], "web-x and a ghost web-0"),
    ];
    for (ops, what) in cases {
        assert_eq!(count(&check_history(ops, what), Check::StatefulSetOrdinals), 0, "{what}");
    }
}

#[test]
fn container_checks_match_the_reference_over_random_histories() {
    let mut fired = [0; 2];
    for seed in 0..40 {
        let mut rng = Rng::new(seed);
        let steps = rng.range_inclusive(4, 24);
        let ops: Vec<Op> = (0..steps)
            .map(|i| {
                let r = |rng: &mut Rng, n: u64| rng.range_inclusive(0, n - 1) as usize;
                Op {
                    at_ms: 1_000 + 20 * i,
                    node: r(&mut rng, NODES as u64),
                    start: r(&mut rng, 10) < 7,
                    pod: r(&mut rng, PODS.len() as u64),
                    ghost: (r(&mut rng, 10) < 3).then(|| r(&mut rng, 2) as u8),
                }
            })
            .collect();
        let v = check_history(&ops, &format!("reproduce with seed={seed}: {ops:?}"));
        fired[0] += count(&v, Check::PodIdentity);
        fired[1] += count(&v, Check::StatefulSetOrdinals);
    }
    // The histories must exercise both checks, or the comparison proves little.
    assert!(fired[0] >= 10 && fired[1] >= 10, "fired {fired:?}");
}

/// A controller that only watches pods: an observer of revisions.
struct Watcher;

impl Instance for Watcher {
    fn init(&mut self, _: &ComponentConfig) -> Result<Manifest, Crash> {
        Ok(Manifest {
            name: "watcher".into(),
            abi_version: recon_abi::ABI_VERSION,
            watches: vec![WatchSpec { kind: "Pod".into(), ..Default::default() }],
            ..Default::default()
        })
    }

    fn handle(&mut self, _: &Input) -> Result<recon_abi::Output, Crash> {
        Ok(recon_abi::Output::default())
    }
}

/// A watcher that twice restarts onto an API server whose cache froze
/// behind what it had already seen (at 3s and at 9s), and in between
/// restarts onto the fresh one. `extra` is appended to the file.
fn time_travel_history(list_mode: &str, extra: &str) -> Vec<String> {
    let pod = |name: &str| format!("{{ apiVersion: v1, kind: Pod, metadata: {{ name: {name} }} }}");
    let yaml = format!(
        "name: time-travel\nduration: 12s\napiServers:\n  - name: a\n  - name: b\n    partitions: [ {{ from: 500ms, until: 5s }}, {{ from: 7s }} ]\n\
         components:\n  - {{ name: w, controller: watcher, apiServer: a, listMode: {list_mode} }}\nscript:\n\
         \x20 - {{ at: 1s, create: {} }}\n  - {{ at: 1500ms, create: {} }}\n\
         \x20 - {{ at: 3s, restart: {{ component: w, apiServer: b }} }}\n\
         \x20 - {{ at: 6s, restart: {{ component: w, apiServer: a }} }}\n\
         \x20 - {{ at: 7500ms, create: {} }}\n\
         \x20 - {{ at: 9s, restart: {{ component: w, apiServer: b }} }}\n{extra}",
        pod("p1"),
        pod("p2"),
        pod("p3"),
    );
    let scenario = recon_scenario::parse("time-travel.yaml", &yaml).unwrap_or_else(|e| panic!("{e}\n{yaml}"));
    let mut sim = Sim::new(&scenario, Box::new(|_| Some(Box::new(Watcher) as Box<dyn Instance>))).unwrap();
    sim.run();
    let trace = sim.into_trace();
    trace.violations().filter(|(_, c, _)| *c == Check::TimeTravel).map(|(_, _, m)| m.to_string()).collect()
}

#[test]
fn time_travel_fires_once_per_restart_onto_a_frozen_cache() {
    let found = time_travel_history("any", "");
    assert_eq!(found.len(), 2, "{found:#?}");
    assert!(found.iter().all(|m| m.starts_with("w went back in time") && m.contains("from b")), "{found:#?}");
}

#[test]
fn time_travel_stays_quiet_for_quorum_lists_and_when_disabled() {
    // A quorum read cannot be answered by a partitioned server: refused, not stale.
    assert_eq!(time_travel_history("quorum", ""), Vec::<String>::new());
    // The same stale lists, with the check turned off.
    let off = "checks:\n  enabled: [podIdentity]\n";
    assert_eq!(time_travel_history("any", off), Vec::<String>::new());
}

/// A workload controller gone wrong on purpose. When it first lists its
/// workloads (of `kind`: ReplicaSet, StatefulSet or Deployment) it makes
/// `creates[j]` pods named `{set}-{i}` for the j-th set it lists, controlled
/// by that set; for a Deployment it first creates a ReplicaSet `{name}-{j}`
/// owned by it for each `creates[j]` (two would be a Deployment controller
/// that acted twice on one stale view), and makes the pods of each once it
/// is stored. `delete_after` ms after the list it deletes the first
/// `deletes` pods of the first set.
struct Creator {
    kind: &'static str,
    creates: Vec<usize>,
    deletes: usize,
    delete_after: Option<u64>,
    /// The first set the pods were made for.
    first_set: Option<String>,
}

impl Creator {
    /// `count` pods for `set`, controlled by it.
    fn pods_for(&mut self, set: &Object, count: usize) -> Vec<Action> {
        self.first_set.get_or_insert_with(|| set.metadata.name.clone());
        let owner = controller_reference(set);
        (0..count)
            .map(|i| {
                let mut pod = Object { api_version: "v1".into(), kind: "Pod".into(), ..Default::default() };
                pod.metadata.namespace = "default".into();
                pod.metadata.name = format!("{}-{i}", set.metadata.name);
                pod.metadata.owner_references = vec![owner.clone()].into();
                Action::Create { object: pod, dry_run: false }
            })
            .collect()
    }
}

/// A controller owner reference to `object`.
fn controller_reference(object: &Object) -> OwnerReference {
    OwnerReference {
        api_version: "apps/v1".into(),
        kind: object.kind.clone(),
        name: object.metadata.name.clone(),
        uid: object.metadata.uid.clone(),
        controller: true,
        block_owner_deletion: false,
    }
}

impl Instance for Creator {
    fn init(&mut self, _: &ComponentConfig) -> Result<Manifest, Crash> {
        Ok(Manifest {
            name: "creator".into(),
            abi_version: recon_abi::ABI_VERSION,
            watches: vec![WatchSpec { kind: self.kind.into(), ..Default::default() }],
            writes: vec![
                WritePermission { kind: "Pod".into(), verbs: vec![Verb::Create, Verb::Delete] },
                WritePermission { kind: "ReplicaSet".into(), verbs: vec![Verb::Create] },
            ],
            ..Default::default()
        })
    }

    fn handle(&mut self, input: &Input) -> Result<recon_abi::Output, Crash> {
        let mut actions = Vec::new();
        for event in &input.events {
            match event {
                InputEvent::Listed { objects, .. } if !self.creates.is_empty() => {
                    let creates = std::mem::take(&mut self.creates);
                    match objects.first() {
                        // The pods are made for its ReplicaSets once they are stored.
                        Some(deployment) if deployment.kind == "Deployment" => {
                            actions.extend(creates.iter().enumerate().map(|(j, replicas)| {
                                let mut set = Object {
                                    api_version: "apps/v1".into(),
                                    kind: "ReplicaSet".into(),
                                    ..Default::default()
                                };
                                set.metadata.namespace = "default".into();
                                set.metadata.name = format!("{}-{j}", deployment.metadata.name);
                                set.metadata.owner_references = vec![controller_reference(deployment)].into();
                                set.spec = serde_json::json!({ "replicas": replicas }).into();
                                Action::Create { object: set, dry_run: false }
                            }))
                        }
                        _ => {
                            for (set, count) in objects.iter().zip(creates) {
                                actions.extend(self.pods_for(set, count));
                            }
                        }
                    }
                    if let Some(after_ms) = self.delete_after.take() {
                        actions.push(Action::RequeueAfter { key: "delete".into(), after_ms });
                    }
                }
                InputEvent::Result(result)
                    if let recon_abi::Outcome::Ok(Some(set)) = &result.outcome
                        && set.kind == "ReplicaSet" =>
                {
                    let replicas = set.spec["replicas"].as_u64().unwrap_or(1) as usize;
                    actions.extend(self.pods_for(set, replicas));
                }
                InputEvent::Timer { .. } => {
                    let set = self.first_set.clone().expect("pods were made before the delete");
                    actions.extend((0..self.deletes).map(|i| Action::Delete {
                        key: recon_abi::ObjectKey::new("Pod", "default", format!("{set}-{i}")),
                        uid: None,
                        resource_version: None,
                        grace_period_seconds: Some(0),
                        propagation_policy: None,
                        dry_run: false,
                    }))
                }
                _ => {}
            }
        }
        Ok(recon_abi::Output::new(actions))
    }
}

/// One workload of `kind` named `rs` (a ReplicaSet), `web` (a StatefulSet)
/// or `app` (a Deployment), asking for `replicas` pods with the rest of its
/// spec `extra_spec` (a YAML flow mapping's entries, may be empty), and the
/// [`Creator`] (unless `creates` is empty), with only `check` enabled.
/// `deletes` pods are deleted at 1s. Returns the messages of `check`'s findings.
fn workload_history(
    kind: &'static str,
    replicas: u32,
    extra_spec: &str,
    creates: &[usize],
    deletes: usize,
    check: Check,
) -> Vec<String> {
    let creator =
        if creates.is_empty() { "" } else { "components: [ { name: creator, controller: creator, apiServer: a } ]\n" };
    let name = match kind {
        "ReplicaSet" => "rs",
        "StatefulSet" => "web",
        _ => "app",
    };
    let extra = if extra_spec.is_empty() { String::new() } else { format!(", {extra_spec}") };
    let check_name = serde_json::to_value(check).unwrap();
    let yaml = format!(
        "name: replicas\nduration: 5s\napiServers: [ {{ name: a }} ]\n{creator}objects:\n\
         \x20 - {{ apiVersion: apps/v1, kind: {kind}, metadata: {{ name: {name} }}, spec: {{ replicas: {replicas}, \
         selector: {{ matchLabels: {{ app: {name} }} }}, template: {{ metadata: {{ labels: {{ app: {name} }} }} }}{extra} }} }}\n\
         checks: {{ enabled: [ {} ] }}\n",
        check_name.as_str().unwrap()
    );
    let scenario = recon_scenario::parse("replicas.yaml", &yaml).unwrap_or_else(|e| panic!("{e}\n{yaml}"));
    let creates = creates.to_vec();
    let delete_after = (deletes > 0).then_some(1_000);
    let mut sim = Sim::new(
        &scenario,
        Box::new(move |_| {
            let creator = Creator { kind, creates: creates.clone(), deletes, delete_after, first_set: None };
            Some(Box::new(creator) as Box<dyn Instance>)
        }),
    )
    .unwrap();
    sim.run();
    let trace = sim.into_trace();
    trace.violations().filter(|(_, c, _)| *c == check).map(|(_, _, m)| m.to_string()).collect()
}

/// A ReplicaSet `rs` asking for `replicas`, `creates` pods made for it and
/// `deletes` of them deleted at 1s.
fn replica_history(replicas: u32, creates: usize, deletes: usize, check: Check) -> Vec<String> {
    let creates: &[usize] = if creates == 0 { &[] } else { &[creates] };
    workload_history("ReplicaSet", replicas, "", creates, deletes, check)
}

#[test]
fn replica_count_fires_once_when_a_write_crosses_spec_replicas() {
    let over = replica_history(1, 3, 0, Check::ReplicaCount);
    assert_eq!(over.len(), 1, "{over:#?}");
    assert!(over[0].starts_with("creator created pod default/rs-1"), "{over:#?}");
    let under = replica_history(2, 2, 1, Check::ReplicaCount);
    assert_eq!(under.len(), 1, "{under:#?}");
    assert!(under[0].starts_with("creator deleted pod default/rs-0"), "{under:#?}");
}

#[test]
fn replica_count_stays_quiet_when_the_writes_reach_spec_replicas() {
    assert_eq!(replica_history(2, 2, 0, Check::ReplicaCount), Vec::<String>::new());
}

// A StatefulSet "maintains" `replicas` pods and, in a rolling update, takes
// down at most `maxUnavailable` of them at a time, 1 by default
// (https://kubernetes.io/docs/concepts/workloads/controllers/statefulset/#maximum-unavailable-pods):
// a controller that deletes two pods of a three-replica set at once — a
// stale list showed five — left it below what it guarantees.
#[test]
fn replica_count_flags_a_stateful_set_left_two_pods_short() {
    let short = workload_history("StatefulSet", 3, "", &[3], 2, Check::ReplicaCount);
    assert_eq!(
        short,
        [
            "creator deleted pod default/web-1, but StatefulSet default/web wanted 3 (at most 1 fewer during an update): \
          it now has 1 live pods"
        ],
    );
    // One pod at a time, as a rolling update deletes them to recreate them: within the guarantee.
    assert_eq!(workload_history("StatefulSet", 3, "", &[3], 1, Check::ReplicaCount), Vec::<String>::new());
    // A set that allows two unavailable may lose two.
    let two = "updateStrategy: { rollingUpdate: { maxUnavailable: 2 } }";
    assert_eq!(workload_history("StatefulSet", 3, two, &[3], 2, Check::ReplicaCount), Vec::<String>::new());
}

#[test]
fn replica_count_flags_a_stateful_set_given_a_pod_above_spec_replicas() {
    let over = workload_history("StatefulSet", 2, "", &[3], 0, Check::ReplicaCount);
    assert_eq!(
        over,
        ["creator created pod default/web-2, but StatefulSet default/web wanted 2: it now has 3 live pods"]
    );
}

// A Deployment's rolling update keeps at most `maxSurge` pods above
// `replicas` across its ReplicaSets, 25% rounded up by default
// (https://kubernetes.io/docs/concepts/workloads/controllers/deployment/#max-surge):
// two ReplicaSets of three pods for a three-replica Deployment (a
// controller that created the new set twice on one stale view) is two
// pods too many, though each set has exactly what it asks for.
#[test]
fn replica_count_flags_a_deployment_whose_replica_sets_together_surge_too_far() {
    let over = workload_history("Deployment", 3, "", &[3, 3], 0, Check::ReplicaCount);
    assert_eq!(
        over,
        ["creator created pod default/app-1-1, but Deployment default/app (through ReplicaSet app-1) wanted 3 \
          (at most 1 more during a rollout): it now has 5 live pods"],
    );
    // Three old pods and one new: within the surge.
    assert_eq!(workload_history("Deployment", 3, "", &[3, 1], 0, Check::ReplicaCount), Vec::<String>::new());
    // With Recreate there is no surge at all.
    let recreate = "strategy: { type: Recreate }";
    let over = workload_history("Deployment", 3, recreate, &[3, 1], 0, Check::ReplicaCount);
    assert_eq!(over.len(), 1, "{over:#?}");
    assert!(over[0].starts_with("creator created pod default/app-1-0, but Deployment default/app"), "{over:#?}");
}

// `maxUnavailable` (25% of `replicas`, rounded down, by default) bounds how
// far below `replicas` a Deployment goes
// (https://kubernetes.io/docs/concepts/workloads/controllers/deployment/#max-unavailable).
#[test]
fn replica_count_flags_a_deployment_left_below_max_unavailable() {
    // Four replicas may lose one; the ReplicaSet's own band flags the first delete.
    let short = workload_history("Deployment", 4, "", &[4], 2, Check::ReplicaCount);
    assert_eq!(short.len(), 2, "{short:#?}");
    assert!(short[0].starts_with("creator deleted pod default/app-0-0, but ReplicaSet default/app-0 wanted 4"));
    assert_eq!(
        short[1],
        "creator deleted pod default/app-0-1, but Deployment default/app (through ReplicaSet app-0) wanted 4 \
         (at most 1 fewer during an update): it now has 2 live pods"
    );
}

#[test]
fn convergence_fires_for_a_replica_set_nobody_runs_and_not_for_an_empty_one() {
    let never = replica_history(2, 0, 0, Check::Convergence);
    assert_eq!(never.len(), 1, "{never:#?}");
    assert!(
        never[0].starts_with("never converged: ReplicaSet default/rs asks for 2 replicas, but 0 run"),
        "{never:#?}"
    );
    assert_eq!(replica_history(0, 0, 0, Check::Convergence), Vec::<String>::new());
}

/// A ConfigMap deleted by kubectl at 1s: with `finalizers` it is only
/// marked, and nobody removes them. Returns the stuck-deleting findings.
fn deletion_history(finalizers: &str, duration: &str) -> Vec<String> {
    let yaml = format!(
        "name: deleting\nduration: {duration}\napiServers: [ {{ name: a }} ]\nobjects:\n\
         \x20 - {{ apiVersion: v1, kind: ConfigMap, metadata: {{ name: held, finalizers: [{finalizers}] }} }}\n\
         script:\n  - {{ at: 1s, delete: {{ kind: ConfigMap, name: held }} }}\n\
         checks: {{ enabled: [ stuckDeleting ] }}\n"
    );
    let scenario = recon_scenario::parse("deleting.yaml", &yaml).unwrap_or_else(|e| panic!("{e}\n{yaml}"));
    let mut sim = Sim::new(&scenario, Box::new(|_| None)).unwrap();
    sim.run();
    let trace = sim.into_trace();
    trace.violations().filter(|(_, c, _)| *c == Check::StuckDeleting).map(|(_, _, m)| m.to_string()).collect()
}

#[test]
fn stuck_deleting_fires_for_a_finalizer_nobody_removes_and_not_without_one() {
    let stuck = deletion_history("example.com/cleanup", "5s");
    assert_eq!(stuck.len(), 1, "{stuck:#?}");
    assert!(
        stuck[0].starts_with("stuck deleting: ConfigMap default/held was marked for deletion at t=1.00"),
        "{stuck:#?}"
    );
    assert!(stuck[0].ends_with("its finalizers were never removed: example.com/cleanup"), "{stuck:#?}");
    assert_eq!(deletion_history("", "5s"), Vec::<String>::new(), "without a finalizer it is simply deleted");
}

/// Runs a library scenario natively and counts the findings of `check`.
fn library_violations(name: &str, check: Check) -> usize {
    let yaml = recon_catalog::scenario(name).expect("in the library").yaml;
    let scenario = recon_scenario::parse(&format!("{name}.yaml"), yaml).expect("library scenarios parse");
    let mut sim = Sim::new(&scenario, Box::new(|c| recon_catalog::instantiate(&c.controller))).unwrap();
    sim.run();
    sim.trace().violations().filter(|(_, c, _)| *c == check).count()
}

/// A pod naming a ReplicaSet uid that never existed, and a garbage
/// collector that does not watch ReplicaSets: the pod is left orphaned.
fn orphan_history(check: Check) -> usize {
    let yaml = r#"
name: orphan
duration: 5s
apiServers: [ { name: apiserver-1 } ]
components:
  - { name: gc, controller: garbage-collector, apiServer: apiserver-1, params: { kinds: [Pod] } }
objects:
  - apiVersion: v1
    kind: Pod
    metadata:
      name: stray
      namespace: default
      ownerReferences: [ { apiVersion: apps/v1, kind: ReplicaSet, name: gone, uid: never-existed } ]
checks:
  enabled: [orphanedDependent]
"#;
    let scenario = recon_scenario::parse("orphan.yaml", yaml).expect("test scenario parses");
    let mut sim = Sim::new(&scenario, Box::new(|c| recon_catalog::instantiate(&c.controller))).unwrap();
    sim.run();
    sim.trace().violations().filter(|(_, c, _)| *c == check).count()
}

/// Every check this file covers fires in one of its histories; a check
/// added without a history that makes it fire fails here.
#[test]
fn every_check_has_a_hand_built_history_that_makes_it_fire() {
    for check in Check::ALL {
        let fired = match check {
            Check::PodIdentity => {
                count(&check_history(&[start(1_000, 0, 0), ghost(1_100, 1, 0, 1)], "identity"), check)
            }
            Check::StatefulSetOrdinals => {
                count(&check_history(&[start(1_000, 0, 0), start(1_100, 0, 2)], "ordinals"), check)
            }
            Check::TimeTravel => time_travel_history("any", "").len(),
            Check::ReplicaCount => replica_history(1, 2, 0, check).len(),
            Check::Convergence => replica_history(1, 0, 0, check).len(),
            Check::StuckDeleting => deletion_history("example.com/cleanup", "5s").len(),
            Check::DeletedLiveDependent => library_violations("gc-stale-view", check),
            Check::OrphanedDependent => orphan_history(check),
            Check::DependentOfDeletedOwner => library_violations("database-operator-stale-cache", check),
            Check::LostWork => lost_work_history(Stamp::FromView, true).len(),
            Check::IdleWithWorkLeft => library_violations("grove-stale-status-775", check),
            Check::HistoryPolicy => library_violations("rabbitmq-unobserved-scale-758", check),
            Check::DroppedMember => library_violations("hdfs-partial-relist-774", check),
            #[allow(unreachable_patterns, reason = "checks added later must get a history here")]
            _ => panic!("no hand-built history makes the {check} check fire: add one to this file"),
        };
        assert!(fired > 0, "the {check} check never fired");
    }
}

/// How the [`Stamper`] writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stamp {
    /// Keeps annotation `stamped` equal to its view's `spec.replicas` by
    /// writing the whole object as its view holds it, without a
    /// precondition (a read-modify-write from the cache).
    FromView,
    /// The same, with the view's resourceVersion as a precondition.
    WithPrecondition,
    /// Sets `spec.replicas` back to 1 whenever it sees another value: a
    /// controller that undoes a user's change on purpose.
    Enforce,
}

/// A controller on the SDK's informer cache that writes Deployment `web`
/// as [`Stamp`] says, when a list or watch event shows it something.
struct Stamper {
    stamp: Stamp,
    cache: recon_sdk::Cache,
}

impl Instance for Stamper {
    fn init(&mut self, _: &ComponentConfig) -> Result<Manifest, Crash> {
        let watches = vec![WatchSpec { kind: "Deployment".into(), ..Default::default() }];
        self.cache = recon_sdk::Cache::new(&watches);
        Ok(Manifest {
            name: "stamper".into(),
            abi_version: recon_abi::ABI_VERSION,
            watches,
            writes: vec![WritePermission { kind: "Deployment".into(), verbs: vec![Verb::Update] }],
            ..Default::default()
        })
    }

    fn handle(&mut self, input: &Input) -> Result<recon_abi::Output, Crash> {
        let mut saw = false;
        for event in &input.events {
            saw |= matches!(event, InputEvent::Listed { .. } | InputEvent::Watch { .. });
            self.cache.apply(event);
        }
        let key = recon_abi::ObjectKey::new("Deployment", "default", "web");
        let Some(view) = self.cache.find(&key).filter(|_| saw) else { return Ok(recon_abi::Output::default()) };
        let replicas = view.spec["replicas"].as_u64().unwrap_or(1);
        let mut next = view.clone();
        match self.stamp {
            Stamp::Enforce if replicas != 1 => next.spec["replicas"] = 1.into(),
            Stamp::FromView | Stamp::WithPrecondition
                if view.metadata.annotations.get("stamped") != Some(&replicas.to_string()) =>
            {
                next.metadata.annotations.insert("stamped".into(), replicas.to_string());
            }
            _ => return Ok(recon_abi::Output::default()),
        }
        if self.stamp != Stamp::WithPrecondition {
            next.metadata.resource_version.clear();
        }
        Ok(recon_abi::Output::new(vec![Action::Update { object: next, dry_run: false }]))
    }
}

/// Deployment `web` at 1 replica; kubectl scales it to 3 at 2s through
/// API server `a`, which the stamper watches; at 2.5s (when `restart`) the
/// stamper restarts onto `b`, whose watch cache trails the store by 3s, so
/// its view goes back to before the scale. The lost-work findings, and
/// how many of the stamper's writes were refused with 409 Conflict.
fn lost_work_run(stamp: Stamp, restart: bool) -> (Vec<String>, usize) {
    let restart = if restart { "  - { at: 2500ms, restart: { component: s, apiServer: b } }\n" } else { "" };
    let yaml = format!(
        "name: lost-work\nduration: 8s\napiServers:\n  - name: a\n  - name: b\n    watchCache: {{ lag: 3s }}\n\
         components:\n  - {{ name: s, controller: stamper, apiServer: a }}\n\
         objects:\n  - {{ apiVersion: apps/v1, kind: Deployment, metadata: {{ name: web, namespace: default }}, spec: {{ replicas: 1 }} }}\n\
         script:\n  - {{ at: 2s, scale: {{ kind: Deployment, name: web, replicas: 3 }} }}\n{restart}\
         checks:\n  enabled: [lostWork, timeTravel]\n"
    );
    let scenario = recon_scenario::parse("lost-work.yaml", &yaml).unwrap_or_else(|e| panic!("{e}\n{yaml}"));
    let instantiate = move |_: &recon_scenario::Component| {
        Some(Box::new(Stamper { stamp, cache: recon_sdk::Cache::default() }) as Box<dyn Instance>)
    };
    let mut sim = Sim::new(&scenario, Box::new(instantiate)).unwrap();
    sim.run();
    let trace = sim.into_trace();
    let found: Vec<String> =
        trace.violations().filter(|(_, c, _)| *c == Check::LostWork).map(|(_, _, m)| m.to_string()).collect();
    if let Some((entry, _, _)) = trace.violations().find(|(_, c, _)| *c == Check::LostWork) {
        let explained = recon_trace::explain(&trace, entry.id).expect("a violation explains");
        assert!(explained.steps.len() >= 4, "the write, the reconcile, the stale list and the newest: {explained:#?}");
    }
    let conflicts = trace
        .entries
        .iter()
        .filter(|e| matches!(&e.event, Event::WriteFailed { status, .. } if status.code == 409))
        .count();
    (found, conflicts)
}

fn lost_work_history(stamp: Stamp, restart: bool) -> Vec<String> {
    lost_work_run(stamp, restart).0
}

// The lost-work check (docs/API-SEMANTICS.md, "Checks"): a read-modify-write
// without a precondition from a view that went back in time puts back a
// field the writer had seen changed.
#[test]
fn lost_work_fires_when_a_write_from_a_stale_view_undoes_what_its_author_had_seen() {
    let found = lost_work_history(Stamp::FromView, true);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(found[0].starts_with("s put spec.replicas of Deployment default/web"), "{found:#?}");
    assert!(found[0].contains("its view had gone back"), "{found:#?}");
}

#[test]
fn lost_work_stays_quiet_for_a_precondition_a_fresh_view_and_a_deliberate_revert() {
    // The same stale write with a resourceVersion precondition: 409, nothing lost.
    let (found, conflicts) = lost_work_run(Stamp::WithPrecondition, true);
    assert_eq!((found, conflicts > 0), (Vec::<String>::new(), true));
    // No restart: every write is computed from the newest version it saw.
    assert_eq!(lost_work_history(Stamp::FromView, false), Vec::<String>::new());
    // Undoing the user's scale on purpose, having seen it, is not lost work.
    assert_eq!(lost_work_history(Stamp::Enforce, false), Vec::<String>::new());
}
