//! The watch cache against a reference model, over random histories.
//!
//! The store writes random creates, updates (that move pods between nodes
//! and relabel them) and deletes; the cache is fed those events in bursts,
//! with duplicates and gaps thrown at it, relisted from the store now and
//! then, and pushed past its window. The model is the store's own state at
//! every revision plus the plain rule for the window. After every step:
//!
//! - the cache holds exactly the store's state at the cache's revision, for
//!   every selection (kind, namespace, field and label selectors);
//! - a watch can resume from exactly the revisions still in the window, and
//!   gets exactly the events after it;
//! - the contract a reflector relies on: the list at revision `r` plus the
//!   watch events after `r`, as that selection sees them (ADDED, MODIFIED,
//!   DELETED), give the list at the cache's revision.
//!
//! Each history comes from a seed; a failure prints "reproduce with seed=…".

use std::collections::BTreeMap;
use std::sync::Arc;

use recon_abi::{EventType, Object, ObjectMeta};
use recon_sim::api::Selection;
use recon_sim::cache::{Filter, WINDOW_CAPACITY, WatchCache};
use recon_sim::rng::Rng;
use recon_store::{Store, StoreEvent, key_for};
use serde_json::json;

/// Names, namespaces, nodes and label values drawn from small sets, so that
/// writes collide and selections overlap.
const NAMES: [&str; 5] = ["a", "b", "c", "web-0", "web-1"];
const NAMESPACES: [&str; 2] = ["default", "kube-system"];
const NODES: [&str; 3] = ["", "node-1", "node-2"];
const APPS: [&str; 3] = ["", "web", "db"];

/// What a selection means, written out by hand: the reference for `Filter::matches`.
type Meaning = fn(&Object) -> bool;

fn node(o: &Object) -> &str {
    o.spec.get("nodeName").and_then(|v| v.as_str()).unwrap_or("")
}

fn app(o: &Object) -> Option<&str> {
    o.metadata.labels.get("app").map(String::as_str)
}

/// The selections every check lists and watches with, each with its meaning.
fn selections() -> Vec<(Filter, Meaning)> {
    let cases: [(&str, &str, &str, &str, Meaning); 10] = [
        ("Pod", "", "", "", |o| o.kind == "Pod"),
        ("Pod", "default", "", "", |o| o.kind == "Pod" && o.metadata.namespace == "default"),
        ("Pod", "kube-system", "", "", |o| o.kind == "Pod" && o.metadata.namespace == "kube-system"),
        ("Pod", "", "spec.nodeName=node-1", "", |o| o.kind == "Pod" && node(o) == "node-1"),
        ("Pod", "", "spec.nodeName!=node-1", "", |o| o.kind == "Pod" && node(o) != "node-1"),
        ("Pod", "default", "spec.nodeName=node-2", "app=web", |o| {
            o.kind == "Pod" && o.metadata.namespace == "default" && node(o) == "node-2" && app(o) == Some("web")
        }),
        ("Pod", "", "", "app", |o| o.kind == "Pod" && app(o).is_some()),
        // `!app` and `app!=db` together: only pods without the label.
        ("Pod", "", "", "!app,app!=db", |o| o.kind == "Pod" && app(o).is_none()),
        ("ConfigMap", "", "", "", |o| o.kind == "ConfigMap"),
        ("Node", "", "", "", |o| o.kind == "Node"),
    ];
    cases
        .into_iter()
        .map(|(kind, namespace, fields, labels, meaning)| {
            let selection = Selection {
                kind: kind.into(),
                namespace: namespace.into(),
                field_selector: fields.into(),
                label_selector: labels.into(),
            };
            (Filter::new(&selection).expect("valid selectors"), meaning)
        })
        .collect()
}

fn pick<'a>(rng: &mut Rng, from: &[&'a str]) -> &'a str {
    from[rng.range_inclusive(0, from.len() as u64 - 1) as usize]
}

/// A random object: mostly pods, some config maps (a kind the pod
/// selections must never return) and nodes (cluster-scoped).
fn object(rng: &mut Rng) -> Object {
    let (kind, namespace) = match rng.range_inclusive(0, 9) {
        0 => ("ConfigMap", pick(rng, &NAMESPACES)),
        1 => ("Node", ""),
        _ => ("Pod", pick(rng, &NAMESPACES)),
    };
    let mut labels = BTreeMap::new();
    let app = pick(rng, &APPS);
    if !app.is_empty() {
        labels.insert("app".to_string(), app.to_string());
    }
    let node = pick(rng, &NODES);
    let spec = if node.is_empty() { json!({}) } else { json!({ "nodeName": node }) };
    Object {
        api_version: "v1".into(),
        kind: kind.into(),
        metadata: ObjectMeta {
            name: pick(rng, &NAMES).into(),
            namespace: namespace.into(),
            labels: labels.into(),
            ..Default::default()
        },
        spec: spec.into(),
        ..Default::default()
    }
}

