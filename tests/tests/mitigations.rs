//! The upstream staleness mitigations a component can switch on
//! (`mitigations:` in a scenario) change what they should, and only that.
//!
//! - KEP-5647's `staleControllerConsistency`
//!   (<https://github.com/kubernetes/enhancements/tree/master/keps/sig-api-machinery/5647-stale-controller-handling>):
//!   "skip reconciling an object until it knows whether or not the previous
//!   write has been propagated to its cache", per object, requeued with
//!   back-off.
//! - controller-runtime's read-your-own-writes client
//!   (<https://github.com/kubernetes-sigs/controller-runtime/pull/3472>): a
//!   cached read blocks until the informer has observed the resourceVersion
//!   of the client's own writes; it knows nothing of anybody else's writes,
//!   nor of writes made before a restart.

use std::collections::BTreeSet;

use recon_abi::Mitigation;
use recon_scenario::{Check, Scenario};
use recon_tests::{load, run};
use recon_trace::{Event, Trace};

fn violated(trace: &Trace) -> BTreeSet<Check> {
    trace.violations().map(|(_, check, _)| check).collect()
}

/// `scenario` with `mitigation` switched on for `component`.
fn mitigated(scenario: &Scenario, component: &str, mitigation: Mitigation) -> Scenario {
    let mut s = scenario.clone();
    s.components.iter_mut().find(|c| c.name == component).expect("the component exists").switch_on(mitigation);
    s
}

/// A wait's start: (held at, revision waited for).
type Held = (u64, u64);
/// A wait's end: (released at, since, revision waited for).
type Released = (u64, u64, u64);

/// Each wait a component reported: when it was held, and when released.
fn waits(trace: &Trace, component: &str) -> (Vec<Held>, Vec<Released>) {
    let (mut held, mut released) = (Vec::new(), Vec::new());
    for entry in &trace.entries {
        let Event::SyncHeld { component: c, held: h } = &entry.event else { continue };
        if c != component {
            continue;
        }
        if h.released {
            released.push((entry.time_ms, h.since_ms, h.resource_version));
        } else {
            held.push((entry.time_ms, h.resource_version));
        }
    }
    (held, released)
}

#[test]
fn no_mitigation_is_on_by_default_and_nothing_is_held_issue_129795() {
    let scenario = load("replicaset-expectations-129795");
    assert!(scenario.components.iter().all(|c| c.mitigations.is_empty()));
    let trace = run(&scenario);
    assert!(violated(&trace).contains(&Check::ReplicaCount));
    assert!(!trace.entries.iter().any(|e| matches!(e.event, Event::SyncHeld { .. })));
}

#[test]
fn kep_5647_holds_the_sets_sync_until_its_informer_sees_its_own_creates_issue_129795() {
    let scenario = mitigated(
        &load("replicaset-expectations-129795"),
        "replicaset-controller",
        Mitigation::StaleControllerConsistency,
    );
    let trace = run(&scenario);
    assert!(!violated(&trace).contains(&Check::ReplicaCount), "{:?}", violated(&trace));
    let (held, released) = waits(&trace, "replicaset-controller");
    assert!(!held.is_empty(), "the expired expectations' sync is held");
    // Every wait ends, after it began, once the 6 s lagging informer caught up.
    assert_eq!(held.len(), released.len());
    for ((held_at, _), (released_at, since, _)) in held.iter().zip(&released) {
        assert_eq!(held_at, since);
        assert!(released_at > since);
    }
    let longest = released.iter().map(|(at, since, _)| at - since).max().unwrap_or(0);
    assert!(longest >= 1_000, "the informer lags seconds: held {longest} ms");
}

#[test]
fn read_your_own_writes_removes_a_stale_read_of_the_controllers_own_writes_issue_129795() {
    let scenario =
        mitigated(&load("replicaset-expectations-129795"), "replicaset-controller", Mitigation::ReadYourOwnWrites);
    let trace = run(&scenario);
    assert!(!violated(&trace).contains(&Check::ReplicaCount), "{:?}", violated(&trace));
    let (held, released) = waits(&trace, "replicaset-controller");
    assert!(!held.is_empty());
    assert_eq!(held.len(), released.len());
}

#[test]
fn read_your_own_writes_cannot_help_a_restarted_controller_reading_a_stale_cache() {
    // ReplicaSet flapping: the stale state a restarted controller lists is
    // other history (the user's scale-down and scale-up), and its memory of
    // its own writes died with the old instance; nothing is held and the
    // set still flaps.
    let scenario = load("replicaset-flapping");
    let before = violated(&run(&scenario));
    assert!(before.contains(&Check::ReplicaCount));
    for mitigation in Mitigation::ALL {
        let trace = run(&mitigated(&scenario, "replicaset-controller", mitigation));
        assert!(violated(&trace).contains(&Check::ReplicaCount), "{mitigation} does not fix a relist from the past");
        // The explanation says the mitigation was on and why it held nothing.
        let (overshoot, ..) =
            trace.violations().find(|(_, check, _)| *check == Check::ReplicaCount).expect("the overshoot");
        let why = recon_trace::explain::explain(&trace, overshoot.id).expect("explained");
        let said = why.steps.iter().map(|s| s.text.as_str()).collect::<Vec<_>>().join("\n");
        assert!(said.contains(&format!("runs with {mitigation} on, yet held nothing before its decision")), "{said}");
    }
}

#[test]
fn a_mitigation_on_a_controller_without_the_runtime_changes_nothing() {
    // The kubelet is written on the SDK, not on the kube runtime: the
    // switch reaches it but nothing applies it, and the run is the same
    // but for the start saying it was on.
    let scenario = load("pod-safety-59848");
    let plain = run(&scenario).hash();
    let mut switched = run(&mitigated(&scenario, "kubelet-node-1", Mitigation::ReadYourOwnWrites));
    let mut said = 0;
    for entry in &mut switched.entries {
        if let Event::ComponentStarted { component, mitigations, .. } = &mut entry.event
            && component == "kubelet-node-1"
        {
            assert_eq!(mitigations, &[Mitigation::ReadYourOwnWrites]);
            mitigations.clear();
            said += 1;
        }
    }
    assert!(said > 0, "the kubelet's start names its mitigation");
    assert_eq!(plain, switched.hash());
}
