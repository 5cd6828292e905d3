//! The playground in headless Chromium: what a visitor sees and does.
//! Run by `cargo xtask test` (see the crate docs for the environment).

use std::time::{Duration, Instant};

use recon_e2e::{Browser, native_hash, native_run, plugin_path};

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
    assert!(controller.contains("recon_plugin_kubelet_fixed.wasm") && controller.contains("kubelet-fixed"), "{controller}");
    // The plugin ran in the browser's WebAssembly, exactly as under wasmtime.
    let bytes = std::fs::read(&path).unwrap();
    let expected = native_hash(DEFAULT, &[("kubelet-node-1", "recon_plugin_kubelet_fixed.wasm", &bytes)]);
    assert_eq!(page.hash_after(Some(&before)).await, expected);
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

#[tokio::test(flavor = "current_thread")]
async fn a_rejected_upload_says_why_and_keeps_everything() {
    let page = Browser::open("").await;
    let before = page.hash_after(None).await;
    let notes = std::env::temp_dir().join(format!("recon-e2e-{}-notes.wasm", std::process::id()));
    std::fs::write(&notes, "these are notes, not WebAssembly").unwrap();
    page.find("#upload-kubelet-node-1").await.send_keys(&notes.display().to_string()).await.unwrap();
    let error = page.wait_text("#error pre", |t| !t.is_empty()).await;
    let file = notes.file_name().unwrap().to_string_lossy().into_owned();
    assert!(error.contains(&file) && error.contains("kubelet-node-1"), "{error}");
    assert_eq!(error.trim().lines().count(), 1, "one line: {error}");
    assert_eq!(page.find("#controller-kubelet-node-1").await.text().await.unwrap(), "kubelet");
    assert_eq!(page.hash_after(None).await, before);
    page.find("#explanation-0").await;
    let _ = std::fs::remove_file(notes);
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
    let file = std::env::temp_dir().join(format!("recon-e2e-{}-looper.wasm", std::process::id()));
    std::fs::write(&file, &bytes).unwrap();
    page.find("#upload-kubelet-node-2").await.send_keys(&file.display().to_string()).await.unwrap();
    // While the worker burns through the plugin's fuel, the page answers a click at once.
    page.find("#running").await;
    let clicked = Instant::now();
    page.find("#about-toggle").await.click().await.unwrap();
    page.find("#about").await;
    let answered = clicked.elapsed();
    assert!(page.exists("#running").await, "the run was still going when the page answered");
    assert!(answered < Duration::from_secs(1), "the page took {answered:?} to answer a click");
    // The run ends: the plugin's component crashed on fuel, the rest went on,
    // and the trace is the one wasmtime gives for the same module.
    let after = page.hash_after(Some(&before)).await;
    let name = file.file_name().unwrap().to_string_lossy().into_owned();
    let native = native_run(DEFAULT, &[("kubelet-node-2", &name, &bytes)]);
    assert!(native.to_json().contains("ran out of fuel"));
    assert_eq!(after, native.hash());
    let crashes = page.find("#crashes").await.text().await.unwrap();
    assert!(crashes.contains("kubelet-node-2 crashed") && crashes.contains("ran out of fuel"), "{crashes}");
    let _ = std::fs::remove_file(file);
    page.close().await;
}

#[tokio::test(flavor = "current_thread")]
async fn stop_keeps_the_last_finished_run() {
    let page = Browser::open("").await;
    let before = page.hash_after(None).await;
    let file = std::env::temp_dir().join(format!("recon-e2e-{}-looper-stop.wasm", std::process::id()));
    std::fs::write(&file, looping_plugin()).unwrap();
    page.find("#upload-kubelet-node-2").await.send_keys(&file.display().to_string()).await.unwrap();
    page.find("#progress").await;
    page.find("#stop").await.click().await.unwrap();
    page.wait_text("#notice", |t| t.contains("Stopped")).await;
    assert_eq!(page.hash_after(None).await, before);
    assert_eq!(page.find("#controller-kubelet-node-2").await.text().await.unwrap(), "kubelet");
    let _ = std::fs::remove_file(file);
    page.close().await;
}

