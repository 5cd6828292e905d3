//! The Yew component that owns the page: it turns user actions into
//! [`State`] changes and worker requests.

use gloo::file::callbacks::FileReader;
use recon_prepare::PluginBytes;
use recon_scenario::Scenario;
use recon_trace::EntryId;
use yew::prelude::*;

use super::panels;
use super::settings::Fault;
use super::worker_link::{Event as WorkerEvent, WorkerLink};
use super::{Pending, State};
use recon_web_protocol::{ToWorker, Upload};

/// A change to the scenario made by a control; it may refuse with a reason.
pub type Edit = Box<dyn FnOnce(&mut Scenario) -> Result<(), String>>;

/// Everything that can happen on the page.
pub enum Msg {
    /// Something from the worker.
    Worker(WorkerEvent),
    /// A control changed the scenario.
    Edit(Edit),
    /// Another library scenario was picked.
    PickScenario(String),
    /// Stop the run in flight.
    Stop,
    /// A file was chosen or dropped for components: one component's card,
    /// or a folded row's every component.
    FileChosen(Vec<String>, web_sys::File),
    /// A chosen file has been read.
    FileRead { components: Vec<String>, file_name: String, bytes: Result<Vec<u8>, String> },
    /// Audit logs were picked or dropped: read and draw them.
    OpenAudit(Vec<web_sys::File>),
    /// Leave the audit logs shown for the scenarios.
    CloseAudit,
    /// Go back to the scenario's own controllers for these components.
    ResetControllers(Vec<String>),
    /// Select a trace entry.
    Select(EntryId),
    /// Hide the error banner.
    DismissError,
    /// Show or hide the "about" panel.
    ToggleAbout,
    /// Open or close the controls on a narrow screen (where they fold away
    /// so the timeline gets the width).
    ToggleControls,
    /// Add a crash or restart of a component at a time typed by the user.
    AddFault { component: String, fault: Fault, at: String },
    /// Save the trace in a format.
    Export(Export),
    /// Put every component's view beside the store at a moment of the run.
    Inspect(u64),
    /// Make a link that replays the shown run.
    Share,
    /// Make an `<iframe>` snippet that embeds the shown run.
    EmbedSnippet,
    /// Show or hide the scenario editor.
    ToggleEditor,
    /// Run the scenario text from the editor.
    ApplyText(String),
    /// The visitor did something with the guided tour.
    Tour(super::tour::Action),
    /// A moment of the timeline was clicked, away from any event: inspect it.
    Moment(u64),
    /// The search for a violation ("Find a violation").
    Search(super::search::SearchMsg),
    /// Show or hide the museum of real bugs.
    ToggleMuseum,
    /// Open a museum entry with these of its fixes on: run and explain it.
    OpenEntry { name: String, fixes: Vec<String> },
    /// The visitor typed in the search of a controller's folded row of
    /// components.
    SearchComponents { controller: String, query: String },
}

/// The formats a trace can be saved in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Export {
    /// The trace's own stable JSON (what `recon run --trace` writes).
    Json,
    /// The Chrome trace event format, for Perfetto.
    Perfetto,
}

/// The playground page.
pub struct App {
    pub(super) state: State,
    worker: Option<WorkerLink>,
    readers: Vec<FileReader>,
    pub(super) show_about: bool,
    /// The museum's entries while the museum is shown (`?museum=1`, or
    /// its button), in place of the playground's controls and timeline.
    pub(super) museum: Option<Vec<super::museum::Entry>>,
    /// The last share link made, shown for copying.
    pub(super) share_url: Option<String>,
    /// The last embed snippet made, shown for copying.
    pub(super) embed_snippet: Option<String>,
    /// Embedded in another page (`?embed=1`): the timeline and the
    /// explanation only, with a link to the full playground.
    pub(super) embed: Option<Embed>,
    /// Whether the scenario editor is open.
    pub(super) show_editor: bool,
    /// Whether the controls are unfolded on a narrow screen (on a wide one
    /// they are always shown).
    pub(super) show_controls: bool,
    /// The guided tour's step, while it is open.
    pub(super) tour: Option<usize>,
    /// Open the tour when the first run finishes (a first visit to the default scenario).
    tour_on_first_run: bool,
    /// The search for a violation and its workers.
    pub(super) search: super::search::Search,
    /// Scroll the selected violation's explanation into view after the next render.
    reveal_selected_finding: bool,
    /// Back and Forward: the address holds the scenario, so the page starts
    /// again from it.
    _history: Option<gloo::events::EventListener>,
    /// The setup the page's address describes (what reload would bring
    /// back), so a run that changed nothing leaves the address alone.
    in_address: Option<super::Setup>,
    /// A deliberate failure the browser tests ask for with `?selftest=`
    /// (`panic-page` or `panic-worker`), done once after the first run.
    selftest: Option<String>,
}

