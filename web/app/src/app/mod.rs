//! The playground page: controls on the left, the timeline and the
//! explanation of each violation on the right.
//!
//! State flows one way: a control edits the scenario ([`settings`]), the
//! scenario goes to the worker as YAML, the worker's trace comes back and is
//! drawn. A request that fails (an invalid edit, a rejected plugin) leaves
//! the last good scenario, uploads and run in place, with the reason shown.
//!
//! A real cluster's audit logs take the same road the other way round: the
//! page hands the worker the files, the worker draws them as a trace
//! (`recon_audit::timeline_of`), and the same timeline and explanations
//! show it ([`AuditShown`]) until the visitor goes back to the scenarios.

#[cfg(target_arch = "wasm32")]
mod download;
// Used by `panels`, in the browser only; tested natively.
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
mod fold;
pub mod museum;
#[cfg(target_arch = "wasm32")]
mod panels;
// Used by `download`, in the browser only; tested natively.
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
mod pieces;
pub mod search;
pub mod settings;
pub mod tour;
#[cfg(target_arch = "wasm32")]
pub(crate) mod worker_link;

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use recon_scenario::Scenario;
use recon_trace::{CrashSummary, EntryId, Explanation, Trace, Unavailability, crashes};

use recon_prepare::{Fit, PluginBytes, fit};

use crate::Shared;
use recon_web_protocol::{FromWorker, ToWorker, Upload, UploadRef};

/// A finished run, ready to show.
pub struct RunView {
    /// The trace.
    pub trace: Shared<Trace>,
    /// Its hash, as computed by the worker.
    pub hash: String,
    /// How long the worker took, in wall-clock milliseconds; `None` for
    /// the recorded run (see [`crate::recorded`]), which did not run here.
    pub wall_ms: Option<f64>,
    /// Every violation, explained.
    pub explanations: Vec<Explanation>,
    /// Components that could not read, and for how long.
    pub unavailable: Vec<Unavailability>,
    /// Components whose controller crashed, in order of their first crash.
    pub crashes: Vec<CrashSummary>,
    /// Why the run stopped before its end (a run limit), and the entry
    /// that says so.
    pub halted: Option<(EntryId, String)>,
}

impl RunView {
    /// Explains a finished trace.
    pub fn new(trace: Trace, hash: String, wall_ms: Option<f64>) -> RunView {
        let explanations = recon_trace::explain_all(&trace);
        RunView::explained(trace, hash, wall_ms, explanations)
    }

    /// A trace whose violations come explained (audit logs, whose
    /// findings the worker explains as `recon audit` does).
    pub fn explained(trace: Trace, hash: String, wall_ms: Option<f64>, mut explanations: Vec<Explanation>) -> RunView {
        // Broken safety properties first, the time travel that led to them after:
        // the first one listed is the one a reader should see.
        explanations.sort_by_key(|e| e.check == recon_scenario::Check::TimeTravel);
        let unavailable = recon_trace::unavailability(&trace);
        let crashes = crashes(&trace);
        let halted = trace.halted().map(|(entry, reason)| (entry.id, reason.to_owned()));
        RunView { trace: Shared::new(trace), hash, wall_ms, explanations, unavailable, crashes, halted }
    }

    /// The violation to show first: the first broken safety property (two
    /// pods with one identity, say) rather than the time travel that led
    /// to it, which its explanation walks through anyway.
    pub fn headline_violation(&self) -> Option<EntryId> {
        let safety = self.explanations.iter().find(|e| e.check != recon_scenario::Check::TimeTravel);
        safety.or(self.explanations.first()).map(|e| e.violation)
    }
}

/// A plugin the user uploaded for a component, and what it declared.
#[derive(Clone, Debug, PartialEq)]
pub struct Uploaded {
    /// The file.
    pub upload: Upload,
    /// The controller's name from its manifest, once the worker checked it
    /// (a plugin that arrived in a share link is checked by running it).
    pub controller: Option<String>,
}

/// What the page runs: a scenario and the plugins replacing its controllers.
#[derive(Clone, Debug, PartialEq)]
pub struct Setup {
    /// The library scenario it started from.
    pub library: String,
    /// The scenario, with the user's edits.
    pub scenario: Scenario,
    /// Uploaded plugins by component.
    pub uploads: BTreeMap<String, Uploaded>,
    /// The text the scenario was read from, comments and all (the library
    /// file, or what the user applied in the editor), while it still says
    /// what the scenario is; a control's change drops it (the editor then
    /// shows the scenario written out anew).
    pub source: Option<String>,
}

impl Setup {
    /// The scenario as the worker and share links carry it.
    pub fn scenario_text(&self) -> String {
        recon_scenario::to_yaml(&self.scenario)
    }

    /// What the editor shows: the user's own text while it stands,
    /// otherwise the scenario written out.
    pub fn source_text(&self) -> String {
        self.source.clone().unwrap_or_else(|| self.scenario_text())
    }

    /// The uploaded plugins, as share links carry them.
    pub fn upload_list(&self) -> Vec<Upload> {
        self.uploads.values().map(|u| u.upload.clone()).collect()
    }

    /// The uploaded plugins, as requests to the worker name them.
    pub fn upload_refs(&self) -> Vec<UploadRef> {
        self.uploads.values().map(|u| u.upload.to_ref()).collect()
    }

    /// The bytes of the uploaded plugins: what the worker must have been
    /// sent before a request names them.
    pub fn plugins(&self) -> Vec<PluginBytes> {
        self.uploads.values().map(|u| u.upload.plugin.clone()).collect()
    }

