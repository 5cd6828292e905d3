//! The scenario library beyond #59848: each story's naive variant fails the
//! way its description says, and its fixed variant does not.

use std::collections::BTreeMap;

use recon_abi::Verb;
use recon_scenario::Check;
use recon_tests::{load, run};
use recon_trace::{Event, Trace, explain};

/// Live (not terminating) pods after every pod write, as (time, count),
/// counted from the store writes in the trace.
fn live_pods(trace: &Trace) -> Vec<(u64, usize)> {
    let mut live: BTreeMap<String, bool> = BTreeMap::new();
    let mut counts = Vec::new();
    for e in &trace.entries {
        let Event::StoreWrite { verb, key, uid, removed, terminating, .. } = &e.event else { continue };
        if key.kind != "Pod" {
            continue;
        }
        if *verb == Verb::Create && !removed {
            live.insert(uid.to_string(), true);
        } else if *terminating || *removed {
            live.insert(uid.to_string(), false);
        } else {
            continue;
        }
        counts.push((e.time_ms, live.values().filter(|l| **l).count()));
    }
    counts
}

/// The live pod count at time `t`.
fn live_at(counts: &[(u64, usize)], t: u64) -> usize {
    counts.iter().take_while(|(at, _)| *at <= t).last().map_or(0, |(_, n)| *n)
}

/// The most live pods between `from` and `until`.
fn most_between(counts: &[(u64, usize)], from: u64, until: u64) -> usize {
    let during = counts.iter().filter(|(t, _)| (from..until).contains(t)).map(|(_, n)| *n);
    during.chain([live_at(counts, from)]).max().unwrap_or(0)
}

/// Violations of one check, as (time, message).
fn violations(trace: &Trace, check: Check) -> Vec<(u64, String)> {
    trace
        .entries
        .iter()
        .filter_map(|e| match &e.event {
            Event::Violation { check: c, message } if *c == check => Some((e.time_ms, message.clone())),
            _ => None,
        })
        .collect()
}

/// Who won which Lease, in order: (time, component, lease).
fn leaders(trace: &Trace) -> Vec<(u64, String, String)> {
    trace
        .entries
        .iter()
        .filter_map(|e| match &e.event {
            Event::Leadership { component, lease, leading: true } => {
                Some((e.time_ms, component.to_string(), lease.clone()))
            }
            _ => None,
        })
        .collect()
}

#[test]
fn a_restarted_replicaset_controller_replays_a_stale_history_and_the_set_flaps() {
    let trace = run(&load("replicaset-flapping"));
    let counts = live_pods(&trace);
    // 10, scaled to 5 at 2s, back to 10 at 3s: the user's own flap.
    assert_eq!(live_at(&counts, 1_900), 10);
    assert_eq!(live_at(&counts, 2_900), 5);
    assert_eq!(live_at(&counts, 4_900), 10);
    // After the restart onto the lagging server the set overshoots…
    assert!(most_between(&counts, 5_000, 20_000) > 10, "{counts:?}");
    // …which the replica-count check flags, on the restarted controller's create.
    let over = violations(&trace, Check::ReplicaCount);
    assert_eq!(over.len(), 1, "{over:?}");
    assert!(over[0].0 > 5_000 && over[0].1.starts_with("replicaset-controller created pod"), "{over:?}");
    // The explanation names the stale list that started it.
    let explained = explain::explain_all(&trace);
    let replica = explained.iter().find(|x| x.check == Check::ReplicaCount).expect("explained");
    assert!(
        replica.steps.iter().any(|s| s.text.contains("resourceVersion=\"0\"") && s.text.contains("behind the store")),
        "{:#?}",
        replica.steps
    );
    // The controller sees its mistake in the end and goes back to 10.
    assert_eq!(counts.last().map(|(_, n)| *n), Some(10));
}

#[test]
fn the_flapping_controller_listing_from_etcd_stays_at_what_the_user_asked() {
    let trace = run(&load("replicaset-flapping-quorum"));
    let counts = live_pods(&trace);
    assert_eq!(trace.violations().count(), 0);
    assert_eq!(most_between(&counts, 3_500, 20_000), 10, "{counts:?}");
}