/// What an embedded page needs to know.
pub struct Embed {
    /// This page's URL without `embed=1`: the full playground on the same run.
    pub full_url: String,
}

/// Whether the page is embedded, and where its full version is.
fn embed_from_url() -> Option<Embed> {
    if url_param("embed").as_deref() != Some("1") {
        return None;
    }
    let location = web_sys::window()?.location();
    let search = location.search().ok().unwrap_or_default();
    let params = web_sys::UrlSearchParams::new_with_str(&search).ok()?;
    params.delete("embed");
    let query = String::from(params.to_string());
    let query = if query.is_empty() { String::new() } else { format!("?{query}") };
    Some(Embed { full_url: format!("{}{query}{}", base_url(), location.hash().ok().unwrap_or_default()) })
}

/// The menu's scenario named in the page's URL (`?scenario=`: a library
/// scenario, or a generated cluster such as `scale-1000-nodes-30000-pods`),
/// or the default.
fn scenario_from_url() -> String {
    url_param("scenario")
        .filter(|name| super::is_library(name))
        .unwrap_or_else(|| recon_catalog::DEFAULT_SCENARIO.to_owned())
}

/// A parameter of the page's URL (`?name=value`).
fn url_param(name: &str) -> Option<String> {
    let search = web_sys::window().and_then(|w| w.location().search().ok()).unwrap_or_default();
    web_sys::UrlSearchParams::new_with_str(&search).ok()?.get(name)
}

/// The page's URL without its query and fragment: where the playground lives.
pub(super) fn base_url() -> String {
    let href = web_sys::window().and_then(|w| w.location().href().ok()).unwrap_or_default();
    href.split(['?', '#']).next().unwrap_or_default().to_owned()
}

/// The state a share link in the page's URL asks for, if there is one;
/// a damaged link is an error message and the default scenario.
fn state_from_link() -> Option<Result<State, String>> {
    let hash = web_sys::window()?.location().hash().ok()?;
    if !hash.starts_with(crate::share::PREFIX) {
        return None;
    }
    Some(crate::share::read(&hash).and_then(|link| {
        let scenario = recon_scenario::parse("shared.yaml", &link.scenario)
            .map_err(|e| format!("The scenario in this share link is invalid; showing the default scenario.\n{e}"))?;
        let mut state = State::new(&link.library, scenario);
        for upload in link.uploads {
            let uploaded = super::Uploaded { upload: upload.clone(), controller: None };
            state.current.uploads.insert(upload.component.clone(), uploaded);
        }
        state.select_on_done = link.select;
        Ok(state)
    }))
}

impl Component for App {
    type Message = Msg;
    type Properties = ();

    fn create(ctx: &Context<Self>) -> Self {
        let name = scenario_from_url();
        let library = || State::library(&name).unwrap_or_else(|e| panic!("the library scenario {name} is broken: {e}"));
        // What the address describes: the run it asks for, unless it is a
        // damaged link (then the address should be replaced).
        let (mut state, described) = match state_from_link() {
            Some(Ok(state)) => (state, true),
            Some(Err(error)) => {
                let mut state = library();
                state.error = Some(error);
                (state, false)
            }
            None => (library(), true),
        };
        let embed = embed_from_url();
        // The tour is for the default scenario as it opens, not for a shared run or an embed.
        let linked = web_sys::window()
            .and_then(|w| w.location().hash().ok())
            .is_some_and(|h| h.starts_with(crate::share::PREFIX));
        let museum = url_param("museum").map(|_| super::museum::entries());
        let first_visit = !linked
            && embed.is_none()
            && museum.is_none()
            && state.current.library == recon_catalog::DEFAULT_SCENARIO
            && !super::tour::seen();
        state.inspect_selection_after_run = embed.is_none();
        let in_address = described.then(|| state.current.clone());
        let mut app = App {
            state,
            worker: None,
            readers: Vec::new(),
            show_about: false,
            museum,
            share_url: None,
            embed_snippet: None,
            embed,
            show_editor: false,
            show_controls: false,
            tour: None,
            tour_on_first_run: first_visit,
            search: Default::default(),
            reveal_selected_finding: false,
            _history: web_sys::window().map(|window| {
                gloo::events::EventListener::new(&window, "popstate", |_| {
                    if let Some(window) = web_sys::window() {
                        let _ = window.location().reload();
                    }
                })
            }),
            selftest: url_param("selftest"),
            in_address,
        };
        // The worker starts with the first request it must answer (see `send`).
        app.run(ctx);
        app
    }

