//! "Find a violation": the search of `recon_worker::search` across several Web
//! Workers, with a progress bar, a cancel button, and the shrunk scenario
//! opened as the current run.
//!
//! [`Hunt`] is the search's state as the page sees it, a pure reducer over
//! the workers' reports (tested natively); the rest (wasm32 only) starts
//! the workers, feeds the reducer and draws the panel.

use recon_web_protocol::search::SearchReport;

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
}

impl Hunt {
    /// A search with request id `id` across `workers` workers.
    pub fn new(id: u64, workers: usize) -> Hunt {
        Hunt { id, shards: vec![Shard::default(); workers.max(1)], total: None, phase: Phase::Searching }
    }

    /// Plans run so far, over every worker.
    pub fn done(&self) -> usize {
        self.shards.iter().map(|s| s.done).sum()
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
            SearchReport::Shrunk { .. } => unreachable!("handled above"),
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
            Phase::Cancelled => format!("Cancelled after {done} of {total} plans."),
        })
    }
}

#[cfg(target_arch = "wasm32")]
pub(super) use view::{Search, SearchMsg, panel};

#[cfg(target_arch = "wasm32")]
mod view {
    use yew::prelude::*;

    use super::{Hunt, Phase, Step};
    use crate::app::page::{App, Msg};
    use crate::app::worker_link::{Event as WorkerEvent, WorkerLink};
    use recon_web_protocol::search::{SearchRequest, ShrinkRequest};
    use recon_web_protocol::{FromWorker, ToWorker};

    /// At most this many search workers, whatever the machine has.
    const MAX_WORKERS: usize = 4;

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
        /// The cancel button.
        Cancel,
        /// Something from search worker `worker` of search `id`.
        Worker(u64, usize, WorkerEvent),
    }

    fn now_ms() -> f64 {
        web_sys::window().and_then(|w| w.performance()).map_or(0.0, |p| p.now())
    }

    /// How many workers to search with: the machine's cores, at most [`MAX_WORKERS`].
    fn worker_count() -> usize {
        let cores = web_sys::window().map_or(1.0, |w| w.navigator().hardware_concurrency());
        (cores as usize).clamp(1, MAX_WORKERS)
    }

    impl App {
        /// Handles a search message; returns whether to redraw.
        pub(in crate::app) fn search_update(&mut self, ctx: &Context<App>, msg: SearchMsg) -> bool {
            match msg {
                SearchMsg::Start => self.start_search(ctx),
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
            let count = worker_count();
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
            self.search =
                Search { hunt: Some(Hunt::new(id, count)), workers, input: Some(input), last_redraw: now_ms() };
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
                WorkerEvent::Stalled => {
                    hunt.fail("a search worker stopped answering".into());
                    Step::Finished
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
        html! {
            <section class="panel search" id="search">
                <h2>{ "Search" }</h2>
                <p class="hint">
                    { "Look for a fault schedule (partitions, restarts, crashes) that breaks a check, as \
                       recon explore does, on every core; the smallest one found opens as the scenario." }
                </p>
                <button id="find-violation" onclick={start} disabled={running}>{ "Find a violation" }</button>
                if let Some(hunt) = hunt {
                    <div class="search-progress">
                        <progress id="search-progress" max={hunt.total.unwrap_or(1).max(1).to_string()}
                            value={hunt.done().to_string()} />
                        <span id="search-count">
                            { match hunt.total {
                                Some(total) => format!(" {} of {total} plans", hunt.done()),
                                None => " the fault-free run…".to_owned(),
                            } }
                        </span>
                        if running {
                            <button id="search-cancel" onclick={cancel}>{ "Cancel" }</button>
                        }
                    </div>
                    if let Some(summary) = hunt.summary() {
                        <p id="search-result" class={classes!(match hunt.phase {
                            Phase::Found { .. } | Phase::Shrinking { .. } => "found",
                            Phase::NothingFound => "ok",
                            _ => "hint",
                        })}>{ summary }</p>
                    }
                }
            </section>
        }
    }
}

// Natively only: the reference answer comes from `recon_explore::search`, which needs threads.
#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use recon_explore::{Explorer, SearchOptions};
    use recon_scenario::Scenario;

    use super::*;
    use recon_web_protocol::search::{SearchRequest, ShrinkRequest};
    use recon_web_protocol::{FromWorker, ToWorker};
    use recon_worker::runner::{Progress, Runner};

    const WORKLOAD: &str = "pod-safety-59848-workload";

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

    #[test]
    fn a_workload_that_breaks_without_faults_has_nothing_to_search() {
        let mut hunt = Hunt::new(2, 3);
        let step = hunt.receive(2, SearchReport::Unsearchable { id: 2, broken: "pod identity: x".into() });
        assert_eq!(step, Step::Finished);
        assert!(hunt.summary().unwrap().contains("nothing to search for"));
    }
}