#[test]
fn a_new_leader_working_from_an_old_cache_undoes_the_scale_down() {
    let trace = run(&load("leader-failover"));
    let won = leaders(&trace);
    // replicaset-a leads from the start; replicaset-b only after a crashed,
    // once the Lease has expired.
    assert_eq!(won[0].1, "replicaset-a");
    let takeover = won.iter().find(|(_, c, _)| c == "replicaset-b").expect("replicaset-b takes over");
    assert!(takeover.0 >= 3_500 + 3_000, "not before the lease duration has passed: {won:?}");
    assert_eq!(won.iter().filter(|(_, c, _)| c == "replicaset-b").count(), 1);
    // Its stale informers bring back the scale to 10 the user undid at 3s.
    let counts = live_pods(&trace);
    assert_eq!(live_at(&counts, takeover.0), 5);
    assert!(most_between(&counts, takeover.0, 20_000) > 5, "{counts:?}");
    let over = violations(&trace, Check::ReplicaCount);
    assert_eq!(over.len(), 1, "{over:?}");
    assert!(over[0].1.starts_with("replicaset-b created pod") && over[0].1.contains("wanted 5"), "{over:?}");
    let explained = explain::explain_all(&trace);
    let steps: Vec<&str> = explained[0].steps.iter().map(|s| s.text.as_str()).collect();
    assert!(steps.iter().any(|s| s.contains("replicaset-b wins Lease replicaset-controller")), "{steps:#?}");
    assert!(steps.iter().any(|s| s.contains("acts on the older version")), "{steps:#?}");
}

#[test]
fn a_new_leader_listing_from_etcd_keeps_the_scale_down() {
    let trace = run(&load("leader-failover-quorum"));
    assert!(leaders(&trace).iter().any(|(_, c, _)| c == "replicaset-b"), "the fail-over still happens");
    assert_eq!(trace.violations().count(), 0);
    let counts = live_pods(&trace);
    assert_eq!(most_between(&counts, 4_000, 20_000), 5, "{counts:?}");
}

#[test]
fn two_leaders_through_two_leases_delete_too_many_pods() {
    let trace = run(&load("racy-scale-down"));
    let won = leaders(&trace);
    let components: Vec<&str> = won.iter().map(|(_, c, _)| c.as_str()).collect();
    assert_eq!(components, ["replicaset-old", "replicaset-new"], "both lead, each through its own Lease");
    let counts = live_pods(&trace);
    assert_eq!(live_at(&counts, 1_900), 10);
    let fewest = counts.iter().filter(|(t, _)| *t >= 2_000).map(|(_, n)| *n).min().unwrap();
    assert!(fewest < 5, "the two scale-downs together go below 5: {counts:?}");
    let under = violations(&trace, Check::ReplicaCount);
    assert!(under.iter().any(|(_, m)| m.contains("deleted pod") && m.contains("wanted 5")), "{under:?}");
    let explained = explain::explain_all(&trace);
    let first = explained.iter().find(|x| x.check == Check::ReplicaCount).unwrap();
    assert!(first.steps.iter().any(|s| s.text.contains("meanwhile, replicaset-old")), "{:#?}", first.steps);
}

#[test]
fn one_lease_for_both_versions_lets_one_of_them_scale_down() {
    let trace = run(&load("racy-scale-down-one-lease"));
    let won = leaders(&trace);
    assert_eq!(won.len(), 1, "only the holder leads: {won:?}");
    assert_eq!(trace.violations().count(), 0);
    let counts = live_pods(&trace);
    assert_eq!(counts.iter().filter(|(t, _)| *t >= 2_000).map(|(_, n)| *n).min(), Some(5));
    assert_eq!(counts.last().map(|(_, n)| *n), Some(5));
}

