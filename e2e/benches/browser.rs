//! The playground's numbers, measured in headless Chromium (run by
//! `cargo xtask bench`, which builds and serves the playground; the
//! download size is `cargo xtask size`'s):
//!
//! - time from navigation to the first drawn timeline;
//! - simulation throughput in the browser's worker as a ratio to the same
//!   scenario run natively in this process, in the same run;
//! - the timeline with runs of about 100,000 and 1,000,000 events: the
//!   trace's way to the page, the model, frame times, hover;
//! - the scale benchmark's cluster in the tab at growing sizes, until it
//!   is drawn or the page says it does not fit;
//! - a plugin run as every kubelet of a generated cluster in the tab,
//!   against the built-in kubelets in the same page;
//! - "Find a violation" on the #59848 workload: click to violation shown,
//!   and plans per second across search workers, each against the same
//!   search natively in this process;
//! - time to each violation by automatic search: for every museum entry
//!   (a library scenario with a `source:`) the fault search, for the
//!   order race the search over orderings, natively and in the browser in
//!   the same run.
//!
//! Wall-clock time is the point here; nothing in the test suite times things.

use std::time::Instant;

use recon_e2e::Browser;

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(|a, b| a.total_cmp(b));
    values[values.len() / 2]
}

fn percentile(mut values: Vec<f64>, p: f64) -> f64 {
    values.sort_by(|a, b| a.total_cmp(b));
    values[((values.len() - 1) as f64 * p).round() as usize]
}

/// Navigation start to the first drawn timeline, over fresh browsers: the
/// default scenario (drawn from the page's recording, no worker) and
/// another library scenario (the worker fetched, started and run first).
async fn first_timeline() {
    for (what, path) in [
        ("default scenario, from the recording", ""),
        ("pod-safety-59848-consistent, run in the worker", "?scenario=pod-safety-59848-consistent"),
    ] {
        let mut times = Vec::new();
        for _ in 0..5 {
            let page = Browser::open(path).await;
            let script = r#"
                const done = arguments[arguments.length - 1];
                (function check() {
                    const canvas = document.querySelector('#timeline-canvas');
                    if (canvas && canvas.width > 0 && document.querySelector('#trace-hash')) done(performance.now());
                    else requestAnimationFrame(check);
                })();
            "#;
            let ms = page.client().execute_async(script, vec![]).await.unwrap().as_f64().unwrap();
            times.push(ms);
            page.close().await;
        }
        println!("## Navigation to first drawn timeline ({what}, fresh profile)\n");
        println!(
            "median {:.0} ms, runs: {:?}\n",
            median(times.clone()),
            times.iter().map(|t| t.round()).collect::<Vec<_>>()
        );
    }
}

/// The same scenario in the browser's worker and natively here.
async fn simulation_throughput() {
    println!("## Simulation speed, browser worker vs native (same scenario, same run)\n");
    println!(
        "| scenario | entries | native ms | browser ms | browser speed (native = 1.0) |\n|---|---:|---:|---:|---:|"
    );
    let page = Browser::open("").await;
    page.hash_after(None).await;
    for (nodes, pods) in [(10, 200), (50, 1000), (100, 2000)] {
        let scenario = recon_tests::scaled_59848(nodes, pods);
        let yaml = recon_scenario::to_yaml(&scenario);
        let mut native = Vec::new();
        let mut trace = None;
        for _ in 0..3 {
            // Timed like the worker times itself: building the simulation and running it.
            let start = Instant::now();
            let instantiate: recon_sim::Instantiate = Box::new(|c| recon_catalog::instantiate(&c.controller));
            let mut sim = recon_sim::Sim::new(&scenario, instantiate).unwrap();
            sim.run();
            native.push(start.elapsed().as_secs_f64() * 1e3);
            trace = Some(sim.into_trace());
        }
        let trace = trace.unwrap();
        let request =
            serde_json::json!({ "type": "run", "id": 1, "scenario": yaml, "seed": scenario.seed, "uploads": [] });
        let script = r#"
            const [request, done] = [arguments[0], arguments[arguments.length - 1]];
            const times = [];
            let hash = null;
            const worker = new Worker('./recon-worker_loader.js');
            let runs = 0;
            worker.onmessage = (event) => {
                const message = JSON.parse(event.data);
                if (message.type === 'ready' || message.type === 'done') {
                    if (message.type === 'done') { times.push(message.wallMs); hash = message.hash; }
                    if (runs++ < 3) worker.postMessage(request); else { worker.terminate(); done({ times, hash }); }
                } else if (message.type === 'failed') { worker.terminate(); done({ error: message.error }); }
            };
        "#;
        let answer =
            page.client().execute_async(script, vec![serde_json::Value::String(request.to_string())]).await.unwrap();
        if let Some(error) = answer.get("error") {
            panic!("the worker failed: {error}");
        }
        assert_eq!(answer["hash"].as_str(), Some(trace.hash().as_str()), "browser and native traces differ");
        let browser: Vec<f64> = answer["times"].as_array().unwrap().iter().map(|t| t.as_f64().unwrap()).collect();
        let (n, b) = (median(native), median(browser));
        println!(
            "| scaled #59848, {nodes} nodes, {pods} pods | {} | {n:.0} | {b:.0} | {:.2} |",
            trace.entries.len(),
            n / b
        );
    }
    println!();
    page.close().await;
}

