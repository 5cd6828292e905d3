//! Nothing panics, whatever the lines: every line of every fixture, cut
//! short at many places and with bytes changed, is either read as an event
//! or reported as a problem with its line.

mod support;

use std::path::PathBuf;

use recon_audit::{LogFile, ReadOptions, analyze};
use support::Scratch;

fn fixture_lines() -> Vec<String> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut lines = Vec::new();
    let mut dirs = vec![root];
    while let Some(dir) = dirs.pop() {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                dirs.push(path);
            } else {
                let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
                lines.extend(text.lines().filter(|l| !l.trim().is_empty()).map(str::to_string));
            }
        }
    }
    lines
}

/// Writes the lines as one log and checks that each is accounted for.
fn every_line_is_an_event_or_a_problem(name: &str, lines: &[String]) {
    let scratch = Scratch::of_this_test();
    let path = scratch.path().join(name);
    std::fs::write(&path, lines.join("\n")).unwrap();
    // A window as long as the log: nothing is out of order, only malformed.
    let report = analyze(
        &[LogFile::named_by_stem(path)],
        &ReadOptions { reorder_window: lines.len() + 1, ..ReadOptions::default() },
        |_| {},
    );
    let problems: u64 = report.problems.counts.iter().map(|(_, n)| n).sum();
    assert_eq!(report.events + problems, lines.len() as u64, "{name}: {:?}", report.problems.counts);
    let _ = report.text();
    let _ = report.to_json();
}

#[test]
fn lines_cut_anywhere_are_events_or_problems_never_a_panic() {
    let mut cut = Vec::new();
    for line in fixture_lines() {
        // Keep the first line of the file an audit.k8s.io/v1 event, so the
        // file is not refused as a whole.
        for at in (1..line.len()).step_by(17) {
            if line.is_char_boundary(at) {
                cut.push(line[..at].to_string());
            }
        }
    }
    let first = fixture_lines().into_iter().find(|l| l.contains("\"audit.k8s.io/v1\"")).unwrap();
    cut.insert(0, first);
    every_line_is_an_event_or_a_problem("cut.jsonl", &cut);
}

#[test]
fn lines_with_values_changed_are_events_or_problems_never_a_panic() {
    let swaps = [
        ("\"resourceVersion\":\"", "\"resourceVersion\":\"18446744073709551615"),
        ("\"resourceVersion\":\"", "\"resourceVersion\":\"-"),
        ("\"code\":", "\"code\":99999"),
        ("\"stage\":\"ResponseComplete\"", "\"stage\":\"Done\""),
        ("\"verb\":\"", "\"verb\":\"x"),
        ("\"requestURI\":\"/api", "\"requestURI\":\"/"),
        ("\"stageTimestamp\":\"2", "\"stageTimestamp\":\"9"),
        ("\"items\":[", "\"items\":[{},"),
        ("\"username\":\"", "\"username\":\"system:node:"),
        ("2024-05-01T12:", "2024-02-31T25:"),
    ];
    let mut changed = Vec::new();
    for line in fixture_lines() {
        for (from, to) in swaps {
            if line.contains(from) {
                changed.push(line.replacen(from, to, 1));
            }
        }
    }
    let first = fixture_lines().into_iter().find(|l| l.contains("\"audit.k8s.io/v1\"")).unwrap();
    changed.insert(0, first);
    every_line_is_an_event_or_a_problem("changed.jsonl", &changed);
}
