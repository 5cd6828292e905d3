//! The judge: reads merged audit events one at a time, rebuilds the write
//! history, follows what each client has written and observed, and finds
//! the stale reads, what acted on them, and the writes decided on
//! superseded versions. The rules, and the documentation each follows,
//! are listed in `tests/README.md` beside the tests that pin them.
//!
//! A client is `user.username` with `userAgent`: the same controller after
//! a restart is the same client, and what it had written or observed
//! before its restart still counts (its memory is gone; what it did on it
//! is not), as the simulator's time-travel check counts it.
//!
//! Memory grows with the cluster, not with the logs: per client a few
//! revisions and its open stale views, per object a few versions (see
//! [`crate::history`]), and the findings themselves.

use std::collections::{BTreeMap, VecDeque};

use crate::event::{Event, Stage};
use crate::history::{At, Change, History, ObjectId, Resource, Version};
use crate::input::{LogFile, MergedLogs, Problems, ReadOptions, Record};
use crate::report::{
    ActedOn, CannotJudge, Client, ClientSummary, Finding, FindingKind, InputSummary, Location, Report, ResourceWrites,
    Step, Unjudged,
};
use crate::time::{self, Micros};
use crate::uri::{ReadMode, RequestUri};

/// Accepted writes listed under a finding as acted on; the rest are counted.
pub const ACTED_ON_LISTED: usize = 10;

/// Refused writes listed under a finding as acted on (a `404` on a delete
/// of something already gone, a `409` on a stale version); the rest are counted.
pub const REFUSED_LISTED: usize = 5;

/// Objects listed per stale read as shown out of date.
const SHOWN_LISTED: usize = 10;

/// Revisions remembered per client (and for the cluster), as (time,
/// revision) each time the highest grows: enough to ask "what did it know
/// when this request arrived" for requests that overlap a little.
const KNOWN_KEPT: usize = 32;

/// Why a node agent shown a gone pod is taken to have acted on it.
const NODE_AGENT_ACTS: &str = "Acted on: a kubelet runs the pods its list shows on its node; container starts are not audited, and no write about the pod followed in these logs.";

/// The same, when a write about the pod followed.
const NODE_AGENT_ACTED: &str =
    "Acted on: a kubelet runs the pods its list shows on its node; its write about the pod, above, shows it did.";

/// How often [`analyze`] reports progress, in events.
pub const PROGRESS_EVERY: u64 = 100_000;

/// Progress through the logs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    /// Events read so far.
    pub events: u64,
    /// Bytes of log text read so far.
    pub bytes: u64,
}

/// Reads, merges and judges the logs; `progress` is called every
/// [`PROGRESS_EVERY`] events.
pub fn analyze(files: &[LogFile], options: &ReadOptions, mut progress: impl FnMut(Progress)) -> Report {
    let mut logs = MergedLogs::open(files, options);
    let mut analysis = Analysis::new(files);
    while let Some(record) = logs.next() {
        analysis.feed(&record);
        if logs.events.is_multiple_of(PROGRESS_EVERY) {
            progress(Progress { events: logs.events, bytes: logs.bytes_read() });
        }
    }
    analysis.finish(logs.problems)
}

/// How a client came to know a revision.
#[derive(Clone, Debug)]
enum Sight {
    /// It wrote it.
    Wrote { write: String },
    /// A read returned it.
    Read { read: String },
    /// It named it in a request (a read's or a watch's `resourceVersion`, a write's precondition).
    Named { request: String },
}

/// A revision a client had reached, how, and where.
#[derive(Clone, Debug)]
struct Known {
    revision: u64,
    time: Micros,
    sight: Sight,
    /// Where the event is (its file gives the API server).
    at: At,
}

/// A finding whose client may still act on what it read.
#[derive(Clone, Debug)]
struct OpenView {
    finding: usize,
    /// The revision its view must reach to be caught up.
    needed: u64,
    server: usize,
    resource: Resource,
    /// For a node agent shown gone pods: the pods' names (only writes
    /// about them are followed).
    pods: Option<Vec<ObjectId>>,
}

/// An object a list showed out of date, and whether it was gone (deleted,
/// being deleted, or its name taken by a new incarnation) rather than
/// merely changed.
struct Shown {
    step: Step,
    gone: bool,
}

/// What the analysis keeps per client.
#[derive(Clone, Debug, Default)]
struct ClientState {
    client: Client,
    knows: VecDeque<Known>,
    reads: u64,
    writes: u64,
    behind_unchanged: u64,
    /// Stale views it may still act on (a stale read, a node agent's relist).
    open: Vec<OpenView>,
    /// Its pod lists so far (to tell a relist from a first list).
    pod_lists: u64,
}

impl ClientState {
    /// The highest revision it had reached before `time`.
    fn known_before(&self, time: Micros) -> Option<&Known> {
        self.knows.iter().rev().find(|k| k.time < time)
    }

    fn learn(&mut self, k: Known) {
        if self.knows.back().is_some_and(|last| last.revision >= k.revision) {
            return;
        }
        self.knows.push_back(k);
        if self.knows.len() > KNOWN_KEPT {
            self.knows.pop_front();
        }
    }

    /// The node a node agent runs on: kubelets authenticate as
    /// `system:node:NODE` (the Node authorizer's convention).
    fn node(&self) -> Option<&str> {
        self.client.username.strip_prefix("system:node:").filter(|n| !n.is_empty())
    }
}

/// The state of an analysis in progress.
pub struct Analysis {
    servers: Vec<String>,
    files: Vec<String>,
    per_file: Vec<u64>,
    events: u64,
    first: Option<Micros>,
    last: Option<Micros>,
    clients: Vec<ClientState>,
    /// Clients by user name, then user agent.
    by_name: BTreeMap<String, BTreeMap<String, usize>>,
    history: History,
    writes: u64,
    /// The highest revision in the logs, each time it grew.
    cluster: VecDeque<(Micros, u64)>,
    findings: Vec<Finding>,
    /// Stale writes already reported, by (client, object): repeats are counted.
    stale_writes: BTreeMap<(usize, ObjectId), usize>,
    unjudged: BTreeMap<Unjudged, (u64, Location)>,
}