#[test]
fn scaling_beyond_capacity_is_accepted_and_never_converges() {
    let trace = run(&load("beyond-capacity"));
    // The API said yes: the scale was written.
    assert!(trace.entries.iter().any(|e| matches!(&e.event,
        Event::StoreWrite { key, by, verb: Verb::Update, .. } if key.kind == "ReplicaSet" && by == "kubectl")));
    // Nothing unsafe happened; the only finding is liveness.
    let checks: Vec<Check> = trace.violations().map(|(_, c, _)| c).collect();
    assert_eq!(checks, [Check::Convergence]);
    assert!(checks.iter().all(|c| c.is_liveness()));
    let (at, message) = &violations(&trace, Check::Convergence)[0];
    assert_eq!(*at, 20_000, "judged at the end of the run");
    assert!(
        message.starts_with("never converged: ReplicaSet default/web asks for 20 replicas, but 12 run"),
        "{message}"
    );
    assert!(message.contains("8 of its pods were never bound"), "{message}");
}

#[test]
fn scaling_within_capacity_converges() {
    let trace = run(&load("beyond-capacity-within"));
    assert_eq!(trace.violations().count(), 0);
    let started = trace.entries.iter().filter(|e| matches!(e.event, Event::ContainerStarted { .. })).count();
    assert_eq!(started, 12);
}

#[test]
fn the_convergence_check_is_off_unless_asked_for() {
    let mut scenario = load("beyond-capacity");
    scenario.checks.enabled.retain(|c| *c != Check::Convergence);
    scenario.expect.violations.clear();
    assert_eq!(run(&scenario).violations().count(), 0);
}

#[test]
fn a_leader_cut_off_from_etcd_steps_down_before_anyone_else_takes_over() {
    let yaml = "\
name: cut-off-leader
duration: 15s
apiServers:
  - name: apiserver-1
    partitions: [ { from: 2s } ]
  - name: apiserver-2
components:
  - { name: a, controller: replicaset, apiServer: apiserver-1, leaderElection: { lease: rs } }
  - { name: b, controller: replicaset, apiServer: apiserver-2, leaderElection: { lease: rs }, startAt: 100ms }
";
    let scenario = recon_scenario::parse("cut-off-leader.yaml", yaml).unwrap();
    let trace = run(&scenario);
    let mut leading: BTreeMap<String, bool> = BTreeMap::new();
    let (mut a_stopped, mut b_won) = (None, None);
    for e in &trace.entries {
        match &e.event {
            Event::Leadership { component, leading: l, .. } => {
                leading.insert(component.to_string(), *l);
                if component == "b" && *l {
                    b_won = Some(e.time_ms);
                }
            }
            Event::ComponentCrashed { component, reason } if component == "a" => {
                assert!(reason.starts_with("stopped leading: could not renew Lease rs"), "{reason}");
                leading.insert(component.to_string(), false);
                a_stopped.get_or_insert(e.time_ms);
            }
            _ => {}
        }
        assert!(leading.values().filter(|l| **l).count() <= 1, "two leaders at t={}ms", e.time_ms);
    }
    let (a_stopped, b_won) = (a_stopped.expect("a gives up"), b_won.expect("b takes over"));
    assert!(a_stopped < b_won, "a steps down at {a_stopped}ms before b leads at {b_won}ms");
    // a last renews at about 1.5s: it gives up renewDeadline (2s) later, at
    // its next tick, and b takes over leaseDuration (3s) after it last saw
    // the Lease change, at its next tick.
    assert!((3_500..=4_100).contains(&a_stopped), "{a_stopped}");
    assert!((4_500..=5_100).contains(&b_won), "{b_won}");
}

#[test]
fn a_violation_raised_on_the_fresh_start_still_explains_the_stale_list() {
    // Found by `recon explore` on the #59848 workload: node-1's kubelet
    // starts the stale pod first, so the check fires on node-2's start.
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/pod-safety-59848-found.yaml");
    let scenario = recon_scenario::parse(path, &std::fs::read_to_string(path).unwrap()).unwrap();
    let trace = run(&scenario);
    let explained = explain::explain_all(&trace);
    let identity = explained.iter().find(|x| x.check == Check::PodIdentity).expect("a pod-identity violation");
    assert!(identity.headline.contains("node-2 (uid"), "fires on node-2: {}", identity.headline);
    let all: Vec<&str> = identity.steps.iter().map(|s| s.text.as_str()).collect();
    assert!(
        all.iter().any(|s| s.contains("kubelet-node-1 sends list Pods") && s.contains("behind the store")),
        "{all:#?}"
    );
    assert!(all.iter().any(|s| s.contains("still shows it alive")), "{all:#?}");
}