/// How long the timeline benchmark's page may take to simulate, send and
/// draw its largest run.
const TIMELINE_PATIENCE: std::time::Duration = std::time::Duration::from_secs(900);

/// The timeline with real runs of about 100,000 and 1,000,000 events (the
/// page's worker simulates a library scenario scaled up): the run, the
/// request until the trace is in the page, building the model, frame
/// times panning with a fifth of the run in view and with all of it in
/// view, the hover's hit test, and the page's memory with the run drawn.
async fn timeline_frames() {
    println!("## Timeline with large runs\n");
    println!(
        "| events | run in worker ms | request to trace in page ms | model ms | pan frame median / p95 / max ms \
         | whole-run frame median / p95 / max ms | hover median / max ms | page memory MiB (bytes an entry) |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|");
    for events in [100_000, 1_000_000] {
        let page = Browser::open(&format!("?bench=timeline&events={events}")).await;
        let start = Instant::now();
        // The result, or what the page shows instead (a crash overlay has
        // no `#bench-result`).
        let script = r#"
            const result = document.querySelector('#bench-result');
            return result ? result.textContent : ('page without a result: ' + document.body.innerText.slice(0, 600));
        "#;
        let text = loop {
            let text = page.client().execute(script, vec![]).await.map(|v| v.as_str().unwrap_or_default().to_owned());
            match text {
                Ok(text) if text.starts_with("page without") && start.elapsed().as_secs() > 5 => break text,
                Ok(text) if !text.is_empty() && !text.starts_with("page without") => break text,
                Err(e) => break format!("the page is gone: {e}"),
                _ => {}
            }
            assert!(start.elapsed() < TIMELINE_PATIENCE, "the {events}-event timeline never answered");
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        };
        let text = text.replace('\n', " ");
        page.close().await;
        let Ok(result) = serde_json::from_str::<serde_json::Value>(&text) else {
            println!("| {events} | failed after {:.0} s: {text} | | | | | | |", start.elapsed().as_secs_f64());
            continue;
        };
        let series =
            |name: &str| -> Vec<f64> { result[name].as_array().unwrap().iter().map(|f| f.as_f64().unwrap()).collect() };
        let summary = |values: Vec<f64>| {
            format!(
                "{:.2} / {:.2} / {:.2}",
                median(values.clone()),
                percentile(values.clone(), 0.95),
                values.iter().cloned().fold(0.0, f64::max)
            )
        };
        let hovers = series("hovers");
        let page_bytes = result["pageBytes"].as_f64().unwrap_or(f64::NAN);
        let entries = result["events"].as_f64().unwrap_or(f64::NAN);
        println!(
            "| {} | {:.0} | {:.0} | {:.0} | {} | {} | {:.3} / {:.3} | {:.0} ({:.0}) |",
            result["events"],
            result["runMs"].as_f64().unwrap_or(f64::NAN),
            result["arrivedMs"].as_f64().unwrap_or(f64::NAN),
            result["modelMs"].as_f64().unwrap_or(f64::NAN),
            summary(series("frames")),
            summary(series("wholeFrames")),
            median(hovers.clone()),
            hovers.iter().cloned().fold(0.0, f64::max),
            page_bytes / f64::from(1 << 20),
            page_bytes / entries,
        );
    }
    println!();
}