    fn update(&mut self, ctx: &Context<Self>, msg: Msg) -> bool {
        match msg {
            Msg::Worker(event) => return self.worker_event(ctx, event),
            Msg::Edit(edit) => {
                let mut scenario = self.state.current.scenario.clone();
                match edit(&mut scenario) {
                    Ok(()) => {
                        self.state.current.scenario = scenario;
                        // The text no longer says what the scenario is.
                        self.state.current.source = None;
                        self.state.error = None;
                        self.run(ctx);
                    }
                    Err(error) => self.state.error = Some(error),
                }
            }
            Msg::PickScenario(name) => self.open_library(ctx, &name, &[]),
            Msg::ToggleMuseum => {
                self.museum = match self.museum {
                    Some(_) => None,
                    None => Some(super::museum::entries()),
                };
            }
            Msg::OpenEntry { name, fixes } => self.open_library(ctx, &name, &fixes),
            Msg::Stop => {
                if self.state.pending.take().is_some() {
                    self.state.current = self.state.good.clone();
                    self.state.notice = Some("Stopped; showing the last finished run.".into());
                    self.restart_worker(ctx);
                }
            }
            Msg::FileChosen(components, file) => {
                let file_name = file.name();
                let link = ctx.link().clone();
                let reader = gloo::file::callbacks::read_as_bytes(&file.into(), move |bytes| {
                    let bytes = bytes.map_err(|e| e.to_string());
                    link.send_message(Msg::FileRead { components, file_name, bytes });
                });
                self.readers.push(reader);
            }
            Msg::FileRead { mut components, file_name, bytes } => {
                self.readers.retain(|_| false);
                match bytes {
                    Ok(bytes) if !components.is_empty() => {
                        // Checked as the first; the rest run it if it passes.
                        let component = components.remove(0);
                        let upload = Upload { component, file_name, plugin: PluginBytes::new(bytes) };
                        self.check(ctx, upload, components);
                    }
                    Ok(_) => {}
                    Err(e) => self.state.error = Some(format!("{file_name}: could not be read: {e}")),
                }
            }
            Msg::OpenAudit(files) => self.open_audit(ctx, files),
            Msg::CloseAudit => {
                self.state.leave_audit();
                self.state.error = None;
                self.state.notice = None;
                self.run(ctx);
            }
            Msg::ResetControllers(components) => {
                let reset = components.iter().filter(|c| self.state.current.uploads.remove(*c).is_some()).count();
                if reset > 0 {
                    self.state.notice = Some(match &components[..] {
                        [one] => format!("{one} runs its built-in controller again"),
                        _ => format!("{} run their built-in controller again", super::count(reset, "component")),
                    });
                    self.run(ctx);
                }
            }
            Msg::Select(id) => {
                self.state.selected = Some(id);
                self.reveal_selected_finding = true;
                // The inspector follows the selection (not in an embed, which has none).
                let at_ms = self.state.run.as_ref().and_then(|run| run.trace.get(id)).map(|entry| entry.time_ms);
                if let Some(at_ms) = at_ms.filter(|_| self.embed.is_none()) {
                    self.inspect(ctx, at_ms);
                }
            }
            Msg::DismissError => self.state.error = None,
            Msg::SearchComponents { controller, query } => {
                self.state.component_search.insert(controller, query);
            }
            Msg::ToggleAbout => self.show_about = !self.show_about,
            Msg::ToggleControls => self.show_controls = !self.show_controls,
            Msg::AddFault { component, fault, at } => {
                let edit: Edit = Box::new(move |scenario| {
                    let at = super::settings::parse_time(&at)?;
                    super::settings::add_fault(scenario, &component, fault, at)
                });
                ctx.link().send_message(Msg::Edit(edit));
                return false;
            }
            Msg::Inspect(at_ms) => self.inspect(ctx, at_ms),
            Msg::Share | Msg::EmbedSnippet if self.state.audit.is_some() => {
                self.state.notice = Some(
                    "Audit logs stay in this tab: a link carries a scenario, never your logs. Go back to the \
                     scenarios to share a run."
                        .into(),
                );
            }
            Msg::Share => {
                let (fragment, left_out) = self.share_fragment();
                let url = format!("{}{fragment}", base_url());
                if let Some(window) = web_sys::window() {
                    // Replace, not push: the link is the page's state, not a new page.
                    if let Ok(history) = window.history() {
                        let _ = history.replace_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(&url));
                    }
                    let _ = window.navigator().clipboard().write_text(&url);
                }
                let size = if url.len() > 16 * 1024 {
                    format!(" It is {} KB long, most of it the uploaded plugin.", url.len() / 1024)
                } else {
                    String::new()
                };
                self.share_url = Some(url);
                self.state.notice =
                    Some(left_out.unwrap_or_else(|| format!("Link copied: it replays this run exactly.{size}")));
            }
            Msg::Search(msg) => return self.search_update(ctx, msg),
            Msg::ToggleEditor => self.show_editor = !self.show_editor,
            Msg::Tour(action) => self.tour_action(action),
            Msg::Moment(at_ms) => match self.state.pending {
                _ if self.embed.is_some() => return false,
                // Inspecting would replace the run in flight.
                Some(Pending::Run { .. } | Pending::Check { .. }) => {
                    self.state.notice =
                        Some("The run is still going: click the moment again when it has finished.".into())
                }
                _ => self.inspect(ctx, at_ms),
            },
            Msg::ApplyText(text) => match recon_scenario::parse("scenario.yaml", &text) {
                Ok(scenario) => {
                    self.state.current.scenario = scenario;
                    self.state.current.source = Some(text);
                    self.state.error = None;
                    self.run(ctx);
                }
                Err(e) => self.state.error = Some(e.to_string()),
            },
            Msg::EmbedSnippet => {
                let (fragment, left_out) = self.share_fragment();
                let title = format!("Recon: {}", self.state.good.scenario.name);
                let snippet = super::museum::embed_snippet(&format!("{}?embed=1{fragment}", base_url()), &title);
                if let Some(window) = web_sys::window() {
                    let _ = window.navigator().clipboard().write_text(&snippet);
                }
                self.embed_snippet = Some(snippet);
                self.state.notice =
                    Some(left_out.unwrap_or_else(|| "Embed snippet copied: paste it into your page.".into()));
            }
            Msg::Export(format) => {
                let Some(run) = &self.state.run else { return false };
                let stem = format!("{}-seed{}", run.trace.scenario, run.trace.seed);
                let saved = match format {
                    Export::Json => super::download::save(&format!("{stem}.trace.json"), "application/json", |w| {
                        run.trace.write_json(w).is_ok()
                    }),
                    Export::Perfetto => {
                        super::download::save(&format!("{stem}.perfetto.json"), "application/json", |w| {
                            recon_trace::export::write_chrome_trace(&run.trace, w).is_ok()
                        })
                    }
                };
                if let Err(error) = saved {
                    self.state.error = Some(error);
                }
            }
        }
        true
    }

    fn view(&self, ctx: &Context<Self>) -> Html {
        panels::page(self, ctx)
    }

    fn rendered(&mut self, _ctx: &Context<Self>, _first_render: bool) {
        // A violation selected from the timeline (its "First violation"
        // button, a click, the arrow keys) is brought into view in the
        // findings list, which may be scrolled elsewhere.
        // Only the list scrolls (its headline to the top), never the page:
        // on a phone the list does not scroll and the page stays put.
        let document = gloo::utils::document();
        if std::mem::take(&mut self.reveal_selected_finding)
            && let Some(list) = document.get_element_by_id("findings")
            && let Some(article) = document.query_selector("article.violation.selected").ok().flatten()
        {
            let (shown, headline) = (list.get_bounding_client_rect(), article.get_bounding_client_rect());
            if headline.top() < shown.top() || headline.top() > shown.bottom() - 24.0 {
                list.set_scroll_top(list.scroll_top() + (headline.top() - shown.top()) as i32 - 8);
            }
        }
    }
}