impl Analysis {
    /// An analysis of these files (their order is the inputs' order).
    pub fn new(files: &[LogFile]) -> Analysis {
        Analysis {
            servers: files.iter().map(|f| f.server.clone()).collect(),
            files: files.iter().map(|f| f.path.display().to_string()).collect(),
            per_file: vec![0; files.len()],
            events: 0,
            first: None,
            last: None,
            clients: Vec::new(),
            by_name: BTreeMap::new(),
            history: History::default(),
            writes: 0,
            cluster: VecDeque::new(),
            findings: Vec::new(),
            stale_writes: BTreeMap::new(),
            unjudged: BTreeMap::new(),
        }
    }

    /// The findings so far (a finding is made at the event that shows it;
    /// what it acted on grows as later events come).
    pub fn findings(&self) -> &[Finding] {
        &self.findings
    }

    /// Takes the next event (in `stageTimestamp` order across the logs).
    pub fn feed(&mut self, r: &Record) {
        self.events += 1;
        if let Some(n) = self.per_file.get_mut(r.source) {
            *n += 1;
        }
        self.first = Some(self.first.map_or(r.at, |f| f.min(r.at)));
        self.last = Some(self.last.map_or(r.at, |l| l.max(r.at)));
        let e = &r.event;
        let Ok(uri) = RequestUri::parse(&e.request_uri) else { return };
        if Resource::new(&uri.group, &uri.resource).has_own_revisions() {
            return self.cannot(Unjudged::SeparateRevisions, r);
        }
        match e.stage() {
            Some(Stage::ResponseComplete) => {}
            Some(Stage::ResponseStarted) => {
                if e.verb == "watch" {
                    self.watch(r, &uri);
                }
                return;
            }
            // The outcome is in the same request's ResponseComplete event.
            Some(Stage::RequestReceived) => return,
            Some(Stage::Panic) => return self.cannot(Unjudged::Panics, r),
            None => return self.cannot(Unjudged::UnknownStages, r),
        }
        if e.truncated() {
            self.cannot(Unjudged::TruncatedEvents, r);
        }
        match e.verb.as_str() {
            "get" | "list" if uri.subresource.is_empty() => self.read(r, &uri),
            "watch" => self.watch(r, &uri),
            "create" | "update" | "patch" | "delete" => self.write(r, &uri),
            "deletecollection" => self.cannot(Unjudged::DeleteCollections, r),
            _ => {}
        }
    }

    // ---- reads ----

    fn read(&mut self, r: &Record, uri: &RequestUri) {
        let e = &r.event;
        if !e.code().is_some_and(|c| (200..300).contains(&c)) {
            return;
        }
        let c = self.client(e);
        self.clients[c].reads += 1;
        let resource = Resource::new(&uri.group, &uri.resource);
        let mode = uri.read_mode(&e.verb);
        let Some(meta) = e.response_object.as_ref().and_then(|o| o.metadata.as_ref()) else {
            return self.cannot(Unjudged::ReadsWithoutRevision, r);
        };
        let Ok(served) = meta.resource_version.parse::<u64>() else {
            let reason = if meta.resource_version.is_empty() {
                Unjudged::ReadsWithoutRevision
            } else {
                Unjudged::NonNumericRevisions
            };
            return self.cannot(reason, r);
        };
        let knew = self.clients[c].known_before(r.received).cloned();
        let cluster = self.cluster_before(r.received);
        if e.verb == "list" {
            self.judge_list(r, uri, c, &resource, &mode, served, knew.as_ref(), cluster);
            if self.clients[c].node().is_some() && resource == Resource::new("", "pods") {
                let items = e.response_object.as_ref().and_then(|o| o.items.as_deref()).unwrap_or(&[]);
                self.judge_node_agent_list(r, uri, c, served, items, knew.as_ref());
            }
        } else {
            self.judge_get(r, uri, c, &resource, &mode, served, knew.as_ref(), cluster);
        }
        // Catch-up: a read that may be served from a cache, answered at or
        // past what a stale view needed, shows that server's cache of the
        // resource had caught up (a watch from it delivers from that cache).
        if mode.may_be_stale() && e.verb == "list" {
            self.caught_up_by_cache(r, &resource, served);
        }
        self.close_views_of(c, &resource, served, r, || {
            format!("its {} was answered at revision {served}", read_words(e, uri))
        });
        self.learn(c, r, served, |a| Sight::Read { read: format!("{} from {}", read_words(e, uri), a.server(r)) });
    }

