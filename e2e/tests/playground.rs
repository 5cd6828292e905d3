//! The playground in headless Chromium: what a visitor sees and does.
//! Run by `cargo xtask test` (see the crate docs for the environment).

use std::time::{Duration, Instant};

use recon_e2e::{Browser, native_hash, native_run, plugin_path};

#[path = "../../crates/audit/tests/support/mod.rs"]
mod support;
use support::Scratch;

const DEFAULT: &str = "pod-safety-59848";

#[tokio::test(flavor = "current_thread")]
async fn the_default_scenario_opens_run_with_its_violation_explained() {
    let page = Browser::open("").await;
    let headline = page.wait_text("article.violation.selected .headline", |t| !t.is_empty()).await;
    assert!(headline.contains("node-1") && headline.contains("node-2"), "{headline}");
    // The violation is selected, and its causal chain lists the stale list.
    let steps = page.find("article.violation.selected ol.steps").await.text().await.unwrap();
    assert!(steps.contains("apiserver-2"), "{steps}");
    // The timeline is drawn, and the hash is the native one.
    page.find("#timeline-canvas").await;
    assert_eq!(page.hash_after(None).await, native_hash(DEFAULT, &[]));
    page.close().await;
}

/// Issue 21: a first visit draws the default scenario from the page's
/// recording, with the native trace hash and the inspector open on the
/// violation, and never fetches the worker; the first change starts it.
#[tokio::test(flavor = "current_thread")]
async fn a_first_visit_shows_the_recorded_run_without_fetching_the_worker_until_something_changes() {
    let page = Browser::open("").await;
    let recorded = page.hash_after(None).await;
    assert_eq!(recorded, native_hash(DEFAULT, &[]));
    page.find("#recorded").await;
    page.wait_text("#inspector-at", |t| t.starts_with("At ")).await;
    let fetched_worker = "return performance.getEntriesByType('resource').map(e => e.name)\
                          .filter(n => n.includes('recon-worker')).length";
    assert_eq!(script(&page, fetched_worker).await, 0, "a first visit fetched the worker");
    page.find("#tour-skip").await.click().await.unwrap();
    seed_2_runs_as_natively(&page, &recorded).await;
    assert!(!page.exists("#recorded").await, "a run in the worker shows its time, not \"recorded\"");
    assert!(script(&page, fetched_worker).await.as_u64().unwrap() > 0, "the change ran in the worker");
    page.close().await;
}

#[tokio::test(flavor = "current_thread")]
async fn every_library_scenario_gives_the_native_trace_hash_in_the_browser() {
    for scenario in recon_catalog::SCENARIOS {
        let page = Browser::open(&format!("?scenario={}", scenario.name)).await;
        let hash = page.hash_after(None).await;
        assert_eq!(hash, native_hash(scenario.name, &[]), "{}", scenario.name);
        page.close().await;
    }
}

#[tokio::test(flavor = "current_thread")]
async fn uploading_the_fixed_kubelet_makes_the_violation_disappear() {
    let page = Browser::open("").await;
    let before = page.hash_after(None).await;
    let path = plugin_path("recon_plugin_kubelet_fixed");
    page.find("#upload-kubelet-node-1").await.send_keys(&path.display().to_string()).await.unwrap();
    page.find("#no-violations").await;
    let controller = page.find("#controller-kubelet-node-1").await.text().await.unwrap();
    assert!(
        controller.contains("recon_plugin_kubelet_fixed.wasm") && controller.contains("kubelet-fixed"),
        "{controller}"
    );
    // The plugin ran in the browser's WebAssembly, exactly as under wasmtime.
    let bytes = std::fs::read(&path).unwrap();
    let expected = native_hash(DEFAULT, &[("kubelet-node-1", "recon_plugin_kubelet_fixed.wasm", &bytes)]);
    assert_eq!(page.hash_after(Some(&before)).await, expected);
    page.close().await;
}

/// Wraps `Worker.prototype.postMessage` so that the page's messages to its
/// workers are recorded in `window.reconPosts`: `{text}` for a string,
/// `{bytes}` (the length) for binary data, and whether it was handed over.
const RECORD_POSTS: &str = r#"
    window.reconPosts = [];
    const post = Worker.prototype.postMessage;
    Worker.prototype.postMessage = function (message, transfer) {
        window.reconPosts.push(typeof message === 'string'
            ? { text: message }
            : { bytes: message.byteLength, transferred: Array.isArray(transfer) && transfer.includes(message) });
        return post.call(this, message, transfer);
    };
    return true;
"#;

/// What the page has posted to its workers since [`RECORD_POSTS`].
async fn posts(page: &Browser) -> Vec<serde_json::Value> {
    script(page, "return window.reconPosts").await.as_array().cloned().unwrap_or_default()
}

/// The sizes of the binary messages among `posts`.
fn binary_sizes(posts: &[serde_json::Value]) -> Vec<u64> {
    posts.iter().filter_map(|p| p["bytes"].as_u64()).collect()
}

