//! Controllers written against kube-rs's API (issue 15), run by Recon
//! through `recon-kube`: natively and under wasmtime, with the same trace.

use recon_abi::{Object, ObjectKey};
use recon_sim::Sim;
use recon_tests::{load, wasm_plugins};
use recon_trace::{Event, explain};

/// What a run left: its trace hash, its violations, the objects asked
/// for as they are at the end, and the store writes of `component`.
struct Outcome {
    hash: String,
    violations: usize,
    objects: Vec<Option<Object>>,
    writes: Vec<String>,
}

/// Runs the scenario `name` natively or with every controller under wasmtime.
fn run(name: &str, wasm: bool, component: &str, keys: &[ObjectKey]) -> Outcome {
    let scenario = load(name);
    let mut sim = if wasm {
        let plugins = wasm_plugins();
        Sim::new(
            &scenario,
            Box::new(move |c| {
                let plugin = plugins.get(&c.controller)?;
                Some(Box::new(plugin.instantiate().expect("built-in plugins instantiate"))
                    as Box<dyn recon_abi::Instance>)
            }),
        )
    } else {
        Sim::new(&scenario, Box::new(|c| recon_catalog::instantiate(&c.controller)))
    }
    .expect("scenario builds");
    sim.run();
    let objects = keys
        .iter()
        .map(|k| sim.store().get(k, None).expect("the store answers").map(|kv| (*kv.value).clone()))
        .collect();
    let trace = sim.into_trace();
    let crashes = explain::crashes(&trace);
    assert!(crashes.is_empty(), "{:?}", crashes.iter().map(|c| &c.reason).collect::<Vec<_>>());
    let writes = trace
        .entries
        .iter()
        .filter_map(|e| match &e.event {
            Event::StoreWrite { verb, key, by, .. } if by == component => Some(format!("{verb} {key}")),
            _ => None,
        })
        .collect();
    Outcome { hash: trace.hash(), violations: trace.violations().count(), objects, writes }
}

/// Runs `name` natively and under wasmtime and checks the traces agree.
fn run_both(name: &str, component: &str, keys: &[ObjectKey]) -> Outcome {
    let native = run(name, false, component, keys);
    let wasm = run(name, true, component, keys);
    assert_eq!(native.hash, wasm.hash, "native and Wasm traces differ");
    assert_eq!(native.objects, wasm.objects);
    assert_eq!(native.violations, 0);
    native
}

#[test]
fn the_kube_rs_configmap_generator_gives_the_same_trace_natively_and_under_wasmtime_and_owns_its_config_map() {
    let key = ObjectKey::new("ConfigMap", "default", "gen");
    let outcome = run_both("configmap-generator", "configmap-generator", std::slice::from_ref(&key));
    let map = outcome.objects[0].as_ref().expect("the ConfigMap exists at the end");
    assert_eq!(map.other["data"], serde_json::json!({ "content": "world" }), "the generator's last content");
    let owner = map.controller_owner().expect("a controller owner reference");
    assert_eq!((owner.kind.as_str(), owner.name.as_str()), ("ConfigMapGenerator", "gen"));
    assert_eq!(owner.api_version, "nullable.se/v1");
    // Applied at creation, after the content changed, and again after the
    // ConfigMap was deleted by hand (the controller owns ConfigMaps).
    let applies = outcome.writes.iter().filter(|w| w.ends_with("ConfigMap default/gen")).count();
    assert!(applies >= 3, "{:?}", outcome.writes);
}

#[test]
fn the_kube_rs_secret_syncer_cleans_up_through_its_finalizer_with_the_same_trace_natively_and_under_wasmtime() {
    let keys = [
        ObjectKey::new("ConfigMap", "default", "settings"),
        ObjectKey::new("Secret", "default", "cm---settings"),
        ObjectKey::new("Secret", "default", "cm---limits"),
    ];
    let outcome = run_both("secret-syncer", "secret-syncer", &keys);
    assert_eq!(outcome.objects[..2], [None, None], "the ConfigMap went, and its Secret before it");
    let limits = outcome.objects[2].as_ref().expect("the live synced map keeps its Secret");
    assert_eq!(limits.other["stringData"], serde_json::json!({ "max": "20" }), "its last data");
    let writes = &outcome.writes;
    // The finalizer first, the Secret after it; on deletion the Secret
    // goes before the finalizer comes off. The unlabelled map is never touched.
    assert_eq!(writes.first().map(String::as_str), Some("patch ConfigMap default/settings"), "{writes:?}");
    assert!(writes.iter().any(|w| w == "patch Secret default/cm---settings"), "{writes:?}");
    assert!(!writes.iter().any(|w| w.contains("plain")), "{writes:?}");
    let n = writes.len();
    assert_eq!(
        writes[n - 2..],
        ["delete Secret default/cm---settings", "patch ConfigMap default/settings"],
        "{writes:?}"
    );
}