#[test]
fn a_run_that_reaches_its_trace_limit_stops_there_and_says_why() {
    let mut scenario = load("replicaset-flapping");
    scenario.limits.max_trace_entries = 100;
    let trace = run(&scenario);
    // Reconciles count their inputs and actions too, so fewer than 100
    // entries reach the limit (the step that crossed it may overshoot by
    // what one reconcile lists); then one more says the run stopped.
    let listed: usize = trace
        .entries
        .iter()
        .map(|e| match &e.event {
            Event::Reconcile(call) => call.inputs.len() + call.actions.len(),
            _ => 0,
        })
        .sum();
    let counted = trace.entries.len() - 1 + listed;
    assert!((100..150).contains(&counted), "stops at the limit: {counted}");
    assert!(trace.entries.len() < 100, "inputs and actions counted");
    let last = trace.entries.last().unwrap();
    let Event::Halted { reason } = &last.event else { panic!("{:?}", last.event) };
    assert!(reason.contains("limit of 100 trace entries (limits.maxTraceEntries"), "{reason}");
    assert!(last.time_ms < scenario.duration.0, "it stopped before the end");
    // The default is far above what the library needs.
    let full = run(&load("replicaset-flapping"));
    assert!(!full.entries.iter().any(|e| matches!(e.event, Event::Halted { .. })));
}

#[test]
fn a_write_larger_than_the_object_limit_is_refused_and_stores_nothing() {
    let mut scenario = load("beyond-capacity-within");
    let mut big = scenario.objects[0].clone();
    big.metadata.name = "big".into();
    big.metadata.annotations.insert("payload".into(), "x".repeat(2 << 20));
    scenario.script.push(recon_scenario::Step {
        at: recon_scenario::Millis(3_000),
        action: recon_scenario::StepAction::Create { object: big, via: None },
    });
    let trace = run(&scenario);
    let refused = trace.entries.iter().find_map(|e| match &e.event {
        Event::WriteFailed { key, status, .. } if key.name == "big" => Some(status.message.clone()),
        _ => None,
    });
    let message = refused.expect("the create is refused");
    assert!(message.starts_with("request entity too large: ReplicaSet is 2097"), "{message}");
    assert!(message.ends_with("above the limit of 1572864 (limits.maxObjectBytes in the scenario)"), "{message}");
    assert!(!trace.entries.iter().any(|e| matches!(&e.event, Event::StoreWrite { key, .. } if key.name == "big")));
    assert_eq!(trace.violations().count(), 0, "the rest of the run goes on as before");
}

/// What is left at the end of the run of the Database orders and what was
/// made for it, by key, from the store writes in the trace: `true` when the
/// last write left the object there. Events about it are reports, not
/// things made for it (and Recon does not expire them).
fn left_at_end(trace: &Trace) -> BTreeMap<String, bool> {
    let mut left = BTreeMap::new();
    for e in &trace.entries {
        if let Event::StoreWrite { key, removed, .. } = &e.event
            && key.kind != "Event"
            && (key.name.starts_with("orders") || key.name.ends_with("-orders"))
        {
            left.insert(key.to_string(), !removed);
        }
    }
    left
}

/// The operator's store writes after `from` (ms) to what it manages (not
/// the Events it reports), as (verb, key).
fn operator_writes(trace: &Trace, from: u64) -> Vec<(Verb, String)> {
    trace
        .entries
        .iter()
        .filter(|e| e.time_ms >= from)
        .filter_map(|e| match &e.event {
            Event::StoreWrite { verb, key, by, .. } if by == "database-operator" && key.kind != "Event" => {
                Some((*verb, key.to_string()))
            }
            _ => None,
        })
        .collect()
}

