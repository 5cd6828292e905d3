//! The page's panels, as functions of the state: the header with the run's
//! status, the controls, the timeline and the findings.

use recon_abi::Mitigation;
use recon_scenario::{Scenario, StepAction};
use recon_trace::text::fmt_time;
use web_sys::{DragEvent, HtmlInputElement, HtmlSelectElement};
use yew::prelude::*;

use super::page::{App, Edit, Export, Msg};
use super::settings::{self, Fault};
use super::{Pending, State, count, fold};
use crate::timeline::Timeline;

/// A control's change to the scenario, as a message.
fn edit(f: impl FnOnce(&mut Scenario) -> Result<(), String> + 'static) -> Msg {
    let edit: Edit = Box::new(f);
    Msg::Edit(edit)
}

/// The value of the input or select an event came from.
fn value_of(e: &Event) -> String {
    if let Some(select) = e.target_dyn_into::<HtmlSelectElement>() {
        return select.value();
    }
    e.target_dyn_into::<HtmlInputElement>().map(|i| i.value()).unwrap_or_default()
}

fn checked_of(e: &Event) -> bool {
    e.target_dyn_into::<HtmlInputElement>().is_some_and(|i| i.checked())
}

/// The input with this id, read when a button next to it is pressed.
pub(super) fn input_by_id(id: &str) -> Option<HtmlInputElement> {
    use wasm_bindgen::JsCast;
    web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.get_element_by_id(id))
        .and_then(|e| e.dyn_into::<HtmlInputElement>().ok())
}

/// The value of the input with this id (inputs whose value matters only
/// when a button next to them is pressed).
fn input_value(id: &str) -> String {
    input_by_id(id).map(|i| i.value()).unwrap_or_default()
}

/// Milliseconds as the scenario format writes them.
fn ms(millis: u64) -> String {
    if millis.is_multiple_of(1000) { format!("{}s", millis / 1000) } else { format!("{millis}ms") }
}

/// The whole page.
pub fn page(app: &App, ctx: &Context<App>) -> Html {
    let state = &app.state;
    if let Some(embed) = &app.embed {
        return html! {
            <div class="app embed">
                <header>
                    <strong>{ &state.good.scenario.name }</strong>
                    { status(state, ctx) }
                    <a id="open-full" href={embed.full_url.clone()} target="_blank" rel="noopener">
                        { "Open in Recon ↗" }
                    </a>
                </header>
                { banners(app, ctx) }
                <section class="view">
                    { timeline(state, ctx) }
                    <div class="below">{ findings(state, ctx) }</div>
                </section>
            </div>
        };
    }
    // Files dropped anywhere but on a component (which takes a plugin) are audit logs.
    let dropped = ctx.link().batch_callback(|e: DragEvent| {
        if e.default_prevented() {
            return None;
        }
        e.prevent_default();
        let list = e.data_transfer()?.files()?;
        let files: Vec<web_sys::File> = (0..list.length()).filter_map(|i| list.get(i)).collect();
        (!files.is_empty()).then_some(Msg::OpenAudit(files))
    });
    let over = Callback::from(|e: DragEvent| e.prevent_default());
    let toggle_label = match (app.show_controls, state.audit.is_some()) {
        (true, _) => "Hide settings ▴",
        (false, true) => "Audit logs: files, back to the scenarios ▾",
        (false, false) => "Settings: servers, controllers, faults ▾",
    };
    html! {
        <div class="app" ondragover={over} ondrop={dropped}>
            { header(state, ctx) }
            { banners(app, ctx) }
            if app.show_about { { about() } }
            if let Some(entries) = &app.museum {
                { super::museum::museum(entries, ctx) }
            } else {
            <div class="main">
                <button id="controls-toggle" class="controls-toggle" type="button"
                    aria-expanded={app.show_controls.to_string()} aria-controls="controls"
                    onclick={ctx.link().callback(|_| Msg::ToggleControls)}>
                    { toggle_label }
                </button>
                <aside id="controls" class={classes!("controls", app.show_controls.then_some("open"))}>
                    if let Some(audit) = &state.audit {
                        { audit_panel(audit, ctx) }
                    } else {
                        { scenario_panel(app, ctx) }
                        { super::search::panel(app, ctx) }
                        { servers(state, ctx) }
                        { components(state, ctx) }
                        { script(state, ctx) }
                    }
                </aside>
                if app.show_editor {
                    <section class="editor-room" id="editor-room" aria-label="The scenario file">
                        <h2>
                            { "Scenario file" }
                            <button type="button" id="editor-close" onclick={ctx.link().callback(|_| Msg::ToggleEditor)}>
                                { "Close" }
                            </button>
                        </h2>
                        <crate::editor::ScenarioEditor text={AttrValue::from(state.current.source_text())}
                            on_apply={ctx.link().callback(Msg::ApplyText)} />
                    </section>
                }
                <section class="view">
                    { timeline(state, ctx) }
                    <div class="below">
                        { findings(state, ctx) }
                        { inspector(state, ctx) }
                    </div>
                </section>
            </div>
            }
            if let (Some(step), Some(run)) = (app.tour, &state.run) {
                <super::tour::TourCard steps={super::tour::steps(run)} {step}
                    on_action={ctx.link().callback(Msg::Tour)} />
            }
        </div>
    }
}

