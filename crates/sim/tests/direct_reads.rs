//! Direct reads: a controller's own GET and LIST through its API server
//! (controller-runtime's uncached API reader), served with the
//! resourceVersion semantics it asks for, answered like a write, and
//! matched to its request by the id the controller gave it.
//!
//! Each test names the Kubernetes documentation statement it follows, in
//! our words; docs/API-SEMANTICS.md lists them.

use std::cell::RefCell;
use std::rc::Rc;

use recon_abi::{
    Action, ActionResult, ComponentConfig, Crash, Input, InputEvent, Instance, Manifest, Object, ObjectKey, Outcome,
    Output, ResourceVersionMatch, StatusReason, Verb, WatchSpec, WritePermission,
};
use recon_sim::Sim;
use recon_trace::{Event, ReadPurpose, ServedFrom};

/// A controller that sends `plan[i]` when timer `i` fires (timers set on
/// its first call) and records every result it gets, with the time.
struct Reader {
    plan: Vec<(u64, Output)>,
    results: Results,
    started: bool,
}

impl Instance for Reader {
    fn init(&mut self, _: &ComponentConfig) -> Result<Manifest, Crash> {
        self.started = false;
        Ok(Manifest {
            name: "reader".into(),
            abi_version: recon_abi::ABI_VERSION,
            // Watches ConfigMaps only: its pods come from direct reads.
            watches: vec![WatchSpec { kind: "ConfigMap".into(), ..Default::default() }],
            writes: vec![
                WritePermission { kind: "Pod".into(), verbs: vec![Verb::Get, Verb::List] },
                WritePermission { kind: "ConfigMap".into(), verbs: vec![Verb::Create] },
            ],
            ..Default::default()
        })
    }

    fn handle(&mut self, input: &Input) -> Result<Output, Crash> {
        let mut out = Output::default();
        if !self.started {
            self.started = true;
            for (i, (at, _)) in self.plan.iter().enumerate() {
                let after_ms = at.saturating_sub(input.time_ms);
                out.actions.push(Action::RequeueAfter { key: i.to_string(), after_ms });
            }
        }
        for event in &input.events {
            match event {
                InputEvent::Result(r) => self.results.borrow_mut().push((input.time_ms, ActionResult::clone(r))),
                InputEvent::Timer { key } => {
                    let i: usize = key.parse().expect("the reader's own timers");
                    let planned = &self.plan[i].1;
                    let first = out.actions.len();
                    out.actions.extend(planned.actions.iter().cloned());
                    out.request_ids.resize(first, None);
                    out.request_ids.extend(planned.request_ids.iter().copied());
                }
                _ => {}
            }
        }
        Ok(out)
    }
}

/// The results the reader got, with the time each arrived.
type Results = Rc<RefCell<Vec<(u64, ActionResult)>>>;

/// One API server (its settings spliced in from `server`), pods a, b, c
/// created at 100, 200 and 300ms, and the reader sending `plan`.
fn cluster(server: &str, plan: Vec<(u64, Output)>) -> (Sim, Results) {
    let yaml = format!(
        r#"
name: direct-reads
duration: 20s
network: {{ latency: {{ min: 1ms, max: 1ms }} }}
apiServers:
  - name: a
{server}
components:
  - {{ name: reader, controller: reader, apiServer: a }}
script:
  - {{ at: 100ms, create: {{ apiVersion: v1, kind: Pod, metadata: {{ name: a }} }} }}
  - {{ at: 200ms, create: {{ apiVersion: v1, kind: Pod, metadata: {{ name: b }} }} }}
  - {{ at: 300ms, create: {{ apiVersion: v1, kind: Pod, metadata: {{ name: c }} }} }}
"#
    );
    let scenario = recon_scenario::parse("direct-reads.yaml", &yaml).expect("test scenario parses");
    let results = Rc::new(RefCell::new(Vec::new()));
    let shared = results.clone();
    let sim = Sim::new(
        &scenario,
        Box::new(move |_| {
            Some(Box::new(Reader { plan: plan.clone(), results: shared.clone(), started: false }) as Box<dyn Instance>)
        }),
    )
    .expect("the scenario runs");
    (sim, results)
}