/// One random write to the store: a create, an update or a delete of
/// whatever key the object lands on. Refused writes are simply not events.
fn write(rng: &mut Rng, store: &mut Store, time_ms: u64) -> Option<StoreEvent> {
    let o = object(rng);
    let exists = store.get(&o.key(), None).expect("current reads work").is_some();
    match (exists, rng.range_inclusive(0, 3)) {
        (false, _) => store.create(o, time_ms).ok(),
        (true, 0) => store.delete(&o.key(), None, time_ms).ok(),
        (true, _) => store.update(o, None, time_ms).ok(),
    }
}

/// The model: the store's state at every revision (`states[r]`), and where
/// the cache's window starts.
struct Model {
    states: Vec<BTreeMap<String, Object>>,
    events: Vec<StoreEvent>,
    revision: u64,
    window: Vec<u64>,
    window_start: u64,
}

impl Model {
    fn record(&mut self, event: StoreEvent) {
        let mut state = self.states.last().expect("state at revision 0").clone();
        if event.kind == recon_store::EventKind::Delete {
            state.remove(&event.key);
        } else {
            state.insert(event.key.clone(), Object::clone(&event.value));
        }
        self.states.push(state);
        self.events.push(event);
    }

    /// The selected objects at revision `r`, in key order: the reference for `list`.
    fn list(&self, meaning: Meaning, r: u64) -> Vec<Object> {
        self.states[r as usize].values().filter(|o| meaning(o)).cloned().collect()
    }
}

/// One history: the store, the cache under test and the model, driven by `seed`.
struct History {
    rng: Rng,
    store: Store,
    cache: WatchCache,
    model: Model,
    selections: Vec<(Filter, Meaning)>,
    seed: u64,
    step: usize,
    /// Whether events ever left the window.
    overflowed: bool,
}

impl History {
    fn new(seed: u64) -> History {
        let model =
            Model { states: vec![BTreeMap::new()], events: vec![], revision: 0, window: vec![], window_start: 0 };
        History {
            rng: Rng::new(seed),
            store: Store::new(),
            cache: WatchCache::default(),
            model,
            selections: selections(),
            seed,
            step: 0,
            overflowed: false,
        }
    }

    fn context(&self) -> String {
        format!("reproduce with seed={} (step {})", self.seed, self.step)
    }

    fn writes(&mut self, n: u64) {
        for _ in 0..n {
            let time_ms = self.store.revision() * 10;
            if let Some(event) = write(&mut self.rng, &mut self.store, time_ms) {
                self.model.record(event);
            }
        }
    }

    /// Feeds the cache the next `n` events it has not seen.
    fn feed(&mut self, n: u64) {
        for _ in 0..n {
            let Some(event) = self.model.events.get(self.model.revision as usize).cloned() else { return };
            let context = self.context();
            let cached =
                self.cache.apply(&event, event.revision).unwrap_or_else(|| panic!("next event refused; {context}"));
            assert_eq!(cached.revision, event.revision, "{context}");
            assert_eq!(cached.object, event.value, "{context}");
            assert_eq!(cached.prev, event.prev, "{context}");
            assert_eq!(cached.deleted, event.kind == recon_store::EventKind::Delete, "{context}");
            self.model.revision = event.revision;
            self.model.window.push(event.revision);
            if self.model.window.len() > WINDOW_CAPACITY {
                self.model.window_start = self.model.window.remove(0);
                self.overflowed = true;
            }
        }
    }

    /// Events the cache must refuse: one it has applied, one past a gap.
    fn duplicate_and_gap(&mut self) {
        let context = self.context();
        let r = self.model.revision as usize;
        if r > 0 {
            let old = self.model.events[r - 1].clone();
            assert!(self.cache.apply(&old, 0).is_none(), "a duplicate was applied; {context}");
        }
        if let Some(future) = self.model.events.get(r + 1).cloned() {
            assert!(self.cache.apply(&future, 0).is_none(), "an event past a gap was applied; {context}");
        }
    }

