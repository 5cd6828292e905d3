//! The page's handle on the simulation worker: start it, send each plugin
//! it needs once ([`Delivery`]) and queue requests until it is ready,
//! restart it to stop a run, and a watchdog that restarts it when it stops
//! answering.

use gloo::timers::callback::Timeout;
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::Closure;
use web_sys::{MessageEvent, Worker};
use yew::Callback;

use recon_prepare::PluginBytes;

use recon_web_protocol::{Delivery, FromWorker, Reassembly, ToWorker};

/// The worker's script, as Trunk emits it next to `index.html`.
const WORKER_SCRIPT: &str = "./recon-worker_loader.js";

/// How long a busy worker may stay silent before the page gives up on it,
/// before its run has reported any entries ([`super::watchdog_ms`] adds
/// time to send a large trace). Runs report progress ten times a second
/// and a plugin call runs out of fuel within seconds, so only a host bug or
/// an engine without the instrumented fuel gets here: this is the last
/// resort, not the limit.
pub const WATCHDOG_MS: u32 = 30_000;

/// What the worker link tells the app.
pub enum Event {
    /// A message from the worker.
    Message(FromWorker),
    /// A run of trace entries ahead of their answer ([`FromWorker::Entries`]),
    /// kept until the answer comes: the worker is alive, the app has
    /// nothing to show yet (hand it to [`WorkerLink::heard`]).
    Heard,
    /// The worker failed to load or threw; the text says how.
    Broken(String),
    /// A busy worker was silent for this many milliseconds
    /// ([`super::watchdog_ms`]) and has been restarted.
    Stalled(u32),
}

/// A message on its way to the worker.
enum Outgoing {
    /// A plugin's bytes, posted as a binary message.
    Plugin(PluginBytes),
    /// A request, as JSON.
    Request(String),
    /// An audit request, as JSON, with its files (posted together).
    Audit(String, Vec<web_sys::File>),
}

/// A running worker and what it has not yet been sent.
pub struct WorkerLink {
    worker: Worker,
    on_event: Callback<Event>,
    ready: bool,
    /// The plugins this worker has been sent (or will be, from the queue).
    delivery: Delivery,
    /// Messages waiting for the worker to be ready, in order.
    queue: Vec<Outgoing>,
    /// Whether a request is in flight (the watchdog only watches then).
    busy: bool,
    /// Trace entries the request in flight has reported: the watchdog gives
    /// the end of a large run time to send its trace.
    entries: u64,
    watchdog: Option<Timeout>,
    _handlers: Handlers,
}

/// The closures the worker calls; dropped (and so unhooked) with the link.
struct Handlers {
    _message: Closure<dyn FnMut(MessageEvent)>,
    _error: Closure<dyn FnMut(web_sys::Event)>,
}

impl WorkerLink {
    /// Starts a worker that reports to `on_event`.
    pub fn start(on_event: Callback<Event>) -> Result<WorkerLink, String> {
        let worker = Worker::new(WORKER_SCRIPT).map_err(|e| format!("the simulation worker did not start: {e:?}"))?;
        let messages = on_event.clone();
        // A trace's entries come ahead of their answer, in messages of
        // their own: the app sees the answer whole.
        let mut reassembly = Reassembly::default();
        let message = Closure::<dyn FnMut(MessageEvent)>::new(move |event: MessageEvent| {
            // The worker sends JSON bytes in a transferred ArrayBuffer.
            let data = event.data();
            // Checked as UTF-8 once, as a whole: `serde_json`'s reader over
            // bytes checks every string on its own.
            let text = match data.dyn_ref::<js_sys::ArrayBuffer>() {
                Some(buffer) => String::from_utf8(js_sys::Uint8Array::new(buffer).to_vec())
                    .map_err(|e| format!("unreadable message from the worker: {e}")),
                None => Ok(data.as_string().unwrap_or_default()),
            };
            match text.and_then(|text| reassembly.read(&text)) {
                Ok(Some(message)) => messages.emit(Event::Message(message)),
                Ok(None) => messages.emit(Event::Heard),
                Err(e) => messages.emit(Event::Broken(e)),
            }
        });
        let errors = on_event.clone();
        let error = Closure::<dyn FnMut(web_sys::Event)>::new(move |event: web_sys::Event| {
            let text = event
                .dyn_ref::<web_sys::ErrorEvent>()
                .map_or_else(|| "it could not be loaded".to_owned(), |e| e.message());
            errors.emit(Event::Broken(format!("the simulation worker failed: {text}")));
        });
        worker.set_onmessage(Some(message.as_ref().unchecked_ref()));
        worker.set_onerror(Some(error.as_ref().unchecked_ref()));
        Ok(WorkerLink {
            worker,
            on_event,
            ready: false,
            delivery: Delivery::default(),
            queue: Vec::new(),
            busy: false,
            entries: 0,
            watchdog: None,
            _handlers: Handlers { _message: message, _error: error },
        })
    }

