//! `?bench=timeline&events=N`: a page that has its worker run the
//! benchmark's scaled scenario (about N events, [`bench_scenario`]), times
//! the timeline's drawing of that run and prints the times as JSON in
//! `#bench-result` (read by `cargo xtask bench`): the run in the worker,
//! the request until the trace is in the page (run, encoding, transfer and
//! decoding), building the timeline's model, frames panning and with the
//! whole run in view, and hover hit tests; and the page's own memory once
//! the trace is drawn.

use std::cell::RefCell;
use std::rc::Rc;

use yew::prelude::*;

use crate::app::worker_link::{Event as WorkerEvent, WorkerLink};
use crate::timeline::bench::{bench_scenario, pan_benchmark};
use recon_web_protocol::{FromWorker, ToWorker};

/// Frames drawn while panning from one end of the run to the other.
const FRAMES: u32 = 120;

/// Properties: about how many events the run has.
#[derive(Properties, PartialEq)]
pub struct TimelineBenchProps {
    /// Trace entries to draw, about.
    pub events: usize,
}

/// The benchmark page.
#[function_component(TimelineBench)]
pub fn timeline_bench(props: &TimelineBenchProps) -> Html {
    let canvas = use_node_ref();
    let result = use_state(String::new);
    // The worker lives as long as the page.
    let worker: Rc<RefCell<Option<WorkerLink>>> = use_mut_ref(|| None);
    {
        let (canvas, result, events) = (canvas.clone(), result.clone(), props.events);
        use_effect_with((), move |_| {
            let scenario = bench_scenario(events);
            let (link, shown) = (worker.clone(), result.clone());
            let sent_ms = Rc::new(RefCell::new(0.0));
            let sent = sent_ms.clone();
            let on_event = Callback::from(move |event: WorkerEvent| match event {
                WorkerEvent::Message(message) => {
                    if let Some(link) = link.borrow_mut().as_mut() {
                        link.received(&message);
                    }
                    match message {
                        FromWorker::Done { trace, wall_ms, .. } => {
                            if let Some(canvas) = canvas.cast::<web_sys::HtmlCanvasElement>() {
                                let arrived_ms = now_ms();
                                let times = pan_benchmark(&canvas, &trace, FRAMES);
                                let json = serde_json::json!({
                                    "scenario": trace.scenario,
                                    "events": trace.entries.len(),
                                    "runMs": wall_ms,
                                    "arrivedMs": arrived_ms - *sent_ms.borrow(),
                                    "modelMs": times.model_ms,
                                    "frames": times.frames,
                                    "wholeFrames": times.whole_frames,
                                    "hovers": times.hovers,
                                    "pageBytes": page_memory_bytes(),
                                });
                                shown.set(json.to_string());
                            }
                        }
                        FromWorker::Failed { error, .. } => shown.set(format!("the run failed: {error}")),
                        _ => {}
                    }
                }
                WorkerEvent::Heard => {
                    if let Some(link) = link.borrow_mut().as_mut() {
                        link.heard();
                    }
                }
                WorkerEvent::Broken(why) => shown.set(why),
                WorkerEvent::Stalled(_) => shown.set("the worker stopped answering".into()),
            });
            let request = ToWorker::Run {
                id: 1,
                scenario: recon_scenario::to_yaml(&scenario),
                seed: scenario.seed,
                uploads: Vec::new(),
            };
            match WorkerLink::start(on_event) {
                Ok(mut started) => {
                    *sent.borrow_mut() = now_ms();
                    started.send(&request, &[]);
                    *worker.borrow_mut() = Some(started);
                }
                Err(error) => result.set(error),
            }
        });
    }
    html! {
        <div class="bench">
            <canvas ref={canvas} id="bench-canvas" style="width: 1200px; height: 600px; display: block;" />
            <pre id="bench-result">{ (*result).clone() }</pre>
        </div>
    }
}

/// The size of the page's WebAssembly memory: what its program has ever
/// held at once, as a WebAssembly memory grows and never shrinks. With a
/// large trace in the page, most of it is the trace and its timeline.
fn page_memory_bytes() -> f64 {
    use wasm_bindgen::JsCast;
    wasm_bindgen::memory()
        .dyn_into::<js_sys::WebAssembly::Memory>()
        .ok()
        .and_then(|memory| memory.buffer().dyn_into::<js_sys::ArrayBuffer>().ok())
        .map_or(0.0, |buffer| f64::from(buffer.byte_length()))
}

/// `performance.now()`, or 0 where the page has no clock.
fn now_ms() -> f64 {
    web_sys::window().and_then(|w| w.performance()).map_or(0.0, |p| p.now())
}

/// The benchmark the page's URL asks for, if any: `Some(events)` for
/// `?bench=timeline[&events=N]` (default 100,000).
pub fn requested() -> Option<usize> {
    let search = web_sys::window()?.location().search().ok()?;
    let params = web_sys::UrlSearchParams::new_with_str(&search).ok()?;
    if params.get("bench").as_deref() != Some("timeline") {
        return None;
    }
    Some(params.get("events").and_then(|n| n.parse().ok()).unwrap_or(100_000))
}
