//! `recon run --audit-log` and `recon audit` as a user runs them: the
//! library's runs written as audit logs and read back, exit statuses,
//! JSON, naming, bad input.

// The same scratch directories as recon-audit's tests.
#[path = "../../audit/tests/support/mod.rs"]
mod support;

use std::path::PathBuf;
use std::process::{Command, Output};

use support::Scratch;

fn scenario(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios").join(name).display().to_string()
}

fn fixture(path: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../audit/tests/fixtures").join(path).display().to_string()
}

fn recon(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_recon")).args(args).output().expect("recon runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Runs a library scenario with `--audit-log` and returns the directory of its logs,
/// in the test's own (tests running at once log the same scenario).
fn logs_of(scratch: &Scratch, name: &str) -> PathBuf {
    let dir = scratch.dir(name);
    let out = recon(&["run", &scenario(&format!("{name}.yaml")), "--audit-log", dir.to_str().unwrap()]);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{name}: {}", stderr(&out));
    dir
}

/// The logs are written beside their files and renamed over them once
/// all are whole: nothing else is left in the directory, and a run whose
/// logs cannot be written (here the place beside one is taken by a
/// directory) exits 2 naming the file, and leaves the files there as they
/// were.
#[test]
fn audit_logs_appear_whole_or_leave_the_files_as_they_were() {
    let scratch = Scratch::of_this_test();
    let dir = logs_of(&scratch, "pod-safety-59848");
    let mut names: Vec<String> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    assert_eq!(names, ["apiserver-1.jsonl", "apiserver-2.jsonl"]);
    let before = std::fs::read_to_string(dir.join("apiserver-1.jsonl")).unwrap();
    std::fs::write(dir.join("apiserver-2.jsonl"), "the last run's log").unwrap();
    std::fs::create_dir(dir.join("apiserver-2.jsonl.partial")).unwrap();
    let out = recon(&["run", &scenario("pod-safety-59848.yaml"), "--audit-log", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let two = dir.join("apiserver-2.jsonl");
    assert!(stderr(&out).starts_with(&format!("{}: cannot write the audit log: ", two.display())), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&two).unwrap(), "the last run's log");
    assert_eq!(std::fs::read_to_string(dir.join("apiserver-1.jsonl")).unwrap(), before);
    assert!(!dir.join("apiserver-1.jsonl.partial").exists(), "the other log's partial file is gone");
}

#[test]
fn the_59848_run_writes_one_log_per_api_server_in_the_audit_format() {
    let scratch = Scratch::of_this_test();
    let dir = logs_of(&scratch, "pod-safety-59848");
    let one = std::fs::read_to_string(dir.join("apiserver-1.jsonl")).expect("apiserver-1's log");
    let two = std::fs::read_to_string(dir.join("apiserver-2.jsonl")).expect("apiserver-2's log");
    for line in one.lines().chain(two.lines()) {
        let e: serde_json::Value = serde_json::from_str(line).expect("one JSON event per line");
        assert_eq!((e["kind"].as_str(), e["apiVersion"].as_str()), (Some("Event"), Some("audit.k8s.io/v1")));
        assert!(e["auditID"].is_string() && e["stageTimestamp"].as_str().is_some_and(|t| t.starts_with("1970-01-01T")));
    }
    // The kubelet's relist from the partitioned server: its read mode in
    // the URI, the list's revision in the response's metadata.
    let list: serde_json::Value = serde_json::from_str(two.lines().next().expect("one event")).unwrap();
    assert_eq!(list["verb"], "list");
    assert_eq!(list["requestURI"], "/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-1&resourceVersion=0");
    assert_eq!(list["user"]["username"], "system:node:node-1");
    assert_eq!(list["responseObject"]["metadata"]["resourceVersion"], "9");
    // Writes carry the revision they committed.
    let delete = one
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|e| e["verb"] == "delete" && e["user"]["username"] == "system:node:node-1")
        .expect("the kubelet's delete of web-0");
    assert_eq!(delete["level"], "RequestResponse");
    assert_eq!(delete["responseObject"]["metadata"]["resourceVersion"], "14");
}

#[test]
fn recon_audit_finds_the_59848_stale_list_and_exits_1() {
    let scratch = Scratch::of_this_test();
    let dir = logs_of(&scratch, "pod-safety-59848");
    let out = recon(&["audit", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}{}", stdout(&out), stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("[stale read] system:node:node-1 (kubelet-node-1) listed pods from apiserver-2 at revision 9, 5 behind revision 14 it had already written"), "{text}");
    assert!(text.contains("[#59848: node agent shown a gone pod, acted on]"), "{text}");
    assert!(text.contains("recreated as uid"), "{text}");
    assert!(stderr(&out).is_empty(), "no progress when standard error is not a terminal: {}", stderr(&out));
}

#[test]
fn the_json_report_is_stable_and_says_what_was_acted_on() {
    let scratch = Scratch::of_this_test();
    let dir = logs_of(&scratch, "replicaset-flapping");
    let a = recon(&[
        "audit",
        "--json",
        dir.join("apiserver-1.jsonl").to_str().unwrap(),
        dir.join("apiserver-2.jsonl").to_str().unwrap(),
    ]);
    let b = recon(&["audit", "--json", dir.to_str().unwrap()]);
    assert_eq!(a.status.code(), Some(1));
    assert_eq!(stdout(&a), stdout(&b), "the same logs give the same bytes");
    let report: serde_json::Value = serde_json::from_str(&stdout(&a)).expect("JSON");
    assert_eq!(report["actedOnStaleRead"], true);
    let finding = &report["findings"][0];
    assert_eq!(finding["kind"], "staleRead");
    assert_eq!(finding["client"]["userAgent"], "replicaset-controller");
    assert_eq!((finding["servedRevision"].as_u64(), finding["clientRevision"].as_u64()), (Some(36), Some(69)));
    assert!(finding["actedOn"].as_array().is_some_and(|a| !a.is_empty()));
}

#[test]
fn the_fixed_variants_have_nothing_acted_on_and_exit_0() {
    let scratch = Scratch::of_this_test();
    for name in [
        "pod-safety-59848-quorum",
        "pod-safety-59848-consistent",
        "pod-safety-59848-no-partition",
        "pod-safety-59848-fixed-kubelet",
    ] {
        let dir = logs_of(&scratch, name);
        let out = recon(&["audit", dir.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(0), "{name}: {}", stdout(&out));
        assert!(!stdout(&out).contains("acted on]"), "{name}: {}", stdout(&out));
    }
}

#[test]
fn bad_input_exits_2_with_file_and_line_and_still_reports_the_rest() {
    let out = recon(&[
        "audit",
        &fixture("bad/truncated.jsonl"),
        &fixture("stale-list/apiserver-a.jsonl"),
        &fixture("stale-list/apiserver-b.jsonl"),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    let text = stdout(&out);
    assert!(text.contains("truncated.jsonl:3: the line ends before its event does"), "{text}");
    assert!(text.contains("[stale read, acted on]"), "the good logs are still judged: {text}");
    assert!(stderr(&out).contains("bad input: 1 line(s) skipped, 0 file(s) refused"), "{}", stderr(&out));

    let out = recon(&["audit", &fixture("bad/v1beta1.jsonl")]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stdout(&out).contains("v1beta1.jsonl:1: apiVersion \"audit.k8s.io/v1beta1\" is not audit.k8s.io/v1"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn logs_are_named_by_their_file_or_by_server_and_ambiguous_names_are_refused() {
    let out = recon(&[
        "audit",
        "--server",
        &format!("kube-apiserver-a={}", fixture("stale-list/apiserver-a.jsonl")),
        "--server",
        &format!("kube-apiserver-b={}", fixture("stale-list/apiserver-b.jsonl")),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stdout(&out).contains("listed pods from kube-apiserver-b at revision 1003"), "{}", stdout(&out));

    // Two files both called apiserver.jsonl: whose is whose?
    let out = recon(&["audit", &fixture("conflict-storm/apiserver.jsonl"), &fixture("quorum-behind/apiserver.jsonl")]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("are both named \"apiserver\" by their file names; name them with --server NAME=FILE"),
        "{}",
        stderr(&out)
    );

    let out = recon(&["audit", "--server", "nameless"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("expected NAME=FILE"), "{}", stderr(&out));
}

#[test]
fn progress_is_printed_when_asked() {
    let out = recon(&["audit", "--progress", &fixture("conflict-storm/apiserver.jsonl")]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(stderr(&out).contains("read 6 events from 1 log(s) in "), "{}", stderr(&out));
    assert!(!stderr(&out).contains('\r'), "a line at a time off a terminal: {:?}", stderr(&out));
}

/// `recon audit --scenario`: #59848's logs become a scenario that `recon
/// run` runs to the same violations, and whose own logs `recon audit`
/// judges as it judged the original's (exit 1, the stale list found).
#[test]
fn the_59848_logs_replay_with_recon_run_and_audit_alike() {
    let scratch = Scratch::of_this_test();
    let dir = logs_of(&scratch, "pod-safety-59848");
    let replay = scratch.path().join("replay.yaml");
    let out = recon(&["audit", dir.to_str().unwrap(), "--scenario", replay.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}{}", stdout(&out), stderr(&out));
    assert!(stderr(&out).contains("4 component(s), 3 script step(s)"), "{}", stderr(&out));
    let replayed_logs = scratch.dir("replayed-logs");
    let run = recon(&["run", replay.to_str().unwrap(), "--audit-log", replayed_logs.to_str().unwrap()]);
    assert_eq!(run.status.code(), Some(1), "{}{}", stdout(&run), stderr(&run));
    assert!(stdout(&run).contains("[pod identity] pod default/web-0 runs on two nodes at once"), "{}", stdout(&run));
    let again = recon(&["audit", replayed_logs.to_str().unwrap()]);
    assert_eq!(again.status.code(), Some(1));
    assert!(stdout(&again).contains("[#59848: node agent shown a gone pod, acted on]"), "{}", stdout(&again));
}

/// A log whose replay needs a plugin says so, and what it could not carry over, file and line.
#[test]
fn a_replay_names_the_plugins_to_upload_and_what_it_left_out() {
    let scratch = Scratch::of_this_test();
    let replay = scratch.path().join("replay.yaml");
    let out = recon(&["audit", &fixture("replay"), "--scenario", replay.to_str().unwrap()]);
    let err = stderr(&out);
    assert!(err.contains("component my-operator: no built-in controller recognised"), "{err}");
    assert!(err.contains("--plugin my-operator=YOUR.wasm"), "{err}");
    assert!(
        err.contains("not carried over: a user's write to a subresource other than scale:")
            && err.contains("apiserver-a.jsonl:9:"),
        "{err}"
    );
    let run = recon(&["run", replay.to_str().unwrap()]);
    assert_eq!(run.status.code(), Some(2), "without its plugin the operator cannot run");
    assert!(stderr(&run).contains("unknown controller \"my-operator\""), "{}", stderr(&run));
}
