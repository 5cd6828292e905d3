//! The timeline: what every component of a run did, when, and why.
//!
//! This module owns the playground's timeline panel: one lane per component
//! (the script, etcd, each API server above its watch cache, the
//! controllers, each node's kubelet above the node's runtime, the safety
//! checks), each trace entry a mark on its lane coloured by kind, violations
//! in red across every lane, a band under each watch cache showing how many
//! revisions it trails etcd, partition windows shaded, and arrows from the
//! selected entry's causes to it. It pans (drag), zooms (wheel, buttons,
//! keys), steps from entry to entry, scrubs (drag on the time axis), and
//! tells its parent which entry the user picked, or which moment when a
//! click lands away from every mark; the parent owns the selection.
//!
//! Plain Rust, tested natively (`cargo test -p recon-web`):
//! - [`lanes`]: which lanes a trace has, and their order;
//! - [`model`]: per-lane marks sorted by time, violations, partitions, stepping;
//! - [`staleness`]: each cache's lag behind the store over time;
//! - [`viewport`]: pan and zoom arithmetic, the time axis's ticks;
//! - [`columns`]: one mark (and one lag value) per pixel column;
//! - [`layout`]: lane heights and hit testing;
//! - [`hover`]: the tooltip's words;
//! - [`theme`]: every colour and size.
//!
//! In the browser: `draw` paints a frame on the canvas; this file is the Yew
//! component and its input handling; [`bench`](mod@bench) times frames on a
//! real run of about 100,000 entries (a library scenario scaled up).
//!
//! Keys, with the timeline focused (click it or tab to it): ← → step to the
//! previous or next entry, + and − zoom, `v` selects the first violation,
//! `0` or Home fits the whole run. Touch: one finger drags to pan and taps
//! to select (or to inspect an empty moment), two fingers pinch to zoom.
//! The canvas follows its container's size (a `ResizeObserver`), and the
//! label gutter narrows on a narrow screen ([`theme::gutter_width`]).
//!
//! Hooks for browser tests: the root `#timeline` carries `data-lanes` (lane
//! names, comma-separated, top to bottom), `data-violations` (a count) and
//! `data-waits` (each reconcile a staleness mitigation held, as
//! `lane:from_ms-until_ms`, comma-separated; `until` empty if never let go);
//! the canvas is `#timeline-canvas`, with `data-selected-x` and
//! `data-selected-y` (CSS pixels from its top left) where the selected
//! entry's mark was last drawn, absent while it is out of sight, and
//! `data-painted-width` and `data-ms-per-px` (the last frame's width and zoom);
//! `#timeline-selected` (visually hidden)
//! has `data-entry` set to the selected entry's id and the entry's
//! description as text; the buttons are `#tl-first-violation`, `#tl-prev`,
//! `#tl-next`, `#tl-zoom-in`, `#tl-zoom-out` and `#tl-fit`.

pub mod bench;
pub mod columns;
mod draw;
pub mod hover;
pub mod lanes;
pub mod layout;
pub mod model;
pub mod staleness;
pub mod theme;
pub mod viewport;

#[cfg(test)]
mod tests;

use gloo::events::{EventListener, EventListenerOptions};
use gloo::render::{AnimationFrame, request_animation_frame};
use recon_trace::text::describe;
use recon_trace::{EntryId, Trace};
use wasm_bindgen::JsCast;
use web_sys::{HtmlCanvasElement, HtmlElement, MouseEvent, WheelEvent};
use yew::prelude::*;

use crate::Shared;

pub use bench::{PanTimes, bench_scenario, pan_benchmark};

use self::draw::{Frame, Scratch, Surface, draw};
use self::hover::{
    Tooltip, band_tooltip, entry_tooltip, informer_tooltip, partition_at, partition_tooltip, wait_tooltip,
};
use self::layout::{LaneLayout, hit_test, mark_position};
use self::model::{MarkKind, TimelineModel};
use self::theme::*;
use self::viewport::{Span, Viewport, within};

/// How much one press of a zoom button or key zooms.
const ZOOM_STEP: f64 = 1.6;
/// Wheel zoom: the factor per pixel of wheel travel is `exp(this)`.
const WHEEL_ZOOM_PER_PX: f64 = 0.0015;
/// Stepping keeps the selection at least this far inside the plot.
const REVEAL_MARGIN_PX: f64 = 48.0;
/// A press that moves less than this is a click, not a drag.
const CLICK_SLOP_PX: f64 = 3.0;
/// Plot width assumed before the canvas has been laid out.
const INITIAL_PLOT_WIDTH: f64 = 800.0;

