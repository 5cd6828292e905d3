//! Lost work: a write that puts a field of an object back to what it was
//! in a version older than one its author had already observed.
//!
//! The definition, precisely. A write W by component C commits a new
//! version of object O (same uid as before: an update or a patch, of the
//! object or its status). Let S be the reconcile that sent W (its first
//! cause), and look at what C had observed of this incarnation of O
//! through its informers (lists and watch events, across its restarts)
//! before S:
//!
//! - its *view*: the version it observed last, the one its cache held;
//! - its *newest*: the highest revision it ever observed.
//!
//! W is lost work when the view is older than the newest (C's cache had
//! gone back in time: a relist from a lagging cache, a new leader on an
//! old one) and W sets some field to the value it had in the view, where
//! the newest had another value and the store, just before W, had
//! another value too. The fields compared are `spec`, `status`, the other
//! top-level fields, and `metadata` labels, annotations, finalizers and
//! owner references, leaf by leaf (a list is one leaf).
//!
//! What it cannot flag, by construction:
//!
//! - a controller that puts a field back on purpose after it saw a user
//!   change it: it acted on the newest version it had seen (view = newest);
//! - a write from a stale view that leaves the fields the view had wrong
//!   alone (a patch of other fields): nothing it observed is undone;
//! - a write that sets a field to what the store already has;
//! - a write with a resourceVersion precondition computed from the stale
//!   view: it fails with 409 Conflict, and only commits count;
//! - writes by kubectl, creates and deletes.
//!
//! A version compacted away from the store cannot be compared, and a write
//! that needs it is not judged.

use std::collections::BTreeMap;

use recon_abi::{Object, ObjectKey};
use recon_scenario::Check;
use recon_store::EventKind;
use recon_trace::{EntryId, Event, ReadPurpose, text::short_uid};
use serde_json::Value;

use super::{Commit, Finding, Observation, Observer, Truth};

/// One observation of one incarnation of an object by one component,
/// with the newest it had observed of that incarnation up to then, so
/// that a write is judged by one binary search however long the history.
#[derive(Clone, Copy, Debug)]
struct Seen {
    entry: EntryId,
    revision: u64,
    /// The highest (revision, entry) observed up to and including this one.
    newest: (u64, EntryId),
}

/// What each component observed of each object, per incarnation (uid),
/// in trace order.
#[derive(Default)]
pub(super) struct LostWork {
    seen: BTreeMap<(String, ObjectKey), BTreeMap<String, Vec<Seen>>>,
}

impl Observer for LostWork {
    fn observed(&mut self, truth: &Truth<'_>, o: &Observation<'_>) -> Vec<Finding> {
        let Some(entry) = truth.trace.get(o.entry) else { return Vec::new() };
        let mut note = |key: &ObjectKey, uid: &str, revision: u64| {
            let incarnations = self.seen.entry((o.name.to_owned(), key.clone())).or_default();
            let history = match incarnations.get_mut(uid) {
                Some(history) => history,
                None => incarnations.entry(uid.to_owned()).or_default(),
            };
            let newest = history.last().map_or((revision, o.entry), |last| last.newest.max((revision, o.entry)));
            debug_assert!(history.last().is_none_or(|last| last.entry <= o.entry), "observations come in trace order");
            history.push(Seen { entry: o.entry, revision, newest });
        };
        match &entry.event {
            Event::ListServed(list) if list.purpose == ReadPurpose::InformerList => {
                for v in &list.objects {
                    note(&v.key, &v.uid, v.revision);
                }
            }
            Event::WatchDelivered {
                event_type: recon_abi::EventType::Added | recon_abi::EventType::Modified,
                key,
                uid,
                revision,
                ..
            } => note(key, uid, *revision),
            _ => {}
        }
        Vec::new()
    }

    fn committed(&mut self, truth: &Truth<'_>, commit: &Commit<'_>) -> Vec<Finding> {
        let Some(writer) = commit.writer else { return Vec::new() };
        let event = commit.event;
        let Some(prev) = event.prev.as_ref() else { return Vec::new() };
        let written = &event.value;
        if event.kind == EventKind::Delete || prev.metadata.uid != written.metadata.uid {
            return Vec::new();
        }
        let Some(sent) = sending_reconcile(truth, commit.entry) else { return Vec::new() };
        let Some(history) = self
            .seen
            .get(&(writer.to_owned(), written.key()))
            .and_then(|incarnations| incarnations.get(&written.metadata.uid))
        else {
            return Vec::new();
        };
        // What it had observed before the reconcile that sent the write:
        // the last observation (its view) and the newest up to it.
        let before = history.partition_point(|s| s.entry < sent);
        let Some(view) = before.checked_sub(1).map(|i| history[i]) else { return Vec::new() };
        let newest = Seen { entry: view.newest.1, revision: view.newest.0, newest: view.newest };
        if view.revision >= newest.revision {
            return Vec::new();
        }
        let at = |revision: u64| truth.store.get(&written.key(), Some(revision)).ok().flatten().map(|kv| kv.value);
        let (Some(old), Some(new)) = (at(view.revision), at(newest.revision)) else { return Vec::new() };
        let reverted = reverted_fields(prev, written, &old, &new);
        if reverted.is_empty() {
            return Vec::new();
        }
        let message = format!(
            "{writer} put {} of {} (uid {}) back to revision {} at revision {}, undoing revision {}, which it had \
             already observed: its view had gone back to revision {}",
            reverted.join(", "),
            written.key(),
            short_uid(&written.metadata.uid),
            view.revision,
            event.revision,
            newest.revision,
            view.revision,
        );
        // The write, then what it had observed newest, then the stale view.
        let causes = vec![commit.entry, newest.entry, view.entry];
        vec![Finding { check: Check::LostWork, message, causes, component: None }]
    }
}

