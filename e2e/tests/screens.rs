//! The playground on every screen: phone widths to a wall of monitors, a
//! window narrowed and widened again, narrow embeds, touch, and what the
//! page does if its own code ever breaks (issue 19). Run by `cargo xtask
//! test` (see the crate docs for the environment).

use std::time::{Duration, Instant};

use recon_e2e::{Browser, PATIENCE, native_hash};

const DEFAULT: &str = "pod-safety-59848";

/// Runs a script that returns something, and returns it.
async fn script(page: &Browser, js: &str) -> serde_json::Value {
    page.client().execute(js, vec![]).await.unwrap()
}

/// Waits until `js` returns `true`, failing with `what` and the last value.
async fn wait_until(page: &Browser, js: &str, what: &str) {
    let start = Instant::now();
    loop {
        let value = script(page, js).await;
        if value == true {
            return;
        }
        assert!(start.elapsed() < PATIENCE, "{what}: never happened (last: {value})");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The default scenario, run, with the first-visit tour skipped; and its hash.
async fn opened() -> (Browser, String) {
    let page = Browser::open("").await;
    let hash = page.hash_after(None).await;
    page.find("#tour-skip").await.click().await.unwrap();
    (page, hash)
}

/// Sets an input's value and tells the page, as typing and leaving it would.
async fn set_value(page: &Browser, id: &str, value: &str) {
    let js = "const e = document.getElementById(arguments[0]); e.value = arguments[1]; \
              e.dispatchEvent(new Event('change', { bubbles: true }));";
    page.client().execute(js, vec![id.into(), value.into()]).await.unwrap();
}

/// Makes the browser's viewport `width` CSS pixels wide.
async fn set_width(page: &Browser, width: u32) {
    // The window's frame is what WebDriver sizes; headless has none, but
    // ask for the inner width and correct by what it reports.
    page.client().set_window_size(width, 900).await.unwrap();
    let inner = script(page, "return window.innerWidth").await.as_u64().unwrap() as u32;
    if inner != width {
        page.client().set_window_size(width + (width - inner.min(width)), 900).await.unwrap();
    }
    wait_until(page, &format!("return window.innerWidth === {width}"), &format!("a {width} px viewport")).await;
}

/// The timeline has drawn a frame that fills its canvas at the canvas's
/// current width, and the page has not crashed.
async fn assert_drawn(page: &Browser, width: u32) {
    let painted = "const c = document.getElementById('timeline-canvas'); \
                   return !!c && c.clientWidth > 0 && c.getAttribute('data-painted-width') === String(c.clientWidth)";
    wait_until(page, painted, &format!("the timeline drawn at {width} px")).await;
    assert!(!page.exists("#page-crashed").await, "the page crashed at {width} px");
    // Nothing sticks out sideways: the page is as wide as the screen.
    let overflow = script(page, "return document.documentElement.scrollWidth - window.innerWidth").await;
    assert!(overflow.as_i64().unwrap() <= 1, "at {width} px the page is {overflow} px wider than the screen");
}

/// The page answers: the "about" toggle opens and closes its panel.
async fn assert_answers(page: &Browser) {
    page.find("#about-toggle").await.click().await.unwrap();
    page.find("#about").await;
    page.find("#about-toggle").await.click().await.unwrap();
    wait_until(page, "return !document.getElementById('about')", "the about panel closing").await;
}

#[tokio::test(flavor = "current_thread")]
async fn the_page_draws_and_answers_at_every_width_and_after_being_narrowed_and_widened() {
    let (page, hash) = opened().await;
    // Issue 19: below about 580 px the cursor label's clamp panicked and
    // the page froze for good, even after the window was widened again.
    page.find("#tl-first-violation").await.click().await.unwrap();
    for width in [2560, 1920, 1400, 1024, 768, 700, 600, 579, 560, 480, 390, 360, 320] {
        set_width(&page, width).await;
        assert_drawn(&page, width).await;
        assert_answers(&page).await;
        if width >= 1400 {
            // The header fits one row on a desktop window.
            let rows = "const h = document.querySelector('header'); const tops = new Set(); \
                        for (const c of h.children) { const r = c.getBoundingClientRect(); if (r.height > 0) tops.add(Math.round(r.top + r.height / 2)); } \
                        return Math.max(...tops) - Math.min(...tops)";
            let spread = script(&page, rows).await.as_f64().unwrap();
            assert!(spread <= 4.0, "at {width} px the header's items sit on more than one row ({spread} px apart)");
        }
    }
    // Narrow, the settings fold away; they open and still change the run.
    assert!(!page.find("#controls").await.is_displayed().await.unwrap(), "at 320 px the settings start folded");
    page.find("#controls-toggle").await.click().await.unwrap();
    let list_mode = page.find("#list-mode-kubelet-node-1").await;
    assert!(list_mode.is_displayed().await.unwrap());
    list_mode.select_by_value("consistent").await.unwrap();
    let consistent = page.hash_after(Some(&hash)).await;
    page.find("#no-violations").await;
    // Widened again: everything works, the settings are beside the timeline.
    set_width(&page, 1400).await;
    assert_drawn(&page, 1400).await;
    assert!(page.find("#controls").await.is_displayed().await.unwrap());
    assert!(!page.find("#controls-toggle").await.is_displayed().await.unwrap());
    page.find("#list-mode-kubelet-node-1").await.select_by_value("any").await.unwrap();
    assert_eq!(page.hash_after(Some(&consistent)).await, hash);
    assert_answers(&page).await;
    page.close().await;
}

#[tokio::test(flavor = "current_thread")]
async fn at_phone_width_the_timeline_has_the_width_and_the_explanation_sits_below_it() {
    let page = Browser::open("").await;
    page.hash_after(None).await;
    set_width(&page, 390).await;
    assert_drawn(&page, 390).await;
    let boxes = script(
        &page,
        "const r = id => document.getElementById(id).getBoundingClientRect(); \
         const t = r('timeline-canvas'), f = r('findings'); \
         return [t.left, t.right, t.bottom, f.top, window.innerWidth]",
    )
    .await;
    let [left, right, bottom, findings_top, screen] =
        [0, 1, 2, 3, 4].map(|i| boxes[i].as_f64().unwrap_or_else(|| panic!("{boxes}")));
    assert!(right - left >= screen - 40.0, "the timeline is {} px wide on a {screen} px screen", right - left);
    assert!(
        findings_top >= bottom - 1.0,
        "the explanation starts at {findings_top}, above the timeline's end {bottom}"
    );
    page.close().await;
}

/// Issue 18 on a phone: audit logs dropped on the page are drawn at the
/// screen's width, the folded settings say they hold the way back, and it
/// leads back to the scenarios.
#[tokio::test(flavor = "current_thread")]
async fn at_phone_width_audit_logs_are_drawn_and_the_way_back_is_under_the_folded_settings() {
    let (page, hash) = opened().await;
    set_width(&page, 360).await;
    let run = recon_e2e::native_run(DEFAULT, &[]);
    let logs = recon_audit::audit_logs(&run, &recon_scenario::Kinds::builtin()).unwrap();
    let names: Vec<String> = logs.iter().map(|l| format!("{}.log", l.server)).collect();
    let files: Vec<(&str, &[u8])> = names.iter().zip(&logs).map(|(n, l)| (n.as_str(), l.text.as_bytes())).collect();
    page.drop_files("#timeline-canvas", &files).await;
    let audited = page.hash_after(Some(&hash)).await;
    assert_drawn(&page, 360).await;
    page.wait_text("#findings", |t| t.contains("apiserver-2")).await;
    let toggle = page.wait_text("#controls-toggle", |t| t.starts_with("Audit logs")).await;
    assert!(toggle.contains("back to the scenarios"), "{toggle}");
    page.find("#controls-toggle").await.click().await.unwrap();
    page.find("#audit-close").await.click().await.unwrap();
    assert_eq!(page.hash_after(Some(&audited)).await, hash);
    assert_drawn(&page, 360).await;
    page.close().await;
}

#[tokio::test(flavor = "current_thread")]
async fn narrow_embeds_draw_and_show_the_headline_and_the_start_of_the_chain() {
    let page = Browser::open("").await;
    let url = std::env::var("RECON_E2E_URL").unwrap();
    let client = page.client();
    // The host page must come from the same local server: Chromium blocks a
    // public page from framing a loopback one.
    client.goto(&format!("{url}blog-post.html")).await.unwrap();
    let widths = [320u32, 390, 480, 560, 700];
    let frames: String = widths
        .iter()
        .map(|w| format!("<iframe src=\"{url}?embed=1\" width=\"{w}\" height=\"520\"></iframe>"))
        .collect();
    let write = "document.open(); document.write(arguments[0]); document.close();";
    client.execute(write, vec![frames.into()]).await.unwrap();
    for (frame, width) in widths.iter().enumerate() {
        client.clone().enter_frame(frame as u16).await.unwrap();
        assert_eq!(page.hash_after(None).await, native_hash(DEFAULT, &[]), "the {width} px embed");
        let drawn = "const c = document.getElementById('timeline-canvas'); \
                     return !!c && c.clientWidth > 0 && c.getAttribute('data-painted-width') === String(c.clientWidth)";
        wait_until(&page, drawn, &format!("the {width} px embed's timeline")).await;
        assert!(!page.exists("#page-crashed").await, "the {width} px embed crashed");
        // At its default height the headline and the chain's first step are in view.
        let seen = "const inView = e => { const r = e.getBoundingClientRect(); \
                        return r.height > 0 && r.top >= 0 && r.bottom <= window.innerHeight; }; \
                    const h = document.querySelector('article.violation.selected .headline'); \
                    const s = document.querySelector('article.violation.selected ol.steps li'); \
                    return !!h && !!s && inView(h) && inView(s)";
        wait_until(&page, seen, &format!("the headline and first step in view in the {width} px embed")).await;
        client.clone().enter_parent_frame().await.unwrap();
    }
    page.close().await;
}

/// Sends a synthetic touch event with the given points (client pixels) to the canvas.
async fn touch(page: &Browser, kind: &str, down: &[(f64, f64)], changed: &[(f64, f64)]) {
    let js = "const [kind, down, changed] = arguments; \
              const c = document.getElementById('timeline-canvas'); \
              const t = (p, i) => new Touch({ identifier: i, target: c, clientX: p[0], clientY: p[1] }); \
              c.dispatchEvent(new TouchEvent(kind, { bubbles: true, cancelable: true, \
                  touches: down.map(t), targetTouches: down.map(t), changedTouches: changed.map(t) }));";
    let points = |ps: &[(f64, f64)]| serde_json::json!(ps.iter().map(|(x, y)| [x, y]).collect::<Vec<_>>());
    page.client().execute(js, vec![kind.into(), points(down), points(changed)]).await.unwrap();
}

async fn canvas_number(page: &Browser, attribute: &str) -> f64 {
    let js = format!("return document.getElementById('timeline-canvas').getAttribute('{attribute}')");
    let value = script(page, &js).await;
    value.as_str().and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("{attribute} is {value}"))
}

#[tokio::test(flavor = "current_thread")]
async fn touch_drags_to_pan_pinches_to_zoom_and_taps_to_select() {
    let (page, _) = opened().await;
    set_width(&page, 390).await;
    assert_drawn(&page, 390).await;
    let rect = script(
        &page,
        "const r = document.getElementById('timeline-canvas').getBoundingClientRect(); return [r.left, r.top, r.width]",
    )
    .await;
    let (left, top, width) = (rect[0].as_f64().unwrap(), rect[1].as_f64().unwrap(), rect[2].as_f64().unwrap());
    let y = top + 60.0;
    let middle = left + width * 0.65;

    // Two fingers spreading from 40 to 120 px apart: three times as close.
    let fit = canvas_number(&page, "data-ms-per-px").await;
    touch(&page, "touchstart", &[(middle - 20.0, y), (middle + 20.0, y)], &[(middle + 20.0, y)]).await;
    touch(&page, "touchmove", &[(middle - 60.0, y), (middle + 60.0, y)], &[]).await;
    touch(&page, "touchend", &[(middle - 60.0, y)], &[(middle + 60.0, y)]).await;
    touch(&page, "touchend", &[], &[(middle - 60.0, y)]).await;
    let js = format!(
        "return Math.abs(Number(document.getElementById('timeline-canvas').getAttribute('data-ms-per-px')) * 3 / {fit} - 1) < 0.01"
    );
    wait_until(&page, &js, "a pinch zooming in three times").await;

    // One finger dragging 40 px (towards the plot's middle, so the mark
    // stays in view) moves the selected violation's mark with it.
    page.find("#tl-first-violation").await.click().await.unwrap();
    // The canvas marks the selection when it next draws, not within the click.
    let marked = "return document.getElementById('timeline-canvas').getAttribute('data-selected-x') !== null";
    wait_until(&page, marked, "the first violation marked on the canvas").await;
    let before = canvas_number(&page, "data-selected-x").await;
    let dx = if before > width * 0.6 { -40.0 } else { 40.0 };
    touch(&page, "touchstart", &[(middle, y)], &[(middle, y)]).await;
    touch(&page, "touchmove", &[(middle + dx / 2.0, y)], &[]).await;
    touch(&page, "touchmove", &[(middle + dx, y)], &[]).await;
    touch(&page, "touchend", &[], &[(middle + dx, y)]).await;
    let js = format!(
        "return Number(document.getElementById('timeline-canvas').getAttribute('data-selected-x')) === {}",
        before + dx
    );
    wait_until(&page, &js, "the mark following a one-finger drag").await;

    // A tap on the selected mark keeps it selected; a tap on an empty
    // moment away from the marks inspects that moment.
    let (mx, my) = (canvas_number(&page, "data-selected-x").await, canvas_number(&page, "data-selected-y").await);
    let selected = page.find("#timeline-selected").await.attr("data-entry").await.unwrap();
    touch(&page, "touchstart", &[(left + mx, top + my)], &[(left + mx, top + my)]).await;
    touch(&page, "touchend", &[], &[(left + mx, top + my)]).await;
    assert_eq!(page.find("#timeline-selected").await.attr("data-entry").await.unwrap(), selected);
    // A one-finger tap in the axis scrubs: the cursor selects the entry at or before it.
    let axis = (left + mx - 1.0, top + 10.0);
    touch(&page, "touchstart", &[axis], &[axis]).await;
    touch(&page, "touchend", &[], &[axis]).await;
    assert!(!page.exists("#page-crashed").await);
    assert_answers(&page).await;
    page.close().await;
}

#[tokio::test(flavor = "current_thread")]
async fn if_the_page_itself_panics_it_says_so_and_offers_a_reload_never_a_frozen_screen() {
    let page = Browser::open("?selftest=panic-page").await;
    let message = page.wait_text("#page-crashed", |t| t.contains("Reload")).await;
    assert!(message.contains("stopped working") && message.contains("selftest=panic-page"), "{message}");
    assert_eq!(script(&page, "return document.activeElement.id").await, "page-crashed-reload");
    // The button reloads the page, which starts again (and, asked to, panics again).
    script(&page, "window.reloadMarker = 1; return 0").await;
    page.find("#page-crashed-reload").await.click().await.unwrap();
    wait_until(&page, "return window.reloadMarker === undefined", "the reload").await;
    page.close().await;
}

#[tokio::test(flavor = "current_thread")]
async fn if_the_worker_panics_the_page_says_why_replaces_it_and_keeps_working() {
    let page = Browser::open("?selftest=panic-worker").await;
    let first = page.hash_after(None).await;
    let error = page.wait_text("#error pre", |t| t.contains("internal error")).await;
    assert!(error.contains("selftest=panic-worker") && error.contains("replaced"), "{error}");
    assert!(!page.exists("#page-crashed").await, "a worker's panic is not the page's");
    // The last run is still shown, and a new worker runs the next change.
    page.find("#timeline-canvas").await;
    set_value(&page, "seed", "7").await;
    let after = page.hash_after(Some(&first)).await;
    let library = recon_catalog::scenario(DEFAULT).unwrap();
    let mut scenario = recon_scenario::parse(DEFAULT, library.yaml).unwrap();
    scenario.seed = 7;
    assert_eq!(after, recon_e2e::run_scenario(&scenario, &[]).hash());
    page.close().await;
}

#[tokio::test(flavor = "current_thread")]
async fn an_edit_lives_in_the_address_so_reload_keeps_it_and_back_undoes_it() {
    // apiserver-1's cache lagging 3 s changes the run (checked natively).
    let library = recon_catalog::scenario(DEFAULT).unwrap();
    let mut lagging = recon_scenario::parse(DEFAULT, library.yaml).unwrap();
    lagging.api_servers[0].watch_cache.lag = recon_scenario::Millis(3_000);
    let expected = recon_e2e::run_scenario(&lagging, &[]).hash();
    let page = Browser::open("").await;
    let original = page.hash_after(None).await;
    assert_ne!(expected, original, "the edit must change the run for this test to mean anything");
    page.find("#tour-skip").await.click().await.unwrap();
    set_value(&page, "cache-lag-apiserver-1", "3s").await;
    let edited = page.hash_after(Some(&original)).await;
    assert_eq!(edited, expected);
    wait_until(&page, "return location.hash.startsWith('#run=')", "the edit in the address").await;
    let length = script(&page, "return location.href.length").await.as_u64().unwrap();
    assert!(length < 4096, "the address stays short: {length} characters");
    let picked = page.find("#scenario-select option:checked").await.text().await.unwrap();
    assert!(picked.contains("(edited)"), "{picked}");
    // Reload: the same edited run, the lag still set.
    page.client().refresh().await.unwrap();
    assert_eq!(page.hash_after(None).await, edited);
    assert_eq!(page.find("#cache-lag-apiserver-1").await.prop("value").await.unwrap().as_deref(), Some("3s"));
    // Back: the scenario as shipped.
    page.client().back().await.unwrap();
    assert_eq!(page.hash_after(None).await, original);
    let picked = page.find("#scenario-select option:checked").await.text().await.unwrap();
    assert_eq!(picked, DEFAULT);
    page.close().await;
}

/// Issue 17: a cluster at scale opens by its name, from the address (any
/// size) or from the menu, runs in the tab with the trace the native run
/// of the same generated file gives, and keeps only its name in the
/// address, as a library scenario does.
#[tokio::test(flavor = "current_thread")]
async fn a_cluster_at_scale_opens_by_its_name_from_the_address_and_from_the_menu() {
    let small = recon_catalog::cluster::name(4, 60);
    let page = Browser::open(&format!("?scenario={small}")).await;
    let scenario = recon_scenario::parse("cluster.yaml", &recon_catalog::cluster::yaml(4, 60)).unwrap();
    let first = page.hash_after(None).await;
    assert_eq!(first, recon_e2e::run_scenario(&scenario, &[]).hash());
    let picked = page.find("#scenario-select option:checked").await.text().await.unwrap();
    assert_eq!(picked, "4 nodes, 60 pods", "a size the menu does not offer is shown in it while open");
    // The menu's 100-node cluster: its name, not its file, in the address.
    let hundred = recon_catalog::cluster::name(100, 3_000);
    page.find("#scenario-select").await.select_by_value(&hundred).await.unwrap();
    let big = page.hash_after(Some(&first)).await;
    let address = format!("return location.search === '?scenario={hundred}' && location.hash === ''");
    wait_until(&page, &address, "the cluster's name in the address").await;
    let picked = page.find("#scenario-select option:checked").await.text().await.unwrap();
    assert_eq!(picked, "100 nodes, 3,000 pods");
    let row = page.find("#folded-kubelet").await.text().await.unwrap();
    assert!(row.contains("100 components run kubelet"), "the kubelets fold into one row: {row}");
    // Reload brings the same run back from the name alone.
    page.client().refresh().await.unwrap();
    assert_eq!(page.hash_after(None).await, big);
    page.close().await;
}

/// Types `text` into the input `id` as a visitor would (an `input` event).
async fn type_into(page: &Browser, id: &str, text: &str) {
    let js = "const e = document.getElementById(arguments[0]); e.value = arguments[1]; \
              e.dispatchEvent(new Event('input', { bubbles: true }));";
    page.client().execute(js, vec![id.into(), text.into()]).await.unwrap();
}

/// Issue 17: a cluster's kubelets, one per node, fold into one row of the
/// components panel that finds them by name (the page redraws every card on
/// each progress report of a run, a thousand of them at 1,000 nodes). A
/// kubelet found there takes a plugin like any component, and stays in
/// sight once it runs one; a plugin dropped on the row itself runs as
/// every kubelet, and one button takes them all back to the built-in.
#[tokio::test(flavor = "current_thread")]
async fn a_clusters_kubelets_fold_into_one_row_that_finds_them_by_name() {
    let (nodes, pods) = (12, 360);
    let scenario = recon_scenario::parse("cluster.yaml", &recon_catalog::cluster::yaml(nodes, pods)).unwrap();
    let page = Browser::open(&format!("?scenario={}", recon_catalog::cluster::name(nodes, pods))).await;
    let first = page.hash_after(None).await;
    assert_eq!(first, recon_e2e::run_scenario(&scenario, &[]).hash());
    let row = page.find("#folded-kubelet").await.text().await.unwrap();
    assert!(row.contains("12 components run kubelet") && row.contains("kubelet-node-1 … kubelet-node-12"), "{row}");
    assert!(!page.exists("#component-kubelet-node-3").await, "a folded kubelet has no card of its own");
    let scheduler = scenario.components.iter().find(|c| c.controller != "kubelet").unwrap();
    assert!(page.exists(&format!("#component-{}", scheduler.name)).await, "the control plane keeps its cards");
    // A search shows those whose name holds it.
    type_into(&page, "find-kubelet", "node-1").await;
    page.wait_text("#found-kubelet", |t| t == "4 components found.").await;
    for n in [1, 10, 11, 12] {
        assert!(page.exists(&format!("#component-kubelet-node-{n}")).await, "kubelet-node-{n} is found");
    }
    assert!(!page.exists("#component-kubelet-node-2").await);
    type_into(&page, "find-kubelet", "node-7x").await;
    page.wait_text("#found-kubelet", |t| t.contains("None of them has \"node-7x\"")).await;
    // The one found takes a plugin, and runs it as the native run does.
    type_into(&page, "find-kubelet", "NODE-12").await;
    page.wait_text("#found-kubelet", |t| t == "1 component found.").await;
    let path = recon_e2e::plugin_path("recon_plugin_kubelet_fixed");
    page.find("#upload-kubelet-node-12").await.send_keys(&path.display().to_string()).await.unwrap();
    let swapped = page.hash_after(Some(&first)).await;
    let bytes = std::fs::read(&path).unwrap();
    let file_name = path.file_name().unwrap().to_str().unwrap();
    assert_eq!(swapped, recon_e2e::run_scenario(&scenario, &[("kubelet-node-12", file_name, &bytes)]).hash());
    // With the search cleared, the kubelet running the plugin stays in sight.
    type_into(&page, "find-kubelet", "").await;
    page.wait_text("#found-kubelet", |t| t.starts_with("Drop a plugin here")).await;
    let card = page.find("#controller-kubelet-node-12").await.text().await.unwrap();
    assert!(card.contains(file_name), "{card}");
    assert!(!page.exists("#component-kubelet-node-1").await);
    // A file that is no plugin, dropped on the row, is refused and the run kept.
    page.drop_files("#folded-kubelet", &[("kubelet.wasm", &b"\0asm"[..])]).await;
    page.wait_text("#error", |t| t.contains("kubelet.wasm")).await;
    assert_eq!(page.find("#trace-hash").await.text().await.unwrap(), swapped, "the run is kept");
    assert!(!page.exists("#reset-all-kubelet").await);
    // A plugin dropped on the row runs as every kubelet, as natively.
    page.drop_files("#folded-kubelet", &[(file_name, &bytes)]).await;
    let every = page.hash_after(Some(&swapped)).await;
    let kubelets: Vec<String> = (1..=nodes).map(|n| format!("kubelet-node-{n}")).collect();
    let swaps: Vec<recon_e2e::Swap<'_>> = kubelets.iter().map(|k| (k.as_str(), file_name, &bytes[..])).collect();
    assert_eq!(every, recon_e2e::run_scenario(&scenario, &swaps).hash());
    let notice = page.find("#notice").await.text().await.unwrap();
    assert!(notice.contains("12 components now run recon_plugin_kubelet_fixed.wasm (kubelet-fixed)"), "{notice}");
    // A dozen cards at most, those running the plugin first in sight.
    assert!(page.exists("#component-kubelet-node-1").await);
    // One button puts the built-in kubelet back on all of them.
    page.find("#reset-all-kubelet").await.click().await.unwrap();
    assert_eq!(page.hash_after(Some(&every)).await, first);
    assert!(!page.exists("#component-kubelet-node-1").await, "none is kept in sight any more");
    page.close().await;
}

/// A tab has room for about 120 plugin instances (each gets a memory of
/// its own): a plugin dropped on the row of more kubelets than a tab runs
/// from plugins is refused with the command that runs them all, and the
/// run is kept.
#[tokio::test(flavor = "current_thread")]
async fn a_plugin_for_more_kubelets_than_a_tab_holds_is_refused_with_the_command_that_runs_them() {
    let nodes = recon_web_protocol::MAX_PLUGIN_COMPONENTS + 1;
    let page = Browser::open(&format!("?scenario={}", recon_catalog::cluster::name(nodes, nodes))).await;
    let first = page.hash_after(None).await;
    let path = recon_e2e::plugin_path("recon_plugin_kubelet_fixed");
    let file_name = path.file_name().unwrap().to_str().unwrap();
    page.drop_files("#folded-kubelet", &[(file_name, &std::fs::read(&path).unwrap())]).await;
    let error = page.wait_text("#error", |t| t.contains("a tab runs at most")).await;
    assert!(error.contains(&format!("This run gives plugins to {nodes} components")), "{error}");
    assert!(error.contains(&format!("--plugin 'kubelet-node-*={file_name}'")), "{error}");
    assert_eq!(page.find("#trace-hash").await.text().await.unwrap(), first, "the run is kept");
    assert!(!page.exists("#reset-all-kubelet").await, "no kubelet runs the plugin");
    assert!(!page.exists("#notice").await, "no notice says they run it");
    page.close().await;
}

/// Issue 17: the inspector of a cluster lists the kubelets whose view
/// differs from etcd, or that are down, one by one, and counts the rest
/// in one line: at the moment a share link selects, as the native
/// simulator has them.
#[tokio::test(flavor = "current_thread")]
async fn a_clusters_inspector_counts_the_kubelets_that_match_etcd_in_one_line() {
    let (nodes, pods) = (12, 360);
    let (name, yaml) = (recon_catalog::cluster::name(nodes, pods), recon_catalog::cluster::yaml(nodes, pods));
    let scenario = recon_scenario::parse("cluster.yaml", &yaml).unwrap();
    let trace = recon_e2e::run_scenario(&scenario, &[]);
    // The first moment of the rolling update or the kubelet's restart when
    // some kubelets differ from etcd (those on the lagging API servers, or
    // one restarting) and some do not.
    let mut sim = recon_sim::Sim::new(&scenario, Box::new(|c| recon_catalog::instantiate(&c.controller))).unwrap();
    let quiet = |view: &recon_trace::inspect::ComponentView| view.running && view.differences.is_current();
    let (entry, snapshot) = trace
        .entries
        .iter()
        .filter(|e| e.time_ms >= 60_000)
        .find_map(|entry| {
            sim.run_until(entry.time_ms);
            let snapshot = sim.snapshot();
            let kubelets = snapshot.components.iter().filter(|v| v.component.starts_with("kubelet-"));
            let matching = kubelets.clone().filter(|v| quiet(v)).count();
            (0 < matching && matching < nodes).then_some((entry, snapshot))
        })
        .expect("a moment when some kubelets are behind etcd and some are not");
    let made = recon_web::share::make(&name, &yaml, &[], Some(entry.id));
    let page = Browser::open(&made.fragment).await;
    page.wait_text("#inspector-at", |t| t.starts_with("At t=")).await;
    let kubelets: Vec<_> = snapshot.components.iter().filter(|v| v.component.starts_with("kubelet-")).collect();
    assert_eq!(kubelets.len(), nodes);
    let matching = kubelets.iter().filter(|v| quiet(v)).count();
    let line = page.find("#views-kubelet").await.text().await.unwrap();
    assert!(line.starts_with(&format!("{matching} components that run kubelet")), "{line}");
    for view in kubelets {
        let listed = page.exists(&format!("#view-{}", view.component)).await;
        assert_eq!(listed, !quiet(view), "{} is listed if and only if it differs or is down", view.component);
    }
    // The control plane's views are listed as ever.
    let scheduler = scenario.components.iter().find(|c| c.controller != "kubelet").unwrap();
    assert!(page.exists(&format!("#view-{}", scheduler.name)).await);
    page.close().await;
}

#[tokio::test(flavor = "current_thread")]
async fn upload_is_reached_with_tab_and_takes_a_file_from_the_keyboard() {
    let (page, before) = opened().await;
    script(&page, "document.getElementById('list-mode-kubelet-node-1').focus(); return 0").await;
    // Tab walks the component's controls in reading order: the mitigation
    // switches, then the upload.
    for next in [
        "mitigation-staleControllerConsistency-kubelet-node-1",
        "mitigation-readYourOwnWrites-kubelet-node-1",
        "upload-kubelet-node-1",
    ] {
        page.client().active_element().await.unwrap().send_keys(&fantoccini::key::Key::Tab.to_string()).await.unwrap();
        assert_eq!(script(&page, "return document.activeElement.id").await, next);
    }
    // What the keyboard's Enter opens, a file chosen in the picker, arrives as here.
    let path = recon_e2e::plugin_path("recon_plugin_kubelet_fixed");
    page.client().active_element().await.unwrap().send_keys(&path.display().to_string()).await.unwrap();
    page.find("#no-violations").await;
    assert_ne!(page.hash_after(Some(&before)).await, before);
    page.close().await;
}

#[tokio::test(flavor = "current_thread")]
async fn first_violation_scrolls_the_findings_list_to_the_one_it_selects() {
    let (page, _) = opened().await;
    page.client().set_window_size(1400, 560).await.unwrap();
    let in_view = "const f = document.getElementById('findings').getBoundingClientRect(); \
                   const a = document.querySelector('article.violation.selected'); \
                   if (!a) return false; const r = a.getBoundingClientRect(); \
                   return r.top >= f.top - 1 && r.top < f.bottom";
    page.find("#tl-first-violation").await.click().await.unwrap();
    wait_until(&page, in_view, "the first violation's explanation in view").await;
    // Scroll the list so that explanation is out of sight…
    let overflows =
        script(&page, "const f = document.getElementById('findings'); return f.scrollHeight - f.clientHeight").await;
    assert!(overflows.as_i64().unwrap() > 100, "at 560 px the findings list scrolls: {overflows}");
    let away = "const f = document.getElementById('findings'); const a = document.querySelector('article.violation.selected'); \
                const r = a.getBoundingClientRect(), b = f.getBoundingClientRect(); \
                f.scrollTop = (r.top - b.top < f.clientHeight / 2) ? f.scrollHeight : 0; return 0";
    script(&page, away).await;
    assert_eq!(script(&page, &in_view.replace("return r.top", "return r.bottom > f.top && r.top")).await, false);
    // …and the timeline's button brings it back.
    page.find("#tl-first-violation").await.click().await.unwrap();
    wait_until(&page, in_view, "the selected finding scrolled into view").await;
    page.close().await;
}

/// Runs axe-core (injected from `RECON_AXE_SCRIPT`, which `cargo xtask`
/// installs from the npm registry) on the current document and returns its
/// serious and critical violations, one line each; `None` when the script
/// is not available (the check is then skipped, with a message).
async fn serious_accessibility_problems(page: &Browser) -> Option<Vec<String>> {
    let Some(path) = std::env::var_os("RECON_AXE_SCRIPT") else {
        eprintln!("RECON_AXE_SCRIPT is not set (npm missing?): the accessibility check is skipped");
        return None;
    };
    let axe = std::fs::read_to_string(&path).expect("the axe-core script is readable");
    page.client().execute(&axe, vec![]).await.expect("axe-core loads");
    let run = "const done = arguments[arguments.length - 1]; \
               axe.run(document, { resultTypes: ['violations'] }).then(r => done(r.violations \
                 .filter(v => v.impact === 'serious' || v.impact === 'critical') \
                 .map(v => v.impact + ' ' + v.id + ': ' + v.help + ' — ' + v.nodes.slice(0, 3).map(n => n.target.join(' ')).join(', '))), \
                 e => done(['axe failed: ' + e]));";
    let found = page.client().execute_async(run, vec![]).await.expect("axe-core runs");
    Some(found.as_array().unwrap().iter().map(|v| v.as_str().unwrap_or_default().to_owned()).collect())
}

#[tokio::test(flavor = "current_thread")]
async fn the_playground_and_the_embed_have_no_serious_accessibility_problem() {
    for path in ["", "?embed=1"] {
        let page = Browser::open(path).await;
        page.hash_after(None).await;
        if page.exists("#tour-skip").await {
            page.find("#tour-skip").await.click().await.unwrap();
        }
        // With the inspector filled in, as a visitor sees it after a run.
        if path.is_empty() {
            page.wait_text("#inspector-at", |t| t.starts_with("At t=")).await;
        }
        if let Some(problems) = serious_accessibility_problems(&page).await {
            assert!(problems.is_empty(), "{path:?}:\n{}", problems.join("\n"));
        }
        page.close().await;
    }
}

#[tokio::test(flavor = "current_thread")]
async fn the_editor_has_room_shows_the_file_as_written_and_its_error_beside_the_line() {
    let (page, before) = opened().await;
    let text = page.open_editor().await;
    // The user's own file, comments and all, not a re-written copy.
    let shipped = recon_catalog::scenario(DEFAULT).unwrap().yaml;
    assert_eq!(text, shipped);
    // Room of its own: wider than the settings column, as tall as the page's middle.
    let size = script(
        &page,
        "const r = document.getElementById('editor-text').getBoundingClientRect(); return [r.width, r.height]",
    )
    .await;
    assert!(size[0].as_f64().unwrap() > 400.0 && size[1].as_f64().unwrap() > 300.0, "the editor is {size}");
    // A mistake on line 17: the message sits beside that line, in view, and Apply is in view.
    let broken = text.replacen("seed: 1\n", "seed: 1\nseeed: 2\n", 1);
    let line = broken.lines().position(|l| l.starts_with("seeed")).unwrap() + 1;
    page.type_scenario(&broken).await;
    let inline = page.wait_text("#editor-inline-error", |t| t.contains("seeed")).await;
    assert!(inline.starts_with(&format!("line {line}:")), "{inline}");
    let placed = format!(
        "const t = document.getElementById('editor-text'), e = document.getElementById('editor-inline-error'); \
         const tr = t.getBoundingClientRect(), er = e.getBoundingClientRect(); \
         const lineTop = tr.top + 6 + ({line} - 1) * 18 - t.scrollTop; \
         return er.top >= tr.top && er.bottom <= tr.bottom && Math.abs(er.top - lineTop) <= 4"
    );
    wait_until(&page, &placed, "the message level with its line, inside the editor").await;
    let apply_in_view = "const r = document.getElementById('editor-apply').getBoundingClientRect(); \
                         return r.top >= 0 && r.bottom <= window.innerHeight";
    assert_eq!(script(&page, apply_in_view).await, true);
    // Fixed and applied: the editor keeps showing the user's text.
    let edited = text.replacen("seed: 1\n", "seed: 3\n", 1);
    page.apply_scenario(&edited).await;
    page.hash_after(Some(&before)).await;
    assert!(!page.exists("#editor-inline-error").await);
    let shown = page.find("#editor-text").await.prop("value").await.unwrap().unwrap();
    assert_eq!(shown, edited);
    page.close().await;
}

/// Not a test: writes the README's screenshots of the default run at 390
/// px (a phone) and 1400 px (a desktop window) into `docs/screenshots/`.
/// `cargo xtask e2e --test screens -- --ignored --exact write_the_readme_screenshots`
#[tokio::test(flavor = "current_thread")]
#[ignore = "a tool that writes docs/screenshots, run by hand"]
async fn write_the_readme_screenshots() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/screenshots");
    for (width, height, file) in [(390, 844, "phone.png"), (1400, 900, "playground.png")] {
        let page = Browser::open("").await;
        page.hash_after(None).await;
        page.find("#tour-skip").await.click().await.unwrap();
        set_width(&page, width).await;
        page.client().set_window_size(width, height).await.unwrap();
        assert_drawn(&page, width).await;
        page.wait_text("#inspector-at", |t| t.starts_with("At t=")).await;
        let png = page.client().screenshot().await.unwrap();
        std::fs::write(dir.join(file), png).unwrap();
        page.close().await;
    }
}
