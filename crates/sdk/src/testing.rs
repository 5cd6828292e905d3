//! Builders for tests that drive a controller through `init` and `handle`
//! with hand-made inputs.
//!
//! ```
//! use recon_sdk::testing::{ObjectExt, input, listed, pod};
//! let web0 = pod("default", "web-0", "uid-1", "5").on_node("node-1").running_ready();
//! let first_call = input(0, vec![listed(0, "5", vec![web0])]);
//! assert_eq!(first_call.events.len(), 1);
//! ```

use recon_abi::{
    ActionResult, Container, EventType, Input, InputEvent, Object, ObjectKey, ObjectMeta, Outcome, Status,
    StatusReason, Verb, WatchEvent, format_timestamp,
};
use serde_json::{Value, json};

use crate::meta::{json_object_mut, owner_reference};
use crate::pod::pod_ref;
use crate::status::set_condition;

/// An object of `kind` with only its identity set; `apiVersion` follows the kind.
pub fn object(kind: &str, namespace: &str, name: &str) -> Object {
    let api_version = match kind {
        "StatefulSet" | "ReplicaSet" | "Deployment" | "DaemonSet" | "ControllerRevision" => "apps/v1",
        _ => "v1",
    };
    Object {
        api_version: api_version.into(),
        kind: kind.into(),
        metadata: ObjectMeta { name: name.into(), namespace: namespace.into(), ..ObjectMeta::default() },
        spec: Default::default(),
        status: Default::default(),
        other: Default::default(),
    }
}

/// A stored pod: unbound, no status, with this uid and resourceVersion.
pub fn pod(namespace: &str, name: &str, uid: &str, resource_version: &str) -> Object {
    object("Pod", namespace, name).with_uid(uid).at_version(resource_version)
}

/// A Node with `status.capacity.pods` set to `pods`.
pub fn node(name: &str, pods: u32) -> Object {
    let mut node = object("Node", "", name).with_uid(&format!("uid-{name}")).at_version("1");
    node.status = json!({ "capacity": { "pods": pods.to_string() } }).into();
    node
}

/// Chainable edits of an [`Object`], for building test fixtures.
pub trait ObjectExt: Sized {
    /// Sets `metadata.uid`.
    fn with_uid(self, uid: &str) -> Self;
    /// Sets `metadata.resourceVersion`.
    fn at_version(self, resource_version: &str) -> Self;
    /// Sets `metadata.generation`.
    fn at_generation(self, generation: i64) -> Self;
    /// Adds a label.
    fn with_label(self, key: &str, value: &str) -> Self;
    /// Replaces `spec`.
    fn with_spec(self, spec: Value) -> Self;
    /// Replaces `status`.
    fn with_status(self, status: Value) -> Self;
    /// Binds a pod: sets `spec.nodeName`.
    fn on_node(self, node: &str) -> Self;
    /// Marks a pod Running with a `Ready: True` condition.
    fn running_ready(self) -> Self;
    /// Starts a graceful deletion: sets `metadata.deletionTimestamp`.
    fn terminating(self) -> Self;
    /// Adds a controller owner reference to `owner`.
    fn owned_by(self, owner: &Object) -> Self;
}

impl ObjectExt for Object {
    fn with_uid(mut self, uid: &str) -> Self {
        self.metadata.uid = uid.into();
        self
    }

    fn at_version(mut self, resource_version: &str) -> Self {
        self.metadata.resource_version = resource_version.into();
        self
    }

    fn at_generation(mut self, generation: i64) -> Self {
        self.metadata.generation = generation;
        self
    }

    fn with_label(mut self, key: &str, value: &str) -> Self {
        self.metadata.labels.insert(key.into(), value.into());
        self
    }

    fn with_spec(mut self, spec: Value) -> Self {
        self.spec = spec.into();
        self
    }

    fn with_status(mut self, status: Value) -> Self {
        self.status = status.into();
        self
    }

    fn on_node(mut self, node: &str) -> Self {
        json_object_mut(&mut self.spec).insert("nodeName".into(), json!(node));
        self
    }

    fn running_ready(mut self) -> Self {
        json_object_mut(&mut self.status).insert("phase".into(), json!("Running"));
        set_condition(&mut self.status, "Ready", true);
        self
    }

    fn terminating(mut self) -> Self {
        self.metadata.deletion_timestamp = Some(format_timestamp(0));
        self.metadata.deletion_grace_period_seconds = Some(30);
        self
    }

    fn owned_by(mut self, owner: &Object) -> Self {
        self.metadata.owner_references.push(owner_reference(owner));
        self
    }
}

/// A list result for `watch`.
pub fn listed(watch: usize, resource_version: &str, objects: Vec<Object>) -> InputEvent {
    InputEvent::Listed {
        watch,
        resource_version: resource_version.into(),
        objects: objects.into_iter().map(std::sync::Arc::new).collect(),
    }
}

fn watch_event(watch: usize, event_type: EventType, object: Object) -> InputEvent {
    InputEvent::Watch { watch, event: WatchEvent::new(event_type, object.into()) }
}

/// An ADDED watch event.
pub fn added(watch: usize, object: Object) -> InputEvent {
    watch_event(watch, EventType::Added, object)
}

/// A MODIFIED watch event.
pub fn modified(watch: usize, object: Object) -> InputEvent {
    watch_event(watch, EventType::Modified, object)
}

/// A DELETED watch event (the object's last state).
pub fn deleted(watch: usize, object: Object) -> InputEvent {
    watch_event(watch, EventType::Deleted, object)
}

/// A BOOKMARK at `resource_version`.
pub fn bookmark(watch: usize, resource_version: &str) -> InputEvent {
    let mut object = Object::default();
    object.metadata.resource_version = resource_version.into();
    watch_event(watch, EventType::Bookmark, object)
}

/// A successful write that stored `object`.
pub fn succeeded(verb: Verb, object: &Object) -> ActionResult {
    ActionResult { verb, key: object.key(), outcome: Outcome::Ok(Some(object.clone())), id: None }
}

/// A failed write.
pub fn failed(verb: Verb, key: &ObjectKey, reason: StatusReason) -> ActionResult {
    ActionResult { verb, key: key.clone(), outcome: Outcome::Err(Status::new(reason, format!("{reason:?}"))), id: None }
}

/// A timer event.
pub fn timer(key: &str) -> InputEvent {
    InputEvent::Timer { key: key.into() }
}

/// One call's input for a controller that is not a node agent.
pub fn input(time_ms: u64, events: Vec<InputEvent>) -> Input {
    Input { time_ms, events, containers: None }
}

/// One call's input for a node agent, with the containers running on its node.
pub fn node_input(time_ms: u64, events: Vec<InputEvent>, containers: Vec<Container>) -> Input {
    Input { time_ms, events, containers: Some(containers.into()) }
}

/// A container running for this pod incarnation, started at 0.
pub fn container_of(pod: &Object) -> Container {
    Container { pod: pod_ref(pod), started_at_ms: 0 }
}
