//! "Find a violation": the search of `recon_worker::search` across several Web
//! Workers, with a progress bar, a cancel button, and the shrunk scenario
//! opened as the current run. Or, chosen beside the button, the search over
//! orderings (`recon explore --orderings`, with its run budget and stale-view
//! bound) in one worker: its finding is two orderings whose outcomes differ,
//! with the diff of their end states (or one that breaks a check), each
//! opened with a button or a share link.
//!
//! [`Hunt`] is the search's state as the page sees it, a pure reducer over
//! the workers' reports (tested natively); the rest (wasm32 only) starts
//! the workers, feeds the reducer and draws the panel.

use recon_web_protocol::search::{FoundOrdering, SearchReport};

/// What "Find a violation" searches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Fault schedules (`recon explore`), across workers.
    Faults,
    /// Orderings of reconciles due at the same moment (`recon explore
    /// --orderings`), in one worker.
    Orderings {
        /// At most this many runs.
        max_runs: usize,
        /// At most this many reconciles a run get a stale view.
        stale_views: usize,
    },
}

/// The ordering search's default run budget (the README's `--orderings 100`).
pub const DEFAULT_ORDERING_RUNS: usize = 100;

/// What one worker's shard has reported.
#[derive(Clone, Debug, Default, PartialEq)]
struct Shard {
    /// Whether it has reported its plans (before that, it has checked nothing).
    started: bool,
    /// Plans it has run.
    done: usize,
    /// The index of the next plan it runs; `None` once finished (or found).
    next: Option<usize>,
    /// Its first failing plan: index, the plan and what it broke.
    found: Option<(usize, String, String)>,
}

impl Shard {
    /// Whether every plan of this shard with an index below `index` has
    /// run (so none of them can be a lower failure than `index`).
    fn cleared_below(&self, index: usize) -> bool {
        self.found.is_some() || (self.started && self.next.is_none_or(|next| next > index))
    }
}

/// Where a search is.
#[derive(Clone, Debug, PartialEq)]
pub enum Phase {
    /// The workers run their shards.
    Searching,
    /// The lowest failing plan is known; one worker shrinks it.
    Shrinking {
        /// Its index in the whole plan list.
        index: usize,
        /// The plan in one line.
        plan: String,
        /// What it broke.
        broken: String,
    },
    /// Found and shrunk; the scenario is opened.
    Found {
        /// The failing plan's index in the whole plan list.
        index: usize,
        /// The shrunk plan's faults.
        faults: Vec<String>,
        /// Runs the shrinking took.
        runs: usize,
        /// What it breaks.
        broken: String,
    },
    /// Every plan within the budget ran and nothing broke.
    NothingFound,
    /// The ordering search found runs to open: two whose end states
    /// differ (`diff`), or one that breaks a check (`broken`).
    OrderingsFound {
        /// The runs, each with the scenario that replays it.
        found: Vec<FoundOrdering>,
        /// Where the two end states differ.
        diff: Vec<String>,
        /// What the one run breaks.
        broken: Option<String>,
    },
    /// The ordering search found nothing; whether it ran every ordering it reaches.
    OrderingsClean {
        /// Every ordering within reach ran (not just the budget).
        exhausted: bool,
    },
    /// The workload breaks something without any fault.
    Unsearchable(String),
    /// A worker failed (invalid scenario, rejected plugin, stopped answering).
    Failed(String),
    /// The user cancelled it.
    Cancelled,
}

/// What the page must do after a report.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// Nothing new to show.
    Nothing,
    /// Progress: redraw when convenient.
    Redraw,
    /// The lowest failing plan is known: stop every other worker and ask
    /// `worker` (which found it and is idle) to shrink it.
    Shrink {
        /// The worker.
        worker: usize,
        /// The plan's index.
        index: usize,
    },
    /// The search is over: stop the workers.
    Finished,
    /// The search is over: stop the workers and open this scenario (YAML).
    Open(String),
}

/// A search across workers, as the page sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct Hunt {
    /// The id of its requests.
    pub id: u64,
    shards: Vec<Shard>,
    /// Plans the search runs at most, once a worker has said.
    pub total: Option<usize>,
    /// Where it is.
    pub phase: Phase,
    /// What it searches.
    pub mode: Mode,
    /// Runs an ordering search has made.
    runs: usize,
}

impl Hunt {
    /// A search with request id `id` across `workers` workers.
    pub fn new(id: u64, workers: usize) -> Hunt {
        let shards = vec![Shard::default(); workers.max(1)];
        Hunt { id, shards, total: None, phase: Phase::Searching, mode: Mode::Faults, runs: 0 }
    }

