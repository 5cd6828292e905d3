//! A simulated run written as the audit logs its API servers would have
//! written: one log per API server, one `audit.k8s.io/v1` event per line,
//! under the policy `docs/AUDIT.md` recommends (writes and reads of every
//! resource at `RequestResponse`, watches at `Metadata`, the
//! `RequestReceived` stage omitted).
//!
//! Everything comes from the trace, and only what an API server sees is
//! written:
//!
//! | trace entry | audit event |
//! |---|---|
//! | `StoreWrite` through an API server | `create`/`update`/`delete` (status updates on the `status` subresource), `ResponseComplete`, the committed revision as the response object's `resourceVersion` |
//! | `WriteFailed` at an API server | the same request, answered with its error code and reason |
//! | `ListServed`, a list or get | `list`/`get`, `ResponseComplete`, the list's revision in the response's `metadata.resourceVersion`, its items with their versions |
//! | `ListServed`, a watch's initial state | `watch`, `ResponseStarted` at `Metadata`: what a watch sends is not audited |
//! | `RequestFailed` | the request, answered with its error |
//!
//! The rest of the trace (caches, watch deliveries, reconciles, container
//! starts) happens where no API server logs it. The trace does not record
//! a watch that resumes from a revision, nor a write's preconditions or a
//! deletion's grace period, so those are not in the logs either; a pod
//! whose deletion began is written with the simulator's default grace
//! period for a bound pod (30 s).
//!
//! Virtual time becomes timestamps from the Unix epoch (`t=5.003s` is
//! `1970-01-01T00:00:05.003000Z`); the audit IDs are derived from the
//! scenario, the seed and the entry, so the same run gives the same bytes.

use recon_abi::{ObjectKey, Status, Verb};
use recon_scenario::{Kind, Kinds};
use recon_trace::{Entry, Event as TraceEvent, LaneRole, ListServed, ReadPurpose, Trace};

use crate::event::{
    API_VERSION, Event, Item, Level, Metadata, Object, ObjectReference, ResponseStatus, Stage, UserInfo,
};
use crate::time;
use crate::uri::percent_encode;

/// The grace period written for a pod whose deletion began: the
/// simulator's default for a pod bound to a node.
const DEFAULT_GRACE_SECONDS: i64 = 30;

/// One API server's log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerLog {
    /// The API server's name (the file is `<name>.jsonl`).
    pub server: String,
    /// The log: one JSON event per line, each line ending in a newline.
    pub text: String,
    /// How many events.
    pub events: usize,
}

/// The run's audit logs, one per API server in the scenario's order, with
/// the objects' identities and versions but not their bodies (the trace
/// does not keep them; [`audit_logs_with_objects`] adds them).
///
/// `kinds` are the kinds the run's API servers served
/// ([`recon_scenario::Scenario::kinds`]): each request's path and object
/// reference name its kind's group, version and resource, as a real API
/// server's log does.
///
/// Fails only on a trace whose request text it cannot read (a trace from
/// another version of the simulator), naming the entry.
pub fn audit_logs(trace: &Trace, kinds: &Kinds) -> Result<Vec<ServerLog>, String> {
    audit_logs_with_objects(trace, kinds, &|_| None)
}

/// The run's audit logs with whole objects in the request and response
/// bodies, as a real API server logs them at `RequestResponse`: `objects`
/// gives the object a write committed at a revision (the run's store keeps
/// them), or `None` where it is not known (then only the identity and
/// version are written). A replay ([`crate::replay`]) needs the bodies.
pub fn audit_logs_with_objects(
    trace: &Trace,
    kinds: &Kinds,
    objects: &dyn Fn(u64) -> Option<recon_abi::Object>,
) -> Result<Vec<ServerLog>, String> {
    let mut logs: Vec<ServerLog> = api_servers(trace)
        .map(|server| ServerLog { server: server.to_owned(), text: String::new(), events: 0 })
        .collect();
    write_audit_logs(trace, kinds, objects, &mut |server, line| {
        let log = &mut logs[server];
        log.text.push_str(line);
        log.text.push('\n');
        log.events += 1;
        Ok(())
    })?;
    Ok(logs)
}

/// The names of the run's API servers, in the scenario's order: the logs
/// [`write_audit_logs`] writes, by index.
pub fn api_servers(trace: &Trace) -> impl Iterator<Item = &str> {
    trace.lanes.iter().filter(|l| l.role == LaneRole::ApiServer).map(|l| l.name.as_str())
}