/// What the timeline shows and whom it tells about clicks.
#[derive(Properties, PartialEq)]
pub struct TimelineProps {
    /// The run to draw.
    pub trace: Shared<Trace>,
    /// The selected entry, if any: highlighted, with its cause arrows.
    pub selected: Option<EntryId>,
    /// Called with an entry's id when the user selects it.
    pub on_select: Callback<EntryId>,
    /// Called with a moment (virtual milliseconds) when the user clicks the
    /// plot away from any mark.
    #[prop_or_default]
    pub on_moment: Callback<u64>,
}

/// A toolbar or keyboard command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    /// Select the first violation and scroll to it.
    FirstViolation,
    /// Select the entry before the selected one (or before the cursor).
    Previous,
    /// Select the entry after the selected one (or after the cursor).
    Next,
    /// Zoom in around the cursor (or the middle).
    ZoomIn,
    /// Zoom out around the cursor (or the middle).
    ZoomOut,
    /// Show the whole run.
    Fit,
}

/// Where a pointer event comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PointerPhase {
    /// A button went down on the canvas.
    Down,
    /// The pointer moved over the canvas, no button held.
    Hover,
    /// The pointer moved anywhere while dragging.
    Drag,
    /// The button came up anywhere while dragging.
    Up,
}

/// The timeline's messages.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Msg {
    /// An animation frame arrived: paint.
    Paint,
    /// Something outside changed (the window's size): paint again.
    Repaint,
    /// A pointer event, in client coordinates.
    Pointer {
        /// Client x.
        x: i32,
        /// Client y.
        y: i32,
        /// What happened.
        phase: PointerPhase,
    },
    /// The pointer left the canvas.
    Leave,
    /// A wheel turned over the canvas (deltas in pixels).
    Wheel {
        /// Client x of the pointer.
        x: i32,
        /// Horizontal travel.
        dx: f64,
        /// Vertical travel.
        dy: f64,
        /// Whether shift was held (pan instead of zoom).
        shift: bool,
    },
    /// A toolbar or keyboard command.
    Command(Command),
    /// Fingers on the canvas, in client coordinates: the first `count`
    /// of `points` are down (for `End`, the finger that lifted is first).
    Touch {
        /// Up to two touch points.
        points: [(i32, i32); 2],
        /// How many fingers are down now (after an `End`: still down).
        count: u8,
        /// What happened.
        phase: TouchPhase,
    },
}

/// Where a touch event comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TouchPhase {
    /// A finger went down.
    Start,
    /// Fingers moved.
    Move,
    /// A finger lifted (or the touch was cancelled).
    End,
}

/// Two fingers on the canvas: their midpoint and distance, canvas pixels.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Pinch {
    mid_x: f64,
    distance: f64,
}

/// What the pointer is over.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Target {
    /// A mark.
    Entry(EntryId),
    /// A cache lane, away from any mark.
    Band(usize),
    /// A partition window, away from any mark.
    Partition(usize),
    /// A held reconcile's band (its index in the model's waits), away from any mark.
    Wait(usize),
    /// A component's lane, away from any mark: its informer band.
    Informer(usize),
}