#[tokio::test(flavor = "current_thread")]
async fn an_uploaded_plugin_crosses_to_the_worker_once_as_bytes_and_again_to_a_replaced_worker() {
    let page = Browser::open("").await;
    let before = page.hash_after(None).await;
    script(&page, RECORD_POSTS).await;
    let path = plugin_path("recon_plugin_kubelet_fixed");
    let bytes = std::fs::read(&path).unwrap();
    let name = "recon_plugin_kubelet_fixed.wasm";
    let key = recon_prepare::PluginKey::of(&bytes).to_string();

    // Checked, then run: the bytes cross once, handed over; the requests name their key.
    page.find("#upload-kubelet-node-1").await.send_keys(&path.display().to_string()).await.unwrap();
    let one = page.hash_after(Some(&before)).await;
    assert_eq!(one, native_hash(DEFAULT, &[("kubelet-node-1", name, &bytes)]));
    let sent = posts(&page).await;
    assert_eq!(binary_sizes(&sent), [bytes.len() as u64], "{sent:?}");
    assert_eq!(sent[0]["transferred"], true, "the buffer is handed over, not copied");
    let texts: Vec<&str> = sent.iter().filter_map(|p| p["text"].as_str()).collect();
    assert!(texts.iter().all(|t| t.len() < 20_000), "no bytes in a request: {texts:?}");
    let naming: Vec<&&str> =
        texts.iter().filter(|t| t.contains(r#""type":"check""#) || t.contains(r#""type":"run""#)).collect();
    assert!(naming.len() == 2 && naming.iter().all(|t| t.contains(&key)), "{texts:?}");

    // The same file on the other kubelet: this worker has it, nothing crosses again.
    page.find("#upload-kubelet-node-2").await.send_keys(&path.display().to_string()).await.unwrap();
    let both = [("kubelet-node-1", name, &bytes[..]), ("kubelet-node-2", name, &bytes[..])];
    let two = page.hash_after(Some(&one)).await;
    assert_eq!(two, native_hash(DEFAULT, &both));
    assert_eq!(binary_sizes(&posts(&page).await).len(), 1);

    // A plugin that loops, stopped: the worker is replaced, and the next run
    // sends the new worker the plugins it names again (the fixed kubelet once).
    let looper = looping_plugin();
    let scratch = Scratch::of_this_test();
    let file = scratch.path().join("recon-e2e-looper-resend.wasm");
    std::fs::write(&file, &looper).unwrap();
    page.find("#upload-scheduler").await.send_keys(&file.display().to_string()).await.unwrap();
    page.find("#progress").await;
    page.find("#stop").await.click().await.unwrap();
    page.wait_text("#notice", |t| t.contains("Stopped")).await;
    // (Not a quorum list: the fixed kubelet lists that way already, and the run would not change.)
    page.find("#list-mode-kubelet-node-2").await.select_by_value("consistent").await.unwrap();
    let three = page.hash_after(Some(&two)).await;
    let library = recon_catalog::scenario(DEFAULT).unwrap();
    let mut scenario = recon_scenario::parse(DEFAULT, library.yaml).unwrap();
    let kubelet = scenario.components.iter_mut().find(|c| c.name == "kubelet-node-2").unwrap();
    kubelet.list_mode = Some(recon_abi::ListMode::Consistent);
    assert_eq!(three, recon_e2e::run_scenario(&scenario, &both).hash());
    let sizes = binary_sizes(&posts(&page).await);
    assert_eq!(sizes, [bytes.len() as u64, looper.len() as u64, bytes.len() as u64]);
    page.close().await;
}

#[tokio::test(flavor = "current_thread")]
async fn a_consistent_list_makes_the_violation_disappear() {
    let page = Browser::open("").await;
    let before = page.hash_after(None).await;
    page.find("#explanation-0").await;
    page.find("#list-mode-kubelet-node-1").await.select_by_value("consistent").await.unwrap();
    let after = page.hash_after(Some(&before)).await;
    page.find("#no-violations").await;
    assert!(!page.exists("#explanation-0").await);
    // The same edit made natively gives the same run.
    let library = recon_catalog::scenario(DEFAULT).unwrap();
    let mut scenario = recon_scenario::parse(DEFAULT, library.yaml).unwrap();
    let kubelet = scenario.components.iter_mut().find(|c| c.name == "kubelet-node-1").unwrap();
    kubelet.list_mode = Some(recon_abi::ListMode::Consistent);
    assert_eq!(after, recon_e2e::run_scenario(&scenario, &[]).hash());
    page.close().await;
}

/// A museum entry (Kubernetes #129795): its fix is a checkbox, and
/// ticking it re-runs without the violation, as `recon run --fix` does.
#[tokio::test(flavor = "current_thread")]
async fn ticking_an_upstream_fix_makes_the_violation_disappear() {
    const MUSEUM: &str = "replicaset-expectations-129795";
    let page = Browser::open(&format!("?scenario={MUSEUM}")).await;
    let before = page.hash_after(None).await;
    page.find("#explanation-0").await;
    page.find("#fix-stale-controller-consistency").await.click().await.unwrap();
    let after = page.hash_after(Some(&before)).await;
    page.find("#no-violations").await;
    assert_eq!(after, fixed_hash(MUSEUM, "stale-controller-consistency"));
    page.close().await;
}

/// Issue 16's mitigations: a component's checkbox switches KEP-5647's gate
/// on; the run is the one `recon run --mitigate` gives, the violation is
/// gone, the held reconcile is drawn on the controller's lane (the legend
/// names it), and a reload keeps the switch on.
#[tokio::test(flavor = "current_thread")]
async fn switching_a_mitigation_on_draws_the_held_reconcile_on_the_controllers_lane() {
    const MUSEUM: &str = "replicaset-expectations-129795";
    const SWITCH: &str = "#mitigation-staleControllerConsistency-replicaset-controller";
    let page = Browser::open(&format!("?scenario={MUSEUM}")).await;
    let before = page.hash_after(None).await;
    page.find("#explanation-0").await;
    assert_eq!(waits_drawn(&page).await, "", "nothing is held with the mitigation off");
    page.find(SWITCH).await.click().await.unwrap();
    let after = page.hash_after(Some(&before)).await;
    page.find("#no-violations").await;
    let library = recon_catalog::scenario(MUSEUM).unwrap();
    let mut scenario = recon_scenario::parse(MUSEUM, library.yaml).unwrap();
    scenario.set_mitigation("replicaset-controller", "staleControllerConsistency", true).unwrap();
    let native = recon_e2e::run_scenario(&scenario, &[]);
    assert_eq!(after, native.hash());
    let drawn = waits_drawn(&page).await;
    assert!(drawn.starts_with("replicaset-controller:"), "the wait is on the controller's lane: {drawn}");
    let legend = page.find(".timeline-legend").await.text().await.unwrap();
    assert!(legend.contains("waiting for own write"), "{legend}");
    page.client().refresh().await.unwrap();
    assert_eq!(page.hash_after(None).await, after, "the address carries the switch");
    assert!(page.find(SWITCH).await.is_selected().await.unwrap());
    page.close().await;
}

/// Issue 16's museum page: every entry's card has its lesson, its source
/// and its fixes; an entry opens run and explained, its fix in the scenario
/// panel takes the violation away, and a fix ticked on the card opens the
/// entry already fixed.
#[tokio::test(flavor = "current_thread")]
async fn the_museum_opens_an_entry_explained_and_its_fix_makes_the_violation_disappear() {
    const ENTRY: &str = "rabbitmq-stale-deletion-648";
    let page = Browser::open("?museum=1").await;
    let lesson = page.wait_text(&format!("#museum-{ENTRY} .lesson"), |t| !t.is_empty()).await;
    assert!(lesson.contains("uid"), "{lesson}");
    let source = page.find(&format!("#museum-{ENTRY} .source")).await.text().await.unwrap();
    assert!(source.contains("rabbitmq/cluster-operator#648"), "{source}");
    let embed = script(&page, &format!("return document.querySelector('#museum-{ENTRY} textarea').value")).await;
    assert!(embed.as_str().unwrap().contains(&format!("?scenario={ENTRY}&embed=1")), "{embed}");
    for entry in ["pod-safety-59848", "replicaset-expectations-129795"] {
        page.find(&format!("#museum-{entry} .lesson")).await;
    }
    let before = page.hash_after(None).await;
    page.find(&format!("#museum-open-{ENTRY}")).await.click().await.unwrap();
    let opened = page.hash_after(Some(&before)).await;
    assert_eq!(opened, native_hash(ENTRY, &[]));
    assert!(!page.exists("#museum").await, "the entry replaces the museum");
    let headline = page.wait_text("article.violation.selected .headline", |t| !t.is_empty()).await;
    assert!(headline.contains("rabbit-server"), "the live StatefulSet deleted is the headline: {headline}");
    page.find("#fix-quorum-relist").await.click().await.unwrap();
    let fixed = page.hash_after(Some(&opened)).await;
    page.find("#no-violations").await;
    assert_eq!(fixed, fixed_hash(ENTRY, "quorum-relist"));
    // Back in the museum, a fix ticked on another card opens that entry with it on.
    const OTHER: &str = "replicaset-expectations-129795";
    page.find("#museum-open").await.click().await.unwrap();
    page.find(&format!("#museum-fix-{OTHER}-quorum-relist")).await.click().await.unwrap();
    page.find(&format!("#museum-open-{OTHER}")).await.click().await.unwrap();
    let other = page.hash_after(Some(&fixed)).await;
    assert_eq!(other, fixed_hash(OTHER, "quorum-relist"));
    page.find("#no-violations").await;
    assert!(page.find("#fix-quorum-relist").await.is_selected().await.unwrap(), "the card's fix is on");
    page.close().await;
}

#[tokio::test(flavor = "current_thread")]
async fn a_rejected_upload_says_why_and_keeps_everything() {
    let page = Browser::open("").await;
    let before = page.hash_after(None).await;
    let scratch = Scratch::of_this_test();
    let notes = scratch.path().join("recon-e2e-notes.wasm");
    std::fs::write(&notes, "these are notes, not WebAssembly").unwrap();
    page.find("#upload-kubelet-node-1").await.send_keys(&notes.display().to_string()).await.unwrap();
    let error = page.wait_text("#error pre", |t| !t.is_empty()).await;
    let file = notes.file_name().unwrap().to_string_lossy().into_owned();
    assert!(error.contains(&file) && error.contains("kubelet-node-1"), "{error}");
    assert_eq!(error.trim().lines().count(), 1, "one line: {error}");
    assert_eq!(page.find("#controller-kubelet-node-1").await.text().await.unwrap(), "kubelet");
    assert_eq!(page.hash_after(None).await, before);
    page.find("#explanation-0").await;
    page.close().await;
}

#[tokio::test(flavor = "current_thread")]
async fn an_upload_runs_under_the_plugin_limits_the_scenario_sets() {
    let page = Browser::open("").await;
    let before = page.hash_after(None).await;
    let text = page.open_editor().await;
    assert!(!text.contains("\nlimits:"), "the default scenario sets no limits");
    // Another seed too, so that the applied edit shows in the trace hash.
    let starved =
        format!("{}\nlimits:\n  plugins:\n    fuelPerCall: 1000\n", text.replacen("seed: 1\n", "seed: 7\n", 1));
    page.apply_scenario(&starved).await;
    let limited = page.hash_after(Some(&before)).await;
    // Starting the fixed kubelet takes more than 1000 instructions: its check
    // fails under the scenario's limit, and the page keeps what it had.
    let path = plugin_path("recon_plugin_kubelet_fixed");
    page.find("#upload-kubelet-node-1").await.send_keys(&path.display().to_string()).await.unwrap();
    let error = page.wait_text("#error pre", |t| !t.is_empty()).await;
    assert!(error.contains("ran out of fuel (budget 1000 per call; the scenario's limits.plugins.fuelPerCall raises it, up to 100000000000)"), "{error}");
    assert_eq!(page.find("#controller-kubelet-node-1").await.text().await.unwrap(), "kubelet");
    assert_eq!(page.hash_after(None).await, limited);
    // A limit above the ceiling is an error in the editor, at its line.
    let greedy = format!("{text}\nlimits:\n  plugins:\n    memoryBytes: 4294967296\n");
    let line = greedy.lines().position(|l| l.contains("memoryBytes")).unwrap() + 1;
    page.type_scenario(&greedy).await;
    let errors = page.wait_text("#editor-errors", |t| !t.is_empty()).await;
    assert!(
        errors.contains(&format!("line {line}")) && errors.contains("above the most a scenario may set"),
        "{errors}"
    );
    page.close().await;
}

#[tokio::test(flavor = "current_thread")]
async fn a_run_that_reaches_its_trace_limit_says_so_above_its_findings() {
    let page = Browser::open("").await;
    let before = page.hash_after(None).await;
    assert!(!page.exists("#halted").await, "the default run goes to its end");
    let text = page.open_editor().await;
    let limited = format!("{text}\nlimits:\n  maxTraceEntries: 20\n");
    page.apply_scenario(&limited).await;
    let after = page.hash_after(Some(&before)).await;
    let native = recon_e2e::run_scenario(&recon_scenario::parse("limited.yaml", &limited).unwrap(), &[]);
    assert_eq!(after, native.hash());
    let halted = page.find("#halted").await.text().await.unwrap();
    assert!(halted.starts_with("The run stopped early: the run stopped at t="), "{halted}");
    assert!(halted.contains("limit of 20 trace entries (limits.maxTraceEntries in the scenario)"), "{halted}");
    assert!(page.find("#no-violations").await.text().await.unwrap().contains("up to where the run stopped"));
    page.close().await;
}

#[tokio::test(flavor = "current_thread")]
async fn an_invalid_control_value_is_refused_and_nothing_is_lost() {
    let page = Browser::open("").await;
    let before = page.hash_after(None).await;
    let lag = page.find("#cache-lag-apiserver-2").await;
    lag.clear().await.unwrap();
    lag.send_keys("soon\n").await.unwrap();
    let error = page.wait_text("#error pre", |t| !t.is_empty()).await;
    assert!(error.contains("soon"), "{error}");
    assert_eq!(page.hash_after(None).await, before);
    page.close().await;
}

/// A plugin whose every `recon_handle` loops forever.
fn looping_plugin() -> Vec<u8> {
    let manifest = r#"{"name":"looper","abiVersion":1,"watches":[{"kind":"Pod"}]}"#;
    let wat = format!(
        r#"(module
          (memory (export "memory") 1)
          (data (i32.const 0x100) "{}")
          (func (export "recon_abi_version") (result i32) i32.const 1)
          (func (export "recon_alloc") (param i32) (result i32) i32.const 0x1000)
          (func (export "recon_init") (param i32 i32) (result i64) i64.const {})
          (func (export "recon_handle") (param i32 i32) (result i64) (loop $forever br $forever) unreachable))"#,
        manifest.replace('"', "\\\""),
        (0x100i64 << 32) | manifest.len() as i64,
    );
    wat::parse_str(&wat).unwrap()
}

#[tokio::test(flavor = "current_thread")]
async fn a_looping_plugin_is_contained_and_the_page_keeps_responding() {
    let page = Browser::open("").await;
    let before = page.hash_after(None).await;
    let bytes = looping_plugin();
    let scratch = Scratch::of_this_test();
    let file = scratch.path().join("recon-e2e-looper.wasm");
    std::fs::write(&file, &bytes).unwrap();
    page.find("#upload-kubelet-node-2").await.send_keys(&file.display().to_string()).await.unwrap();
    // While the worker burns through the plugin's fuel, the page answers a click at once.
    page.assert_answers_while_running().await;
    // The run ends: the plugin's component crashed on fuel, the rest went on,
    // and the trace is the one wasmtime gives for the same module.
    let after = page.hash_after(Some(&before)).await;
    let name = file.file_name().unwrap().to_string_lossy().into_owned();
    let native = native_run(DEFAULT, &[("kubelet-node-2", &name, &bytes)]);
    assert!(native.to_json().contains("ran out of fuel"));
    assert_eq!(after, native.hash());
    let crashes = page.find("#crashes").await.text().await.unwrap();
    assert!(crashes.contains("kubelet-node-2 crashed") && crashes.contains("ran out of fuel"), "{crashes}");
    page.close().await;
}

#[tokio::test(flavor = "current_thread")]
async fn stop_keeps_the_last_finished_run() {
    let page = Browser::open("").await;
    let before = page.hash_after(None).await;
    let scratch = Scratch::of_this_test();
    let file = scratch.path().join("recon-e2e-looper-stop.wasm");
    std::fs::write(&file, looping_plugin()).unwrap();
    page.find("#upload-kubelet-node-2").await.send_keys(&file.display().to_string()).await.unwrap();
    page.find("#progress").await;
    page.find("#stop").await.click().await.unwrap();
    page.wait_text("#notice", |t| t.contains("Stopped")).await;
    assert_eq!(page.hash_after(None).await, before);
    assert_eq!(page.find("#controller-kubelet-node-2").await.text().await.unwrap(), "kubelet");
    page.close().await;
}

#[tokio::test(flavor = "current_thread")]
async fn the_perfetto_export_has_one_track_per_component() {
    let page = Browser::open("").await;
    page.hash_after(None).await;
    page.capture_downloads().await;
    page.find("#export-perfetto").await.click().await.unwrap();
    let text = page.downloaded_text().await;
    let value: serde_json::Value = serde_json::from_str(&text).expect("the export is JSON");
    let events = value["traceEvents"].as_array().expect("Chrome trace format: traceEvents");
    let tracks: Vec<&str> = events
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "thread_name")
        .map(|e| e["args"]["name"].as_str().unwrap())
        .collect();
    let library = recon_catalog::scenario(DEFAULT).unwrap();
    let scenario = recon_scenario::parse(DEFAULT, library.yaml).unwrap();
    for component in &scenario.components {
        assert_eq!(tracks.iter().filter(|t| **t == component.name).count(), 1, "{}: {tracks:?}", component.name);
    }
    assert!(events.iter().any(|e| e["ph"] == "s") && events.iter().any(|e| e["ph"] == "f"), "flow arrows");
    page.close().await;
}