fn header(state: &State, ctx: &Context<App>) -> Html {
    let link = ctx.link();
    let current = &state.current;
    let pick = link.callback(|e: Event| Msg::PickScenario(value_of(&e)));
    let seed = link.callback(|e: Event| {
        let text = value_of(&e);
        edit(move |s| {
            s.seed = text.trim().parse().map_err(|_| format!("the seed must be a whole number, not {text:?}"))?;
            Ok(())
        })
    });
    // Compares with the library file: once per render, not per option.
    let provenance = current.provenance();
    let option = |name: &str, label: String| {
        let selected = name == current.library;
        let label = match provenance.filter(|_| selected) {
            Some(how) => format!("{label} ({how})"),
            None => label,
        };
        html! { <option value={name.to_owned()} {selected}>{ label }</option> }
    };
    html! {
        <header>
            <h1>{ "Recon" }</h1>
            <label class="scenario-pick">
                { "Scenario " }
                <select id="scenario-select" onchange={pick}>
                    { for recon_catalog::SCENARIOS.iter().map(|s| option(s.name, s.name.to_owned())) }
                    <optgroup label="A cluster at scale">
                        { for super::menu_clusters(&current.library).into_iter().map(|(name, label)| option(&name, label)) }
                    </optgroup>
                </select>
            </label>
            <label>
                { "seed " }
                <input id="seed" type="number" min="0" value={current.scenario.seed.to_string()} onchange={seed} />
            </label>
            { status(state, ctx) }
            <button id="share" title="A link that replays this run exactly" onclick={link.callback(|_| Msg::Share)}>{ "Share" }</button>
            <button id="embed" title="An <iframe> snippet that shows this run in your page"
                onclick={link.callback(|_| Msg::EmbedSnippet)}>{ "Embed" }</button>
            <button id="tour-open" title="A short tour of this page"
                onclick={link.callback(|_| Msg::Tour(super::tour::Action::Start))}>{ "Tour" }</button>
            <button id="about-toggle" onclick={link.callback(|_| Msg::ToggleAbout)}>{ "About" }</button>
        </header>
    }
}

fn status(state: &State, ctx: &Context<App>) -> Html {
    let stop = ctx.link().callback(|_| Msg::Stop);
    match &state.pending {
        Some(Pending::Run { progress, .. }) => html! {
            <span class="status running" id="running">
                <progress id="progress" max={progress.end_ms.max(1).to_string()} value={progress.time_ms.to_string()} />
                { format!(" {} of {} · {} events ", fmt_time(progress.time_ms), ms(progress.end_ms), progress.entries) }
                <button id="stop" onclick={stop}>{ "Stop" }</button>
            </span>
        },
        Some(Pending::Inspect { at_ms, .. }) => html! {
            <span class="status running" id="running">
                { format!("Inspecting {}… ", fmt_time(*at_ms)) }
                <button id="stop" onclick={stop}>{ "Stop" }</button>
            </span>
        },
        Some(Pending::Check { upload, .. }) => html! {
            <span class="status running" id="running">
                { format!("Checking {}… ", upload.file_name) }
                <button id="stop" onclick={stop}>{ "Stop" }</button>
            </span>
        },
        Some(Pending::Audit { files, progress, .. }) => html! {
            <span class="status running" id="running">
                <progress id="progress" max={progress.total_bytes.max(1).to_string()} value={progress.bytes.to_string()} />
                { format!(
                    " Reading {}: {} of {} · {} ",
                    count(files.len(), "audit log"),
                    megabytes(progress.bytes),
                    megabytes(progress.total_bytes),
                    count(progress.events as usize, "event"),
                ) }
                <button id="stop" onclick={stop}>{ "Stop" }</button>
            </span>
        },
        None => match &state.run {
            Some(run) => html! {
                <span class="status" id="run-status">
                    { format!("{} · {} · ", count(run.trace.entries.len(), "event"), count(run.explanations.len(), "violation")) }
                    <code id="trace-hash" title="The trace's hash: the same scenario and seed give it everywhere"
                        data-wall-ms={run.wall_ms.map(|ms| format!("{ms:.1}"))}
                        data-entries={run.trace.entries.len().to_string()}>{ &run.hash }</code>
                    { match run.wall_ms {
                        Some(ms) => html! {
                            <span title="How long the simulation took in this browser">{ format!(" · {ms:.0} ms ") }</span>
                        },
                        None => html! {
                            <span id="recorded" title="Simulated when the playground was built, with the trace and hash \
                                a run in this browser gives; any change runs it here">{ " · recorded " }</span>
                        },
                    } }
                    <button id="export-json" title="Save the trace as JSON (what recon run --trace writes)"
                        onclick={ctx.link().callback(|_| Msg::Export(Export::Json))}>{ "JSON" }</button>
                    <button id="export-perfetto" title="The trace in Chrome's trace format, for ui.perfetto.dev"
                        onclick={ctx.link().callback(|_| Msg::Export(Export::Perfetto))}>{ "Perfetto" }</button>
                </span>
            },
            None => html! { <span class="status">{ "Starting…" }</span> },
        },
    }
}