    #[allow(clippy::too_many_arguments)] // one judgement, its facts passed as they are
    fn judge_list(
        &mut self,
        r: &Record,
        uri: &RequestUri,
        c: usize,
        resource: &Resource,
        mode: &ReadMode,
        served: u64,
        knew: Option<&Known>,
        cluster: u64,
    ) {
        let e = &r.event;
        let behind_client = knew.filter(|k| {
            k.revision > served && !matches!(mode, ReadMode::Exact(_) | ReadMode::Continue | ReadMode::Invalid)
        });
        // A read that must be the most recent state, answered below a write
        // that had completed before it arrived: a consistency failure.
        let (missed, complete) = self.history.writes_after(resource, &uri.namespace, None, served, r.received);
        // A read that had to be the most recent state is only held to the
        // writes its own API server logged before it: the same clock, so
        // "before" is certain (another server's clock may be skewed).
        let quorum_behind = mode.must_be_current()
            && self.history.writes_after(resource, &uri.namespace, Some(r.source), served, r.received).0 > 0;
        let items = e.response_object.as_ref().and_then(|o| o.items.as_deref()).unwrap_or(&[]);
        let shown = self.shown_out_of_date(resource, &uri.namespace, items, r);
        // A list that may be served from a cache, shown objects that had
        // already been deleted or replaced: a controller that acts on it
        // acts on objects that are gone, as #59848's kubelet does (node
        // agents have their own judgement of pods, below).
        let shows_gone = !mode.must_be_current()
            && served < cluster
            && self.clients[c].node().is_none()
            && shown.iter().any(|s| s.gone);
        if behind_client.is_none() && !quorum_behind && !shows_gone {
            return;
        }
        let audited = self.history.audits(resource);
        if shown.is_empty() && missed == 0 && audited {
            self.clients[c].behind_unchanged += 1;
            return;
        }
        let client = self.clients[c].client.clone();
        let server = self.server(r).to_string();
        let mut steps = Vec::new();
        if let Some(k) = behind_client {
            steps.push(self.known_step(&client, k));
        }
        let behind_cluster = cluster.saturating_sub(served);
        let since = self.history.first_after(served).filter(|(_, w)| w.time < r.received).map(|(rev, w)| (rev, w.time));
        let staleness = match since {
            Some((rev, t)) => format!(
                "; that state had been out of date for {} (since revision {rev}, at {})",
                time::format_duration(r.received - t),
                time::format_short(t)
            ),
            None => String::new(),
        };
        let against = match behind_client {
            Some(k) => format!(
                "{} revision(s) behind what this client had already {} (revision {}), ",
                k.revision - served,
                match k.sight {
                    Sight::Wrote { .. } => "written",
                    _ => "observed",
                },
                k.revision
            ),
            None if quorum_behind => "though it had to be the most recent state, ".to_string(),
            None => "showing objects already gone, ".to_string(),
        };
        steps.push(Step {
            time: time::format_short(r.at),
            text: format!(
                "{} sends {} ({mode}) to {server}, which answers at revision {served}: {against}{behind_cluster} behind the latest revision in the logs ({cluster}){staleness}",
                client.username,
                read_words(e, uri),
            ),
            location: Some(self.location(r)),
        });
        for s in shown.iter().take(SHOWN_LISTED) {
            steps.push(s.step.clone());
        }
        if shown.len() > SHOWN_LISTED {
            steps.push(Step {
                time: time::format_short(r.at),
                text: format!("… and {} more such objects", shown.len() - SHOWN_LISTED),
                location: None,
            });
        }
        let scope = if uri.namespace.is_empty() { String::new() } else { format!(" in namespace {}", uri.namespace) };
        let selected = if uri.query.field_selector.is_empty() && uri.query.label_selector.is_empty() {
            ""
        } else {
            " (some may not match its selector)"
        };
        let missed_text = if !audited {
            format!("no write to {resource} in these logs carries its revision, so what the list missed cannot be told")
        } else if missed > 0 {
            format!(
                "{}{missed} audited write(s) to {resource}{scope} after revision {served} had completed before this list arrived{selected}",
                if complete { "" } else { "at least " }
            )
        } else {
            format!("no audited write to {resource}{scope} after revision {served} came before it")
        };
        steps.push(Step { time: time::format_short(r.at), text: missed_text, location: None });
        let headline = format!(
            "{} listed {resource} from {server} at revision {served}, {}",
            client,
            match behind_client {
                Some(k) => format!(
                    "{} behind revision {} it had already {}",
                    k.revision - served,
                    k.revision,
                    match k.sight {
                        Sight::Wrote { .. } => "written",
                        _ => "observed",
                    }
                ),
                None if quorum_behind => {
                    "below writes that had completed before a read that had to be the most recent".to_string()
                }
                None => format!(
                    "{} behind the latest revision in the logs ({cluster}), showing objects that had already been deleted or replaced",
                    cluster - served
                ),
            }
        );
        let needed = behind_client.map_or(cluster, |k| k.revision);
        self.add_finding(
            c,
            Finding {
                kind: FindingKind::StaleRead,
                client,
                headline,
                location: self.location(r),
                steps,
                served_revision: Some(served),
                client_revision: behind_client.map(|k| k.revision),
                cluster_revision: Some(cluster),
                times: 1,
                acted_on: Vec::new(),
                acted_on_more: 0,
                acted: false,
                acted_because: None,
                caught_up: None,
            },
            OpenView { finding: 0, needed, server: r.source, resource: resource.clone(), pods: None },
        );
    }

    #[allow(clippy::too_many_arguments)] // one judgement, its facts passed as they are
    fn judge_get(
        &mut self,
        r: &Record,
        uri: &RequestUri,
        c: usize,
        resource: &Resource,
        mode: &ReadMode,
        object_revision: u64,
        knew: Option<&Known>,
        cluster: u64,
    ) {
        // A get's response carries the object's own version, not the
        // revision it was read at: it is behind only if a newer version of
        // this object had been committed that the client must have seen
        // (at or below a revision it knew), or, for a most-recent read, any
        // newer version committed before it arrived.
        let id = ObjectId { resource: resource.clone(), namespace: uri.namespace.clone(), name: uri.name.clone() };
        let Some(h) = self.history.object(&id) else { return };
        let limit = match (knew, mode.must_be_current()) {
            (_, true) => u64::MAX,
            (Some(k), false) if mode.may_be_stale() => k.revision,
            _ => return,
        };
        let Some(newer) = h.after(object_revision, r.received).filter(|v| v.revision <= limit).last().cloned() else {
            return;
        };
        let client = self.clients[c].client.clone();
        let server = self.server(r).to_string();
        let mut steps = Vec::new();
        if let Some(k) = knew.filter(|_| !mode.must_be_current()) {
            steps.push(self.known_step(&client, k));
        }
        steps.push(self.version_step(&id, &newer));
        steps.push(Step {
            time: time::format_short(r.at),
            text: format!(
                "{} sends {} ({mode}) to {server}, which answers with its version at revision {object_revision}, older than revision {}",
                client.username,
                read_words(&r.event, uri),
                newer.revision
            ),
            location: Some(self.location(r)),
        });
        let headline = format!(
            "{client} read {id} from {server} at its version {object_revision}, after revision {} had replaced it",
            newer.revision
        );
        let needed = knew.map_or(newer.revision, |k| k.revision.max(newer.revision));
        self.add_finding(
            c,
            Finding {
                kind: FindingKind::StaleRead,
                client,
                headline,
                location: self.location(r),
                steps,
                served_revision: Some(object_revision),
                client_revision: knew.map(|k| k.revision),
                cluster_revision: Some(cluster),
                times: 1,
                acted_on: Vec::new(),
                acted_on_more: 0,
                acted: false,
                acted_because: None,
                caught_up: None,
            },
            OpenView { finding: 0, needed, server: r.source, resource: resource.clone(), pods: None },
        );
    }

