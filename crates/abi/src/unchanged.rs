//! Leaving out of a watch event what the plugin already holds.
//!
//! Most watch events change one part of an object and keep the rest: a
//! kubelet's status update keeps the pod's spec, a binding keeps its
//! status. A plugin keeps the last version of every object its watches
//! delivered (an informer's cache), so sending it the unchanged parts
//! again only makes it decode them again, and decoding an object's JSON
//! into values of its own was most of what a call into a plugin cost.
//!
//! So a plugin may ask (`Manifest::omit_unchanged`) for watch events
//! whose object leaves out its `spec` or `status` when that part equals
//! the one in the last version of the same object (same namespace and
//! name) the same watch delivered; the event names what it left out
//! ([`WatchEvent::unchanged`]). Both sides keep a [`Delivered`] table and
//! update it with every event, in order: the host to decide what to
//! leave out, the plugin to put it back. The Rust SDK does the plugin's
//! part before its controller sees the event, so a controller always sees
//! whole objects.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::{EventType, InputEvent, Object, SharedValue, WatchEvent};

/// A part of an object that a watch event may leave out when it is
/// unchanged (see [`WatchEvent::unchanged`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub enum ObjectPart {
    /// The object's `spec`.
    Spec,
    /// The object's `status`.
    Status,
}

/// The `spec` and `status` of the last version of each object that each
/// watch delivered: what the host compares a new version against, and
/// what the plugin fills left-out parts back in from.
///
/// Both sides [`record`](Delivered::record) every list and watch event
/// they send or receive, in order, so their tables agree; parts are
/// shared, not copied.
#[derive(Clone, Debug, Default)]
pub struct Delivered {
    /// By watch index, then namespace, then name.
    watches: Vec<BTreeMap<String, BTreeMap<String, Parts>>>,
}

/// An object's spec and status, as last delivered.
#[derive(Clone, Debug)]
struct Parts {
    spec: SharedValue,
    status: SharedValue,
}

impl Parts {
    fn of(object: &Object) -> Parts {
        Parts { spec: object.spec.clone(), status: object.status.clone() }
    }
}

/// Whether two parts are the same: one shared copy, or equal values. A
/// `null` part is never left out: the wire leaves it out anyway.
fn same(new: &SharedValue, old: &SharedValue) -> bool {
    !new.is_null() && (new.ptr_eq(old) || new == old)
}

impl Delivered {
    /// An empty table: nothing delivered yet (a new instance).
    pub fn new() -> Delivered {
        Delivered::default()
    }

    fn watch_mut(&mut self, watch: usize) -> &mut BTreeMap<String, BTreeMap<String, Parts>> {
        if self.watches.len() <= watch {
            self.watches.resize_with(watch + 1, BTreeMap::new);
        }
        &mut self.watches[watch]
    }

    fn parts(&self, watch: usize, object: &Object) -> Option<&Parts> {
        self.watches.get(watch)?.get(&object.metadata.namespace)?.get(&object.metadata.name)
    }

    /// Takes in what `event` delivers, whole (after
    /// [`restore`](Delivered::restore) on the plugin's side): a list
    /// replaces everything its watch delivered, ADDED and MODIFIED store
    /// the object's parts, DELETED forgets them; bookmarks, results and
    /// timers deliver no object.
    pub fn record(&mut self, event: &InputEvent) {
        match event {
            InputEvent::Listed { watch, objects, .. } => {
                let table = self.watch_mut(*watch);
                table.clear();
                for object in objects {
                    let names = table.entry(object.metadata.namespace.clone()).or_default();
                    names.insert(object.metadata.name.clone(), Parts::of(object));
                }
            }
            InputEvent::Watch { watch, event } => {
                let object = &event.object;
                let (namespace, name) = (&object.metadata.namespace, &object.metadata.name);
                let table = self.watch_mut(*watch);
                match event.event_type {
                    EventType::Added | EventType::Modified => {
                        // Looked up before inserting: an update builds no key.
                        let names = match table.get_mut(namespace) {
                            Some(names) => names,
                            None => table.entry(namespace.clone()).or_default(),
                        };
                        match names.get_mut(name) {
                            Some(parts) => *parts = Parts::of(object),
                            None => {
                                names.insert(name.clone(), Parts::of(object));
                            }
                        }
                    }
                    EventType::Deleted => {
                        if let Some(names) = table.get_mut(namespace) {
                            names.remove(name);
                            if names.is_empty() {
                                table.remove(namespace);
                            }
                        }
                    }
                    EventType::Bookmark => {}
                }
            }
            InputEvent::Result(_) | InputEvent::Timer { .. } => {}
        }
    }

