//! The `audit.k8s.io/v1` `Event`, as an API server's log backend writes
//! it: one JSON object per line.
//!
//! Only the fields Recon reads or writes are modelled; everything else in a
//! line (the rest of a Pod's spec, `sourceIPs`, `managedFields`, …) is
//! skipped while parsing, so a line costs what its JSON costs to scan, and
//! nothing more is kept. The field names and their meaning follow the
//! audit.k8s.io/v1 API reference (kubernetes.io, "kube-apiserver Audit
//! Configuration (v1)").

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The only API version of the audit format this crate reads.
pub const API_VERSION: &str = "audit.k8s.io/v1";

/// The annotation an API server sets on an event whose request and
/// response objects it dropped for size (the "Log entry truncation"
/// section of the Auditing page).
pub const TRUNCATED_ANNOTATION: &str = "audit.k8s.io/truncated";

/// One audit event: one stage of one request, as one line of a log.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    /// Always `Event`.
    #[serde(default)]
    pub kind: String,
    /// `audit.k8s.io/v1` (anything else is refused by the reader).
    #[serde(default)]
    pub api_version: String,
    /// The audit level the event was written at: `None`, `Metadata`,
    /// `Request` or `RequestResponse` (see [`Level`]).
    #[serde(default)]
    pub level: String,
    /// One id per request, shared by the events of its stages.
    #[serde(default, rename = "auditID")]
    pub audit_id: String,
    /// The stage of request handling that produced it (see [`Stage`]).
    #[serde(default)]
    pub stage: String,
    /// The request URI as the client sent it: path and query, which carries
    /// a read's `resourceVersion`, `resourceVersionMatch`, `watch`, ….
    #[serde(default, rename = "requestURI")]
    pub request_uri: String,
    /// The Kubernetes verb: `get`, `list`, `watch`, `create`, `update`,
    /// `patch`, `delete`, `deletecollection`.
    #[serde(default)]
    pub verb: String,
    /// Who made the request.
    #[serde(default)]
    pub user: UserInfo,
    /// The client's own name for itself (`kubelet/v1.30.0 …`); with
    /// `user.username` it identifies a client.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub user_agent: String,
    /// What the request is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object_ref: Option<ObjectReference>,
    /// The outcome: the HTTP code, and for failures the reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_status: Option<ResponseStatus>,
    /// The request body (`Request` level and above).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_object: Option<Object>,
    /// The response body (`RequestResponse` level only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_object: Option<Object>,
    /// When the request reached the API server (RFC 3339, microseconds).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub request_received_timestamp: String,
    /// When the request reached this stage.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub stage_timestamp: String,
    /// The audit's own annotations (`audit.k8s.io/…`, e.g.
    /// [`TRUNCATED_ANNOTATION`]); those of other components (authorization,
    /// admission) are not kept.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty", deserialize_with = "audit_annotations")]
    pub annotations: BTreeMap<String, String>,
}

impl Event {
    /// The stage, if it is one of the four the format defines.
    pub fn stage(&self) -> Option<Stage> {
        Stage::parse(&self.stage)
    }

    /// The level, if it is one of the four the format defines.
    pub fn level(&self) -> Option<Level> {
        Level::parse(&self.level)
    }

    /// The HTTP status code of the response, when there is one.
    pub fn code(&self) -> Option<u16> {
        self.response_status.as_ref().and_then(|s| s.code)
    }

    /// Whether the API server dropped this event's objects for size.
    pub fn truncated(&self) -> bool {
        self.annotations.get(TRUNCATED_ANNOTATION).is_some_and(|v| v == "true")
    }
}

/// Reads an annotations map, keeping only the audit's own keys.
fn audit_annotations<'de, D: serde::Deserializer<'de>>(d: D) -> Result<BTreeMap<String, String>, D::Error> {
    struct Visitor;
    impl<'de> serde::de::Visitor<'de> for Visitor {
        type Value = BTreeMap<String, String>;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a map of strings")
        }

        fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut kept = BTreeMap::new();
            while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                if key.starts_with("audit.k8s.io/") {
                    kept.insert(key.into_owned(), map.next_value()?);
                } else {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
            Ok(kept)
        }
    }
    d.deserialize_map(Visitor)
}