fn pod(name: &str) -> ObjectKey {
    ObjectKey::new("Pod", "default", name)
}

fn get(name: &str, rv: Option<&str>) -> Action {
    Action::Get { key: pod(name), resource_version: rv.map(Into::into) }
}

fn list(rv: Option<String>, m: Option<ResourceVersionMatch>) -> Action {
    Action::List {
        kind: "Pod".into(),
        namespace: "default".into(),
        field_selector: String::new(),
        label_selector: String::new(),
        resource_version: rv,
        resource_version_match: m,
        limit: None,
        continue_token: None,
    }
}

/// One request with id `id`, at `at`.
fn ask(at: u64, id: u64, action: Action) -> (u64, Output) {
    let mut out = Output::default();
    out.push_request(id, action);
    (at, out)
}

/// Runs to the end and returns the results the reader got.
fn run(mut sim: Sim, results: &Results) -> (Sim, Vec<(u64, ActionResult)>) {
    sim.run();
    let got = results.borrow().clone();
    (sim, got)
}

/// The revision pod `name` was created at (the runs are deterministic, so
/// a run without the reader's reads tells).
fn revision_of(name: &str) -> u64 {
    let (mut sim, _) = cluster("", vec![]);
    sim.run_until(1_000);
    sim.store().get(&pod(name), None).unwrap().expect("created").value.revision().unwrap()
}

fn names(outcome: &Outcome) -> Vec<String> {
    match outcome {
        Outcome::Listed(list) => list.items.iter().map(|o| o.metadata.name.clone()).collect(),
        other => panic!("expected a list, got {other:?}"),
    }
}

fn object(outcome: &Outcome) -> &Object {
    match outcome {
        Outcome::Ok(Some(o)) => o,
        other => panic!("expected an object, got {other:?}"),
    }
}

/// The direct reads in the trace: (where from, revision) per read.
fn direct_reads(sim: &Sim) -> Vec<(ServedFrom, u64)> {
    sim.trace()
        .entries
        .iter()
        .filter_map(|e| match &e.event {
            Event::ListServed(list) if list.purpose == ReadPurpose::DirectRead => {
                Some((list.served_from, list.revision))
            }
            _ => None,
        })
        .collect()
}

// API concepts, "Resource versions" → "Semantics for get and list":
// resourceVersion unset asks for the most recent data, a consistent read
// served from etcd, however far behind the watch cache is.
#[test]
fn a_direct_get_without_resource_version_reads_the_latest_state_from_etcd_past_a_lagging_cache() {
    let (sim, results) = cluster("    watchCache: { lag: 5s }", vec![ask(1_000, 1, get("c", None))]);
    let (sim, got) = run(sim, &results);
    assert_eq!(got.len(), 1, "{got:?}");
    let (_, result) = &got[0];
    assert_eq!((result.verb, result.id), (Verb::Get, Some(1)));
    assert_eq!(object(&result.outcome).metadata.name, "c");
    assert_eq!(direct_reads(&sim), [(ServedFrom::Store, revision_of("c"))]);
}

// Same section: resourceVersion="0" accepts any data, served from the
// watch cache and possibly arbitrarily stale. With the cache 5s behind, at
// 5.25s it has pods a and b but not c: a get of c answers 404 Not Found,
// a get of a is served at a revision older than c's.
#[test]
fn a_direct_get_at_resource_version_0_is_served_by_the_lagging_cache_and_may_miss_the_object() {
    let plan = vec![ask(5_250, 9, get("c", Some("0"))), ask(5_250, 10, get("a", Some("0")))];
    let (sim, results) = cluster("    watchCache: { lag: 5s }", plan);
    let (sim, got) = run(sim, &results);
    let (_, missing) = &got[0];
    assert_eq!(missing.id, Some(9));
    let Outcome::Err(status) = &missing.outcome else { panic!("expected a 404, got {:?}", missing.outcome) };
    assert_eq!((status.code, status.reason), (404, StatusReason::NotFound));
    assert_eq!((got[1].1.id, object(&got[1].1.outcome).metadata.name.as_str()), (Some(10), "a"));
    let reads = direct_reads(&sim);
    assert_eq!(reads.len(), 1, "the 404 is a failed request, not a read served: {reads:?}");
    assert_eq!(reads[0].0, ServedFrom::Cache);
    assert!(reads[0].1 < revision_of("c"), "the cache's state is older than c: {reads:?}");
}