/// [`audit_logs_with_objects`] a line at a time, never holding a log: a
/// big run's logs are hundreds of megabytes. Hands each event, as one
/// line of JSON without its newline, to `write` with its API server's
/// index in [`api_servers`], in the order of the run; stops at the first
/// error `write` returns, and returns it.
pub fn write_audit_logs(
    trace: &Trace,
    kinds: &Kinds,
    objects: &dyn Fn(u64) -> Option<recon_abi::Object>,
    write: &mut dyn FnMut(usize, &str) -> Result<(), String>,
) -> Result<(), String> {
    let servers: Vec<&str> = api_servers(trace).collect();
    let mut text = Vec::new();
    for entry in &trace.entries {
        let Some((server, mut event)) = event_for(trace, kinds, entry)? else { continue };
        let Some(index) = servers.iter().position(|s| *s == server) else { continue };
        // A list's items are left out of the line's value and written as
        // it is encoded, each made whole on its own: a relist of every pod
        // of a 1,000-node cluster, made whole as one value, took 166 MB.
        let list = match (&entry.event, event.response_object.as_mut().and_then(|o| o.items.as_mut())) {
            (TraceEvent::ListServed(served), Some(items)) => Some((std::mem::take(items), &served.objects)),
            _ => None,
        };
        let mut line = serde_json::to_value(&event).expect("an audit event is plain data");
        text.clear();
        let written = match list {
            Some((items, shown)) => {
                let items = WholeItems { items: &items, shown, objects };
                serde_json::to_writer(
                    &mut text,
                    &At { value: &line, path: &["responseObject", "items"], items: &items },
                )
            }
            None => {
                add_bodies(&mut line, &entry.event, objects);
                serde_json::to_writer(&mut text, &line)
            }
        };
        written.map_err(|e| format!("trace entry {}: its audit event did not encode: {e}", entry.id))?;
        write(index, std::str::from_utf8(&text).expect("serde_json writes UTF-8"))?;
    }
    Ok(())
}

/// `value` as JSON, with the value at `path` (a field of a field …)
/// written by `items` instead: a list's line, whose items are written
/// one at a time.
struct At<'a> {
    value: &'a serde_json::Value,
    path: &'a [&'a str],
    items: &'a WholeItems<'a>,
}

impl serde::Serialize for At<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let Some((first, rest)) = self.path.split_first() else { return self.items.serialize(serializer) };
        let serde_json::Value::Object(fields) = self.value else { return self.value.serialize(serializer) };
        // The same entries in the same order as the value's own encoding.
        let mut map = serializer.serialize_map(Some(fields.len()))?;
        for (key, value) in fields {
            if key == first {
                map.serialize_entry(key, &At { value, path: rest, items: self.items })?;
            } else {
                map.serialize_entry(key, value)?;
            }
        }
        map.end()
    }
}

/// A list's items, each written as the whole object `objects` knows at
/// the revision the list showed it (see [`whole`]), or as the item where
/// it knows none: one object's value at a time.
struct WholeItems<'a> {
    items: &'a [crate::event::Item],
    shown: &'a [recon_trace::ObjectVersion],
    objects: &'a dyn Fn(u64) -> Option<recon_abi::Object>,
}

impl serde::Serialize for WholeItems<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{Error, SerializeSeq};
        let mut seq = serializer.serialize_seq(Some(self.items.len()))?;
        for (i, item) in self.items.iter().enumerate() {
            let said = serde_json::to_value(item).map_err(S::Error::custom)?;
            match self.shown.get(i).and_then(|o| whole(self.objects, o.revision, &said)) {
                Some(body) => seq.serialize_element(&body)?,
                None => seq.serialize_element(&said)?,
            }
        }
        seq.end()
    }
}

