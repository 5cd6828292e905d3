//! The playground's numbers, measured in headless Chromium (run by
//! `cargo xtask bench`, which builds and serves the playground):
//!
//! - the size of what a visitor downloads, gzipped;
//! - time from navigation to the first drawn timeline;
//! - simulation throughput in the browser's worker as a ratio to the same
//!   scenario run natively in this process, in the same run;
//! - frame time while panning a 100,000-event timeline.
//!
//! Wall-clock time is the point here; nothing in the test suite times things.

use std::io::Write;
use std::time::Instant;

use flate2::Compression;
use flate2::write::GzEncoder;
use recon_e2e::Browser;

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(|a, b| a.total_cmp(b));
    values[values.len() / 2]
}

fn percentile(mut values: Vec<f64>, p: f64) -> f64 {
    values.sort_by(|a, b| a.total_cmp(b));
    values[((values.len() - 1) as f64 * p).round() as usize]
}

fn gzipped(bytes: &[u8]) -> usize {
    let mut encoder = GzEncoder::new(Vec::new(), Compression::best());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap().len()
}

/// Sizes of the shipped app, worker and styles (not the downloadable plugins).
fn sizes() {
    let dist = std::env::var("RECON_DIST_DIR").expect("RECON_DIST_DIR is set by `cargo xtask bench`");
    let mut rows = Vec::new();
    let mut total = (0, 0);
    for entry in std::fs::read_dir(&dist).unwrap().flatten() {
        let path = entry.path();
        let Some(ext) = path.extension().and_then(|e| e.to_str()) else { continue };
        if !["wasm", "js", "css", "html"].contains(&ext) {
            continue;
        }
        let bytes = std::fs::read(&path).unwrap();
        let gz = gzipped(&bytes);
        total = (total.0 + bytes.len(), total.1 + gz);
        rows.push((path.file_name().unwrap().to_string_lossy().into_owned(), bytes.len(), gz));
    }
    rows.sort();
    println!("## Download size\n\n| file | bytes | gzipped |\n|---|---:|---:|");
    for (name, raw, gz) in rows {
        println!("| {name} | {raw} | {gz} |");
    }
    println!("| **total** | {} | **{}** ({:.2} MB) |\n", total.0, total.1, total.1 as f64 / 1e6);
}

/// Navigation start to the first drawn timeline, over fresh browsers.
async fn first_timeline() {
    let mut times = Vec::new();
    for _ in 0..5 {
        let page = Browser::open("").await;
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
    println!("## Navigation to first drawn timeline (default scenario, fresh profile)\n");
    println!("median {:.0} ms, runs: {:?}\n", median(times.clone()), times.iter().map(|t| t.round()).collect::<Vec<_>>());
}

/// The same scenario in the browser's worker and natively here.
async fn simulation_throughput() {
    println!("## Simulation speed, browser worker vs native (same scenario, same run)\n");
    println!("| scenario | entries | native ms | browser ms | browser speed (native = 1.0) |\n|---|---:|---:|---:|---:|");
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
        let request = serde_json::json!({ "type": "run", "id": 1, "scenario": yaml, "seed": scenario.seed, "uploads": [] });
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
        let answer = page.client().execute_async(script, vec![serde_json::Value::String(request.to_string())]).await.unwrap();
        if let Some(error) = answer.get("error") {
            panic!("the worker failed: {error}");
        }
        assert_eq!(answer["hash"].as_str(), Some(trace.hash().as_str()), "browser and native traces differ");
        let browser: Vec<f64> = answer["times"].as_array().unwrap().iter().map(|t| t.as_f64().unwrap()).collect();
        let (n, b) = (median(native), median(browser));
        println!("| scaled #59848, {nodes} nodes, {pods} pods | {} | {n:.0} | {b:.0} | {:.2} |", trace.entries.len(), n / b);
    }
    println!();
    page.close().await;
}

/// Frame times of the timeline panning across 100,000 events.
async fn timeline_frames() {
    let page = Browser::open("?bench=timeline&events=100000").await;
    let text = page.wait_text("#bench-result", |t| t.starts_with('{')).await;
    let result: serde_json::Value = serde_json::from_str(&text).unwrap();
    let frames: Vec<f64> = result["frames"].as_array().unwrap().iter().map(|f| f.as_f64().unwrap()).collect();
    println!("## Timeline frame time, panning 100,000 events ({} frames)\n", frames.len());
    println!(
        "median {:.2} ms, p95 {:.2} ms, max {:.2} ms\n",
        median(frames.clone()),
        percentile(frames.clone(), 0.95),
        frames.iter().cloned().fold(0.0, f64::max)
    );
    page.close().await;
}

fn main() {
    // `cargo bench` passes `--bench`; this harness takes no arguments.
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    sizes();
    runtime.block_on(async {
        first_timeline().await;
        simulation_throughput().await;
        timeline_frames().await;
    });
}
