//! A benchmark of the timeline's drawing, and the run it draws.
//!
//! The app's `?bench=timeline` page ([`crate::bench_page`]) has its worker
//! run [`bench_scenario`], a library scenario scaled up and simulated like
//! any other run, and times [`pan_benchmark`] on the trace that comes back.

use recon_scenario::{Millis, Scenario, StepAction};
use recon_trace::Trace;
use serde_json::Value;
use web_sys::HtmlCanvasElement;

use super::draw::{Frame, Scratch, Surface, draw};
use super::layout::{LaneLayout, hit_test};
use super::model::TimelineModel;
use super::theme::{PICK_RADIUS, gutter_width};
use super::viewport::{Span, Viewport};

/// Share of the run visible while the benchmark pans.
const BENCH_VISIBLE_SHARE: f64 = 0.2;
/// Canvas width used when the canvas has no layout width (detached or hidden).
const BENCH_FALLBACK_WIDTH: f64 = 1200.0;

/// What [`pan_benchmark`] measured, every time in milliseconds
/// (`performance.now()`).
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct PanTimes {
    /// Building the timeline's model of the trace (lanes, marks, bands),
    /// what the page does once per run.
    pub model_ms: f64,
    /// Each frame's drawing while panning with a fifth of the run in view.
    pub frames: Vec<f64>,
    /// Each frame's drawing with the whole run in view (every mark in the
    /// scan, many per pixel column), the pointer moving across it.
    pub whole_frames: Vec<f64>,
    /// Each hover's hit test (finding the mark under the pointer, as a
    /// pointer move does) with the whole run in view, over every lane.
    pub hovers: Vec<f64>,
}

/// Builds the model of `trace` and redraws `canvas` `frames` times while
/// panning from the start of the run to its end with a fifth of it in view,
/// the first violation selected; then `frames` times with the whole run in
/// view and the cursor moving across it, and as many hit tests of the
/// pointer. Empty if the canvas cannot draw.
pub fn pan_benchmark(canvas: &HtmlCanvasElement, trace: &Trace, frames: u32) -> PanTimes {
    let Some(performance) = web_sys::window().and_then(|w| w.performance()) else { return PanTimes::default() };
    let Some(surface) = Surface::new(canvas) else { return PanTimes::default() };
    let started = performance.now();
    let model = TimelineModel::build(trace);
    let model_ms = performance.now() - started;
    let layout = LaneLayout::new(&model.lanes);
    let width = match canvas.client_width() {
        w if w > 0 => f64::from(w),
        _ => BENCH_FALLBACK_WIDTH,
    };
    let height = layout.total_height;
    surface.resize(width, height);

    let span = Span::new(model.start_ms, model.end_ms);
    let gutter = gutter_width(width);
    let plot_width = (width - gutter).max(1.0);
    let whole = Viewport::fit(span, plot_width);
    let mut view = whole;
    view.ms_per_px *= BENCH_VISIBLE_SHARE;
    let travel = (span.end_ms - span.start_ms - view.width_px * view.ms_per_px).max(0.0);
    let selected = model.first_violation();
    let causes = selected.and_then(|id| trace.get(id)).map(|e| e.causes.clone()).unwrap_or_default();
    let mut scratch = Scratch::default();
    let progress = |frame: u32| if frames > 1 { f64::from(frame) / f64::from(frames - 1) } else { 0.0 };
    let mut times = PanTimes { model_ms, ..PanTimes::default() };

    for frame in 0..frames {
        view.start_ms = span.start_ms + travel * progress(frame);
        let started = performance.now();
        let input = Frame {
            model: &model,
            layout: &layout,
            view,
            selected,
            causes: &causes,
            hovered: None,
            cursor_ms: Some(view.time_at(view.width_px / 2.0)),
            width,
            gutter,
            height,
        };
        draw(&surface, &input, &mut scratch);
        times.frames.push(performance.now() - started);
    }
    for frame in 0..frames {
        let x = whole.width_px * progress(frame);
        // Down the lanes as the pointer crosses the plot, so every lane's
        // marks are hit-tested somewhere.
        let y = layout.total_height * progress(frame);
        let started = performance.now();
        let hovered = hit_test(&model, &layout, &whole, x, y, PICK_RADIUS);
        times.hovers.push(performance.now() - started);
        let started = performance.now();
        let input = Frame {
            model: &model,
            layout: &layout,
            view: whole,
            selected,
            causes: &causes,
            hovered,
            cursor_ms: Some(whole.time_at(x)),
            width,
            gutter,
            height,
        };
        draw(&surface, &input, &mut scratch);
        times.whole_frames.push(performance.now() - started);
    }
    times
}