    /// Sends a request now, or when the worker is ready, after the bytes
    /// of each of `plugins` (those the request names) this worker has not
    /// been sent yet.
    pub fn send(&mut self, request: &ToWorker, plugins: &[PluginBytes]) {
        let unsent = self.delivery.unsent(plugins).into_iter().cloned().map(Outgoing::Plugin);
        let text = serde_json::to_string(request).expect("requests are plain data");
        self.post_when_ready(unsent.chain([Outgoing::Request(text)]).collect());
    }

    /// Sends an audit request ([`ToWorker::Audit`]) with its files, in one
    /// message: each `File` crosses as a handle, and the worker reads it
    /// from the visitor's disk itself.
    pub fn send_audit(&mut self, request: &ToWorker, files: Vec<web_sys::File>) {
        let text = serde_json::to_string(request).expect("requests are plain data");
        self.post_when_ready(vec![Outgoing::Audit(text, files)]);
    }

    /// Posts `messages` now, or queues them until the worker is ready; the
    /// worker is busy from now.
    fn post_when_ready(&mut self, messages: Vec<Outgoing>) {
        if self.ready {
            messages.into_iter().for_each(|message| self.post(message));
        } else {
            self.queue.extend(messages);
        }
        self.busy = true;
        self.entries = 0;
        self.arm_watchdog();
    }

    /// Posts one message; a plugin's bytes go as an `ArrayBuffer` handed
    /// over to the worker (a copy of the page's, moved rather than cloned
    /// again by the browser).
    fn post(&self, message: Outgoing) {
        // Posting fails only if the worker is gone; its error event says so.
        let _ = match message {
            Outgoing::Plugin(plugin) => {
                let bytes = js_sys::Uint8Array::from(plugin.bytes());
                let buffer = bytes.buffer();
                self.worker.post_message_with_transfer(&buffer, &js_sys::Array::of1(&buffer))
            }
            Outgoing::Request(text) => self.worker.post_message(&text.into()),
            Outgoing::Audit(text, files) => {
                let message = js_sys::Array::of1(&text.into());
                for file in files {
                    message.push(&file);
                }
                self.worker.post_message(&message)
            }
        };
    }

    /// Called by the app for every message from this worker.
    pub fn received(&mut self, message: &FromWorker) {
        match message {
            FromWorker::Ready => {
                self.ready = true;
                for message in std::mem::take(&mut self.queue) {
                    self.post(message);
                }
            }
            FromWorker::Progress { entries, .. } => self.entries = *entries,
            FromWorker::AuditProgress { .. } | FromWorker::Entries { .. } => {}
            FromWorker::Search(report) => self.busy = !report.is_final(),
            FromWorker::Done { .. }
            | FromWorker::Audited { .. }
            | FromWorker::Snapshot { .. }
            | FromWorker::Checked { .. }
            | FromWorker::Failed { .. } => self.busy = false,
        }
        self.arm_watchdog();
    }

    /// Called by the app when the worker sent entries ahead of an answer
    /// ([`Event::Heard`]): the watchdog starts again, as for any message.
    pub fn heard(&mut self) {
        self.arm_watchdog();
    }

    /// Whether the worker has loaded and answered.
    pub fn ready(&self) -> bool {
        self.ready
    }

    /// Whether a request is in flight.
    pub fn busy(&self) -> bool {
        self.busy
    }

    /// Stops whatever the worker is doing by replacing it with a fresh one.
    pub fn restart(&mut self) -> Result<(), String> {
        self.worker.terminate();
        *self = WorkerLink::start(self.on_event.clone())?;
        Ok(())
    }

    fn arm_watchdog(&mut self) {
        self.watchdog = None;
        if !self.busy {
            return;
        }
        let on_event = self.on_event.clone();
        let quiet_ms = super::watchdog_ms(self.entries).max(WATCHDOG_MS);
        self.watchdog = Some(Timeout::new(quiet_ms, move || on_event.emit(Event::Stalled(quiet_ms))));
    }
}

impl Drop for WorkerLink {
    fn drop(&mut self) {
        self.worker.terminate();
    }
}
