//! A real cluster's history as a trace: the audit logs drawn by the same
//! timeline and explained by the same panel as a simulated run.
//!
//! The logs are read once; each event feeds the analysis ([`Analysis`])
//! and becomes trace entries on the lanes a reader already knows:
//!
//! | trace | from the logs |
//! |---|---|
//! | lanes | `etcd`; each API server with its cache; one lane per client (a node agent under its node's lane); the checks |
//! | `StoreWrite` on `etcd` | an accepted write whose response carries its committed revision: who, through which API server, at which revision |
//! | `ListServed` on the client's lane | a read answered with its revision: the latest revision in the logs before it arrived as the store's, how long the state it returned had been out of date (so a read below the store's is a stale read, as the timeline marks it) |
//! | `CacheRelist` on the server's cache | a read that may be served from the cache, answered at revision R: its cache was at R then (the staleness band under each cache follows these) |
//! | `Violation` on the checks' lane | each finding, when it is made: a stale read as time travel, a node agent shown a gone pod as pod identity, a write decided on a replaced version as lost work |
//!
//! Each finding's explanation is its own steps ([`crate::Finding`]),
//! each pointing at the entry of the event it cites; what it acted on and
//! why follow. Time 0 is the first event's second, as in a replay.

use std::collections::BTreeMap;
use std::io::BufRead;

use recon_abi::{ObjectKey, Verb};
use recon_scenario::Check;
use recon_trace::{
    EntryId, Event as TraceEvent, Explanation, ExplanationStep, Key, LaneId, LaneRole, ListServed, Name, ObjectVersion,
    ReadPurpose, ServedFrom, Trace,
};

use crate::analysis::{Analysis, Progress};
use crate::event::Stage;
use crate::input::{LogFile, MergedLogs, ReadOptions, Record};
use crate::report::{FindingKind, Location, Report};
use crate::time::Micros;
use crate::uri::RequestUri;

/// The logs drawn as a trace, its findings' explanations, and the report.
#[derive(Clone, Debug)]
pub struct AuditTimeline {
    /// The history, as a trace a timeline draws.
    pub trace: Trace,
    /// One explanation per finding, its steps pointing at trace entries.
    pub explanations: Vec<Explanation>,
    /// The analysis' report (what `recon audit` prints).
    pub report: Report,
}

/// How often [`timeline_of`] reports progress, in events: often enough for
/// a page's progress bar to move several times a second (the caller paces
/// what it shows), rarely enough to cost nothing.
pub const DRAW_PROGRESS_EVERY: u64 = 1_000;

/// Reads log files and draws them.
pub fn timeline(files: &[LogFile], options: &ReadOptions) -> AuditTimeline {
    draw(files, MergedLogs::open(files, options), |_| {})
}

/// Reads logs from any input (a file dropped on a page, read where it is:
/// nothing leaves it), one input per file, and draws them; `progress` is
/// called every [`DRAW_PROGRESS_EVERY`] events.
pub fn timeline_of(
    files: &[LogFile],
    inputs: Vec<Box<dyn BufRead>>,
    options: &ReadOptions,
    progress: impl FnMut(Progress),
) -> AuditTimeline {
    draw(files, MergedLogs::from_inputs(files, inputs, options), progress)
}

fn draw(files: &[LogFile], mut logs: MergedLogs, mut progress: impl FnMut(Progress)) -> AuditTimeline {
    let mut analysis = Analysis::new(files);
    let mut drawing = Drawing::new(files);
    while let Some(record) = logs.next() {
        let before = analysis.findings().len();
        analysis.feed(&record);
        let entry = drawing.feed(&record);
        for f in before..analysis.findings().len() {
            drawing.violation(&record, f, &analysis.findings()[f], entry);
        }
        if logs.events.is_multiple_of(DRAW_PROGRESS_EVERY) {
            progress(Progress { events: logs.events, bytes: logs.bytes_read() });
        }
    }
    let report = analysis.finish(logs.problems);
    let explanations =
        report.findings.iter().enumerate().filter_map(|(f, finding)| drawing.explain(f, finding)).collect();
    AuditTimeline { trace: drawing.trace, explanations, report }
}

struct Drawing {
    trace: Trace,
    files: Vec<String>,
    /// The server (its lane, and its cache's) of each file.
    server_of: Vec<(Name, LaneId, LaneId)>,
    store: LaneId,
    checks: LaneId,
    clients: BTreeMap<(String, String), Name>,
    origin: Option<Micros>,
    /// Each event drawn: its (file, line) and entry.
    entries: BTreeMap<(usize, u64), EntryId>,
    /// Revisions committed, and when (ms), to say how long a state had been out of date.
    commits: BTreeMap<u64, u64>,
    top: u64,
    violations: BTreeMap<usize, EntryId>,
}