/// The audit event an entry makes, and the API server that logs it.
fn event_for(trace: &Trace, kinds: &Kinds, entry: &Entry) -> Result<Option<(String, Event)>, String> {
    let time = time::from_virtual_ms(entry.time_ms);
    let mut event = Event {
        kind: "Event".into(),
        api_version: API_VERSION.into(),
        level: Level::RequestResponse.as_str().into(),
        audit_id: audit_id(trace, entry),
        stage: Stage::ResponseComplete.as_str().into(),
        request_received_timestamp: time.clone(),
        stage_timestamp: time.clone(),
        ..Event::default()
    };
    let server = match &entry.event {
        TraceEvent::StoreWrite { verb, key, uid, revision, removed, terminating: _, by, via, .. } => {
            if via.is_empty() {
                return Ok(None); // the scenario's initial objects: before the logs begin
            }
            write_request(&mut event, trace, kinds, *verb, key, Some(uid), by);
            let kind = kinds.get_or_guess(&key.kind);
            let mut meta = object_meta(key, uid);
            meta.resource_version = revision.to_string();
            if *verb == Verb::Delete {
                // A removal answers with the object at the deletion's
                // revision; a deletion that leaves the pod terminating (the
                // first, or a repeat) answers with it marked for deletion
                // after its grace period.
                let grace = if *removed { 0 } else { DEFAULT_GRACE_SECONDS };
                meta.deletion_grace_period_seconds = Some(grace);
                meta.deletion_timestamp = time::from_virtual_ms(entry.time_ms + grace as u64 * 1000);
            }
            event.response_object = Some(Object {
                kind: key.kind.clone(),
                api_version: kind.api_version(),
                metadata: Some(meta),
                ..Object::default()
            });
            let code = if *verb == Verb::Create { 201 } else { 200 };
            event.response_status = Some(ResponseStatus { code: Some(code), ..ResponseStatus::default() });
            via.clone()
        }
        TraceEvent::WriteFailed { verb, key, status, by, via, .. } => {
            if via.is_empty() {
                return Ok(None); // refused before it reached an API server
            }
            write_request(&mut event, trace, kinds, *verb, key, None, by);
            event.response_status = Some(failure(status));
            via.clone()
        }
        TraceEvent::ListServed(list) => {
            let ListServed { component, api_server, request, purpose, revision, objects, .. } = &**list;
            let read = ReadRequest::parse(request).map_err(|e| format!("trace entry {}: {e}", entry.id))?;
            set_user(&mut event, trace, user_of_read(component, *purpose));
            let kind = kinds.get_or_guess(&read.kind);
            event.verb = read.verb.to_string();
            event.request_uri = read.uri(&kind);
            event.object_ref = Some(read.object_ref(&kind));
            event.response_status = Some(ResponseStatus { code: Some(200), ..ResponseStatus::default() });
            match read.verb {
                "watch" => {
                    // A watch's response is a stream: its headers are
                    // logged, what it sends is not.
                    event.level = Level::Metadata.as_str().into();
                    event.stage = Stage::ResponseStarted.as_str().into();
                }
                "get" => {
                    event.response_object = objects.first().map(|o| Object {
                        kind: read.kind.clone(),
                        api_version: kind.api_version(),
                        metadata: Some(Metadata {
                            resource_version: o.revision.to_string(),
                            ..object_meta(&o.key, &o.uid)
                        }),
                        ..Object::default()
                    });
                }
                _ => {
                    let items = objects
                        .iter()
                        .map(|o| Item {
                            metadata: Metadata {
                                resource_version: o.revision.to_string(),
                                ..object_meta(&o.key, &o.uid)
                            },
                            spec: None,
                        })
                        .collect();
                    event.response_object = Some(Object {
                        kind: format!("{}List", read.kind),
                        api_version: kind.api_version(),
                        metadata: Some(Metadata { resource_version: revision.to_string(), ..Metadata::default() }),
                        items: Some(items),
                        ..Object::default()
                    });
                }
            }
            api_server.clone()
        }
        TraceEvent::RequestFailed { component, api_server, request, status } => {
            let read = ReadRequest::parse(request).map_err(|e| format!("trace entry {}: {e}", entry.id))?;
            set_user(&mut event, trace, component);
            let kind = kinds.get_or_guess(&read.kind);
            event.verb = read.verb.to_string();
            event.request_uri = read.uri(&kind);
            event.object_ref = Some(read.object_ref(&kind));
            event.response_status = Some(failure(status));
            api_server.clone()
        }
        _ => return Ok(None),
    };
    Ok(Some((server.to_string(), event)))
}