    /// Kubernetes issue #59848: a node agent lists the pods of its node and
    /// is shown one that had already been deleted, or whose name now
    /// belongs to a new incarnation. A kubelet runs the pods its list
    /// shows, so it starts (or keeps) a container for it; that start is not
    /// in the audit log, the list is.
    fn judge_node_agent_list(
        &mut self,
        r: &Record,
        uri: &RequestUri,
        c: usize,
        served: u64,
        items: &[crate::event::Item],
        knew: Option<&Known>,
    ) {
        let Some(node) = self.clients[c].node().map(str::to_string) else { return };
        let selected_node = uri.query.node_name().map(str::to_string);
        let pods = Resource::new("", "pods");
        let mut gone = Vec::new();
        for item in items {
            let on_node =
                item.spec.as_ref().is_some_and(|s| s.node_name == node) || selected_node.as_deref() == Some(&node);
            // A pod shown already terminating is one the kubelet stops, not starts.
            if !on_node || !item.metadata.deletion_timestamp.is_empty() {
                continue;
            }
            let namespace = if item.metadata.namespace.is_empty() {
                uri.namespace.clone()
            } else {
                item.metadata.namespace.clone()
            };
            let id = ObjectId { resource: pods.clone(), namespace, name: item.metadata.name.clone() };
            let Some(h) = self.history.object(&id) else { continue };
            let Some(now) = h.as_of(r.received) else { continue };
            let replaced = now.uid != item.metadata.uid;
            let ended = now.uid == item.metadata.uid && matches!(now.change, Change::Deleted | Change::Terminating);
            if replaced || ended {
                gone.push((id, item.metadata.uid.clone(), item.metadata.resource_version.clone()));
            }
        }
        self.clients[c].pod_lists += 1;
        if gone.is_empty() {
            return;
        }
        let client = self.clients[c].client.clone();
        let server = self.server(r).to_string();
        let mut steps = Vec::new();
        for (id, uid, _) in &gone {
            if let Some(h) = self.history.object(id) {
                let ends: Vec<Version> = h
                    .after(0, r.received)
                    .filter(|v| {
                        (v.uid == *uid && matches!(v.change, Change::Terminating | Change::Deleted))
                            || (v.uid != *uid && v.change == Change::Created)
                    })
                    .cloned()
                    .collect();
                for v in ends {
                    steps.push(self.version_step(id, &v));
                }
            }
        }
        let relist = if self.clients[c].pod_lists > 1 {
            "lists its node's pods again (after a restart, or a broken watch)"
        } else {
            "lists its node's pods (its first list in these logs)"
        };
        let behind = knew.filter(|k| k.revision > served).map_or(String::new(), |k| {
            format!(
                ", below revision {} it had already {}",
                k.revision,
                match k.sight {
                    Sight::Wrote { .. } => "written",
                    _ => "observed",
                }
            )
        });
        steps.push(Step {
            time: time::format_short(r.at),
            text: format!(
                "{} {relist}: {} to {server}, answered at revision {served}{behind}",
                client.username,
                read_words(&r.event, uri)
            ),
            location: Some(self.location(r)),
        });
        let names: Vec<String> = gone
            .iter()
            .map(|(id, uid, rv)| {
                let rv = if rv.is_empty() { String::new() } else { format!(" at revision {rv}") };
                format!("pod {}/{} (uid {}){rv}", id.namespace, id.name, short_uid(uid))
            })
            .collect();
        let fates: Vec<String> = gone.iter().map(|(id, uid, _)| self.fate(id, uid, r.received)).collect();
        steps.push(Step {
            time: time::format_short(r.at),
            text: format!(
                "the list shows {} on {node} as if it were still to run there; a kubelet starts the containers of the pods its list shows, so {node} may run it beside its replacement",
                names.join(", ")
            ),
            location: None,
        });
        let headline = format!(
            "{client} was shown {} on {node} by {server} (a list at revision {served}), though it had been {}",
            names.join(", "),
            fates.join("; ")
        );
        let pods_followed = gone.iter().map(|(id, _, _)| id.clone()).collect();
        self.add_finding(
            c,
            Finding {
                kind: FindingKind::NodeAgentShownGonePod,
                client,
                headline,
                location: self.location(r),
                steps,
                served_revision: Some(served),
                client_revision: knew.map(|k| k.revision),
                cluster_revision: Some(self.cluster_before(r.received)),
                times: 1,
                acted_on: Vec::new(),
                acted_on_more: 0,
                acted: true,
                acted_because: Some(NODE_AGENT_ACTS.to_string()),
                caught_up: None,
            },
            OpenView {
                finding: 0,
                needed: self.cluster_before(r.received),
                server: r.source,
                resource: pods,
                pods: Some(pods_followed),
            },
        );
    }