/// How long one size of the scale benchmark's cluster may take in the tab.
const SCALE_PATIENCE: std::time::Duration = std::time::Duration::from_secs(1_800);

/// The sizes [`scale_in_the_tab`] tries, as `NODESxPODS,...` (default
/// 100x3000,300x9000,1000x30000); sizes joined by `+` instead of `,` run
/// one after the other in the same page (`3000x90000+3000x89000`: a
/// visitor who runs a big cluster, edits it and runs it again), and must
/// differ, so that each run's trace hash tells it from the one before.
const TAB_SIZES_VAR: &str = "RECON_TAB_SIZES";

/// The scale benchmark's cluster (`recon_tests::scale`) in the playground:
/// typed into the editor and applied, as a visitor would, at growing sizes;
/// from the click until the run is drawn, or until the page says why not.
/// A drawn run's trace hash must be the native run's (run here once the
/// tab has drawn it, outside the time measured), and afterwards the page
/// must still answer (no dead tab). While it runs, the page's own thread
/// should stay free for the visitor: the browser's long tasks (50 ms or
/// more on that thread) are summed and the longest reported.
async fn scale_in_the_tab() {
    println!("## The scale benchmark's cluster in the tab (editor, apply, until drawn or refused)\n");
    println!(
        "| nodes | pods | page | outcome | apply to outcome s | page's thread in long tasks s | longest task ms | export JSON s | page answers after |\n|---:|---:|---|---|---:|---:|---:|---:|---|"
    );
    let sizes = std::env::var(TAB_SIZES_VAR).unwrap_or_else(|_| "100x3000,300x9000,1000x30000".to_owned());
    for group in sizes.split(',') {
        let group: Vec<(usize, usize)> = group.split('+').map(|size| cluster_size(TAB_SIZES_VAR, size)).collect();
        let page = Browser::open("").await;
        let mut last = page.hash_after(None).await;
        page.open_editor().await;
        for (i, &(nodes, pods)) in group.iter().enumerate() {
            assert!(!group[..i].contains(&(nodes, pods)), "{TAB_SIZES_VAR}: {nodes}x{pods} twice in one page");
            page.type_scenario(&recon_tests::scale::yaml(nodes, pods)).await;
            page.wait_text("#editor-status", |t| t.starts_with("valid")).await;
            watch_long_tasks(&page).await;
            page.find("#editor-apply").await.click().await.unwrap();
            let start = Instant::now();
            let outcome = outcome_after(&page, &mut last, start).await;
            let seconds = start.elapsed().as_secs_f64();
            let (busy, longest) = long_tasks(&page).await;
            // The tab must give the trace the native run gives, at every
            // size it draws, and export it whole.
            let mut export = String::new();
            if outcome.starts_with("drawn") {
                let yaml = recon_tests::scale::yaml(nodes, pods);
                let scenario = recon_scenario::parse("scale.yaml", &yaml).expect("the scale cluster parses");
                let native = recon_e2e::run_scenario(&scenario, &[]);
                assert_eq!(
                    last,
                    native.hash(),
                    "{nodes} nodes, {pods} pods: the tab's trace differs from the native run's"
                );
                // `Trace::write_json` is the trace's serde JSON: its length, counted as it is encoded.
                let length = recon_abi::json_len(&native);
                let (seconds, size) = export_json(&page).await;
                assert_eq!(size, length, "{nodes} nodes: the exported trace has the native trace's length");
                export = format!("{seconds:.0}");
            }
            let alive = page.client().execute("return document.readyState", vec![]).await.is_ok()
                && page.exists("#timeline-canvas").await;
            let which = if i == 0 { "fresh" } else { "same as above" };
            println!(
                "| {nodes} | {pods} | {which} | {outcome} | {seconds:.0} | {busy:.1} | {longest:.0} | {export} | {} |",
                if alive { "yes" } else { "no" }
            );
            // A refusal's message would stand for the next run's until
            // it is replaced; a dead page runs nothing more.
            if !alive || !outcome.starts_with("drawn") {
                break;
            }
        }
        page.close().await;
    }
    println!();
}

