//! The museum of real bugs: every library scenario that declares upstream
//! fixes shows the outcome it expects with no fix on, with each fix on
//! alone, and with every combination of them (the outcome of several is
//! what all of them still expect; see `Scenario::with_fixes_applied`).

use std::collections::{BTreeMap, BTreeSet};

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
        // A museum entry names the public issue it reproduces; a scenario
        // with fixes but no source teaches something else (an ordering race).
        if !scenario.source.is_empty() {
            museum += 1;
            assert!(scenario.source.starts_with("https://"), "{stem}: a museum entry links its public issue");
            assert!(!scenario.lesson.is_empty(), "{stem}: a museum entry says its lesson in a line");
            assert!(!scenario.expect.violations.is_empty(), "{stem}: with no fix on, the bug shows");
        }
        let names: Vec<&str> = scenario.fixes.iter().map(|f| f.name.as_str()).collect();
        for mask in 0..1u32 << names.len() {
            let on: Vec<&str> = names.iter().enumerate().filter(|(i, _)| mask & 1 << i != 0).map(|(_, n)| *n).collect();
            let fixed = with_fixes(&scenario, &on);
            let expected: BTreeSet<Check> = fixed.with_fixes_applied().expect.violations.into_iter().collect();
            assert_eq!(violated(&fixed), expected, "{stem} with fixes {on:?}");
        }
    }
    assert!(museum >= 6, "the library has museum entries: #59848, #129795, #648, #758, #774, #775 at least");
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
    assert!(
        message.contains("was still the earlier incarnation") && message.contains("was being deleted"),
        "{message}"
    );
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

/// rabbitmq/cluster-operator#758: a user scales a cluster 1 → 3 → 2 while
/// the operator's API server is cut off from etcd; both changes reach the
/// operator in one delivery, client-go's work queue collapses them into one
/// reconcile (https://pkg.go.dev/k8s.io/client-go/util/workqueue: a key
/// added several times before it is processed is processed once), and the
/// operator, whose "no scale-down" rule compares the latest request with
/// the StatefulSet, scales 1 → 2: a count the rule never allows once 3 was
/// asked for. The history-policy check judges against the cluster's write
/// history, and its explanation names the version never reconciled on.
#[test]
fn an_operator_that_never_reconciles_on_an_intermediate_replica_count_scales_past_its_no_scale_down_rule_issue_758() {
    let scenario = load("rabbitmq-unobserved-scale-758");
    let trace = run(&scenario);
    let (entry, _, message) =
        trace.violations().find(|(_, check, _)| *check == Check::HistoryPolicy).expect("the bug shows");
    assert!(
        message.starts_with(
            "rabbitmq-cluster-operator set spec.replicas of StatefulSet default/rabbit-server to 2 (from 1)"
        ),
        "{message}"
    );
    assert!(message.contains("never decreases, so it allows 1 or 3 only"), "{message}");
    assert!(message.contains("never reconciled on revision") && message.contains("(spec.replicas 3)"), "{message}");
    // After apiserver-2 reaches etcd again (7s), not before.
    assert!(entry.time_ms >= 7_000, "at {} ms", entry.time_ms);
    let explained = explain::explain_all(&trace);
    let history = explained.iter().find(|x| x.check == Check::HistoryPolicy).expect("explained");
    assert!(history.steps.iter().any(|s| s.text.contains("never reconciled on")), "{:#?}", history.steps);

    // With the event handler's high-water mark the StatefulSet goes to 3,
    // the most the cluster asked for, and stays there.
    let fixed = with_fixes(&scenario, &["highest-requested"]);
    let mut sim = recon_sim::Sim::new(&fixed, Box::new(|c| recon_catalog::instantiate(&c.controller))).unwrap();
    sim.run();
    assert_eq!(sim.trace().violations().count(), 0);
    let set = recon_abi::ObjectKey::new("StatefulSet", "default", "rabbit-server");
    let replicas = sim.store().get(&set, None).unwrap().map(|kv| kv.value.spec["replicas"].clone());
    assert_eq!(replicas, Some(serde_json::json!(3)), "the StatefulSet keeps the most ever asked for");
}

