//! `recon audit --scenario`: audit logs replayed as a scenario. On logs
//! written by `recon run --audit-log` for the library's scenarios, the
//! replay must load and run, and its own audit logs must show what the
//! original's did; on a hand-written log in the real format, every part of
//! the scenario must come from where `src/replay.rs` says, and what cannot
//! be carried over must be said with its file and line.

mod support;

use std::path::{Path, PathBuf};

use recon_audit::{
    FindingKind, LogFile, ReadOptions, Replay, ReplayError, Report, analyze, audit_logs_with_objects, replay,
};
use recon_scenario::{Check, Scenario, StepAction};
use recon_sim::Sim;
use recon_trace::Trace;
use support::Scratch;

fn scenarios_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios")
}

/// Runs a scenario and writes its audit logs (with the objects' bodies
/// from the run's store, as `recon run --audit-log` does) into `dir`.
fn run_and_log(scenario: &Scenario, dir: &Path) -> (Trace, Vec<LogFile>) {
    let mut sim = Sim::new(scenario, Box::new(|c| recon_catalog::instantiate(&c.controller))).expect("scenario builds");
    sim.run();
    let store = sim.store();
    let logs = audit_logs_with_objects(sim.trace(), &sim.kinds(), &|rev| store.event(rev).map(|e| (*e.value).clone()))
        .unwrap();
    let files = logs
        .into_iter()
        .map(|log| {
            let path = dir.join(format!("{}.jsonl", log.server));
            std::fs::write(&path, log.text).unwrap();
            LogFile { server: log.server, path }
        })
        .collect();
    (sim.into_trace(), files)
}

fn library(name: &str) -> Scenario {
    let path = scenarios_dir().join(format!("{name}.yaml"));
    let text = std::fs::read_to_string(&path).unwrap();
    recon_scenario::parse(&path.display().to_string(), &text).unwrap_or_else(|e| panic!("{e}"))
}

/// The replay written as `recon audit --scenario` writes it, and read back
/// as `recon run` reads it.
fn reload(replay: &Replay) -> Scenario {
    recon_scenario::parse("replay.yaml", &replay.to_yaml())
        .unwrap_or_else(|e| panic!("the replay loads: {e}\n{}", replay.to_yaml()))
}

fn violated(trace: &Trace) -> Vec<Check> {
    let mut checks: Vec<Check> = trace.violations().map(|(_, check, _)| check).collect();
    checks.sort();
    checks.dedup();
    checks
}

struct RoundTrip {
    original: Report,
    replay: Replay,
    replayed_trace: Trace,
    replayed: Report,
}

/// A library scenario's run, its logs (in the test's directory), their
/// replay and the replay's logs.
fn round_trip(scratch: &Scratch, name: &str) -> RoundTrip {
    let library_scenario = library(name);
    let (_, files) = run_and_log(&library_scenario, &scratch.dir(&format!("{name}-original")));
    let original = analyze(&files, &ReadOptions::default(), |_| {});
    let replay = replay(&files, &ReadOptions::default()).expect("the logs have events");
    let mut scenario = reload(&replay);
    upload_plugins(&mut scenario, &replay, &library_scenario);
    let (replayed_trace, files) = run_and_log(&scenario, &scratch.dir(&format!("{name}-replayed")));
    let replayed = analyze(&files, &ReadOptions::default(), |_| {});
    RoundTrip { original, replay, replayed_trace, replayed }
}

/// What a user does with the replay's `plugins_needed`: runs each such
/// component with the controller it really is (here, the one the original
/// scenario gave the component of that name, with its parameters), as
/// `--plugin NAME=FILE` does.
fn upload_plugins(scenario: &mut Scenario, replay: &Replay, original: &Scenario) {
    for needed in &replay.plugins_needed {
        let source = original.components.iter().find(|c| c.name == needed.component);
        let source = source.unwrap_or_else(|| panic!("{} is a component of the original", needed.component));
        let component = scenario.components.iter_mut().find(|c| c.name == needed.component).unwrap();
        component.controller = source.controller.clone();
        component.params = source.params.clone();
    }
}

fn clients_with_findings(report: &Report) -> Vec<(FindingKind, String)> {
    let mut found: Vec<(FindingKind, String)> =
        report.findings.iter().map(|f| (f.kind, f.client.username.clone())).collect();
    found.sort_by(|a, b| (a.0 as u8, &a.1).cmp(&(b.0 as u8, &b.1)));
    found.dedup();
    found
}

