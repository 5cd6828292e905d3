//! `?bench=timeline&events=N`: a page that times the timeline's drawing on
//! a synthetic trace of N events and prints the frame times as JSON in
//! `#bench-result` (read by `cargo xtask bench`).

use yew::prelude::*;

use crate::timeline::bench::{pan_benchmark, synthetic_trace};

/// Frames drawn while panning from one end of the run to the other.
const FRAMES: u32 = 120;

/// Properties: how many events the synthetic trace has.
#[derive(Properties, PartialEq)]
pub struct TimelineBenchProps {
    /// Trace entries to draw.
    pub events: usize,
}

/// The benchmark page.
#[function_component(TimelineBench)]
pub fn timeline_bench(props: &TimelineBenchProps) -> Html {
    let canvas = use_node_ref();
    let result = use_state(String::new);
    {
        let (canvas, result, events) = (canvas.clone(), result.clone(), props.events);
        use_effect_with((), move |_| {
            if let Some(canvas) = canvas.cast::<web_sys::HtmlCanvasElement>() {
                let trace = synthetic_trace(events);
                let frames = pan_benchmark(&canvas, &trace, FRAMES);
                let json = serde_json::json!({ "events": trace.entries.len(), "frames": frames });
                result.set(json.to_string());
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
