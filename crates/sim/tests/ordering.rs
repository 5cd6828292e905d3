//! Who reconciles first at a moment several components may: the queue's
//! order by default, a scenario's `ordering` or a chooser otherwise
//! (`src/ordering.rs`). Kubernetes orders no two controllers' reactions to
//! one change (https://kubernetes.io/docs/concepts/architecture/controller/),
//! so every order is one a cluster could take.

use std::cell::RefCell;
use std::rc::Rc;

use recon_scenario::{Millis, OrderChoice, Scenario};
use recon_sim::{Event, Instantiate, Sim, Trace};

fn race() -> Scenario {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios/status-condition-race.yaml");
    recon_scenario::parse(path, &std::fs::read_to_string(path).unwrap()).unwrap()
}

fn builtins() -> Instantiate {
    Box::new(|c| recon_catalog::instantiate(&c.controller))
}

fn run(s: &Scenario) -> Trace {
    let mut sim = Sim::new(s, builtins()).unwrap();
    sim.run();
    sim.into_trace()
}

/// Who wrote the Widget's status first.
fn first_status_writer(trace: &Trace) -> String {
    trace
        .entries
        .iter()
        .find_map(|e| match &e.event {
            Event::StoreWrite { verb: recon_abi::Verb::UpdateStatus, by, .. } => Some(by.clone()),
            _ => None,
        })
        .expect("someone writes the status")
        .to_string()
}

#[test]
fn by_default_the_reconcile_whose_input_arrived_first_runs_first() {
    assert_eq!(first_status_writer(&run(&race())), "provisioner");
}

#[test]
fn a_scenario_ordering_puts_another_component_first_at_its_moment() {
    let mut s = race();
    s.ordering = vec![OrderChoice { at: Millis(1008), first: "approval-gate".into() }];
    assert_eq!(first_status_writer(&run(&s)), "approval-gate");
    // A choice for a moment that never comes changes nothing.
    s.ordering = vec![OrderChoice { at: Millis(1009), first: "approval-gate".into() }];
    assert_eq!(run(&s).hash(), run(&race()).hash());
}

#[test]
fn a_chooser_is_asked_only_where_several_reconciles_are_due_and_picking_the_default_changes_nothing() {
    // What the chooser was asked: each moment and the components due then.
    type Asked = Rc<RefCell<Vec<(u64, Vec<String>)>>>;
    let asked: Asked = Rc::default();
    let seen = Rc::clone(&asked);
    let mut sim = Sim::new(&race(), builtins()).unwrap();
    sim.set_chooser(Box::new(move |m| {
        seen.borrow_mut().push((m.time_ms, m.pending.to_vec()));
        0
    }));
    sim.run();
    assert_eq!(sim.into_trace().hash(), run(&race()).hash(), "the default pick is the queue's order");
    let asked = asked.borrow();
    assert!(!asked.is_empty());
    for (time, pending) in asked.iter() {
        assert_eq!(pending.len(), 2, "at {time}: {pending:?}");
    }
    assert!(asked.iter().any(|(t, p)| *t == 1008 && p == &["provisioner", "approval-gate"]), "{asked:?}");
}

#[test]
fn an_ordering_naming_an_unknown_component_is_refused_at_its_line() {
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios/status-condition-race.yaml"))
            .unwrap()
            + "ordering:\n  - { at: 1s, first: nobody }\n";
    let error = recon_scenario::parse("race.yaml", &text).unwrap_err().to_string();
    assert!(error.contains("ordering[0].first") || error.contains("unknown component `nobody`"), "{error}");
    assert!(error.starts_with("race.yaml:"), "{error}");
}
