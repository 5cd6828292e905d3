//! What `recon audit` found: the findings, per client, each explained in
//! plain words step by step like the simulator's explanations; what could
//! not be judged and why; the problems with the input. Serialised as is
//! for `--json` (field order fixed, no maps), printed by [`Report::text`].

use std::fmt::Write as _;

use serde::Serialize;

use crate::input::Problems;

/// A client: the user it authenticated as, and the user agent it gave.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Client {
    /// `user.username`.
    pub username: String,
    /// `userAgent`.
    pub user_agent: String,
}

impl std::fmt::Display for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.user_agent.is_empty() {
            write!(f, "{}", self.username)
        } else {
            write!(f, "{} ({})", self.username, self.user_agent)
        }
    }
}

/// Where an event is in the logs.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Location {
    /// The API server whose log it is in.
    pub server: String,
    /// The file.
    pub file: String,
    /// The line.
    pub line: u64,
    /// Its `stageTimestamp`, as RFC 3339.
    pub time: String,
    /// Its `auditID`.
    pub audit_id: String,
}

/// One step of an explanation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Step {
    /// When, as the time of day (UTC).
    pub time: String,
    /// What happened, in plain words.
    pub text: String,
    /// The event it is about, when it is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<Location>,
}

/// The kinds of findings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum FindingKind {
    /// A read served below a revision its client had already written or
    /// observed (time travel for that client), or a read that had to be
    /// the most recent state and was not.
    StaleRead,
    /// A node agent's list that showed it, on its own node, a pod that had
    /// already been deleted or recreated: Kubernetes issue #59848.
    NodeAgentShownGonePod,
    /// A write decided on a version of its object that had already been
    /// replaced (its `resourceVersion` or uid precondition was out of date).
    StaleWrite,
}

/// A write that followed a finding: what the client did next.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ActedOn {
    /// Where the write is.
    pub location: Location,
    /// The write in words (`update pods default/web-0 (status)`).
    pub write: String,
    /// The response code.
    pub code: Option<u16>,
    /// The revision it committed, when it did and the log says.
    pub revision: Option<u64>,
}

/// One finding, explained.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Finding {
    /// What kind.
    pub kind: FindingKind,
    /// Whose request it is.
    pub client: Client,
    /// One-line summary.
    pub headline: String,
    /// The event it is about.
    pub location: Location,
    /// The causal chain, oldest first.
    pub steps: Vec<Step>,
    /// For reads: the revision the answer was at (a list's own revision; a
    /// get's object version).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub served_revision: Option<u64>,
    /// For reads: the highest revision the client had written or observed before.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_revision: Option<u64>,
    /// For reads: the highest revision in the logs when the read arrived.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster_revision: Option<u64>,
    /// How many times (a write refused again and again is one finding).
    pub times: u64,
    /// The writes the client made on what it read, before anything shows
    /// its view had caught up: the first accepted ones and the first
    /// refused ones, in order (`actedOnMore` counts the rest).
    pub acted_on: Vec<ActedOn>,
    /// Further such writes, not listed.
    pub acted_on_more: u64,
    /// Whether the client is known (or, for a node agent, bound) to have
    /// acted on what it read: the finding that sets the exit status.
    pub acted: bool,
    /// Why acting is inferred rather than seen, when it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub acted_because: Option<String>,
    /// What ended the client's stale view, if the logs show it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub caught_up: Option<Step>,
}

/// Why part of the logs could not be judged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Unjudged {
    /// Watch requests: what a watch delivers is not audited.
    Watches,
    /// Reads logged below `RequestResponse`: no response, so no revision.
    ReadsWithoutRevision,
    /// Successful writes logged without their committed revision.
    WritesWithoutRevision,
    /// Writes that name no version (no `resourceVersion` precondition),
    /// outside any stale view the logs show.
    UnconditionalWrites,
    /// Resource versions that are not numbers.
    NonNumericRevisions,
    /// Events whose objects the API server dropped for size.
    TruncatedEvents,
    /// Requests that panicked.
    Panics,
    /// Events of a stage the format does not define.
    UnknownStages,
    /// `deletecollection`: which objects it removed is not in the response at most levels.
    DeleteCollections,
    /// Requests about Events, whose revisions may come from another etcd.
    SeparateRevisions,
}