/// The object `objects` knows committed at `revision`, as the body of an
/// event that `written` already describes: the fields the event set
/// stand (the object committed at a revision is the response of the write
/// that committed it, and what a read showed of it, but the store's copy
/// may spell its version, uid and deletion otherwise).
fn whole(
    objects: &dyn Fn(u64) -> Option<recon_abi::Object>,
    revision: u64,
    written: &serde_json::Value,
) -> Option<serde_json::Value> {
    use serde_json::Value;
    let mut body = serde_json::to_value(objects(revision)?).ok()?;
    if let (Some(meta), Some(said)) = (body.get_mut("metadata").and_then(Value::as_object_mut), written.get("metadata"))
    {
        for field in ["resourceVersion", "uid", "deletionTimestamp", "deletionGracePeriodSeconds"] {
            match said.get(field) {
                Some(v) => meta.insert(field.to_string(), v.clone()),
                None => meta.remove(field),
            };
        }
    }
    Some(body)
}

/// Puts whole objects in the bodies of a write's or a get's event where
/// `objects` knows them (a list's items are written by [`WholeItems`]).
fn add_bodies(line: &mut serde_json::Value, entry: &TraceEvent, objects: &dyn Fn(u64) -> Option<recon_abi::Object>) {
    use serde_json::Value;
    let whole = |revision: u64, written: &Value| whole(objects, revision, written);
    match entry {
        TraceEvent::StoreWrite { revision, verb, .. } => {
            if let Some(body) = line.get("responseObject").and_then(|said| whole(*revision, said)) {
                if *verb != Verb::Delete
                    && let Some(said) = line.get("requestObject")
                {
                    // The request carries the object as sent: no version yet.
                    let mut request = body.clone();
                    if let Some(meta) = request.get_mut("metadata").and_then(Value::as_object_mut) {
                        meta.remove("resourceVersion");
                        match said.pointer("/metadata/uid") {
                            Some(uid) => meta.insert("uid".into(), uid.clone()),
                            None => meta.remove("uid"),
                        };
                    }
                    line["requestObject"] = request;
                }
                line["responseObject"] = body;
            }
        }
        TraceEvent::ListServed(list) => {
            if let Some(o) = list.objects.first()
                && line.pointer("/responseObject/items").is_none()
                && let Some(body) = line.get("responseObject").and_then(|said| whole(o.revision, said))
            {
                line["responseObject"] = body;
            }
        }
        _ => {}
    }
}

/// Fills in a write's verb, URI, object reference and request body.
fn write_request(
    event: &mut Event,
    trace: &Trace,
    kinds: &Kinds,
    verb: Verb,
    key: &ObjectKey,
    uid: Option<&str>,
    by: &str,
) {
    set_user(event, trace, by);
    let kind = kinds.get_or_guess(&key.kind);
    let (verb_text, subresource) = match verb {
        Verb::Create => ("create", ""),
        Verb::Update => ("update", ""),
        Verb::UpdateStatus => ("update", "status"),
        Verb::Delete => ("delete", ""),
        Verb::Patch => ("patch", ""),
        Verb::PatchStatus => ("patch", "status"),
        // Reads are audited from `listServed`, never as writes; spelled as
        // Kubernetes spells them all the same.
        Verb::Get => ("get", ""),
        Verb::List => ("list", ""),
    };
    event.verb = verb_text.into();
    let name_in_path = if verb == Verb::Create { "" } else { key.name.as_str() };
    event.request_uri = path(&kind, &key.namespace, name_in_path, subresource);
    // The API server copies the request body's uid into the reference; a
    // create's body has none yet.
    let uid = if verb == Verb::Create { "" } else { uid.unwrap_or_default() };
    event.object_ref = Some(ObjectReference {
        resource: kind.resource.clone(),
        namespace: key.namespace.clone(),
        name: key.name.clone(),
        uid: uid.to_string(),
        api_group: kind.group.clone(),
        api_version: kind.version.clone(),
        subresource: subresource.to_string(),
        ..ObjectReference::default()
    });
    event.request_object = Some(if verb == Verb::Delete {
        Object { kind: "DeleteOptions".into(), api_version: "v1".into(), ..Object::default() }
    } else {
        Object {
            kind: key.kind.clone(),
            api_version: kind.api_version(),
            metadata: Some(Metadata { uid: uid.to_string(), ..object_meta(key, "") }),
            ..Object::default()
        }
    });
}

fn object_meta(key: &ObjectKey, uid: &str) -> Metadata {
    Metadata { name: key.name.clone(), namespace: key.namespace.clone(), uid: uid.to_string(), ..Metadata::default() }
}