fn banners(app: &App, ctx: &Context<App>) -> Html {
    let state = &app.state;
    let dismiss = ctx.link().callback(|_| Msg::DismissError);
    html! {
        <>
            if let Some(error) = &state.error {
                <div class="banner error" id="error" role="alert">
                    <pre>{ error }</pre>
                    <button onclick={dismiss} title="Dismiss">{ "×" }</button>
                </div>
            }
            if let Some(notice) = &state.notice {
                <div class="banner notice" id="notice">{ notice }</div>
            }
            if let Some(snippet) = &app.embed_snippet {
                <div class="banner notice">
                    { "Embed this run: " }
                    <input id="embed-snippet" class="share-url" readonly=true value={snippet.clone()} />
                </div>
            }
            if let Some(url) = &app.share_url {
                <div class="banner notice">
                    { "Share this run: " }
                    <input id="share-url" class="share-url" readonly=true value={url.clone()} />
                </div>
            }
        </>
    }
}

fn about() -> Html {
    html! {
        <div class="about" id="about">
            <p>
                { "Recon simulates a Kubernetes control plane: etcd, API servers with watch caches, controllers \
                   and kubelets, in virtual time, deterministically. Each controller is a sandboxed WebAssembly \
                   plugin; drop your own .wasm on a component to run it instead. Everything runs in this tab: \
                   nothing is uploaded anywhere." }
            </p>
            <p>
                { "The timeline has a lane per component; a band under each API server shows how far its watch \
                   cache trails etcd. Click an event for its causes. Keys (with the timeline focused): ← → step, \
                   + − zoom, v first violation, 0 fit." }
            </p>
        </div>
    }
}

