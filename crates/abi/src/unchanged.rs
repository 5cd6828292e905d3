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

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::{EventType, InputEvent, NamespacedMap, Object, SharedValue, WatchEvent};

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
/// The host [`send`](Delivered::send)s and the plugin
/// [`receive`](Delivered::receive)s every event through its table, in
/// order, so the two agree; parts are shared, not copied.
#[derive(Clone, Debug, Default)]
pub struct Delivered {
    /// By watch index.
    watches: Vec<NamespacedMap<Parts>>,
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

    fn watch_mut(&mut self, watch: usize) -> &mut NamespacedMap<Parts> {
        if self.watches.len() <= watch {
            self.watches.resize_with(watch + 1, NamespacedMap::new);
        }
        &mut self.watches[watch]
    }

    /// The parts `watch` last delivered of `object`, to change in place.
    fn parts_mut(&mut self, watch: usize, object: &Object) -> Option<&mut Parts> {
        self.watches.get_mut(watch)?.get_mut(&object.metadata.namespace, &object.metadata.name)
    }

    /// Remembers `object`'s parts as the last `watch` delivered of it,
    /// for an object it has not delivered (yet, or since it was deleted).
    fn insert(&mut self, watch: usize, object: &Object) {
        self.watch_mut(watch).insert(&object.metadata.namespace, &object.metadata.name, Parts::of(object));
    }

    /// Forgets what `watch` delivered of `object` (it was deleted).
    fn remove(&mut self, watch: usize, object: &Object) {
        if let Some(table) = self.watches.get_mut(watch) {
            table.remove(&object.metadata.namespace, &object.metadata.name);
        }
    }

    /// A list replaces everything its watch delivered.
    fn list(&mut self, watch: usize, objects: &[Arc<Object>]) {
        self.watch_mut(watch).clear();
        for object in objects {
            self.insert(watch, object);
        }
    }

    /// Brings the table up to date with a watch event whose object is
    /// whole, but for an update of an object it had (`known`), which the
    /// caller made in place.
    fn take_in(&mut self, watch: usize, event: &WatchEvent, known: bool) {
        match event.event_type {
            EventType::Added | EventType::Modified if !known => self.insert(watch, &event.object),
            EventType::Deleted => self.remove(watch, &event.object),
            EventType::Added | EventType::Modified | EventType::Bookmark => {}
        }
    }

    /// Whether a watch event of this type stores its object's parts.
    fn stores(event_type: EventType) -> bool {
        matches!(event_type, EventType::Added | EventType::Modified)
    }

    /// The host's side: what it may leave out of `event` (for a watch
    /// event, the parts of its object equal to those of the last version
    /// its watch delivered of the same object, in the order `spec`,
    /// `status`; for anything else, nothing), after which the table holds
    /// what `event` delivers: a list replaces everything its watch
    /// delivered, ADDED and MODIFIED store the object's parts, DELETED
    /// forgets them; bookmarks, results and timers deliver no object.
    pub fn send(&mut self, event: &InputEvent) -> Vec<ObjectPart> {
        let (watch, event) = match event {
            InputEvent::Listed { watch, objects, .. } => {
                self.list(*watch, objects);
                return Vec::new();
            }
            InputEvent::Watch { watch, event } => (*watch, event),
            InputEvent::Result(_) | InputEvent::Timer { .. } => return Vec::new(),
        };
        if event.event_type == EventType::Bookmark {
            return Vec::new();
        }
        let mut parts = Vec::new();
        let old = self.parts_mut(watch, &event.object);
        let known = old.is_some();
        if let Some(old) = old {
            if same(&event.object.spec, &old.spec) {
                parts.push(ObjectPart::Spec);
            }
            if same(&event.object.status, &old.status) {
                parts.push(ObjectPart::Status);
            }
            if Delivered::stores(event.event_type) {
                *old = Parts::of(&event.object);
            }
        }
        self.take_in(watch, event, known);
        parts
    }