    /// What had become of an incarnation by `before`: its deletion, and
    /// the incarnation that took its name.
    fn fate(&self, id: &ObjectId, uid: &str, before: Micros) -> String {
        let Some(h) = self.history.object(id) else { return "changed".to_string() };
        let mut parts = Vec::new();
        let versions: Vec<&Version> = h.after(0, before).collect();
        if let Some(v) = versions.iter().find(|v| v.uid == uid && v.change == Change::Deleted) {
            parts.push(format!("deleted at revision {} (by {})", v.revision, self.clients[v.by].client.username));
        } else if let Some(v) = versions.iter().find(|v| v.uid == uid && v.change == Change::Terminating) {
            parts.push(format!(
                "marked for deletion at revision {} (by {})",
                v.revision, self.clients[v.by].client.username
            ));
        }
        if let Some(v) = versions.iter().find(|v| v.uid != uid && v.change == Change::Created) {
            parts.push(format!("recreated as uid {} at revision {}", short_uid(&v.uid), v.revision));
        }
        if parts.is_empty() { "replaced".to_string() } else { parts.join(", then ") }
    }

    /// Objects a list shows at a version that had been replaced before the
    /// list arrived: changed, deleted, or recreated under the same name.
    fn shown_out_of_date(
        &self,
        resource: &Resource,
        namespace: &str,
        items: &[crate::event::Item],
        r: &Record,
    ) -> Vec<Shown> {
        let before = r.received;
        let mut steps = Vec::new();
        for item in items {
            let Ok(shown) = item.metadata.resource_version.parse::<u64>() else { continue };
            let ns = if item.metadata.namespace.is_empty() {
                namespace.to_string()
            } else {
                item.metadata.namespace.clone()
            };
            let id = ObjectId { resource: resource.clone(), namespace: ns, name: item.metadata.name.clone() };
            let Some(h) = self.history.object(&id) else { continue };
            let Some(now) = h.as_of(before) else { continue };
            if now.revision <= shown {
                continue;
            }
            let uid = &item.metadata.uid;
            let gone =
                (now.uid != *uid && !uid.is_empty()) || matches!(now.change, Change::Deleted | Change::Terminating);
            let what = if now.uid != *uid && !uid.is_empty() {
                let end = h.after(shown, before).find(|v| v.uid == *uid && matches!(v.change, Change::Deleted));
                let end = end.map_or(String::new(), |v| {
                    format!("deleted at revision {} ({}), ", v.revision, time::format_short(v.at.time))
                });
                format!("{end}its name now belongs to uid {} (revision {})", short_uid(&now.uid), now.revision)
            } else {
                match now.change {
                    Change::Deleted => format!(
                        "deleted at revision {} ({}, by {})",
                        now.revision,
                        time::format_short(now.at.time),
                        self.clients[now.by].client.username
                    ),
                    Change::Terminating => {
                        format!("being deleted since revision {} ({})", now.revision, time::format_short(now.at.time))
                    }
                    _ => format!(
                        "changed since, at revision {} ({}, by {})",
                        now.revision,
                        time::format_short(now.at.time),
                        self.clients[now.by].client.username
                    ),
                }
            };
            let step = Step {
                time: time::format_short(r.at),
                text: format!("it still shows {id} (uid {}) at revision {shown}: {what}", short_uid(uid)),
                location: None,
            };
            steps.push(Shown { step, gone });
        }
        steps
    }

    // ---- watches ----

    fn watch(&mut self, r: &Record, uri: &RequestUri) {
        self.cannot(Unjudged::Watches, r);
        let c = self.client(&r.event);
        // A watch from revision N means its client had reached N.
        if let Some(n) = uri.query.resource_version.as_deref().and_then(|v| v.parse::<u64>().ok()).filter(|n| *n > 0) {
            let resource = Resource::new(&uri.group, &uri.resource);
            self.close_views_of(c, &resource, n, r, || {
                format!("it watches {resource} from revision {n}, so its view had reached it")
            });
            self.learn(c, r, n, |_| Sight::Named { request: format!("watch {resource} resourceVersion={n}") });
        }
    }

    // ---- writes ----