/// Kubernetes issue #59848 from its own audit logs: the replay (a kubelet
/// restarting onto an API server whose answers showed it cut off from etcd)
/// breaks what the original broke, and its logs show the same stale list
/// and the same node agent shown a gone pod.
#[test]
fn replaying_the_59848_audit_reproduces_the_stale_list_and_the_double_start() {
    let scratch = Scratch::of_this_test();
    let rt = round_trip(&scratch, "pod-safety-59848");
    assert!(rt.replay.plugins_needed.is_empty() && rt.replay.notes.is_empty(), "{:?}", rt.replay.notes);
    let scenario = &rt.replay.scenario;
    let server2 = scenario.api_servers.iter().find(|s| s.name == "apiserver-2").unwrap();
    assert_eq!(server2.partitions.len(), 1, "apiserver-2's stale answer makes it cut off");
    assert!(scenario.script.iter().any(|s| matches!(&s.action,
        StepAction::Restart { component, api_server: Some(to) } if component == "kubelet-node-1" && to == "apiserver-2")));
    assert_eq!(violated(&rt.replayed_trace), [Check::PodIdentity, Check::StatefulSetOrdinals, Check::TimeTravel]);
    assert!(rt.original.acted_on_stale_read && rt.replayed.acted_on_stale_read);
    assert_eq!(clients_with_findings(&rt.replayed), clients_with_findings(&rt.original));
    assert!(
        rt.replayed
            .findings
            .iter()
            .any(|f| f.kind == FindingKind::NodeAgentShownGonePod && f.location.server == "apiserver-2")
    );
}