/// A cluster's size as `NODESxPODS` in the environment variable `var`.
fn cluster_size(var: &str, size: &str) -> (usize, usize) {
    let parsed = size.split_once('x').and_then(|(n, p)| Some((n.trim().parse().ok()?, p.trim().parse().ok()?)));
    parsed.unwrap_or_else(|| panic!("{var}: {size:?} is not NODESxPODS"))
}

/// What the page shows after an action started at `start`: a trace hash
/// other than `last` (which becomes it), a refusal, or neither in time.
async fn outcome_after(page: &Browser, last: &mut String, start: Instant) -> String {
    let script = r#"
        const error = document.querySelector('#error pre');
        const hash = document.querySelector('#trace-hash');
        return { error: error ? error.textContent : null, hash: hash ? hash.textContent : null };
    "#;
    loop {
        let state = page.client().execute(script, vec![]).await.unwrap();
        if let Some(error) = state["error"].as_str().filter(|e| !e.is_empty()) {
            return format!("refused: {}", error.lines().next().unwrap_or_default());
        }
        if let Some(hash) = state["hash"].as_str().filter(|h| h.len() == 16 && *h != last) {
            *last = hash.to_owned();
            return format!("drawn (trace hash {hash})");
        }
        if start.elapsed() > SCALE_PATIENCE {
            return "neither drawn nor refused in time".to_owned();
        }
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
}

/// The sizes [`every_kubelet_from_a_plugin`] tries, as `NODESxPODS,...`
/// (default 48x1440,100x3000: the most kubelets a tab runs from plugins,
/// [`recon_web_protocol::MAX_PLUGIN_COMPONENTS`], and a size it refuses).
const PLUGIN_SIZES_VAR: &str = "RECON_TAB_PLUGIN_SIZES";

/// A node agent's author in the playground: a generated cluster opened by
/// name, the fixed kubelet's plugin dropped on the folded kubelet row so
/// that every node runs it in the worker's WebAssembly, then *Use
/// built-in on all* for the same cluster with the built-in kubelets, in
/// the same page. Each from the action until drawn; the plugin run's
/// trace must be the native run's with the same plugin on every kubelet
/// under wasmtime, the built-in one's the native built-in run's.
async fn every_kubelet_from_a_plugin() {
    println!("## Every kubelet from a plugin in the tab (dropped on the folded row, then all put back)\n");
    println!(
        "| nodes | pods | plugin on every kubelet | built-in kubelets | plugin ÷ built-in | page's thread in long tasks s, plugin run | the same, built-in run |\n|---:|---:|---|---|---:|---:|---:|"
    );
    let path = recon_e2e::plugin_path("recon_plugin_kubelet_fixed");
    let bytes = std::fs::read(&path).expect("the fixed kubelet's plugin is built");
    let file_name = path.file_name().unwrap().to_str().unwrap().to_owned();
    let sizes = std::env::var(PLUGIN_SIZES_VAR).unwrap_or_else(|_| "48x1440,100x3000".to_owned());
    for size in sizes.split(',') {
        let (nodes, pods) = cluster_size(PLUGIN_SIZES_VAR, size);
        let page = Browser::open(&format!("?scenario={}", recon_catalog::cluster::name(nodes, pods))).await;
        let mut last = String::new();
        let opened = outcome_after(&page, &mut last, Instant::now()).await;
        assert!(opened.starts_with("drawn"), "{nodes} nodes: the cluster opened by name was not drawn: {opened}");
        let built_in = last.clone();
        page.find("#folded-kubelet").await;

        watch_long_tasks(&page).await;
        let start = Instant::now();
        page.drop_files("#folded-kubelet", &[(&file_name, &bytes)]).await;
        let plugin = outcome_after(&page, &mut last, start).await;
        let plugin_s = start.elapsed().as_secs_f64();
        let (busy, _) = long_tasks(&page).await;
        let scenario = recon_scenario::parse("cluster.yaml", &recon_catalog::cluster::yaml(nodes, pods)).unwrap();
        if plugin.starts_with("drawn") {
            let kubelets: Vec<String> = (1..=nodes).map(|n| format!("kubelet-node-{n}")).collect();
            let swaps: Vec<recon_e2e::Swap<'_>> =
                kubelets.iter().map(|k| (k.as_str(), file_name.as_str(), &bytes[..])).collect();
            let native = recon_e2e::run_scenario(&scenario, &swaps).hash();
            if last != native {
                // A component that crashed in the tab and not natively says why.
                let crashes = match page.client().find(fantoccini::Locator::Css("#crashes")).await {
                    Ok(list) => list.text().await.unwrap_or_default(),
                    Err(_) => "none".to_owned(),
                };
                panic!(
                    "{nodes} nodes: the tab's run with the plugin ({last}) differs from the native one ({native}); the tab's crashes: {crashes}"
                );
            }
        } else {
            println!("| {nodes} | {pods} | {plugin} after {plugin_s:.0} s | | | {busy:.1} | |");
            page.close().await;
            continue;
        }

        watch_long_tasks(&page).await;
        let start = Instant::now();
        page.find("#reset-all-kubelet").await.click().await.unwrap();
        let back = outcome_after(&page, &mut last, start).await;
        let back_s = start.elapsed().as_secs_f64();
        let (back_busy, _) = long_tasks(&page).await;
        assert_eq!(last, built_in, "{nodes} nodes: all built-in again is the first run: {back}");
        assert_eq!(last, recon_e2e::run_scenario(&scenario, &[]).hash(), "{nodes} nodes: the built-in run");
        println!(
            "| {nodes} | {pods} | {plugin_s:.1} s | {back_s:.1} s | {:.2} | {busy:.1} | {back_busy:.1} |",
            plugin_s / back_s
        );
        page.close().await;
    }
    println!();
}

/// From now on, records the duration of every long task on the page's
/// thread (the Long Tasks API: each task of 50 ms or more), forgetting
/// those before.
async fn watch_long_tasks(page: &Browser) {
    let watch = "window.__long = []; if (!window.__longObserver) { window.__longObserver = \
                 new PerformanceObserver((list) => { for (const e of list.getEntries()) window.__long.push(e.duration); }); \
                 window.__longObserver.observe({ type: 'longtask' }); }";
    page.client().execute(watch, vec![]).await.expect("long tasks are watched");
}

/// The long tasks since [`watch_long_tasks`]: their summed seconds and the
/// longest's milliseconds.
async fn long_tasks(page: &Browser) -> (f64, f64) {
    let read = "const done = arguments[arguments.length - 1]; \
                setTimeout(() => { for (const e of window.__longObserver.takeRecords()) window.__long.push(e.duration); \
                done([window.__long.reduce((a, b) => a + b, 0), Math.max(0, ...window.__long)]); }, 0);";
    let read = page.client().execute_async(read, vec![]).await.expect("long tasks are read");
    let number = |i: usize| read[i].as_f64().expect("a number");
    (number(0) / 1000.0, number(1))
}

/// *Export JSON* on the page's run: seconds from the click until the
/// file is handed to the download, and its size in bytes.
async fn export_json(page: &Browser) -> (f64, u64) {
    page.capture_downloads().await;
    let start = Instant::now();
    page.find("#export-json").await.click().await.unwrap();
    loop {
        let size = page.client().execute("return window.__saved.length ? window.__saved[0].size : null", vec![]).await;
        if let Some(size) = size.unwrap().as_u64() {
            return (start.elapsed().as_secs_f64(), size);
        }
        assert!(start.elapsed() < SCALE_PATIENCE, "the export never reached the download");
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
}

/// The #59848 workload, with the naive kubelet or the fixed one.
fn workload(fixed: bool) -> recon_scenario::Scenario {
    let library = recon_catalog::scenario(WORKLOAD).unwrap();
    let mut scenario = recon_scenario::parse(WORKLOAD, library.yaml).unwrap();
    if fixed {
        for c in &mut scenario.components {
            if c.controller == "kubelet" {
                c.controller = "kubelet-fixed".into();
            }
        }
    }
    scenario
}

const WORKLOAD: &str = "pod-safety-59848-workload";

/// Cores, as the native search uses them.
fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// "Find a violation" on the #59848 workload: from the click to the shrunk
/// run shown with its violation selected, over fresh pages; natively, the
/// same search on every core, its shrinking and the run of what it found.
async fn find_a_violation() {
    let mut native = Vec::new();
    let mut expected = String::new();
    for _ in 0..5 {
        let start = Instant::now();
        let explored = recon_e2e::explore_natively(&workload(false), cores());
        let (_, found) = explored.found.expect("the naive kubelet breaks");
        let found = recon_scenario::parse("found.yaml", &recon_scenario::to_yaml(&found)).unwrap();
        expected = recon_e2e::run_scenario(&found, &[]).hash();
        native.push(start.elapsed().as_secs_f64() * 1e3);
    }
    let script = r#"
        const [expected, done] = [arguments[0], arguments[arguments.length - 1]];
        const start = performance.now();
        let found = null;
        document.querySelector('#find-violation').click();
        (function check() {
            const result = document.querySelector('#search-result');
            if (found === null && result && result.textContent.startsWith('Found')) found = performance.now() - start;
            const hash = document.querySelector('#trace-hash');
            if (hash && hash.textContent === expected && document.querySelector('article.violation.selected')) {
                done({ found, shown: performance.now() - start });
            } else requestAnimationFrame(check);
        })();
    "#;
    let (mut found, mut shown) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        let page = Browser::open(&format!("?scenario={WORKLOAD}")).await;
        page.hash_after(None).await;
        let answer = page.client().execute_async(script, vec![expected.clone().into()]).await.unwrap();
        found.push(answer["found"].as_f64().unwrap_or(f64::NAN));
        shown.push(answer["shown"].as_f64().unwrap());
        page.close().await;
    }
    let (n, f, s) = (median(native), median(found), median(shown));
    println!("## Find a violation, #59848 workload (fresh page; native: the same search on {} thread(s))\n", cores());
    println!("| what | ms |\n|---|---:|");
    println!("| native: search, shrink, run the found scenario | {n:.0} |");
    println!("| browser: click to result (search and shrink, workers started) | {f:.0} |");
    println!("| browser: click to the violation shown in the timeline | {s:.0} |");
    println!("| browser / native | {:.1}x |\n", s / n);
}

/// Plans per second: every plan of the workload against the fixed kubelet
/// (nothing breaks, so all of them run), in 1 and in N search workers
/// started beforehand, and natively on 1 and N threads.
async fn search_throughput() {
    let fixed = workload(true);
    let yaml = recon_scenario::to_yaml(&fixed);
    let page = Browser::open("").await;
    page.hash_after(None).await;
    let script = r#"
        const [yaml, count, done] = [arguments[0], arguments[1], arguments[arguments.length - 1]];
        const workers = [];
        const created = performance.now();
        let ready = 0, finished = 0, plans = 0, start = 0;
        for (let shard = 0; shard < count; shard++) {
            const worker = new Worker('./recon-worker_loader.js');
            workers.push(worker);
            worker.onmessage = (event) => {
                const message = JSON.parse(event.data);
                if (message.type === 'ready' && ++ready === count) {
                    start = performance.now();
                    workers.forEach((w, i) => w.postMessage(JSON.stringify({
                        type: 'search', id: 1, scenario: yaml, uploads: [], shard: i, shards: count, budget: 10000 })));
                } else if (message.type === 'search' && (message.report === 'found'
                        || (message.report === 'progress' && message.next === null))) {
                    plans += message.done;
                    if (++finished === count) {
                        workers.forEach((w) => w.terminate());
                        done({ plans, ms: performance.now() - start, startup: start - created });
                    }
                } else if (message.type === 'failed') {
                    workers.forEach((w) => w.terminate());
                    done({ error: message.error });
                }
            };
        }
    "#;
    let hardware = page.client().execute("return navigator.hardwareConcurrency", vec![]).await.unwrap();
    let many = (hardware.as_u64().unwrap_or(1) as usize).clamp(1, 4);
    println!("## Search throughput, #59848 workload against the fixed kubelet (every plan runs)\n");
    println!("| where | workers / threads | plans | ms | plans/s |\n|---|---:|---:|---:|---:|");
    for jobs in [1, cores()] {
        let explorer_factory = || -> recon_sim::Instantiate { Box::new(|c| recon_catalog::instantiate(&c.controller)) };
        let explorer = recon_explore::Explorer::new(&fixed, &explorer_factory, false).unwrap();
        let plans = recon_explore::shard(explorer.plans(), usize::MAX, 0, 1);
        let options = recon_explore::SearchOptions { jobs, stop_at_first: true };
        let times: Vec<f64> = (0..3)
            .map(|_| {
                let result = recon_explore::search(&explorer, &plans, &explorer_factory, options, &|_| {});
                assert!(result.failures.is_empty());
                result.elapsed.as_secs_f64() * 1e3
            })
            .collect();
        let ms = median(times);
        println!("| native | {jobs} | {} | {ms:.0} | {:.0} |", plans.len(), plans.len() as f64 / ms * 1e3);
    }
    let mut startup = Vec::new();
    for count in [1, many] {
        let (mut times, mut startups) = (Vec::new(), Vec::new());
        let mut plans = 0;
        for _ in 0..3 {
            let answer = page.client().execute_async(script, vec![yaml.clone().into(), count.into()]).await.unwrap();
            if let Some(error) = answer.get("error") {
                panic!("a search worker failed: {error}");
            }
            plans = answer["plans"].as_u64().unwrap();
            times.push(answer["ms"].as_f64().unwrap());
            startups.push(answer["startup"].as_f64().unwrap());
        }
        let ms = median(times);
        println!("| browser | {count} | {plans} | {ms:.0} | {:.0} |", plans as f64 / ms * 1e3);
        startup.push((count, median(startups)));
    }
    println!();
    for (count, ms) in startup {
        println!("Starting {count} search worker(s) until they answer: {ms:.0} ms (not in the times above).");
    }
    println!();
    page.close().await;
}

/// The library scenarios the time-to-violation table covers, with the
/// search that finds each one's bug: the museum entries (a `source:`) by
/// fault schedules, the order race by orderings.
fn automatic_searches() -> Vec<(recon_scenario::Scenario, bool)> {
    let mut out = Vec::new();
    for library in recon_catalog::SCENARIOS {
        let scenario = recon_scenario::parse(library.name, library.yaml).unwrap();
        if !scenario.source.is_empty() {
            out.push((scenario, false));
        } else if library.name == ORDER_RACE {
            out.push((scenario, true));
        }
    }
    out
}

const ORDER_RACE: &str = "status-condition-race";

/// What the table says of a scenario whose workload breaks with no fault
/// at all: the search has nothing to do (`recon explore` and the page say
/// so), the fault-free run is the finding.
const NO_FAULTS_NEEDED: &str = "breaks with no faults";

/// "yes" or "no".
fn found_or_not(found: bool) -> &'static str {
    if found { "yes" } else { "no" }
}

