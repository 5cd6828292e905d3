//! Hand-written audit logs in the real format (`tests/fixtures/`), one set
//! per finding and one file per kind of bad input. Which documented
//! behaviour each expectation follows is in `tests/README.md`.

mod support;

use std::io::Write;
use std::path::PathBuf;

use recon_audit::input::ProblemKind;
use recon_audit::{FindingKind, LogFile, ReadOptions, Report, Unjudged, analyze};
use support::Scratch;

fn fixture(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(path)
}

/// Every `.jsonl` file of a fixture directory, each its own API server, by name.
fn logs(dir: &str) -> Vec<LogFile> {
    let mut files: Vec<PathBuf> =
        std::fs::read_dir(fixture(dir)).expect("fixture directory").map(|e| e.expect("entry").path()).collect();
    files.sort();
    files.into_iter().map(LogFile::named_by_stem).collect()
}

fn audit(files: &[LogFile]) -> Report {
    analyze(files, &ReadOptions::default(), |_| {})
}

fn count(report: &Report, reason: Unjudged) -> u64 {
    report.cannot_judge.iter().find(|c| c.reason == reason).map_or(0, |c| c.count)
}

#[test]
fn a_list_below_the_clients_own_write_is_a_stale_read_and_the_delete_after_it_is_acted_on() {
    let report = audit(&logs("stale-list"));
    assert!(!report.problems.any(), "{:?}", report.problems);
    let stale: Vec<_> = report.findings.iter().filter(|f| f.kind == FindingKind::StaleRead).collect();
    assert_eq!(stale.len(), 1, "{}", report.text());
    let f = stale[0];
    assert_eq!(f.client.username, "system:serviceaccount:kube-system:replicaset-controller");
    // Served at 1003 from apiserver-b after the controller itself had written 1006 through apiserver-a.
    assert_eq!((f.served_revision, f.client_revision, f.cluster_revision), (Some(1003), Some(1006), Some(1006)));
    assert_eq!((f.location.server.as_str(), f.location.line), ("apiserver-b", 1));
    // It showed web-a, which kubectl had deleted at 1005.
    assert!(
        f.steps.iter().any(|s| s.text.contains("pods default/web-a") && s.text.contains("deleted at revision 1005")),
        "{}",
        report.text()
    );
    // Then the controller deleted web-b: one pod too many.
    assert!(f.acted, "{}", report.text());
    assert_eq!(f.acted_on.len(), 1);
    assert_eq!((f.acted_on[0].write.as_str(), f.acted_on[0].revision), ("delete pods default/web-b", Some(1007)));
    // apiserver-b's cache answered a list at 1007 afterwards: its watch had caught up.
    assert!(f.caught_up.as_ref().is_some_and(|s| s.text.contains("had caught up")), "{:?}", f.caught_up);
    assert!(report.acted_on_stale_read);
    assert_eq!(count(&report, Unjudged::Watches), 1);
}

#[test]
fn a_kubelet_shown_its_deleted_pod_after_a_relist_is_issue_59848_and_its_status_write_is_the_evidence() {
    let report = audit(&logs("node-agent-59848"));
    assert!(!report.problems.any(), "{:?}", report.problems);
    let shown: Vec<_> = report.findings.iter().filter(|f| f.kind == FindingKind::NodeAgentShownGonePod).collect();
    assert_eq!(shown.len(), 1, "{}", report.text());
    let f = shown[0];
    assert_eq!(f.client.username, "system:node:node-1");
    assert!(f.headline.contains("pod default/web-0 (uid c3ec6fc9)"), "{}", f.headline);
    assert!(f.headline.contains("deleted at revision 2012 (by system:node:node-1)"), "{}", f.headline);
    assert!(f.headline.contains("recreated as uid 689266e6 at revision 2014"), "{}", f.headline);
    assert!(f.acted);
    // The kubelet then wrote the old pod's status: refused, but proof that it ran it.
    assert_eq!(f.acted_on.len(), 1, "{}", report.text());
    assert_eq!((f.acted_on[0].write.as_str(), f.acted_on[0].code), ("update pods default/web-0 (status)", Some(409)));
    // The same list is a stale read (below the kubelet's own delete at 2012)…
    let stale = report.findings.iter().find(|f| f.kind == FindingKind::StaleRead).expect("a stale read");
    assert_eq!((stale.served_revision, stale.client_revision), (Some(2005), Some(2012)));
    // …and the status write was decided on the replaced incarnation.
    let write = report.findings.iter().find(|f| f.kind == FindingKind::StaleWrite).expect("a stale write");
    assert!(!write.acted, "refused by its precondition");
    assert!(write.headline.contains("on its version at revision 2003"), "{}", write.headline);
    assert!(report.acted_on_stale_read);
    // The scheduler's bindings answer with a Status: no revision.
    assert_eq!(count(&report, Unjudged::WritesWithoutRevision), 2);
}

