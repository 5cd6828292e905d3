//! Every scenario of the library, run in the simulator, written as audit
//! logs (what `recon run --audit-log` writes) and read back: `recon audit`
//! must find what the simulator found, from the API servers' side alone.
//!
//! The simulator sees everything (caches, watch deliveries, container
//! starts); the logs see only requests. So the comparison is:
//! - every time travel the simulator flagged is a stale read here, for the
//!   same client, from the same API server, at the same revision;
//! - a violation whose explanation starts from a stale read is a stale
//!   read acted on here (exit status 1), naming the write the simulator
//!   blamed when there is one;
//! - a run without such a violation has nothing acted on here (exit 0).

mod support;

use std::path::{Path, PathBuf};

use recon_audit::{Finding, FindingKind, LogFile, ReadOptions, Report, analyze, audit_logs};
use recon_scenario::{Check, Kinds};
use recon_sim::Sim;
use recon_trace::{Event, Trace, explain};
use support::Scratch;

fn scenarios_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios")
}

fn library() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(scenarios_dir())
        .expect("scenarios/ exists")
        .map(|e| e.expect("readable entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .map(|p| p.file_stem().expect("a file name").to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn run(name: &str) -> (Trace, Kinds) {
    let path = scenarios_dir().join(format!("{name}.yaml"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let scenario = recon_scenario::parse(&path.display().to_string(), &text).unwrap_or_else(|e| panic!("{e}"));
    let mut sim =
        Sim::new(&scenario, Box::new(|c| recon_catalog::instantiate(&c.controller))).expect("scenario builds");
    sim.run();
    (sim.into_trace(), scenario.kinds())
}

fn write_logs((trace, kinds): &(Trace, Kinds), dir: &Path) -> Vec<LogFile> {
    audit_logs(trace, kinds)
        .expect("the trace's requests are readable")
        .into_iter()
        .map(|log| {
            let path = dir.join(format!("{}.jsonl", log.server));
            std::fs::write(&path, log.text).unwrap();
            LogFile { server: log.server, path }
        })
        .collect()
}

/// Runs a library scenario and audits its logs, written in the test's
/// directory (several tests log the same scenario at once).
fn audit(scratch: &Scratch, name: &str) -> (Trace, Report) {
    let run = run(name);
    let files = write_logs(&run, &scratch.dir(name));
    let trace = run.0;
    let report = analyze(&files, &ReadOptions::default(), |_| {});
    (trace, report)
}

fn findings<'r>(report: &'r Report, kind: FindingKind, agent: &str) -> Vec<&'r Finding> {
    report.findings.iter().filter(|f| f.kind == kind && f.client.user_agent == agent).collect()
}

/// Whether a violation's causal chain starts from a stale read.
fn caused_by_stale_read(trace: &Trace) -> bool {
    explain::explain_all(trace).iter().filter(|x| x.check != Check::TimeTravel).any(|x| {
        x.steps
            .iter()
            .any(|s| trace.get(s.entry).is_some_and(|e| e.event.is_stale_read() && e.event.is_informer_read()))
    })
}

#[test]
fn every_time_travel_the_simulator_flags_is_a_stale_read_in_the_audit_logs() {
    let scratch = Scratch::of_this_test();
    for name in library() {
        let (trace, report) = audit(&scratch, &name);
        assert!(!report.problems.any(), "{name}: the written logs read cleanly: {:?}", report.problems);
        for (entry, check, message) in trace.violations() {
            if check != Check::TimeTravel {
                continue;
            }
            // The time travel's first cause is the stale list.
            let list = trace.get(entry.causes[0]).expect("the stale list");
            let Event::ListServed(served) = &list.event else {
                panic!("{name}: a time travel caused by {:?}", list.event)
            };
            let (component, api_server, revision) = (&served.component, &served.api_server, &served.revision);
            let stale = findings(&report, FindingKind::StaleRead, component);
            assert!(
                stale.iter().any(|f| f.served_revision == Some(*revision) && f.location.server == *api_server),
                "{name}: {message}: no stale read of {component} at revision {revision} from {api_server} in\n{}",
                report.text()
            );
        }
    }
}

#[test]
fn a_violation_that_starts_from_a_stale_read_is_a_stale_read_acted_on_and_no_other_run_has_one() {
    let scratch = Scratch::of_this_test();
    for name in library() {
        let (trace, report) = audit(&scratch, &name);
        let expected = caused_by_stale_read(&trace);
        assert_eq!(
            report.acted_on_stale_read,
            expected,
            "{name}: the simulator's violations {:?}, the audit says\n{}",
            trace.violations().map(|(_, c, _)| c).collect::<Vec<_>>(),
            report.text()
        );
    }
}

#[test]
fn the_59848_run_shows_the_kubelet_its_deleted_pod_from_the_partitioned_api_server() {
    let scratch = Scratch::of_this_test();
    let (trace, report) = audit(&scratch, "pod-safety-59848");
    // The simulator: kubelet-node-1 starts the old web-0 on node-1.
    let old_uid = trace
        .entries
        .iter()
        .rev()
        .find_map(|e| match &e.event {
            Event::ContainerStarted { node, pod } if node == "node-1" && pod.name == "web-0" => Some(pod.uid.clone()),
            _ => None,
        })
        .expect("the double start");
    let stale = findings(&report, FindingKind::StaleRead, "kubelet-node-1");
    assert_eq!(stale.len(), 1, "{}", report.text());
    assert_eq!((stale[0].served_revision, stale[0].client_revision), (Some(9), Some(14)), "{}", report.text());
    assert_eq!(stale[0].location.server, "apiserver-2");
    assert_eq!(stale[0].client.username, "system:node:node-1");
    let shown = findings(&report, FindingKind::NodeAgentShownGonePod, "kubelet-node-1");
    assert_eq!(shown.len(), 1, "{}", report.text());
    assert!(shown[0].acted && shown[0].headline.contains(&old_uid[..8]), "{}", report.text());
    assert!(shown[0].headline.contains("deleted at revision 14"), "{}", shown[0].headline);
    assert!(shown[0].headline.contains("recreated as uid"), "{}", shown[0].headline);
    // No one else read anything stale.
    assert!(report.findings.iter().all(|f| f.client.user_agent == "kubelet-node-1"), "{}", report.text());
}

#[test]
fn a_restarted_controller_shown_its_deleted_owner_by_a_lagging_cache_acts_on_it() {
    // The generator restarts onto apiserver-2, whose cache still holds the
    // ConfigMapGenerator deleted at revision 4; it lists at revision 3 and
    // applies the ConfigMap of a generator that is gone. Its own writes
    // and reads reached only revision 3 (the deletion came by watch, which
    // is not audited), so only the gone object shows the list was stale.
    let scratch = Scratch::of_this_test();
    let (_, report) = audit(&scratch, "configmap-generator-stale-cache");
    let stale = findings(&report, FindingKind::StaleRead, "configmap-generator");
    let list = stale.iter().find(|f| f.headline.contains("listed configmapgenerators")).expect("the stale list");
    assert_eq!((list.served_revision, list.location.server.as_str()), (Some(3), "apiserver-2"), "{}", report.text());
    assert!(list.headline.contains("already been deleted or replaced"), "{}", list.headline);
    assert!(list.steps.iter().any(|s| s.text.contains("deleted at revision 4")), "{}", report.text());
    assert!(list.acted && list.acted_on.iter().any(|a| a.write.starts_with("patch configmaps")), "{}", report.text());
}

#[test]
fn the_flapping_replicaset_controller_acts_on_its_stale_lists_with_the_create_the_simulator_blamed() {
    let scratch = Scratch::of_this_test();
    for (name, controller) in [("replicaset-flapping", "replicaset-controller"), ("leader-failover", "replicaset-b")] {
        let (trace, report) = audit(&scratch, name);
        let (_, _, message) =
            trace.violations().find(|(_, c, _)| *c == Check::ReplicaCount).expect("a replica-count violation");
        // "replicaset-controller created pod default/web-dpbvm, but …"
        let pod = message.split_whitespace().nth(3).expect("the pod the simulator blames").trim_end_matches(',');
        let stale = findings(&report, FindingKind::StaleRead, controller);
        let pods_list = stale.iter().find(|f| f.headline.contains("listed pods")).expect("a stale list of pods");
        assert!(pods_list.acted, "{name}: {}", report.text());
        assert!(
            pods_list.acted_on.iter().any(|a| a.write == format!("create pods {pod}") && a.code == Some(201)),
            "{name}: {pod} not among the writes acted on:\n{}",
            report.text()
        );
    }
}

/// Each request is logged at the path a real API server serves its kind
/// at, and its object reference names that kind's group, version and
/// resource: a custom resource at its CRD's group, storage version and
/// plural (`/apis/example.com/v1/namespaces/default/databases/orders`),
/// a built-in kind at the group and plural of the Kubernetes API
/// reference.
#[test]
fn each_request_is_logged_at_its_kinds_group_version_and_plural() {
    let (trace, kinds) = run("database-operator");
    let logs = audit_logs(&trace, &kinds).unwrap();
    let mut resources = std::collections::BTreeSet::new();
    for line in logs.iter().flat_map(|log| log.text.lines()) {
        let event: serde_json::Value = serde_json::from_str(line).unwrap();
        let reference = &event["objectRef"];
        let (group, version, resource) = (
            reference["apiGroup"].as_str().unwrap_or_default(),
            reference["apiVersion"].as_str().unwrap(),
            reference["resource"].as_str().unwrap(),
        );
        let root = if group.is_empty() { format!("/api/{version}/") } else { format!("/apis/{group}/{version}/") };
        let uri = event["requestURI"].as_str().unwrap();
        assert!(uri.starts_with(&root), "{uri} is not under {root}");
        assert!(uri.split(['?', '/']).any(|part| part == resource), "{uri} does not name {resource}");
        resources.insert((group.to_owned(), version.to_owned(), resource.to_owned()));
    }
    for expected in [("example.com", "v1", "databases"), ("apps", "v1", "statefulsets")] {
        let expected = (expected.0.to_owned(), expected.1.to_owned(), expected.2.to_owned());
        assert!(resources.contains(&expected), "{expected:?} not among {resources:?}");
    }
}

#[test]
fn the_written_logs_are_the_same_bytes_on_every_run() {
    let (a, b) = (run("pod-safety-59848"), run("pod-safety-59848"));
    let (a, b) = (audit_logs(&a.0, &a.1).unwrap(), audit_logs(&b.0, &b.1).unwrap());
    assert_eq!(a, b);
    let scratch = Scratch::of_this_test();
    let (_, first) = audit(&scratch, "leader-failover");
    let (_, second) = audit(&scratch, "leader-failover");
    // The reports name the files by their paths: leave out the test's directory.
    let prefix = scratch.path().display().to_string();
    assert_eq!(
        first.to_json().replace(&prefix, ""),
        second.to_json().replace(&prefix, ""),
        "the report of the same logs is the same"
    );
}

/// The #59848 run's logs drawn as a trace for the playground's timeline:
/// a lane per API server (with its cache) and per client, the kubelet's
/// relist from apiserver-2 a stale read on its lane, apiserver-2's cache
/// band at the revision it answered, and the findings as violations whose
/// explanations point at the entries they cite. Read from memory (gzip
/// too, as a dropped file is) it is the same trace as from the files.
#[test]
fn the_59848_logs_draw_as_a_timeline_with_the_stale_list_marked_and_explained() {
    let scratch = Scratch::of_this_test();
    let files = write_logs(&run("pod-safety-59848"), scratch.path());
    let drawn = recon_audit::timeline(&files, &ReadOptions::default());
    let t = &drawn.trace;
    let lane = |name: &str| t.lane_named(name).unwrap_or_else(|| panic!("a lane {name}: {:?}", t.lanes));
    for name in [
        "etcd",
        "apiserver-1",
        "apiserver-1 cache",
        "apiserver-2",
        "apiserver-2 cache",
        "kubelet-node-1",
        "statefulset-controller",
        "scheduler",
    ] {
        lane(name);
    }
    assert!(
        matches!(t.lane(lane("kubelet-node-1")).role, recon_trace::LaneRole::NodeAgent { node } if t.lane(node).name == "node-1")
    );
    let stale: Vec<_> = t.entries.iter().filter(|e| e.event.is_stale_read()).collect();
    assert_eq!(stale.len(), 1, "{stale:?}");
    let list = stale[0];
    assert_eq!(list.lane, lane("kubelet-node-1"));
    assert!(
        matches!(&list.event, Event::ListServed(l) if l.revision == 9 && l.store_revision == 21 && l.api_server == "apiserver-2" && l.stale_ms > 2_900)
    );
    assert!(
        t.entries
            .iter()
            .any(|e| e.lane == lane("apiserver-2 cache") && matches!(e.event, Event::CacheRelist { revision: 9, .. }))
    );
    let violations: Vec<_> = t.violations().map(|(e, check, _)| (e.id, check, e.causes.clone())).collect();
    assert_eq!(violations.iter().map(|v| v.1).collect::<Vec<_>>(), [Check::TimeTravel, Check::PodIdentity]);
    assert!(violations.iter().all(|v| v.2 == [list.id]), "both are caused by the stale list: {violations:?}");
    assert_eq!(drawn.explanations.len(), drawn.report.findings.len());
    for x in &drawn.explanations {
        assert!(x.steps.iter().any(|s| s.entry == list.id), "{x:?}");
        assert!(x.steps.iter().all(|s| t.get(s.entry).is_some()));
    }
    // The same logs from memory, one of them gzipped.
    let inputs: Vec<Box<dyn std::io::BufRead>> = files
        .iter()
        .map(|f| {
            let text = std::fs::read(&f.path).unwrap();
            let bytes = if f.server == "apiserver-2" {
                let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
                std::io::Write::write_all(&mut gz, &text).unwrap();
                gz.finish().unwrap()
            } else {
                text
            };
            Box::new(std::io::Cursor::new(bytes)) as Box<dyn std::io::BufRead>
        })
        .collect();
    let from_memory = recon_audit::timeline_of(&files, inputs, &ReadOptions::default(), |_| {});
    assert_eq!(from_memory.trace.hash(), drawn.trace.hash());
}