    fn write(&mut self, r: &Record, uri: &RequestUri) {
        let e = &r.event;
        let c = self.client(e);
        self.clients[c].writes += 1;
        let resource = Resource::new(&uri.group, &uri.resource);
        let response = e.response_object.as_ref().and_then(|o| o.metadata.as_ref());
        let object_ref = e.object_ref.as_ref();
        let name =
            [uri.name.as_str(), object_ref.map_or("", |o| o.name.as_str()), response.map_or("", |m| m.name.as_str())]
                .into_iter()
                .find(|n| !n.is_empty())
                .unwrap_or_default()
                .to_string();
        let namespace = if uri.namespace.is_empty() {
            response.map_or(String::new(), |m| m.namespace.clone())
        } else {
            uri.namespace.clone()
        };
        let id = ObjectId { resource: resource.clone(), namespace, name };
        let words = write_words(e, &id, uri);
        // The version and incarnation the client decided on: an update's
        // body metadata (the API server copies it into objectRef), or a
        // delete's preconditions.
        let request_meta = e.request_object.as_ref().and_then(|o| o.metadata.as_ref());
        let preconditions = e.request_object.as_ref().and_then(|o| o.preconditions.as_ref());
        let precondition_text = [
            object_ref.map(|o| o.resource_version.as_str()),
            request_meta.map(|m| m.resource_version.as_str()),
            preconditions.and_then(|p| p.resource_version.as_deref()),
        ]
        .into_iter()
        .flatten()
        .find(|v| !v.is_empty());
        let precondition = precondition_text.and_then(|v| v.parse::<u64>().ok());
        if precondition_text.is_some() && precondition.is_none() {
            self.cannot(Unjudged::NonNumericRevisions, r);
        }
        let uid = [
            object_ref.map(|o| o.uid.as_str()),
            request_meta.map(|m| m.uid.as_str()),
            preconditions.and_then(|p| p.uid.as_deref()),
        ]
        .into_iter()
        .flatten()
        .find(|v| !v.is_empty())
        .map(str::to_string);
        if let Some(p) = precondition.filter(|p| *p > 0) {
            self.learn(c, r, p, |_| Sight::Named { request: format!("{words} if at revision {p}") });
        }
        if e.verb != "create" {
            self.judge_write_decision(r, c, &id, &words, precondition, uid.as_deref());
        }
        let code = e.code();
        let ok = code.is_some_and(|c| (200..300).contains(&c));
        let committed = response.and_then(|m| m.resource_version.parse::<u64>().ok()).filter(|_| ok);
        // What the client does while its view is stale is what it acted on.
        self.follow_views(r, c, &id, &resource, &words, precondition, committed);
        if !ok {
            return;
        }
        let Some(revision) = committed else {
            let reason = match response.map(|m| m.resource_version.as_str()) {
                Some(v) if !v.is_empty() => Unjudged::NonNumericRevisions,
                _ => Unjudged::WritesWithoutRevision,
            };
            return self.cannot(reason, r);
        };
        let in_stale_view = !self.clients[c].open.is_empty();
        if precondition.is_none() && uid.is_none() && e.verb != "create" && !resource.is_bookkeeping() && !in_stale_view
        {
            self.cannot(Unjudged::UnconditionalWrites, r);
        }
        let change = match e.verb.as_str() {
            "create" if uri.subresource.is_empty() => Change::Created,
            "delete" => {
                let m = response.cloned().unwrap_or_default();
                let is_status = e.response_object.as_ref().is_some_and(|o| o.kind == "Status");
                let still_there = code == Some(202)
                    || m.deletion_grace_period_seconds.is_some_and(|g| g > 0)
                    || !m.finalizers.is_empty();
                if still_there && !is_status { Change::Terminating } else { Change::Deleted }
            }
            _ => Change::Updated,
        };
        let object_uid = response.map(|m| m.uid.clone()).filter(|u| !u.is_empty()).or(uid).unwrap_or_default();
        self.writes += 1;
        let at = At { source: r.source, line: r.line, time: r.at };
        self.history.record(&id, Version { revision, uid: object_uid, change, by: c, server: r.source, at });
        self.learn(c, r, revision, |a| Sight::Wrote { write: format!("{words} via {}", a.server(r)) });
    }

    /// A write decided on a version its object no longer had: its
    /// `resourceVersion` precondition is below the object's current
    /// revision, or its uid names an incarnation that is gone. Repeats by
    /// the same client on the same object are one finding.
    fn judge_write_decision(
        &mut self,
        r: &Record,
        c: usize,
        id: &ObjectId,
        words: &str,
        precondition: Option<u64>,
        uid: Option<&str>,
    ) {
        let Some(now) = self.history.object(id).and_then(|h| h.as_of(r.received)).cloned() else { return };
        let superseded = precondition.is_some_and(|p| p > 0 && now.revision > p);
        let replaced = uid.is_some_and(|u| u != now.uid || now.change == Change::Deleted);
        if !superseded && !replaced {
            return;
        }
        let code = r.event.code();
        let accepted = code.is_some_and(|c| (200..300).contains(&c));
        if let Some(&f) = self.stale_writes.get(&(c, id.clone())) {
            let finding = &mut self.findings[f];
            finding.times += 1;
            finding.acted |= accepted;
            return;
        }
        let client = self.clients[c].client.clone();
        let decided = match (superseded, precondition, uid) {
            (true, Some(p), _) => format!("its version at revision {p}"),
            (_, _, Some(u)) => format!("incarnation uid {}", short_uid(u)),
            _ => "an older version".to_string(),
        };
        let outcome = match code {
            Some(c) if (200..300).contains(&c) => {
                format!("accepted ({c}): a write applied on a decision made from a replaced version")
            }
            Some(409) => "refused with 409 Conflict: the precondition caught it".to_string(),
            Some(c) => format!("refused ({c})"),
            None => "no response code".to_string(),
        };
        let steps = vec![
            self.version_step(id, &now),
            Step {
                time: time::format_short(r.at),
                text: format!("{} via {}: {words}, decided on {decided}: {outcome}", client.username, self.server(r)),
                location: Some(self.location(r)),
            },
        ];
        let headline = format!("{client} wrote {id} on {decided}, after revision {} had replaced it", now.revision);
        let f = self.findings.len();
        self.findings.push(Finding {
            kind: FindingKind::StaleWrite,
            client,
            headline,
            location: self.location(r),
            steps,
            served_revision: None,
            client_revision: precondition,
            cluster_revision: Some(self.cluster_before(r.received)),
            times: 1,
            acted_on: Vec::new(),
            acted_on_more: 0,
            acted: accepted,
            acted_because: None,
            caught_up: None,
        });
        self.stale_writes.insert((c, id.clone()), f);
    }

    /// Records a write of `c` under each stale view it has open, or closes
    /// a view the write shows has caught up (it names a version at or past
    /// what the view needed).
    #[allow(clippy::too_many_arguments)] // the write's facts, as they are
    fn follow_views(
        &mut self,
        r: &Record,
        c: usize,
        id: &ObjectId,
        resource: &Resource,
        words: &str,
        precondition: Option<u64>,
        committed: Option<u64>,
    ) {
        if self.clients[c].open.is_empty() || resource.is_bookkeeping() {
            return;
        }
        if let Some(p) = precondition {
            self.close_views_of(c, resource, p, r, || {
                format!("it wrote {id} naming revision {p}, so its view had reached it")
            });
        }
        let location = self.location(r);
        let acted = ActedOn { location, write: words.to_string(), code: r.event.code(), revision: committed };
        for view in &self.clients[c].open {
            if view.pods.as_ref().is_some_and(|pods| !pods.contains(id)) {
                continue;
            }
            let f = &mut self.findings[view.finding];
            let accepted = |a: &ActedOn| a.code.is_some_and(|c| (200..300).contains(&c));
            let (limit, listed) = if accepted(&acted) {
                (ACTED_ON_LISTED, f.acted_on.iter().filter(|a| accepted(a)).count())
            } else {
                (REFUSED_LISTED, f.acted_on.iter().filter(|a| !accepted(a)).count())
            };
            if listed < limit {
                f.acted_on.push(acted.clone());
            } else {
                f.acted_on_more += 1;
            }
            // A refused write (a precondition's 409, say) changed nothing:
            // listed, but the read counts as acted on only once a write
            // after it took effect.
            f.acted |= accepted(&acted);
            if f.kind == FindingKind::NodeAgentShownGonePod {
                f.acted_because = Some(NODE_AGENT_ACTED.to_string());
            }
        }
    }

