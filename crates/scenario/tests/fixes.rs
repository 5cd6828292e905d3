//! Upstream fixes as switches: how a scenario declares them, how they are
//! checked (at their line and column), turned on, and what a scenario with
//! some of them on runs and expects.

use recon_scenario::{Check, ListMode, parse};
use serde_json::json;

/// A bug with two fixes: one changes a parameter, the other the list mode
/// and the controller.
const TWO_FIXES: &str = "\
name: stale
source: https://github.com/kubernetes/kubernetes/issues/129795
apiServers: [{name: a}]
components:
  - {name: rs, controller: replicaset, apiServer: a, params: {expectationsTimeoutMs: 3000}}
  - {name: other, controller: scheduler, apiServer: a}
checks: {enabled: [replicaCount, timeTravel]}
expect: {violations: [replicaCount, timeTravel]}
fixes:
  - name: gate
    summary: Skip the sync until the informer has seen the last write.
    link: https://github.com/kubernetes/enhancements/issues/5647
    components:
      - {name: rs, params: {staleControllerConsistency: true}}
    expect: {violations: [timeTravel]}
  - name: quorum
    summary: List from etcd.
    components:
      - {name: rs, listMode: quorum, controller: replicaset-fixed}
";

fn problems(text: &str) -> Vec<(usize, usize, String)> {
    let error = parse("test.yaml", text).expect_err("the scenario should be rejected");
    error.diagnostics.into_iter().map(|d| (d.line, d.column, d.message)).collect()
}

#[test]
fn a_scenario_declares_its_source_lesson_and_fixes_and_writes_them_back() {
    let text = format!("{TWO_FIXES}lesson: An expired expectation is not a fulfilled one.\n");
    let scenario = parse("test.yaml", &text).unwrap();
    assert_eq!(scenario.source, "https://github.com/kubernetes/kubernetes/issues/129795");
    assert_eq!(scenario.lesson, "An expired expectation is not a fulfilled one.");
    let names: Vec<&str> = scenario.fixes.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["gate", "quorum"]);
    assert!(scenario.fixes.iter().all(|f| !f.enabled), "fixes are off unless turned on");
    assert_eq!(scenario.fixes[1].expect.violations, [], "a fix expects a clean run unless it says");
    let back = parse("again.yaml", &recon_scenario::to_yaml(&scenario)).unwrap();
    assert_eq!(back, scenario);
}

#[test]
fn with_no_fix_on_the_scenario_runs_as_written() {
    let scenario = parse("test.yaml", TWO_FIXES).unwrap();
    let run = scenario.with_fixes_applied();
    assert_eq!(run.components, scenario.components);
    assert_eq!(run.expect, scenario.expect);
    assert!(run.fixes.is_empty(), "what runs has no switches left");
}

#[test]
fn a_fix_turned_on_changes_its_components_and_what_the_run_expects() {
    let mut scenario = parse("test.yaml", TWO_FIXES).unwrap();
    scenario.set_fix("gate", true).unwrap();
    let run = scenario.with_fixes_applied();
    let rs = &run.components[0];
    assert_eq!(rs.params.get("staleControllerConsistency"), Some(&json!(true)));
    assert_eq!(rs.params.get("expectationsTimeoutMs"), Some(&json!(3000)), "the component's other params stay");
    assert_eq!(rs.controller, "replicaset");
    assert_eq!(run.components[1], scenario.components[1], "components it does not name are untouched");
    assert_eq!(run.expect.violations, [Check::TimeTravel]);
    // Applying again changes nothing: every front end may call it.
    assert_eq!(run.with_fixes_applied(), run);
    // A switch travels with the scenario's text.
    let back = parse("again.yaml", &recon_scenario::to_yaml(&scenario)).unwrap();
    assert!(back.fixes[0].enabled);
}

#[test]
fn several_fixes_on_expect_only_what_every_one_of_them_leaves_broken() {
    let mut scenario = parse("test.yaml", TWO_FIXES).unwrap();
    scenario.set_fix("gate", true).unwrap();
    scenario.set_fix("quorum", true).unwrap();
    let run = scenario.with_fixes_applied();
    assert_eq!(run.expect.violations, []);
    assert_eq!(run.components[0].controller, "replicaset-fixed");
    assert_eq!(run.components[0].list_mode, Some(ListMode::Quorum));
    assert_eq!(run.components[0].params.get("staleControllerConsistency"), Some(&json!(true)));
}