fn failure(status: &Status) -> ResponseStatus {
    ResponseStatus {
        code: Some(status.code),
        status: "Failure".into(),
        reason: format!("{:?}", status.reason),
        message: status.message.clone(),
    }
}

/// Who made a read: the component, or the user at a console.
fn user_of_read(component: &str, purpose: ReadPurpose) -> &str {
    if purpose == ReadPurpose::Kubectl { "kubectl" } else { component }
}

/// Sets the user and user agent of a component (or of `kubectl`): node
/// agents authenticate as their node (`system:node:NODE`, group
/// `system:nodes`, as the Node authorizer requires), controllers as their
/// service account, the user as a cluster admin.
fn set_user(event: &mut Event, trace: &Trace, who: &str) {
    let role = trace.lane_named(who).map(|id| trace.lane(id).role);
    let (username, groups): (String, &[&str]) = match role {
        Some(LaneRole::NodeAgent { node }) => {
            (format!("system:node:{}", trace.lane(node).name), &["system:nodes", "system:authenticated"])
        }
        Some(LaneRole::Controller) => (
            format!("system:serviceaccount:kube-system:{who}"),
            &["system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"],
        ),
        _ => ("kubernetes-admin".to_string(), &["system:masters", "system:authenticated"]),
    };
    event.user = UserInfo { username, groups: groups.iter().map(|g| g.to_string()).collect() };
    event.user_agent = who.to_string();
}

/// A kind's place in the API.
/// A resource path: `/api/v1/namespaces/NS/pods/NAME/status`.
fn path(kind: &Kind, namespace: &str, name: &str, subresource: &str) -> String {
    let mut p = if kind.group.is_empty() {
        format!("/api/{}", kind.version)
    } else {
        format!("/apis/{}/{}", kind.group, kind.version)
    };
    if !namespace.is_empty() {
        p.push_str(&format!("/namespaces/{namespace}"));
    }
    p.push('/');
    p.push_str(&kind.resource);
    if !name.is_empty() {
        p.push('/');
        p.push_str(name);
        if !subresource.is_empty() {
            p.push('/');
            p.push_str(subresource);
        }
    }
    p
}

/// A read as the trace words it (`list Pods in default spec.nodeName=node-1
/// -l app=web resourceVersion="0" limit=500`), taken apart again. The
/// trace keeps a read's request only as this text.
#[derive(Debug, PartialEq, Eq)]
struct ReadRequest {
    verb: &'static str,
    kind: String,
    namespace: String,
    name: String,
    field_selector: String,
    label_selector: String,
    resource_version: Option<String>,
    version_match: Option<String>,
    limit: Option<String>,
    send_initial_events: bool,
}

impl ReadRequest {
    fn parse(text: &str) -> Result<ReadRequest, String> {
        let bad = || format!("cannot read the request {text:?}");
        let (verb, rest) = text.split_once(' ').ok_or_else(bad)?;
        let verb = match verb {
            "list" => "list",
            "get" => "get",
            "watch" => "watch",
            _ => return Err(bad()),
        };
        let rv_at = rest.find(" resourceVersion").ok_or_else(bad)?;
        let (what, params) = (&rest[..rv_at], rest[rv_at + 1..].to_string());
        let mut r = ReadRequest {
            verb,
            kind: String::new(),
            namespace: String::new(),
            name: String::new(),
            field_selector: String::new(),
            label_selector: String::new(),
            resource_version: None,
            version_match: None,
            limit: None,
            send_initial_events: false,
        };
        let (kind, selection) = what.split_once(' ').unwrap_or((what, ""));
        if verb == "get" {
            r.kind = kind.to_string();
            match selection.split_once('/') {
                Some((ns, name)) => (r.namespace, r.name) = (ns.to_string(), name.to_string()),
                None => r.name = selection.to_string(),
            }
        } else {
            r.kind = kind.strip_suffix('s').ok_or_else(bad)?.to_string();
            let mut selection = selection;
            if let Some(after) = selection.strip_prefix("in ") {
                let (ns, more) = after.split_once(' ').unwrap_or((after, ""));
                r.namespace = ns.to_string();
                selection = more;
            }
            let (fields, labels) = match selection.find("-l ") {
                Some(i) => (&selection[..i], &selection[i + 3..]),
                None => (selection, ""),
            };
            r.field_selector = fields.trim().to_string();
            r.label_selector = labels.trim().to_string();
        }
        let mut params = params.as_str();
        if let Some(after) = params.strip_prefix("resourceVersion unset") {
            params = after;
        } else if let Some(after) = params.strip_prefix("resourceVersion=\"") {
            let end = after.find('"').ok_or_else(bad)?;
            r.resource_version = Some(after[..end].to_string());
            params = &after[end + 1..];
        } else {
            return Err(bad());
        }
        for p in params.split(' ').filter(|p| !p.is_empty()) {
            match p.split_once('=') {
                Some(("resourceVersionMatch", m)) => r.version_match = Some(m.to_string()),
                Some(("limit", l)) => r.limit = Some(l.to_string()),
                Some(("sendInitialEvents", "true")) => r.send_initial_events = true,
                _ => return Err(bad()),
            }
        }
        Ok(r)
    }