    /// How the scenario relates to the library one it started from, for
    /// the scenario picker: `None` when it is that scenario unchanged.
    pub fn provenance(&self) -> Option<&'static str> {
        if self.scenario.name.ends_with("-found") {
            return Some("found by search");
        }
        if self.scenario.name != self.library {
            return Some("custom");
        }
        let original = as_shipped(&self.library).ok()?;
        (original.scenario != self.scenario).then_some("edited")
    }

    /// Whether this is a library scenario as shipped, with no plugin
    /// uploaded: its name alone says what it is.
    pub fn is_pristine(&self) -> bool {
        self.uploads.is_empty() && self.provenance().is_none()
    }
}

/// Whether the menu has a scenario called `name`: a library file, or a
/// generated cluster ([`recon_catalog::cluster::name`], e.g.
/// `scale-1000-nodes-30000-pods`; see [`cluster_size`]).
pub fn is_library(name: &str) -> bool {
    recon_catalog::scenario(name).is_some() || cluster_size(name).is_some()
}

/// The size of the generated cluster called `name`, if the page opens it:
/// one whose pods fit its nodes, within Kubernetes' published limits. An
/// address naming a larger one opens the default scenario, as an unknown
/// name does: the page writes and reads the whole file before the worker
/// could refuse it, and a billion nodes' file would take the tab down.
fn cluster_size(name: &str) -> Option<(usize, usize)> {
    recon_catalog::cluster::size_of(name)
        .filter(|&(nodes, pods)| recon_catalog::cluster::within_published_limits(nodes as u64, pods as u64))
}

/// The clusters the menu offers (nodes, pods): the scale benchmark's two
/// sizes that run in a tab, and one between. Any other size opens from the
/// address (`?scenario=scale-2000-nodes-60000-pods`).
pub const MENU_CLUSTERS: [(usize, usize); 3] = [(100, 3_000), (300, 9_000), (1_000, 30_000)];

/// The menu's generated clusters, as (scenario name, label): those of
/// [`MENU_CLUSTERS`], and the shown one (`library`) if it is a cluster of
/// another size, in order of size.
pub fn menu_clusters(library: &str) -> Vec<(String, String)> {
    let mut sizes = MENU_CLUSTERS.to_vec();
    if let Some(shown) = cluster_size(library).filter(|size| !sizes.contains(size)) {
        sizes.push(shown);
        sizes.sort_unstable();
    }
    let label = |(nodes, pods): (usize, usize)| format!("{} nodes, {} pods", grouped(nodes), grouped(pods));
    sizes.into_iter().map(|(nodes, pods)| (recon_catalog::cluster::name(nodes, pods), label((nodes, pods)))).collect()
}

/// `n` with its thousands apart: `30,000`.
fn grouped(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// The text of the menu's scenario `name` as shipped (see [`is_library`]).
fn library_text(name: &str) -> Option<Cow<'static, str>> {
    if let Some(library) = recon_catalog::scenario(name) {
        return Some(Cow::Borrowed(library.yaml));
    }
    let (nodes, pods) = cluster_size(name)?;
    Some(Cow::Owned(recon_catalog::cluster::yaml(nodes, pods)))
}

/// A menu scenario as shipped: its file, and the scenario read from it.
struct Shipped {
    text: Cow<'static, str>,
    scenario: Scenario,
}

/// The menu's scenario `name` as shipped, read once: opening it and the
/// header's "edited" mark on every render share the last one read, since
/// a 1,000-node cluster's file takes a while to write and read.
fn as_shipped(name: &str) -> Result<Rc<Shipped>, String> {
    thread_local! {
        static LAST: RefCell<Option<(String, Rc<Shipped>)>> = const { RefCell::new(None) };
    }
    LAST.with_borrow_mut(|last| {
        if let Some((_, shipped)) = last.as_ref().filter(|(kept, _)| kept == name) {
            return Ok(shipped.clone());
        }
        let text = library_text(name).ok_or_else(|| format!("there is no scenario {name:?}"))?;
        let scenario = recon_scenario::parse(&format!("{name}.yaml"), &text).map_err(|e| e.to_string())?;
        let shipped = Rc::new(Shipped { text, scenario });
        *last = Some((name.to_owned(), shipped.clone()));
        Ok(shipped)
    })
}

/// Progress of the run in flight.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RunProgress {
    /// Virtual time reached.
    pub time_ms: u64,
    /// The scenario's duration.
    pub end_ms: u64,
    /// Trace entries so far.
    pub entries: u64,
}

/// Progress of the reading of audit logs in flight.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AuditProgress {
    /// Events read so far.
    pub events: u64,
    /// Bytes of the files read so far.
    pub bytes: u64,
    /// The files' sizes, summed.
    pub total_bytes: u64,
}

/// Audit logs on show instead of a run: what the panel beside the timeline
/// says about them. The run's place ([`State::run`]) holds their trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuditShown {
    /// The files, as picked or dropped (each names its API server).
    pub files: Vec<String>,
    /// What was read, in one line.
    pub summary: String,
    /// What could not be judged and why, one line each.
    pub unjudged: Vec<String>,
}

/// The request in flight.
// There is one at a time: boxing the run's setup would save nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug)]
pub enum Pending {
    /// A run of this setup.
    Run {
        /// Request id.
        id: u64,
        /// What is being run; it becomes the good setup when the run succeeds.
        setup: Setup,
        /// How far it got.
        progress: RunProgress,
    },
    /// A snapshot of every component's view at a moment of the good run.
    Inspect {
        /// Request id.
        id: u64,
        /// The moment.
        at_ms: u64,
    },
    /// A check of an upload.
    Check {
        /// Request id.
        id: u64,
        /// The upload, for the component it is checked as.
        upload: Upload,
        /// The other components to run it once it passes: a plugin
        /// dropped on a folded row runs as every component in it.
        also: Vec<String>,
    },
    /// The reading of audit logs.
    Audit {
        /// Request id.
        id: u64,
        /// The files' names.
        files: Vec<String>,
        /// How far it got.
        progress: AuditProgress,
    },
}