#[test]
fn turning_on_an_unknown_fix_names_the_declared_ones() {
    let mut scenario = parse("test.yaml", TWO_FIXES).unwrap();
    let error = scenario.set_fix("gaet", true).unwrap_err();
    assert_eq!(error, "the scenario declares no fix \"gaet\" (it declares: gate, quorum)");
    scenario.fixes.clear();
    assert!(scenario.set_fix("gate", true).unwrap_err().contains("declares no fixes"));
}

#[test]
fn a_fix_naming_an_unknown_component_is_reported_at_its_line_and_column() {
    let text = TWO_FIXES.replace("- {name: rs, listMode", "- {name: rss, listMode");
    assert_eq!(problems(&text), [(19, 16, "unknown component `rss` (defined: other, rs)".to_owned())]);
}

#[test]
fn a_fix_needs_a_unique_name_a_summary_a_change_and_checks_for_its_expectation() {
    let text = TWO_FIXES
        .replace("name: quorum", "name: gate")
        .replace("summary: List from etcd.", "summary: ''")
        .replace("expect: {violations: [timeTravel]}", "expect: {violations: [podIdentity]}")
        .replace("- {name: rs, params: {staleControllerConsistency: true}}", "- {name: rs}");
    assert_eq!(
        problems(&text),
        [
            (14, 9, "this change of `rs` sets no controller, listMode, params or mitigations".to_owned()),
            (
                15,
                27,
                "expects a pod identity violation, but the pod identity check is not in checks.enabled".to_owned()
            ),
            (16, 11, "fix `gate` is defined twice (first at line 10)".to_owned()),
            (17, 14, "fix `gate` needs a one-sentence summary".to_owned()),
        ]
    );
    let text = TWO_FIXES.replace(
        "    components:\n      - {name: rs, listMode: quorum, controller: replicaset-fixed}\n",
        "    components: []\n",
    );
    assert_eq!(
        problems(&text),
        [(18, 17, "fix `quorum` changes nothing: name at least one component and what changes in it".to_owned())]
    );
}

#[test]
fn an_unknown_field_of_a_fix_is_reported_at_its_key() {
    let text = TWO_FIXES.replace("    summary: List from etcd.", "    sumary: List from etcd.");
    let found = problems(&text);
    assert_eq!(found.len(), 1);
    assert_eq!((found[0].0, found[0].1), (17, 5));
    assert!(found[0].2.contains("sumary"), "{found:?}");
}

#[test]
fn a_lesson_of_more_than_one_line_is_refused_at_its_line() {
    let text =
        TWO_FIXES.replace("apiServers:", "lesson: \"An expired expectation\\nis not a fulfilled one.\"\napiServers:");
    let found = problems(&text);
    assert_eq!(found.len(), 1, "{found:?}");
    let (line, _, message) = &found[0];
    assert_eq!(*line, 3, "{found:?}");
    assert!(message.contains("one line"), "{message}");
}

/// A component's mitigations: known names parse, travel through a fix and
/// back through YAML; an unknown one is an error at its line and column.
const MITIGATED: &str = "\
name: own-writes
apiServers: [{name: a}]
components:
  - {name: rs, controller: replicaset, apiServer: a, mitigations: [readYourOwnWrites]}
fixes:
  - name: kep
    summary: Skip the sync until the informers have seen its own writes.
    components:
      - {name: rs, mitigations: [staleControllerConsistency]}
";

#[test]
fn mitigations_parse_switch_on_through_a_fix_and_survive_yaml() {
    use recon_scenario::Mitigation;
    let mut scenario = parse("own-writes.yaml", MITIGATED).unwrap();
    assert_eq!(scenario.components[0].mitigations, [Mitigation::ReadYourOwnWrites]);
    scenario.set_fix("kep", true).unwrap();
    let run = scenario.with_fixes_applied();
    assert_eq!(run.components[0].mitigations, [Mitigation::ReadYourOwnWrites, Mitigation::StaleControllerConsistency]);
    let back = parse("again.yaml", &recon_scenario::to_yaml(&run)).unwrap();
    assert_eq!(back.components[0].mitigations, run.components[0].mitigations);
    assert!(scenario.set_mitigation("rs", "noSuchThing", true).unwrap_err().contains("readYourOwnWrites"));
    assert!(scenario.set_mitigation("nobody", "readYourOwnWrites", true).unwrap_err().contains("rs"));
}

#[test]
fn an_unknown_mitigation_is_reported_at_its_line_and_column() {
    let text = MITIGATED.replace("mitigations: [readYourOwnWrites]", "mitigations: [readMyMind]");
    let found = problems(&text);
    let [(line, column, message)] = &found[..] else { panic!("{found:?}") };
    assert_eq!(*line, 4, "{message}");
    assert!(*column > 1, "{column}");
    assert!(message.contains("readMyMind"), "{message}");
}