    // ---- views ----

    fn add_finding(&mut self, c: usize, finding: Finding, mut view: OpenView) {
        let f = self.findings.len();
        self.findings.push(finding);
        view.finding = f;
        // A new stale read of a resource replaces the client's earlier
        // stale view of it: what it does next is decided on the newer one.
        let kind = self.findings[f].kind;
        let findings = &self.findings;
        self.clients[c].open.retain(|v| findings[v.finding].kind != kind || v.resource != view.resource);
        self.clients[c].open.push(view);
    }

    /// Closes the stale views of client `c` on `resource` that `revision`
    /// catches up: informers are per resource, so only news of the same
    /// resource shows that view has caught up.
    fn close_views_of(
        &mut self,
        c: usize,
        resource: &Resource,
        revision: u64,
        r: &Record,
        why: impl FnOnce() -> String,
    ) {
        if !self.clients[c].open.iter().any(|v| &v.resource == resource && v.needed <= revision) {
            return;
        }
        let here = self.location(r);
        let step = Step { time: time::format_short(r.at), text: why(), location: Some(here.clone()) };
        let findings = &mut self.findings;
        self.clients[c].open.retain(|v| {
            let opened_here =
                findings[v.finding].location.file == here.file && findings[v.finding].location.line == here.line;
            if &v.resource != resource || revision < v.needed || opened_here {
                return true;
            }
            findings[v.finding].caught_up = Some(step.clone());
            false
        });
    }

    /// Closes every stale view served by this server's cache of this
    /// resource that `revision` catches up.
    fn caught_up_by_cache(&mut self, r: &Record, resource: &Resource, revision: u64) {
        let caught = |v: &OpenView| v.server == r.source && &v.resource == resource && v.needed <= revision;
        if !self.clients.iter().any(|c| c.open.iter().any(caught)) {
            return;
        }
        let why = format!(
            "{} answered a list of {resource} from its cache at revision {revision}: its cache, which the stale view's watch reads from, had caught up",
            self.server(r)
        );
        let here = self.location(r);
        let step = Step { time: time::format_short(r.at), text: why, location: Some(here.clone()) };
        for client in &mut self.clients {
            let findings = &mut self.findings;
            client.open.retain(|v| {
                let opened_here =
                    findings[v.finding].location.file == here.file && findings[v.finding].location.line == here.line;
                if v.server != r.source || &v.resource != resource || revision < v.needed || opened_here {
                    return true;
                }
                findings[v.finding].caught_up = Some(step.clone());
                false
            });
        }
    }

    // ---- bookkeeping ----

    fn client(&mut self, e: &Event) -> usize {
        if let Some(&c) =
            self.by_name.get(e.user.username.as_str()).and_then(|agents| agents.get(e.user_agent.as_str()))
        {
            return c;
        }
        let c = self.clients.len();
        self.clients.push(ClientState {
            client: Client { username: e.user.username.clone(), user_agent: e.user_agent.clone() },
            ..ClientState::default()
        });
        self.by_name.entry(e.user.username.clone()).or_default().insert(e.user_agent.clone(), c);
        c
    }

    /// Notes that client `c` reached `revision` at this event; `sight`
    /// says how, and is only worded when the revision is news.
    fn learn(&mut self, c: usize, r: &Record, revision: u64, sight: impl FnOnce(&Self) -> Sight) {
        if self.clients[c].knows.back().is_none_or(|last| last.revision < revision) {
            let at = At { source: r.source, line: r.line, time: r.at };
            let sight = sight(self);
            self.clients[c].learn(Known { revision, time: r.at, sight, at });
        }
        if self.cluster.back().is_none_or(|(_, top)| *top < revision) {
            self.cluster.push_back((r.at, revision));
            if self.cluster.len() > KNOWN_KEPT {
                self.cluster.pop_front();
            }
        }
    }

    /// The highest revision in the logs before `time`.
    fn cluster_before(&self, time: Micros) -> u64 {
        self.cluster.iter().rev().find(|(t, _)| *t < time).map_or(0, |(_, r)| *r)
    }

    fn cannot(&mut self, reason: Unjudged, r: &Record) {
        match self.unjudged.get_mut(&reason) {
            Some((n, _)) => *n += 1,
            None => {
                let location = self.location(r);
                self.unjudged.insert(reason, (1, location));
            }
        }
    }

    fn server(&self, r: &Record) -> &str {
        self.servers.get(r.source).map_or("", String::as_str)
    }

    fn location(&self, r: &Record) -> Location {
        Location {
            server: self.server(r).to_string(),
            file: self.files.get(r.source).cloned().unwrap_or_default(),
            line: r.line,
            time: time::format(r.at),
            audit_id: r.event.audit_id.clone(),
        }
    }

    fn at_location(&self, at: At) -> Location {
        Location {
            server: self.servers.get(at.source).cloned().unwrap_or_default(),
            file: self.files.get(at.source).cloned().unwrap_or_default(),
            line: at.line,
            time: time::format(at.time),
            audit_id: String::new(),
        }
    }