#[test]
fn the_kube_rs_configmap_generator_on_a_stale_cache_brings_back_the_config_map_of_a_deleted_generator() {
    use recon_scenario::Check;
    let trace = recon_tests::run(&load("configmap-generator-stale-cache"));
    let found: Vec<(u64, &str)> = trace
        .violations()
        .filter(|(_, check, _)| *check == Check::DependentOfDeletedOwner)
        .map(|(e, _, message)| (e.time_ms, message))
        .collect();
    assert_eq!(found.len(), 1, "{found:?}");
    let (at, message) = found[0];
    assert!(at >= 7_000, "after the restart: {at}");
    assert!(message.starts_with("configmap-generator created ConfigMap default/gen"), "{message}");
    assert!(message.contains("naming owner ConfigMapGenerator gen"), "{message}");
    assert!(message.contains("though it had already observed revision"), "{message}");
    // The explanation names the deletion and the stale list the reconcile acted on.
    let explained = explain::explain_all(&trace);
    let first = explained.iter().find(|x| x.check == Check::DependentOfDeletedOwner).expect("explained");
    let steps: Vec<&str> = first.steps.iter().map(|s| s.text.as_str()).collect();
    assert!(
        steps.iter().any(|s| s.contains("resourceVersion=\"0\" to apiserver-2") && s.contains("behind")),
        "{steps:#?}"
    );
}

/// The store writes of `component` that failed, with when and why.
fn refused_writes(trace: &recon_trace::Trace, component: &str) -> Vec<(u64, u16)> {
    trace
        .entries
        .iter()
        .filter_map(|e| match &e.event {
            Event::WriteFailed { by, status, .. } if by == component => Some((e.time_ms, status.code)),
            _ => None,
        })
        .collect()
}

// The pod reconciler's replace carries the resourceVersion of the pod in
// its store, so a write from a stale store is refused: Kubernetes' API
// concepts (https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions)
// say resourceVersion is for optimistic concurrency, and the API
// conventions (https://github.com/kubernetes/community/blob/master/contributors/devel/sig-architecture/api-conventions.md#concurrency-control-and-consistency)
// that an update whose resourceVersion no longer matches is answered 409
// Conflict. kube-runtime runs the error policy's `Action` as it runs the
// reconciler's (https://docs.rs/kube/latest/kube/runtime/struct.Controller.html#method.run):
// the object is reconciled again after the requeue delay, unless a watch
// event triggers it sooner.
#[test]
fn the_kube_rs_pod_reconciler_backs_off_on_conflicts_from_its_stale_store_and_loses_no_edit() {
    let key = ObjectKey::new("Pod", "default", "web");
    let outcome = run_both("pod-reconciler", "pod-reconciler", std::slice::from_ref(&key));
    let web = outcome.objects[0].as_ref().expect("the pod exists at the end");
    assert_eq!(web.metadata.labels["tier"], "api", "the user's last edit stands");
    assert_eq!(web.metadata.annotations["nullable.se/labels"], "app=web,tier=api");
    let trace = recon_tests::run(&load("pod-reconciler"));
    // After the first edit (6s) reaches its 2s-stale cache, three replaces
    // from the old version are refused, each after the error policy's
    // doubled back-off; the second edit's arrival ends the streak.
    let refused = refused_writes(&trace, "pod-reconciler");
    assert_eq!(refused.iter().map(|(_, code)| *code).collect::<Vec<_>>(), [409, 409, 409], "{refused:?}");
    let gaps: Vec<u64> = refused.windows(2).map(|w| w[1].0 - w[0].0).collect();
    assert!(gaps[0] >= 250 && gaps[0] < 300 && gaps[1] >= 500 && gaps[1] < 550, "back-offs: {refused:?}");
    assert!(refused[0].0 >= 8_000 && refused[2].0 < 9_000, "{refused:?}");
    // The unlabelled pod is never touched; web is written at creation and after the second edit.
    assert!(!outcome.writes.iter().any(|w| w.contains("plain")), "{:?}", outcome.writes);
    assert_eq!(outcome.writes, ["update Pod default/web", "update Pod default/web"]);
}

