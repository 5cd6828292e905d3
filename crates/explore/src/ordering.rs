//! The search over orderings: when several controllers have a reconcile
//! due at the same virtual moment, which runs first? The simulator asks a
//! chooser at each such moment ([`recon_sim::ordering`]); this module
//! drives it, depth-first with de-duplication of states already seen or by
//! seeded random walks, and judges the runs with the *order dependence*
//! oracle: two runs from the same start that quiesce in different end
//! states (after [`EndState`]'s normalisation) mean the outcome depends on
//! the order. A run that breaks a safety check is reported too.
//!
//! With a stale-view bound `K` ([`Bounds::stale_views`]) the search also
//! gives individual reconciles staler views: at every call of a component
//! with two or more inputs, the simulator asks how many of the newest it
//! goes without ([`recon_sim::Reconcile`]), and a run may hold inputs back
//! at up to `K` calls. The two kinds of choice are one tree, searched the
//! same way; a finding's stale views replay through the scenario's
//! `staleViews`.
//!
//! Every run replays from the start (the simulator is deterministic, so a
//! list of picks is a path through the tree of moments), and each finding
//! carries its orderings as scenario `ordering` choices that `recon run`
//! and a share link replay exactly.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use recon_scenario::{Millis, OrderChoice, Scenario, StaleView};
use recon_sim::rng::Rng;
use recon_sim::{Event, Sim, SimError, Trace};
use recon_store::Store;
use recon_trace::text::fmt_time;
use serde_json::Value;

use crate::LocalFactory;
use crate::oracle::{self, Finding};

/// How long before the end of the run the last write must have been for
/// the run to count as quiesced (its end state settled).
pub const QUIET_MS: u64 = 1_000;

/// How runs are chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// Depth-first over the tree of moments, from the latest moment back,
    /// skipping a moment whose state (store, time, who is waiting) an
    /// earlier run already branched from.
    DepthFirst,
    /// Random walks: at every moment a uniformly drawn component runs
    /// first; walk `k` draws from a stream derived from `seed` and `k`.
    RandomWalks {
        /// The walks' seed.
        seed: u64,
    },
}

/// One decision of a run: at `at`, `first` ran before `others`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    /// The moment.
    pub at: u64,
    /// Who ran first.
    pub first: String,
    /// Who else was waiting, in the default order.
    pub others: Vec<String>,
}

impl Decision {
    /// In words: `t=1.002s approval-gate before provisioner`.
    pub fn describe(&self) -> String {
        format!("{} {} before {}", fmt_time(self.at), self.first, self.others.join(", "))
    }
}

/// One stale view of a run: at `at`, `component` reconciled without its
/// newest inputs `held_back`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StaleDecision {
    /// The moment.
    pub at: u64,
    /// Whose reconcile saw less.
    pub component: String,
    /// The inputs it went without, one line each (empty: a call that saw
    /// everything, kept so that a later choice at the same moment replays
    /// on the right call).
    pub held_back: Vec<String>,
}

impl StaleDecision {
    /// In words: `t=4.003s garbage-collector reconciles without watch 0: ADDED …`.
    pub fn describe(&self) -> String {
        format!("{} {} reconciles without {}", fmt_time(self.at), self.component, self.held_back.join(" and "))
    }
}

/// What a choice point offered.
#[derive(Clone, Debug)]
enum Offer {
    /// Several components had a reconcile due: who goes first.
    Order { pending: Vec<String> },
    /// A component's call had several inputs: how many newest it goes without.
    Stale { component: String, inputs: Vec<String> },
}

impl Offer {
    /// How many picks it has (pick 0 is the default).
    fn choices(&self) -> usize {
        match self {
            Offer::Order { pending } => pending.len(),
            Offer::Stale { inputs, .. } => inputs.len(),
        }
    }
}

/// A choice point the run met, with the pick made there.
#[derive(Clone, Debug)]
struct Point {
    time: u64,
    offer: Offer,
    pick: usize,
    /// The state the point branched from (see [`state_key`]).
    state: u64,
}

/// How far a search reaches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bounds {
    /// At most this many runs.
    pub max_runs: usize,
    /// At most this many reconciles per run get a stale view (0: none, the
    /// search over orderings alone).
    pub stale_views: usize,
}