#[test]
fn the_database_operator_holds_its_database_with_a_finalizer_and_leaves_nothing_behind() {
    let trace = run(&load("database-operator"));
    assert_eq!(trace.violations().count(), 0);
    // Its children are server-side applied as its own field manager.
    let applies: Vec<String> = trace
        .entries
        .iter()
        .filter_map(|e| match &e.event {
            Event::StoreWrite { key, by, patch: Some(note), .. } if by == "database-operator" => {
                assert_eq!(note.field_manager, "database-operator");
                Some(format!("{} {}", note.patch_type, key))
            }
            _ => None,
        })
        .collect();
    for child in ["Service default/orders", "StatefulSet default/orders", "BackupSchedule backups/default-orders"] {
        assert!(applies.contains(&format!("apply {child}")), "{child} applied: {applies:?}");
    }
    // The finalizer went on first and came off last, after the backup schedule.
    let writes = operator_writes(&trace, 0);
    assert_eq!(writes.first(), Some(&(Verb::Update, "Database default/orders".to_owned())));
    let n = writes.len();
    assert_eq!(
        writes[n - 2..],
        [
            (Verb::Delete, "BackupSchedule backups/default-orders".to_owned()),
            (Verb::Update, "Database default/orders".to_owned()),
        ]
    );
    let left = left_at_end(&trace);
    assert!(left.values().all(|l| !l), "everything the Database had is gone: {left:?}");
    assert!(left.contains_key("Pod default/orders-0"), "its StatefulSet ran a pod: {left:?}");
    // Issue 14: it reports the backup schedule's deletion as an Event about
    // the Database, shown on its own lane (a Database has no node).
    let reported: Vec<(&str, String)> = trace
        .entries
        .iter()
        .filter_map(|e| match &e.event {
            Event::EventPublished(published) => {
                Some((trace.lane_name(e), format!("{} {}", published.reason, published.regarding.as_ref()?)))
            }
            _ => None,
        })
        .collect();
    assert_eq!(reported, [("database-operator", "BackupScheduleDeleted Database default/orders".to_owned())]);
}

#[test]
fn the_database_operator_on_a_stale_cache_brings_back_the_children_of_a_deleted_database() {
    let trace = run(&load("database-operator-stale-cache"));
    let found = violations(&trace, Check::DependentOfDeletedOwner);
    let created: Vec<&str> = found.iter().map(|(_, m)| m.split(" (uid").next().unwrap()).collect();
    assert_eq!(
        created,
        ["database-operator created Service default/orders", "database-operator created StatefulSet default/orders"]
    );
    for (at, message) in &found {
        assert!(*at >= 13_000, "after the restart: {at}");
        assert!(message.contains("naming owner Database orders"), "{message}");
        assert!(message.contains("revisions behind the store) the owner was still live"), "{message}");
        assert!(message.contains("though it had already observed revision"), "{message}");
    }
    // The explanation names the deletion and the stale list it was decided on.
    let explained = explain::explain_all(&trace);
    let first = explained.iter().find(|x| x.check == Check::DependentOfDeletedOwner).unwrap();
    let steps: Vec<&str> = first.steps.iter().map(|s| s.text.as_str()).collect();
    assert!(steps.iter().any(|s| s.contains("began graceful deletion of Database default/orders")), "{steps:#?}");
    assert!(
        steps.iter().any(|s| s.contains("resourceVersion=\"0\" to apiserver-2") && s.contains("behind")),
        "{steps:#?}"
    );
    // The garbage collector takes the children again; the backup schedule,
    // out of the reach of owner references, is leaked.
    let left = left_at_end(&trace);
    assert!(!left["StatefulSet default/orders"], "{left:?}");
    assert!(!left["Service default/orders"], "{left:?}");
    assert!(left["BackupSchedule backups/default-orders"], "leaked: {left:?}");
}

#[test]
fn the_database_operator_listing_from_etcd_after_its_restart_brings_nothing_back() {
    let trace = run(&load("database-operator-quorum"));
    assert_eq!(trace.violations().count(), 0);
    let writes = operator_writes(&trace, 13_000);
    assert!(writes.is_empty(), "{writes:?}");
    let left = left_at_end(&trace);
    assert_eq!(left.len(), 5, "the Database, its children, its pod and its backup schedule: {left:?}");
    assert!(left.values().all(|l| !l), "{left:?}");
}