/// The stages of request handling at which an event is written (the
/// Auditing page lists the same four).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Stage {
    /// As soon as the request is received, before it is handled.
    RequestReceived,
    /// The response headers are sent; only long-running requests (watch).
    ResponseStarted,
    /// The response is complete.
    ResponseComplete,
    /// The handler panicked.
    Panic,
}

impl Stage {
    /// Its name in the log.
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::RequestReceived => "RequestReceived",
            Stage::ResponseStarted => "ResponseStarted",
            Stage::ResponseComplete => "ResponseComplete",
            Stage::Panic => "Panic",
        }
    }

    /// The stage a log names, if it is one.
    pub fn parse(s: &str) -> Option<Stage> {
        Some(match s {
            "RequestReceived" => Stage::RequestReceived,
            "ResponseStarted" => Stage::ResponseStarted,
            "ResponseComplete" => Stage::ResponseComplete,
            "Panic" => Stage::Panic,
            _ => return None,
        })
    }
}

/// How much of a request an event records (the Auditing page's audit levels).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Level {
    /// Nothing is logged (never seen in a log).
    None,
    /// Who, when, what verb on what resource; no bodies.
    Metadata,
    /// Metadata and the request body.
    Request,
    /// Metadata, the request body and the response body.
    RequestResponse,
}

impl Level {
    /// Its name in the log.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::None => "None",
            Level::Metadata => "Metadata",
            Level::Request => "Request",
            Level::RequestResponse => "RequestResponse",
        }
    }

    /// The level a log names, if it is one.
    pub fn parse(s: &str) -> Option<Level> {
        Some(match s {
            "None" => Level::None,
            "Metadata" => Level::Metadata,
            "Request" => Level::Request,
            "RequestResponse" => Level::RequestResponse,
            _ => return None,
        })
    }
}

/// The authenticated user (`authentication/v1.UserInfo`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserInfo {
    /// The user name, e.g. `system:node:node-1` for a kubelet.
    #[serde(default)]
    pub username: String,
    /// The groups the user belongs to: written, not read (nothing in the
    /// analysis depends on them, and skipping them saves an allocation per
    /// group per event).
    #[serde(default, skip_serializing_if = "Vec::is_empty", skip_deserializing)]
    pub groups: Vec<String>,
}

/// What a request is about (`audit.k8s.io/v1` `ObjectReference`). The API
/// server fills `uid` and `resourceVersion` from the request body's
/// metadata, so an update's `resourceVersion` here is the version its
/// client read and asks to replace.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectReference {
    /// The resource, e.g. `pods`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub resource: String,
    /// The namespace; empty for cluster-scoped resources and for lists across namespaces.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// The object's name; empty for lists and for creates with `generateName`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The uid in the request body, if it carried one.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// The API group; empty for the core group.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_group: String,
    /// The API version, e.g. `v1`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// The resourceVersion in the request body, if it carried one.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub resource_version: String,
    /// The subresource, e.g. `status`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub subresource: String,
}

/// The response status (`meta/v1.Status`, as much of it as is logged).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResponseStatus {
    /// The HTTP code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<u16>,
    /// `Success` or `Failure`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub status: String,
    /// Why it failed, e.g. `Conflict`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// The error message.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

/// A request or response body, reduced to what the analysis reads: the
/// object's identity and version, a list's revision and items, a delete's
/// options.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Object {
    /// The kind, e.g. `Pod`, `PodList`, `DeleteOptions`, `Status`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Its API version.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// `ObjectMeta` for an object, `ListMeta` for a list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
    /// A list's items.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items: Option<Vec<Item>>,
    /// `DeleteOptions.preconditions`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preconditions: Option<Preconditions>,
    /// `DeleteOptions.gracePeriodSeconds`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grace_period_seconds: Option<i64>,
    /// A `Status` response's details (a delete that removed an object may
    /// answer with a Status naming it instead of the object).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<StatusDetails>,
}