    /// An ordering search with request id `id`, in one worker.
    pub fn orderings(id: u64, max_runs: usize, stale_views: usize) -> Hunt {
        let mode = Mode::Orderings { max_runs, stale_views };
        Hunt { total: Some(max_runs), mode, ..Hunt::new(id, 1) }
    }

    /// Plans (or, searching orderings, runs) so far, over every worker.
    pub fn done(&self) -> usize {
        match self.mode {
            Mode::Faults => self.shards.iter().map(|s| s.done).sum(),
            Mode::Orderings { .. } => self.runs,
        }
    }

    /// Whether the workers are still at work (searching or shrinking).
    pub fn running(&self) -> bool {
        matches!(self.phase, Phase::Searching | Phase::Shrinking { .. })
    }

    /// Handles a report from worker `worker`.
    pub fn receive(&mut self, worker: usize, report: SearchReport) -> Step {
        if report.id() != self.id || !self.running() {
            return Step::Nothing;
        }
        if let SearchReport::Shrunk { index, scenario, faults, runs, broken, .. } = report {
            if !matches!(self.phase, Phase::Shrinking { .. }) {
                return Step::Nothing;
            }
            self.phase = Phase::Found { index, faults, runs, broken };
            return Step::Open(scenario);
        }
        if self.phase != Phase::Searching {
            return Step::Nothing;
        }
        match report {
            SearchReport::OrderingProgress { runs, .. } => {
                self.runs = runs;
                return Step::Redraw;
            }
            SearchReport::Orderings { runs, exhausted, found, diff, broken, .. } => {
                self.runs = runs;
                self.phase = if found.is_empty() {
                    Phase::OrderingsClean { exhausted }
                } else {
                    Phase::OrderingsFound { found, diff, broken }
                };
                return Step::Finished;
            }
            _ => {}
        }
        let Some(shard) = self.shards.get_mut(worker) else { return Step::Nothing };
        match report {
            SearchReport::Plans { total, next, .. } => {
                self.total = Some(total);
                shard.started = true;
                shard.next = next;
            }
            SearchReport::Progress { done, next, .. } => {
                shard.started = true;
                shard.done = done;
                shard.next = next;
            }
            SearchReport::Found { index, done, plan, broken, .. } => {
                shard.started = true;
                shard.done = done;
                shard.next = None;
                shard.found = Some((index, plan, broken));
            }
            SearchReport::Unsearchable { broken, .. } => {
                self.phase = Phase::Unsearchable(broken);
                return Step::Finished;
            }
            SearchReport::Shrunk { .. } | SearchReport::OrderingProgress { .. } | SearchReport::Orderings { .. } => {
                unreachable!("handled above")
            }
        }
        self.decide()
    }

    /// Whether the reports so far settle the search.
    fn decide(&mut self) -> Step {
        let lowest = self
            .shards
            .iter()
            .enumerate()
            .filter_map(|(worker, s)| s.found.as_ref().map(|(index, ..)| (*index, worker)))
            .min();
        match lowest {
            Some((index, worker)) if self.shards.iter().all(|s| s.cleared_below(index)) => {
                let (_, plan, broken) = self.shards[worker].found.clone().expect("it found one");
                self.phase = Phase::Shrinking { index, plan, broken };
                Step::Shrink { worker, index }
            }
            None if self.shards.iter().all(|s| s.started && s.next.is_none()) => {
                self.phase = Phase::NothingFound;
                Step::Finished
            }
            _ => Step::Redraw,
        }
    }

    /// A worker failed; the search is over.
    pub fn fail(&mut self, error: String) {
        if self.running() {
            self.phase = Phase::Failed(error);
        }
    }

    /// The user stopped it.
    pub fn cancel(&mut self) {
        if self.running() {
            self.phase = Phase::Cancelled;
        }
    }

