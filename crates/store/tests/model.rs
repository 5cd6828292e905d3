//! The store against a reference model that keeps a full snapshot of the
//! state after every revision: random operation sequences over a small key
//! space (so creates collide, CAS checks go both ways and reads hit deleted
//! keys) must give identical results, errors included.

use std::collections::BTreeMap;
use std::sync::Arc;

use proptest::prelude::*;
use recon_abi::{Object, ObjectKey};
use recon_store::{EventKind, KeyValue, Revision, Store, StoreError, StoreEvent, key_for, prefix_for};

/// Kinds and namespaces chosen so that naive prefix matching would mix them
/// up (`Pod` / `PodTemplate`, `a` / `ab`).
const KEYS: &[(&str, &str, &str)] = &[
    ("Pod", "a", "x"),
    ("Pod", "a", "y"),
    ("Pod", "ab", "x"),
    ("PodTemplate", "a", "x"),
    ("Node", "", "x"),
    ("Node", "", "y"),
];

fn prefixes() -> Vec<String> {
    vec![
        String::new(),
        "/registry/".into(),
        "/registry/Pod".into(),
        prefix_for("Pod", ""),
        prefix_for("Pod", "a"),
        prefix_for("Pod", "ab"),
        prefix_for("PodTemplate", ""),
        prefix_for("Node", ""),
        key_for(&object_key(0)),
    ]
}

fn object_key(index: usize) -> ObjectKey {
    let (kind, namespace, name) = KEYS[index];
    ObjectKey::new(kind, namespace, name)
}

fn object(index: usize, n: i64) -> Object {
    let key = object_key(index);
    let mut object = Object { api_version: "v1".into(), kind: key.kind, ..Object::default() };
    object.metadata.namespace = key.namespace;
    object.metadata.name = key.name;
    // Whatever the caller puts here, the store must overwrite it.
    object.metadata.resource_version = "12345".into();
    object.spec = serde_json::json!({ "n": n }).into();
    object
}

/// A revision to read at, relative to the store's state so most reads are
/// valid but the edges (compacted, future) are hit too.
#[derive(Clone, Copy, Debug)]
enum At {
    Back(u64),
    Ahead(u64),
    Absolute(u64),
}

/// The expected mod revision of a write.
#[derive(Clone, Copy, Debug)]
enum Cas {
    Unconditional,
    Current,
    Stale(u64),
    Arbitrary(u64),
}

#[derive(Clone, Debug)]
enum Op {
    Create { key: usize, n: i64 },
    Update { key: usize, n: i64, cas: Cas },
    Delete { key: usize, cas: Cas },
    Compact(At),
    Get { key: usize, at: Option<At> },
    Range { prefix: usize, at: Option<At> },
    EventsSince(At),
    Event(At),
}

fn at() -> impl Strategy<Value = At> {
    prop_oneof![
        4 => (0u64..12).prop_map(At::Back),
        1 => (1u64..3).prop_map(At::Ahead),
        1 => (0u64..70).prop_map(At::Absolute),
    ]
}