/// The metadata the analysis reads: `ObjectMeta` or `ListMeta`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Metadata {
    /// The name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// A create's name prefix.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub generate_name: String,
    /// The namespace.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// The incarnation.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// For an object, the revision it was last modified at; for a list,
    /// the revision the list was built at.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub resource_version: String,
    /// Set once a deletion has begun.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub deletion_timestamp: String,
    /// The grace period of a deletion that has begun.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_grace_period_seconds: Option<i64>,
    /// Finalizers that hold a deleted object until they are removed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub finalizers: Vec<String>,
}

/// One item of a list response.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Item {
    /// Its metadata.
    #[serde(default)]
    pub metadata: Metadata,
    /// The part of its spec the analysis reads (a pod's node).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<ItemSpec>,
}

/// The part of an item's spec the analysis reads.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ItemSpec {
    /// A pod's node.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub node_name: String,
}

/// `DeleteOptions.preconditions`: delete only this incarnation, or only
/// this version.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Preconditions {
    /// Only this uid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// Only this resourceVersion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
}

/// `Status.details`: what a successful delete removed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusDetails {
    /// The object's name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Its uid.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_from_a_real_log_parses_and_keeps_only_what_is_read() {
        let line = r#"{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"RequestResponse","auditID":"7e1b","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/default/pods/web-0/status","verb":"update","user":{"username":"system:node:node-1","groups":["system:nodes","system:authenticated"]},"sourceIPs":["10.0.0.5"],"userAgent":"kubelet/v1.30.0 (linux/amd64) kubernetes/7c48c2b","objectRef":{"resource":"pods","namespace":"default","name":"web-0","uid":"c3ec","apiVersion":"v1","resourceVersion":"8","subresource":"status"},"responseStatus":{"metadata":{},"code":200},"responseObject":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"web-0","namespace":"default","uid":"c3ec","resourceVersion":"9","managedFields":[{"manager":"kubelet"}]},"spec":{"nodeName":"node-1","containers":[]},"status":{"phase":"Running"}},"requestReceivedTimestamp":"2024-05-01T12:00:00.100000Z","stageTimestamp":"2024-05-01T12:00:00.104512Z","annotations":{"authorization.k8s.io/decision":"allow"}}"#;
        let e: Event = serde_json::from_str(line).expect("parses");
        assert_eq!(e.stage(), Some(Stage::ResponseComplete));
        assert_eq!(e.level(), Some(Level::RequestResponse));
        assert_eq!(e.user.username, "system:node:node-1");
        assert_eq!(e.object_ref.as_ref().map(|o| o.resource_version.as_str()), Some("8"));
        assert_eq!(e.code(), Some(200));
        assert!(!e.truncated());
        assert!(e.annotations.is_empty(), "only the audit's own annotations are kept");
        assert!(e.user.groups.is_empty(), "groups are written, not read");
        let truncated: Event =
            serde_json::from_str(r#"{"kind":"Event","annotations":{"audit.k8s.io/truncated":"true","x":"y"}}"#)
                .unwrap();
        assert!(truncated.truncated());
        let meta = e.response_object.and_then(|o| o.metadata).expect("response metadata");
        assert_eq!(meta.resource_version, "9");
    }

    #[test]
    fn stages_and_levels_round_trip_their_names() {
        for s in [Stage::RequestReceived, Stage::ResponseStarted, Stage::ResponseComplete, Stage::Panic] {
            assert_eq!(Stage::parse(s.as_str()), Some(s));
        }
        for l in [Level::None, Level::Metadata, Level::Request, Level::RequestResponse] {
            assert_eq!(Level::parse(l.as_str()), Some(l));
        }
        assert_eq!(Stage::parse("ResponseDone"), None);
    }
}