/// The JSON export is the trace itself: its bytes hash (FNV-1a) to the
/// hash the page shows, which is the native run's. The page hands the
/// file to the browser in pieces as it encodes it (a big run's trace is
/// longer than any string a browser makes), so this also checks that the
/// pieces make up the whole.
#[tokio::test(flavor = "current_thread")]
async fn the_json_export_is_the_trace_whose_hash_the_page_shows() {
    let page = Browser::open("").await;
    let hash = page.hash_after(None).await;
    page.capture_downloads().await;
    page.find("#export-json").await.click().await.unwrap();
    let text = page.downloaded_text().await;
    let fnv1a = recon_trace::fnv1a(text.as_bytes());
    assert_eq!(format!("{fnv1a:016x}"), hash, "the exported bytes are the trace the page shows");
    let library = recon_catalog::scenario(DEFAULT).unwrap();
    let scenario = recon_scenario::parse(DEFAULT, library.yaml).unwrap();
    assert_eq!(text, recon_e2e::run_scenario(&scenario, &[]).to_json(), "the native run's trace, byte for byte");
    page.close().await;
}

#[tokio::test(flavor = "current_thread")]
async fn every_step_of_the_causal_chain_selects_its_event() {
    let page = Browser::open("").await;
    page.hash_after(None).await;
    let steps =
        page.client().find_all(fantoccini::Locator::Css("article.violation.selected ol.steps a")).await.unwrap();
    assert!(steps.len() >= 5, "the chain has its steps");
    for step in steps {
        let entry = step.attr("data-entry").await.unwrap().expect("each step names its entry");
        step.click().await.unwrap();
        let selected = page.find("#timeline-selected").await;
        assert_eq!(selected.attr("data-entry").await.unwrap().as_deref(), Some(entry.as_str()));
    }
    page.close().await;
}