impl Drawing {
    fn new(files: &[LogFile]) -> Drawing {
        let mut trace = Trace { scenario: "audit logs".into(), ..Trace::default() };
        let store = trace.add_lane("etcd", LaneRole::Store);
        let mut servers: BTreeMap<String, (LaneId, LaneId)> = BTreeMap::new();
        let server_of = files
            .iter()
            .map(|f| {
                let (api, cache) = *servers.entry(f.server.clone()).or_insert_with(|| {
                    let api = trace.add_lane(f.server.clone(), LaneRole::ApiServer);
                    (api, trace.add_lane(format!("{} cache", f.server), LaneRole::Cache { api_server: api }))
                });
                (Name::from(f.server.as_str()), api, cache)
            })
            .collect();
        let checks = trace.add_lane("checks", LaneRole::Checks);
        Drawing {
            trace,
            files: files.iter().map(|f| f.path.display().to_string()).collect(),
            server_of,
            store,
            checks,
            clients: BTreeMap::new(),
            origin: None,
            entries: BTreeMap::new(),
            commits: BTreeMap::new(),
            top: 0,
            violations: BTreeMap::new(),
        }
    }

    fn ms(&self, t: Micros) -> u64 {
        (t - self.origin.unwrap_or(t)).max(0) as u64 / 1000
    }

    /// The lane of a request's client (added when first seen): a node
    /// agent (`system:node:NODE`) under its node's lane, anyone else a lane
    /// of its own, named like a replay names its component.
    fn client_lane(&mut self, r: &Record) -> (LaneId, Name) {
        let e = &r.event;
        let key = (e.user.username.clone(), e.user_agent.clone());
        if let Some(name) = self.clients.get(&key) {
            let name = name.clone();
            return (self.trace.lane_named(&name).expect("a client's lane is added with it"), name);
        }
        let username = e.user.username.as_str();
        let node = username.strip_prefix("system:node:").filter(|n| !n.is_empty());
        let mut name = match node {
            Some(node) => format!("kubelet-{node}"),
            None => username
                .strip_prefix("system:serviceaccount:")
                .map_or(username, |sa| sa.rsplit(':').next().unwrap_or(sa))
                .to_string(),
        };
        // Two agents of one user are two clients: the second lane says its agent.
        if self.trace.lane_named(&name).is_some() {
            name = format!("{name} ({})", e.user_agent);
        }
        let role = match node {
            Some(node) => {
                let node_lane =
                    self.trace.lane_named(node).unwrap_or_else(|| self.trace.add_lane(node, LaneRole::Node));
                LaneRole::NodeAgent { node: node_lane }
            }
            None => LaneRole::Controller,
        };
        let lane = self.trace.add_lane(name.clone(), role);
        let name = Name::from(name);
        self.clients.insert(key, name.clone());
        (lane, name)
    }