#[test]
fn updates_refused_again_and_again_on_a_replaced_version_are_one_conflict_storm_not_acted_on() {
    let report = audit(&logs("conflict-storm"));
    let storms: Vec<_> = report.findings.iter().filter(|f| f.kind == FindingKind::StaleWrite).collect();
    assert_eq!(storms.len(), 1, "{}", report.text());
    let f = storms[0];
    assert_eq!(f.times, 3);
    assert!(!f.acted);
    assert!(
        f.steps.iter().any(|s| s.text.contains("kubernetes-admin via apiserver: updated deployments.apps default/web")),
        "{}",
        report.text()
    );
    assert!(f.steps.iter().any(|s| s.text.contains("refused with 409 Conflict")), "{}", report.text());
    // A conflict is the precondition doing its job: exit status 0.
    assert!(!report.acted_on_stale_read);
    // kubectl's patch names no version.
    assert_eq!(count(&report, Unjudged::UnconditionalWrites), 1);
}

#[test]
fn a_read_that_had_to_be_the_most_recent_state_and_missed_a_completed_write_is_stale() {
    let report = audit(&logs("quorum-behind"));
    let f = report.findings.iter().find(|f| f.kind == FindingKind::StaleRead).expect("a stale read");
    assert_eq!((f.served_revision, f.client_revision), (Some(4001), None));
    assert!(f.headline.contains("had to be the most recent"), "{}", f.headline);
    assert!(
        f.steps.iter().any(|s| s.text.contains("web-q") && s.text.contains("deleted at revision 4002")),
        "{}",
        report.text()
    );
}

#[test]
fn logs_at_the_metadata_level_judge_nothing_and_say_why() {
    let report = audit(&logs("metadata-only"));
    assert!(report.findings.is_empty());
    assert!(!report.acted_on_stale_read);
    assert_eq!(report.writes, 0);
    assert_eq!(count(&report, Unjudged::ReadsWithoutRevision), 2);
    assert_eq!(count(&report, Unjudged::WritesWithoutRevision), 1);
    let text = report.text();
    assert!(text.contains("no write carried its committed revision"), "{text}");
    assert!(text.contains("2 read(s) without a response revision"), "{text}");
}

#[test]
fn a_truncated_last_line_is_skipped_with_its_file_and_line() {
    let files = [LogFile::named_by_stem(fixture("bad/truncated.jsonl"))];
    let report = audit(&files);
    assert_eq!(report.events, 2);
    let p = &report.problems.kept[0];
    assert_eq!((p.kind, p.line, p.refused), (ProblemKind::Truncated, 3, false));
    assert!(p.file.ends_with("truncated.jsonl"));
    assert!(p.to_string().contains("truncated.jsonl:3: the line ends before its event does"), "{p}");
    assert!(p.detail.contains("no newline"), "{p}");
}

#[test]
fn lines_that_are_not_audit_events_are_skipped_and_the_rest_is_read() {
    let report = audit(&[LogFile::named_by_stem(fixture("bad/not-an-event.jsonl"))]);
    assert_eq!(report.events, 2, "the two events around them are read");
    let kinds: Vec<(ProblemKind, u64)> = report.problems.kept.iter().map(|p| (p.kind, p.line)).collect();
    // Line 2 is a klog line, line 3 a Status; the blank line 4 is ignored.
    assert_eq!(kinds, [(ProblemKind::NotJson, 2), (ProblemKind::NotAnEvent, 3)]);
    assert!(report.problems.kept[1].detail.contains("kind \"Status\""), "{}", report.problems.kept[1]);
    assert_eq!(report.problems.skipped_lines, 2);
}

#[test]
fn events_out_of_order_are_reordered_within_the_window_and_skipped_beyond_it() {
    let files = [LogFile::named_by_stem(fixture("bad/out-of-order.jsonl"))];
    // Within the window (the default), line 4 is put back in its place.
    let report = audit(&files);
    assert!(!report.problems.any(), "{:?}", report.problems);
    assert_eq!(report.events, 4);
    // With a window of two, line 4 comes after a later event was passed on.
    let report = analyze(&files, &ReadOptions { reorder_window: 2, ..ReadOptions::default() }, |_| {});
    assert_eq!(report.events, 3);
    let p = &report.problems.kept[0];
    assert_eq!((p.kind, p.line, p.refused), (ProblemKind::OutOfOrder, 4, false));
    assert!(p.detail.contains("earlier than that of line 2"), "{p}");
}

#[test]
fn a_file_of_another_audit_version_is_refused_whole_and_a_stray_line_of_it_skipped() {
    let report = audit(&[LogFile::named_by_stem(fixture("bad/v1beta1.jsonl"))]);
    assert_eq!(report.events, 0, "nothing of a refused file is used, not even its v1 line");
    let p = &report.problems.kept[0];
    assert_eq!((p.kind, p.line, p.refused), (ProblemKind::UnknownApiVersion, 1, true));
    assert!(p.detail.contains("audit.k8s.io/v1beta1"), "{p}");
    assert_eq!(report.problems.refused_files.len(), 1);

    let report = audit(&[LogFile::named_by_stem(fixture("bad/mixed-version.jsonl"))]);
    assert_eq!(report.events, 2);
    let p = &report.problems.kept[0];
    assert_eq!((p.kind, p.line, p.refused), (ProblemKind::UnknownApiVersion, 2, false));
}

