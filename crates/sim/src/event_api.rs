//! The API server's side of Events: a write in either API version is
//! validated as Kubernetes validates it and stored in the core `v1` form
//! (see [`recon_abi::event`]); the writer is answered in the version it
//! wrote.

use recon_abi::event::{self, CORE_V1, EVENTS_V1, RENAMED};
use recon_abi::{Object, Patch, Status, StatusReason};
use serde_json::Value;

/// The most bytes of a note (`message`) an Event with an `eventTime` may
/// carry, as Kubernetes' `NoteLengthLimit`.
pub(crate) const NOTE_LENGTH_LIMIT: usize = 1024;

/// Which API version a write of an Event speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Version {
    /// `v1`, the core group (and the storage form).
    Core,
    /// `events.k8s.io/v1`.
    EventsV1,
}

impl Version {
    /// An Event as a validation error in this version names it: `Event
    /// "x"` in the core group, `Event.events.k8s.io "x"` in its own.
    fn api_kind_name(self, name: &str) -> String {
        match self {
            Version::Core => format!("Event \"{name}\""),
            Version::EventsV1 => format!("Event.events.k8s.io \"{name}\""),
        }
    }

    /// The version an object written as is speaks: `events.k8s.io/v1`
    /// only for an Event that says so.
    pub fn of(object: &Object) -> Version {
        if event::is_events_v1(object) { Version::EventsV1 } else { Version::Core }
    }

    /// The version a patch of an Event speaks: Recon's requests have no
    /// URL, so the body's `apiVersion` names it (server-side apply always
    /// has one); without one, the core `v1`.
    pub fn of_patch(patch: &Patch) -> Version {
        match patch.body().get("apiVersion").and_then(Value::as_str) {
            Some(EVENTS_V1) => Version::EventsV1,
            _ => Version::Core,
        }
    }

    /// The object as a client of this version reads it.
    pub fn view(self, object: &Object) -> Object {
        match self {
            Version::Core => object.clone(),
            Version::EventsV1 => event::to_events_v1(object),
        }
    }

    /// A field's name in this version, from its core name.
    fn field(self, core: &str) -> &str {
        match self {
            Version::Core => core,
            Version::EventsV1 => RENAMED.iter().find(|(_, old)| *old == core).map_or(core, |(new, _)| new),
        }
    }
}

/// An Event written in `version`, admitted: validated (`create` adds the
/// stricter rules of a create through `events.k8s.io/v1`), then in the
/// core form it is stored in. 422 Invalid names the first field at fault.
pub(crate) fn admit(object: Object, version: Version, create: bool) -> Result<Object, Status> {
    let mut core = event::to_core(&object);
    if version == Version::EventsV1 {
        core.api_version = CORE_V1.into();
    }
    match problem(&core, version, create) {
        None => Ok(core),
        Some((field, what)) => Err(Status::new(
            StatusReason::Invalid,
            format!("{} is invalid: {}: {what}", version.api_kind_name(&object.metadata.name), version.field(field)),
        )),
    }
}

/// What Kubernetes' Event validation finds wrong (the first problem, as
/// its core field name and the error), checked on the core form as the
/// API server checks its internal one: every Event must agree with the
/// namespace of the object it is about; one with an `eventTime` (a "new"
/// Event) needs its reporting controller and instance, an action and a
/// reason, and a note of at most 1 KiB; a create through
/// `events.k8s.io/v1` needs an `eventTime`, a type of `Normal` or
/// `Warning`, and none of the deprecated fields.
fn problem(event: &Object, version: Version, create: bool) -> Option<(&'static str, String)> {
    let text = |field: &str| event.other.get(field).and_then(Value::as_str).unwrap_or_default();
    // An empty value is an unset one, as Go's zero values are.
    let set = |field: &str| {
        event.other.get(field).is_some_and(|v| match v {
            Value::Null => false,
            Value::String(s) => !s.is_empty(),
            Value::Number(n) => n.as_f64() != Some(0.0),
            Value::Object(m) => m.values().any(|v| !v.is_null() && *v != Value::String(String::new())),
            _ => true,
        })
    };
    let namespace = event.metadata.namespace.as_str();
    let involved = event.other.get("involvedObject").and_then(|o| o.get("namespace")).and_then(Value::as_str);
    let involved = involved.unwrap_or_default();
    if !set("eventTime") {
        let agrees = if involved.is_empty() { matches!(namespace, "" | "default") } else { involved == namespace };
        if !agrees {
            return Some((
                "involvedObject",
                format!("namespace {involved:?} does not match the Event's {namespace:?}"),
            ));
        }
    } else {
        if involved.is_empty() && !matches!(namespace, "default" | "kube-system") {
            return Some(("involvedObject", format!("namespace \"\" does not match the Event's {namespace:?}")));
        }
        for field in ["reportingComponent", "reportingInstance", "action", "reason"] {
            if text(field).is_empty() {
                return Some((field, "Required value".into()));
            }
        }
        if text("message").len() > NOTE_LENGTH_LIMIT {
            return Some(("message", format!("Too long: may not be more than {NOTE_LENGTH_LIMIT} bytes")));
        }
    }
    if create && version == Version::EventsV1 {
        if !set("eventTime") {
            return Some(("eventTime", "Required value".into()));
        }
        let kind = text("type");
        if kind != "Normal" && kind != "Warning" {
            return Some(("type", format!("Unsupported value: {kind:?}: supported values: \"Normal\", \"Warning\"")));
        }
        for field in ["firstTimestamp", "lastTimestamp", "count", "source"] {
            if set(field) {
                return Some((field, "needs to be unset".into()));
            }
        }
    }
    None
}