    /// The result in words, once there is one.
    pub fn summary(&self) -> Option<String> {
        let total = self.total.unwrap_or_default();
        let done = self.done();
        Some(match &self.phase {
            Phase::Searching => return None,
            Phase::Shrinking { index, broken, .. } => {
                format!("Plan #{index} of {total} breaks {broken}. Shrinking it…")
            }
            Phase::Found { index, faults, runs, broken } => format!(
                "Found after {done} of {total} plans: plan #{index} breaks {broken}. Shrunk in {runs} runs to {}: \
                 {}. Opened below as the current scenario.",
                super::count(faults.len(), "fault"),
                faults.join("; ")
            ),
            Phase::NothingFound => {
                format!("Nothing broke: all {done} plans ran (every one within the budget) and every check held.")
            }
            Phase::Unsearchable(broken) => {
                format!("The workload breaks {broken} without any fault: there is nothing to search for.")
            }
            Phase::Failed(error) => format!("The search failed: {error}"),
            Phase::OrderingsFound { found, diff, broken: None } => format!(
                "The outcome depends on the order: after {}, ordering 1 ({}) and ordering 2 ({}) end in different \
                 states ({}). Open either below.",
                super::count(done, "run"),
                found.first().map_or("", |f| f.description.as_str()),
                found.get(1).map_or("", |f| f.description.as_str()),
                super::count(diff.len(), "field"),
            ),
            Phase::OrderingsFound { found, broken: Some(broken), .. } => format!(
                "After {}, the ordering {} breaks {broken}. Open it below.",
                super::count(done, "run"),
                found.first().map_or("", |f| f.description.as_str()),
            ),
            Phase::OrderingsClean { exhausted: true } => format!(
                "Every ordering the search reaches ends the same and breaks nothing ({}).",
                super::count(done, "run")
            ),
            Phase::OrderingsClean { exhausted: false } => {
                format!("Nothing found within the budget of {total} runs: every run ended the same and broke nothing.")
            }
            Phase::Cancelled => match self.mode {
                Mode::Faults => format!("Cancelled after {done} of {total} plans."),
                Mode::Orderings { .. } => format!("Cancelled after {}.", super::count(done, "run")),
            },
        })
    }
}

/// At most this many search workers, whatever the machine has.
#[cfg(any(test, target_arch = "wasm32"))]
const MAX_WORKERS: usize = 4;

/// How many workers a search uses: one per core, at most [`MAX_WORKERS`],
/// and only as many as leave the tab room for a run beside them when each
/// holds an instance of every one of `plugin_components` components
/// ([`recon_web_protocol::TAB_PLUGIN_INSTANCES`]); one at the least.
#[cfg(any(test, target_arch = "wasm32"))]
fn search_workers(cores: usize, plugin_components: usize) -> usize {
    let room = recon_web_protocol::TAB_PLUGIN_INSTANCES
        .checked_div(plugin_components)
        .map_or(MAX_WORKERS, |n| n.saturating_sub(1));
    cores.min(room).clamp(1, MAX_WORKERS)
}

#[cfg(target_arch = "wasm32")]
pub(super) use view::{Search, SearchMsg, panel};

#[cfg(target_arch = "wasm32")]
mod view {
    use yew::prelude::*;

    use super::{DEFAULT_ORDERING_RUNS, Hunt, Mode, Phase, Step, found_orderings};
    use crate::app::page::{App, Msg};
    use crate::app::panels::input_by_id;
    use crate::app::worker_link::{Event as WorkerEvent, WorkerLink};
    use recon_web_protocol::search::{OrderingRequest, SearchRequest, ShrinkRequest};
    use recon_web_protocol::{FromWorker, ToWorker};

    /// Redraw the progress bar at most this often, in milliseconds (every
    /// plan reports, which is hundreds of times a second).
    const REDRAW_EVERY_MS: f64 = 50.0;

    /// The search's part of the page state.
    #[derive(Default)]
    pub struct Search {
        hunt: Option<Hunt>,
        /// The workers of the search in flight, by shard; `None` once stopped.
        workers: Vec<Option<WorkerLink>>,
        /// What the search was started on: scenario text, uploads and their bytes.
        input: Option<SearchInput>,
        /// When the page last redrew for progress.
        last_redraw: f64,
        /// Whether the next search is over orderings (the kind chosen beside the button).
        orderings: bool,
    }

    /// What a search was started on.
    struct SearchInput {
        /// The scenario, as YAML.
        scenario: String,
        /// The uploads, as requests name them.
        uploads: Vec<recon_web_protocol::UploadRef>,
        /// Their bytes, sent to each worker once.
        plugins: Vec<recon_prepare::PluginBytes>,
    }

    /// What the search panel and its workers send the page.
    pub enum SearchMsg {
        /// The "Find a violation" button.
        Start,
        /// The kind of search chosen: orderings (true) or fault schedules.
        Orderings(bool),
        /// The cancel button.
        Cancel,
        /// Something from search worker `worker` of search `id`.
        Worker(u64, usize, WorkerEvent),
    }

    fn now_ms() -> f64 {
        web_sys::window().and_then(|w| w.performance()).map_or(0.0, |p| p.now())
    }

    /// How many workers to search with, on this machine ([`super::search_workers`]).
    fn worker_count(plugin_components: usize) -> usize {
        let cores = web_sys::window().map_or(1.0, |w| w.navigator().hardware_concurrency());
        super::search_workers(cores as usize, plugin_components)
    }