#[tokio::test(flavor = "current_thread")]
async fn the_inspector_shows_node_1s_stale_view_at_the_relist() {
    let page = Browser::open("").await;
    page.hash_after(None).await;
    let steps =
        page.client().find_all(fantoccini::Locator::Css("article.violation.selected ol.steps a")).await.unwrap();
    // The moment the relist has landed: node-1's kubelet starts the old web-0.
    let mut acts = None;
    for step in steps {
        let text = step.text().await.unwrap();
        if text.contains("kubelet-node-1 starts a container") {
            acts = Some(step);
        }
    }
    // Selecting the step is enough: the inspector follows the selection.
    acts.expect("the chain includes the stale start").click().await.unwrap();
    let view = page.wait_text("#view-kubelet-node-1", |t| t.contains("still holds")).await;
    assert!(view.contains("Pod web-0") && view.contains("apiserver-2"), "{view}");
    let other = page.find("#view-kubelet-node-2").await.text().await.unwrap();
    assert!(!other.contains("still holds"), "{other}");
    page.close().await;
}

#[tokio::test(flavor = "current_thread")]
async fn a_share_link_replays_the_run_in_a_fresh_browser() {
    let page = Browser::open("").await;
    let before = page.hash_after(None).await;
    // Change something and upload a plugin, so that the link has to carry both.
    page.find("#list-mode-kubelet-node-2").await.select_by_value("quorum").await.unwrap();
    let edited = page.hash_after(Some(&before)).await;
    let path = plugin_path("recon_plugin_kubelet_fixed");
    page.find("#upload-kubelet-node-1").await.send_keys(&path.display().to_string()).await.unwrap();
    let uploaded = page.hash_after(Some(&edited)).await;
    page.find("#share").await.click().await.unwrap();
    let url = page.find("#share-url").await.prop("value").await.unwrap().expect("the link is shown");
    page.close().await;

    let fragment = &url[url.find('#').expect("the run is in the fragment")..];
    // The plugin travels as bytes: the link is about 4/3 of the deflated
    // file (198 KB for the fixed kubelet; as JSON numbers it was 245 KB).
    let bytes = std::fs::read(&path).unwrap();
    let deflated = deflate(&bytes).len();
    assert!(fragment.len() < deflated * 4 / 3 + 8_000, "{} characters, {deflated} bytes deflated", fragment.len());
    let fresh = Browser::open(fragment).await;
    assert_eq!(fresh.hash_after(None).await, uploaded);
    let controller = fresh.find("#controller-kubelet-node-1").await.text().await.unwrap();
    assert!(controller.contains("recon_plugin_kubelet_fixed.wasm"), "{controller}");
    fresh.close().await;
}

