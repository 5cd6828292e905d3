//! An API server's open watches, indexed so that a store event is offered
//! only to the watches it can concern.
//!
//! Kubernetes' watch cache (the cacher) keeps its watchers indexed by the
//! value of a field their selector requires — a kubelet's watch of the pods
//! with `spec.nodeName` equal to its node — and by nothing else for the
//! rest, so that a write is dispatched to the watchers of that value, not
//! to every kubelet in the cluster. This is the same: watches are kept by
//! kind, and those whose field selector requires `path=value` by that too.
//! [`Watchers::concerned`] returns, in the order watches were opened, a
//! superset of the watches that see an event; each still applies its whole
//! filter.

use std::collections::{BTreeMap, BTreeSet};

use recon_abi::{NameMap, Object};

use crate::cache::Filter;
use crate::ids::ComponentId;
use crate::message::{Client, client_component};

/// An open watch.
#[derive(Clone, Debug)]
pub(crate) struct Watcher {
    /// Who it sends to.
    pub client: Client,
    /// What it selects.
    pub filter: Filter,
    /// Events up to this revision have been sent.
    pub sent: u64,
}

/// The open watches of one API server, by id (the order they were opened).
#[derive(Clone, Debug, Default)]
pub(crate) struct Watchers {
    all: BTreeMap<u64, Watcher>,
    /// Watches without a field equality, by kind.
    by_kind: BTreeMap<String, BTreeSet<u64>>,
    /// Watches whose field selector requires `path=value`: by kind, path
    /// and value (a node's name: thousands of them, so found by hash).
    by_field: BTreeMap<String, BTreeMap<String, NameMap<BTreeSet<u64>>>>,
}

impl Watchers {
    /// Registers a watch.
    pub fn insert(&mut self, id: u64, watcher: Watcher) {
        let kind = watcher.filter.kind.clone();
        match watcher.filter.indexed_field() {
            Some((path, value)) => {
                let by_value = self.by_field.entry(kind).or_default().entry(path.to_owned()).or_default();
                by_value.get_or_insert_with(value, BTreeSet::new).insert(id);
            }
            None => {
                self.by_kind.entry(kind).or_default().insert(id);
            }
        }
        self.all.insert(id, watcher);
    }

    /// Who watches what, and how far each watch has been sent, a line
    /// per watch in the order they were opened (for a state's fingerprint).
    pub fn describe(&self) -> String {
        self.all.values().map(|w| format!("{:?} {:?} {}\n", w.client, w.filter, w.sent)).collect()
    }

    /// The watch with this id, if it is still open.
    pub fn get(&self, id: u64) -> Option<&Watcher> {
        self.all.get(&id)
    }

    /// The watch with this id, to update what it has been sent.
    pub fn get_mut(&mut self, id: u64) -> Option<&mut Watcher> {
        self.all.get_mut(&id)
    }

    /// The ids of the watches of `kind` that an event turning `prev` into
    /// `object` can concern, in id order: those without a field equality,
    /// and those whose required value either state has.
    pub fn concerned(&self, kind: &str, prev: Option<&Object>, object: &Object) -> Vec<u64> {
        let mut ids: Vec<u64> = self.by_kind.get(kind).into_iter().flatten().copied().collect();
        for (path, by_value) in self.by_field.get(kind).into_iter().flatten() {
            // A missing field reads as the empty string, as the selector reads it.
            let now = object.field_str(path).unwrap_or_default();
            ids.extend(by_value.get(&now).into_iter().flatten());
            // Most writes leave the field's part of the object shared with
            // the version before (a status write keeps the spec): then it
            // reads the same, and the old version is not read at all.
            if let Some(prev) = prev
                && !shares_part(prev, object, path)
            {
                let before = prev.field_str(path).unwrap_or_default();
                if before != now {
                    ids.extend(by_value.get(&before).into_iter().flatten());
                }
            }
        }
        ids.sort_unstable();
        ids.dedup();
        ids
    }

    /// Closes every watch `component` has open.
    pub fn close_for(&mut self, component: ComponentId) {
        let closed: Vec<u64> = self
            .all
            .iter()
            .filter(|(_, w)| client_component(&w.client) == Some(component))
            .map(|(id, _)| *id)
            .collect();
        for id in closed {
            self.remove(id);
        }
    }

    /// Closes every watch, returning them in id order.
    pub fn take_all(&mut self) -> Vec<Watcher> {
        self.by_kind.clear();
        self.by_field.clear();
        std::mem::take(&mut self.all).into_values().collect()
    }

    fn remove(&mut self, id: u64) {
        let Some(watcher) = self.all.remove(&id) else { return };
        let kind = &watcher.filter.kind;
        match watcher.filter.indexed_field() {
            Some((path, value)) => {
                if let Some(by_value) = self.by_field.get_mut(kind).and_then(|p| p.get_mut(path))
                    && let Some(ids) = by_value.get_mut(value)
                {
                    ids.remove(&id);
                    if ids.is_empty() {
                        by_value.remove(value);
                    }
                }
            }
            None => {
                if let Some(ids) = self.by_kind.get_mut(kind) {
                    ids.remove(&id);
                }
            }
        }
    }
}