    /// A step saying how a client had come to know a revision.
    fn known_step(&self, client: &Client, k: &Known) -> Step {
        let text = match &k.sight {
            Sight::Wrote { write } => format!("{}: {write}, committed at revision {}", client.username, k.revision),
            Sight::Read { read } => format!("{} reads {read} at revision {}", client.username, k.revision),
            Sight::Named { request } => {
                format!("{} sends {request}: it has seen revision {}", client.username, k.revision)
            }
        };
        Step { time: time::format_short(k.time), text, location: Some(self.at_location(k.at)) }
    }

    /// A step saying what a committed version did.
    fn version_step(&self, id: &ObjectId, v: &Version) -> Step {
        let who = &self.clients[v.by].client.username;
        let server = self.servers.get(v.server).map_or("", String::as_str);
        let what = match v.change {
            Change::Created => "created",
            Change::Updated => "updated",
            Change::Terminating => "began deleting",
            Change::Deleted => "deleted",
        };
        Step {
            time: time::format_short(v.at.time),
            text: format!("{who} via {server}: {what} {id} (uid {}) at revision {}", short_uid(&v.uid), v.revision),
            location: Some(self.at_location(v.at)),
        }
    }

    /// The report.
    pub fn finish(self, problems: Problems) -> Report {
        let why = |reason: Unjudged| -> &'static str {
            match reason {
                Unjudged::Watches => {
                    "what a watch delivers is not audited, so a client's view between its lists is not known"
                }
                Unjudged::ReadsWithoutRevision => {
                    "logged below the RequestResponse level, a read has no response, so the revision it was served at is not known"
                }
                Unjudged::WritesWithoutRevision => {
                    "logged below RequestResponse (or answered with a Status), a write's committed revision is not known; the history has a gap there"
                }
                Unjudged::UnconditionalWrites => {
                    "a write without a resourceVersion precondition does not say what version it was decided on, and what its client saw since its last list came by watch"
                }
                Unjudged::NonNumericRevisions => {
                    "a resourceVersion that is not a number cannot be placed in the history"
                }
                Unjudged::TruncatedEvents => "the API server dropped their request and response objects for size",
                Unjudged::Panics => "the request panicked; its outcome is unknown",
                Unjudged::UnknownStages => {
                    "the stage is not one of RequestReceived, ResponseStarted, ResponseComplete, Panic"
                }
                Unjudged::DeleteCollections => {
                    "which objects a deletecollection removed, and at which revisions, is not in its event"
                }
                Unjudged::SeparateRevisions => {
                    "Events are commonly stored in an etcd of their own, whose revisions are another sequence; they are left out"
                }
            }
        };
        let cannot_judge = self
            .unjudged
            .into_iter()
            .map(|(reason, (count, example))| CannotJudge { reason, count, example, why: why(reason).to_string() })
            .collect();
        let mut clients: Vec<ClientSummary> = self
            .clients
            .iter()
            .map(|s| ClientSummary {
                client: s.client.clone(),
                reads: s.reads,
                writes: s.writes,
                behind_unchanged: s.behind_unchanged,
                findings: self.findings.iter().filter(|f| f.client == s.client).count(),
            })
            .collect();
        clients.sort_by(|a, b| a.client.cmp(&b.client));
        let inputs = self
            .servers
            .iter()
            .zip(&self.files)
            .zip(&self.per_file)
            .map(|((server, file), events)| InputSummary {
                server: server.clone(),
                file: file.clone(),
                events: *events,
            })
            .collect();
        let resources = self
            .history
            .writes_by_resource
            .iter()
            .map(|(r, n)| ResourceWrites { resource: r.to_string(), writes: *n })
            .collect();
        let acted_on_stale_read = self.findings.iter().any(|f| f.acted && f.kind != FindingKind::StaleWrite);
        Report {
            inputs,
            events: self.events,
            first: self.first.map(time::format),
            last: self.last.map(time::format),
            writes: self.writes,
            objects: self.history.objects(),
            revisions: self.history.revisions,
            resources,
            findings: self.findings,
            clients,
            cannot_judge,
            problems,
            acted_on_stale_read,
        }
    }
}

/// A read in words: `list pods fieldSelector=spec.nodeName=node-1 resourceVersion="0"`.
fn read_words(e: &Event, uri: &RequestUri) -> String {
    let mut s = format!("{} {}", e.verb, Resource::new(&uri.group, &uri.resource));
    if !uri.namespace.is_empty() && uri.name.is_empty() {
        s.push_str(&format!(" in {}", uri.namespace));
    }
    if !uri.name.is_empty() {
        let ns = if uri.namespace.is_empty() { String::new() } else { format!("{}/", uri.namespace) };
        s.push_str(&format!(" {ns}{}", uri.name));
    }
    let q = &uri.query;
    if !q.field_selector.is_empty() {
        s.push_str(&format!(" fieldSelector={}", q.field_selector));
    }
    if !q.label_selector.is_empty() {
        s.push_str(&format!(" labelSelector={}", q.label_selector));
    }
    match &q.resource_version {
        Some(v) => s.push_str(&format!(" resourceVersion=\"{v}\"")),
        None => s.push_str(" resourceVersion unset"),
    }
    if let Some(m) = &q.resource_version_match {
        s.push_str(&format!(" resourceVersionMatch={m}"));
    }
    s
}

/// A write in words: `update pods default/web-0 (status)`.
fn write_words(e: &Event, id: &ObjectId, uri: &RequestUri) -> String {
    let sub = if uri.subresource.is_empty() { String::new() } else { format!(" ({})", uri.subresource) };
    format!("{} {id}{sub}", e.verb)
}

/// The first 8 characters of a uid, as the simulator's explanations print them.
fn short_uid(uid: &str) -> &str {
    uid.get(..8).unwrap_or(uid)
}
