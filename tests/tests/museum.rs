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
        assert!(!scenario.expect.violations.is_empty(), "{stem}: with no fix on, the bug shows");
        let names: Vec<&str> = scenario.fixes.iter().map(|f| f.name.as_str()).collect();
        for mask in 0..1u32 << names.len() {
            let on: Vec<&str> = names.iter().enumerate().filter(|(i, _)| mask & 1 << i != 0).map(|(_, n)| *n).collect();
            let fixed = with_fixes(&scenario, &on);
            let expected: BTreeSet<Check> = fixed.with_fixes_applied().expect.violations.into_iter().collect();
            assert_eq!(violated(&fixed), expected, "{stem} with fixes {on:?}");
        }
    }
    assert!(museum >= 1, "the library has museum entries");
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
