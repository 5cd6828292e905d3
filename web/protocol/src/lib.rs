//! The messages between the page and the simulation worker.
//!
//! The page sends [`ToWorker`] requests as JSON strings, and before them,
//! once per worker, the bytes of every plugin a request names, each as
//! its own binary message (an `ArrayBuffer` handed over, not copied): the
//! worker keeps them by content ([`PluginKey`]) and requests name them by
//! key ([`UploadRef`]), so a plugin crosses once however many runs use it.
//! [`Delivery`] remembers what one worker has been sent; a worker that is
//! replaced (Stop, a crash, the watchdog) starts with none, so it is sent
//! them all again before its first request. Messages to one worker
//! arrive in the order they were posted, so the bytes are there before
//! the request that names them.
//!
//! An audit log is not copied into a message: [`ToWorker::Audit`] is
//! posted as an array, the request's JSON first and then the `File`s the
//! visitor picked or dropped (a `File` crosses as a handle on the same
//! data), and the worker reads each a slice at a time, so a log of any
//! size stays on the visitor's disk until it is read, and leaves the
//! browser never.
//!
//! The worker answers with [`FromWorker`] as JSON bytes, each message in
//! an `ArrayBuffer` handed over. Every request carries an id the answers
//! repeat, so the page can ignore answers to a request it has since
//! replaced. A trace's entries go ahead of the answer that carries it, a
//! few tens of megabytes of JSON a message ([`FromWorker::Entries`]), and
//! the page puts them back ([`Reassembly`]) before anything else sees the
//! answer: a trace of millions of entries never has to exist as one
//! block of JSON, on either side.

use std::collections::BTreeSet;

use recon_abi::Manifest;
use recon_prepare::{PluginBytes, PluginKey};
use recon_trace::{Entries, Entry, Explanation, Interner, Trace, read_shared};
use serde::{Deserialize, Serialize};

pub mod search;

/// The most components one run in a tab may give plugins to. The browser
/// gives every plugin instance a memory of its own with a large reserved
/// range behind it, and a tab's address space holds about 120 of them:
/// Chromium refused the 123rd kubelet of a 1,000-node cluster with
/// `Out of memory: Cannot allocate Wasm memory for new instance` (see
/// BENCHMARKS.md). 48 leaves room for a search worker running as many
/// beside the run ([`TAB_PLUGIN_INSTANCES`]). A run past it is refused
/// before it starts, with what to do instead (`recon run`, which has no
/// such limit).
pub const MAX_PLUGIN_COMPONENTS: usize = 48;

/// The plugin instances a tab's workers may hold at once, all together:
/// the simulation worker's run and every search worker's. The search
/// starts fewer workers when the run's plugin components would pass it.
pub const TAB_PLUGIN_INSTANCES: usize = 100;

/// A `.wasm` file the user gave for one component, on the page.
#[derive(Clone, Debug, PartialEq)]
pub struct Upload {
    /// The component whose controller it replaces.
    pub component: String,
    /// The file's name, which starts every message about it.
    pub file_name: String,
    /// The file's bytes, as uploaded (the worker validates and instruments them).
    pub plugin: PluginBytes,
}

impl Upload {
    /// The upload as requests name it.
    pub fn to_ref(&self) -> UploadRef {
        UploadRef {
            component: self.component.clone(),
            file_name: self.file_name.clone(),
            key: self.plugin.key().clone(),
        }
    }
}

/// An upload as a request names it: its bytes went to the worker before,
/// in a binary message of their own.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UploadRef {
    /// The component whose controller it replaces.
    pub component: String,
    /// The file's name, which starts every message about it.
    pub file_name: String,
    /// The content key of the bytes.
    pub key: PluginKey,
}

/// The plugins one worker has been sent, so that each crosses once.
#[derive(Debug, Default)]
pub struct Delivery {
    sent: BTreeSet<PluginKey>,
}

impl Delivery {
    /// Which of `plugins` (those a request is about to name) to send first,
    /// each once: the ones this worker has not been sent yet. They count as
    /// sent from now on.
    pub fn unsent<'a>(&mut self, plugins: &'a [PluginBytes]) -> Vec<&'a PluginBytes> {
        plugins.iter().filter(|plugin| self.sent.insert(plugin.key().clone())).collect()
    }
}