/// How long the browser may search one scenario before the table says so.
const SEARCH_DEADLINE_MS: u64 = 180_000;

/// Time from "Find a violation" to its answer, for each scenario of
/// [`automatic_searches`]: natively (the same search on every core, and its
/// shrinking; for orderings, the depth-first search of 100 runs) and in a
/// fresh page (click to the final answer shown), in the same run.
async fn search_time_to_violation() {
    use recon_explore::ordering::{self, Bounds, Strategy};
    println!(
        "## Time to the violation by automatic search, native vs browser (same run; native on {} thread(s))\n",
        cores()
    );
    println!("| scenario | search | native ms | native found | browser ms | browser found | browser / native |");
    println!("|---|---|---:|---|---:|---|---:|");
    let script = r#"
        const [orderings, deadline, done] = [arguments[0], arguments[1], arguments[arguments.length - 1]];
        const kind = document.querySelector('#search-kind');
        kind.value = orderings ? 'orderings' : 'faults';
        kind.dispatchEvent(new Event('change', { bubbles: true }));
        requestAnimationFrame(() => requestAnimationFrame(() => {
            const start = performance.now();
            document.querySelector('#find-violation').click();
            (function check() {
                const result = document.querySelector('#search-result');
                const over = result && !document.querySelector('#search-cancel');
                if (over) done({ ms: performance.now() - start, found: result.classList.contains('found'),
                                 text: result.textContent });
                else if (performance.now() - start > deadline) done({ ms: null, found: false, text: 'timed out' });
                else requestAnimationFrame(check);
            })();
        }));
    "#;
    for (scenario, orderings) in automatic_searches() {
        let start = Instant::now();
        let factory = || -> recon_sim::Instantiate { Box::new(|c| recon_catalog::instantiate(&c.controller)) };
        let native_found = if orderings {
            let bounds = Bounds { max_runs: 100, stale_views: 0 };
            let result = ordering::search(&scenario, &factory, Strategy::DepthFirst, bounds, &mut |_| {}).unwrap();
            found_or_not(result.finding.is_some())
        } else if recon_explore::Explorer::new(&scenario, &factory, false).unwrap().reference_finding().is_some() {
            // As `recon explore` and the page do: a workload that breaks
            // without faults has nothing to search for; its own run is the finding.
            NO_FAULTS_NEEDED
        } else {
            found_or_not(recon_e2e::explore_natively(&scenario, cores()).found.is_some())
        };
        let native = start.elapsed().as_secs_f64() * 1e3;
        let page = Browser::open(&format!("?scenario={}", scenario.name)).await;
        page.hash_after(None).await;
        let args = vec![orderings.into(), SEARCH_DEADLINE_MS.into()];
        let answer = page.client().execute_async(script, args).await.unwrap();
        page.close().await;
        let browser = answer["ms"].as_f64();
        let text = answer["text"].as_str().unwrap_or_default();
        let browser_found = if text.contains("without any fault") {
            NO_FAULTS_NEEDED
        } else {
            found_or_not(answer["found"].as_bool().unwrap_or(false))
        };
        println!(
            "| {} | {} | {native:.0} | {native_found} | {} | {} | {} |",
            scenario.name,
            if orderings { "orderings (100 runs)" } else { "fault schedules" },
            browser.map_or_else(|| "timed out".to_string(), |b| format!("{b:.0}")),
            if browser.is_some() { browser_found } else { "-" },
            browser.map_or_else(|| "-".to_string(), |b| format!("{:.1}x", b / native)),
        );
        if browser_found != native_found && browser.is_some() {
            println!("<!-- {}: {} -->", scenario.name, answer["text"].as_str().unwrap_or_default());
        }
    }
    println!();
}