/// The pointer's place on the canvas, in CSS pixels from its top-left.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Pointer {
    x: f64,
    y: f64,
    target: Option<Target>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum DragKind {
    /// Dragging the plot: pan.
    Pan,
    /// Dragging on the time axis: move the cursor.
    Scrub,
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Drag {
    kind: DragKind,
    start: (f64, f64),
    last_x: f64,
    moved: bool,
}

/// The timeline component.
pub struct Timeline {
    model: TimelineModel,
    layout: LaneLayout,
    kinds: Vec<MarkKind>,
    view: Viewport,
    /// Whether the view has been fitted to the canvas's real width yet.
    fitted: bool,
    cursor_ms: Option<f64>,
    pointer: Option<Pointer>,
    drag: Option<Drag>,
    /// Window listeners that live as long as a drag.
    drag_listeners: Vec<EventListener>,
    /// The wheel and touch listeners (and the window's resize, where there
    /// is no `ResizeObserver`).
    listeners: Vec<EventListener>,
    /// Follows the timeline's own box; disconnected on drop.
    resize_observer: Option<ResizeWatch>,
    /// Two fingers down: pinch to zoom, move to pan.
    pinch: Option<Pinch>,
    frame: Option<AnimationFrame>,
    surface: Option<Surface>,
    scratch: Scratch,
    canvas_width: f64,
    /// The label gutter's width at that canvas width.
    gutter: f64,
    /// The width and zoom of the last frame, as the canvas's hooks say.
    drawn_hook: Option<(f64, f64)>,
    /// Where the selected mark was last drawn, as the canvas's hooks say.
    mark_hook: Option<(f64, f64)>,
    root: NodeRef,
    canvas: NodeRef,
}

impl Component for Timeline {
    type Message = Msg;
    type Properties = TimelineProps;

    fn create(ctx: &Context<Self>) -> Self {
        let model = TimelineModel::build(&ctx.props().trace);
        let layout = LaneLayout::new(&model.lanes);
        let kinds = model.kinds_present();
        let view = Viewport::fit(Span::new(model.start_ms, model.end_ms), INITIAL_PLOT_WIDTH);
        let cursor_ms = ctx.props().selected.and_then(|id| model.time_of(id)).map(|t| t as f64);
        Timeline {
            model,
            layout,
            kinds,
            view,
            fitted: false,
            cursor_ms,
            pointer: None,
            drag: None,
            drag_listeners: Vec::new(),
            listeners: Vec::new(),
            resize_observer: None,
            pinch: None,
            frame: None,
            surface: None,
            scratch: Scratch::default(),
            canvas_width: 0.0,
            gutter: GUTTER_WIDTH,
            drawn_hook: None,
            mark_hook: None,
            root: NodeRef::default(),
            canvas: NodeRef::default(),
        }
    }

    fn changed(&mut self, ctx: &Context<Self>, old: &TimelineProps) -> bool {
        let props = ctx.props();
        let new_trace = props.trace != old.trace;
        if new_trace {
            // A re-run (a tweaked setting) keeps the user's zoom so the runs
            // can be compared; a view showing the whole run shows the new one whole.
            let showed_all = self.view.shows_all(self.span());
            self.model = TimelineModel::build(&props.trace);
            self.layout = LaneLayout::new(&self.model.lanes);
            self.kinds = self.model.kinds_present();
            if showed_all {
                self.fitted = false;
            } else {
                self.view.resize(self.view.width_px, self.span());
            }
            self.pointer = None;
            self.drag = None;
            self.drag_listeners.clear();
            self.cursor_ms = None;
        }
        if (new_trace || props.selected != old.selected)
            && let Some(time) = props.selected.and_then(|id| self.model.time_of(id))
        {
            // A selection made elsewhere (the findings, a click) scrolls the
            // view only if it is out of sight; steps keep a margin themselves.
            self.cursor_ms = Some(time as f64);
            self.view.reveal(time as f64, 0.0, self.span());
        }
        self.request_paint(ctx);
        true
    }

    fn update(&mut self, ctx: &Context<Self>, msg: Msg) -> bool {
        match msg {
            Msg::Paint => {
                self.frame = None;
                self.paint(ctx);
                false
            }
            Msg::Repaint => {
                self.request_paint(ctx);
                false
            }
            Msg::Pointer { x, y, phase } => self.pointer_event(ctx, x, y, phase),
            Msg::Leave => {
                let had = self.pointer.take().is_some();
                self.request_paint(ctx);
                had
            }
            Msg::Wheel { x, dx, dy, shift } => {
                let (px, _) = self.local(x, 0);
                let span = self.span();
                if shift {
                    self.view.pan_by_px(-dy, span);
                } else if dx.abs() > dy.abs() {
                    self.view.pan_by_px(-dx, span);
                } else {
                    let anchor = within(px - self.gutter, 0.0, self.view.width_px);
                    self.view.zoom_at(anchor, (-dy * WHEEL_ZOOM_PER_PX).exp(), span);
                }
                self.refresh_target();
                self.request_paint(ctx);
                self.pointer.is_some()
            }
            Msg::Command(command) => {
                self.command(ctx, command);
                self.request_paint(ctx);
                true
            }
            Msg::Touch { points, count, phase } => self.touch_event(ctx, points, count, phase),
        }
    }

    fn view(&self, ctx: &Context<Self>) -> Html {
        let link = ctx.link();
        let on_key = link.batch_callback(|e: KeyboardEvent| {
            if e.ctrl_key() || e.meta_key() || e.alt_key() {
                return None;
            }
            let command = match e.key().as_str() {
                "ArrowLeft" => Command::Previous,
                "ArrowRight" => Command::Next,
                "+" | "=" => Command::ZoomIn,
                "-" | "_" => Command::ZoomOut,
                "v" | "V" => Command::FirstViolation,
                "0" | "Home" => Command::Fit,
                _ => return None,
            };
            e.prevent_default();
            Some(Msg::Command(command))
        });
        let button = |id: &'static str, label: &'static str, title: String, command: Command, disabled: bool| {
            // A button that shows words is named by them (its title adds the
            // details); one that shows only a symbol is named by its title.
            let named_by_symbol = !label.chars().any(char::is_alphabetic);
            let aria_label = named_by_symbol.then(|| title.clone());
            html! {
                <button id={id} type="button" class="tl-button" style={BUTTON_STYLE} title={title}
                    aria-label={aria_label} disabled={disabled}
                    onclick={link.callback(move |_| Msg::Command(command))}>{ label }</button>
            }
        };
        let violations = self.model.violations.len();
        let lanes = self.model.lane_names().collect::<Vec<_>>().join(",");
        let waits = self.model.waits_hook();
        let on_down = link.batch_callback(|e: MouseEvent| {
            // Only the main button drags or picks; the others keep their menus.
            (e.button() == 0).then(|| {
                e.prevent_default(); // no text selection while dragging; focus is given explicitly
                Msg::Pointer { x: e.client_x(), y: e.client_y(), phase: PointerPhase::Down }
            })
        });
        let on_move = link.callback(|e: MouseEvent| Msg::Pointer {
            x: e.client_x(),
            y: e.client_y(),
            phase: PointerPhase::Hover,
        });
        let canvas_style = format!(
            "display:block;width:100%;height:{}px;cursor:{};touch-action:none;",
            self.layout.total_height,
            self.css_cursor()
        );
        html! {
            <div id="timeline" class="timeline" ref={self.root.clone()} tabindex="0" style={ROOT_STYLE}
                data-lanes={lanes} data-violations={violations.to_string()} data-waits={waits} onkeydown={on_key}
                aria-label="Timeline: arrow keys step between events, + and - zoom, v jumps to the first violation, 0 fits the run">
                <div class="timeline-toolbar" role="toolbar" style={TOOLBAR_STYLE}>
                    { button("tl-first-violation", "⚑ First violation",
                        format!("Select the first violation (v); {violations} in this run"),
                        Command::FirstViolation, violations == 0) }
                    { button("tl-prev", "◀", "Previous event (←)".into(), Command::Previous, self.model.is_empty()) }
                    { button("tl-next", "▶", "Next event (→)".into(), Command::Next, self.model.is_empty()) }
                    <span style={TOOLBAR_GAP_STYLE}></span>
                    { button("tl-zoom-out", "−", "Zoom out (−)".into(), Command::ZoomOut, false) }
                    { button("tl-zoom-in", "+", "Zoom in (+)".into(), Command::ZoomIn, false) }
                    { button("tl-fit", "Fit", "Show the whole run (0 or Home)".into(), Command::Fit, false) }
                    { self.legend() }
                </div>
                <div class="timeline-plot" style={PLOT_STYLE}>
                    <canvas id="timeline-canvas" ref={self.canvas.clone()} style={canvas_style}
                        onmousedown={on_down} onmousemove={on_move} onmouseleave={link.callback(|_| Msg::Leave)} />
                    { self.tooltip(ctx) }
                </div>
                { self.selected_hook(ctx) }
            </div>
        }
    }

    fn rendered(&mut self, ctx: &Context<Self>, first_render: bool) {
        if first_render {
            if let Some(canvas) = self.canvas.cast::<HtmlCanvasElement>() {
                // Not passive: the wheel zooms the timeline instead of scrolling the page.
                let link = ctx.link().clone();
                let options = EventListenerOptions::enable_prevent_default();
                self.listeners.push(EventListener::new_with_options(&canvas, "wheel", options, move |e| {
                    let Some(e) = e.dyn_ref::<WheelEvent>() else { return };
                    e.prevent_default();
                    let unit = match e.delta_mode() {
                        WheelEvent::DOM_DELTA_LINE => 16.0,
                        WheelEvent::DOM_DELTA_PAGE => 400.0,
                        _ => 1.0,
                    };
                    link.send_message(Msg::Wheel {
                        x: e.client_x(),
                        dx: e.delta_x() * unit,
                        dy: e.delta_y() * unit,
                        shift: e.shift_key(),
                    });
                }));
                // Touch: one finger pans (a tap selects), two pinch. Not
                // passive, so no emulated mouse events follow.
                for (name, phase) in [
                    ("touchstart", TouchPhase::Start),
                    ("touchmove", TouchPhase::Move),
                    ("touchend", TouchPhase::End),
                    ("touchcancel", TouchPhase::End),
                ] {
                    let link = ctx.link().clone();
                    let options = EventListenerOptions::enable_prevent_default();
                    self.listeners.push(EventListener::new_with_options(&canvas, name, options, move |e| {
                        let Some(e) = e.dyn_ref::<web_sys::TouchEvent>() else { return };
                        e.prevent_default();
                        link.send_message(touch_message(e, phase));
                    }));
                }
            }
            // The timeline's own box changes with the window and without it
            // (a panel opening, an embed's column): watch the box, and the
            // window only where the browser cannot watch a box.
            let link = ctx.link().clone();
            let repaint = move || link.send_message(Msg::Repaint);
            self.resize_observer =
                self.root.cast::<web_sys::Element>().and_then(|root| ResizeWatch::new(&root, repaint.clone()));
            if self.resize_observer.is_none() {
                let window = gloo::utils::window();
                self.listeners.push(EventListener::new(&window, "resize", move |_| repaint()));
            }
        }
        self.request_paint(ctx);
    }
}

impl Timeline {
    fn span(&self) -> Span {
        Span::new(self.model.start_ms, self.model.end_ms)
    }

    /// Asks for a paint on the next animation frame; many requests, one paint.
    fn request_paint(&mut self, ctx: &Context<Self>) {
        if self.frame.is_none() {
            let link = ctx.link().clone();
            self.frame = Some(request_animation_frame(move |_| link.send_message(Msg::Paint)));
        }
    }

    fn paint(&mut self, ctx: &Context<Self>) {
        let Some(canvas) = self.canvas.cast::<HtmlCanvasElement>() else { return };
        let width = f64::from(canvas.client_width());
        if width <= 0.0 {
            return;
        }
        self.canvas_width = width;
        self.gutter = gutter_width(width);
        let plot_width = (width - self.gutter).max(1.0);
        let span = self.span();
        if !self.fitted {
            self.view = Viewport::fit(span, plot_width);
            self.fitted = true;
        } else if (self.view.width_px - plot_width).abs() > 0.5 {
            self.view.resize(plot_width, span);
        }
        if self.surface.as_ref().is_none_or(|s| !s.is_on(&canvas)) {
            self.surface = Surface::new(&canvas);
        }
        let Some(surface) = &self.surface else { return };
        let height = self.layout.total_height;
        surface.resize(width, height);
        let props = ctx.props();
        let selected = props.selected.filter(|id| self.model.time_of(*id).is_some());
        let causes = selected.and_then(|id| props.trace.get(id)).map_or(&[][..], |e| &e.causes[..]);
        let hovered = match self.pointer.and_then(|p| p.target) {
            Some(Target::Entry(id)) => Some(id),
            _ => None,
        };
        let frame = Frame {
            model: &self.model,
            layout: &self.layout,
            view: self.view,
            selected,
            causes,
            hovered,
            cursor_ms: self.cursor_ms,
            width,
            gutter: self.gutter,
            height,
        };
        draw(surface, &frame, &mut self.scratch);
        // What was drawn, for tests and tools: the canvas width this frame
        // filled and its zoom.
        let drawn = (width, self.view.ms_per_px);
        if self.drawn_hook != Some(drawn) {
            self.drawn_hook = Some(drawn);
            let _ = canvas.set_attribute("data-painted-width", &format!("{width:.0}"));
            let _ = canvas.set_attribute("data-ms-per-px", &format!("{:e}", self.view.ms_per_px));
        }
        let mark = selected
            .and_then(|id| mark_position(&self.model, &self.layout, &self.view, id))
            .filter(|(x, _)| (0.0..=self.view.width_px).contains(x))
            .map(|(x, y)| (x + self.gutter, y));
        if mark != self.mark_hook {
            self.mark_hook = mark;
            let set = |name: &str, value: Option<f64>| match value {
                Some(v) => canvas.set_attribute(name, &format!("{v:.0}")),
                None => canvas.remove_attribute(name),
            };
            let _ = set("data-selected-x", mark.map(|m| m.0));
            let _ = set("data-selected-y", mark.map(|m| m.1));
        }
    }

    /// Client coordinates to canvas CSS pixels.
    fn local(&self, x: i32, y: i32) -> (f64, f64) {
        match self.canvas.cast::<HtmlCanvasElement>() {
            Some(canvas) => {
                let rect = canvas.get_bounding_client_rect();
                (f64::from(x) - rect.left(), f64::from(y) - rect.top())
            }
            None => (f64::from(x), f64::from(y)),
        }
    }

    fn pointer_event(&mut self, ctx: &Context<Self>, x: i32, y: i32, phase: PointerPhase) -> bool {
        let (x, y) = self.local(x, y);
        let span = self.span();
        match phase {
            PointerPhase::Down => {
                if let Some(root) = self.root.cast::<HtmlElement>() {
                    let _ = root.focus();
                }
                if x < self.gutter {
                    return false;
                }
                let kind = if y < AXIS_HEIGHT { DragKind::Scrub } else { DragKind::Pan };
                if kind == DragKind::Scrub {
                    self.cursor_ms = Some(self.view.time_at(x - self.gutter));
                }
                self.drag = Some(Drag { kind, start: (x, y), last_x: x, moved: false });
                self.listen_for_drag(ctx);
                self.request_paint(ctx);
                true
            }
            PointerPhase::Hover => {
                if self.drag.is_some() {
                    return false; // the window's listener follows drags
                }
                let pointer = Pointer { x, y, target: self.target_at(x, y) };
                let changed = self.pointer != Some(pointer);
                self.pointer = Some(pointer);
                self.request_paint(ctx);
                changed
            }
            PointerPhase::Drag => {
                let Some(drag) = &mut self.drag else { return false };
                let dx = x - drag.last_x;
                drag.last_x = x;
                if (x - drag.start.0).abs() + (y - drag.start.1).abs() > CLICK_SLOP_PX {
                    drag.moved = true;
                }
                match drag.kind {
                    DragKind::Pan => self.view.pan_by_px(dx, span),
                    DragKind::Scrub => {
                        let plot_x = within(x - self.gutter, 0.0, self.view.width_px);
                        self.cursor_ms = Some(self.view.time_at(plot_x));
                    }
                }
                self.request_paint(ctx);
                false
            }
            PointerPhase::Up => {
                let Some(drag) = self.drag.take() else { return false };
                self.drag_listeners.clear();
                let inside = (0.0..=self.canvas_width).contains(&x) && (0.0..=self.layout.total_height).contains(&y);
                self.pointer = inside.then(|| Pointer { x, y, target: self.target_at(x, y) });
                let picked = match drag.kind {
                    DragKind::Pan if !drag.moved => {
                        let hit = hit_test(&self.model, &self.layout, &self.view, x - self.gutter, y, PICK_RADIUS);
                        if hit.is_none() {
                            // A click on an empty moment: the cursor goes there, the parent may look.
                            let plot_x = within(x - self.gutter, 0.0, self.view.width_px);
                            self.cursor_ms = Some(self.view.time_at(plot_x));
                            ctx.props().on_moment.emit(self.view.moment_at(plot_x));
                        }
                        hit
                    }
                    DragKind::Pan => None,
                    // Scrubbing selects the last entry at or before the cursor.
                    DragKind::Scrub => self.cursor_ms.and_then(|t| self.model.last_at_or_before(t)),
                };
                if let Some(id) = picked {
                    ctx.props().on_select.emit(id);
                }
                self.request_paint(ctx);
                true
            }
        }
    }

    /// One finger behaves as the mouse's main button (drag pans, a tap
    /// selects or inspects); a second finger turns it into a pinch, which
    /// zooms about the fingers' midpoint and pans as it moves.
    fn touch_event(&mut self, ctx: &Context<Self>, points: [(i32, i32); 2], count: u8, phase: TouchPhase) -> bool {
        let [(x, y), _] = points;
        match (phase, count) {
            (TouchPhase::Start | TouchPhase::Move, 2..) => {
                // A pinch is never also a tap or a drag.
                self.drag = None;
                self.drag_listeners.clear();
                let (a, b) = (self.local(points[0].0, points[0].1), self.local(points[1].0, points[1].1));
                let now = Pinch { mid_x: (a.0 + b.0) / 2.0 - self.gutter, distance: (a.0 - b.0).hypot(a.1 - b.1) };
                if let Some(before) = self.pinch.replace(now) {
                    self.view.pinch(before.mid_x, before.distance, now.mid_x, now.distance, self.span());
                    self.refresh_target();
                    self.request_paint(ctx);
                }
                false
            }
            (TouchPhase::Start, _) if self.pinch.is_none() => self.pointer_event(ctx, x, y, PointerPhase::Down),
            (TouchPhase::Move, _) if self.pinch.is_none() => self.pointer_event(ctx, x, y, PointerPhase::Drag),
            (TouchPhase::End, 0) if self.pinch.take().is_none() => {
                let changed = self.pointer_event(ctx, x, y, PointerPhase::Up);
                // A finger leaves no pointer hovering behind it.
                self.pointer = None;
                changed
            }
            // Fingers lifting one by one after a pinch, or a third finger.
            _ => false,
        }
    }

    /// Follows the pointer anywhere in the window while a button is held.
    fn listen_for_drag(&mut self, ctx: &Context<Self>) {
        let window = gloo::utils::window();
        let listener = |event: &'static str, phase: PointerPhase| {
            let link = ctx.link().clone();
            EventListener::new(&window, event, move |e| {
                if let Some(e) = e.dyn_ref::<MouseEvent>() {
                    link.send_message(Msg::Pointer { x: e.client_x(), y: e.client_y(), phase });
                }
            })
        };
        self.drag_listeners = vec![listener("mousemove", PointerPhase::Drag), listener("mouseup", PointerPhase::Up)];
    }

    /// The view moved under a still pointer: what is under it now.
    fn refresh_target(&mut self) {
        if let Some(Pointer { x, y, .. }) = self.pointer {
            self.pointer = Some(Pointer { x, y, target: self.target_at(x, y) });
        }
    }

    fn target_at(&self, x: f64, y: f64) -> Option<Target> {
        let plot_x = x - self.gutter;
        if plot_x < 0.0 || y < AXIS_HEIGHT {
            return None;
        }
        if let Some(id) = hit_test(&self.model, &self.layout, &self.view, plot_x, y, PICK_RADIUS) {
            return Some(Target::Entry(id));
        }
        let lane = self.layout.lane_at(y)?;
        if self.model.band_on(lane).is_some() {
            return Some(Target::Band(lane));
        }
        let time = self.view.time_at(plot_x);
        if let Some(wait) = self.model.wait_at(lane, time) {
            let index = self.model.waits.iter().position(|w| std::ptr::eq(w, wait));
            return index.map(Target::Wait);
        }
        if self.model.informer_on(lane).is_some_and(|b| b.behind_at(&self.model.store, time) > 0) {
            return Some(Target::Informer(lane));
        }
        partition_at(&self.model, lane, self.view.time_at(plot_x)).map(Target::Partition)
    }

    fn css_cursor(&self) -> &'static str {
        match (self.drag.map(|d| d.kind), self.pointer) {
            (Some(DragKind::Pan), _) => "grabbing",
            (Some(DragKind::Scrub), _) => "ew-resize",
            (None, Some(p)) if p.x >= self.gutter && p.y < AXIS_HEIGHT => "ew-resize",
            (None, Some(Pointer { target: Some(Target::Entry(_)), .. })) => "pointer",
            (None, Some(p)) if p.x < self.gutter => "default",
            _ => "grab",
        }
    }

    fn command(&mut self, ctx: &Context<Self>, command: Command) {
        let props = ctx.props();
        let span = self.span();
        let select = |this: &mut Timeline, id: Option<EntryId>| {
            let Some(id) = id else { return };
            if let Some(time) = this.model.time_of(id) {
                this.cursor_ms = Some(time as f64);
                this.view.reveal(time as f64, REVEAL_MARGIN_PX, span);
            }
            props.on_select.emit(id);
        };
        let from = self.cursor_ms.unwrap_or(self.view.start_ms);
        match command {
            Command::FirstViolation => select(self, self.model.first_violation()),
            Command::Previous => select(self, self.model.previous(props.selected, from)),
            Command::Next => select(self, self.model.next(props.selected, from)),
            Command::ZoomIn | Command::ZoomOut => {
                let factor = if command == Command::ZoomIn { ZOOM_STEP } else { 1.0 / ZOOM_STEP };
                // Around the cursor if it is in view, else around the middle.
                let anchor = self
                    .cursor_ms
                    .map(|t| self.view.x_of(t))
                    .filter(|x| (0.0..=self.view.width_px).contains(x))
                    .unwrap_or(self.view.width_px / 2.0);
                self.view.zoom_at(anchor, factor, span);
            }
            Command::Fit => self.view = Viewport::fit(span, self.view.width_px),
        }
    }

    fn legend(&self) -> Html {
        let swatch = |colour: &str| html! { <span style={format!("{SWATCH_STYLE}background:{colour};")}></span> };
        html! {
            <span class="timeline-legend" style={LEGEND_STYLE}>
                { for self.kinds.iter().map(|kind| html! {
                    <span>{ swatch(mark_colour(*kind)) }{ kind.label() }</span>
                }) }
                if !self.model.bands.is_empty() {
                    <span title="Height: how many revisions the watch cache trails etcd">
                        { swatch(STALENESS_FILL) }{ "cache behind etcd" }
                    </span>
                }
                if !self.model.partitions.is_empty() {
                    <span>{ swatch(PARTITION_FILL) }{ "partitioned" }</span>
                }
                if self.model.max_informer_behind() > 0 {
                    <span title="Height: how many revisions a component's informers trail etcd (client-go's store_resource_version against etcd's)">
                        { swatch(INFORMER_FILL) }{ "view behind etcd" }
                    </span>
                }
                if !self.model.waits.is_empty() {
                    <span title="A reconcile a staleness mitigation held until the component's informer saw its own write">
                        { swatch(WAIT_FILL) }{ "waiting for own write" }
                    </span>
                }
            </span>
        }
    }

    fn tooltip(&self, ctx: &Context<Self>) -> Html {
        let Some(Pointer { x, y, target: Some(target) }) = self.pointer else { return html! {} };
        if self.drag.is_some() {
            return html! {};
        }
        let props = ctx.props();
        let tip: Option<Tooltip> = match target {
            Target::Entry(id) => entry_tooltip(&props.trace, &self.model, id),
            Target::Band(lane) => self.model.band_on(lane).map(|b| band_tooltip(b, self.view.time_at(x - self.gutter))),
            Target::Partition(i) => self.model.partitions.get(i).map(|w| partition_tooltip(&self.model, w)),
            Target::Wait(i) => self.model.waits.get(i).map(|w| wait_tooltip(&self.model, w)),
            Target::Informer(lane) => self
                .model
                .informer_on(lane)
                .map(|b| informer_tooltip(b, &self.model.store, self.view.time_at(x - self.gutter))),
        };
        let Some(tip) = tip else { return html! {} };
        // Flip to the pointer's left near the right edge, so it stays on screen.
        let flip = x > self.canvas_width - TOOLTIP_FLIP_PX;
        let shift = if flip { "transform:translateX(calc(-100% - 28px));" } else { "" };
        let style = format!("{TOOLTIP_STYLE}left:{}px;top:{}px;{shift}", x + 14.0, y + 16.0);
        html! {
            <div class="timeline-tooltip" role="tooltip" style={style}>
                <div style={TOOLTIP_HEADING_STYLE}>{ tip.heading }</div>
                { for tip.lines.into_iter().map(|line| html! { <div>{ line }</div> }) }
            </div>
        }
    }

    fn selected_hook(&self, ctx: &Context<Self>) -> Html {
        let props = ctx.props();
        let entry = props.selected.and_then(|id| props.trace.get(id));
        let id = entry.map(|e| e.id.to_string()).unwrap_or_default();
        let text = entry.map(describe).unwrap_or_default();
        html! {
            <div id="timeline-selected" data-entry={id} style={VISUALLY_HIDDEN_STYLE} aria-live="polite">{ text }</div>
        }
    }
}