/// The most a run's own address may carry of uploaded plugins: small ones
/// (a hand-written test plugin) travel in it; real ones would make the
/// address enormous, so only Share puts them in a link.
const MAX_ADDRESS_UPLOAD_BYTES: usize = 32 * 1024;

impl App {
    /// Runs a library scenario with these of its fixes on, in place of
    /// what the page shows (the museum included).
    fn open_library(&mut self, ctx: &Context<Self>, name: &str, fixes: &[String]) {
        let opened = State::library(name).and_then(|mut state| {
            for fix in fixes {
                state.current.scenario.set_fix(fix, true)?;
            }
            if !fixes.is_empty() {
                // The file as shipped no longer says what runs.
                state.current.source = None;
            }
            Ok(state)
        });
        match opened {
            Ok(state) => {
                self.museum = None;
                self.state.current = state.current;
                self.state.error = None;
                self.state.notice = None;
                self.run(ctx);
            }
            Err(error) => self.state.error = Some(error),
        }
    }

    /// Puts the shown run's scenario in the page's address as it changes,
    /// so that reload and Back bring it back: nothing for a library
    /// scenario as shipped, its edits compressed in the fragment otherwise
    /// (as a share link, without large uploads). Not in an embed, whose
    /// address belongs to the page around it.
    fn keep_in_address(&mut self) {
        let good = &self.state.good;
        if self.embed.is_some() || self.in_address.as_ref() == Some(good) {
            return;
        }
        let Some(window) = web_sys::window() else { return };
        let query = if good.library == recon_catalog::DEFAULT_SCENARIO {
            String::new()
        } else {
            format!("?scenario={}", good.library)
        };
        let fragment = if good.is_pristine() {
            String::new()
        } else {
            let uploads = good.upload_list();
            let small = uploads.iter().map(|u| u.plugin.bytes().len()).sum::<usize>() <= MAX_ADDRESS_UPLOAD_BYTES;
            let carried = if small { uploads.as_slice() } else { &[] };
            crate::share::make(&good.library, &good.scenario_text(), carried, None).fragment
        };
        let url = format!("{}{query}{fragment}", base_url());
        if let Ok(history) = window.history() {
            let _ = history.push_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(&url));
        }
        self.in_address = Some(good.clone());
    }

    /// The share-link fragment for the shown run, and what it had to leave out.
    fn share_fragment(&self) -> (String, Option<String>) {
        let good = &self.state.good;
        let made = crate::share::make(&good.library, &good.scenario_text(), &good.upload_list(), self.state.selected);
        (made.fragment, made.left_out)
    }

    fn start_worker(&mut self, ctx: &Context<Self>) {
        match WorkerLink::start(ctx.link().callback(Msg::Worker)) {
            Ok(link) => self.worker = Some(link),
            Err(error) => self.state.error = Some(error),
        }
    }

    /// Replaces the worker (stopping whatever it was doing).
    fn restart_worker(&mut self, ctx: &Context<Self>) {
        let restarted = self.worker.as_mut().map(WorkerLink::restart);
        match restarted {
            Some(Ok(())) => {}
            Some(Err(error)) => self.state.error = Some(error),
            None => self.start_worker(ctx),
        }
    }

    /// Makes sure an idle worker takes the next request: a busy one is
    /// running something the new request replaces.
    fn idle_worker(&mut self, ctx: &Context<Self>) -> Option<&mut WorkerLink> {
        if self.worker.as_ref().is_none_or(WorkerLink::busy) {
            self.restart_worker(ctx);
        }
        self.worker.as_mut()
    }

    /// Puts every component's view beside the store at a moment of the
    /// shown run ([`State::inspect`] decides whether to ask now).
    fn inspect(&mut self, ctx: &Context<Self>, at_ms: u64) {
        if let Some(request) = self.state.inspect(at_ms) {
            self.send(ctx, &request, &self.state.good.plugins());
        }
    }

    /// Sends a request to the worker, replacing it first if it is busy,
    /// with the plugins it names (sent once per worker).
    ///
    /// A request the page has a recording of (the default scenario's first
    /// run and inspection, see [`crate::recorded`]) is answered from it,
    /// without the worker: a first visit then never downloads the worker.
    fn send(&mut self, ctx: &Context<Self>, request: &ToWorker, plugins: &[PluginBytes]) {
        if let Some(answer) = crate::recorded::answer(request) {
            ctx.link().send_message(Msg::Worker(WorkerEvent::Message(answer)));
            return;
        }
        if let Some(worker) = self.idle_worker(ctx) {
            worker.send(request, plugins);
        }
    }

    /// Runs the current setup.
    fn run(&mut self, ctx: &Context<Self>) {
        let (request, plugins) = self.state.run_request();
        self.send(ctx, &request, &plugins);
    }

    /// Reads audit logs in the worker, which draws them; a plugin dropped
    /// on the page, off any component, is refused rather than read as a log.
    fn open_audit(&mut self, ctx: &Context<Self>, files: Vec<web_sys::File>) {
        if let Some(plugin) = files.iter().find(|f| f.name().ends_with(".wasm")) {
            self.state.error = Some(format!(
                "{} is a plugin, not an audit log: drop it on the component it should run as.",
                plugin.name()
            ));
            return;
        }
        let request = self.state.audit_request(files.iter().map(web_sys::File::name).collect());
        if let Some(worker) = self.idle_worker(ctx) {
            worker.send_audit(&request, files);
        }
    }

    /// Checks an upload before it replaces a controller: asks the worker
    /// whether `upload` runs as its component; if it does, it runs as
    /// those of `also` too.
    fn check(&mut self, ctx: &Context<Self>, upload: Upload, also: Vec<String>) {
        let id = self.state.next_id();
        self.state.error = None;
        self.state.notice = Some(format!("Checking {}…", upload.file_name));
        self.state.pending = Some(Pending::Check { id, upload: upload.clone(), also });
        let limits = self.state.current.scenario.limits.plugins;
        self.send(ctx, &ToWorker::Check { id, upload: upload.to_ref(), limits }, &[upload.plugin]);
    }

    fn worker_event(&mut self, ctx: &Context<Self>, event: WorkerEvent) -> bool {
        match event {
            WorkerEvent::Heard => {
                if let Some(worker) = self.worker.as_mut() {
                    worker.heard();
                }
                // Nothing the page shows has changed.
                return false;
            }
            WorkerEvent::Message(message) => {
                if let Some(worker) = self.worker.as_mut() {
                    worker.received(&message);
                }
                let finished = matches!(message, recon_web_protocol::FromWorker::Done { .. });
                if self.state.receive(message) == super::Outcome::RunWithUpload {
                    self.run(ctx);
                }
                if finished && self.state.pending.is_none() {
                    self.keep_in_address();
                }
                if let Some(request) = self.state.next_inspection() {
                    self.send(ctx, &request, &self.state.good.plugins());
                }
                if self.state.run.is_some() && self.state.pending.is_none() {
                    match self.selftest.take().as_deref() {
                        Some("panic-page") => panic!("a panic asked for by ?selftest=panic-page"),
                        Some("panic-worker") => self.send(ctx, &ToWorker::SelfTestPanic, &[]),
                        _ => {}
                    }
                }
                if self.tour_on_first_run && self.state.run.is_some() {
                    self.tour_on_first_run = false;
                    self.tour_action(super::tour::Action::Start);
                }
            }
            WorkerEvent::Broken(why) => {
                // A worker that never loaded would fail again: leave it for a reload.
                if self.worker.as_ref().is_some_and(WorkerLink::ready) {
                    self.state.worker_lost(&format!("{why}\nIt was replaced; the last finished run is kept."));
                    self.restart_worker(ctx);
                } else {
                    self.state.worker_lost(&why);
                }
            }
            WorkerEvent::Stalled(quiet_ms) => {
                let why = format!(
                    "The simulation stopped answering for {} s and was restarted; the last finished run is kept.",
                    quiet_ms / 1000
                );
                self.state.worker_lost(&why);
                self.restart_worker(ctx);
            }
        }
        true
    }
}