/// Whether `path` lies in a part (`spec` or `status`) that `a` and `b`
/// share: one value, so the field reads the same in both.
fn shares_part(a: &Object, b: &Object, path: &str) -> bool {
    match path.split_once('.') {
        Some(("spec", _)) => a.spec.ptr_eq(&b.spec),
        Some(("status", _)) => a.status.ptr_eq(&b.status),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::Selection;
    use serde_json::json;

    fn watch(component: usize, kind: &str, field_selector: &str) -> Watcher {
        let selection = Selection { kind: kind.into(), field_selector: field_selector.into(), ..Selection::default() };
        let client = Client::Reflector { component: ComponentId(component), epoch: 0, watch: 0 };
        Watcher { client, filter: Filter::new(&selection).unwrap(), sent: 0 }
    }

    fn pod(node: Option<&str>) -> Object {
        let spec = node.map_or(json!({}), |node| json!({ "nodeName": node }));
        Object { api_version: "v1".into(), kind: "Pod".into(), spec: spec.into(), ..Object::default() }
    }

    /// Two kubelets (by node), the scheduler's watch of unbound pods (the
    /// empty nodeName) and a ReplicaSet controller's watch of every pod.
    fn cluster() -> Watchers {
        let mut watchers = Watchers::default();
        watchers.insert(1, watch(0, "Pod", "spec.nodeName=node-1"));
        watchers.insert(2, watch(1, "Pod", "spec.nodeName=node-2"));
        watchers.insert(3, watch(2, "Pod", "spec.nodeName="));
        watchers.insert(4, watch(3, "Pod", ""));
        watchers.insert(5, watch(3, "Node", ""));
        watchers
    }

    #[test]
    fn an_event_concerns_the_watches_of_either_state_and_the_unindexed_ones_in_id_order() {
        let w = cluster();
        // Bound to node-2: the scheduler's view loses it, node-2's gains it.
        assert_eq!(w.concerned("Pod", Some(&pod(None)), &pod(Some("node-2"))), [2, 3, 4]);
        assert_eq!(w.concerned("Pod", Some(&pod(Some("node-1"))), &pod(Some("node-1"))), [1, 4]);
        assert_eq!(w.concerned("Pod", None, &pod(None)), [3, 4], "a missing nodeName reads as empty");
        assert_eq!(w.concerned("Node", None, &Object { kind: "Node".into(), ..Object::default() }), [5]);
    }

    /// What the index leaves out is what the filters would refuse: the
    /// concerned set is exactly the watches whose filter sees the event.
    #[test]
    fn every_watch_left_out_would_not_have_seen_the_event() {
        let w = cluster();
        let states = [None, Some("node-1"), Some("node-2"), Some("node-3")];
        for before in states.iter().map(|n| Some(pod(*n))).chain([None]) {
            for after in states.map(pod) {
                let concerned = w.concerned("Pod", before.as_ref(), &after);
                for (id, watcher) in &w.all {
                    let sees =
                        before.as_ref().is_some_and(|p| watcher.filter.matches(p)) || watcher.filter.matches(&after);
                    assert_eq!(concerned.contains(id), sees, "watch {id}, {before:?} -> {after:?}");
                }
            }
        }
    }

    /// A write that keeps the spec (a status write) shares it with the
    /// version before: the index reads the field once and finds the same
    /// watches as for the new version alone, each of which sees the event.
    #[test]
    fn a_version_sharing_its_spec_with_the_last_concerns_the_same_watches() {
        let w = cluster();
        for node in [None, Some("node-1"), Some("node-3")] {
            let before = pod(node);
            let mut after = before.clone();
            after.status = json!({ "phase": "Running" }).into();
            assert!(after.spec.ptr_eq(&before.spec), "a clone shares its spec");
            let concerned = w.concerned("Pod", Some(&before), &after);
            assert_eq!(concerned, w.concerned("Pod", None, &after), "{node:?}");
            for (id, watcher) in &w.all {
                assert_eq!(concerned.contains(id), watcher.filter.matches(&after), "watch {id}, {node:?}");
            }
        }
    }

    #[test]
    fn closing_a_components_watches_takes_them_out_of_the_index() {
        let mut w = cluster();
        w.close_for(ComponentId(0));
        w.close_for(ComponentId(3));
        assert_eq!(w.concerned("Pod", None, &pod(Some("node-1"))), Vec::<u64>::new());
        assert_eq!(w.concerned("Pod", None, &pod(None)), [3]);
        assert_eq!(w.take_all().len(), 2);
        assert!(w.concerned("Pod", None, &pod(Some("node-2"))).is_empty());
    }
}