/// A request from the page.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "type")]
pub enum ToWorker {
    /// Run a scenario to its end and send the trace.
    #[serde(rename_all = "camelCase")]
    Run {
        /// Request id.
        id: u64,
        /// The scenario, as YAML text.
        scenario: String,
        /// The seed.
        seed: u64,
        /// Components whose controller is an uploaded plugin.
        uploads: Vec<UploadRef>,
    },
    /// Run a scenario up to a moment and answer with every component's view
    /// against the store then (the inspector).
    #[serde(rename_all = "camelCase")]
    Inspect {
        /// Request id.
        id: u64,
        /// The scenario, as YAML text.
        scenario: String,
        /// The seed.
        seed: u64,
        /// Components whose controller is an uploaded plugin.
        uploads: Vec<UploadRef>,
        /// The moment, in virtual milliseconds.
        at_ms: u64,
    },
    /// Validate and start a plugin, and answer with its manifest.
    #[serde(rename_all = "camelCase")]
    Check {
        /// Request id.
        id: u64,
        /// The plugin.
        upload: UploadRef,
        /// The limits it is checked under: the scenario's `limits.plugins`.
        #[serde(default)]
        limits: recon_scenario::PluginLimits,
    },
    /// Search one shard of a scenario's perturbation plans for a violation
    /// (`recon_worker::search`); answered with [`FromWorker::Search`] reports.
    Search(search::SearchRequest),
    /// Shrink a failing plan and answer with the scenario that replays it.
    Shrink(search::ShrinkRequest),
    /// Search a scenario's orderings (`recon_worker::search::orderings`);
    /// answered with [`FromWorker::Search`] reports.
    Orderings(search::OrderingRequest),
    /// Read a real cluster's audit logs and draw them: answered with
    /// [`FromWorker::AuditProgress`] as it reads, then
    /// [`FromWorker::Audited`] (or `Failed`, naming the file and line).
    /// The files travel beside the request, in the same message, in this
    /// order (see the module's docs).
    #[serde(rename_all = "camelCase")]
    Audit {
        /// Request id.
        id: u64,
        /// The files' names, one per API server (`apiserver-1.log.gz` is
        /// `apiserver-1`, as `recon audit` names it).
        files: Vec<String>,
    },
    /// Panic on purpose, so the browser tests can check that a worker that
    /// breaks is reported and replaced ([`describe_panic`]; the page sends it
    /// for `?selftest=panic-worker`; nothing else does).
    SelfTestPanic,
}

/// An answer from the worker.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "type")]
pub enum FromWorker {
    /// The worker has started and takes requests.
    Ready,
    /// A run is under way.
    #[serde(rename_all = "camelCase")]
    Progress {
        /// Request id.
        id: u64,
        /// Virtual time reached, in milliseconds.
        time_ms: u64,
        /// The scenario's duration, in milliseconds.
        end_ms: u64,
        /// Trace entries so far.
        entries: u64,
    },
    /// A run finished.
    #[serde(rename_all = "camelCase")]
    Done {
        /// Request id.
        id: u64,
        /// [`Trace::hash`] of the trace, computed in the worker.
        hash: String,
        /// Wall-clock milliseconds the simulation took (for the status bar
        /// and benchmarks; never part of the trace); `None` for a run the
        /// page replays from its recording (`recon_web::recorded`), which
        /// did not run in this browser.
        wall_ms: Option<f64>,
        /// The trace.
        trace: Trace,
    },
    /// The views at a moment, for an `Inspect` request.
    #[serde(rename_all = "camelCase")]
    Snapshot {
        /// Request id.
        id: u64,
        /// What every component held, against the store.
        snapshot: recon_trace::inspect::Snapshot,
    },
    /// A plugin passed validation and started.
    #[serde(rename_all = "camelCase")]
    Checked {
        /// Request id.
        id: u64,
        /// The component it is for.
        component: String,
        /// What the plugin declared.
        manifest: Manifest,
    },
    /// How a search or a shrink is going, or what it found.
    Search(search::SearchReport),
    /// Audit logs are being read.
    #[serde(rename_all = "camelCase")]
    AuditProgress {
        /// Request id.
        id: u64,
        /// Events read so far.
        events: u64,
        /// Bytes of the files read so far (as stored: compressed, for a `.gz`).
        bytes: u64,
        /// The files' sizes, summed.
        total_bytes: u64,
    },
    /// The next entries of the trace of the answer to come, in trace
    /// order. A trace's entries go ahead of the answer that carries the
    /// rest of it ([`FromWorker::Done`], [`FromWorker::Audited`]), in
    /// messages of tens of megabytes, so that neither side ever holds the
    /// whole trace as JSON; [`Reassembly`] puts them back in the page.
    #[serde(rename_all = "camelCase")]
    Entries {
        /// Request id.
        id: u64,
        /// The entries, each with its id (its place in the trace).
        entries: Vec<Entry>,
    },
    /// Audit logs drawn as a trace, with their findings explained: what
    /// `recon audit` reports, shown on the timeline.
    #[serde(rename_all = "camelCase")]
    Audited {
        /// Request id.
        id: u64,
        /// [`Trace::hash`] of the trace (the same logs give the same hash).
        hash: String,
        /// Wall-clock milliseconds the reading took.
        wall_ms: f64,
        /// The history, as a trace: lanes per API server and per client.
        trace: Trace,
        /// One explanation per finding, its steps pointing at the trace.
        explanations: Vec<Explanation>,
        /// What was read, in one line (events, logs, the time they span).
        summary: String,
        /// What could not be judged and why, one line each.
        unjudged: Vec<String>,
        /// The lines skipped and files refused, each at its file and line
        /// (empty when the input was clean): the rest is drawn all the same.
        problems: String,
    },
    /// A request failed: the scenario is invalid or a plugin was rejected.
    /// The page keeps its previous state.
    #[serde(rename_all = "camelCase")]
    Failed {
        /// Request id.
        id: u64,
        /// The component a rejected plugin was for, if that is what failed.
        component: Option<String>,
        /// One line (a scenario error may have one line per diagnostic).
        error: String,
    },
}

