use recon_abi::{Action, ComponentConfig, Controller, InputEvent, Object, StatusReason, Verb};
use recon_sdk::testing::{ObjectExt, added, failed, input, listed, modified, node, pod, succeeded, timer};
use serde_json::json;

use super::*;

fn scheduler() -> Scheduler {
    let mut scheduler = Scheduler::new();
    scheduler.init(&ComponentConfig { name: "scheduler".into(), ..Default::default() });
    scheduler
}

fn pending(name: &str) -> Object {
    pod("default", name, &format!("uid-{name}"), "10")
}

fn bound(name: &str, node: &str) -> Object {
    pending(name).on_node(node).running_ready()
}

fn bind(p: &Object, node: &str) -> Action {
    Action::Update { object: p.clone().on_node(node), dry_run: false }
}

fn cordoned(name: &str, pods: u32) -> Object {
    node(name, pods).with_spec(json!({"unschedulable": true}))
}

/// Starts a scheduler with both lists delivered in one call.
fn start(pods: Vec<Object>, nodes: Vec<Object>) -> (Scheduler, Vec<Action>) {
    let mut s = scheduler();
    let out = s.handle(&input(0, vec![listed(0, "10", pods), listed(1, "10", nodes)]));
    (s, out.actions)
}

#[test]
fn scheduler_manifest_watches_pods_and_nodes_and_may_only_update_pods() {
    let mut s = Scheduler::new();
    let manifest = s.init(&ComponentConfig::default());
    assert_eq!(manifest.name, "scheduler");
    let kinds: Vec<&str> = manifest.watches.iter().map(|w| w.kind.as_str()).collect();
    assert_eq!(kinds, vec!["Pod", "Node"]);
    assert!(manifest.watches.iter().all(|w| w.field_selector.is_empty() && w.label_selector.is_empty()));
    assert_eq!(manifest.writes, vec![WritePermission { kind: "Pod".into(), verbs: vec![Verb::Update] }]);
    assert!(!manifest.node_agent);
}

#[test]
fn scheduler_binds_a_pending_pod_to_the_node_with_fewest_pods() {
    let p = pending("web-0");
    let (_, actions) = start(
        vec![bound("a", "node-1"), bound("b", "node-1"), bound("c", "node-2"), p.clone()],
        vec![node("node-1", 10), node("node-2", 10)],
    );
    assert_eq!(actions, vec![bind(&p, "node-2")]);
    let Action::Update { object, .. } = &actions[0] else { unreachable!() };
    assert_eq!(object.metadata.resource_version, "10", "binding is compare-and-swap on the cached version");
}

#[test]
fn scheduler_breaks_ties_by_node_name() {
    let p = pending("web-0");
    let (_, actions) = start(vec![p.clone()], vec![node("node-b", 10), node("node-a", 10)]);
    assert_eq!(actions, vec![bind(&p, "node-a")]);
}

#[test]
fn scheduler_skips_cordoned_and_full_nodes() {
    let p = pending("web-0");
    let (_, actions) = start(
        vec![bound("a", "node-2"), bound("b", "node-3"), bound("c", "node-3"), p.clone()],
        vec![cordoned("node-1", 10), node("node-2", 1), node("node-3", 5)],
    );
    assert_eq!(actions, vec![bind(&p, "node-3")]);
}

#[test]
fn scheduler_does_not_count_finished_pods_against_capacity() {
    let p = pending("web-0");
    let done = bound("done", "node-1").with_status(json!({"phase": "Succeeded"}));
    let (_, actions) = start(vec![done, p.clone()], vec![node("node-1", 1)]);
    assert_eq!(actions, vec![bind(&p, "node-1")]);
}

#[test]
fn scheduler_leaves_terminating_and_bound_pods_alone() {
    let (_, actions) = start(vec![pending("gone").terminating(), bound("a", "node-1")], vec![node("node-1", 10)]);
    assert_eq!(actions, vec![]);
}

#[test]
fn scheduler_spreads_a_batch_using_its_assumptions_and_does_not_bind_twice() {
    let (p, q) = (pending("web-0"), pending("web-1"));
    let (mut s, actions) = start(vec![p.clone(), q.clone()], vec![node("node-1", 10), node("node-2", 10)]);
    assert_eq!(actions, vec![bind(&p, "node-1"), bind(&q, "node-2")]);

    // Unrelated events while the bindings are in flight bind nothing again.
    let out = s.handle(&input(1, vec![modified(0, p.clone().with_label("seen", "yes").at_version("11"))]));
    assert_eq!(out.actions, vec![]);
}