    impl App {
        /// Handles a search message; returns whether to redraw.
        pub(in crate::app) fn search_update(&mut self, ctx: &Context<App>, msg: SearchMsg) -> bool {
            match msg {
                SearchMsg::Start if self.search.orderings => self.start_ordering_search(ctx),
                SearchMsg::Start => self.start_search(ctx),
                SearchMsg::Orderings(on) => {
                    self.search.orderings = on;
                    true
                }
                SearchMsg::Cancel => {
                    self.search.workers.clear();
                    if let Some(hunt) = &mut self.search.hunt {
                        hunt.cancel();
                    }
                    true
                }
                SearchMsg::Worker(id, worker, event) => {
                    if self.search.hunt.as_ref().is_none_or(|h| h.id != id) {
                        return false;
                    }
                    self.search_event(ctx, worker, event)
                }
            }
        }

        fn start_search(&mut self, ctx: &Context<App>) -> bool {
            let id = self.state.next_id();
            let setup = &self.state.current;
            let input =
                SearchInput { scenario: setup.scenario_text(), uploads: setup.upload_refs(), plugins: setup.plugins() };
            let count = worker_count(setup.uploads.len());
            let mut workers = Vec::with_capacity(count);
            for shard in 0..count {
                let on_event = ctx.link().callback(move |e| Msg::Search(SearchMsg::Worker(id, shard, e)));
                match WorkerLink::start(on_event) {
                    Ok(mut link) => {
                        let request =
                            SearchRequest::new(id, input.scenario.clone(), input.uploads.clone(), shard, count);
                        link.send(&ToWorker::Search(request), &input.plugins);
                        workers.push(Some(link));
                    }
                    Err(error) => {
                        self.state.error = Some(error);
                        return true;
                    }
                }
            }
            self.search = Search {
                hunt: Some(Hunt::new(id, count)),
                workers,
                input: Some(input),
                last_redraw: now_ms(),
                orderings: false,
            };
            true
        }

        /// Starts the search over orderings in one worker, with the bounds
        /// typed beside the button.
        fn start_ordering_search(&mut self, ctx: &Context<App>) -> bool {
            let id = self.state.next_id();
            let setup = &self.state.current;
            let input =
                SearchInput { scenario: setup.scenario_text(), uploads: setup.upload_refs(), plugins: setup.plugins() };
            let read = |field: &str, default: usize| {
                input_by_id(field).and_then(|i| i.value().trim().parse().ok()).unwrap_or(default)
            };
            let max_runs = read("ordering-runs", DEFAULT_ORDERING_RUNS).max(1);
            let stale_views = read("stale-views", 0);
            let on_event = ctx.link().callback(move |e| Msg::Search(SearchMsg::Worker(id, 0, e)));
            let mut link = match WorkerLink::start(on_event) {
                Ok(link) => link,
                Err(error) => {
                    self.state.error = Some(error);
                    return true;
                }
            };
            let request = OrderingRequest {
                id,
                scenario: input.scenario.clone(),
                uploads: input.uploads.clone(),
                max_runs,
                stale_views,
            };
            link.send(&ToWorker::Orderings(request), &input.plugins);
            self.search = Search {
                hunt: Some(Hunt::orderings(id, max_runs, stale_views)),
                workers: vec![Some(link)],
                input: Some(input),
                last_redraw: now_ms(),
                orderings: true,
            };
            true
        }

        fn search_event(&mut self, ctx: &Context<App>, worker: usize, event: WorkerEvent) -> bool {
            let search = &mut self.search;
            let Some(hunt) = search.hunt.as_mut() else { return false };
            let step = match event {
                WorkerEvent::Message(message) => {
                    if let Some(Some(link)) = search.workers.get_mut(worker) {
                        link.received(&message);
                    }
                    match message {
                        FromWorker::Search(report) => hunt.receive(worker, report),
                        FromWorker::Failed { error, .. } => {
                            hunt.fail(error);
                            Step::Finished
                        }
                        _ => Step::Nothing,
                    }
                }
                WorkerEvent::Broken(why) => {
                    hunt.fail(why);
                    Step::Finished
                }
                WorkerEvent::Stalled(_) => {
                    hunt.fail("a search worker stopped answering".into());
                    Step::Finished
                }
                WorkerEvent::Heard => {
                    if let Some(Some(link)) = search.workers.get_mut(worker) {
                        link.heard();
                    }
                    Step::Nothing
                }
            };
            match step {
                Step::Nothing => false,
                Step::Redraw => {
                    let now = now_ms();
                    let due = now - search.last_redraw >= REDRAW_EVERY_MS;
                    if due {
                        search.last_redraw = now;
                    }
                    due
                }
                Step::Shrink { worker, index } => {
                    // Only the worker that found it is needed (it is idle now).
                    for (k, link) in search.workers.iter_mut().enumerate() {
                        if k != worker {
                            *link = None;
                        }
                    }
                    let Some(input) = &search.input else { return false };
                    let (scenario, uploads) = (input.scenario.clone(), input.uploads.clone());
                    let request = ShrinkRequest { id: hunt.id, scenario, uploads, index };
                    if let Some(Some(link)) = search.workers.get_mut(worker) {
                        // It was sent the plugins with its search.
                        link.send(&ToWorker::Shrink(request), &input.plugins);
                    }
                    true
                }
                Step::Finished => {
                    search.workers.clear();
                    true
                }
                Step::Open(scenario) => {
                    search.workers.clear();
                    ctx.link().send_message(Msg::ApplyText(scenario));
                    true
                }
            }
        }
    }