/// One run under one ordering.
#[derive(Clone, Debug)]
pub struct OrderedRun {
    /// The decisions that replay it, trimmed of those the default order
    /// makes anyway (see [`OrderedRun::ordering`]).
    pub decisions: Vec<Decision>,
    /// The reconciles it gave a stale view, in the order they ran.
    pub stale: Vec<StaleDecision>,
    /// How many moments with a choice it met.
    pub moments: usize,
    /// Its end state.
    pub end: EndState,
    /// Whether it quiesced: no write in the last [`QUIET_MS`] of the run.
    pub quiesced: bool,
    /// A safety check it broke, if any.
    pub finding: Option<Finding>,
    /// Its trace's hash.
    pub trace_hash: String,
}

impl OrderedRun {
    /// The scenario `ordering` that replays this run.
    pub fn ordering(&self) -> Vec<OrderChoice> {
        self.decisions.iter().map(|d| OrderChoice { at: Millis(d.at), first: d.first.clone() }).collect()
    }

    /// The scenario `staleViews` that replay this run's stale views.
    pub fn stale_views(&self) -> Vec<StaleView> {
        let view = |d: &StaleDecision| StaleView {
            at: Millis(d.at),
            component: d.component.clone(),
            held_back: d.held_back.len() as u32,
        };
        self.stale.iter().map(view).collect()
    }

    /// The ordering in words, one decision a line (or the default order),
    /// then its stale views.
    pub fn describe(&self) -> String {
        let mut lines: Vec<String> = self.decisions.iter().map(Decision::describe).collect();
        if lines.is_empty() {
            lines.push("the default order (whoever's work arrived first runs first)".into());
        }
        lines.extend(self.stale.iter().filter(|d| !d.held_back.is_empty()).map(StaleDecision::describe));
        lines.join("; ")
    }
}

/// A run's end state: the store's objects by key, normalised so that equal
/// outcomes compare equal (see [`normalise`]). Leases and Events are left
/// out: a Lease records who renewed it when, an Event records what
/// happened when, so both differ between orderings by design.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EndState {
    /// Normalised objects by key (`Kind namespace/name`).
    pub objects: BTreeMap<String, Value>,
}

impl EndState {
    /// The end state of a store.
    pub fn of(store: &Store) -> EndState {
        let mut objects = BTreeMap::new();
        for kv in store.range("/", None).unwrap_or_default() {
            if matches!(kv.value.kind.as_str(), "Lease" | "Event") {
                continue;
            }
            objects.insert(kv.value.key().to_string(), normalise(&kv.value));
        }
        EndState { objects }
    }

    /// Where `self` (ordering 1) and `other` (ordering 2) differ, a line per
    /// field: `Widget default/w1 status.conditions[0].status: "True" | "False"`.
    pub fn diff(&self, other: &EndState) -> Vec<String> {
        let keys: BTreeSet<&String> = self.objects.keys().chain(other.objects.keys()).collect();
        let mut lines = Vec::new();
        for key in keys {
            match (self.objects.get(key), other.objects.get(key)) {
                (Some(_), None) => lines.push(format!("{key}: exists after ordering 1 only")),
                (None, Some(_)) => lines.push(format!("{key}: exists after ordering 2 only")),
                (Some(a), Some(b)) if a != b => {
                    let (mut fa, mut fb) = (BTreeMap::new(), BTreeMap::new());
                    flatten("", a, &mut fa);
                    flatten("", b, &mut fb);
                    let paths: BTreeSet<&String> = fa.keys().chain(fb.keys()).collect();
                    for path in paths {
                        let (va, vb) = (fa.get(path), fb.get(path));
                        if va != vb {
                            let show = |v: Option<&String>| v.cloned().unwrap_or_else(|| "(absent)".into());
                            lines.push(format!("{key} {path}: {} | {}", show(va), show(vb)));
                        }
                    }
                }
                _ => {}
            }
        }
        lines
    }
}

/// An object as the order-dependence oracle compares it: without what
/// records *when* or *in which order* things happened rather than what the
/// outcome is — `resourceVersion`, `uid` (also in owner references: uids
/// are drawn in creation order), `generation`, `creationTimestamp`,
/// `managedFields`, and every field whose name ends in `Time` or
/// `Timestamp` (a condition's `lastTransitionTime`, …);
/// `deletionTimestamp` is kept as whether it is set.
pub fn normalise(object: &recon_abi::Object) -> Value {
    let mut value = serde_json::to_value(object).unwrap_or(Value::Null);
    let terminating = object.metadata.deletion_timestamp.is_some();
    if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) {
        for field in ["resourceVersion", "uid", "generation", "creationTimestamp", "managedFields"] {
            meta.remove(field);
        }
        if let Some(owners) = meta.get_mut("ownerReferences").and_then(Value::as_array_mut) {
            for owner in owners.iter_mut().filter_map(Value::as_object_mut) {
                owner.remove("uid");
            }
        }
        if terminating {
            meta.insert("deletionTimestamp".into(), Value::String("set".into()));
        }
    }
    drop_times(&mut value);
    value
}