    /// Draws one event; the entry it became, if any.
    fn feed(&mut self, r: &Record) -> Option<EntryId> {
        self.origin.get_or_insert(r.at - r.at.rem_euclid(1_000_000));
        let e = &r.event;
        let uri = RequestUri::parse(&e.request_uri).ok()?;
        if e.stage() != Some(Stage::ResponseComplete) || !e.code().is_some_and(|c| (200..300).contains(&c)) {
            return None;
        }
        let time_ms = self.ms(r.at);
        let (server, _, cache_lane) = self.server_of.get(r.source)?.clone();
        let response = e.response_object.as_ref();
        let revision =
            response.and_then(|o| o.metadata.as_ref()).and_then(|m| m.resource_version.parse::<u64>().ok())?;
        let kind = response
            .map(|o| o.kind.strip_suffix("List").filter(|_| o.items.is_some()).unwrap_or(&o.kind).to_string())
            .filter(|k| !k.is_empty() && k != "Status")
            .unwrap_or_else(|| uri.resource.clone());
        let (lane, client) = self.client_lane(r);
        let key = |name: &str, namespace: &str| {
            Key::from(ObjectKey { kind: kind.clone(), namespace: namespace.to_string(), name: name.to_string() })
        };
        let id = match e.verb.as_str() {
            "create" | "update" | "patch" | "delete" => {
                let meta = response.and_then(|o| o.metadata.clone()).unwrap_or_default();
                let status = uri.subresource == "status";
                let verb = match e.verb.as_str() {
                    "create" => Verb::Create,
                    "delete" => Verb::Delete,
                    "patch" if status => Verb::PatchStatus,
                    "patch" => Verb::Patch,
                    _ if status => Verb::UpdateStatus,
                    _ => Verb::Update,
                };
                let terminating = verb == Verb::Delete
                    && !meta.deletion_timestamp.is_empty()
                    && (meta.deletion_grace_period_seconds.unwrap_or(0) > 0 || !meta.finalizers.is_empty());
                let name = if uri.name.is_empty() { meta.name.clone() } else { uri.name.clone() };
                self.commits.insert(revision, time_ms);
                self.top = self.top.max(revision);
                self.trace.push(
                    time_ms,
                    self.store,
                    TraceEvent::StoreWrite {
                        verb,
                        key: key(&name, &uri.namespace),
                        uid: meta.uid.into(),
                        revision,
                        removed: verb == Verb::Delete && !terminating,
                        terminating,
                        by: client,
                        via: server,
                        patch: None,
                    },
                    vec![],
                )
            }
            "list" | "get" if uri.subresource.is_empty() => {
                let mode = uri.read_mode(&e.verb);
                let store_revision = self.top.max(revision);
                let from_cache = mode.may_be_stale();
                if from_cache {
                    // What the answer shows of the cache, for the band under it.
                    self.trace.push(
                        time_ms,
                        cache_lane,
                        TraceEvent::CacheRelist { api_server: server.clone(), revision },
                        vec![],
                    );
                }
                let out_of_date_since = self.commits.range(revision + 1..).next().map(|(_, t)| *t);
                let objects = match response {
                    Some(o) if o.items.is_some() => o
                        .items
                        .iter()
                        .flatten()
                        .map(|item| ObjectVersion {
                            key: key(&item.metadata.name, &item.metadata.namespace),
                            uid: item.metadata.uid.as_str().into(),
                            revision: item.metadata.resource_version.parse().unwrap_or(0),
                        })
                        .collect(),
                    Some(o) => o
                        .metadata
                        .iter()
                        .map(|m| ObjectVersion {
                            key: key(&m.name, &m.namespace),
                            uid: m.uid.as_str().into(),
                            revision,
                        })
                        .collect(),
                    None => Vec::new(),
                };
                let purpose = match (e.verb.as_str(), self.trace.lane(lane).role) {
                    (_, LaneRole::Controller) if e.user_agent.starts_with("kubectl") => ReadPurpose::Kubectl,
                    ("get", _) => ReadPurpose::DirectRead,
                    _ => ReadPurpose::InformerList,
                };
                self.trace.push(
                    time_ms,
                    lane,
                    TraceEvent::ListServed(Box::new(ListServed {
                        component: client,
                        api_server: server,
                        request: format!("{} {}", e.verb, e.request_uri),
                        purpose,
                        served_from: if from_cache { ServedFrom::Cache } else { ServedFrom::Store },
                        revision,
                        store_revision,
                        stale_ms: out_of_date_since.map_or(0, |t| time_ms.saturating_sub(t)),
                        partitioned: false,
                        objects,
                    })),
                    vec![],
                )
            }
            _ => return None,
        };
        self.entries.insert((r.source, r.line), id);
        Some(id)
    }

    /// A finding, drawn where the analysis made it.
    fn violation(&mut self, r: &Record, f: usize, finding: &crate::Finding, at: Option<EntryId>) {
        let check = match finding.kind {
            FindingKind::StaleRead => Check::TimeTravel,
            FindingKind::NodeAgentShownGonePod => Check::PodIdentity,
            FindingKind::StaleWrite => Check::LostWork,
        };
        let id = self.trace.push(
            self.ms(r.at),
            self.checks,
            TraceEvent::Violation { check, message: finding.headline.clone() },
            at.into_iter().collect(),
        );
        self.violations.insert(f, id);
    }

    /// The entry an event of the logs became, if it was drawn.
    fn entry_at(&self, location: &Location) -> Option<EntryId> {
        let source = self.files.iter().position(|f| *f == location.file)?;
        self.entries.get(&(source, location.line)).copied()
    }

    /// A finding's explanation: its steps, then what it acted on and why.
    fn explain(&self, f: usize, finding: &crate::Finding) -> Option<Explanation> {
        let violation = *self.violations.get(&f)?;
        let step = |location: Option<&Location>, text: String| ExplanationStep {
            entry: location.and_then(|l| self.entry_at(l)).unwrap_or(violation),
            text,
        };
        let mut steps: Vec<ExplanationStep> =
            finding.steps.iter().map(|s| step(s.location.as_ref(), format!("{}: {}", s.time, s.text))).collect();
        for a in &finding.acted_on {
            let outcome = a.code.map_or(String::new(), |c| format!(" (answered {c})"));
            steps.push(step(Some(&a.location), format!("then: {}{outcome}", a.write)));
        }
        if let Some(because) = &finding.acted_because {
            steps.push(step(None, because.clone()));
        }
        if let Some(caught_up) = &finding.caught_up {
            steps.push(step(caught_up.location.as_ref(), format!("caught up: {}", caught_up.text)));
        }
        let check = match &self.trace.get(violation)?.event {
            TraceEvent::Violation { check, .. } => *check,
            _ => return None,
        };
        Some(Explanation { violation, check, headline: finding.headline.clone(), steps })
    }
}