#[test]
fn a_missing_file_is_refused_and_the_others_are_still_read() {
    let files = [
        LogFile::named_by_stem(fixture("no-such-file.jsonl")),
        LogFile::named_by_stem(fixture("quorum-behind/apiserver.jsonl")),
    ];
    let report = audit(&files);
    assert_eq!(report.events, 3);
    let p = &report.problems.kept[0];
    assert_eq!((p.kind, p.line, p.refused), (ProblemKind::Unreadable, 0, true));
    assert!(p.to_string().contains("no-such-file.jsonl: cannot read it"), "{p}");
    assert_eq!(report.findings.len(), 1, "the readable file is still judged");
}

fn gzip(bytes: &[u8], level: flate2::Compression) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), level);
    gz.write_all(bytes).unwrap();
    gz.finish().unwrap()
}

#[test]
fn gzip_logs_read_like_plain_ones_and_a_cut_gzip_is_refused_from_where_it_breaks() {
    let scratch = Scratch::of_this_test();
    let plain = logs("stale-list");
    let mut zipped = Vec::new();
    for f in &plain {
        let path = scratch.path().join(format!("{}.jsonl.gz", f.server));
        std::fs::write(&path, gzip(&std::fs::read(&f.path).unwrap(), flate2::Compression::default())).unwrap();
        zipped.push(LogFile::named_by_stem(path));
    }
    assert_eq!(zipped[0].server, "apiserver-a");
    let (a, b) = (audit(&plain), audit(&zipped));
    // The same findings, told the same way (only the file names differ).
    let told = |r: &Report| -> Vec<(String, Vec<String>)> {
        r.findings.iter().map(|f| (f.headline.clone(), f.steps.iter().map(|s| s.text.clone()).collect())).collect()
    };
    assert_eq!(told(&a), told(&b));
    assert_eq!(a.events, b.events);

    // Stored (uncompressed) blocks, so the part before the cut decompresses.
    let whole =
        gzip(&std::fs::read(fixture("node-agent-59848/apiserver-1.jsonl")).unwrap(), flate2::Compression::none());
    let cut = scratch.path().join("cut.jsonl.gz");
    std::fs::write(&cut, &whole[..whole.len() / 2]).unwrap();
    let report = audit(&[LogFile::named_by_stem(cut)]);
    let p = report.problems.kept.last().expect("a problem");
    assert!(p.refused && matches!(p.kind, ProblemKind::Unreadable | ProblemKind::Truncated), "{p}");
    assert!(report.events > 0, "what came before the break is read");
}

#[test]
fn named_servers_keep_their_names_in_the_findings() {
    let mut files = logs("stale-list");
    files[1].server = "kube-apiserver-2".into();
    let report = audit(&files);
    let f = report.findings.iter().find(|f| f.kind == FindingKind::StaleRead).expect("a stale read");
    assert_eq!(f.location.server, "kube-apiserver-2");
    assert!(f.headline.contains("from kube-apiserver-2"), "{}", f.headline);
}

/// One minimal `RequestResponse` event line.
fn line(verb: &str, uri: &str, at: &str, response: &str) -> String {
    format!(
        r#"{{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"RequestResponse","auditID":"{at}","stage":"ResponseComplete","requestURI":"{uri}","verb":"{verb}","user":{{"username":"system:serviceaccount:kube-system:job-controller"}},"userAgent":"kube-controller-manager","responseStatus":{{"code":200}},"responseObject":{response},"stageTimestamp":"2024-05-01T12:00:{at}Z"}}"#
    )
}

#[test]
fn events_count_their_own_revisions_and_are_left_out_of_the_history() {
    let log = [
        line(
            "create",
            "/api/v1/namespaces/default/pods",
            "01.000000",
            r#"{"kind":"Pod","metadata":{"name":"a","namespace":"default","uid":"u1","resourceVersion":"1002"}}"#,
        ),
        // An Event from an etcd of its own: revision 900000 of another sequence.
        line(
            "create",
            "/api/v1/namespaces/default/events",
            "02.000000",
            r#"{"kind":"Event","metadata":{"name":"a.1","namespace":"default","uid":"e1","resourceVersion":"900000"}}"#,
        ),
        line(
            "list",
            "/api/v1/namespaces/default/pods?resourceVersion=0",
            "03.000000",
            r#"{"kind":"PodList","metadata":{"resourceVersion":"1003"},"items":[]}"#,
        ),
    ]
    .join("\n");
    let scratch = Scratch::of_this_test();
    let path = scratch.path().join("events.jsonl");
    std::fs::write(&path, log).unwrap();
    let report = audit(&[LogFile::named_by_stem(path)]);
    assert!(report.findings.is_empty(), "{}", report.text());
    assert_eq!(count(&report, Unjudged::SeparateRevisions), 1);
    assert_eq!(report.revisions, Some((1002, 1002)));
}