/// The library scenario the benchmark scales: a ReplicaSet flaps after its
/// controller relists from a lagging watch cache, while two kubelets run its
/// pods. Its run has every kind of mark: writes, cache applies, watch
/// deliveries, reconciles, a stale list, time travel, containers, violations.
pub const BENCH_LIBRARY_SCENARIO: &str = "replicaset-flapping";

/// How many times over [`bench_scenario`]'s replica counts are.
const REPLICAS_TIMES: u32 = 10;

/// About how many trace entries one period of [`bench_scenario`] makes
/// (measured; the timeline's tests check that the runs come out about as
/// long as asked), to choose how many periods a number of events takes.
const ENTRIES_PER_PERIOD: usize = 1_800;

/// The scenario whose run the benchmark draws, about `events` trace entries
/// long: [`BENCH_LIBRARY_SCENARIO`] with [`REPLICAS_TIMES`] the replicas,
/// its story told again and again ([`scaled`]) for as many periods as that
/// many entries take.
pub fn bench_scenario(events: usize) -> Scenario {
    let library = recon_catalog::scenario(BENCH_LIBRARY_SCENARIO).expect("the benchmark's scenario is in the library");
    let scenario = recon_scenario::parse(library.name, library.yaml).expect("library scenarios parse");
    let periods = events.div_ceil(ENTRIES_PER_PERIOD).max(1) as u64;
    scaled(&scenario, REPLICAS_TIMES, periods)
}

/// `scenario` scaled up, for runs far larger than the library's: every
/// replica count (its objects' `spec.replicas`, its `scale` steps) `times`
/// as large, and its script and API-server partitions repeated `periods`
/// times, one period of the scenario's duration after another. A partition
/// that lasts to the end of the run is kept once.
pub fn scaled(scenario: &Scenario, times: u32, periods: u64) -> Scenario {
    let mut s = scenario.clone();
    s.name = format!("{}-x{times}-{periods}-periods", scenario.name);
    let period = scenario.duration.0;
    s.duration = Millis(period * periods);
    for object in &mut s.objects {
        scale_replicas(&mut object.spec, times);
    }
    s.script = (0..periods)
        .flat_map(|p| {
            scenario.script.iter().map(move |step| {
                let mut step = step.clone();
                step.at = Millis(step.at.0 + p * period);
                step
            })
        })
        .collect();
    for step in &mut s.script {
        match &mut step.action {
            StepAction::Scale { replicas, .. } => *replicas *= times,
            StepAction::Create { object, .. } | StepAction::Apply { object, .. } => {
                scale_replicas(&mut object.spec, times)
            }
            _ => {}
        }
    }
    for (server, original) in s.api_servers.iter_mut().zip(&scenario.api_servers) {
        server.partitions = (0..periods)
            .flat_map(|p| {
                original.partitions.iter().filter(move |w| p == 0 || w.until.is_some()).map(move |w| {
                    let mut w = *w;
                    w.from = Millis(w.from.0 + p * period);
                    w.until = w.until.map(|u| Millis(u.0 + p * period));
                    w
                })
            })
            .collect();
    }
    s
}

/// Multiplies `spec.replicas`, if the object has one.
fn scale_replicas(spec: &mut Value, times: u32) {
    if let Some(replicas) = spec.get_mut("replicas")
        && let Some(n) = replicas.as_u64()
    {
        *replicas = Value::from(n * u64::from(times));
    }
}