impl FromWorker {
    /// The id of the request this answers (0 for [`FromWorker::Ready`],
    /// which answers none).
    pub fn id(&self) -> u64 {
        match self {
            FromWorker::Ready => 0,
            FromWorker::Progress { id, .. }
            | FromWorker::Done { id, .. }
            | FromWorker::Snapshot { id, .. }
            | FromWorker::Checked { id, .. }
            | FromWorker::AuditProgress { id, .. }
            | FromWorker::Audited { id, .. }
            | FromWorker::Entries { id, .. }
            | FromWorker::Failed { id, .. } => *id,
            FromWorker::Search(report) => report.id(),
        }
    }
}

/// The page's side of [`FromWorker::Entries`]: holds the entries that
/// come ahead of an answer and puts them back into its trace, so that the
/// rest of the page sees each answer whole, as the worker made it.
#[derive(Debug, Default)]
pub struct Reassembly {
    /// The request whose entries are held.
    id: u64,
    /// Its entries so far, in order.
    entries: Entries,
    /// The names and keys of the answer being read, each kept once
    /// ([`recon_trace::read_shared`]).
    names: Interner,
}

impl Reassembly {
    /// Reads one message from the worker (its JSON) and takes it in, as
    /// [`Reassembly::receive`] does. The names and keys of an answer's
    /// trace are read as one shared copy each, as the worker's trace holds
    /// them, rather than a copy in every entry that names them.
    pub fn read(&mut self, json: &str) -> Result<Option<FromWorker>, String> {
        let message = read_shared(&mut self.names, || serde_json::from_str::<FromWorker>(json))
            .map_err(|e| format!("unreadable message from the worker: {e}"))?;
        let received = self.receive(message);
        if !matches!(received, Ok(None)) {
            // An answer is whole (or failed): its names go with it.
            self.names = Interner::new();
        }
        received
    }

    /// Takes in one message from the worker. Entries are held (`None`);
    /// the answer they came ahead of is returned with them in its trace;
    /// any other message is returned as it came. A run of entries that
    /// does not continue the last one is an error (the messages of one
    /// worker arrive in the order they were posted, so it is a bug).
    pub fn receive(&mut self, mut message: FromWorker) -> Result<Option<FromWorker>, String> {
        match &mut message {
            FromWorker::Entries { id, entries } => {
                if *id != self.id {
                    // A new answer: what an earlier one left unfinished (its
                    // request replaced, its worker stopped) is let go.
                    self.id = *id;
                    self.entries = Entries::new();
                }
                let next = self.entries.len() as u64;
                if let Some(first) = entries.first()
                    && first.id != next
                {
                    return Err(format!(
                        "the worker sent trace entries out of order: entry {} where {next} was next",
                        first.id
                    ));
                }
                self.entries.extend(std::mem::take(entries));
                return Ok(None);
            }
            FromWorker::Done { id, trace, .. } | FromWorker::Audited { id, trace, .. } if *id == self.id => {
                let held = std::mem::take(&mut self.entries);
                if !held.is_empty() {
                    if !trace.entries.is_empty() {
                        return Err("the worker sent a trace's entries both ahead of its answer and in it".into());
                    }
                    trace.entries = held;
                }
            }
            FromWorker::Failed { id, .. } if *id == self.id => self.entries = Entries::new(),
            _ => {}
        }
        Ok(Some(message))
    }
}