/// Raw deflate at the level share links use.
fn deflate(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut encoder = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::best());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

#[tokio::test(flavor = "current_thread")]
async fn a_link_made_before_plugins_travelled_as_bytes_still_replays_its_run() {
    use base64::Engine as _;
    // Format 1: the run as JSON, the plugin an array of numbers.
    let path = plugin_path("recon_plugin_kubelet_fixed");
    let bytes = std::fs::read(&path).unwrap();
    let library = recon_catalog::scenario(DEFAULT).unwrap();
    let json = serde_json::json!({
        "v": 1,
        "library": DEFAULT,
        "scenario": library.yaml,
        "uploads": [{ "component": "kubelet-node-1", "fileName": "recon_plugin_kubelet_fixed.wasm", "bytes": bytes }],
    });
    let packed = deflate(json.to_string().as_bytes());
    let fragment = format!("#run={}", base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(packed));
    let page = Browser::open(&fragment).await;
    let expected = native_hash(DEFAULT, &[("kubelet-node-1", "recon_plugin_kubelet_fixed.wasm", &bytes)]);
    assert_eq!(page.hash_after(None).await, expected);
    page.find("#no-violations").await;
    page.close().await;
}

#[tokio::test(flavor = "current_thread")]
async fn a_damaged_share_link_says_so_and_opens_the_default_scenario() {
    let page = Browser::open("").await;
    let default = page.hash_after(None).await;
    page.find("#share").await.click().await.unwrap();
    let url = page.find("#share-url").await.prop("value").await.unwrap().unwrap();
    page.close().await;

    let fragment = &url[url.find('#').unwrap()..];
    let cut = &fragment[..fragment.len() * 2 / 3];
    let page = Browser::open(cut).await;
    let error = page.wait_text("#error pre", |t| !t.is_empty()).await;
    assert!(error.contains("damaged"), "{error}");
    assert_eq!(page.hash_after(None).await, default);
    page.close().await;
}

#[tokio::test(flavor = "current_thread")]
async fn a_link_to_an_event_that_does_not_exist_says_so() {
    let library = recon_catalog::scenario(DEFAULT).unwrap();
    let made = recon_web::share::make(DEFAULT, library.yaml, &[], Some(999_999));
    let page = Browser::open(&made.fragment).await;
    let error = page.wait_text("#error pre", |t| !t.is_empty()).await;
    assert!(error.contains("999999"), "{error}");
    assert_eq!(page.hash_after(None).await, native_hash(DEFAULT, &[]));
    page.find("article.violation.selected").await;
    page.close().await;
}

#[tokio::test(flavor = "current_thread")]
async fn two_embeds_on_one_page_render_their_own_runs() {
    let page = Browser::open("?scenario=pod-safety-59848-quorum").await;
    let quorum = page.hash_after(None).await;
    page.find("#embed").await.click().await.unwrap();
    let snippet = page.find("#embed-snippet").await.prop("value").await.unwrap().expect("a snippet");
    assert!(snippet.starts_with("<iframe src=\"") && snippet.contains("?embed=1#run="), "{snippet}");
    // A blog post with the snippet and a second embed of the default scenario.
    let default_embed = format!(
        "<iframe src=\"{}?embed=1\" width=\"900\" height=\"500\"></iframe>",
        std::env::var("RECON_E2E_URL").unwrap()
    );
    let client = page.client();
    // The host page must come from the same local server: Chromium blocks a
    // public page (about:blank counts as one) from framing a loopback one.
    client.goto(&format!("{}blog-post.html", std::env::var("RECON_E2E_URL").unwrap())).await.unwrap();
    let write = "document.open(); document.write(arguments[0] + arguments[1]); document.close();";
    client.execute(write, vec![snippet.into(), default_embed.into()]).await.unwrap();
    let mut hashes = Vec::new();
    for frame in 0..2u16 {
        client.clone().enter_frame(frame).await.unwrap();
        hashes.push(page.hash_after(None).await);
        assert!(page.exists("#open-full").await, "the embed links to the full playground");
        assert!(!page.exists("aside.controls").await, "an embed has no controls");
        client.clone().enter_parent_frame().await.unwrap();
    }
    assert_eq!(hashes, vec![quorum, native_hash(DEFAULT, &[])]);
    page.close().await;
}

#[tokio::test(flavor = "current_thread")]
async fn the_editor_points_at_errors_as_you_type_and_runs_what_you_apply() {
    let page = Browser::open("").await;
    let before = page.hash_after(None).await;
    let text = page.open_editor().await;
    // A field the format does not have: the error names its line.
    let broken = text.replacen("seed: 1\n", "seed: 1\nseeed: 2\n", 1);
    let line = broken.lines().position(|l| l.starts_with("seeed")).unwrap() + 1;
    page.type_scenario(&broken).await;
    let errors = page.wait_text("#editor-errors", |t| !t.is_empty()).await;
    assert!(errors.contains(&format!("line {line}")) && errors.contains("seeed"), "{errors}");
    assert_eq!(page.find("#editor-apply").await.attr("disabled").await.unwrap().as_deref(), Some("true"));
    // Fixed and applied: the page runs the edited scenario.
    let edited = text.replacen("seed: 1\n", "seed: 7\n", 1);
    page.apply_scenario(&edited).await;
    let after = page.hash_after(Some(&before)).await;
    let scenario = recon_scenario::parse("edited.yaml", &edited).unwrap();
    assert_eq!(after, recon_e2e::run_scenario(&scenario, &[]).hash());
    page.close().await;
}

/// Sets the default scenario's seed to 2 as the seed box would, and checks
/// that the page runs it (a hash other than `previous`) as natively.
async fn seed_2_runs_as_natively(page: &Browser, previous: &str) {
    let set_seed = "const e = document.getElementById('seed'); e.value = '2'; \
                    e.dispatchEvent(new Event('change', { bubbles: true }));";
    page.client().execute(set_seed, vec![]).await.unwrap();
    let after = page.hash_after(Some(previous)).await;
    let mut scenario = recon_scenario::parse(DEFAULT, recon_catalog::scenario(DEFAULT).unwrap().yaml).unwrap();
    scenario.seed = 2;
    assert_eq!(after, recon_e2e::run_scenario(&scenario, &[]).hash());
}