/// The reconcile that sent a write: its first cause.
fn sending_reconcile(truth: &Truth<'_>, write: EntryId) -> Option<EntryId> {
    let cause = *truth.trace.get(write)?.causes.first()?;
    matches!(truth.trace.get(cause)?.event, Event::Reconcile { .. }).then_some(cause)
}

/// The fields (dotted paths) that `written` changed from `prev` to the
/// value they had in `old`, where `new` (observed later than `old`) had
/// another value.
pub(super) fn reverted_fields(prev: &Object, written: &Object, old: &Object, new: &Object) -> Vec<String> {
    let (prev, written, old, new) = (leaves(prev), leaves(written), leaves(old), leaves(new));
    let mut paths: Vec<&String> = written.keys().chain(old.keys()).chain(new.keys()).chain(prev.keys()).collect();
    paths.sort();
    paths.dedup();
    paths
        .into_iter()
        .filter(|p| {
            let value = written.get(*p);
            value != prev.get(*p) && value == old.get(*p) && value != new.get(*p)
        })
        .cloned()
        .collect()
}

/// The compared content of an object, leaf by leaf.
fn leaves(object: &Object) -> BTreeMap<String, Value> {
    let m = &object.metadata;
    let mut out = BTreeMap::new();
    fn json(value: impl serde::Serialize) -> Value {
        serde_json::to_value(value).unwrap_or(Value::Null)
    }
    flatten("metadata.labels", &json(&m.labels), &mut out);
    flatten("metadata.annotations", &json(&m.annotations), &mut out);
    flatten("metadata.finalizers", &json(&m.finalizers), &mut out);
    flatten("metadata.ownerReferences", &json(&m.owner_references), &mut out);
    flatten("spec", &object.spec, &mut out);
    flatten("status", &object.status, &mut out);
    for (name, value) in &object.other {
        flatten(name, value, &mut out);
    }
    out
}

fn flatten(path: &str, value: &Value, out: &mut BTreeMap<String, Value>) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (k, v) in map {
                flatten(&format!("{path}.{k}"), v, out);
            }
        }
        // Empty maps and lists, and null, say nothing: absent.
        Value::Object(_) | Value::Null => {}
        Value::Array(items) if items.is_empty() => {}
        leaf => {
            out.insert(path.to_owned(), leaf.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(spec: Value, labels: &[(&str, &str)]) -> Object {
        let mut o = Object { kind: "Deployment".into(), spec: spec.into(), ..Default::default() };
        o.metadata.labels = labels.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect();
        o
    }

    #[test]
    fn a_field_set_back_to_the_stale_views_value_is_reverted() {
        let old = object(json!({"replicas": 1, "image": "a"}), &[]);
        let new = object(json!({"replicas": 3, "image": "a"}), &[]);
        let written = object(json!({"replicas": 1, "image": "b"}), &[]);
        assert_eq!(reverted_fields(&new, &written, &old, &new), ["spec.replicas"]);
    }

    #[test]
    fn a_removed_label_the_newest_version_had_is_reverted_too() {
        let old = object(json!({}), &[]);
        let new = object(json!({}), &[("team", "db")]);
        assert_eq!(reverted_fields(&new, &old, &old, &new), ["metadata.labels.team"]);
    }

    #[test]
    fn nothing_is_reverted_when_the_store_already_has_the_value_or_the_views_agree() {
        let old = object(json!({"replicas": 1}), &[]);
        let new = object(json!({"replicas": 3}), &[]);
        // The store is back at 1 already: the write changes nothing there.
        assert!(reverted_fields(&old, &old, &old, &new).is_empty());
        // The field the write sets is one the two views agree on.
        let written = object(json!({"replicas": 3, "paused": true}), &[]);
        assert!(reverted_fields(&new, &written, &old, &new).is_empty());
    }
}