    /// The request URI a client would have sent.
    fn uri(&self, kind: &Kind) -> String {
        let mut query: Vec<String> = Vec::new();
        if self.verb == "watch" {
            query.push("watch=true".into());
            query.push("allowWatchBookmarks=true".into());
            if self.send_initial_events {
                query.push("sendInitialEvents=true".into());
                // The API requires it with sendInitialEvents.
                if self.version_match.is_none() {
                    query.push("resourceVersionMatch=NotOlderThan".into());
                }
            }
        }
        if !self.field_selector.is_empty() {
            query.push(format!("fieldSelector={}", percent_encode(&self.field_selector)));
        }
        if !self.label_selector.is_empty() {
            query.push(format!("labelSelector={}", percent_encode(&self.label_selector)));
        }
        if let Some(l) = &self.limit {
            query.push(format!("limit={l}"));
        }
        // Unset is left out of the query, as clients leave it out.
        if let Some(rv) = &self.resource_version {
            query.push(format!("resourceVersion={rv}"));
        }
        if let Some(m) = &self.version_match {
            query.push(format!("resourceVersionMatch={m}"));
        }
        let path = path(kind, &self.namespace, &self.name, "");
        if query.is_empty() { path } else { format!("{path}?{}", query.join("&")) }
    }

    fn object_ref(&self, kind: &Kind) -> ObjectReference {
        ObjectReference {
            resource: kind.resource.clone(),
            namespace: self.namespace.clone(),
            name: self.name.clone(),
            api_group: kind.group.clone(),
            api_version: kind.version.clone(),
            ..ObjectReference::default()
        }
    }
}

/// A uuid-shaped audit ID derived from the run and the entry: unique per
/// request, the same on every run.
fn audit_id(trace: &Trace, entry: &Entry) -> String {
    let a = recon_trace::fnv1a(format!("{}/{}/{}", trace.scenario, trace.seed, entry.id).as_bytes());
    let b = recon_trace::fnv1a(&a.to_le_bytes());
    format!(
        "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xfff,
        0x8000 | ((b >> 48) & 0x3fff),
        b & 0xffff_ffff_ffff
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trace_words_of_a_read_become_its_request_uri() {
        let r = ReadRequest::parse("list Pods spec.nodeName=node-1 resourceVersion=\"0\"").unwrap();
        assert_eq!(
            r.uri(&Kinds::builtin().get_or_guess(&r.kind)),
            "/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-1&resourceVersion=0"
        );
        let r =
            ReadRequest::parse("list ReplicaSets in default -l app in (web) resourceVersion unset limit=500").unwrap();
        assert_eq!(
            r.uri(&Kinds::builtin().get_or_guess(&r.kind)),
            "/apis/apps/v1/namespaces/default/replicasets?labelSelector=app%20in%20%28web%29&limit=500"
        );
        let r = ReadRequest::parse("get Lease kube-system/replicaset-controller resourceVersion unset").unwrap();
        assert_eq!(
            r.uri(&Kinds::builtin().get_or_guess(&r.kind)),
            "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/replicaset-controller"
        );
        let r =
            ReadRequest::parse("watch Pods spec.nodeName=node-1 resourceVersion unset sendInitialEvents=true").unwrap();
        assert_eq!(
            r.uri(&Kinds::builtin().get_or_guess(&r.kind)),
            "/api/v1/pods?watch=true&allowWatchBookmarks=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&fieldSelector=spec.nodeName%3Dnode-1"
        );
        assert!(ReadRequest::parse("delete everything").is_err());
        assert!(ReadRequest::parse("list Pods resourceVersion=\"0\" colour=blue").is_err());
    }
}