impl Pending {
    fn id(&self) -> u64 {
        match self {
            Pending::Run { id, .. }
            | Pending::Inspect { id, .. }
            | Pending::Check { id, .. }
            | Pending::Audit { id, .. } => *id,
        }
    }
}

/// The outcome of a message from the worker, for the page to act on.
#[derive(Debug, PartialEq)]
pub enum Outcome {
    /// Nothing changes (a stale answer, or progress).
    Nothing,
    /// The view changed; redraw.
    Redraw,
    /// An upload passed its check; run with it.
    RunWithUpload,
}

/// The page's state, independent of the browser so that its rules can be
/// tested natively: which setup is good, what is pending, what to show.
pub struct State {
    /// The setup of the last successful run (what the controls show when
    /// nothing is pending).
    pub good: Setup,
    /// The setup being edited: `good` plus edits not yet run.
    pub current: Setup,
    /// The last successful run (or audit logs drawn, see [`State::audit`]).
    pub run: Option<RunView>,
    /// The audit logs [`State::run`] shows, if it shows audit logs rather
    /// than a run of the scenario.
    pub audit: Option<AuditShown>,
    /// The request in flight.
    pub pending: Option<Pending>,
    /// The selected trace entry.
    pub selected: Option<EntryId>,
    /// The message shown in the error banner.
    pub error: Option<String>,
    /// A short confirmation (e.g. which plugin now runs where).
    pub notice: Option<String>,
    /// The inspector's snapshot of the shown run, if one was asked for.
    pub snapshot: Option<recon_trace::inspect::Snapshot>,
    /// An entry to select when the next run finishes (from a share link).
    pub select_on_done: Option<EntryId>,
    /// A moment asked for while another was being inspected: inspected
    /// when that answers (see [`State::inspect`]).
    inspect_next: Option<u64>,
    /// Whether the next finished run's selection (its headline violation)
    /// is inspected at once, so that on first load the inspector opens on
    /// the moment the story is about. Once only: later runs leave the
    /// worker free (an inspection re-runs the scenario up to the moment).
    /// The page turns it off in an embed, which has no inspector.
    pub inspect_selection_after_run: bool,
    /// What the visitor typed to find components in each controller's
    /// folded row (see [`fold`]), by controller.
    pub component_search: BTreeMap<String, String>,
    next_id: u64,
}

impl State {
    /// The state for a library scenario, before its first run.
    pub fn new(library: &str, scenario: Scenario) -> State {
        let setup = Setup { library: library.to_owned(), scenario, uploads: BTreeMap::new(), source: None };
        State {
            good: setup.clone(),
            current: setup,
            run: None,
            audit: None,
            pending: None,
            selected: None,
            error: None,
            notice: None,
            snapshot: None,
            select_on_done: None,
            inspect_next: None,
            inspect_selection_after_run: true,
            component_search: BTreeMap::new(),
            next_id: 1,
        }
    }

    /// The state for the library scenario `name`, with the file as
    /// shipped as its source, before its first run.
    pub fn library(name: &str) -> Result<State, String> {
        let shipped = as_shipped(name)?;
        let mut state = State::new(name, shipped.scenario.clone());
        // The editor shows the file as shipped, comments and all.
        state.current.source = Some(shipped.text.clone().into_owned());
        state.good.source = state.current.source.clone();
        Ok(state)
    }

    /// Runs the current setup: the request to send, with the plugins the
    /// worker must have been sent before it; the run is pending from now.
    pub fn run_request(&mut self) -> (ToWorker, Vec<PluginBytes>) {
        let id = self.next_id();
        let setup = self.current.clone();
        let request = ToWorker::Run {
            id,
            scenario: setup.scenario_text(),
            seed: setup.scenario.seed,
            uploads: setup.upload_refs(),
        };
        let plugins = setup.plugins();
        let end_ms = setup.scenario.duration.0;
        self.pending = Some(Pending::Run { id, setup, progress: RunProgress { end_ms, ..Default::default() } });
        (request, plugins)
    }

    /// Reads audit logs (the files' names; their contents go beside the
    /// request): the request to send; the reading is pending from now.
    pub fn audit_request(&mut self, files: Vec<String>) -> ToWorker {
        let id = self.next_id();
        self.error = None;
        self.notice = None;
        self.pending = Some(Pending::Audit { id, files: files.clone(), progress: AuditProgress::default() });
        ToWorker::Audit { id, files }
    }

    /// Back from audit logs to the scenarios: the logs' trace is dropped
    /// (the caller runs the scenario to show in its place).
    pub fn leave_audit(&mut self) {
        if self.audit.take().is_some() {
            self.run = None;
            self.selected = None;
            self.snapshot = None;
        }
    }

    /// A fresh request id.
    pub fn next_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// Asks for every component's view at `at_ms` of the shown run: the
    /// request to send now, or `None`. One inspection runs at a time: asked
    /// while one is under way, the latest moment asked for waits for it
    /// ([`State::next_inspection`]), so stepping through events does not
    /// queue a simulation per step. Nothing while a run or a check is under
    /// way (its run replaces the one shown), nor for the moment already shown.
    pub fn inspect(&mut self, at_ms: u64) -> Option<ToWorker> {
        // Audit logs say what was asked and answered, not what each
        // component held: there is nothing to re-run.
        if self.run.is_none() || self.audit.is_some() {
            return None;
        }
        match self.pending {
            Some(Pending::Inspect { at_ms: asked, .. }) => {
                self.inspect_next = (asked != at_ms).then_some(at_ms);
                return None;
            }
            Some(Pending::Run { .. } | Pending::Check { .. } | Pending::Audit { .. }) => return None,
            None if self.snapshot.as_ref().is_some_and(|s| s.time_ms == at_ms) => return None,
            None => {}
        }
        let id = self.next_id();
        // A moment asked for now supersedes one queued earlier (a run's own).
        self.inspect_next = None;
        self.pending = Some(Pending::Inspect { id, at_ms });
        let setup = &self.good;
        Some(ToWorker::Inspect {
            id,
            scenario: setup.scenario_text(),
            seed: setup.scenario.seed,
            uploads: setup.upload_refs(),
            at_ms,
        })
    }

