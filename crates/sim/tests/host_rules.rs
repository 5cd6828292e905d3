//! What the host enforces on every controller, whatever it is: a failing
//! controller crashes only its own component and comes back after a
//! growing back-off; writes outside the manifest are refused as Forbidden;
//! only node agents touch containers.

use std::cell::RefCell;
use std::rc::Rc;

use recon_abi::{
    Action, ComponentConfig, Crash, Input, InputEvent, Instance, Manifest, Outcome, Output, PodRef, StatusReason, Verb,
    WritePermission,
};
use recon_sim::{Event, Sim};

/// A scripted controller: `behaviour` decides each call's fate; every input
/// it was given is recorded in `seen`.
struct Scripted {
    manifest: Manifest,
    behaviour: fn(usize, &Input) -> Result<Output, Crash>,
    calls: usize,
    seen: Rc<RefCell<Vec<InputEvent>>>,
}

impl Instance for Scripted {
    fn init(&mut self, _: &ComponentConfig) -> Result<Manifest, Crash> {
        Ok(self.manifest.clone())
    }
    fn handle(&mut self, input: &Input) -> Result<Output, Crash> {
        self.calls += 1;
        self.seen.borrow_mut().extend(input.events.iter().cloned());
        (self.behaviour)(self.calls, input)
    }
}

fn manifest(writes: Vec<WritePermission>) -> Manifest {
    Manifest {
        name: "scripted".into(),
        abi_version: recon_abi::ABI_VERSION,
        watches: vec![recon_abi::WatchSpec { kind: "Pod".into(), ..Default::default() }],
        writes,
        ..Default::default()
    }
}

/// One API server, one component `c` running the scripted controller, and
/// a pod created at 100ms and updated at 4s, 8s, 12s… to keep calling it.
fn sim(
    behaviour: fn(usize, &Input) -> Result<Output, Crash>,
    writes: Vec<WritePermission>,
) -> (Sim, Rc<RefCell<Vec<InputEvent>>>) {
    let seen = Rc::new(RefCell::new(Vec::new()));
    let shared = seen.clone();
    let m = manifest(writes);
    let sim = Sim::new(
        &scenario(),
        Box::new(move |_| {
            Some(Box::new(Scripted { manifest: m.clone(), behaviour, calls: 0, seen: shared.clone() })
                as Box<dyn Instance>)
        }),
    )
    .unwrap();
    (sim, seen)
}

/// The scenario of [`sim`].
fn scenario() -> recon_scenario::Scenario {
    let mut script = String::from("  - { at: 100ms, create: { apiVersion: v1, kind: Pod, metadata: { name: p } } }\n");
    for (i, t) in (4..60).step_by(4).enumerate() {
        script += &format!(
            "  - {{ at: {t}s, apply: {{ apiVersion: v1, kind: Pod, metadata: {{ name: p, labels: {{ n: \"{i}\" }} }} }} }}\n"
        );
    }
    let yaml = format!(
        "name: host-rules\nduration: 60s\napiServers: [ {{ name: a }} ]\nnodes: [ {{ name: node-1 }} ]\ncomponents:\n  - {{ name: c, controller: scripted, apiServer: a }}\nscript:\n{script}"
    );
    recon_scenario::parse("t.yaml", &yaml).unwrap()
}

fn crashes(sim: &Sim) -> Vec<(u64, String)> {
    sim.trace()
        .entries
        .iter()
        .filter_map(|e| match &e.event {
            Event::ComponentCrashed { reason, .. } => Some((e.time_ms, reason.clone())),
            _ => None,
        })
        .collect()
}

fn starts(sim: &Sim) -> Vec<u64> {
    sim.trace()
        .entries
        .iter()
        .filter(|e| matches!(e.event, Event::ComponentStarted { .. }))
        .map(|e| e.time_ms)
        .collect()
}

#[test]
fn a_crashing_controller_restarts_with_a_growing_back_off() {
    let (mut sim, _) = sim(|_, _| Err(Crash::new("scripted trapped: unreachable")), vec![]);
    sim.run_until(20_000);
    let crashes = crashes(&sim);
    assert!(crashes.len() >= 3, "{crashes:?}");
    assert!(crashes[0].1.starts_with("scripted trapped: unreachable; restarting in 1000ms"), "{}", crashes[0].1);
    assert!(crashes[1].1.contains("restarting in 2000ms"), "{}", crashes[1].1);
    assert!(crashes[2].1.contains("restarting in 4000ms"), "{}", crashes[2].1);
    let starts = starts(&sim);
    // Each restart comes exactly one back-off after the crash before it.
    assert_eq!(starts[1], crashes[0].0 + 1_000);
    assert_eq!(starts[2], crashes[1].0 + 2_000);
}

