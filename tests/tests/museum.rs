//! The museum of real bugs: every library scenario that declares upstream
//! fixes shows the outcome it expects with no fix on, with each fix on
//! alone, and with every combination of them (the outcome of several is
//! what all of them still expect; see `Scenario::with_fixes_applied`).

use std::collections::BTreeSet;

use recon_scenario::{Check, Scenario};
use recon_tests::{all_scenarios, load, run};
use recon_trace::explain;

/// The checks a run of `scenario` (its enabled fixes made) violated.
fn violated(scenario: &Scenario) -> BTreeSet<Check> {
    run(scenario).violations().map(|(_, check, _)| check).collect()
}

/// The scenario with exactly the fixes in `on` turned on.
fn with_fixes(scenario: &Scenario, on: &[&str]) -> Scenario {
    let mut s = scenario.clone();
    for fix in on {
        s.set_fix(fix, true).unwrap();
    }
    s
}

#[test]
fn every_library_scenario_with_fixes_shows_its_expected_outcome_under_every_combination_of_them() {
    let mut museum = 0;
    for path in all_scenarios() {
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        let scenario = load(&stem);
        if scenario.fixes.is_empty() {
            continue;
        }
        museum += 1;
        assert!(scenario.source.starts_with("https://"), "{stem}: a museum entry links its public issue");
        assert!(!scenario.lesson.is_empty(), "{stem}: a museum entry says its lesson in a line");
        assert!(!scenario.expect.violations.is_empty(), "{stem}: with no fix on, the bug shows");
        let names: Vec<&str> = scenario.fixes.iter().map(|f| f.name.as_str()).collect();
        for mask in 0..1u32 << names.len() {
            let on: Vec<&str> = names.iter().enumerate().filter(|(i, _)| mask & 1 << i != 0).map(|(_, n)| *n).collect();
            let fixed = with_fixes(&scenario, &on);
            let expected: BTreeSet<Check> = fixed.with_fixes_applied().expect.violations.into_iter().collect();
            assert_eq!(violated(&fixed), expected, "{stem} with fixes {on:?}");
        }
    }
    assert!(museum >= 3, "the library has museum entries: #59848, #129795, #648 at least");
}

/// Kubernetes #129795: the ReplicaSet controller's expectations expire
/// while its pod informer lags, and it creates the pods again. The
/// controller-manager treats an expired expectation as satisfied
/// (`SatisfiedExpectations` in pkg/controller/controller_utils.go, quoted in
/// https://github.com/kubernetes/kubernetes/issues/129795); KEP-5647
/// (https://github.com/kubernetes/enhancements/issues/5647) gates a sync on
/// the informer having seen the controller's own last write.
#[test]
fn expired_expectations_and_a_lagging_informer_make_the_replicaset_controller_create_pods_twice_issue_129795() {
    let scenario = load("replicaset-expectations-129795");
    let trace = run(&scenario);
    let (entry, _, message) = trace.violations().next().expect("the bug shows");
    assert!(message.starts_with("replicaset-controller created pod"), "{message}");
    // The second round of creates comes when the expectations expire (3s),
    // before the informer (6s behind) shows the first.
    assert!((3_000..6_000).contains(&entry.time_ms), "at {} ms", entry.time_ms);
    // The explanation names the stale view it was decided on.
    let explained = explain::explain_all(&trace);
    let replica = explained.iter().find(|x| x.check == Check::ReplicaCount).expect("explained");
    assert!(replica.steps.iter().any(|s| s.text.contains("revision")), "{:#?}", replica.steps);
    for fix in ["stale-controller-consistency", "expiry-is-not-satisfaction", "quorum-relist"] {
        let fixed = run(&with_fixes(&scenario, &[fix]));
        assert_eq!(fixed.violations().count(), 0, "{fix}");
    }
}

/// rabbitmq/cluster-operator#648: restarted onto a lagging API server, the
/// operator lists a cluster it already let go as still being deleted, runs
/// its finalizer again and deletes, by name, the StatefulSet of the cluster
/// re-created since. The API reference's `DeleteOptions.preconditions`: a
/// delete with a uid precondition is refused with 409 Conflict when the
/// object under that name has another uid, which is upstream's fix
/// (https://github.com/rabbitmq/cluster-operator/pull/651).
#[test]
fn a_restarted_rabbitmq_operator_deletes_the_statefulset_of_a_re_created_cluster_issue_648() {
    let scenario = load("rabbitmq-stale-deletion-648");
    let trace = run(&scenario);
    let (entry, _, message) =
        trace.violations().find(|(_, check, _)| *check == Check::DeletedLiveDependent).expect("the bug shows");
    assert!(message.starts_with("rabbitmq-cluster-operator deleted StatefulSet default/rabbit-server"), "{message}");
    assert!(message.contains("was still the earlier incarnation") && message.contains("was being deleted"), "{message}");
    // After the restart onto the lagging API server (12s).
    assert!(entry.time_ms >= 12_000, "at {} ms", entry.time_ms);

    // With the uid precondition the same stale delete is refused.
    let fixed = run(&with_fixes(&scenario, &["delete-precondition-uid"]));
    let refused = fixed.entries.iter().any(|e| {
        matches!(&e.event, recon_trace::Event::WriteFailed { by, verb: recon_abi::Verb::Delete, key, status, .. }
            if by == "rabbitmq-cluster-operator" && key.name == "rabbit-server" && status.code == 409)
    });
    assert!(refused, "the stale delete is refused with 409 Conflict");
    let left: Vec<Check> = fixed.violations().map(|(_, check, _)| check).collect();
    assert!(left.iter().all(|c| *c == Check::TimeTravel), "{left:?}");
}

/// Controllers delete dependents of live owners as their job (a ReplicaSet
/// scaling down, a kubelet finishing a pod's deletion, a Deployment
/// pruning old ReplicaSets): with `deletedLiveDependent` on everywhere, only
/// the collector's stale delete and the delete of a newer incarnation by
/// name are flagged in the whole library.
#[test]
fn deleting_a_live_dependent_is_flagged_only_for_a_collector_or_a_newer_incarnation() {
    let mut flagged = BTreeSet::new();
    for path in all_scenarios() {
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        let mut scenario = load(&stem);
        if !scenario.checks.enabled.contains(&Check::DeletedLiveDependent) {
            scenario.checks.enabled.push(Check::DeletedLiveDependent);
        }
        if run(&scenario).violations().any(|(_, check, _)| check == Check::DeletedLiveDependent) {
            flagged.insert(stem);
        }
    }
    assert_eq!(flagged, BTreeSet::from(["gc-stale-view".to_owned(), "rabbitmq-stale-deletion-648".to_owned()]));
}