    /// The inspection asked for while the last one ran, once nothing else is
    /// under way.
    pub fn next_inspection(&mut self) -> Option<ToWorker> {
        if self.pending.is_some() {
            return None;
        }
        let at_ms = self.inspect_next.take()?;
        self.inspect(at_ms)
    }

    /// Handles a message from the worker.
    pub fn receive(&mut self, message: FromWorker) -> Outcome {
        let pending_id = self.pending.as_ref().map(Pending::id);
        match message {
            FromWorker::Ready => Outcome::Nothing,
            FromWorker::Progress { id, time_ms, end_ms, entries } => {
                if let Some(Pending::Run { id: run, progress, .. }) = &mut self.pending
                    && *run == id
                {
                    *progress = RunProgress { time_ms, end_ms, entries };
                    return Outcome::Redraw;
                }
                Outcome::Nothing
            }
            FromWorker::Done { id, hash, wall_ms, trace } if pending_id == Some(id) => {
                let Some(Pending::Run { setup, .. }) = self.pending.take() else { return Outcome::Nothing };
                // A change that leaves the run exactly as it was says so,
                // rather than re-running silently to the same trace.
                if let Some(before) = &self.run
                    && before.hash == hash
                    && setup != self.good
                {
                    self.notice = Some(
                        "That change left this run exactly as it was (the same trace, event for event): nothing \
                         in this run depends on it."
                            .into(),
                    );
                }
                let run = RunView::new(trace, hash, wall_ms);
                self.audit = None;
                self.selected = run.headline_violation();
                if let Some(wanted) = self.select_on_done.take() {
                    match run.trace.get(wanted) {
                        Some(_) => self.selected = Some(wanted),
                        None => {
                            self.error = Some(format!(
                                "The link points at event {wanted}, but this run has {} events; showing its \
                                 violation instead.",
                                run.trace.entries.len()
                            ))
                        }
                    }
                }
                self.run = Some(run);
                self.snapshot = None;
                let first = std::mem::take(&mut self.inspect_selection_after_run);
                self.inspect_next = match self.selected.and_then(|id| self.run.as_ref()?.trace.get(id)) {
                    Some(entry) if first => Some(entry.time_ms),
                    _ => None,
                };
                self.good = setup.clone();
                self.current = setup;
                Outcome::Redraw
            }
            FromWorker::AuditProgress { id, events, bytes, total_bytes } => {
                if let Some(Pending::Audit { id: reading, progress, .. }) = &mut self.pending
                    && *reading == id
                {
                    *progress = AuditProgress { events, bytes, total_bytes };
                    return Outcome::Redraw;
                }
                Outcome::Nothing
            }
            FromWorker::Audited { id, hash, wall_ms, trace, explanations, summary, unjudged, problems }
                if pending_id == Some(id) =>
            {
                let Some(Pending::Audit { files, .. }) = self.pending.take() else { return Outcome::Nothing };
                let run = RunView::explained(trace, hash, Some(wall_ms), explanations);
                self.selected = run.headline_violation();
                self.run = Some(run);
                self.snapshot = None;
                self.inspect_next = None;
                self.audit = Some(AuditShown { files, summary, unjudged });
                // Bad lines were skipped and are named; the rest is drawn.
                self.error = (!problems.is_empty())
                    .then(|| format!("Some of the audit logs could not be read; the rest is drawn.\n{problems}"));
                Outcome::Redraw
            }
            FromWorker::Snapshot { id, snapshot } if pending_id == Some(id) => {
                self.pending = None;
                self.snapshot = Some(snapshot);
                Outcome::Redraw
            }
            FromWorker::Checked { id, component, manifest } if pending_id == Some(id) => {
                let Some(Pending::Check { upload, also, .. }) = self.pending.take() else { return Outcome::Nothing };
                let fits = |c: &String| fit(&self.current.scenario, c, &upload.file_name, &manifest);
                // Every component it is for fits, or none runs it.
                let mut warning = String::new();
                for c in std::iter::once(&component).chain(&also) {
                    match fits(c) {
                        Fit::Refused(why) => {
                            self.error = Some(format!("Plugin for {c} rejected: {why}"));
                            self.notice = None;
                            return Outcome::Redraw;
                        }
                        Fit::Warning(why) if warning.is_empty() => warning = format!(". Note: {why}"),
                        _ => {}
                    }
                }
                let (who, runs) = if also.is_empty() {
                    (component.clone(), "runs")
                } else {
                    (count(also.len() + 1, "component"), "run")
                };
                self.notice = Some(format!("{who} now {runs} {} ({}){warning}", upload.file_name, manifest.name));
                for c in std::iter::once(component).chain(also) {
                    let upload = Upload { component: c.clone(), ..upload.clone() };
                    self.current.uploads.insert(c, Uploaded { upload, controller: Some(manifest.name.clone()) });
                }
                Outcome::RunWithUpload
            }
            FromWorker::Failed { id, component, error } if pending_id == Some(id) || id == 0 => {
                self.pending = None;
                self.error = Some(match component {
                    Some(component) => format!("Plugin for {component} rejected: {error}"),
                    None => error,
                });
                // Nothing is lost: back to what last ran, and no notice
                // of a change that did not happen.
                self.current = self.good.clone();
                self.notice = None;
                Outcome::Redraw
            }
            // Search workers report to the search panel, never here; a
            // trace's entries are put back into its answer by the worker
            // link before the app sees it.
            FromWorker::Search(_) | FromWorker::Entries { .. } => Outcome::Nothing,
            // An answer to a request that has since been replaced.
            FromWorker::Done { .. }
            | FromWorker::Audited { .. }
            | FromWorker::Snapshot { .. }
            | FromWorker::Checked { .. }
            | FromWorker::Failed { .. } => Outcome::Nothing,
        }
    }