/// What could not be judged for one reason, how often, and one example.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CannotJudge {
    /// The reason.
    pub reason: Unjudged,
    /// How many events.
    pub count: u64,
    /// The first such event.
    pub example: Location,
    /// Why it cannot be judged, in words.
    pub why: String,
}

impl std::fmt::Display for CannotJudge {
    /// "3 reads without a revision: … (first: a.log:12)".
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {}: {} (first: {}:{})",
            self.count,
            noun(self.reason),
            self.why,
            self.example.file,
            self.example.line
        )
    }
}

/// One input file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InputSummary {
    /// The API server.
    pub server: String,
    /// The file.
    pub file: String,
    /// Events read from it.
    pub events: u64,
}

/// One resource of the rebuilt history.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceWrites {
    /// The resource (`pods`, `statefulsets.apps`).
    pub resource: String,
    /// Writes with a committed revision.
    pub writes: u64,
}

/// One client's activity.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientSummary {
    /// The client.
    pub client: Client,
    /// Reads (get, list) answered.
    pub reads: u64,
    /// Writes made.
    pub writes: u64,
    /// Reads below a revision it knew, in which nothing it read had
    /// changed (as far as the audited writes show): behind, but harmless.
    pub behind_unchanged: u64,
    /// Findings about it.
    pub findings: usize,
}

/// The whole answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// The files read.
    pub inputs: Vec<InputSummary>,
    /// Events read (after skipping bad lines).
    pub events: u64,
    /// The first event's time (RFC 3339).
    pub first: Option<String>,
    /// The last event's time.
    pub last: Option<String>,
    /// Writes placed in the history (with a committed revision).
    pub writes: u64,
    /// Objects with a history.
    pub objects: usize,
    /// The lowest and highest revision written.
    pub revisions: Option<(u64, u64)>,
    /// Writes per resource.
    pub resources: Vec<ResourceWrites>,
    /// The findings, in the order their events happened.
    pub findings: Vec<Finding>,
    /// Every client, by name.
    pub clients: Vec<ClientSummary>,
    /// What could not be judged.
    pub cannot_judge: Vec<CannotJudge>,
    /// Problems with the input.
    pub problems: Problems,
    /// Whether a stale read was acted on (the exit status 1).
    pub acted_on_stale_read: bool,
}

impl Report {
    /// The report as JSON (stable: same logs, same bytes).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a report is plain data")
    }

    /// What was read, in one line: how many events, in how many logs,
    /// and the time they span (the report's first line).
    pub fn headline(&self) -> String {
        let span = match (&self.first, &self.last) {
            (Some(a), Some(b)) => format!(" from {a} to {b}"),
            _ => String::new(),
        };
        format!("{} event(s) in {} log(s){span}", self.events, self.inputs.len())
    }

    /// The report in words.
    pub fn text(&self) -> String {
        let mut out = String::new();
        let w = &mut out;
        let _ = writeln!(w, "{}", self.headline());
        for i in &self.inputs {
            let _ = writeln!(w, "  {:<16} {:>8} events  {}", i.server, i.events, i.file);
        }
        match self.revisions {
            Some((lo, hi)) => {
                let per: Vec<String> = self.resources.iter().map(|r| format!("{} {}", r.resource, r.writes)).collect();
                let _ = writeln!(
                    w,
                    "history: {} write(s) to {} object(s), revisions {lo} to {hi} ({})",
                    self.writes,
                    self.objects,
                    per.join(", ")
                );
            }
            None => {
                let _ = writeln!(w, "history: no write carried its committed revision (no RequestResponse writes)");
            }
        }
        let _ = writeln!(w);
        if self.findings.is_empty() {
            let _ = writeln!(w, "No stale read found.");
        } else {
            let acted = self.findings.iter().filter(|f| f.acted).count();
            let _ = writeln!(w, "{} finding(s), {acted} acted on:", self.findings.len());
            for (i, f) in self.findings.iter().enumerate() {
                let _ = writeln!(w);
                write_finding(w, i + 1, f);
            }
        }
        let behind: Vec<&ClientSummary> = self.clients.iter().filter(|c| c.behind_unchanged > 0).collect();
        if !behind.is_empty() {
            let _ = writeln!(w);
            let _ = writeln!(w, "Reads behind what their client knew, in which nothing read had changed (harmless):");
            for c in behind {
                let _ = writeln!(w, "  {}: {}", c.client, c.behind_unchanged);
            }
        }
        if !self.cannot_judge.is_empty() {
            let _ = writeln!(w);
            let _ = writeln!(w, "Could not judge:");
            for c in &self.cannot_judge {
                let _ = writeln!(w, "  - {c}");
            }
        }
        if self.problems.any() {
            let _ = writeln!(w);
            w.push_str(&self.problems.text());
        }
        out
    }
}