// Same section, resourceVersionMatch=NotOlderThan (the default for a set
// resourceVersion): data at least as new as the given version; the API
// server's watch cache waits until it has caught up before answering.
#[test]
fn a_direct_list_not_older_than_a_revision_waits_for_the_cache_to_reach_it() {
    let rv = revision_of("c").to_string();
    let plan = vec![ask(350, 2, list(Some(rv.clone()), Some(ResourceVersionMatch::NotOlderThan)))];
    let (sim, results) = cluster("    watchCache: { lag: 400ms }", plan);
    let (sim, got) = run(sim, &results);
    let (at, result) = &got[0];
    assert_eq!(names(&result.outcome), ["a", "b", "c"]);
    assert!(*at >= 700, "answered only once the cache caught up (c + 400ms lag), at {at}ms");
    let Outcome::Listed(list) = &result.outcome else { unreachable!() };
    assert!(list.resource_version.parse::<u64>().unwrap() >= revision_of("c"));
    assert_eq!(direct_reads(&sim)[0].0, ServedFrom::Cache);
}

// Same section, resourceVersionMatch=Exact: data at exactly that version,
// read from etcd's history (the watch cache is not consulted).
#[test]
fn a_direct_list_exact_reads_that_revision_from_etcd() {
    let rv = revision_of("a").to_string();
    let (sim, results) = cluster("", vec![ask(1_000, 3, list(Some(rv), Some(ResourceVersionMatch::Exact)))]);
    let (sim, got) = run(sim, &results);
    assert_eq!(names(&got[0].1.outcome), ["a"], "b and c came later");
    assert_eq!(direct_reads(&sim), [(ServedFrom::Store, revision_of("a"))]);
}

// Same section: resourceVersionMatch=Exact with resourceVersion unset is
// not a valid combination; the API server answers 400 Bad Request. The
// run goes on: a later read is answered.
#[test]
fn an_invalid_resource_version_combination_is_a_400_and_the_run_goes_on() {
    let plan = vec![
        ask(1_000, 4, list(None, Some(ResourceVersionMatch::Exact))),
        ask(1_100, 5, list(Some("not-a-revision".into()), None)),
        ask(1_200, 6, get("a", None)),
    ];
    let (sim, results) = cluster("", plan);
    let (_, got) = run(sim, &results);
    let codes: Vec<(Option<u64>, u16)> = got
        .iter()
        .map(|(_, r)| match &r.outcome {
            Outcome::Err(s) => (r.id, s.code),
            _ => (r.id, 200),
        })
        .collect();
    assert_eq!(codes, [(Some(4), 400), (Some(5), 400), (Some(6), 200)]);
}

// Results are matched by id, not by order: a read that waits for the cache
// (sent first) is answered after a quorum read sent later.
#[test]
fn results_carry_the_request_id_the_controller_chose_whatever_order_they_arrive_in() {
    let future = (revision_of("c") + 1).to_string();
    let mut both = Output::default();
    both.push_request(70, list(Some(future), None));
    both.push_request(30, get("a", None));
    let (sim, results) = cluster("    watchCache: { lag: 10ms }", vec![(1_000, both)]);
    let (_, got) = run(sim, &results);
    let ids: Vec<Option<u64>> = got.iter().map(|(_, r)| r.id).collect();
    assert_eq!(ids, [Some(30), Some(70)], "the get first, then the list that waited: {got:?}");
    let Outcome::Err(status) = &got[1].1.outcome else { panic!("a revision nobody wrote times out") };
    assert_eq!(status.reason, StatusReason::Timeout, "{status}");
}