#[test]
fn scheduler_counts_a_pod_once_when_the_cache_shows_its_binding() {
    let p = pending("web-0");
    let (mut s, actions) = start(vec![p.clone()], vec![node("node-1", 2)]);
    assert_eq!(actions, vec![bind(&p, "node-1")]);
    let stored = p.clone().on_node("node-1").at_version("11");
    s.handle(&input(
        1,
        vec![modified(0, stored.clone()), InputEvent::Result(Box::new(succeeded(Verb::Update, &stored)))],
    ));

    // Capacity 2: one bound pod leaves room for exactly one more.
    let (q, r) = (pending("web-1"), pending("web-2"));
    let out = s.handle(&input(2, vec![added(0, q.clone()), added(0, r.clone())]));
    assert_eq!(out.actions[0], bind(&q, "node-1"));
    assert_eq!(out.actions[1..], [Action::RequeueAfter { key: "unschedulable".into(), after_ms: 1_000 }]);
}

#[test]
fn scheduler_forgets_the_assumption_when_a_bind_fails_and_retries_after_a_second() {
    let p = pending("web-0");
    let (mut s, _) = start(vec![p.clone()], vec![node("node-1", 1)]);

    let answer = InputEvent::Result(Box::new(failed(Verb::Update, &p.key(), StatusReason::ServiceUnavailable)));
    let out = s.handle(&input(5, vec![answer]));
    assert_eq!(out.actions, vec![Action::RequeueAfter { key: "Pod/default/web-0".into(), after_ms: 1_000 }]);

    // The failed binding no longer holds node-1's only slot.
    let out = s.handle(&input(1_005, vec![timer("Pod/default/web-0")]));
    assert_eq!(out.actions, vec![bind(&p, "node-1")]);
}

#[test]
fn scheduler_waits_for_a_newer_version_after_a_bind_conflict() {
    let p = pending("web-0");
    let (mut s, _) = start(vec![p.clone()], vec![node("node-1", 10)]);
    let answer = InputEvent::Result(Box::new(failed(Verb::Update, &p.key(), StatusReason::Conflict)));
    assert_eq!(s.handle(&input(5, vec![answer])).actions, vec![]);

    let newer = p.clone().at_version("12").with_label("edited", "yes");
    let out = s.handle(&input(6, vec![modified(0, newer.clone())]));
    assert_eq!(out.actions, vec![bind(&newer, "node-1")]);
}

#[test]
fn scheduler_keeps_unschedulable_pods_pending_and_retries_them() {
    let p = pending("web-0");
    let (mut s, actions) = start(vec![bound("a", "node-1"), p.clone()], vec![node("node-1", 1)]);
    let retry = Action::RequeueAfter { key: "unschedulable".into(), after_ms: 1_000 };
    assert_eq!(actions, vec![retry.clone()]);

    // No second timer while the first is pending.
    assert_eq!(s.handle(&input(10, vec![added(0, pending("web-1"))])).actions, vec![]);
    // Still full when the timer fires: ask again.
    assert_eq!(s.handle(&input(1_000, vec![timer("unschedulable")])).actions, vec![retry]);

    // A new node makes room at once, for both pods, in key order.
    let out = s.handle(&input(1_200, vec![added(1, node("node-2", 1)), added(1, node("node-3", 1))]));
    assert_eq!(out.actions, vec![bind(&p, "node-2"), bind(&pending("web-1"), "node-3")]);
}

#[test]
fn scheduler_binds_nothing_before_both_lists_arrived() {
    let mut s = scheduler();
    let p = pending("web-0");
    assert_eq!(s.handle(&input(0, vec![listed(0, "10", vec![p.clone()])])).actions, vec![]);
    let out = s.handle(&input(1, vec![listed(1, "10", vec![node("node-1", 10)])]));
    assert_eq!(out.actions, vec![bind(&p, "node-1")]);
}

#[test]
fn scheduler_reads_capacity_given_as_a_number_and_defaults_to_110() {
    let mut numeric = node("node-1", 0);
    numeric.status = json!({"capacity": {"pods": 1}}).into();
    assert_eq!(capacity(&numeric), 1);
    numeric.status = json!({}).into();
    assert_eq!(capacity(&numeric), 110);
}