fn noun(reason: Unjudged) -> &'static str {
    match reason {
        Unjudged::Watches => "watch event(s)",
        Unjudged::ReadsWithoutRevision => "read(s) without a response revision",
        Unjudged::WritesWithoutRevision => "write(s) without a committed revision",
        Unjudged::UnconditionalWrites => "write(s) naming no version",
        Unjudged::NonNumericRevisions => "event(s) with a non-numeric resourceVersion",
        Unjudged::TruncatedEvents => "truncated event(s)",
        Unjudged::Panics => "panic(s)",
        Unjudged::UnknownStages => "event(s) of an unknown stage",
        Unjudged::DeleteCollections => "deletecollection request(s)",
        Unjudged::SeparateRevisions => "request(s) about Events",
    }
}

fn write_finding(w: &mut String, n: usize, f: &Finding) {
    let tag = match f.kind {
        FindingKind::StaleRead => "stale read",
        FindingKind::NodeAgentShownGonePod => "#59848: node agent shown a gone pod",
        FindingKind::StaleWrite => "write decided on a stale read",
    };
    let acted = if f.acted { ", acted on" } else { "" };
    let _ = writeln!(w, "{n}. [{tag}{acted}] {}", f.headline);
    let _ = writeln!(w, "   Why:");
    for s in &f.steps {
        let _ = writeln!(w, "   - {}: {}", s.time, s.text);
    }
    if !f.acted_on.is_empty() {
        let took_effect = f.acted_on.iter().any(|a| a.code.is_some_and(|c| (200..300).contains(&c)));
        if took_effect || f.kind == FindingKind::NodeAgentShownGonePod {
            let _ = writeln!(w, "   Then, {} acted on it:", f.client.username);
        } else {
            let _ = writeln!(w, "   Then, {} tried to act on it, and every write was refused:", f.client.username);
        }
        for a in &f.acted_on {
            let outcome = match (a.code, a.revision) {
                (Some(c), Some(r)) if (200..300).contains(&c) => format!("{c}, revision {r}"),
                (Some(c), _) => format!("{c}"),
                (None, _) => "no response code".to_string(),
            };
            let time = crate::time::parse(&a.location.time).map(crate::time::format_short).unwrap_or_default();
            let _ = writeln!(w, "   - {time}: {} via {} ({outcome})", a.write, a.location.server);
        }
        if f.acted_on_more > 0 {
            let _ = writeln!(w, "   - … and {} more write(s)", f.acted_on_more);
        }
    }
    if let Some(why) = &f.acted_because {
        let _ = writeln!(w, "   {why}");
    }
    if let Some(s) = &f.caught_up {
        let _ = writeln!(w, "   Caught up: {}: {}", s.time, s.text);
    }
}