/// A list is logged with its items whole, each as the store committed it
/// at the version the list showed (what a replay rebuilds the objects
/// from), keeping the version, uid and deletion fields the list showed.
/// The items are made whole one at a time as the line is written; here
/// each is checked against the log written without bodies and the store.
#[test]
fn a_list_is_logged_with_each_item_whole_as_the_store_committed_it() {
    let mut sim = Sim::new(&library("pod-safety-59848"), Box::new(|c| recon_catalog::instantiate(&c.controller)))
        .expect("scenario builds");
    sim.run();
    let store = sim.store();
    let object = |rev: u64| store.event(rev).map(|e| (*e.value).clone());
    let whole = audit_logs_with_objects(sim.trace(), &sim.kinds(), &object).unwrap();
    let bare = recon_audit::audit_logs(sim.trace(), &sim.kinds()).unwrap();
    let mut items_checked = 0;
    for (whole, bare) in whole.iter().zip(&bare) {
        assert_eq!(whole.events, bare.events);
        for (line, bare_line) in whole.text.lines().zip(bare.text.lines()) {
            let line: serde_json::Value = serde_json::from_str(line).unwrap();
            let bare_line: serde_json::Value = serde_json::from_str(bare_line).unwrap();
            let Some(said) = bare_line.pointer("/responseObject/items").and_then(|i| i.as_array()) else { continue };
            let items = line.pointer("/responseObject/items").and_then(|i| i.as_array()).expect("the same list");
            assert_eq!(items.len(), said.len());
            for (item, said) in items.iter().zip(said) {
                let revision = said["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap();
                let mut expected = serde_json::to_value(object(revision).expect("the store has it")).unwrap();
                for field in ["resourceVersion", "uid", "deletionTimestamp", "deletionGracePeriodSeconds"] {
                    let meta = expected["metadata"].as_object_mut().unwrap();
                    match said["metadata"].get(field) {
                        Some(v) => meta.insert(field.to_owned(), v.clone()),
                        None => meta.remove(field),
                    };
                }
                assert_eq!(item, &expected);
                items_checked += 1;
            }
        }
    }
    assert!(items_checked > 0, "the run lists objects");
}

/// Every scenario of the library, through its audit logs and back: the
/// replay loads and runs, and its own logs show no stale read by a client
/// the original's did not (the replay invents nothing). What the logs
/// cannot carry does not come back: a crash is in no audit log, so
/// `leader-failover`'s hand-over does not happen in its replay; the runs
/// whose stale reads come from a relist (a restart is a relist from
/// scratch in the logs) still go back in time.
#[test]
fn every_library_scenario_replays_from_its_audit_logs_and_invents_no_stale_read() {
    let mut names: Vec<String> = std::fs::read_dir(scenarios_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let scratch = Scratch::of_this_test();
    for name in &names {
        let rt = round_trip(&scratch, name);
        let original = clients_with_findings(&rt.original);
        for found in clients_with_findings(&rt.replayed) {
            assert!(
                original.contains(&found),
                "{name}: the replay's logs show {found:?}, the original's only {original:?}"
            );
        }
        if !rt.original.acted_on_stale_read {
            assert!(!rt.replayed.acted_on_stale_read, "{name}: {}", rt.replayed.text());
        }
    }
    for name in ["replicaset-flapping", "gc-stale-view", "database-operator-stale-cache"] {
        let rt = round_trip(&scratch, name);
        assert!(violated(&rt.replayed_trace).contains(&Check::TimeTravel), "{name}: {}", rt.replay.to_yaml());
    }
}

/// A log at `Metadata` level has no bodies to say a resource's kind: a
/// user's delete of `pods/web-0` is still a delete of the Pod, the kind
/// the API reference serves at `/api/v1/.../pods`, so the replay's script
/// loads (a kind named `pods` would be unknown). A custom resource's kind
/// is nowhere but in its bodies.
#[test]
fn a_write_logged_without_bodies_names_the_built_in_kind_its_path_serves() {
    let scratch = Scratch::of_this_test();
    let path = scratch.path().join("apiserver-a.jsonl");
    let line = |id: &str, uri: &str, resource: &str, group: &str, name: &str, at: &str| {
        format!(
            r#"{{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"{id}","stage":"ResponseComplete","requestURI":"{uri}","verb":"delete","user":{{"username":"kubernetes-admin","groups":["system:masters"]}},"userAgent":"kubectl/v1.30.0","objectRef":{{"resource":"{resource}","namespace":"default","name":"{name}","apiGroup":"{group}","apiVersion":"v1"}},"responseStatus":{{"metadata":{{}},"code":200}},"requestReceivedTimestamp":"{at}","stageTimestamp":"{at}"}}"#
        )
    };
    let text = [
        line("a-1", "/api/v1/namespaces/default/pods/web-0", "pods", "", "web-0", "2024-05-01T12:00:01.000000Z"),
        line(
            "a-2",
            "/apis/networking.k8s.io/v1/namespaces/default/ingresses/web",
            "ingresses",
            "networking.k8s.io",
            "web",
            "2024-05-01T12:00:02.000000Z",
        ),
        line(
            "a-3",
            "/apis/example.com/v1/namespaces/default/widgets/w",
            "widgets",
            "example.com",
            "w",
            "2024-05-01T12:00:03.000000Z",
        ),
    ]
    .join("\n");
    std::fs::write(&path, text + "\n").unwrap();
    let replay = replay(&[LogFile::named_by_stem(path)], &ReadOptions::default()).unwrap();
    let deleted: Vec<(&str, &str)> = replay
        .scenario
        .script
        .iter()
        .filter_map(|step| match &step.action {
            StepAction::Delete { target, .. } => Some((target.kind.as_str(), target.name.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(deleted, [("Pod", "web-0"), ("Ingress", "web")], "{}", replay.to_yaml());
    // A custom resource's kind is in its bodies only: its delete is left
    // out, and said, rather than named by a guess the scenario would refuse.
    let notes = replay.notes.join("\n");
    assert!(notes.contains("no logged body names the kind of") && notes.contains("widgets"), "{notes}");
    reload(&replay);
}

fn fixture() -> Vec<LogFile> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/replay");
    ["apiserver-a", "apiserver-b"].iter().map(|s| LogFile::named_by_stem(dir.join(format!("{s}.jsonl")))).collect()
}

/// A hand-written cluster in the real format: a user creates, scales and
/// deletes a Deployment and cordons a node; kube-controller-manager's
/// controllers (with their service accounts), the scheduler and a kubelet
/// act; an operator nobody knows updates a ConfigMap that was there before
/// the logs; the kubelet relists from a second API server that had not
/// seen anything since revision 100.
#[test]
fn a_hand_written_log_becomes_the_scenario_its_parts_say() {
    let replay = replay(&fixture(), &ReadOptions::default()).unwrap();
    let s = &replay.scenario;
    // API servers: the files; apiserver-b answered at 100 after 101 had
    // committed (at 1.000 s) and never reached etcd: cut off from just before.
    let servers: Vec<&str> = s.api_servers.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(servers, ["apiserver-a", "apiserver-b"]);
    assert!(s.api_servers[0].partitions.is_empty());
    let cut = &s.api_servers[1].partitions;
    assert_eq!((cut.len(), cut[0].from.0, cut[0].until), (1, 999, None));
    // Nodes: the kubelet's, with the labels and capacity its Node showed.
    assert_eq!(s.nodes.len(), 1);
    assert_eq!((s.nodes[0].name.as_str(), s.nodes[0].pods), ("node-1", 20));
    assert_eq!(s.nodes[0].labels.get("disk").map(String::as_str), Some("ssd"));
    // Components: recognised built-ins, and the operator as a plugin to upload.
    let components: Vec<(&str, &str)> = s.components.iter().map(|c| (c.name.as_str(), c.controller.as_str())).collect();
    assert_eq!(
        components,
        [
            ("my-operator", "my-operator"),
            ("kubelet-node-1", "kubelet"),
            ("deployment-controller", "deployment"),
            ("replicaset-controller", "replicaset"),
            ("kube-scheduler", "scheduler"),
        ]
    );
    let kubelet = &s.components[1];
    assert_eq!((kubelet.node.as_deref(), kubelet.api_server.as_str()), (Some("node-1"), "apiserver-a"));
    assert_eq!(kubelet.failover, ["apiserver-b"]);
    assert_eq!(replay.plugins_needed.len(), 1);
    assert_eq!(replay.plugins_needed[0].component, "my-operator");
    // Objects: only the ConfigMap that was there before the logs, as the list showed it.
    assert_eq!(s.objects.len(), 1);
    let settings = &s.objects[0];
    assert_eq!((settings.kind.as_str(), settings.metadata.name.as_str()), ("ConfigMap", "settings"));
    assert!(settings.metadata.uid.is_empty() && settings.metadata.resource_version.is_empty());
    assert_eq!(settings.other.get("data"), Some(&serde_json::json!({ "mode": "fast" })));
    // Script: the user's writes, and the kubelet's relist as a restart.
    let steps: Vec<(u64, String)> = s
        .script
        .iter()
        .map(|step| {
            let what = match &step.action {
                StepAction::Create { object, via } => {
                    format!("create {} via {}", object.kind, via.as_deref().unwrap_or(""))
                }
                StepAction::Scale { target, replicas, .. } => format!("scale {} {replicas}", target.kind),
                StepAction::Cordon { node } => format!("cordon {node}"),
                StepAction::Delete { target, cascade, .. } => format!("delete {} {cascade:?}", target.name),
                StepAction::Restart { component, api_server } => format!("restart {component} {api_server:?}"),
                other => format!("{other:?}"),
            };
            (step.at.0, what)
        })
        .collect();
    assert_eq!(
        steps,
        [
            (1000, "create Deployment via apiserver-a".to_string()),
            (2000, "scale Deployment 3".to_string()),
            (2500, "cordon node-1".to_string()),
            (4500, "delete web Some(Foreground)".to_string()),
            (4999, "restart kubelet-node-1 Some(\"apiserver-b\")".to_string()),
        ]
    );
    // What could not be carried over, each with its file and line.
    let notes = replay.notes.join("\n");
    assert!(
        notes.contains("a user's write to a subresource other than scale") && notes.contains("apiserver-a.jsonl:9:"),
        "{notes}"
    );
    assert!(notes.contains("a user's create without its body") && notes.contains("apiserver-a.jsonl:10:"), "{notes}");
    // Written, it loads; the operator's line says what to upload, and
    // without that plugin the simulator refuses to guess.
    let yaml = replay.to_yaml();
    assert!(yaml.contains("controller: my-operator  # upload its plugin: --plugin my-operator=YOUR.wasm"), "{yaml}");
    let scenario = reload(&replay);
    assert!(matches!(
        Sim::new(&scenario, Box::new(|c| recon_catalog::instantiate(&c.controller))),
        Err(recon_sim::SimError::UnknownController { .. })
    ));
}

/// Nothing readable, nothing to replay: the error says why, file and line.
#[test]
fn logs_without_a_readable_event_are_refused_with_their_problems() {
    let scratch = Scratch::of_this_test();
    let path = scratch.path().join("apiserver-1.jsonl");
    std::fs::write(&path, "{\"kind\":\"Event\",\"apiVersion\":\"audit.k8s.io/v1\"\n").unwrap();
    let err = replay(&[LogFile::named_by_stem(&path)], &ReadOptions::default()).unwrap_err();
    let ReplayError::NoEvents(problems) = &err;
    assert_eq!(problems.skipped_lines, 1);
    let text = err.to_string();
    assert!(text.contains("nothing to replay") && text.contains("apiserver-1.jsonl:1:"), "{text}");
}