    /// The search panel: the button, the progress bar and the result.
    pub fn panel(app: &App, ctx: &Context<App>) -> Html {
        let link = ctx.link();
        let hunt = app.search.hunt.as_ref();
        let running = hunt.is_some_and(Hunt::running);
        let start = link.callback(|_| Msg::Search(SearchMsg::Start));
        let cancel = link.callback(|_| Msg::Search(SearchMsg::Cancel));
        let kind = link.callback(|e: Event| {
            let orderings = e.target_dyn_into::<web_sys::HtmlSelectElement>().is_some_and(|s| s.value() == "orderings");
            Msg::Search(SearchMsg::Orderings(orderings))
        });
        let orderings = app.search.orderings;
        let unit = match hunt.map(|h| h.mode) {
            Some(Mode::Orderings { .. }) => "runs",
            _ => "plans",
        };
        html! {
            <section class="panel search" id="search">
                <h2>{ "Search" }</h2>
                <p class="hint">
                    { "Look for a fault schedule (partitions, restarts, crashes) that breaks a check, as \
                       recon explore does, on every core; the smallest one found opens as the scenario." }
                </p>
                <div class="search-kind">
                    <label>
                        { "Search " }
                        <select id="search-kind" onchange={kind} disabled={running}>
                            <option value="faults" selected={!orderings}>{ "fault schedules" }</option>
                            <option value="orderings" selected={orderings}>{ "orderings" }</option>
                        </select>
                    </label>
                    if orderings {
                        <label title="At most this many runs, depth-first over who reconciles first">
                            { " runs " }
                            <input id="ordering-runs" type="number" min="1" value={DEFAULT_ORDERING_RUNS.to_string()} />
                        </label>
                        <label title="At most this many reconciles a run are given a stale view (their newest inputs held back)">
                            { " stale views " }
                            <input id="stale-views" type="number" min="0" max="5" value="0" />
                        </label>
                    }
                </div>
                <button id="find-violation" onclick={start} disabled={running}>{ "Find a violation" }</button>
                if let Some(hunt) = hunt {
                    <div class="search-progress">
                        <progress id="search-progress" max={hunt.total.unwrap_or(1).max(1).to_string()}
                            value={hunt.done().to_string()} />
                        <span id="search-count">
                            { match hunt.total {
                                Some(total) => format!(" {} of {total} {unit}", hunt.done()),
                                None => " the fault-free run…".to_owned(),
                            } }
                        </span>
                        if running {
                            <button id="search-cancel" onclick={cancel}>{ "Cancel" }</button>
                        }
                    </div>
                    if let Some(summary) = hunt.summary() {
                        <p id="search-result" class={classes!(match hunt.phase {
                            Phase::Found { .. } | Phase::Shrinking { .. } | Phase::OrderingsFound { .. } => "found",
                            Phase::NothingFound | Phase::OrderingsClean { .. } => "ok",
                            _ => "hint",
                        })}>{ summary }</p>
                    }
                    if let Phase::OrderingsFound { found, diff, .. } = &hunt.phase {
                        { found_orderings(app, ctx, found, diff) }
                    }
                }
            </section>
        }
    }
}

#[cfg(target_arch = "wasm32")]
mod found_view {
    use yew::prelude::*;

    use crate::app::page::{App, Msg, base_url};
    use recon_web_protocol::search::FoundOrdering;