    /// The cache rebuilds itself from the store's current state.
    fn relist(&mut self) {
        let revision = self.store.revision();
        let objects = self.store.range("", None).expect("current range works").into_iter().map(|kv| (kv.key, kv.value));
        self.cache.replace(revision, objects, Some(revision));
        self.model.revision = revision;
        self.model.window.clear();
        self.model.window_start = revision;
    }

    fn check(&mut self) {
        let context = self.context();
        let (cache, model) = (&self.cache, &self.model);
        let rev = model.revision;
        assert_eq!(cache.revision, rev, "{context}");
        assert_eq!(cache.oldest_resumable(), model.window_start, "{context}");
        for (filter, meaning) in &self.selections {
            let listed: Vec<Object> = cache.list(filter).into_iter().map(Arc::unwrap_or_clone).collect();
            assert_eq!(listed, model.list(*meaning, rev), "list {filter:?}; {context}");
        }
        for o in model.states[rev as usize].values().take(3) {
            let key = key_for(&o.key());
            assert_eq!(cache.get(&key).map(|o| &**o), Some(o), "{context}");
        }
        // Where a watch may resume: exactly the window.
        let mut resume_points = vec![0, model.window_start.saturating_sub(1), model.window_start, rev];
        resume_points.push(self.rng.range_inclusive(model.window_start, rev));
        for r in resume_points {
            let got = cache.events_after(r).map(|events| events.map(|e| e.revision).collect::<Vec<_>>());
            let want = (r >= model.window_start).then(|| model.window.iter().copied().filter(|x| *x > r).collect());
            assert_eq!(got, want, "events after {r}; {context}");
        }
        // A reflector's view: the list at r plus what each watch sees after r.
        // Mostly a recent revision, as a reflector that keeps up resumes
        // from; sometimes the oldest one, across the whole window.
        let r = match self.rng.range_inclusive(0, 9) {
            0 => model.window_start,
            _ => self.rng.range_inclusive(model.window_start.max(rev.saturating_sub(64)), rev),
        };
        for (filter, meaning) in &self.selections {
            let mut view: BTreeMap<String, Object> =
                model.list(*meaning, r).into_iter().map(|o| (key_for(&o.key()), o)).collect();
            for event in cache.events_after(r).expect("r is in the window") {
                let Some(seen) = filter.view(event) else { continue };
                let key = key_for(&seen.object.key());
                let had = view.contains_key(&key);
                match seen.event_type {
                    EventType::Added => assert!(!had, "ADDED {key} already in view at {}; {context}", event.revision),
                    EventType::Modified | EventType::Deleted => {
                        assert!(had, "{:?} of {key} not in view at {}; {context}", seen.event_type, event.revision)
                    }
                    EventType::Bookmark => panic!("a store event seen as a bookmark; {context}"),
                }
                if seen.event_type == EventType::Deleted {
                    view.remove(&key);
                } else {
                    view.insert(key, Arc::unwrap_or_clone(seen.object));
                }
            }
            let resumed: Vec<Object> = view.into_values().collect();
            assert_eq!(resumed, model.list(*meaning, rev), "list at {r} + watch {filter:?}; {context}");
        }
    }

    fn run(&mut self, steps: usize) {
        for step in 0..steps {
            self.step = step;
            match self.rng.range_inclusive(0, 99) {
                0..=29 => {
                    let n = self.rng.range_inclusive(1, 5);
                    self.writes(n);
                }
                // Now and then far more than the window holds.
                30..=31 => {
                    let n = self.rng.range_inclusive(WINDOW_CAPACITY as u64 / 2, WINDOW_CAPACITY as u64 + 200);
                    self.writes(n);
                }
                32..=69 => {
                    let n = self.rng.range_inclusive(1, 8);
                    self.feed(n);
                }
                70..=79 => self.feed(u64::MAX),
                80..=91 => self.duplicate_and_gap(),
                _ => self.relist(),
            }
            self.check();
        }
    }
}

#[test]
fn watch_cache_matches_the_store_model_over_random_histories() {
    let mut overflowed = 0;
    for seed in 0..20 {
        let mut history = History::new(seed);
        history.run(250);
        overflowed += usize::from(history.overflowed);
    }
    // The histories must push events out of the window, or the "410 Gone"
    // half of the contract goes unchecked.
    assert!(overflowed >= 3, "only {overflowed} of 20 histories overflowed the window");
}