/// Presses a key in whatever element has the focus, as a visitor would.
async fn press(page: &Browser, key: fantoccini::key::Key) {
    page.client().active_element().await.unwrap().send_keys(&key).await.unwrap();
}

/// Runs a script that returns something, and returns it.
/// The native trace hash of a library scenario with one of its fixes on.
fn fixed_hash(scenario: &str, fix: &str) -> String {
    let mut scenario = recon_scenario::parse(scenario, recon_catalog::scenario(scenario).unwrap().yaml).unwrap();
    scenario.set_fix(fix, true).unwrap();
    recon_e2e::run_scenario(&scenario, &[]).hash()
}

/// The held reconciles the timeline draws (its `data-waits` hook).
async fn waits_drawn(page: &Browser) -> String {
    page.find("#timeline").await.attr("data-waits").await.unwrap().unwrap_or_default()
}

async fn script(page: &Browser, js: &str) -> serde_json::Value {
    page.client().execute(js, vec![]).await.unwrap()
}

/// Waits until nothing matches `css` (the page updates when it handles the event).
async fn wait_gone(page: &Browser, css: &str) {
    let start = Instant::now();
    while page.exists(css).await {
        assert!(start.elapsed() < recon_e2e::PATIENCE, "{css:?} never went away");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The tour's step (1-based), once the card shows `step`.
async fn wait_step(page: &Browser, step: u32) {
    page.find(&format!("#tour[data-step=\"{step}\"]")).await;
}

#[tokio::test(flavor = "current_thread")]
async fn the_tour_opens_on_a_first_visit_and_esc_skips_it_for_good() {
    let page = Browser::open("").await;
    page.hash_after(None).await;
    wait_step(&page, 1).await;
    let text = page.find("#tour").await.text().await.unwrap();
    assert!(text.contains("lane"), "{text}");
    assert_eq!(script(&page, "return document.getElementById('tour').contains(document.activeElement)").await, true);
    // Not modal: the violation stays selected and explained beside it.
    page.find("article.violation.selected").await;
    press(&page, fantoccini::key::Key::Escape).await;
    wait_gone(&page, "#tour").await;
    assert_eq!(script(&page, "return localStorage.getItem('recon.tour.seen')").await, "1");
    // A second visit in the same browser: no tour, until asked for.
    page.client().refresh().await.unwrap();
    page.hash_after(None).await;
    assert!(!page.exists("#tour").await, "the tour opens only on a first visit");
    page.find("#tour-open").await.click().await.unwrap();
    wait_step(&page, 1).await;
    page.close().await;
}

#[tokio::test(flavor = "current_thread")]
async fn the_tours_steps_advance_with_the_keyboard_and_point_at_the_stale_read() {
    use fantoccini::key::Key;
    let page = Browser::open("").await;
    page.hash_after(None).await;
    wait_step(&page, 1).await;
    press(&page, Key::Right).await;
    wait_step(&page, 2).await;
    // The second step selects this run's stale read: node-1's kubelet listing from the frozen cache.
    let entry: usize =
        page.find("#timeline-selected").await.attr("data-entry").await.unwrap().unwrap().parse().unwrap();
    let trace = native_run(DEFAULT, &[]);
    let recon_trace::Event::ListServed(list) = &trace.entries[entry].event else {
        panic!("entry {entry} is not a list: {:?}", trace.entries[entry])
    };
    let (component, api_server, stale_ms) = (&list.component, &list.api_server, &list.stale_ms);
    assert_eq!((component.as_str(), api_server.as_str()), ("kubelet-node-1", "apiserver-2"));
    assert!(*stale_ms > 0);
    let text = page.find("#tour").await.text().await.unwrap();
    assert!(text.contains("kubelet-node-1") && text.contains("apiserver-2"), "{text}");
    page.find(".tour-ring").await;
    // Enter goes on to the violation, ← comes back.
    press(&page, Key::Enter).await;
    wait_step(&page, 3).await;
    page.find("article.violation.selected.tour-target").await;
    press(&page, Key::Left).await;
    wait_step(&page, 2).await;
    for step in 3..=5 {
        press(&page, Key::Enter).await;
        wait_step(&page, step).await;
    }
    assert_eq!(page.find("#tour-next").await.text().await.unwrap(), "Done");
    press(&page, Key::Enter).await;
    wait_gone(&page, "#tour").await;
    // Focus is not lost: it lands on the button that opens the tour again.
    assert_eq!(script(&page, "return document.activeElement.id").await, "tour-open");
    page.close().await;
}

#[tokio::test(flavor = "current_thread")]
async fn clicking_an_empty_moment_of_the_timeline_inspects_every_cache_then() {
    use fantoccini::actions::InputSource;
    use recon_web::timeline::layout::LaneLayout;
    use recon_web::timeline::model::TimelineModel;
    use recon_web::timeline::theme::gutter_width;
    use recon_web::timeline::viewport::{Span, Viewport};
    let page = Browser::open("").await;
    page.hash_after(None).await;
    page.find("#tour-skip").await.click().await.unwrap();
    wait_gone(&page, "#tour").await;
    let selected = page.find("#timeline-selected").await.attr("data-entry").await.unwrap();
    // The violation's moment, inspected on opening (issue 21: from the
    // recording; the click below starts the worker, which takes a moment).
    let before = page.wait_text("#inspector-at", |t| t.starts_with("At t=")).await;
    // Where the page draws t=12s, on a lane with no mark near it: after node-1's kubelet
    // relisted from the frozen cache (5s) and before the partition heals (20s).
    let trace = native_run(DEFAULT, &[]);
    let model = TimelineModel::build(&trace);
    let layout = LaneLayout::new(&model.lanes);
    let canvas = page.find("#timeline-canvas").await;
    let size =
        script(&page, "const c = document.getElementById('timeline-canvas'); return [c.clientWidth, c.clientHeight]")
            .await;
    let (width, height) = (size[0].as_f64().unwrap(), size[1].as_f64().unwrap());
    let gutter = gutter_width(width);
    let view = Viewport::fit(Span::new(model.start_ms, model.end_ms), width - gutter);
    let at = 12_000.0;
    let near = 20.0 * view.ms_per_px;
    let lane =
        (0..model.lanes.len()).find(|&l| model.marks[l].range(at - near, at + near).is_empty()).expect("a quiet lane");
    let (x, y) = (gutter + view.x_of(at), layout.middle(lane));
    let click = fantoccini::actions::MouseActions::new("mouse".into())
        .then(fantoccini::actions::PointerAction::MoveToElement {
            element: canvas,
            duration: None,
            x: (x - width / 2.0).round(),
            y: (y - height / 2.0).round(),
        })
        .then(fantoccini::actions::PointerAction::Down { button: fantoccini::actions::MOUSE_BUTTON_LEFT })
        .then(fantoccini::actions::PointerAction::Up { button: fantoccini::actions::MOUSE_BUTTON_LEFT });
    page.client().perform_actions(click).await.unwrap();
    // "At t=12.004s, etcd at revision 21."
    let hint = page.wait_text("#inspector-at", |t| t.starts_with("At t=") && t != before).await;
    let seconds: f64 = hint["At t=".len()..hint.find("s,").unwrap()].parse().unwrap();
    let ms = (seconds * 1000.0).round() as u64;
    assert!((ms as f64 - at).abs() <= 2.0 * view.ms_per_px + 1.0, "clicked at {at} ms, inspected at {ms} ms");
    // The same moment natively: the store's revision and node-1's stale pod.
    let library = recon_catalog::scenario(DEFAULT).unwrap();
    let scenario = recon_scenario::parse(DEFAULT, library.yaml).unwrap();
    let mut sim = recon_sim::Sim::new(&scenario, Box::new(|c| recon_catalog::instantiate(&c.controller))).unwrap();
    sim.run_until(ms);
    let snapshot = sim.snapshot();
    assert!(hint.contains(&format!("etcd at revision {}.", snapshot.store_revision)), "{hint}");
    let view = page.find("#view-kubelet-node-1").await.text().await.unwrap();
    assert!(view.contains("still holds") && view.contains("Pod web-0") && view.contains("apiserver-2"), "{view}");
    assert!(!page.find("#view-kubelet-node-2").await.text().await.unwrap().contains("still holds"));
    // A moment is not an event: the selection is unchanged.
    assert_eq!(page.find("#timeline-selected").await.attr("data-entry").await.unwrap(), selected);
    page.close().await;
}

#[tokio::test(flavor = "current_thread")]
async fn an_editor_problem_is_reached_with_tab_and_puts_the_caret_at_its_line_and_column() {
    use fantoccini::key::Key;
    let page = Browser::open("").await;
    page.hash_after(None).await;
    let text = page.open_editor().await;
    assert!(page.exists("label[for=\"editor-text\"]").await, "the text has a label");
    let broken = text.replacen("seed: 1\n", "seed: 1\nseeed: 2\n", 1);
    let line = broken.lines().position(|l| l.starts_with("seeed")).unwrap() + 1;
    let set = "const t = document.querySelector('#editor-text'); t.value = arguments[0]; \
               t.dispatchEvent(new Event('input', { bubbles: true })); t.focus(); t.setSelectionRange(0, 0);";
    page.client().execute(set, vec![broken.clone().into()]).await.unwrap();
    page.wait_text("#editor-errors", |t| t.contains("seeed")).await;
    // From the text, Tab goes to its first problem.
    press(&page, Key::Tab).await;
    let focused = script(&page, "return document.activeElement.matches('#editor-errors li button') ? document.activeElement.parentElement.dataset.line + ':' + document.activeElement.parentElement.dataset.column : document.activeElement.outerHTML").await;
    let (at_line, at_column) =
        focused.as_str().unwrap().split_once(':').unwrap_or_else(|| panic!("focus is on {focused}"));
    let (at_line, at_column): (usize, usize) = (at_line.parse().unwrap(), at_column.parse().unwrap());
    assert_eq!(at_line, line);
    // Enter on it: the caret goes there, in the text.
    press(&page, Key::Enter).await;
    let caret =
        script(&page, "const t = document.activeElement; return t.id === 'editor-text' ? t.selectionStart : -1").await;
    let expected = recon_web::editor::utf16_offset(&broken, at_line, at_column);
    assert_eq!(caret.as_u64(), Some(u64::from(expected)), "the caret is at line {at_line}, column {at_column}");
    assert!(broken[recon_web::editor::byte_offset(&broken, at_line, at_column)..].starts_with("seeed"));
    page.close().await;
}

/// The #59848 run's audit logs, as `recon run --audit-log` writes them
/// (one per API server), the second gzipped, in a fresh directory: their
/// paths and what `recon audit` draws from them natively.
fn audit_logs_of_59848(dir: &std::path::Path) -> (Vec<std::path::PathBuf>, recon_audit::AuditTimeline) {
    let logs = recon_audit::audit_logs(&native_run(DEFAULT, &[]), &recon_scenario::Kinds::builtin()).unwrap();
    let (mut paths, mut files, mut inputs) = (Vec::new(), Vec::new(), Vec::<Box<dyn std::io::BufRead>>::new());
    for (k, log) in logs.into_iter().enumerate() {
        let (name, bytes) = if k == 1 {
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            std::io::Write::write_all(&mut gz, log.text.as_bytes()).unwrap();
            (format!("{}.jsonl.gz", log.server), gz.finish().unwrap())
        } else {
            (format!("{}.jsonl", log.server), log.text.into_bytes())
        };
        std::fs::write(dir.join(&name), &bytes).unwrap();
        paths.push(dir.join(&name));
        // The page hands the worker each file under its name alone.
        files.push(recon_audit::LogFile::named_by_stem(name));
        inputs.push(Box::new(std::io::Cursor::new(bytes)));
    }
    let drawn = recon_audit::timeline_of(&files, inputs, &recon_audit::ReadOptions::default(), |_| {});
    (paths, drawn)
}

/// Issue 18: a real cluster's audit logs, picked with *Open audit log…*,
/// are read in the tab and drawn on the timeline (lanes per API server and
/// per client, the stale list's findings as violations), with the same
/// trace `recon audit` draws natively and the explanation panel naming
/// the kubelet's stale list; *Back to the scenarios* brings the run back.
#[tokio::test(flavor = "current_thread")]
async fn an_audit_log_is_drawn_with_its_stale_list_marked_and_explained() {
    let page = Browser::open("").await;
    let before = page.hash_after(None).await;
    page.find("#tour-skip").await.click().await.unwrap();
    let scratch = Scratch::of_this_test();
    let dir = scratch.dir("audit");
    let (paths, native) = audit_logs_of_59848(&dir);
    let paths: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    // Several files at once: WebDriver takes them one per line.
    page.find("#audit-open").await.send_keys(&paths.join("\n")).await.unwrap();
    let hash = page.hash_after(Some(&before)).await;
    assert_eq!(hash, native.trace.hash(), "the browser draws the trace recon audit draws");
    let summary = page.wait_text("#audit-summary", |t| !t.is_empty()).await;
    assert!(summary.contains("in 2 log(s)"), "{summary}");
    let files = page.find("#audit-files").await.text().await.unwrap();
    assert!(files.contains("apiserver-1.jsonl") && files.contains("apiserver-2.jsonl.gz"), "{files}");
    // A lane per API server (with its cache) and per client.
    let timeline = page.find("#timeline").await;
    let lanes = timeline.attr("data-lanes").await.unwrap().unwrap_or_default();
    let lanes: Vec<&str> = lanes.split(',').collect();
    for lane in ["etcd", "apiserver-1", "apiserver-2", "apiserver-2 cache", "kubelet-node-1", "statefulset-controller"]
    {
        assert!(lanes.contains(&lane), "no lane {lane}: {lanes:?}");
    }
    // Each finding a violation marker, each explained, the stale list among them.
    let violations = timeline.attr("data-violations").await.unwrap().unwrap_or_default();
    assert_eq!(violations, native.report.findings.len().to_string());
    let stale = native.report.findings.iter().find(|f| f.kind == recon_audit::FindingKind::StaleRead).unwrap();
    let findings = page.find("#findings").await.text().await.unwrap();
    assert!(findings.contains(&stale.headline), "the stale list's finding is shown: {findings}");
    let selected = page.find("article.violation.selected").await.text().await.unwrap();
    assert!(selected.contains("apiserver-2") && selected.contains("node-1"), "{selected}");
    // Nothing else ran: no link carries the logs.
    page.find("#share").await.click().await.unwrap();
    page.wait_text("#notice", |t| t.contains("never your logs")).await;
    // Back to the scenarios: the default run again.
    page.find("#audit-close").await.click().await.unwrap();
    assert_eq!(page.hash_after(Some(&hash)).await, before);
    page.find("#component-kubelet-node-1").await;
    assert!(!page.exists("#audit-panel").await);
    page.close().await;
}

/// Issue 18, bad input: a log dropped on the page with nothing readable in
/// it is refused with its file and line, and nothing is lost: the run stays
/// and the page goes on working.
#[tokio::test(flavor = "current_thread")]
async fn a_malformed_audit_log_is_named_at_its_line_and_the_page_keeps_working() {
    let page = Browser::open("").await;
    let before = page.hash_after(None).await;
    page.find("#tour-skip").await.click().await.unwrap();
    page.drop_files(
        "#timeline-canvas",
        &[("apiserver-1.log", &b"this is not an audit log\n{\"kind\": \"Event\", \"apiVer"[..])],
    )
    .await;
    let error = page.wait_text("#error", |t| t.contains("apiserver-1.log")).await;
    assert!(error.contains("No audit event could be read from apiserver-1.log"), "{error}");
    assert!(error.contains("apiserver-1.log:1: not JSON"), "{error}");
    assert!(error.contains("apiserver-1.log:2: the line ends before its event does"), "{error}");
    assert!(!page.exists("#audit-panel").await, "nothing is shown in the run's place");
    assert_eq!(page.find("#trace-hash").await.text().await.unwrap(), before, "the run is kept");
    // A plugin dropped off any component is not taken for a log.
    page.drop_files("#timeline-canvas", &[("kubelet.wasm", &b"\0asm"[..])]).await;
    page.wait_text("#error", |t| t.contains("kubelet.wasm is a plugin, not an audit log")).await;
    // The page works: a change runs.
    seed_2_runs_as_natively(&page, &before).await;
    page.close().await;
}

/// The search over orderings ("Find a violation", search: orderings) on the
/// status-condition race: it reports that the outcome depends on the
/// order, with the field that differs, and opens both orderings, each
/// replaying the run `recon explore --orderings` found (also from its
/// share link, which carries the scenario's `ordering`).
#[tokio::test(flavor = "current_thread")]
async fn the_ordering_search_reports_the_condition_race_and_opens_both_orderings() {
    use recon_explore::ordering::{self, Bounds, Strategy};
    const RACE: &str = "status-condition-race";
    let race = recon_scenario::parse(RACE, recon_catalog::scenario(RACE).unwrap().yaml).unwrap();
    let factory = || -> recon_sim::Instantiate { Box::new(|c| recon_catalog::instantiate(&c.controller)) };
    let bounds = Bounds { max_runs: 100, stale_views: 0 };
    let result = ordering::search(&race, &factory, Strategy::DepthFirst, bounds, &mut |_| {}).unwrap();
    let finding = result.finding.expect("the race depends on the order");
    let expected: Vec<String> = ordering::found_scenarios(&race, &finding)
        .iter()
        .map(|s| {
            let s = recon_scenario::parse("found.yaml", &recon_scenario::to_yaml(s)).unwrap();
            recon_e2e::run_scenario(&s, &[]).hash()
        })
        .collect();
    assert_eq!(expected.len(), 2);
    assert_ne!(expected[0], expected[1]);

    let page = Browser::open(&format!("?scenario={RACE}")).await;
    let shown = page.hash_after(None).await;
    page.find("#search-kind").await.select_by_value("orderings").await.unwrap();
    page.find("#ordering-runs").await;
    page.find("#find-violation").await.click().await.unwrap();
    let summary = page.wait_text("#search-result", |t| t.starts_with("The outcome depends on the order")).await;
    assert!(summary.contains("ordering 2 (") && summary.contains(" before "), "{summary}");
    let diff = page.find("#orderings-diff").await.text().await.unwrap();
    assert!(diff.contains("Widget default/w1 status.conditions[0].status"), "{diff}");
    let link = page.find("#share-ordering-2").await.attr("href").await.unwrap().expect("a share link");

    page.find("#open-ordering-2").await.click().await.unwrap();
    let second = page.hash_after(Some(&shown)).await;
    assert_eq!(second, expected[1]);
    page.find("#open-ordering-1").await.click().await.unwrap();
    assert_eq!(page.hash_after(Some(&second)).await, expected[0]);
    page.close().await;

    let fresh = Browser::open(&link[link.find('?').expect("the link names its scenario")..]).await;
    assert_eq!(fresh.hash_after(None).await, expected[1]);
    fresh.close().await;
}

/// A test that panics drops its browser without closing it: the browser
/// must end all the same, or every failing test leaves a Chromium running
/// after `cargo xtask test`.
#[tokio::test(flavor = "current_thread")]
async fn a_browser_dropped_without_closing_ends_its_session() {
    let page = Browser::open("").await;
    let session = page.session().expect("chromedriver named the session").to_owned();
    let url = format!("session/{session}/url");
    let open = recon_e2e::webdriver_request("GET", &url).expect("chromedriver answers");
    assert!(open.starts_with("HTTP/1.1 200"), "{open}");
    drop(page);
    let ended = recon_e2e::webdriver_request("GET", &url).expect("chromedriver answers");
    assert!(ended.starts_with("HTTP/1.1 404") && ended.contains("invalid session id"), "{ended}");
}