#[test]
fn a_crash_leaves_the_rest_of_the_simulation_running() {
    let (mut sim, _) = sim(|_, _| Err(Crash::new("boom")), vec![]);
    sim.run();
    // kubectl's writes keep landing long after the first crash.
    let last_write = sim.trace().entries.iter().rfind(|e| matches!(e.event, Event::StoreWrite { .. })).unwrap();
    assert!(last_write.time_ms >= 56_000);
}

/// A controller linked natively (through [`recon_abi::Controller`], as
/// the SDK's built-ins are) that panics on its second call.
struct Panicking {
    calls: usize,
}

impl recon_abi::Controller for Panicking {
    fn init(&mut self, _: &ComponentConfig) -> Manifest {
        manifest(vec![])
    }
    fn handle(&mut self, _: &Input) -> Output {
        self.calls += 1;
        assert!(self.calls < 2, "the cache lost pod p");
        Output::default()
    }
}

#[test]
fn a_native_controller_that_panics_crashes_only_its_component() {
    let scenario = scenario();
    let mut sim =
        Sim::new(&scenario, Box::new(|_| Some(Box::new(Panicking { calls: 0 }) as Box<dyn Instance>))).unwrap();
    sim.run();
    let crashes = crashes(&sim);
    assert!(crashes.len() >= 2, "it crashed, and again after its restart: {crashes:?}");
    assert!(
        crashes[0].1.starts_with("recon_handle panicked: the cache lost pod p; restarting in 1000ms"),
        "named like a plugin's crash: {}",
        crashes[0].1
    );
    let last_write = sim.trace().entries.iter().rfind(|e| matches!(e.event, Event::StoreWrite { .. })).unwrap();
    assert!(last_write.time_ms >= 56_000, "the run went on to its end");
}

#[test]
fn a_restarted_controller_lists_again_from_scratch() {
    // Crash on the first change kubectl makes at 4s (label n=0), then behave.
    fn crash_on_first_change(_: usize, input: &Input) -> Result<Output, Crash> {
        let first_change = input.events.iter().any(|e| {
            matches!(e, InputEvent::Watch { event, .. } if event.object.metadata.labels.get("n").is_some_and(|n| n == "0"))
        });
        if first_change { Err(Crash::new("once")) } else { Ok(Output::default()) }
    }
    let (mut sim, seen) = sim(crash_on_first_change, vec![]);
    sim.run_until(12_000);
    let lists = seen.borrow().iter().filter(|e| matches!(e, InputEvent::Listed { .. })).count();
    assert_eq!(lists, 2, "one list per instance");
}

#[test]
fn writes_outside_the_manifest_are_refused_as_forbidden() {
    fn delete_everything(_: usize, input: &Input) -> Result<Output, Crash> {
        let actions = input
            .events
            .iter()
            .filter_map(|e| match e {
                InputEvent::Listed { objects, .. } => objects.first().map(|o| o.key()),
                InputEvent::Watch { event, .. } => Some(event.object.key()),
                _ => None,
            })
            .map(Action::delete)
            .collect();
        Ok(Output::new(actions))
    }
    let may_update = vec![WritePermission { kind: "Pod".into(), verbs: vec![Verb::Update] }];
    let (mut sim, seen) = sim(delete_everything, may_update);
    sim.run_until(10_000);
    let results: Vec<_> = seen
        .borrow()
        .iter()
        .filter_map(|e| match e {
            InputEvent::Result(r) => Some(r.clone()),
            _ => None,
        })
        .collect();
    assert!(!results.is_empty());
    assert!(results.iter().all(|r| r.verb == Verb::Delete
        && matches!(&r.outcome, Outcome::Err(s) if s.reason == StatusReason::Forbidden && s.message.contains("may not delete Pods"))));
    assert_eq!(sim.store().len(), 2, "the node and the pod are still there");
}

#[test]
fn only_node_agents_may_start_containers() {
    fn start(_: usize, _: &Input) -> Result<Output, Crash> {
        let pod = PodRef { namespace: "default".into(), name: "p".into(), uid: "u".into() };
        Ok(Output::new(vec![Action::StartContainer { pod }]))
    }
    let (mut sim, _) = sim(start, vec![]);
    sim.run_until(1_000);
    let refused = sim.trace().entries.iter().find_map(|e| match &e.event {
        Event::ActionRefused { status, .. } => Some(status.clone()),
        _ => None,
    });
    let status = refused.expect("the start was refused");
    assert_eq!(status.reason, StatusReason::Forbidden);
    assert!(!sim.trace().entries.iter().any(|e| matches!(e.event, Event::ContainerStarted { .. })));
}