/// Controllers delete dependents of live owners as their job (a ReplicaSet
/// scaling down, a kubelet finishing a pod's deletion, a Deployment
/// pruning old ReplicaSets): with `deletedLiveDependent` on everywhere, only
/// the collector's stale delete and the delete of a newer incarnation by
/// name are flagged in the whole library.
#[test]
fn deleting_a_live_dependent_is_flagged_only_for_a_collector_or_a_newer_incarnation() {
    let flagged: BTreeSet<String> = flagged_everywhere(Check::DeletedLiveDependent).into_keys().collect();
    assert_eq!(flagged, BTreeSet::from(["gc-stale-view".to_owned(), "rabbitmq-stale-deletion-648".to_owned()]));
}

/// Every library scenario run with `check` turned on as well: the
/// scenarios it flags, with its messages there.
fn flagged_everywhere(check: Check) -> BTreeMap<String, Vec<String>> {
    let mut flagged = BTreeMap::new();
    for path in all_scenarios() {
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        let mut scenario = load(&stem);
        if !scenario.checks.enabled.contains(&check) {
            scenario.checks.enabled.push(check);
        }
        let messages: Vec<String> =
            run(&scenario).violations().filter(|(_, c, _)| *c == check).map(|(_, _, m)| m.to_string()).collect();
        if !messages.is_empty() {
            flagged.insert(stem, messages);
        }
    }
    flagged
}

/// ai-dynamo/grove#775: the PodCliqueSet controller skips a status write
/// because the status it computed equals its cached copy of the object,
/// older than its own last write; that write then reaches its cache as a
/// status-only change, which its generation-changed predicate ignores, and
/// nothing wakes it again. Kubernetes' *Controllers* page
/// (https://kubernetes.io/docs/concepts/architecture/controller/): a
/// controller acts to bring the current state closer to the desired one,
/// so once it has caught up with the store its own rule must have nothing
/// left to write. Grove's fix reads the object from the API server before
/// the no-op check (https://github.com/ai-dynamo/grove/pull/784).
#[test]
fn a_status_write_skipped_against_a_stale_copy_leaves_grove_idle_with_work_left_issue_775() {
    let scenario = load("grove-stale-status-775");
    let trace = run(&scenario);
    let (entry, _, message) =
        trace.violations().find(|(_, check, _)| *check == Check::IdleWithWorkLeft).expect("the bug shows");
    assert!(message.starts_with("grove-podcliqueset-controller is idle with work left"), "{message}");
    assert!(
        message.contains("PodCliqueSet default/llm") && message.contains("status.availableReplicas 0 → 1"),
        "{message}"
    );
    // It names the stale call: decided on a view older than its own write.
    assert!(message.contains("had not reached its cache") && message.contains("wrote nothing"), "{message}");
    assert_eq!(entry.time_ms, scenario.duration.0, "judged at the end of the run");
    let explained = explain::explain_all(&trace);
    let idle = explained.iter().find(|x| x.check == Check::IdleWithWorkLeft).expect("explained");
    assert!(idle.steps.iter().any(|s| s.text.contains("nothing to do")), "{:#?}", idle.steps);

    // With the live read, the controller asks the API server for the
    // object before its no-op check.
    let fixed = run(&with_fixes(&scenario, &["live-read"]));
    let read_live = fixed.entries.iter().any(|e| {
        matches!(&e.event, recon_trace::Event::Reconcile(call)
            if call.component == "grove-podcliqueset-controller" && call.actions.iter().any(|a| a.to_string().starts_with("direct get")))
    });
    assert!(read_live, "the live read is sent");
    assert_eq!(fixed.violations().count(), 0);
    assert_eq!(run(&with_fixes(&scenario, &["optimistic-lock"])).violations().count(), 0);
}

