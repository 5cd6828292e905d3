//! The search over orderings: it finds that the status-condition race's
//! outcome depends on who reconciles first, replays both orderings, and
//! finds no order dependence once each condition has one owner, nor in a
//! single-controller story. With stale views it finds the blind status
//! write of `status-condition-stale-view`, which no ordering alone shows,
//! and nothing once that write carries its resourceVersion.

use recon_explore::ordering::{self, OrderingFinding, Strategy};
use recon_explore::{Factory, LocalFactory};
use recon_scenario::Scenario;
use recon_sim::{Instantiate, Sim};

fn library(name: &str) -> Scenario {
    let path = format!("{}/../../scenarios/{name}.yaml", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap();
    recon_scenario::parse(&path, &text).unwrap()
}

fn with_fix(mut s: Scenario, fix: &str) -> Scenario {
    s.set_fix(fix, true).unwrap();
    s
}

fn builtins() -> Instantiate {
    Box::new(|c| recon_catalog::instantiate(&c.controller))
}

const FACTORY: Factory = &builtins;

fn search(s: &Scenario, strategy: Strategy, max_runs: usize) -> ordering::OrderingResult {
    search_stale(s, strategy, max_runs, 0)
}

fn search_stale(s: &Scenario, strategy: Strategy, max_runs: usize, stale_views: usize) -> ordering::OrderingResult {
    let factory: LocalFactory = FACTORY;
    ordering::search(s, factory, strategy, ordering::Bounds { max_runs, stale_views }, &mut |_| {}).unwrap()
}

fn end_of(s: &Scenario) -> ordering::EndState {
    let mut sim = Sim::new(s, builtins()).unwrap();
    sim.run();
    ordering::EndState::of(sim.store())
}

#[test]
fn the_race_ends_differently_when_the_other_controller_reconciles_first() {
    let race = library("status-condition-race");
    let result = search(&race, Strategy::DepthFirst, 50);
    let Some(OrderingFinding::DependsOnOrder { first, second, diff }) = &result.finding else {
        panic!("expected an order dependence, got {:?}", result.finding);
    };
    // The default order decides nothing; the other one puts the other controller first.
    assert!(first.decisions.is_empty(), "{:?}", first.decisions);
    assert_eq!(second.decisions.len(), 1, "{:?}", second.decisions);
    assert_eq!(second.decisions[0].others.len(), 1);
    // The diff names the condition that differs, and nothing about versions or uids.
    assert!(diff.iter().any(|l| l.starts_with("Widget default/w1 status.conditions[0].status")), "{diff:?}");
    assert!(diff.iter().all(|l| !l.contains("resourceVersion") && !l.contains("uid")), "{diff:?}");
    let outcomes =
        [first, second].map(|r| r.end.objects["Widget default/w1"]["status"]["conditions"][0]["status"].clone());
    assert_ne!(outcomes[0], outcomes[1]);

    // Both replay from their scenario files, written and parsed again, to the same end states.
    let found = ordering::found_scenarios(&race, result.finding.as_ref().unwrap());
    assert_eq!(found.len(), 2);
    for (scenario, run) in found.iter().zip([first, second]) {
        let yaml = recon_scenario::to_yaml(scenario);
        let parsed = recon_scenario::parse("found.yaml", &yaml).unwrap_or_else(|e| panic!("{e}\n{yaml}"));
        assert_eq!(parsed.ordering, run.ordering());
        assert_eq!(end_of(&parsed), run.end, "{yaml}");
        assert!(parsed.description.contains("depends on the order"));
    }
}

#[test]
fn random_walks_find_the_race_too() {
    let result = search(&library("status-condition-race"), Strategy::RandomWalks { seed: 7 }, 50);
    assert!(matches!(result.finding, Some(OrderingFinding::DependsOnOrder { .. })), "{:?}", result.finding);
}

#[test]
fn with_one_owner_per_condition_every_ordering_ends_the_same() {
    let fixed = with_fix(library("status-condition-race"), "one-owner-per-condition");
    let result = search(&fixed, Strategy::DepthFirst, 200);
    assert!(result.finding.is_none(), "{:?}", result.finding);
    assert!(result.exhausted, "the search ran out of orderings before its budget: {} runs", result.runs);
    assert!(result.runs >= 2, "there were orderings to try: {} runs", result.runs);
    let walks = search(&fixed, Strategy::RandomWalks { seed: 7 }, 20);
    assert!(walks.finding.is_none(), "{:?}", walks.finding);
    assert_eq!(walks.runs, 20);
}

#[test]
fn a_single_controller_story_has_no_order_dependence() {
    let result = search(&library("configmap-generator"), Strategy::DepthFirst, 20);
    assert!(result.finding.is_none(), "{:?}", result.finding);
    assert!(result.runs >= 1);
}

#[test]
fn the_search_is_deterministic() {
    let race = library("status-condition-race");
    let describe = |r: &ordering::OrderingResult| match &r.finding {
        Some(OrderingFinding::DependsOnOrder { first, second, diff }) => {
            (r.runs, first.trace_hash.clone(), second.trace_hash.clone(), diff.clone())
        }
        other => panic!("{other:?}"),
    };
    assert_eq!(describe(&search(&race, Strategy::DepthFirst, 50)), describe(&search(&race, Strategy::DepthFirst, 50)));
}

#[test]
fn end_states_ignore_versions_uids_and_times_but_not_content() {
    let mut a: recon_abi::Object = serde_json::from_value(serde_json::json!({
        "apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": { "name": "w1", "namespace": "default", "uid": "u-1", "resourceVersion": "7",
                      "ownerReferences": [{ "apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "u-9" }] },
        "status": { "conditions": [{ "type": "Ready", "status": "True", "lastTransitionTime": "t1" }] }
    }))
    .unwrap();
    let mut b = a.clone();
    b.metadata.uid = "u-2".into();
    b.metadata.resource_version = "9".into();
    b.metadata.owner_references[0].uid = "u-8".into();
    b.status["conditions"][0]["lastTransitionTime"] = "t2".into();
    assert_eq!(ordering::normalise(&a), ordering::normalise(&b));
    a.status["conditions"][0]["status"] = "False".into();
    assert_ne!(ordering::normalise(&a), ordering::normalise(&b));
}

/// `status-condition-stale-view`: the provisioner's cache catches up with
/// two changes of w1 at once; only a reconcile on the older of them (a
/// stale view) makes its blind write undo the approval gate's decision.
#[test]
fn a_blind_write_on_a_stale_view_is_found_with_stale_views_and_by_no_ordering_alone() {
    let scenario = library("status-condition-stale-view");
    let alone = search(&scenario, Strategy::DepthFirst, 100);
    assert!(alone.finding.is_none(), "{:?}", alone.finding);
    assert!(alone.exhausted, "every ordering ran: {} runs", alone.runs);

    let result = search_stale(&scenario, Strategy::DepthFirst, 100, 1);
    let Some(OrderingFinding::DependsOnOrder { first, second, diff }) = &result.finding else {
        panic!("expected two views that end differently, got {:?}", result.finding);
    };
    assert!(first.stale.is_empty() && first.decisions.is_empty(), "{first:?}");
    assert_eq!(second.stale.len(), 1, "{:?}", second.stale);
    let stale = &second.stale[0];
    assert_eq!(stale.component, "provisioner");
    assert!(stale.held_back.len() == 1 && stale.held_back[0].contains("MODIFIED Widget default/w1"), "{stale:?}");
    assert!(second.describe().contains("provisioner reconciles without"), "{}", second.describe());
    assert!(diff.iter().any(|l| l.starts_with("Widget default/w1 status.conditions[0].status")), "{diff:?}");

    // The stale view replays from the scenario file, through `staleViews`.
    let found = ordering::found_scenarios(&scenario, result.finding.as_ref().unwrap());
    let yaml = recon_scenario::to_yaml(&found[1]);
    assert!(yaml.contains("staleViews:"), "{yaml}");
    let parsed = recon_scenario::parse("found.yaml", &yaml).unwrap_or_else(|e| panic!("{e}\n{yaml}"));
    assert_eq!(parsed.stale_views, second.stale_views());
    assert_eq!(end_of(&parsed), second.end, "{yaml}");
    let mut sim = Sim::new(&parsed, builtins()).unwrap();
    sim.run();
    let held = sim.trace().entries.iter().any(|e| {
        matches!(&e.event, recon_sim::Event::Reconcile(call)
            if call.component == "provisioner" && !call.held_back.is_empty())
    });
    assert!(held, "the trace shows the reconcile that went without the newer Widget");
}

#[test]
fn with_the_resource_version_precondition_no_stale_view_changes_the_outcome() {
    let fixed = with_fix(library("status-condition-stale-view"), "resource-version-precondition");
    let result = search_stale(&fixed, Strategy::DepthFirst, 200, 2);
    assert!(result.finding.is_none(), "{:?}", result.finding);
    assert!(result.exhausted, "the search ran out of views before its budget: {} runs", result.runs);
    assert!(result.runs > 1, "stale views were tried: {} runs", result.runs);
}

#[test]
fn random_walks_with_stale_views_find_the_blind_write_too() {
    let result = search_stale(&library("status-condition-stale-view"), Strategy::RandomWalks { seed: 3 }, 50, 1);
    assert!(matches!(result.finding, Some(OrderingFinding::DependsOnOrder { .. })), "{:?}", result.finding);
}