// The built-in ReplicaSet controller is a kube-rs controller too: after
// its restart it lists with a quorum read (the scenario's fix), so web
// ends at the size the user last asked for, with the same trace natively
// and under wasmtime.
#[test]
fn the_kube_rs_replicaset_controller_gives_the_same_trace_natively_and_under_wasmtime_and_keeps_its_set_whole() {
    let key = ObjectKey::new("ReplicaSet", "default", "web");
    let outcome = run_both("replicaset-flapping-quorum", "replicaset-controller", std::slice::from_ref(&key));
    let web = outcome.objects[0].as_ref().expect("the set exists at the end");
    assert_eq!(web.status["replicas"], web.spec["replicas"], "its status shows every pod it asked for");
    assert!(outcome.writes.iter().any(|w| w.starts_with("create Pod default/web-")), "{:?}", outcome.writes);
    assert!(outcome.writes.iter().any(|w| w == "update status of ReplicaSet default/web"), "{:?}", outcome.writes);
}

// Kubernetes #129795's scenario with each of its fixes: the controller's
// parameters switch them on, natively and under wasmtime alike.
#[test]
fn the_kube_rs_replicaset_controller_reads_its_parameters_the_same_natively_and_under_wasmtime_issue_129795() {
    let scenario = load("replicaset-expectations-129795");
    let plugins = wasm_plugins();
    assert_eq!(scenario.fixes.len(), 3);
    for fix in &scenario.fixes {
        let mut fixed = scenario.clone();
        fixed.set_fix(&fix.name, true).expect("the scenario's own fix applies");
        let native = recon_tests::run(&fixed);
        assert_eq!(native.violations().count(), 0, "{}", fix.name);
        let wasm = recon_tests::run_wasm(&fixed, &plugins);
        assert_eq!(native.hash(), wasm.hash(), "{}", fix.name);
    }
}