#[tokio::test(flavor = "current_thread")]
async fn the_perfetto_export_has_one_track_per_component() {
    let page = Browser::open("").await;
    page.hash_after(None).await;
    // Keep what the page hands to the download, to read it back.
    let capture = "window.__saved = []; const create = URL.createObjectURL; \
                   URL.createObjectURL = (blob) => { window.__saved.push(blob); return create(blob); };";
    page.client().execute(capture, vec![]).await.unwrap();
    page.find("#export-perfetto").await.click().await.unwrap();
    let read = "const done = arguments[arguments.length - 1]; window.__saved[0].text().then(done);";
    let text = page.client().execute_async(read, vec![]).await.unwrap();
    let value: serde_json::Value = serde_json::from_str(text.as_str().unwrap()).expect("the export is JSON");
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

#[tokio::test(flavor = "current_thread")]
async fn every_step_of_the_causal_chain_selects_its_event() {
    let page = Browser::open("").await;
    page.hash_after(None).await;
    let steps = page.client().find_all(fantoccini::Locator::Css("article.violation.selected ol.steps a")).await.unwrap();
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
    let steps = page.client().find_all(fantoccini::Locator::Css("article.violation.selected ol.steps a")).await.unwrap();
    // The moment the relist has landed: node-1's kubelet starts the old web-0.
    let mut acts = None;
    for step in steps {
        let text = step.text().await.unwrap();
        if text.contains("kubelet-node-1 starts a container") {
            acts = Some(step);
        }
    }
    acts.expect("the chain includes the stale start").click().await.unwrap();
    page.find("#inspect").await.click().await.unwrap();
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
    let fresh = Browser::open(fragment).await;
    assert_eq!(fresh.hash_after(None).await, uploaded);
    let controller = fresh.find("#controller-kubelet-node-1").await.text().await.unwrap();
    assert!(controller.contains("recon_plugin_kubelet_fixed.wasm"), "{controller}");
    fresh.close().await;
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
    let default_embed = format!("<iframe src=\"{}?embed=1\" width=\"900\" height=\"500\"></iframe>", std::env::var("RECON_E2E_URL").unwrap());
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
    page.find("#editor-toggle").await.click().await.unwrap();
    let text = page.find("#editor-text").await.prop("value").await.unwrap().unwrap();
    let set = "const t = document.querySelector('#editor-text'); t.value = arguments[0]; \
               t.dispatchEvent(new Event('input', { bubbles: true }));";
    // A field the format does not have: the error names its line.
    let broken = text.replacen("seed: 1\n", "seed: 1\nseeed: 2\n", 1);
    let line = broken.lines().position(|l| l.starts_with("seeed")).unwrap() + 1;
    page.client().execute(set, vec![broken.into()]).await.unwrap();
    let errors = page.wait_text("#editor-errors", |t| !t.is_empty()).await;
    assert!(errors.contains(&format!("line {line}")) && errors.contains("seeed"), "{errors}");
    assert_eq!(page.find("#editor-apply").await.attr("disabled").await.unwrap().as_deref(), Some("true"));
    // Fixed and applied: the page runs the edited scenario.
    let edited = text.replacen("seed: 1\n", "seed: 7\n", 1);
    page.client().execute(set, vec![edited.clone().into()]).await.unwrap();
    page.wait_text("#editor-status", |t| t.starts_with("valid")).await;
    page.find("#editor-apply").await.click().await.unwrap();
    let after = page.hash_after(Some(&before)).await;
    let scenario = recon_scenario::parse("edited.yaml", &edited).unwrap();
    assert_eq!(after, recon_e2e::run_scenario(&scenario, &[]).hash());
    page.close().await;
}