    /// The runs an ordering search found: each with a button that opens
    /// it and a share link that replays it (the link carries the
    /// scenario's `ordering` and `staleViews`), then the diff of their end
    /// states.
    pub fn found_orderings(app: &App, ctx: &Context<App>, found: &[FoundOrdering], diff: &[String]) -> Html {
        let setup = &app.state.current;
        let query = format!("?scenario={}", setup.library);
        html! {
            <div id="orderings-found">
                <ol class="orderings">
                    { for found.iter().enumerate().map(|(i, f)| {
                        let yaml = f.scenario.clone();
                        let open = ctx.link().callback(move |_| Msg::ApplyText(yaml.clone()));
                        let made = crate::share::make(&setup.library, &f.scenario, &setup.upload_list(), None);
                        let href = format!("{}{query}{}", base_url(), made.fragment);
                        html! {
                            <li class="ordering">
                                <span class="ordering-words">{ format!("Ordering {}: {}", i + 1, f.description) }</span>
                                { " " }
                                <button id={format!("open-ordering-{}", i + 1)} onclick={open}>{ "Open" }</button>
                                { " " }
                                <a id={format!("share-ordering-{}", i + 1)} href={href}>{ "share link" }</a>
                            </li>
                        }
                    }) }
                </ol>
                if !diff.is_empty() {
                    <p class="hint">{ "End states (ordering 1 | ordering 2):" }</p>
                    <ul id="orderings-diff" class="orderings-diff">
                        { for diff.iter().map(|line| html! { <li><code>{ line }</code></li> }) }
                    </ul>
                }
            </div>
        }
    }
}

#[cfg(target_arch = "wasm32")]
use found_view::found_orderings;