// The built-in Deployment controller is a kube-rs controller too: a
// template change rolls out through a second ReplicaSet, and the old one
// is scaled to 0 (Kubernetes' Deployment docs: "The Deployment updates
// Pods in a rolling update fashion"; at most maxSurge pods above and
// maxUnavailable below the desired count, 25% each by default,
// https://kubernetes.io/docs/concepts/workloads/controllers/deployment/#rolling-update-deployment),
// with the same trace natively and under wasmtime.
#[test]
fn the_kube_rs_deployment_controller_rolls_a_template_change_out_with_the_same_trace_natively_and_under_wasmtime() {
    let deployment = |image: &str| {
        format!(
            "apiVersion: apps/v1\n      kind: Deployment\n      metadata: {{ name: web, namespace: default }}\n      \
             spec:\n        replicas: 4\n        selector: {{ matchLabels: {{ app: web }} }}\n        \
             template:\n          metadata: {{ labels: {{ app: web }} }}\n          \
             spec: {{ containers: [ {{ name: web, image: \"{image}\" }} ] }}\n"
        )
    };
    let text = format!(
        "name: deployment-rollout\nseed: 1\nduration: 20s\napiServers:\n  - name: apiserver-1\n\
         nodes:\n  - name: node-1\ncomponents:\n\
         \x20 - {{ name: scheduler, controller: scheduler, apiServer: apiserver-1 }}\n\
         \x20 - {{ name: deployment-controller, controller: deployment, apiServer: apiserver-1 }}\n\
         \x20 - {{ name: replicaset-controller, controller: replicaset, apiServer: apiserver-1 }}\n\
         \x20 - {{ name: kubelet-node-1, controller: kubelet, node: node-1, apiServer: apiserver-1 }}\n\
         objects:\n  - {}script:\n  - at: 5s\n    apply:\n      {}",
        deployment("web:1").replace("\n      ", "\n    "),
        deployment("web:2"),
    );
    let scenario = recon_scenario::parse("deployment-rollout.yaml", &text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let native = recon_tests::run(&scenario);
    let wasm = recon_tests::run_wasm(&scenario, &wasm_plugins());
    assert_eq!(native.hash(), wasm.hash(), "native and Wasm traces differ");
    assert!(explain::crashes(&native).is_empty());
    assert_eq!(native.violations().count(), 0);

    let writes: Vec<String> = native
        .entries
        .iter()
        .filter_map(|e| match &e.event {
            Event::StoreWrite { verb, key, by, .. } if by == "deployment-controller" => Some(format!("{verb} {key}")),
            _ => None,
        })
        .collect();
    let created: std::collections::BTreeSet<&String> =
        writes.iter().filter(|w| w.starts_with("create ReplicaSet default/web-")).collect();
    assert_eq!(created.len(), 2, "one set per template: {writes:?}");
    assert!(writes.iter().any(|w| w.starts_with("update ReplicaSet default/web-")), "{writes:?}");
    assert!(writes.iter().any(|w| w == "update status of Deployment default/web"), "{writes:?}");

    // At the end: every pod is of the new template, the old set is empty.
    let mut sim =
        Sim::new(&scenario, Box::new(|c| recon_catalog::instantiate(&c.controller))).expect("scenario builds");
    sim.run();
    let get = |key: ObjectKey| sim.store().get(&key, None).expect("the store answers").map(|kv| (*kv.value).clone());
    let web = get(ObjectKey::new("Deployment", "default", "web")).expect("the deployment exists");
    assert_eq!(web.status["updatedReplicas"], 4, "{}", web.status);
    assert_eq!(web.status["replicas"], 4, "{}", web.status);
    let sets: Vec<Object> = created
        .iter()
        .filter_map(|w| {
            get(ObjectKey::new("ReplicaSet", "default", w.trim_start_matches("create ReplicaSet default/")))
        })
        .collect();
    let mut replicas: Vec<i64> = sets.iter().map(|s| s.spec["replicas"].as_i64().unwrap_or(-1)).collect();
    replicas.sort_unstable();
    assert_eq!(replicas, [0, 4]);
}

/// An object the watch's type cannot decode stops only the controller
/// that watches it, natively and under wasmtime, with a crash that names
/// the object and the type. A real API server validates a built-in kind
/// on create and would refuse such an object; a custom resource whose
/// schema keeps unknown fields (`x-kubernetes-preserve-unknown-fields`)
/// is stored as written, so a controller's typed decode can fail on it
/// (found by the `scenario_file` fuzz target:
/// `fuzz/regressions/scenario_file/hdfs-cluster-without-spec.yaml`).
#[test]
fn an_object_the_watch_cannot_decode_crashes_only_its_controller_with_a_message_naming_both() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/regressions/scenario_file/hdfs-cluster-without-spec.yaml");
    let text = std::fs::read_to_string(&path).expect("the regression input is committed");
    // A second component, which must not suffer.
    let text = text.replacen(
        "components:\n",
        "components:\n  - { name: configmap-generator, controller: configmap-generator, apiServer: apiserver-1 }\n",
        1,
    );
    let scenario = recon_scenario::parse("hdfs-cluster-without-spec.yaml", &text).expect("it parses");
    // Only the two plugins this scenario runs: compiling all is slow.
    let plugins: std::collections::BTreeMap<String, recon_host::CompiledPlugin> = recon_catalog::BUILTINS
        .iter()
        .filter(|b| scenario.components.iter().any(|c| c.controller == b.name))
        .map(|b| (b.name.to_owned(), recon_tests::wasm_plugin(b.crate_name, b.name)))
        .collect();
    assert_eq!(plugins.len(), 2);
    for wasm in [false, true] {
        let mut sim = if wasm {
            let plugins = plugins.clone();
            Sim::new(
                &scenario,
                Box::new(move |c| {
                    Some(Box::new(plugins.get(&c.controller)?.instantiate().expect("instantiates"))
                        as Box<dyn recon_abi::Instance>)
                }),
            )
        } else {
            Sim::new(&scenario, Box::new(|c| recon_catalog::instantiate(&c.controller)))
        }
        .expect("scenario builds");
        sim.run();
        let trace = sim.into_trace();
        let crashes = explain::crashes(&trace);
        let reasons: Vec<_> = crashes.iter().map(|c| (c.component.as_str(), c.reason.as_str())).collect();
        assert_eq!(reasons.len(), 1, "wasm={wasm}: {reasons:?}");
        let (component, reason) = reasons[0];
        assert_eq!(component, "hdfs-operator", "wasm={wasm}");
        assert!(
            reason.contains("HdfsCluster default/alpha") && reason.contains("does not decode as"),
            "wasm={wasm}: {reason}"
        );
        let started = |name: &str| {
            trace
                .entries
                .iter()
                .any(|e| matches!(&e.event, Event::ComponentStarted { component, .. } if component == name))
        };
        assert!(started("configmap-generator"), "wasm={wasm}: the healthy component never started");
    }
}