impl ToWorker {
    /// The request's id.
    pub fn id(&self) -> u64 {
        match self {
            ToWorker::Run { id, .. } | ToWorker::Inspect { id, .. } | ToWorker::Check { id, .. } => *id,
            ToWorker::Audit { id, .. } => *id,
            ToWorker::Search(request) => request.id,
            ToWorker::Shrink(request) => request.id,
            ToWorker::Orderings(request) => request.id,
            ToWorker::SelfTestPanic => 0,
        }
    }
}

/// The text shown for a panic, by the page's hook and the worker's: its
/// message and where it happened.
pub fn describe_panic(info: &std::panic::PanicHookInfo<'_>) -> String {
    let message = recon_abi::panic_message(info.payload()).unwrap_or("an internal error").to_owned();
    match info.location() {
        Some(at) => format!("{message} (at {}:{})", at.file(), at.line()),
        None => message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trace_crosses_to_the_page_unchanged() {
        let library = recon_catalog::scenario(recon_catalog::DEFAULT_SCENARIO).unwrap();
        let scenario = recon_scenario::parse("default.yaml", library.yaml).unwrap();
        let mut sim = recon_sim::Sim::new(&scenario, Box::new(|c| recon_catalog::instantiate(&c.controller))).unwrap();
        sim.run();
        let trace = sim.into_trace();
        let hash = trace.hash();
        let sent =
            serde_json::to_string(&FromWorker::Done { id: 7, hash: hash.clone(), wall_ms: Some(1.5), trace }).unwrap();
        let FromWorker::Done { id, hash: received_hash, trace, .. } = serde_json::from_str(&sent).unwrap() else {
            panic!("a Done message decodes as Done")
        };
        assert_eq!((id, &received_hash), (7, &hash));
        assert_eq!(trace.hash(), hash, "the decoded trace encodes to the same bytes");
    }

    /// The default scenario's run, its trace cut into runs of `n` entries
    /// sent ahead, as the worker sends it; and the answer as made.
    fn sent_ahead(n: usize) -> (Vec<FromWorker>, FromWorker) {
        let library = recon_catalog::scenario(recon_catalog::DEFAULT_SCENARIO).unwrap();
        let scenario = recon_scenario::parse("default.yaml", library.yaml).unwrap();
        let mut sim = recon_sim::Sim::new(&scenario, Box::new(|c| recon_catalog::instantiate(&c.controller))).unwrap();
        sim.run();
        let trace = sim.into_trace();
        let whole = FromWorker::Done { id: 4, hash: trace.hash(), wall_ms: None, trace: trace.clone() };
        let entries: Vec<Entry> = trace.entries.iter().cloned().collect();
        let mut messages: Vec<FromWorker> =
            entries.chunks(n).map(|run| FromWorker::Entries { id: 4, entries: run.to_vec() }).collect();
        let hash = trace.hash();
        messages.push(FromWorker::Done {
            id: 4,
            hash,
            wall_ms: None,
            trace: Trace { entries: Entries::new(), ..trace },
        });
        (messages, whole)
    }

    // The page puts a trace's entries back into the answer they came
    // ahead of, and hands on nothing before it.
    #[test]
    fn entries_sent_ahead_are_put_back_into_their_answer() {
        let (messages, whole) = sent_ahead(10);
        assert!(messages.len() > 3);
        let mut reassembly = Reassembly::default();
        let mut out = Vec::new();
        for message in messages {
            out.extend(reassembly.read(&serde_json::to_string(&message).unwrap()).unwrap());
        }
        let [answer] = &out[..] else { panic!("{} answers", out.len()) };
        assert_eq!(serde_json::to_string(answer).unwrap(), serde_json::to_string(&whole).unwrap());
        // Read as the page reads it, each writer's name is one copy for
        // the whole trace, across the messages it came in.
        let FromWorker::Done { trace, .. } = answer else { panic!("a Done") };
        let mut copies: std::collections::BTreeMap<&str, std::collections::BTreeSet<usize>> = Default::default();
        for entry in &trace.entries {
            if let recon_trace::Event::StoreWrite { by, .. } = &entry.event {
                copies.entry(by.as_str()).or_default().insert(by.as_str().as_ptr() as usize);
            }
        }
        assert!(copies.values().map(|c| c.len()).sum::<usize>() > 1, "several writers: {copies:?}");
        assert!(copies.values().all(|c| c.len() == 1), "one copy of each writer's name: {copies:?}");
        // An answer that came whole (a recorded one) passes unchanged.
        let answer = reassembly.receive(whole.clone()).unwrap().unwrap();
        assert_eq!(serde_json::to_string(&answer).unwrap(), serde_json::to_string(&whole).unwrap());
    }

    // Entries out of order are an error that says so; an answer's entries
    // left unfinished (its request replaced, or failed) are let go.
    #[test]
    fn entries_out_of_order_or_unfinished_are_not_put_into_an_answer() {
        let (messages, whole) = sent_ahead(10);
        let mut reassembly = Reassembly::default();
        assert_eq!(reassembly.receive(messages[0].clone()).unwrap().map(|m| m.id()), None);
        let error = reassembly.read(&serde_json::to_string(&messages[2]).unwrap()).unwrap_err();
        assert!(error.contains("out of order: entry 20 where 10 was next"), "{error}");
        // A failure of the same request lets its entries go.
        let mut reassembly = Reassembly::default();
        reassembly.receive(messages[0].clone()).unwrap();
        let failed = FromWorker::Failed { id: 4, component: None, error: "too big".into() };
        assert!(reassembly.receive(failed).unwrap().is_some(), "the failure is handed on");
        let FromWorker::Done { trace, .. } = reassembly.receive(messages.last().unwrap().clone()).unwrap().unwrap()
        else {
            panic!("a Done")
        };
        assert!(trace.entries.is_empty(), "the failed request's entries were let go");
        // Entries of a newer request replace an older one's unfinished ones.
        let mut reassembly = Reassembly::default();
        reassembly.receive(messages[0].clone()).unwrap();
        for message in messages.iter().cloned() {
            let renumbered = match message {
                FromWorker::Entries { entries, .. } => FromWorker::Entries { id: 5, entries },
                FromWorker::Done { hash, wall_ms, trace, .. } => FromWorker::Done { id: 5, hash, wall_ms, trace },
                other => other,
            };
            if let Some(FromWorker::Done { trace, .. }) = reassembly.receive(renumbered).unwrap() {
                let FromWorker::Done { trace: sent, .. } = &whole else { unreachable!() };
                assert_eq!(trace.hash(), sent.hash(), "only the newer request's entries, each once");
            }
        }
    }

    fn upload() -> Upload {
        let plugin = PluginBytes::new(vec![0, 97, 115, 109, 1, 0, 0, 0]);
        Upload { component: "kubelet-node-1".into(), file_name: "k.wasm".into(), plugin }
    }

    #[test]
    fn requests_name_their_plugins_by_key_without_carrying_the_bytes() {
        let upload = upload();
        let request = ToWorker::Run { id: 3, scenario: "name: x".into(), seed: 9, uploads: vec![upload.to_ref()] };
        let text = serde_json::to_string(&request).unwrap();
        assert!(text.contains(&format!(r#""key":"{}""#, upload.plugin.key())), "{text}");
        assert!(!text.contains("[0,97"), "no bytes in the request: {text}");
        let ToWorker::Run { id, seed, uploads, .. } = serde_json::from_str(&text).unwrap() else { panic!("a Run") };
        assert_eq!((id, seed, uploads), (3, 9, vec![upload.to_ref()]));
        assert_eq!(request.id(), 3);
    }

    #[test]
    fn each_plugin_crosses_once_per_worker_and_again_to_a_replaced_worker() {
        let (a, b) = (upload().plugin, PluginBytes::new(b"\0asm other".to_vec()));
        let mut worker = Delivery::default();
        assert_eq!(worker.unsent(std::slice::from_ref(&a)), vec![&a]);
        // The next run names both: only the new one crosses.
        assert_eq!(worker.unsent(&[a.clone(), b.clone()]), vec![&b]);
        assert!(worker.unsent(&[a.clone(), b.clone()]).is_empty());
        // The same bytes twice (the fixed kubelet on both kubelets) cross once.
        assert_eq!(Delivery::default().unsent(&[a.clone(), a.clone()]), vec![&a]);
        // A replaced worker has been sent nothing.
        let mut replacement = Delivery::default();
        assert_eq!(replacement.unsent(&[a.clone(), b.clone()]), vec![&a, &b]);
    }
}