fn cas() -> impl Strategy<Value = Cas> {
    prop_oneof![
        Just(Cas::Unconditional),
        Just(Cas::Current),
        (1u64..4).prop_map(Cas::Stale),
        (0u64..70).prop_map(Cas::Arbitrary),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let key = 0..KEYS.len();
    let prefix = 0..prefixes().len();
    prop_oneof![
        4 => (key.clone(), 0i64..100).prop_map(|(key, n)| Op::Create { key, n }),
        4 => (key.clone(), 0i64..100, cas()).prop_map(|(key, n, cas)| Op::Update { key, n, cas }),
        2 => (key.clone(), cas()).prop_map(|(key, cas)| Op::Delete { key, cas }),
        1 => at().prop_map(Op::Compact),
        2 => (key, proptest::option::of(at())).prop_map(|(key, at)| Op::Get { key, at }),
        2 => (prefix, proptest::option::of(at())).prop_map(|(prefix, at)| Op::Range { prefix, at }),
        2 => at().prop_map(Op::EventsSince),
        1 => at().prop_map(Op::Event),
    ]
}

/// The obviously-correct store: one full snapshot per revision, one event per
/// revision, nothing ever freed (compaction only moves the point).
struct Model {
    /// `snapshots[r]` is the state after revision `r` was applied.
    snapshots: Vec<BTreeMap<String, KeyValue>>,
    /// `events[r - 1]` is the event at revision `r`.
    events: Vec<StoreEvent>,
    compacted: Revision,
}

impl Model {
    fn new() -> Model {
        Model { snapshots: vec![BTreeMap::new()], events: Vec::new(), compacted: 0 }
    }

    fn revision(&self) -> Revision {
        self.events.len() as Revision
    }

    fn current(&self) -> &BTreeMap<String, KeyValue> {
        self.snapshots.last().unwrap()
    }

    fn resolve(&self, at: At) -> Revision {
        match at {
            At::Back(back) => self.revision().saturating_sub(back),
            At::Ahead(ahead) => self.revision() + ahead,
            At::Absolute(r) => r,
        }
    }

    fn expected(&self, key: &str, cas: Cas) -> Option<Revision> {
        let mod_revision = self.current().get(key).map(|kv| kv.mod_revision);
        match cas {
            Cas::Unconditional => None,
            Cas::Current => Some(mod_revision.unwrap_or(self.revision())),
            Cas::Stale(by) => Some(mod_revision.unwrap_or(self.revision()).saturating_sub(by)),
            Cas::Arbitrary(r) => Some(r),
        }
    }

    fn readable(&self, r: Revision) -> Result<Revision, StoreError> {
        if r < self.compacted {
            Err(StoreError::Compacted { requested: r, compacted: self.compacted })
        } else if r > self.revision() {
            Err(StoreError::FutureRevision { requested: r, current: self.revision() })
        } else {
            Ok(r)
        }
    }

    /// Applies a write: `new` is the value to put (unstamped), or `None` to delete.
    fn commit(&mut self, key: String, new: Option<Object>, time_ms: u64) -> StoreEvent {
        let revision = self.revision() + 1;
        let mut state = self.current().clone();
        let prev = state.get(&key).cloned();
        let (kind, value) = match new {
            Some(mut value) => {
                value.metadata.resource_version = revision.to_string();
                let (create_revision, version) = match &prev {
                    Some(prev) => (prev.create_revision, prev.version + 1),
                    None => (revision, 1),
                };
                let value = Arc::new(value);
                let kv = KeyValue {
                    key: key.clone(),
                    value: Arc::clone(&value),
                    create_revision,
                    mod_revision: revision,
                    version,
                };
                state.insert(key.clone(), kv);
                (EventKind::Put, value)
            }
            None => {
                let mut value = Arc::unwrap_or_clone(state.remove(&key).unwrap().value);
                value.metadata.resource_version = revision.to_string();
                (EventKind::Delete, Arc::new(value))
            }
        };
        let event = StoreEvent { revision, key, kind, value, prev: prev.map(|kv| kv.value), time_ms };
        self.snapshots.push(state);
        self.events.push(event.clone());
        event
    }

    fn create(&mut self, value: Object, time_ms: u64) -> Result<StoreEvent, StoreError> {
        let object = value.key();
        let key = key_for(&object);
        if self.current().contains_key(&key) {
            return Err(StoreError::AlreadyExists { key: object });
        }
        Ok(self.commit(key, Some(value), time_ms))
    }

    fn check_write(&self, object: &ObjectKey, expected: Option<Revision>) -> Result<(), StoreError> {
        let Some(kv) = self.current().get(&key_for(object)) else {
            return Err(StoreError::NotFound { key: object.clone() });
        };
        match expected {
            Some(expected) if expected != kv.mod_revision => {
                Err(StoreError::Conflict { key: object.clone(), expected, actual: kv.mod_revision })
            }
            _ => Ok(()),
        }
    }

    fn update(&mut self, value: Object, expected: Option<Revision>, time_ms: u64) -> Result<StoreEvent, StoreError> {
        self.check_write(&value.key(), expected)?;
        Ok(self.commit(key_for(&value.key()), Some(value), time_ms))
    }

    fn delete(&mut self, key: &ObjectKey, expected: Option<Revision>, time_ms: u64) -> Result<StoreEvent, StoreError> {
        self.check_write(key, expected)?;
        Ok(self.commit(key_for(key), None, time_ms))
    }

    fn compact(&mut self, revision: Revision) {
        self.compacted = self.compacted.max(revision).min(self.revision());
    }

    fn get(&self, key: &ObjectKey, at: Option<Revision>) -> Result<Option<KeyValue>, StoreError> {
        let r = self.readable(at.unwrap_or(self.revision()))?;
        Ok(self.snapshots[r as usize].get(&key_for(key)).cloned())
    }

    fn range(&self, prefix: &str, at: Option<Revision>) -> Result<Vec<KeyValue>, StoreError> {
        let r = self.readable(at.unwrap_or(self.revision()))?;
        let state = &self.snapshots[r as usize];
        Ok(state.iter().filter(|(key, _)| key.starts_with(prefix)).map(|(_, kv)| kv.clone()).collect())
    }

    fn events_since(&self, after: Revision) -> Result<&[StoreEvent], StoreError> {
        let after = self.readable(after)?;
        Ok(&self.events[after as usize..])
    }

    fn event(&self, revision: Revision) -> Option<&StoreEvent> {
        if revision <= self.compacted || revision > self.revision() {
            return None;
        }
        self.events.get(revision as usize - 1)
    }
}

fn run(ops: &[Op]) -> Result<(), TestCaseError> {
    let prefixes = prefixes();
    let mut store = Store::new();
    let mut model = Model::new();
    for (step, op) in ops.iter().enumerate() {
        let time_ms = step as u64 * 10;
        match *op {
            Op::Create { key, n } => {
                prop_assert_eq!(
                    store.create(object(key, n), time_ms),
                    model.create(object(key, n), time_ms),
                    "step {}: {:?}",
                    step,
                    op
                );
            }
            Op::Update { key, n, cas } => {
                let expected = model.expected(&key_for(&object_key(key)), cas);
                prop_assert_eq!(
                    store.update(object(key, n), expected, time_ms),
                    model.update(object(key, n), expected, time_ms),
                    "step {}: {:?} (expected {:?})",
                    step,
                    op,
                    expected
                );
            }
            Op::Delete { key, cas } => {
                let expected = model.expected(&key_for(&object_key(key)), cas);
                prop_assert_eq!(
                    store.delete(&object_key(key), expected, time_ms),
                    model.delete(&object_key(key), expected, time_ms),
                    "step {}: {:?} (expected {:?})",
                    step,
                    op,
                    expected
                );
            }
            Op::Compact(at) => {
                let r = model.resolve(at);
                store.compact(r);
                model.compact(r);
            }
            Op::Get { key, at } => {
                let r = at.map(|at| model.resolve(at));
                prop_assert_eq!(
                    store.get(&object_key(key), r),
                    model.get(&object_key(key), r),
                    "step {}: {:?} at {:?}",
                    step,
                    op,
                    r
                );
            }
            Op::Range { prefix, at } => {
                let r = at.map(|at| model.resolve(at));
                prop_assert_eq!(
                    store.range(&prefixes[prefix], r),
                    model.range(&prefixes[prefix], r),
                    "step {}: {:?} at {:?}",
                    step,
                    op,
                    r
                );
            }
            Op::EventsSince(at) => {
                let r = model.resolve(at);
                prop_assert_eq!(store.events_since(r), model.events_since(r), "step {}: {:?} at {}", step, op, r);
            }
            Op::Event(at) => {
                let r = model.resolve(at);
                prop_assert_eq!(store.event(r), model.event(r), "step {}: {:?} at {}", step, op, r);
            }
        }
        // Whatever the operation, the observable state must still agree.
        prop_assert_eq!(store.revision(), model.revision(), "step {}", step);
        prop_assert_eq!(store.compacted(), model.compacted, "step {}", step);
        prop_assert_eq!(store.len(), model.current().len(), "step {}", step);
        prop_assert_eq!(store.is_empty(), model.current().is_empty(), "step {}", step);
        prop_assert_eq!(store.events_since(model.compacted), model.events_since(model.compacted));
        prop_assert_eq!(store.range("", Some(model.compacted)), model.range("", Some(model.compacted)));
    }
    Ok(())
}

proptest! {
    #[test]
    fn store_matches_the_snapshot_model(ops in proptest::collection::vec(op(), 0..60)) {
        run(&ops)?;
    }
}