/// Every other library scenario ends with its controllers either still
/// catching up or with nothing left to do: with `idleWithWorkLeft` on
/// everywhere, only grove's skipped status write is flagged, and #774's
/// aggregator, whose fresh instance applies its binding on `Init` from an
/// empty store: handed the store afresh, it would take every subject away.
#[test]
fn no_library_scenario_but_grove_775_and_hdfs_774_ends_with_a_controller_idle_with_work_left() {
    let flagged = flagged_everywhere(Check::IdleWithWorkLeft);
    let stems: BTreeSet<&str> = flagged.keys().map(String::as_str).collect();
    assert_eq!(stems, BTreeSet::from(["grove-stale-status-775", "hdfs-partial-relist-774"]), "{flagged:#?}");
}

/// stackabletech/hdfs-operator#774: the operator's aggregator applies its
/// ClusterRoleBinding on every watcher event, reading the reflector's
/// store. kube's watcher turns a list into `Init`, one `InitApply` per
/// object and `InitDone`, and its store takes the list in at `InitDone`
/// (kube-rs#1494, https://github.com/kube-rs/kube/pull/1494): a restarted
/// operator's store is empty until then, and the applies on `Init` and
/// `InitApply` carry no subjects. The issue's proposal: return early on
/// `Init` and `InitApply`; kube's `Store::wait_until_ready`
/// (https://github.com/kube-rs/kube/issues/1226) gives the same wait.
#[test]
fn a_restarted_aggregator_applies_its_binding_from_a_store_the_relist_has_not_filled_issue_774() {
    let scenario = load("hdfs-partial-relist-774");
    let trace = run(&scenario);
    let violations: Vec<_> = trace.violations().collect();
    assert_eq!(violations.len(), 1, "one apply takes the subjects away; the ones after add nothing back");
    let (entry, check, message) = violations[0];
    assert_eq!(check, Check::DroppedMember);
    assert!(entry.time_ms > 4_000, "after the restart at 4s, at {} ms", entry.time_ms);
    for cluster in ["default/alpha", "default/beta", "analytics/gamma"] {
        assert!(message.contains(&format!("HdfsCluster {cluster}")), "{message}");
    }
    assert!(message.contains("from 3 members to 0"), "{message}");
    // The explanation names the list its informer had been served and the relist.
    assert!(message.contains("had been served those objects in its list"), "{message}");
    assert!(message.contains("during the relist, between Init and InitDone"), "{message}");
    let explained = explain::explain_all(&trace);
    let dropped = explained.iter().find(|x| x.check == Check::DroppedMember).expect("explained");
    assert!(dropped.steps.iter().any(|s| s.text.contains("list HdfsClusters")), "{:#?}", dropped.steps);
    // InitDone puts them back: the run ends with every subject bound.
    let last_apply = trace.entries.iter().rev().find_map(|e| match &e.event {
        recon_trace::Event::Logged { component, lines } if component == "hdfs-operator" => lines.last().cloned(),
        _ => None,
    });
    assert_eq!(last_apply.as_deref(), Some("ClusterRoleBinding has been successfully patched: 3 subjects"));
    for fix in ["wait-for-init-done", "wait-for-store-ready"] {
        assert_eq!(run(&with_fixes(&scenario, &[fix])).violations().count(), 0, "{fix}");
    }
}

/// No other library scenario writes an aggregate that loses a member
/// whose object exists: with `droppedMember` on everywhere (and only
/// #774's aggregate declared anywhere), it fires in #774 only.
#[test]
fn no_library_scenario_but_hdfs_774_drops_a_member_of_an_aggregate() {
    let flagged = flagged_everywhere(Check::DroppedMember);
    let stems: BTreeSet<&str> = flagged.keys().map(String::as_str).collect();
    assert_eq!(stems, BTreeSet::from(["hdfs-partial-relist-774"]), "{flagged:#?}");
}