/// A touch event as a [`Msg::Touch`]: the fingers still down (for a move
/// or a start) or the finger that lifted (for an end), first two only.
fn touch_message(e: &web_sys::TouchEvent, phase: TouchPhase) -> Msg {
    let down = e.touches();
    let listed = if phase == TouchPhase::End { e.changed_touches() } else { e.touches() };
    let mut points = [(0, 0); 2];
    for (i, point) in points.iter_mut().enumerate() {
        if let Some(t) = listed.get(i as u32) {
            *point = (t.client_x(), t.client_y());
        }
    }
    Msg::Touch { points, count: down.length().min(2) as u8, phase }
}

/// A `ResizeObserver` on one element, disconnected when dropped.
struct ResizeWatch {
    observer: web_sys::ResizeObserver,
    _callback: wasm_bindgen::closure::Closure<dyn FnMut()>,
}

impl ResizeWatch {
    fn new(element: &web_sys::Element, on_resize: impl FnMut() + 'static) -> Option<ResizeWatch> {
        let callback = wasm_bindgen::closure::Closure::<dyn FnMut()>::new(on_resize);
        let observer = web_sys::ResizeObserver::new(callback.as_ref().unchecked_ref()).ok()?;
        observer.observe(element);
        Some(ResizeWatch { observer, _callback: callback })
    }
}

impl Drop for ResizeWatch {
    fn drop(&mut self) {
        self.observer.disconnect();
    }
}