// Writes get their ids back too; a request without an id gets a result
// without one.
#[test]
fn a_write_result_carries_its_request_id_and_a_request_without_one_gets_none() {
    let mut config_map = Object { api_version: "v1".into(), kind: "ConfigMap".into(), ..Default::default() };
    config_map.metadata.name = "cm".into();
    config_map.metadata.namespace = "default".into();
    let plan = vec![
        ask(1_000, 42, Action::Create { object: config_map, dry_run: false }),
        (1_100, Output::new(vec![get("a", None)])),
    ];
    let (sim, results) = cluster("", plan);
    let (_, got) = run(sim, &results);
    let ids: Vec<(Verb, Option<u64>)> = got.iter().map(|(_, r)| (r.verb, r.id)).collect();
    assert_eq!(ids, [(Verb::Create, Some(42)), (Verb::Get, None)]);
}

// RBAC (Using RBAC Authorization → "Referring to resources"): reads need
// the get or list verb on the resource; a controller may read what it
// watches or declares, and anything else is 403 Forbidden.
#[test]
fn a_direct_read_of_a_kind_the_manifest_neither_watches_nor_declares_is_forbidden() {
    let secret = Action::Get { key: ObjectKey::new("Secret", "default", "s"), resource_version: None };
    let plan = vec![ask(1_000, 8, secret), ask(1_100, 9, list(Some("0".into()), None))];
    let (sim, results) = cluster("", plan);
    let (sim, got) = run(sim, &results);
    let Outcome::Err(status) = &got[0].1.outcome else { panic!("refused") };
    assert_eq!((got[0].1.id, status.reason), (Some(8), StatusReason::Forbidden));
    assert_eq!(names(&got[1].1.outcome), ["a", "b", "c"], "a declared list is served");
    assert_eq!(direct_reads(&sim).len(), 1, "only the allowed read was served");
}

// Bad plugin output: more request ids than actions crashes that instance
// with a reason that says so; nothing is sent.
#[test]
fn more_request_ids_than_actions_crash_the_instance_with_a_clear_reason() {
    let bad = Output { actions: vec![get("a", None)], request_ids: vec![Some(1), Some(2)], ..Default::default() };
    let (sim, results) = cluster("", vec![(1_000, bad)]);
    let (sim, got) = run(sim, &results);
    assert!(got.is_empty(), "nothing was sent: {got:?}");
    let crash = sim.trace().entries.iter().find_map(|e| match &e.event {
        Event::ComponentCrashed { reason, .. } => Some(reason.clone()),
        _ => None,
    });
    let crash = crash.expect("the instance crashed");
    assert!(crash.starts_with("reader: its output names 2 request ids for 1 actions"), "{crash}");
}

// The trace shows a direct read on the reader's lane as a read of its own
// (not an informer list), and its result is caused by that read.
#[test]
fn a_direct_read_is_on_the_trace_as_the_components_own_read_and_causes_its_result() {
    let (sim, results) = cluster("", vec![ask(1_000, 1, get("b", Some("0")))]);
    let (sim, _) = run(sim, &results);
    let trace = sim.trace();
    let read = trace
        .entries
        .iter()
        .find(|e| matches!(&e.event, Event::ListServed(list) if list.purpose == ReadPurpose::DirectRead))
        .expect("the read is on the trace");
    let Event::ListServed(list) = &read.event else { unreachable!() };
    let (component, request) = (&list.component, &list.request);
    assert_eq!((component.as_str(), request.as_str()), ("reader", "get Pod default/b resourceVersion=\"0\""));
    let reconcile = trace
        .entries
        .iter()
        .find(|e| matches!(&e.event, Event::Reconcile(call) if call.inputs.iter().any(|i| i.to_string().starts_with("get Pod default/b"))))
        .expect("the result reaches the reader");
    assert!(reconcile.causes.contains(&read.id), "the result is caused by the read");
}