/// Removes every field named `…Time` or `…Timestamp` below `value`, except
/// the already normalised `deletionTimestamp`.
fn drop_times(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|k, v| {
                k == "deletionTimestamp" && v == "set" || !(k.ends_with("Time") || k.ends_with("Timestamp"))
            });
            map.values_mut().for_each(drop_times);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_times),
        _ => {}
    }
}

/// `a.b[0].c` → the value's JSON, for every leaf of `value`.
fn flatten(path: &str, value: &Value, out: &mut BTreeMap<String, String>) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (k, v) in map {
                let p = if path.is_empty() { k.clone() } else { format!("{path}.{k}") };
                flatten(&p, v, out);
            }
        }
        Value::Array(items) if !items.is_empty() => {
            for (i, v) in items.iter().enumerate() {
                flatten(&format!("{path}[{i}]"), v, out);
            }
        }
        leaf => {
            out.insert(path.to_string(), leaf.to_string());
        }
    }
}

/// The state a choice point branches from, as a number: the time, what
/// it offers, how many stale views the run has left, the store (its
/// revision and normalised objects) and the rest of the simulation as the
/// host sees it (API servers' caches and watches, components' caches and
/// undelivered inputs, messages in flight: [`recon_sim::Moment::world`]).
/// Two points with the same key lead to the same runs, so skipping the
/// second is sound as far as the host can see (a plugin's memory beyond
/// its cache is not in it).
fn state_key(time: u64, offer: &Offer, stale_left: usize, store: &Store, world: &str) -> u64 {
    let mut text = format!("{time}|{offer:?}|{stale_left}|{}|", store.revision());
    for (key, value) in EndState::of(store).objects {
        text += &key;
        text += &value.to_string();
    }
    text += world;
    recon_trace::fnv1a(text.as_bytes())
}

/// What the order-dependence search found.
#[derive(Clone, Debug)]
pub enum OrderingFinding {
    /// Two runs quiesced in different end states.
    DependsOnOrder {
        /// The first run (the default order, unless it did not quiesce).
        first: Box<OrderedRun>,
        /// A run that ended differently.
        second: Box<OrderedRun>,
        /// Where their end states differ ([`EndState::diff`]).
        diff: Vec<String>,
    },
    /// A run broke a safety check.
    Violation(Box<OrderedRun>),
}

/// What a search over orderings did.
#[derive(Clone, Debug)]
pub struct OrderingResult {
    /// Runs made.
    pub runs: usize,
    /// Moments whose subtree was skipped because their state was seen before.
    pub pruned: usize,
    /// Runs that did not quiesce (not compared).
    pub unquiesced: usize,
    /// Whether every ordering the strategy can reach was run (depth-first
    /// only; random walks never exhaust).
    pub exhausted: bool,
    /// What it found, if anything.
    pub finding: Option<OrderingFinding>,
}

/// The scenario an ordering search starts from: `scenario` as given
/// (faults included: they are part of the start), without an ordering or
/// stale views.
pub fn start(scenario: &Scenario) -> Scenario {
    Scenario { ordering: Vec::new(), stale_views: Vec::new(), ..scenario.clone() }
}

/// The picks of one run as it goes: what it was told, the points met.
struct Picker {
    picks: Vec<usize>,
    walk: Option<Rng>,
    points: Vec<Point>,
    /// Stale views it may still give.
    stale_left: usize,
}

impl Picker {
    /// Records a point and picks: the prefix's pick, else a random one on
    /// a walk, else the default.
    fn pick(&mut self, time: u64, offer: Offer, store: &Store, world: &str) -> usize {
        let n = offer.choices();
        let pick = match (self.picks.get(self.points.len()), self.walk.as_mut()) {
            (Some(&pick), _) => pick.min(n - 1),
            (None, Some(rng)) => rng.range_inclusive(0, n as u64 - 1) as usize,
            (None, None) => 0,
        };
        let state = state_key(time, &offer, self.stale_left, store, world);
        if matches!(offer, Offer::Stale { .. }) && pick > 0 {
            self.stale_left -= 1;
        }
        self.points.push(Point { time, offer, pick, state });
        pick
    }
}