    /// The plugin's side: puts back into a watch event the parts its
    /// `unchanged` names, from the last version its watch delivered of the
    /// same object, and empties the list, so that the event reads as if
    /// nothing had been left out; then takes in what `event` delivers, as
    /// [`send`](Delivered::send) does. Fails, changing nothing, if the
    /// event leaves out a part of an object its watch never delivered.
    pub fn receive(&mut self, event: &mut InputEvent) -> Result<(), String> {
        let (watch, event) = match event {
            InputEvent::Listed { watch, objects, .. } => {
                self.list(*watch, objects);
                return Ok(());
            }
            InputEvent::Watch { watch, event } => (*watch, event),
            InputEvent::Result(_) | InputEvent::Timer { .. } => return Ok(()),
        };
        let old = self.parts_mut(watch, &event.object);
        let known = old.is_some();
        match old {
            Some(old) if event.event_type != EventType::Bookmark => {
                if !event.unchanged.is_empty() {
                    let object = Arc::make_mut(&mut event.object);
                    for part in std::mem::take(&mut event.unchanged) {
                        match part {
                            ObjectPart::Spec => object.spec = old.spec.clone(),
                            ObjectPart::Status => object.status = old.status.clone(),
                        }
                    }
                }
                if Delivered::stores(event.event_type) {
                    *old = Parts::of(&event.object);
                }
            }
            _ if !event.unchanged.is_empty() => {
                let meta = &event.object.metadata;
                return Err(format!(
                    "a {} event for {}/{} on watch {watch} leaves out {:?}, but the watch never delivered that object",
                    event.event_type, meta.namespace, meta.name, event.unchanged
                ));
            }
            _ => {}
        }
        self.take_in(watch, event, known);
        Ok(())
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
            other: std::collections::BTreeMap::from([("extra".to_owned(), serde_json::json!(1))]),
        })
    }

    fn watch(event_type: EventType, object: &Arc<Object>) -> InputEvent {
        InputEvent::Watch { watch: 0, event: WatchEvent::new(event_type, Arc::clone(object)) }
    }

    /// `event` as the plugin reads it off the wire: without the parts
    /// its `unchanged` names.
    fn on_the_wire(mut event: InputEvent, unchanged: Vec<ObjectPart>) -> InputEvent {
        if let InputEvent::Watch { event, .. } = &mut event {
            let object = Arc::make_mut(&mut event.object);
            for part in &unchanged {
                match part {
                    ObjectPart::Spec => object.spec = SharedValue::default(),
                    ObjectPart::Status => object.status = SharedValue::default(),
                }
            }
            event.unchanged = unchanged;
        }
        event
    }

    /// Sends `event` through the host's table and the plugin's, as a call
    /// does; returns what was left out and what the plugin's controller
    /// sees.
    fn deliver(host: &mut Delivered, plugin: &mut Delivered, event: InputEvent) -> (Vec<ObjectPart>, InputEvent) {
        let unchanged = host.send(&event);
        let mut received = on_the_wire(event, unchanged.clone());
        plugin.receive(&mut received).expect("the plugin has what the host left out");
        (unchanged, received)
    }

    #[test]
    fn the_host_leaves_out_what_the_watch_delivered_and_the_plugin_puts_it_back() {
        let (mut host, mut plugin) = (Delivered::new(), Delivered::new());
        let first = pod("a", serde_json::json!({"n": 1}), serde_json::json!({"p": "Pending"}));
        // Nothing delivered yet: nothing left out.
        let (left_out, _) = deliver(&mut host, &mut plugin, watch(EventType::Added, &first));
        assert!(left_out.is_empty());
        // A status change keeps the spec (an equal copy counts too), and
        // the plugin's controller sees the whole object.
        let second = pod("a", serde_json::json!({"n": 1}), serde_json::json!({"p": "Running"}));
        let (left_out, seen) = deliver(&mut host, &mut plugin, watch(EventType::Modified, &second));
        assert_eq!(left_out, vec![ObjectPart::Spec]);
        assert_eq!(seen, watch(EventType::Modified, &second));
        // On another watch, or for another object, nothing is known.
        let on_another = InputEvent::Watch { watch: 1, event: WatchEvent::new(EventType::Modified, second.clone()) };
        assert!(host.send(&on_another).is_empty());
        let other = pod("b", serde_json::json!({"n": 1}), serde_json::json!({"p": "Running"}));
        assert!(host.send(&watch(EventType::Modified, &other)).is_empty());
        // Unchanged again: both parts; then a deletion forgets the object.
        let (left_out, seen) = deliver(&mut host, &mut plugin, watch(EventType::Deleted, &second));
        assert_eq!(left_out, vec![ObjectPart::Spec, ObjectPart::Status]);
        assert_eq!(seen, watch(EventType::Deleted, &second));
        assert!(host.send(&watch(EventType::Added, &second)).is_empty());
        // A plugin told it holds what it never got refuses the event.
        let mut wrong = on_the_wire(watch(EventType::Added, &first), vec![ObjectPart::Status]);
        let error = plugin.receive(&mut wrong).unwrap_err();
        assert!(error.contains("never delivered"), "{error}");
        // A list replaces what its watch delivered.
        let listed = InputEvent::Listed { watch: 0, resource_version: "9".into(), objects: vec![first.clone()] };
        deliver(&mut host, &mut plugin, listed);
        let (left_out, seen) = deliver(&mut host, &mut plugin, watch(EventType::Modified, &first));
        assert_eq!(left_out, vec![ObjectPart::Spec, ObjectPart::Status]);
        assert_eq!(seen, watch(EventType::Modified, &first));
    }

    #[test]
    fn a_bookmark_or_a_null_part_is_never_left_out() {
        let mut host = Delivered::new();
        let bare = pod("a", serde_json::Value::Null, serde_json::json!({"p": 1}));
        host.send(&watch(EventType::Added, &bare));
        assert!(host.send(&watch(EventType::Bookmark, &bare)).is_empty());
        assert_eq!(host.send(&watch(EventType::Modified, &bare)), vec![ObjectPart::Status]);
    }
}