fn main() {
    // `cargo bench` passes `--bench`; other arguments pick sections by
    // name (`cargo bench -p recon-e2e -- search`); none runs them all.
    let picked: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    // `cargo test --all-targets` (which `cargo xtask test` runs) builds
    // this bench too, so it keeps compiling, and runs it with neither
    // `--bench` nor a section: the measurements take minutes, so they run
    // only when asked for (`cargo xtask bench`, or a section by name as in
    // `cargo xtask e2e --bench browser -- timeline-frames`).
    if picked.is_empty() && !std::env::args().any(|a| a == "--bench") {
        println!("browser benchmarks: run with `cargo xtask bench`");
        return;
    }
    let run = |name: &str| picked.is_empty() || picked.iter().any(|p| name.contains(p.as_str()));
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        if run("first-timeline") {
            first_timeline().await;
        }
        if run("simulation-throughput") {
            simulation_throughput().await;
        }
        if run("timeline-frames") {
            timeline_frames().await;
        }
        if run("scale-in-the-tab") {
            scale_in_the_tab().await;
        }
        if run("every-kubelet-from-a-plugin") {
            every_kubelet_from_a_plugin().await;
        }
        if run("search-find-a-violation") {
            find_a_violation().await;
        }
        if run("search-throughput") {
            search_throughput().await;
        }
        if run("search-time-to-violation") {
            search_time_to_violation().await;
        }
    });
}