/// Bytes in megabytes, to one decimal.
fn megabytes(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

/// The control that opens audit logs (several files at once: one per API
/// server), and what it does with them.
fn audit_open(ctx: &Context<App>) -> Html {
    let chosen = ctx.link().batch_callback(|e: Event| {
        let input = e.target_dyn_into::<HtmlInputElement>()?;
        let list = input.files()?;
        let files: Vec<web_sys::File> = (0..list.length()).filter_map(|i| list.get(i)).collect();
        input.set_value("");
        (!files.is_empty()).then_some(Msg::OpenAudit(files))
    });
    html! {
        <div class="audit-open">
            <label class="upload">
                { "Open audit log…" }
                <input type="file" multiple=true id="audit-open" onchange={chosen} />
            </label>
            <p class="hint">
                { "A real cluster's audit logs (JSON lines, or .gz; one file per API server, named by the file) \
                   drawn on this timeline, each stale read explained. Pick them or drop them on the page: they \
                   are read in this tab and never leave it." }
            </p>
        </div>
    }
}

/// Beside the timeline while it shows audit logs: what was read, what
/// could not be judged, and the way back to the scenarios.
fn audit_panel(audit: &super::AuditShown, ctx: &Context<App>) -> Html {
    html! {
        <section class="panel" id="audit-panel">
            <h2>{ "Audit logs" }</h2>
            <p id="audit-summary">{ &audit.summary }</p>
            <ul class="audit-files" id="audit-files">
                { for audit.files.iter().map(|file| html! { <li>{ file }</li> }) }
            </ul>
            if !audit.unjudged.is_empty() {
                <h3>{ "Could not judge" }</h3>
                <ul class="audit-unjudged" id="audit-unjudged">
                    { for audit.unjudged.iter().map(|line| html! { <li>{ line }</li> }) }
                </ul>
            }
            <button id="audit-close" onclick={ctx.link().callback(|_| Msg::CloseAudit)}>
                { "Back to the scenarios" }
            </button>
            { audit_open(ctx) }
        </section>
    }
}

/// The scenario's description, and its text in the editor when open.
fn scenario_panel(app: &App, ctx: &Context<App>) -> Html {
    let scenario = &app.state.current.scenario;
    let toggle = ctx.link().callback(|_| Msg::ToggleEditor);
    html! {
        <section class="panel">
            <h2>{ "Scenario" }</h2>
            // It may scroll: focusable, so the keyboard can scroll it too.
            <div class="description" id="scenario-description" role="region" tabindex="0"
                aria-label="What the scenario shows">
                { &scenario.description }
            </div>
            { source_link(scenario) }
            { fixes(scenario, ctx) }
            <button id="museum-open" title="Real bugs from public issue trackers, each with its upstream fixes"
                onclick={ctx.link().callback(|_| Msg::ToggleMuseum)}>{ "Museum of real bugs" }</button>
            <button id="editor-toggle" onclick={toggle} aria-expanded={app.show_editor.to_string()}
                aria-controls="editor-room">
                { if app.show_editor { "Hide the scenario file" } else { "Edit the scenario file" } }
            </button>
            { audit_open(ctx) }
        </section>
    }
}

/// The public issue the scenario reproduces, when it names one.
fn source_link(scenario: &Scenario) -> Html {
    if scenario.source.is_empty() {
        return Html::default();
    }
    html! {
        <p class="source">
            { "From " }
            <a id="scenario-source" href={scenario.source.clone()} target="_blank" rel="noopener">
                { super::museum::issue_label(&scenario.source) }
            </a>
        </p>
    }
}

/// A checkbox per upstream fix the scenario declares: each turns the fix
/// on or off in the scenario, which re-runs (and so travels in links).
fn fixes(scenario: &Scenario, ctx: &Context<App>) -> Html {
    if scenario.fixes.is_empty() {
        return Html::default();
    }
    html! {
        <fieldset class="fixes" id="fixes">
            <legend>{ "Upstream fixes" }</legend>
            { for scenario.fixes.iter().map(|fix| {
                let name = fix.name.clone();
                let toggle = ctx.link().callback(move |e: Event| {
                    let (name, on) = (name.clone(), checked_of(&e));
                    edit(move |s| s.set_fix(&name, on))
                });
                html! {
                    <label class="fix" title={fix.summary.clone()}>
                        <input type="checkbox" id={format!("fix-{}", fix.name)} checked={fix.enabled}
                            onchange={toggle} />
                        { " " }<strong>{ &fix.name }</strong>{ ": " }{ &fix.summary }
                        if !fix.link.is_empty() {
                            { " " }<a href={fix.link.clone()} target="_blank" rel="noopener">{ "(source)" }</a>
                        }
                    </label>
                }
            }) }
        </fieldset>
    }
}

fn servers(state: &State, ctx: &Context<App>) -> Html {
    let link = ctx.link();
    html! {
        <section class="panel">
            <h2>{ "API servers" }</h2>
            { for state.current.scenario.api_servers.iter().enumerate().map(|(i, server)| {
                let name = server.name.clone();
                let cache = link.callback(move |e: Event| {
                    let on = checked_of(&e);
                    edit(move |s| { settings::set_cache_enabled(s, i, on); Ok(()) })
                });
                let lag = link.callback(move |e: Event| {
                    let text = value_of(&e);
                    edit(move |s| { settings::set_cache_lag(s, i, settings::parse_time(&text)?); Ok(()) })
                });
                let consistent = link.callback(move |e: Event| {
                    let on = checked_of(&e);
                    edit(move |s| { settings::set_consistent_reads(s, i, on); Ok(()) })
                });
                let (from_id, until_id) = (format!("partition-from-{name}"), format!("partition-until-{name}"));
                let add = {
                    let (from_id, until_id) = (from_id.clone(), until_id.clone());
                    link.callback(move |_| {
                        let (from, until) = (input_value(&from_id), input_value(&until_id));
                        edit(move |s| {
                            let from = settings::parse_time(&from)?;
                            let until = if until.trim().is_empty() { None } else { Some(settings::parse_time(&until)?) };
                            settings::add_partition(s, i, from, until)
                        })
                    })
                };
                html! {
                    <fieldset class="server" id={format!("server-{name}")}>
                        <legend>{ &name }</legend>
                        <label>
                            <input type="checkbox" id={format!("cache-enabled-{name}")}
                                checked={server.watch_cache.enabled} onchange={cache} />
                            { " watch cache" }
                        </label>
                        <label>
                            { "cache lag " }
                            <input class="short" id={format!("cache-lag-{name}")}
                                value={ms(server.watch_cache.lag.0)} onchange={lag} />
                        </label>
                        <label title="KEP-2340: a quorum list waits for the cache to catch up instead of reading etcd">
                            <input type="checkbox" id={format!("consistent-reads-{name}")}
                                checked={server.consistent_reads_from_cache} onchange={consistent} />
                            { " consistent reads from cache" }
                        </label>
                        <p class="hint setting-scope" id={format!("consistent-reads-scope-{name}")}>
                            { "Changes only lists that ask for the latest state (quorum or consistent), not \
                               resourceVersion=\"0\" lists, which any cache answers." }
                        </p>
                        <div class="partitions">
                            { "cut off from etcd:" }
                            { for server.partitions.iter().enumerate().map(|(k, w)| {
                                let remove = link.callback(move |_| edit(move |s| { settings::remove_partition(s, i, k); Ok(()) }));
                                let until = w.until.map_or_else(|| "never heals".to_owned(), |u| format!("until {}", ms(u.0)));
                                html! {
                                    <div class="partition">
                                        { format!("from {} {until} ", ms(w.from.0)) }
                                        <button class="remove" title="Remove" onclick={remove}>{ "×" }</button>
                                    </div>
                                }
                            }) }
                            <div class="add-partition">
                                <input class="short" id={from_id} placeholder="from 2s"
                                    aria-label={format!("{name}: cut off from etcd from")} />
                                <input class="short" id={until_id} placeholder="until 8s"
                                    aria-label={format!("{name}: cut off until (empty: never heals)")} />
                                <button id={format!("add-partition-{name}")} onclick={add}>{ "Add" }</button>
                            </div>
                        </div>
                    </fieldset>
                }
            }) }
        </section>
    }
}

fn components(state: &State, ctx: &Context<App>) -> Html {
    let scenario = &state.current.scenario;
    let uploaded = |i: usize| state.current.uploads.contains_key(&scenario.components[i].name);
    let rows = fold::rows(&names_and_controllers(scenario), uploaded, &state.component_search);
    html! {
        <section class="panel">
            <h2>{ "Components" }</h2>
            <p class="hint">{ "Drop a .wasm plugin on a component to run it instead of its controller." }</p>
            { for rows.iter().map(|row| match row {
                fold::Row::One(j) => component(state, ctx, *j),
                fold::Row::Folded(folded) => folded_components(state, ctx, folded),
            }) }
        </section>
    }
}

/// Each component's `(name, controller)`, in the scenario's order: what
/// [`fold`] groups by.
fn names_and_controllers(scenario: &Scenario) -> Vec<(&str, &str)> {
    scenario.components.iter().map(|c| (c.name.as_str(), c.controller.as_str())).collect()
}

/// A controller's many components as one row: how many, a search by
/// name, and the cards of those found (and of those running an uploaded
/// plugin, whatever the search).
fn folded_components(state: &State, ctx: &Context<App>, folded: &fold::Folded) -> Html {
    let scenario = &state.current.scenario;
    let controller = folded.controller.clone();
    let name_at = |i: usize| scenario.components[i].name.as_str();
    let (first, last) = (name_at(folded.members[0]), name_at(folded.members[folded.members.len() - 1]));
    let query = state.component_search.get(&controller).cloned().unwrap_or_default();
    let search = {
        let controller = controller.clone();
        ctx.link().callback(move |e: InputEvent| {
            let query = e.target_dyn_into::<HtmlInputElement>().map(|i| i.value()).unwrap_or_default();
            Msg::SearchComponents { controller: controller.clone(), query }
        })
    };
    // A plugin dropped here runs as every one of them.
    let names: Vec<String> = folded.members.iter().map(|&i| name_at(i).to_owned()).collect();
    let dropped = {
        let names = names.clone();
        ctx.link().batch_callback(move |e: DragEvent| {
            e.prevent_default();
            let file = e.data_transfer()?.files()?.get(0)?;
            Some(Msg::FileChosen(names.clone(), file))
        })
    };
    let uploaded: Vec<String> = names.into_iter().filter(|n| state.current.uploads.contains_key(n)).collect();
    let reset_all = {
        let uploaded = uploaded.clone();
        ctx.link().callback(move |_| Msg::ResetControllers(uploaded.clone()))
    };
    let over = Callback::from(|e: DragEvent| e.prevent_default());
    html! {
        <>
            <div class="component folded" id={format!("folded-{controller}")} ondragover={over} ondrop={dropped}>
                <div class="component-name">{ format!("{} components run {controller}", super::grouped(folded.members.len())) }</div>
                <div class="controller">{ format!("{first} … {last}") }</div>
                <label>
                    { "find " }
                    <input type="search" class="find" id={format!("find-{controller}")} value={query.clone()}
                        placeholder="by name, e.g. node-7" oninput={search}
                        aria-label={format!("Find a component that runs {controller} by its name")} />
                </label>
                <p class="hint" id={format!("found-{controller}")}>{
                    if query.trim().is_empty() {
                        "Drop a plugin here to run it as all of them, or find one by name to set it up, crash it \
                         or drop a plugin on it.".to_owned()
                    } else if folded.matched == 0 {
                        format!("None of them has \"{}\" in its name.", query.trim())
                    } else if folded.more > 0 {
                        format!("{} match; {} more not shown: narrow the search.",
                            super::grouped(folded.matched), super::grouped(folded.more))
                    } else {
                        format!("{} found.", count(folded.matched, "component"))
                    }
                }</p>
                if uploaded.len() > 1 {
                    <button id={format!("reset-all-{controller}")} onclick={reset_all}>
                        { format!("Use built-in on all {}", super::grouped(uploaded.len())) }
                    </button>
                }
            </div>
            { for folded.shown.iter().map(|&j| component(state, ctx, j)) }
        </>
    }
}

/// A component's card: its controller or plugin, API server, list mode,
/// mitigations, upload, and faults to add.
fn component(state: &State, ctx: &Context<App>, j: usize) -> Html {
    let link = ctx.link();
    let scenario = &state.current.scenario;
    let component = &scenario.components[j];
    let name = component.name.clone();
    let api = link.callback(move |e: Event| {
        let server = value_of(&e);
        edit(move |s| settings::set_api_server(s, j, &server))
    });
    let mode = link.callback(move |e: Event| {
        let mode = settings::list_mode_from_name(&value_of(&e));
        edit(move |s| {
            settings::set_list_mode(s, j, mode);
            Ok(())
        })
    });
    let chosen = {
        let name = name.clone();
        link.batch_callback(move |e: Event| {
            let input = e.target_dyn_into::<HtmlInputElement>()?;
            let file = input.files()?.get(0)?;
            input.set_value("");
            Some(Msg::FileChosen(vec![name.clone()], file))
        })
    };
    let dropped = {
        let name = name.clone();
        link.batch_callback(move |e: DragEvent| {
            e.prevent_default();
            let file = e.data_transfer()?.files()?.get(0)?;
            Some(Msg::FileChosen(vec![name.clone()], file))
        })
    };
    let over = Callback::from(|e: DragEvent| e.prevent_default());
    let uploaded = state.current.uploads.get(&name);
    let controller = match uploaded {
        Some(u) => match &u.controller {
            Some(name) => format!("{} (plugin {name})", u.upload.file_name),
            None => format!("{} (plugin)", u.upload.file_name),
        },
        None => component.controller.clone(),
    };
    let reset = {
        let name = name.clone();
        link.callback(move |_| Msg::ResetControllers(vec![name.clone()]))
    };
    let fault_id = format!("fault-at-{name}");
    let fault = |fault: Fault| {
        let (name, fault_id) = (name.clone(), fault_id.clone());
        link.callback(move |_| Msg::AddFault { component: name.clone(), fault, at: input_value(&fault_id) })
    };
    let current_mode = settings::list_mode_name(component.list_mode);
    html! {
        <div class={classes!("component", uploaded.is_some().then_some("uploaded"))}
            id={format!("component-{name}")} ondragover={over} ondrop={dropped}>
            <div class="component-name">{ &name }</div>
            <div class="controller" id={format!("controller-{name}")}>{ controller }</div>
            <label>
                { "API server " }
                <select id={format!("api-server-{name}")} onchange={api}>
                    { for scenario.api_servers.iter().map(|s| html! {
                        <option value={s.name.clone()} selected={s.name == component.api_server}>{ &s.name }</option>
                    }) }
                </select>
            </label>
            <label title="How the component lists after a (re)start: from any cache (resourceVersion=0), a quorum read, or a consistent watch-list">
                { "list " }
                <select id={format!("list-mode-{name}")} onchange={mode}>
                    { for ["manifest", "any", "quorum", "consistent"].into_iter().map(|m| html! {
                        <option value={m} selected={m == current_mode}>{ if m == "manifest" { "as the controller asks" } else { m } }</option>
                    }) }
                </select>
            </label>
            <div class="mitigations" title="Upstream mitigations of stale reads of the component's own writes; a controller built on Recon's kube runtime (ReplicaSet, Deployment) applies them">
                { for Mitigation::ALL.into_iter().map(|m| {
                    let toggle = link.callback(move |e: Event| {
                        let on = checked_of(&e);
                        edit(move |s| settings::set_mitigation(s, j, m, on))
                    });
                    html! {
                        <label>
                            <input type="checkbox" id={format!("mitigation-{}-{name}", m.name())}
                                checked={component.has(m)} onchange={toggle} />
                            { settings::mitigation_label(m) }
                        </label>
                    }
                }) }
            </div>
            <div class="upload-row">
                <label class="upload">
                    { "Upload .wasm" }
                    <input type="file" accept=".wasm,application/wasm" id={format!("upload-{name}")} onchange={chosen} />
                </label>
                if uploaded.is_some() {
                    <button id={format!("reset-{name}")} onclick={reset}>{ "Use built-in" }</button>
                }
            </div>
            <div class="fault-row">
                <input class="short" id={fault_id.clone()} placeholder="at 5s"
                    aria-label={format!("{name}: time of the crash or restart")} />
                <button id={format!("crash-{name}")} onclick={fault(Fault::Crash)}>{ "Crash" }</button>
                <button id={format!("restart-{name}")} onclick={fault(Fault::Restart)}>{ "Restart" }</button>
            </div>
        </div>
    }
}

/// A script step in a few words.
fn describe_step(action: &StepAction) -> String {
    let via = |via: &Option<String>| via.as_ref().map(|v| format!(" via {v}")).unwrap_or_default();
    match action {
        StepAction::Create { object, via: v } => {
            format!("create {} {}{}", object.kind, object.metadata.name, via(v))
        }
        StepAction::Apply { object, via: v } => format!("apply {} {}{}", object.kind, object.metadata.name, via(v)),
        StepAction::Delete { target, via: v, .. } => format!("delete {} {}{}", target.kind, target.name, via(v)),
        StepAction::Scale { target, replicas, via: v } => {
            format!("scale {} {} to {replicas}{}", target.kind, target.name, via(v))
        }
        StepAction::Cordon { node } => format!("cordon {node}"),
        StepAction::Uncordon { node } => format!("uncordon {node}"),
        StepAction::Crash { component } => format!("crash {component}"),
        StepAction::Restart { component, api_server } => match api_server {
            Some(server) => format!("restart {component} on {server}"),
            None => format!("restart {component}"),
        },
        StepAction::Disconnect { component } => format!("disconnect {component}"),
        StepAction::Compact { keep } => format!("compact etcd, keeping {keep} revisions"),
    }
}

fn script(state: &State, ctx: &Context<App>) -> Html {
    let link = ctx.link();
    html! {
        <section class="panel">
            <h2>{ "Script" }</h2>
            <ol class="script" id="script">
                { for state.current.scenario.script.iter().enumerate().map(|(k, step)| {
                    let remove = link.callback(move |_| edit(move |s| { settings::remove_step(s, k); Ok(()) }));
                    html! {
                        <li>
                            <span class="at">{ ms(step.at.0) }</span>{ " " }{ describe_step(&step.action) }
                            <button class="remove" title="Remove this step" onclick={remove}>{ "×" }</button>
                        </li>
                    }
                }) }
            </ol>
        </section>
    }
}

fn timeline(state: &State, ctx: &Context<App>) -> Html {
    match &state.run {
        Some(run) => html! {
            <Timeline trace={run.trace.clone()} selected={state.selected}
                on_select={ctx.link().callback(Msg::Select)} on_moment={ctx.link().callback(Msg::Moment)} />
        },
        None => html! { <div class="timeline-empty">{ "Running the scenario…" }</div> },
    }
}

fn findings(state: &State, ctx: &Context<App>) -> Html {
    let Some(run) = &state.run else { return html! {} };
    let link = ctx.link();
    html! {
        <section class="findings" id="findings">
            if let Some((entry, reason)) = run.halted.clone() {
                <p class="halted" id="halted">
                    <a href="#" data-entry={entry.to_string()}
                        onclick={link.callback(move |e: MouseEvent| { e.prevent_default(); Msg::Select(entry) })}>
                        { "The run stopped early" }
                    </a>
                    { format!(": {reason}") }
                </p>
            }
            if run.explanations.is_empty() {
                <p class="ok" id="no-violations">{
                    if state.audit.is_some() { "No stale read found in these logs." }
                    else if run.halted.is_some() { "No violation up to where the run stopped." }
                    else { "No violation: every enabled check held for the whole run." }
                }</p>
            }
            { for run.explanations.iter().enumerate().map(|(k, explanation)| {
                let violation = explanation.violation;
                let select = link.callback(move |_| Msg::Select(violation));
                let selected = state.selected == Some(violation);
                html! {
                    <article class={classes!("violation", selected.then_some("selected"))} id={format!("explanation-{k}")}>
                        <h3 class="headline" onclick={select}>{ &explanation.headline }</h3>
                        <ol class="steps">
                            { for explanation.steps.iter().map(|step| {
                                // Each step's text starts with its time.
                                let entry = step.entry;
                                html! {
                                    <li>
                                        <a href="#" data-entry={entry.to_string()}
                                            class={classes!((state.selected == Some(entry)).then_some("selected"))}
                                            onclick={link.callback(move |e: MouseEvent| { e.prevent_default(); Msg::Select(entry) })}>
                                            { &step.text }
                                        </a>
                                    </li>
                                }
                            }) }
                        </ol>
                    </article>
                }
            }) }
            if !run.crashes.is_empty() {
                <ul class="crashes" id="crashes">
                    { for run.crashes.iter().map(|c| {
                        let first = c.first;
                        let times = if c.count == 1 { "once".to_owned() } else { format!("{} times", c.count) };
                        html! {
                            <li>
                                <a href="#" data-entry={first.to_string()}
                                    onclick={link.callback(move |e: MouseEvent| { e.prevent_default(); Msg::Select(first) })}>
                                    { format!("{} crashed {times}", c.component) }
                                </a>
                                { format!(": {}", c.reason) }
                            </li>
                        }
                    }) }
                </ul>
            }
            if !run.unavailable.is_empty() {
                <ul class="unavailable" id="unavailable">
                    { for run.unavailable.iter().map(|u| {
                        let until = u.until_ms.map_or_else(|| "the end".to_owned(), fmt_time);
                        html! {
                            <li>{ format!("{} could not read from {} until {} ({} failed requests; last: {})",
                                u.component, fmt_time(u.from_ms), until, u.failures, u.last_error) }</li>
                        }
                    }) }
                </ul>
            }
        </section>
    }
}

/// An object version in a few words.
fn object(o: &recon_trace::ObjectVersion) -> String {
    format!("{} {} (uid {}, revision {})", o.key.kind, o.key.name, o.uid.get(..8).unwrap_or(&o.uid), o.revision)
}

/// What a view holds that differs from etcd, one line each.
fn differences(d: &recon_trace::inspect::Differences) -> Html {
    html! {
        <>
            { for d.deleted.iter().map(|o| html! {
                <div class="deleted">{ format!("still holds {}, which etcd no longer has", object(o)) }</div>
            }) }
            { for d.outdated.iter().map(|o| html! {
                <div class="outdated">{ format!("holds {}; etcd has revision {}", object(&o.held), o.current) }</div>
            }) }
            { for d.missing.iter().map(|o| html! {
                <div class="missing">{ format!("lacks {}", object(o)) }</div>
            }) }
        </>
    }
}

/// The inspector: every API server's cache and every component's view
/// beside the store, at the selected moment.
fn inspector(state: &State, ctx: &Context<App>) -> Html {
    let Some(run) = &state.run else { return html! {} };
    if state.audit.is_some() {
        return html! {
            <section class="inspector" id="inspector" aria-label="Caches against etcd">
                <h2>{ "Caches against etcd" }</h2>
                <p class="hint" id="inspector-hint">
                    { "Audit logs record requests and answers, not what each component held: a replay in the \
                       simulator (recon audit --scenario) can show that." }
                </p>
            </section>
        };
    }
    let selected = state.selected.and_then(|id| run.trace.get(id));
    // Selecting an event inspects its moment; the button is for a selection
    // the page made (a run's violation), or one made while a run was going.
    let shown = state.snapshot.as_ref().map(|s| s.time_ms);
    let asked = match state.pending {
        Some(super::Pending::Inspect { at_ms, .. }) => Some(at_ms),
        _ => None,
    };
    let selected = selected.filter(|entry| shown != Some(entry.time_ms) && asked != Some(entry.time_ms));
    // A controller that many components run (a kubelet per node) shows
    // only its components whose view differs from etcd or that are down;
    // the rest are counted in one line. For each view, the controller it
    // is counted under, if it is.
    let counted_under: Vec<Option<&str>> = match &state.snapshot {
        None => Vec::new(),
        Some(snapshot) => {
            let names = names_and_controllers(&state.good.scenario);
            let folded = fold::folded_controllers(&names);
            let view_of = |(i, view): (usize, &recon_trace::inspect::ComponentView)| {
                // The snapshot lists the components in the scenario's order;
                // the search by name is for a view not where its index says.
                let at = match names.get(i) {
                    Some((name, _)) if *name == view.component => Some(i),
                    _ => names.iter().position(|(name, _)| *name == view.component),
                };
                at.and_then(|at| folded[at]).filter(|_| view.running && view.differences.is_current())
            };
            snapshot.components.iter().enumerate().map(view_of).collect()
        }
    };
    let mut quiet_counts: Vec<(&str, usize)> = Vec::new();
    for &controller in counted_under.iter().flatten() {
        match quiet_counts.iter_mut().find(|(c, _)| *c == controller) {
            Some((_, n)) => *n += 1,
            None => quiet_counts.push((controller, 1)),
        }
    }
    let button = selected.map(|entry| {
        let at_ms = entry.time_ms;
        html! {
            <button id="inspect" onclick={ctx.link().callback(move |_| Msg::Inspect(at_ms))}>
                { format!("What did each component hold at {}?", fmt_time(at_ms)) }
            </button>
        }
    });
    html! {
        <section class="inspector" id="inspector" tabindex="0" aria-label="Caches against etcd">
            <h2>{ "Caches against etcd" }</h2>
            { for button }
            if state.snapshot.is_none() {
                <p class="hint" id="inspector-hint">
                    { "Select an event, or click any moment on the timeline away from its events, to look there." }
                </p>
            }
            if let Some(snapshot) = &state.snapshot {
                <p class="hint" id="inspector-at">{ format!("At {}, etcd at revision {}.", fmt_time(snapshot.time_ms), snapshot.store_revision) }</p>
                <h3 class="inspector-group">{ "API servers' watch caches" }</h3>
                { for snapshot.caches.iter().map(|cache| html! {
                    <div class={classes!("view-diff", (!cache.differences.is_current()).then_some("stale"))}
                        id={format!("cache-{}", cache.api_server)}>
                        <div class="component-name">
                            { format!("{}'s cache", cache.api_server) }
                            <span class="hint">{ format!(
                                " · revision {}{} · holds {}",
                                cache.revision,
                                match snapshot.store_revision.saturating_sub(cache.revision) {
                                    0 => String::new(),
                                    behind => format!(" ({} behind etcd)", count(behind as usize, "revision")),
                                },
                                count(cache.held, "object"),
                            ) }</span>
                        </div>
                        if !cache.enabled {
                            <div class="hint">{ "cache off: lists and gets go to etcd; the cache feeds watches only" }</div>
                        }
                        if cache.differences.is_current() {
                            <div class="ok">{ "matches etcd" }</div>
                        }
                        { differences(&cache.differences) }
                    </div>
                }) }
                <h3 class="inspector-group">{ "Components' informers" }</h3>
                { for snapshot.components.iter().zip(&counted_under).filter(|(_, under)| under.is_none()).map(|(view, _)| html! {
                    <div class={classes!("view-diff", (!view.differences.is_current()).then_some("stale"))}
                        id={format!("view-{}", view.component)}>
                        <div class="component-name">
                            { &view.component }
                            <span class="hint">{ format!(" via {} · holds {}", view.api_server, count(view.held, "object")) }</span>
                        </div>
                        if !view.running {
                            <div class="hint">{ "not running (crashed or restarting): holds nothing" }</div>
                        } else if view.differences.is_current() {
                            <div class="ok">{ "matches etcd for everything it watches" }</div>
                        }
                        { differences(&view.differences) }
                    </div>
                }) }
                { for quiet_counts.iter().map(|(controller, n)| html! {
                    <div class="view-diff folded" id={format!("views-{controller}")}>
                        <div class="component-name">{ format!("{} components that run {controller}", super::grouped(*n)) }</div>
                        <div class="ok">{ "each matches etcd for everything it watches (not listed one by one)" }</div>
                    </div>
                }) }
            }
        </section>
    }
}
