//! Publishing Kubernetes Events about the objects a controller manages, as
//! client-go's and kube-rs's recorders do: an `events.k8s.io/v1` Event
//! created with an ordinary create. The API server stores it in the core
//! `v1` form too (see [`recon_abi::event`]), so readers of either version
//! see it, and the playground's timeline shows it on the lane of the
//! object it is about.
//!
//! The controller's manifest must allow `create` on `Event`:
//!
//! ```
//! use recon_sdk::events::{Reporter, event_about, EventType};
//! # let pod = recon_sdk::testing::pod("default", "web-0", "uid-1", "7");
//! let reporter = Reporter::new("example.com/db-operator", "db-operator-0");
//! let event = event_about(&pod, &reporter, EventType::Normal, "Created", "Create", "created the volume", 1_500);
//! assert_eq!(event.api_version, "events.k8s.io/v1");
//! assert_eq!(event.other["regarding"]["name"], "web-0");
//! ```
//! A [`crate::Context`] sends one with [`crate::Context::publish_event`].

use recon_abi::event::{EVENT_KIND, EVENTS_V1};
use recon_abi::{Object, ObjectMeta, format_timestamp, is_cluster_scoped};
use serde_json::{Value, json};

/// Who reports: `reportingController` (a qualified name such as
/// `example.com/my-operator`) and `reportingInstance` (this instance, e.g.
/// the component's name), both required for an `events.k8s.io/v1` Event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reporter {
    /// `reportingController`.
    pub controller: String,
    /// `reportingInstance`.
    pub instance: String,
}

impl Reporter {
    /// A reporter.
    pub fn new(controller: impl Into<String>, instance: impl Into<String>) -> Reporter {
        Reporter { controller: controller.into(), instance: instance.into() }
    }
}

/// An Event's type: all Kubernetes knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventType {
    /// Something expected happened.
    Normal,
    /// Something may need attention.
    Warning,
}

impl EventType {
    /// As on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}

/// An `events.k8s.io/v1` Event about `regarding` at `now_ms`: `reason` is
/// why (one CamelCase word, `Created`), `action` what was done or failed
/// (`Create`), `note` for people (at most 1 KiB). It lives in the
/// object's namespace (`default` for a cluster-scoped object) and is named
/// by the API server from the object's name (`generateName`), so two
/// Events in one moment do not collide.
pub fn event_about(
    regarding: &Object,
    reporter: &Reporter,
    event_type: EventType,
    reason: &str,
    action: &str,
    note: &str,
    now_ms: u64,
) -> Object {
    let m = &regarding.metadata;
    let namespace = if m.namespace.is_empty() || is_cluster_scoped(&regarding.kind) { "default" } else { &m.namespace };
    let mut reference = json!({ "apiVersion": regarding.api_version, "kind": regarding.kind, "name": m.name });
    for (field, value) in [("namespace", &m.namespace), ("uid", &m.uid), ("resourceVersion", &m.resource_version)] {
        if !value.is_empty() {
            reference[field] = Value::String(value.clone());
        }
    }
    // eventTime is a MicroTime: six digits of fraction.
    let time = format_timestamp(now_ms).replace('Z', "000Z");
    let fields = [
        ("regarding", reference),
        ("eventTime", Value::String(time)),
        ("type", event_type.as_str().into()),
        ("reason", reason.into()),
        ("action", action.into()),
        ("note", note.into()),
        ("reportingController", reporter.controller.clone().into()),
        ("reportingInstance", reporter.instance.clone().into()),
    ];
    Object {
        api_version: EVENTS_V1.into(),
        kind: EVENT_KIND.into(),
        metadata: ObjectMeta {
            generate_name: format!("{}.", m.name),
            namespace: namespace.into(),
            ..Default::default()
        },
        other: fields.into_iter().map(|(k, v)| (k.to_owned(), v)).collect(),
        ..Default::default()
    }
}