/// Runs `start` with `picks` at its first choice points, then either the
/// default or, with `walk`, random picks; at most `stale_views` calls get
/// a stale view.
fn run_one(
    start: &Scenario,
    picks: &[usize],
    walk: Option<Rng>,
    stale_views: usize,
    factory: LocalFactory,
) -> Result<(OrderedRun, Vec<Point>), SimError> {
    let picker =
        Rc::new(RefCell::new(Picker { picks: picks.to_vec(), walk, points: Vec::new(), stale_left: stale_views }));
    let mut sim = Sim::new(start, factory())?;
    let orders = Rc::clone(&picker);
    sim.set_chooser(Box::new(move |moment| {
        let offer = Offer::Order { pending: moment.pending.to_vec() };
        orders.borrow_mut().pick(moment.time_ms, offer, moment.store, &moment.world())
    }));
    if stale_views > 0 {
        let stales = Rc::clone(&picker);
        sim.set_stale_chooser(Box::new(move |call| {
            let mut picker = stales.borrow_mut();
            if picker.stale_left == 0 {
                return 0;
            }
            let offer = Offer::Stale { component: call.component.to_string(), inputs: call.inputs.to_vec() };
            picker.pick(call.time_ms, offer, call.store, &call.world())
        }));
    }
    sim.run();
    let end = EndState::of(sim.store());
    let trace = sim.into_trace();
    let points = std::mem::take(&mut picker.borrow_mut().points);
    let run = OrderedRun {
        decisions: decisions(&points),
        stale: stale_decisions(&points),
        moments: points.len(),
        end,
        quiesced: quiesced(&trace, start.duration.0),
        finding: oracle::judge(&trace, None),
        trace_hash: trace.hash(),
    };
    Ok((run, points))
}

/// Whether nothing but Leases and Events was written in the last
/// [`QUIET_MS`] of the run.
fn quiesced(trace: &Trace, end: u64) -> bool {
    let last = trace.entries.iter().rev().find_map(|e| match &e.event {
        Event::StoreWrite { key, .. } if !matches!(key.kind.as_str(), "Lease" | "Event") => Some(e.time_ms),
        _ => None,
    });
    last.is_none_or(|t| t + QUIET_MS <= end)
}

/// The decisions that replay `points`: a decision per moment up to the
/// last that left the default order, less the default ones at times where
/// no later decision leaves it (a choice only ever applies at its own time,
/// so those moments take the default anyway).
fn decisions(points: &[Point]) -> Vec<Decision> {
    let orders: Vec<(u64, &Vec<String>, usize)> = points
        .iter()
        .filter_map(|p| match &p.offer {
            Offer::Order { pending } => Some((p.time, pending, p.pick)),
            Offer::Stale { .. } => None,
        })
        .collect();
    let Some(last) = orders.iter().rposition(|o| o.2 != 0) else { return Vec::new() };
    let mut out = Vec::new();
    for (i, &(time, pending, pick)) in orders[..=last].iter().enumerate() {
        let needed = pick != 0 || orders[i + 1..=last].iter().any(|q| q.2 != 0 && q.0 == time);
        if needed {
            let mut others = pending.clone();
            let first = others.remove(pick);
            out.push(Decision { at: time, first, others });
        }
    }
    out
}

/// The stale views that replay `points`: every call that went without
/// something, and before it each call of the same component at the same
/// moment that did not (a stale-view choice applies to the first call of
/// its component at its time that it fits, so those calls use up one
/// that holds back nothing).
fn stale_decisions(points: &[Point]) -> Vec<StaleDecision> {
    let stale: Vec<(u64, &String, &Vec<String>, usize)> = points
        .iter()
        .filter_map(|p| match &p.offer {
            Offer::Stale { component, inputs } => Some((p.time, component, inputs, p.pick)),
            Offer::Order { .. } => None,
        })
        .collect();
    let mut out = Vec::new();
    for (i, &(time, component, inputs, pick)) in stale.iter().enumerate() {
        let later = || stale[i + 1..].iter().any(|q| q.3 != 0 && q.0 == time && q.1 == component);
        if pick != 0 || later() {
            let held_back = inputs[inputs.len() - pick..].to_vec();
            out.push(StaleDecision { at: time, component: component.clone(), held_back });
        }
    }
    out
}