    /// The worker died or hung while a request was pending: keep the good
    /// state and say what happened.
    pub fn worker_lost(&mut self, why: &str) {
        if self.pending.take().is_some() {
            self.current = self.good.clone();
        }
        self.error = Some(why.to_owned());
    }
}

/// `n` things, in words: "1 object", "3 objects" (never "1 object(s)").
pub fn count(n: usize, thing: &str) -> String {
    if n == 1 { format!("1 {thing}") } else { format!("{n} {thing}s") }
}

/// How long a busy worker may stay silent before the page gives up on it,
/// in milliseconds: 30 s, the last resort (a run reports progress ten
/// times a second), plus 60 ms per thousand trace entries the run has
/// reported, for the end of a run, when the worker encodes and posts the
/// trace without a word (a million entries took about 34 s from the end of
/// the run to the page on the loaded 2-core machine, BENCHMARKS.md; the
/// 1,000-node scale run's 1.8 million were cut off by a flat 30 s).
pub fn watchdog_ms(entries: u64) -> u32 {
    let sending = entries.saturating_mul(60) / 1_000;
    u32::try_from(30_000u64.saturating_add(sending)).unwrap_or(u32::MAX)
}

#[cfg(target_arch = "wasm32")]
mod page;
#[cfg(target_arch = "wasm32")]
pub use page::App;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worker_sending_a_large_trace_is_given_time_in_proportion() {
        assert_eq!(watchdog_ms(0), 30_000, "the last resort for a run that has reported nothing");
        assert_eq!(watchdog_ms(1_000_000), 90_000, "a million entries: a minute more to send them");
        assert!(watchdog_ms(1_816_234) > 30_000 + 100_000, "the 1,000-node scale run");
        assert_eq!(watchdog_ms(u64::MAX), u32::MAX, "never wraps");
    }

    #[test]
    fn the_picker_tells_an_edited_a_custom_and_a_found_scenario_from_the_library_one() {
        let state = default_state();
        let mut setup = state.current.clone();
        assert_eq!(setup.provenance(), None);
        assert!(setup.is_pristine());
        setup.scenario.seed += 1;
        assert_eq!(setup.provenance(), Some("edited"));
        setup.scenario.name = "mine".into();
        assert_eq!(setup.provenance(), Some("custom"));
        setup.scenario.name = format!("{}-workload-found", setup.library);
        assert_eq!(setup.provenance(), Some("found by search"));
    }

    /// A generated cluster opens like a library scenario: by its name,
    /// from the menu or the address, with its file as the editor's text,
    /// and pristine until edited (so its address is its name alone).
    #[test]
    fn a_generated_cluster_opens_by_name_and_is_pristine_until_edited() {
        let name = recon_catalog::cluster::name(3, 90);
        assert!(is_library(&name) && is_library(recon_catalog::DEFAULT_SCENARIO));
        let state = State::library(&name).expect("a cluster of 3 nodes opens");
        assert_eq!(state.current.scenario.nodes.len(), 3);
        assert_eq!(state.current.scenario.name, name);
        assert_eq!(state.current.source.as_deref(), Some(recon_catalog::cluster::yaml(3, 90).as_str()));
        let mut setup = state.current.clone();
        assert!(setup.is_pristine(), "{:?}", setup.provenance());
        setup.scenario.seed += 1;
        assert_eq!(setup.provenance(), Some("edited"));
        assert!(is_library(&recon_catalog::cluster::name(5_000, 150_000)), "Kubernetes' published limits");
        for not_one in [
            "scale-1-nodes-111-pods",
            "scale-01-nodes-3-pods",
            "no-such-scenario",
            "scale-5001-nodes-0-pods",
            "scale-5000-nodes-150001-pods",
            "scale-4000000000-nodes-0-pods",
        ] {
            assert!(!is_library(not_one), "{not_one}");
            let refused = State::library(not_one).err().expect("refused");
            assert!(refused.contains(not_one), "{refused}");
        }
    }

    /// The menu offers the sizes that run in a tab, and the shown cluster
    /// when it is another size, in order of size, with readable labels.
    #[test]
    fn the_menu_offers_clusters_and_the_shown_one_in_order_of_size() {
        let names = |library: &str| menu_clusters(library).into_iter().map(|(name, _)| name).collect::<Vec<_>>();
        let offered = names(recon_catalog::DEFAULT_SCENARIO);
        assert_eq!(offered.len(), MENU_CLUSTERS.len());
        assert_eq!(names(&offered[1]), offered, "an offered size is not offered twice");
        let shown = recon_catalog::cluster::name(200, 6_000);
        let with_shown = names(&shown);
        assert_eq!(with_shown, [&offered[..1], &[shown][..], &offered[1..]].concat());
        assert_eq!(menu_clusters(&offered[2])[2].1, "1,000 nodes, 30,000 pods");
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(150_000), "150,000");
        assert_eq!(grouped(1_234_567), "1,234,567");
    }

    #[test]
    fn counts_read_as_words() {
        assert_eq!(count(1, "object"), "1 object");
        assert_eq!(count(0, "object"), "0 objects");
        assert_eq!(count(12, "revision"), "12 revisions");
    }
    use recon_web_protocol::ToWorker;
    use recon_worker::runner::{Progress, Runner};
    use std::io::Read;

    struct Collect(Vec<FromWorker>);

    impl Progress for Collect {
        fn now_ms(&mut self) -> f64 {
            0.0
        }
        fn report(&mut self, message: FromWorker) {
            self.0.push(message);
        }
    }

    fn default_state() -> State {
        let library = recon_catalog::scenario(recon_catalog::DEFAULT_SCENARIO).unwrap();
        State::new(library.name, recon_scenario::parse("default.yaml", library.yaml).unwrap())
    }

    fn run(state: &mut State, runner: &mut Runner) -> Outcome {
        let (request, plugins) = state.run_request();
        // What the worker link does: the bytes first, then the request.
        for plugin in plugins {
            runner.receive_plugin(plugin.bytes().to_vec());
        }
        answer(state, runner, request)
    }

    /// Has the runner handle `request` and the state receive every answer,
    /// as the worker and the page would; the outcome of the last.
    fn answer(state: &mut State, runner: &mut Runner, request: ToWorker) -> Outcome {
        let mut out = Collect(Vec::new());
        runner.handle(request, &mut out);
        receive_all(state, out.0)
    }

    /// The state receives each message in turn; the outcome of the last.
    fn receive_all(state: &mut State, messages: Vec<FromWorker>) -> Outcome {
        messages.into_iter().fold(Outcome::Nothing, |_, message| state.receive(message))
    }

    #[test]
    fn the_default_run_selects_its_violation_which_names_both_nodes() {
        let mut state = default_state();
        let mut runner = Runner::new().unwrap();
        assert_eq!(run(&mut state, &mut runner), Outcome::Redraw);
        let view = state.run.as_ref().expect("the run finished");
        let first = &view.explanations[0];
        assert_eq!(Some(first.violation), state.selected, "the first explanation listed is the selected one");
        assert_eq!(first.check, recon_scenario::Check::PodIdentity);
        assert!(first.headline.contains("node-1") && first.headline.contains("node-2"), "{}", first.headline);
        assert_eq!(view.hash, view.trace.hash());
    }

    #[test]
    fn a_failed_edit_keeps_the_last_good_setup_and_run() {
        let mut state = default_state();
        let mut runner = Runner::new().unwrap();
        run(&mut state, &mut runner);
        let good_hash = state.run.as_ref().unwrap().hash.clone();
        // A component pointed at an API server that does not exist fails validation in the worker.
        state.current.scenario.components[0].api_server = "apiserver-9".into();
        run(&mut state, &mut runner);
        assert!(state.error.as_deref().unwrap().contains("apiserver-9"), "{:?}", state.error);
        assert_eq!(state.current, state.good);
        assert_eq!(state.run.as_ref().unwrap().hash, good_hash);
    }

    #[test]
    fn a_rejected_upload_leaves_the_previous_controller() {
        let mut state = default_state();
        let mut runner = Runner::new().unwrap();
        let id = state.next_id();
        let plugin = PluginBytes::new(b"hello".to_vec());
        let upload = Upload { component: "kubelet-node-1".into(), file_name: "notes.txt".into(), plugin };
        state.pending = Some(Pending::Check { id, upload: upload.clone(), also: Vec::new() });
        runner.receive_plugin(upload.plugin.bytes().to_vec());
        answer(&mut state, &mut runner, ToWorker::Check { id, upload: upload.to_ref(), limits: Default::default() });
        let error = state.error.expect("the upload is rejected");
        assert!(error.contains("kubelet-node-1") && error.contains("notes.txt"), "{error}");
        assert!(!error.contains('\n'), "one line: {error}");
        assert!(state.current.uploads.is_empty());
    }

    /// A plugin dropped on a folded row is checked as its first component
    /// and, once it passes, runs as every one; a controller that is no node
    /// agent standing in for the kubelets is noted once, not per kubelet.
    #[test]
    fn an_upload_dropped_on_a_row_runs_as_every_component_of_it_once_checked() {
        let (nodes, pods) = (12, 60);
        let scenario = recon_scenario::parse("c.yaml", &recon_catalog::cluster::yaml(nodes, pods)).unwrap();
        let mut state = State::new(&recon_catalog::cluster::name(nodes, pods), scenario);
        let kubelets: Vec<String> = (1..=nodes).map(|n| format!("kubelet-node-{n}")).collect();
        let id = state.next_id();
        let plugin = PluginBytes::new(b"s".to_vec());
        let upload = Upload { component: kubelets[0].clone(), file_name: "s.wasm".into(), plugin };
        state.pending = Some(Pending::Check { id, upload, also: kubelets[1..].to_vec() });
        let config = recon_abi::ComponentConfig { name: kubelets[0].clone(), ..Default::default() };
        let manifest = recon_catalog::instantiate("scheduler").unwrap().init(&config).unwrap();
        let outcome = state.receive(FromWorker::Checked { id, component: kubelets[0].clone(), manifest });
        assert_eq!(outcome, Outcome::RunWithUpload);
        assert_eq!(state.current.uploads.keys().collect::<std::collections::BTreeSet<_>>(), kubelets.iter().collect());
        for (component, uploaded) in &state.current.uploads {
            assert_eq!(&uploaded.upload.component, component);
            assert_eq!(uploaded.controller.as_deref(), Some("scheduler"));
        }
        let notice = state.notice.unwrap();
        assert!(
            notice
                .starts_with("12 components now run s.wasm (scheduler). Note: s.wasm (scheduler) is not a node agent"),
            "{notice}"
        );
        assert_eq!(notice.matches("Note").count(), 1, "{notice}");
    }

    #[test]
    fn crashes_are_summarised_per_component_and_a_scripted_restart_is_not_one() {
        let mut state = default_state();
        let mut runner = Runner::new().unwrap();
        run(&mut state, &mut runner);
        // The scenario's own restart of node-1's kubelet is planned, not a crash (issue 19).
        assert_eq!(state.run.as_ref().unwrap().crashes, vec![]);
        // A scripted crash is one.
        let at = recon_scenario::Millis(3_000);
        settings::add_fault(&mut state.current.scenario, "scheduler", settings::Fault::Crash, at).unwrap();
        run(&mut state, &mut runner);
        let view = state.run.as_ref().unwrap();
        let names: Vec<&str> = view.crashes.iter().map(|c| c.component.as_str()).collect();
        assert_eq!(names, ["scheduler"]);
        assert_eq!(view.crashes[0].count, 1);
        assert!(matches!(
            view.trace.get(view.crashes[0].first).unwrap().event,
            recon_trace::Event::ComponentCrashed { .. }
        ));
    }

    #[test]
    fn the_inspector_shows_node_1s_kubelet_holding_the_deleted_pod_after_the_relist() {
        let mut state = default_state();
        let mut runner = Runner::new().unwrap();
        run(&mut state, &mut runner);
        let request = state.inspect(5_010).expect("an inspection");
        answer(&mut state, &mut runner, request);
        let snapshot = state.snapshot.as_ref().expect("a snapshot");
        let kubelet = snapshot.components.iter().find(|c| c.component == "kubelet-node-1").unwrap();
        assert!(kubelet.differences.deleted.iter().any(|o| o.key.name == "web-0"), "{kubelet:?}");
        assert!(state.pending.is_none() && state.error.is_none());
    }

    /// The moment an inspection request asks for.
    fn inspect_at(request: &ToWorker) -> u64 {
        match request {
            ToWorker::Inspect { at_ms, .. } => *at_ms,
            other => panic!("not an inspection: {other:?}"),
        }
    }

    #[test]
    fn inspections_asked_while_one_runs_collapse_into_the_latest() {
        let mut state = default_state();
        let mut runner = Runner::new().unwrap();
        assert!(state.inspect(1_000).is_none(), "nothing to inspect before a run");
        run(&mut state, &mut runner);
        let first = state.inspect(1_000).expect("asked at once");
        // Stepping through three events while it runs: only the last is kept.
        for at_ms in [2_000, 3_000, 5_010] {
            assert!(state.inspect(at_ms).is_none());
        }
        assert!(state.next_inspection().is_none(), "the first is still under way");
        answer(&mut state, &mut runner, first);
        assert_eq!(state.snapshot.as_ref().unwrap().time_ms, 1_000);
        let next = state.next_inspection().expect("the latest moment asked for");
        assert_eq!(inspect_at(&next), 5_010);
        answer(&mut state, &mut runner, next);
        assert_eq!(state.snapshot.as_ref().unwrap().time_ms, 5_010);
        assert!(state.next_inspection().is_none(), "nothing more was asked");
        assert!(state.inspect(5_010).is_none(), "that moment is already shown");
        // A run under way is not interrupted by a selection.
        state.pending = Some(Pending::Run { id: 77, setup: state.good.clone(), progress: RunProgress::default() });
        assert!(state.inspect(7_000).is_none());
        assert!(matches!(state.pending, Some(Pending::Run { id: 77, .. })));
    }

    #[test]
    fn a_run_that_reaches_its_trace_limit_says_why_it_stopped() {
        let mut state = default_state();
        let mut runner = Runner::new().unwrap();
        run(&mut state, &mut runner);
        assert!(state.run.as_ref().unwrap().halted.is_none(), "the default run goes to its end");
        state.current.scenario.limits.max_trace_entries = 40;
        run(&mut state, &mut runner);
        let view = state.run.as_ref().unwrap();
        let (entry, reason) = view.halted.as_ref().expect("stopped at its limit");
        assert_eq!(*entry + 1, view.trace.entries.len() as u64);
        assert!(reason.contains("limit of 40 trace entries (limits.maxTraceEntries in the scenario)"), "{reason}");
    }

    #[test]
    fn the_first_run_opens_the_inspector_on_its_violation_and_later_runs_do_not() {
        let mut state = default_state();
        let mut runner = Runner::new().unwrap();
        run(&mut state, &mut runner);
        let at = state.run.as_ref().unwrap().trace.get(state.selected.unwrap()).unwrap().time_ms;
        let request = state.next_inspection().expect("the violation's moment is inspected at once");
        assert_eq!(inspect_at(&request), at);
        answer(&mut state, &mut runner, request);
        assert_eq!(state.snapshot.as_ref().unwrap().time_ms, at);
        // A later run leaves the worker free.
        state.current.scenario.seed += 1;
        run(&mut state, &mut runner);
        assert!(state.next_inspection().is_none());
    }

    #[test]
    fn a_change_that_leaves_the_run_as_it_was_says_so() {
        let mut state = default_state();
        let mut runner = Runner::new().unwrap();
        run(&mut state, &mut runner);
        let hash = state.run.as_ref().unwrap().hash.clone();
        // #59848's kubelets list with resourceVersion="0": KEP-2340's
        // consistent reads from the cache do not touch those lists.
        let server = state.current.scenario.api_servers.iter().position(|s| s.name == "apiserver-2").unwrap();
        settings::set_consistent_reads(&mut state.current.scenario, server, true);
        run(&mut state, &mut runner);
        assert_eq!(state.run.as_ref().unwrap().hash, hash);
        assert!(state.notice.as_deref().is_some_and(|n| n.contains("exactly as it was")), "{:?}", state.notice);
        // A change that does change the run says nothing of the kind.
        state.notice = None;
        state.current.scenario.seed += 1;
        run(&mut state, &mut runner);
        assert_ne!(state.run.as_ref().unwrap().hash, hash);
        assert_eq!(state.notice, None);
    }

    /// The default scenario's run written as its API servers' audit logs,
    /// as the worker is handed them.
    fn audit_logs_of_the_default_run() -> Vec<recon_worker::audit::AuditLog> {
        let library = recon_catalog::scenario(recon_catalog::DEFAULT_SCENARIO).unwrap();
        let scenario = recon_scenario::parse("default.yaml", library.yaml).unwrap();
        let mut sim = recon_sim::Sim::new(&scenario, Box::new(|c| recon_catalog::instantiate(&c.controller))).unwrap();
        sim.run();
        recon_audit::audit_logs(sim.trace(), &sim.kinds())
            .unwrap()
            .into_iter()
            .map(|log| recon_worker::audit::AuditLog {
                name: format!("{}.log", log.server),
                size: log.text.len() as u64,
                input: Box::new(std::io::Cursor::new(log.text.into_bytes())),
            })
            .collect()
    }

    /// Has the worker read `logs` for the audit request the state makes,
    /// and the state receive every answer.
    fn open_audit(state: &mut State, logs: Vec<recon_worker::audit::AuditLog>) -> Outcome {
        let ToWorker::Audit { id, files } = state.audit_request(logs.iter().map(|l| l.name.clone()).collect()) else {
            panic!("an audit request")
        };
        assert_eq!(files, logs.iter().map(|l| l.name.clone()).collect::<Vec<_>>());
        let mut out = Collect(Vec::new());
        let answer = recon_worker::audit::audit(id, logs, &mut out);
        out.0.push(answer);
        receive_all(state, out.0)
    }

    /// Issue 18: audit logs take the run's place on the timeline, their
    /// findings explained and the pod-identity one selected, the scenario
    /// left as it was; going back runs the scenario again.
    #[test]
    fn audit_logs_are_shown_in_the_runs_place_until_the_visitor_goes_back_to_the_scenarios() {
        let mut state = default_state();
        let mut runner = Runner::new().unwrap();
        run(&mut state, &mut runner);
        let scenario_hash = state.run.as_ref().unwrap().hash.clone();
        assert_eq!(open_audit(&mut state, audit_logs_of_the_default_run()), Outcome::Redraw);
        let shown = state.audit.as_ref().expect("the logs are shown");
        assert_eq!(shown.files, ["apiserver-1.log", "apiserver-2.log"]);
        assert!(shown.summary.contains("in 2 log(s)"), "{}", shown.summary);
        let view = state.run.as_ref().unwrap();
        assert_ne!(view.hash, scenario_hash);
        assert!(view.trace.lane_named("kubelet-node-1").is_some());
        let selected = view.explanations.iter().find(|x| Some(x.violation) == state.selected).expect("one selected");
        assert_eq!(selected.check, recon_scenario::Check::PodIdentity, "{selected:?}");
        assert!(selected.steps.iter().any(|s| s.text.contains("apiserver-2")), "{selected:?}");
        assert!(state.pending.is_none() && state.error.is_none(), "{:?}", state.error);
        assert!(state.inspect(5_000).is_none(), "audit logs have nothing to inspect");
        assert_eq!(state.current, state.good, "the scenario is untouched");
        state.leave_audit();
        assert!(state.audit.is_none() && state.run.is_none());
        run(&mut state, &mut runner);
        assert_eq!(state.run.as_ref().unwrap().hash, scenario_hash);
    }

    #[test]
    fn audit_logs_that_cannot_be_read_leave_the_run_shown_and_say_where() {
        let mut state = default_state();
        let mut runner = Runner::new().unwrap();
        run(&mut state, &mut runner);
        let hash = state.run.as_ref().unwrap().hash.clone();
        let broken = recon_worker::audit::AuditLog {
            name: "apiserver-1.log".into(),
            size: 9,
            input: Box::new(std::io::Cursor::new(b"not json\n".to_vec())),
        };
        open_audit(&mut state, vec![broken]);
        let error = state.error.as_deref().expect("an error");
        assert!(error.contains("apiserver-1.log:1: not JSON"), "{error}");
        assert!(state.audit.is_none() && state.pending.is_none());
        assert_eq!(state.run.as_ref().unwrap().hash, hash, "the run shown before is kept");
        // A readable log with one bad line is drawn, and the line named.
        let mut logs = audit_logs_of_the_default_run();
        let mut text = String::new();
        logs[0].input.read_to_string(&mut text).unwrap();
        let text = format!("{{\"kind\": \"Ev\n{text}");
        logs[0] = recon_worker::audit::AuditLog {
            name: "apiserver-1.log".into(),
            size: text.len() as u64,
            input: Box::new(std::io::Cursor::new(text.into_bytes())),
        };
        open_audit(&mut state, logs);
        assert!(state.audit.is_some());
        let error = state.error.as_deref().expect("the bad line is named");
        assert!(error.contains("apiserver-1.log:1:") && error.contains("the rest is drawn"), "{error}");
    }

    #[test]
    fn answers_to_replaced_requests_are_ignored() {
        let mut state = default_state();
        let mut runner = Runner::new().unwrap();
        run(&mut state, &mut runner);
        let before = state.run.as_ref().unwrap().hash.clone();
        let stale = FromWorker::Failed { id: 999, component: None, error: "late".into() };
        assert_eq!(state.receive(stale), Outcome::Nothing);
        assert!(state.error.is_none());
        assert_eq!(state.run.as_ref().unwrap().hash, before);
    }
}