    /// The parts of `event`'s object that equal those of the last version
    /// `watch` delivered of the same object, in the order `spec`, `status`:
    /// what the host may leave out. Nothing for a bookmark or an object
    /// the watch has not delivered.
    pub fn unchanged(&self, watch: usize, event: &WatchEvent) -> Vec<ObjectPart> {
        if event.event_type == EventType::Bookmark {
            return Vec::new();
        }
        let Some(old) = self.parts(watch, &event.object) else {
            return Vec::new();
        };
        let mut parts = Vec::new();
        if same(&event.object.spec, &old.spec) {
            parts.push(ObjectPart::Spec);
        }
        if same(&event.object.status, &old.status) {
            parts.push(ObjectPart::Status);
        }
        parts
    }

    /// Puts back the parts `event.unchanged` names, from the last version
    /// `watch` delivered of the same object, and empties the list: the
    /// event as if nothing had been left out. Fails, changing nothing, if
    /// the watch never delivered that object.
    pub fn restore(&self, watch: usize, event: &mut WatchEvent) -> Result<(), String> {
        if event.unchanged.is_empty() {
            return Ok(());
        }
        let Some(old) = self.parts(watch, &event.object) else {
            let meta = &event.object.metadata;
            return Err(format!(
                "a {} event for {}/{} on watch {watch} leaves out {:?}, but the watch never delivered that object",
                event.event_type, meta.namespace, meta.name, event.unchanged
            ));
        };
        let object = Arc::make_mut(&mut event.object);
        for part in std::mem::take(&mut event.unchanged) {
            match part {
                ObjectPart::Spec => object.spec = old.spec.clone(),
                ObjectPart::Status => object.status = old.status.clone(),
            }
        }
        Ok(())
    }
}

/// `object` encoded as [`Object`] encodes, without the parts in `omit`:
/// what the host writes for a watch event that leaves them out.
pub(crate) struct ObjectWithout<'a> {
    pub(crate) object: &'a Object,
    pub(crate) omit: &'a [ObjectPart],
}