/// Searches the orderings (and, with `bounds.stale_views`, stale views) of
/// `scenario` ([`start`]) with `strategy`, at most `bounds.max_runs` runs;
/// `progress(runs)` is told after each. Stops at the first finding. The
/// first run is always the default order with nothing held back.
pub fn search(
    scenario: &Scenario,
    factory: LocalFactory,
    strategy: Strategy,
    bounds: Bounds,
    progress: &mut dyn FnMut(usize),
) -> Result<OrderingResult, SimError> {
    let Bounds { max_runs, stale_views } = bounds;
    let start = start(scenario);
    let mut result = OrderingResult { runs: 0, pruned: 0, unquiesced: 0, exhausted: false, finding: None };
    let mut baseline: Option<OrderedRun> = None;
    // Judges a run against the first quiesced one; true when it is a finding.
    let mut judge = |run: OrderedRun, result: &mut OrderingResult| -> bool {
        if run.finding.is_some() {
            result.finding = Some(OrderingFinding::Violation(Box::new(run)));
            return true;
        }
        if !run.quiesced {
            result.unquiesced += 1;
            return false;
        }
        match &baseline {
            None => baseline = Some(run),
            Some(first) if first.end != run.end => {
                let diff = first.end.diff(&run.end);
                let first = Box::new(first.clone());
                result.finding = Some(OrderingFinding::DependsOnOrder { first, second: Box::new(run), diff });
                return true;
            }
            Some(_) => {}
        }
        false
    };
    match strategy {
        Strategy::DepthFirst => {
            let mut stack: Vec<Vec<usize>> = vec![Vec::new()];
            let mut branched: BTreeSet<u64> = BTreeSet::new();
            while result.runs < max_runs {
                let Some(prefix) = stack.pop() else {
                    result.exhausted = true;
                    break;
                };
                let (run, points) = run_one(&start, &prefix, None, stale_views, factory)?;
                result.runs += 1;
                progress(result.runs);
                if judge(run, &mut result) {
                    break;
                }
                let picks: Vec<usize> = points.iter().map(|p| p.pick).collect();
                for (i, point) in points.iter().enumerate().skip(prefix.len()) {
                    if !branched.insert(point.state) {
                        result.pruned += 1;
                        break;
                    }
                    for alternative in 1..point.offer.choices() {
                        let mut child = picks[..i].to_vec();
                        child.push(alternative);
                        stack.push(child);
                    }
                }
            }
        }
        Strategy::RandomWalks { seed } => {
            for k in 0..max_runs {
                let walk = (k > 0).then(|| Rng::derive(seed, &format!("ordering-walk-{k}")));
                let (run, _) = run_one(&start, &[], walk, stale_views, factory)?;
                result.runs += 1;
                progress(result.runs);
                if judge(run, &mut result) {
                    break;
                }
            }
        }
    }
    Ok(result)
}

/// The scenario that replays `run`: `scenario` with the run's ordering,
/// named `<name>-<label>`, and `description` in front of its own.
pub fn replay_scenario(scenario: &Scenario, run: &OrderedRun, label: &str, description: &str) -> Scenario {
    let mut s = start(scenario);
    s.name = format!("{}-{label}", scenario.name);
    s.ordering = run.ordering();
    s.stale_views = run.stale_views();
    s.description = format!("{description}\n\n{}", scenario.description.trim_end());
    s.expect.violations = run.finding.as_ref().map(|f| f.checks.clone()).unwrap_or_default();
    s
}

/// The two scenarios that replay a finding, with descriptions saying what
/// was found (one for a violation).
pub fn found_scenarios(scenario: &Scenario, finding: &OrderingFinding) -> Vec<Scenario> {
    match finding {
        OrderingFinding::DependsOnOrder { first, second, diff } => {
            let said = format!(
                "Found by `recon explore --orderings` (seed {}): the outcome depends on the order in which \
                 controllers reconcile. Ordering 1: {}. Ordering 2: {}. Their end states differ:\n{}",
                scenario.seed,
                first.describe(),
                second.describe(),
                diff.iter().map(|l| format!("- {l}")).collect::<Vec<_>>().join("\n"),
            );
            vec![
                replay_scenario(scenario, first, "order-1", &said),
                replay_scenario(scenario, second, "order-2", &said),
            ]
        }
        OrderingFinding::Violation(run) => {
            let f = run.finding.as_ref().map(|f| format!("{}: {}", f.broken, f.message)).unwrap_or_default();
            let said = format!(
                "Found by `recon explore --orderings` (seed {}): with the ordering {} the run breaks {f}.",
                scenario.seed,
                run.describe()
            );
            vec![replay_scenario(scenario, run, "order", &said)]
        }
    }
}
