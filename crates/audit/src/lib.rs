//! Kubernetes audit logs, read for stale reads and written from simulated
//! runs.
//!
//! A Kubernetes API server writes every request it serves to its audit log,
//! one `audit.k8s.io/v1` [`Event`] per line. Writes logged with their
//! response carry the revision they committed, which orders every write of
//! the cluster; reads carry their read mode in the request URI and, with
//! their response, the revision they were served at. That is enough to
//! rebuild the write history and to find reads older than what their own
//! client had already written or observed, and what the client did next.
//!
//! Where to start:
//! - [`analyze`] reads log files ([`LogFile`]) and returns a [`Report`]:
//!   the findings, each explained step by step, what could not be judged,
//!   and the problems with the input;
//! - [`audit_logs`] writes a simulated run ([`recon_trace::Trace`]) as the
//!   logs its API servers would have written;
//! - [`replay()`] reads logs into a [`recon_scenario::Scenario`] that
//!   replays them in the simulator ([`Replay`]);
//! - [`timeline()`] draws logs as a [`recon_trace::Trace`] with their
//!   findings' explanations, for the playground's timeline ([`AuditTimeline`]).
//!
//! Modules: [`event`] (the format), [`input`] (reading, merging, bad
//! input), [`uri`] (read modes), [`history`] (the rebuilt writes),
//! [`analysis`] (the judge), [`report`] (findings and their text),
//! [`from_trace`] (the writer), [`replay`] (logs to a scenario), [`timeline`]
//! (logs to a trace), [`time`] (timestamps). Which documented
//! Kubernetes behaviour each rule follows is in `tests/README.md`, beside
//! the tests; which audit policy each finding needs is in `docs/AUDIT.md`.

pub mod analysis;
pub mod event;
pub mod from_trace;
pub mod history;
pub mod input;
pub mod replay;
pub mod report;
pub mod time;
pub mod timeline;
pub mod uri;

pub use analysis::{Analysis, Progress, analyze};
pub use event::Event;
pub use from_trace::{ServerLog, api_servers, audit_logs, audit_logs_with_objects, write_audit_logs};
pub use input::{Bodies, LogFile, Problem, ProblemKind, Problems, ReadOptions};
pub use replay::{PluginNeeded, Replay, ReplayError, replay};
pub use report::{CannotJudge, Client, Finding, FindingKind, Report, Unjudged};
pub use timeline::{AuditTimeline, timeline, timeline_of};