impl Serialize for ObjectWithout<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        // The order and the omissions of `Object`'s derived encoding
        // (a test compares the two).
        let Object { api_version, kind, metadata, spec, status, other } = self.object;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("apiVersion", api_version)?;
        map.serialize_entry("kind", kind)?;
        map.serialize_entry("metadata", metadata)?;
        if !spec.is_null() && !self.omit.contains(&ObjectPart::Spec) {
            map.serialize_entry("spec", spec)?;
        }
        if !status.is_null() && !self.omit.contains(&ObjectPart::Status) {
            map.serialize_entry("status", status)?;
        }
        for (name, value) in other {
            map.serialize_entry(name, value)?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ObjectMeta;

    fn pod(name: &str, spec: serde_json::Value, status: serde_json::Value) -> Arc<Object> {
        Arc::new(Object {
            api_version: "v1".into(),
            kind: "Pod".into(),
            metadata: ObjectMeta { name: name.into(), namespace: "default".into(), ..ObjectMeta::default() },
            spec: spec.into(),
            status: status.into(),
            other: BTreeMap::from([("extra".to_owned(), serde_json::json!(1))]),
        })
    }

    fn watch(event_type: EventType, object: &Arc<Object>) -> InputEvent {
        InputEvent::Watch { watch: 0, event: WatchEvent::new(event_type, Arc::clone(object)) }
    }

    #[test]
    fn nothing_left_out_encodes_as_the_object() {
        let object = pod("a", serde_json::json!({"n": 1}), serde_json::json!({"p": "R"}));
        let whole = ObjectWithout { object: &object, omit: &[] };
        assert_eq!(serde_json::to_string(&whole).unwrap(), serde_json::to_string(&*object).unwrap());
        let without = ObjectWithout { object: &object, omit: &[ObjectPart::Spec] };
        assert_eq!(
            serde_json::to_string(&without).unwrap(),
            r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a","namespace":"default"},"status":{"p":"R"},"extra":1}"#
        );
    }

    #[test]
    fn the_host_leaves_out_what_the_watch_delivered_and_the_plugin_puts_it_back() {
        let (mut host, mut plugin) = (Delivered::new(), Delivered::new());
        let first = pod("a", serde_json::json!({"n": 1}), serde_json::json!({"p": "Pending"}));
        // Nothing delivered yet: nothing left out.
        let added = watch(EventType::Added, &first);
        let InputEvent::Watch { event, .. } = &added else { unreachable!() };
        assert!(host.unchanged(0, event).is_empty());
        host.record(&added);
        plugin.record(&added);
        // A status change keeps the spec (an equal copy counts too).
        let second = pod("a", serde_json::json!({"n": 1}), serde_json::json!({"p": "Running"}));
        let mut modified = WatchEvent::new(EventType::Modified, Arc::clone(&second));
        assert_eq!(host.unchanged(0, &modified), vec![ObjectPart::Spec]);
        // On another watch, or for another object, nothing is known.
        assert!(host.unchanged(1, &modified).is_empty());
        let other = WatchEvent::new(EventType::Modified, pod("b", serde_json::json!({"n": 1}), serde_json::json!({})));
        assert!(host.unchanged(0, &other).is_empty());
        // The plugin gets the object without its spec and puts it back.
        modified.unchanged = host.unchanged(0, &modified);
        let mut received = modified.clone();
        Arc::make_mut(&mut received.object).spec = SharedValue::default();
        plugin.restore(0, &mut received).unwrap();
        assert_eq!(received, WatchEvent::new(EventType::Modified, second.clone()));
        // A deletion forgets the object: a later event for it has nothing
        // left out, and a plugin told otherwise refuses it.
        for table in [&mut host, &mut plugin] {
            table.record(&watch(EventType::Deleted, &second));
        }
        let mut again = WatchEvent::new(EventType::Added, Arc::clone(&second));
        assert!(host.unchanged(0, &again).is_empty());
        again.unchanged = vec![ObjectPart::Status];
        let error = plugin.restore(0, &mut again).unwrap_err();
        assert!(error.contains("never delivered"), "{error}");
        // A list replaces what its watch delivered.
        plugin.record(&InputEvent::Listed { watch: 0, resource_version: "9".into(), objects: vec![first.clone()] });
        let mut listed_then = WatchEvent::new(EventType::Modified, Arc::clone(&first));
        listed_then.unchanged = vec![ObjectPart::Spec, ObjectPart::Status];
        Arc::make_mut(&mut listed_then.object).spec = SharedValue::default();
        Arc::make_mut(&mut listed_then.object).status = SharedValue::default();
        plugin.restore(0, &mut listed_then).unwrap();
        assert_eq!(*listed_then.object, *first);
    }

    #[test]
    fn a_bookmark_or_a_null_part_is_never_left_out() {
        let mut host = Delivered::new();
        let bare = pod("a", serde_json::Value::Null, serde_json::json!({"p": 1}));
        host.record(&watch(EventType::Added, &bare));
        assert_eq!(host.unchanged(0, &WatchEvent::new(EventType::Modified, bare.clone())), vec![ObjectPart::Status]);
        assert!(host.unchanged(0, &WatchEvent::new(EventType::Bookmark, bare)).is_empty());
    }
}