/// A controller that logs `LINES_PER_CALL` lines at every call and does
/// nothing else.
struct Chatty {
    manifest: Manifest,
    calls: usize,
    unread: usize,
}

const LINES_PER_CALL: usize = 1_001;

impl Instance for Chatty {
    fn init(&mut self, _: &ComponentConfig) -> Result<Manifest, Crash> {
        Ok(self.manifest.clone())
    }
    fn handle(&mut self, _: &Input) -> Result<Output, Crash> {
        self.calls += 1;
        self.unread = LINES_PER_CALL;
        Ok(Output::default())
    }
    fn take_logs(&mut self) -> Vec<String> {
        let call = self.calls;
        (0..std::mem::take(&mut self.unread)).map(|i| format!("call {call} line {i}")).collect()
    }
}

#[test]
fn a_plugins_log_lines_are_recorded_on_its_lane_before_the_reconcile_they_came_from() {
    let m = manifest(vec![]);
    let mut sim = Sim::new(
        &scenario(),
        Box::new(move |_| Some(Box::new(Chatty { manifest: m.clone(), calls: 0, unread: 0 }) as Box<dyn Instance>)),
    )
    .unwrap();
    sim.run();
    let trace = sim.trace();
    let logged: Vec<_> = trace.entries.iter().filter(|e| matches!(e.event, Event::Logged { .. })).collect();
    assert!(!logged.is_empty(), "the controller's lines are in the trace");
    for e in &logged {
        assert_eq!(trace.lane_name(e), "c");
        let next = trace.get(e.id + 1).expect("the call's reconcile follows");
        assert!(matches!(next.event, Event::Reconcile { .. }), "{:?}", next.event);
        assert_eq!(next.causes, e.causes, "a log entry has its call's causes");
    }
    let Event::Logged { component, lines } = &logged[0].event else { unreachable!() };
    assert_eq!(component, "c");
    assert_eq!((lines.len(), lines[0].as_str()), (LINES_PER_CALL, "call 1 line 0"));
}

#[test]
fn a_plugin_logs_at_most_the_run_limit_and_a_last_line_says_so() {
    let m = manifest(vec![]);
    let mut sim = Sim::new(
        &scenario(),
        Box::new(move |_| Some(Box::new(Chatty { manifest: m.clone(), calls: 0, unread: 0 }) as Box<dyn Instance>)),
    )
    .unwrap();
    sim.run();
    let lines: Vec<&String> = sim
        .trace()
        .entries
        .iter()
        .filter_map(|e| match &e.event {
            Event::Logged { lines, .. } => Some(lines),
            _ => None,
        })
        .flatten()
        .collect();
    // More than ten calls of 1,001 lines each were logged: the trace keeps the limit, then the marker.
    assert_eq!(lines.len(), recon_sim::MAX_LOG_LINES_PER_RUN + 1);
    assert_eq!(lines[recon_sim::MAX_LOG_LINES_PER_RUN - 1], "call 10 line 990");
    assert_eq!(
        lines.last().unwrap().as_str(),
        "(log limit reached: 10000 lines per component per run; later lines are dropped)"
    );
}

// A Wasm plugin's instance costs its memory's setup and reset, so the
// simulator makes one per start: the instance it makes to check that a
// component's controller exists is the one its first start runs.
#[test]
fn every_start_makes_one_instance_and_the_first_is_the_one_checked() {
    let made = Rc::new(RefCell::new(0));
    let counted = made.clone();
    let m = manifest(vec![]);
    let seen = Rc::new(RefCell::new(Vec::new()));
    let behaviour: fn(usize, &Input) -> Result<Output, Crash> =
        |calls, _| if calls == 2 { Err(Crash::new("scripted trapped")) } else { Ok(Output::default()) };
    let mut sim = Sim::new(
        &scenario(),
        Box::new(move |_| {
            *counted.borrow_mut() += 1;
            Some(Box::new(Scripted { manifest: m.clone(), behaviour, calls: 0, seen: seen.clone() })
                as Box<dyn Instance>)
        }),
    )
    .unwrap();
    assert_eq!(*made.borrow(), 1, "checking the controller made its first instance");
    sim.run_until(20_000);
    let starts = starts(&sim);
    assert!(starts.len() >= 2, "it crashed and started again: {starts:?}");
    assert_eq!(*made.borrow(), starts.len(), "one instance per start");
}