// Natively only: the reference answer comes from `recon_explore::search`, which needs threads.
#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use recon_explore::{Explorer, SearchOptions};
    use recon_scenario::Scenario;

    use super::*;
    use recon_web_protocol::search::{OrderingRequest, SearchRequest, ShrinkRequest};
    use recon_web_protocol::{FromWorker, ToWorker};
    use recon_worker::runner::{Progress, Runner};

    const WORKLOAD: &str = "pod-safety-59848-workload";

    /// A tab holds about 120 plugin instances: a search of a run with many
    /// plugin components uses fewer workers, never none.
    #[test]
    fn a_search_uses_fewer_workers_when_each_would_hold_many_plugin_instances() {
        assert_eq!(search_workers(8, 0), MAX_WORKERS);
        assert_eq!(search_workers(2, 1), 2);
        assert_eq!(search_workers(0, 0), 1);
        assert_eq!(search_workers(8, 20), 4);
        assert_eq!(search_workers(8, 30), 2);
        assert_eq!(search_workers(8, recon_web_protocol::MAX_PLUGIN_COMPONENTS), 1);
        // More than the tab's room (the worker refuses such a run): still one, no overflow.
        assert_eq!(search_workers(8, recon_web_protocol::TAB_PLUGIN_INSTANCES + 1), 1);
        // A run and its search together stay within the tab's room.
        for components in 1..=recon_web_protocol::MAX_PLUGIN_COMPONENTS {
            let workers = search_workers(8, components);
            assert!((workers + 1) * components <= recon_web_protocol::TAB_PLUGIN_INSTANCES, "{components}");
        }
    }

    struct Collect(Vec<FromWorker>);

    impl Progress for Collect {
        fn now_ms(&mut self) -> f64 {
            0.0
        }
        fn report(&mut self, message: FromWorker) {
            self.0.push(message);
        }
    }

    fn workload() -> Scenario {
        let library = recon_catalog::scenario(WORKLOAD).unwrap();
        recon_scenario::parse("workload.yaml", library.yaml).unwrap()
    }

    fn fixed(mut s: Scenario) -> Scenario {
        for c in &mut s.components {
            if c.controller == "kubelet" {
                c.controller = "kubelet-fixed".into();
            }
        }
        s
    }

    /// Every report of every shard of a search, as the workers would send them.
    fn shard_reports(scenario: &Scenario, shards: usize) -> Vec<Vec<SearchReport>> {
        let text = recon_scenario::to_yaml(scenario);
        (0..shards)
            .map(|i| {
                let mut out = Collect(Vec::new());
                let mut runner = Runner::new().unwrap();
                runner.handle(ToWorker::Search(SearchRequest::new(1, text.clone(), Vec::new(), i, shards)), &mut out);
                out.0
                    .into_iter()
                    .map(|m| match m {
                        FromWorker::Search(report) => report,
                        other => panic!("{other:?}"),
                    })
                    .collect()
            })
            .collect()
    }

    /// Feeds the reports to a hunt, taking from the shards in the order
    /// `pick` says (by shard), until the hunt settles.
    fn settle(shards: &[Vec<SearchReport>], mut pick: impl FnMut(usize) -> usize) -> (Hunt, Step) {
        let mut hunt = Hunt::new(1, shards.len());
        let mut cursors = vec![0; shards.len()];
        for turn in 0.. {
            let mut worker = pick(turn) % shards.len();
            // Skip shards with nothing left to say.
            for _ in 0..shards.len() {
                if cursors[worker] < shards[worker].len() {
                    break;
                }
                worker = (worker + 1) % shards.len();
            }
            let Some(report) = shards[worker].get(cursors[worker]) else { panic!("the hunt never settled: {hunt:?}") };
            cursors[worker] += 1;
            match hunt.receive(worker, report.clone()) {
                Step::Nothing | Step::Redraw => {}
                step => return (hunt, step),
            }
        }
        unreachable!()
    }

    /// `recon explore`'s answer: the lowest failing plan, and the scenario it writes.
    fn native(scenario: &Scenario) -> Option<(usize, String)> {
        let factory = || -> recon_sim::Instantiate { Box::new(|c| recon_catalog::instantiate(&c.controller)) };
        let explorer = Explorer::new(scenario, &factory, false).unwrap();
        let plans = recon_explore::shard(explorer.plans(), recon_explore::DEFAULT_BUDGET, 0, 1);
        let options = SearchOptions { jobs: 1, stop_at_first: true };
        let result = recon_explore::search(&explorer, &plans, &factory, options, &|_| {});
        let first = result.failures.first()?;
        let shrunk = explorer.shrink(&first.plan, &first.finding, &factory);
        Some((first.index, recon_scenario::to_yaml(&explorer.found_scenario(&shrunk))))
    }

    #[test]
    fn the_workers_settle_on_recon_explores_first_failure_whatever_the_order_of_their_reports() {
        let scenario = workload();
        let (index, yaml) = native(&scenario).expect("recon explore cracks the naive kubelet");
        for shards in [1, 2, 3] {
            let reports = shard_reports(&scenario, shards);
            let orders: [&dyn Fn(usize) -> usize; 3] = [&|t| t, &|_| 0, &|t| shards - 1 - t % shards];
            for pick in orders {
                let (hunt, step) = settle(&reports, pick);
                let Step::Shrink { worker, index: found } = step else { panic!("{step:?}") };
                assert_eq!((found, worker), (index, index % shards), "{shards} shards");
                assert!(hunt.done() > index / shards, "every plan of the winning shard before it ran");
                assert!(matches!(&hunt.phase, Phase::Shrinking { broken, .. } if broken.contains("pod identity")));
            }
        }
        // The worker that found it shrinks it into the very scenario `recon explore` writes.
        let mut out = Collect(Vec::new());
        let request = ShrinkRequest { id: 1, scenario: recon_scenario::to_yaml(&scenario), uploads: Vec::new(), index };
        Runner::new().unwrap().handle(ToWorker::Shrink(request), &mut out);
        let [FromWorker::Search(report)] = &out.0[..] else { panic!("{:?}", out.0) };
        let mut hunt = settle(&shard_reports(&scenario, 2), |t| t).0;
        let Step::Open(opened) = hunt.receive(index % 2, report.clone()) else { panic!("{report:?}") };
        assert_eq!(opened, yaml);
        let summary = hunt.summary().unwrap();
        assert!(summary.contains(&format!("plan #{index}")) && summary.contains("pod identity"), "{summary}");
    }

    #[test]
    fn the_fixed_kubelet_survives_every_plan_and_the_hunt_says_so() {
        let scenario = fixed(workload());
        assert!(native(&scenario).is_none());
        let reports = shard_reports(&scenario, 2);
        let (hunt, step) = settle(&reports, |t| t);
        assert_eq!(step, Step::Finished);
        assert_eq!(hunt.phase, Phase::NothingFound);
        let total = hunt.total.unwrap();
        assert!(total > 20, "real plans ran: {total}");
        assert_eq!(hunt.done(), total);
        assert!(hunt.summary().unwrap().contains(&format!("all {total} plans")));
    }

    #[test]
    fn a_failure_waits_for_the_shards_that_could_still_fail_lower() {
        let mut hunt = Hunt::new(7, 2);
        let plans = |next| SearchReport::Plans { id: 7, total: 10, generated: 10, in_shard: 5, next: Some(next) };
        assert_eq!(hunt.receive(0, plans(0)), Step::Redraw);
        assert_eq!(hunt.receive(1, plans(1)), Step::Redraw);
        let found = SearchReport::Found { id: 7, index: 5, done: 3, plan: "p".into(), broken: "b".into() };
        assert_eq!(hunt.receive(1, found), Step::Redraw, "shard 0 has not passed plan 5 yet");
        assert_eq!(hunt.receive(0, SearchReport::Progress { id: 7, done: 2, next: Some(4) }), Step::Redraw);
        // A report from another search changes nothing.
        assert_eq!(hunt.receive(0, SearchReport::Progress { id: 6, done: 5, next: None }), Step::Nothing);
        assert_eq!(
            hunt.receive(0, SearchReport::Progress { id: 7, done: 3, next: Some(6) }),
            Step::Shrink { worker: 1, index: 5 }
        );
        assert_eq!(hunt.done(), 6);
        hunt.cancel();
        assert_eq!(hunt.phase, Phase::Cancelled);
        assert!(!hunt.running());
    }

    /// The run a scenario text replays, to its end: its end state and trace hash.
    fn replay(yaml: &str) -> (recon_explore::ordering::EndState, String) {
        let scenario = recon_scenario::parse("replay.yaml", yaml).unwrap();
        let mut sim = recon_sim::Sim::new(&scenario, Box::new(|c| recon_catalog::instantiate(&c.controller))).unwrap();
        sim.run();
        let end = recon_explore::ordering::EndState::of(sim.store());
        (end, sim.into_trace().hash())
    }

    #[test]
    fn the_ordering_search_finds_the_condition_race_and_both_orderings_replay_from_share_links() {
        let library = recon_catalog::scenario("status-condition-race").unwrap();
        let request = OrderingRequest {
            id: 3,
            scenario: library.yaml.to_string(),
            uploads: Vec::new(),
            max_runs: super::DEFAULT_ORDERING_RUNS,
            stale_views: 0,
        };
        let mut out = Collect(Vec::new());
        Runner::new().unwrap().handle(ToWorker::Orderings(request), &mut out);
        let mut hunt = Hunt::orderings(3, super::DEFAULT_ORDERING_RUNS, 0);
        let mut last = Step::Nothing;
        for message in out.0 {
            let FromWorker::Search(report) = message else { panic!("{message:?}") };
            last = hunt.receive(0, report);
        }
        assert_eq!(last, Step::Finished);
        let Phase::OrderingsFound { found, diff, broken: None } = &hunt.phase else { panic!("{:?}", hunt.phase) };
        assert_eq!(found.len(), 2);
        assert!(diff.iter().any(|l| l.contains("status.conditions[0].status")), "{diff:?}");
        let summary = hunt.summary().unwrap();
        assert!(summary.contains("depends on the order") && summary.contains(&found[1].description), "{summary}");
        // Each opens from its share link as the run the search made: the
        // link carries the scenario's ordering, and the two end differently.
        let replays: Vec<_> = found
            .iter()
            .map(|f| {
                let link =
                    crate::share::read(&crate::share::make("status-condition-race", &f.scenario, &[], None).fragment)
                        .unwrap();
                assert_eq!(link.scenario, f.scenario);
                replay(&link.scenario)
            })
            .collect();
        assert!(recon_scenario::parse("2.yaml", &found[1].scenario).unwrap().ordering.len() == 1);
        assert_ne!(replays[0].0, replays[1].0, "the two orderings end differently");
        assert_ne!(replays[0].1, replays[1].1);
    }

    #[test]
    fn an_ordering_search_that_finds_nothing_says_whether_it_ran_every_ordering() {
        let mut hunt = Hunt::orderings(9, 50, 1);
        assert_eq!(hunt.receive(0, SearchReport::OrderingProgress { id: 9, runs: 5 }), Step::Redraw);
        assert_eq!(hunt.done(), 5);
        let over = SearchReport::Orderings {
            id: 9,
            runs: 7,
            exhausted: true,
            found: Vec::new(),
            diff: Vec::new(),
            broken: None,
        };
        assert_eq!(hunt.receive(0, over), Step::Finished);
        assert_eq!(hunt.phase, Phase::OrderingsClean { exhausted: true });
        assert!(hunt.summary().unwrap().contains("Every ordering the search reaches ends the same"));
        let mut cancelled = Hunt::orderings(10, 50, 0);
        cancelled.cancel();
        assert_eq!(cancelled.summary().unwrap(), "Cancelled after 0 runs.");
    }

    #[test]
    fn a_workload_that_breaks_without_faults_has_nothing_to_search() {
        let mut hunt = Hunt::new(2, 3);
        let step = hunt.receive(2, SearchReport::Unsearchable { id: 2, broken: "pod identity: x".into() });
        assert_eq!(step, Step::Finished);
        assert!(hunt.summary().unwrap().contains("nothing to search for"));
    }
}
