//! The guided first run: a short, skippable tour of the default scenario.
//!
//! Five steps, each a small card beside what it explains: the timeline's
//! lanes, the stale read of this run (selected, so the timeline shows it),
//! the violation and its causal chain, the controls that fix it, and the
//! inspector. The card is not modal: the page under it stays usable, and on
//! the first step it sits over the quiet end of the timeline, clear of the
//! controls. It opens by itself once, after the first run of a first visit
//! to the default scenario (remembered in `localStorage` under
//! [`SEEN_KEY`]); the header's "Tour" button opens it again. Never in an embed.
//!
//! Keys, with the card focused (it takes focus when it opens): → or Enter
//! next, ← back, Esc skips (Esc works anywhere on the page while it is open).
//!
//! Plain Rust, tested natively: the steps' words and anchors ([`steps`]),
//! which entry is the run's stale read ([`stale_read`]), the step reducer
//! ([`advance`]) and where a card goes ([`place`]). The card itself
//! ([`TourCard`], in the browser) only measures and draws.
//!
//! Hooks for browser tests: the card is `#tour` with `data-step` (1-based);
//! its buttons are `#tour-back`, `#tour-next` and `#tour-skip`; the header's
//! button is `#tour-open`.

use recon_scenario::Check;
use recon_trace::ServedFrom;
use recon_trace::text::fmt_time;
use recon_trace::{EntryId, Event, Explanation, Trace};

use super::RunView;

/// The `localStorage` key that says the tour has been seen (taken or skipped).
pub const SEEN_KEY: &str = "recon.tour.seen";

/// What a step's card is placed beside.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Anchor {
    /// The timeline's canvas; the card sits inside its top right corner,
    /// over the end of the run, where little happens.
    Lanes,
    /// The selected entry's mark on the timeline, where the canvas's
    /// `data-selected-x`/`data-selected-y` hooks say it is drawn.
    SelectedMark,
    /// The selected violation's explanation; the card sits above it.
    Violation,
    /// A component's box among the controls; the card sits to its right.
    Component(String),
    /// The inspector; the card sits above it.
    Inspector,
}

impl Anchor {
    /// The CSS selector of the element the card is placed against.
    pub fn selector(&self) -> String {
        match self {
            Anchor::Lanes | Anchor::SelectedMark => "#timeline-canvas".to_owned(),
            Anchor::Violation => "#findings article.violation.selected".to_owned(),
            Anchor::Component(name) => format!("#component-{name}"),
            Anchor::Inspector => "#inspector".to_owned(),
        }
    }

    /// Which side of the anchor the card goes.
    pub fn side(&self) -> Side {
        match self {
            Anchor::Lanes => Side::InsideTopRight,
            Anchor::SelectedMark => Side::Beside,
            Anchor::Violation | Anchor::Inspector => Side::Above,
            Anchor::Component(_) => Side::Right,
        }
    }
}

/// One step of the tour.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    /// A few words.
    pub title: String,
    /// Two or three sentences.
    pub text: String,
    /// What the card points at.
    pub anchor: Anchor,
    /// An entry to select when the step opens, so the timeline shows it.
    pub select: Option<EntryId>,
}

/// The entry of the run's stale read: a list answered from a watch cache
/// that trailed the store. The one in the headline violation's causal
/// chain if there is one, else the first in the trace; `None` if every
/// list was current.
pub fn stale_read(trace: &Trace, explanations: &[Explanation], headline: Option<EntryId>) -> Option<EntryId> {
    let stale =
        |id: EntryId| trace.get(id).is_some_and(|e| matches!(&e.event, Event::ListServed(list) if list.stale_ms > 0));
    let chains = explanations.iter().filter(|e| Some(e.violation) == headline).chain(explanations);
    chains
        .flat_map(|e| e.steps.iter().map(|s| s.entry))
        .find(|id| stale(*id))
        .or_else(|| trace.entries.iter().map(|e| e.id).find(|id| stale(*id)))
}

/// The tour's steps for a run.
pub fn steps(run: &RunView) -> Vec<Step> {
    let headline = run.headline_violation();
    let stale = stale_read(&run.trace, &run.explanations, headline);
    let list = stale.and_then(|id| run.trace.get(id)).and_then(|entry| match &entry.event {
        Event::ListServed(list) if list.served_from == ServedFrom::Cache => Some((
            entry.time_ms,
            list.component.as_str(),
            list.api_server.as_str(),
            list.store_revision.saturating_sub(list.revision),
        )),
        _ => None,
    });
    let lanes = Step {
        title: "One lane per component".into(),
        text: "Each row is a part of the control plane: etcd, each API server above its watch cache, the \
               controllers, each kubelet above its node. A mark is something it did: hover for details, click to \
               select."
            .into(),
        anchor: Anchor::Lanes,
        select: None,
    };
    let stale_step = match list {
        Some((time_ms, component, server, behind)) => Step {
            title: "The stale read".into(),
            text: format!(
                "At {} {component} lists from {server}'s watch cache, {behind} revision{} behind etcd (the shaded \
                 band under the cache lane is that lag). Everything it does next builds on that old answer.",
                fmt_time(time_ms),
                if behind == 1 { "" } else { "s" }
            ),
            anchor: Anchor::SelectedMark,
            select: stale,
        },
        None => Step {
            title: "No stale read".into(),
            text: "Every list in this run was current. When a watch cache trails etcd, the shaded band under its \
                   lane shows by how many revisions, and a list it answers is marked \"stale read\"."
                .into(),
            anchor: Anchor::Lanes,
            select: None,
        },
    };
    let explanation = headline.and_then(|id| run.explanations.iter().find(|e| e.violation == id));
    let violation = match explanation {
        Some(e) => Step {
            title: if e.check == Check::TimeTravel { "What went back in time" } else { "What broke, and why" }.into(),
            text: "The red headline is the broken check; below it, the causal chain, oldest first. Click a step \
                   to find it on the timeline."
                .into(),
            anchor: Anchor::Violation,
            select: Some(e.violation),
        },
        None => Step {
            title: "Nothing broke".into(),
            text: "Every check held in this run. When one fails, its explanation appears here, with the causal \
                   chain that led to it."
                .into(),
            anchor: Anchor::Inspector,
            select: None,
        },
    };
    let fixes = match list {
        Some((_, component, server, _)) => Step {
            title: "Try a fix".into(),
            text: format!(
                "Set {component}'s list to quorum or consistent, or drop plugins/recon_plugin_kubelet_fixed.wasm on \
                 it. On {server}, \"consistent reads from cache\" (KEP-2340) decides how quorum lists are served. \
                 Every change re-runs the scenario."
            ),
            anchor: Anchor::Component(component.to_owned()),
            select: None,
        },
        None => Step {
            title: "Change things".into(),
            text: "Every control on the left edits the scenario and re-runs it: caches, lag, how each component \
                   lists, crashes, partitions, or your own .wasm controller."
                .into(),
            anchor: Anchor::Lanes,
            select: None,
        },
    };
    let inspector = Step {
        title: "Look inside at any moment".into(),
        text: "Select an event, or click an empty moment on the timeline, to see what each component's cache \
               held then, beside etcd."
            .into(),
        anchor: Anchor::Inspector,
        select: None,
    };
    vec![lanes, stale_step, violation, fixes, inspector]
}

/// What the visitor does with the tour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Open it at the first step.
    Start,
    /// The next step; after the last, the tour ends.
    Next,
    /// The previous step (the first stays).
    Back,
    /// Close it.
    Skip,
}

/// The step shown after `action`, from `step` (`None`: the tour is closed),
/// for a tour of `len` steps.
pub fn advance(step: Option<usize>, action: Action, len: usize) -> Option<usize> {
    match action {
        Action::Start => (len > 0).then_some(0),
        Action::Next => step.map(|s| s + 1).filter(|s| *s < len),
        Action::Back => step.map(|s| s.saturating_sub(1)),
        Action::Skip => None,
    }
}

/// A box on the screen, in CSS pixels from the viewport's top left.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rect {
    /// Left edge.
    pub left: f64,
    /// Top edge.
    pub top: f64,
    /// Width.
    pub width: f64,
    /// Height.
    pub height: f64,
}

impl Rect {
    fn right(&self) -> f64 {
        self.left + self.width
    }

    fn bottom(&self) -> f64 {
        self.top + self.height
    }
}

/// Where a card goes relative to its anchor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// Inside the anchor, at its top right.
    InsideTopRight,
    /// Beside a point (a zero-size anchor): below and to its right, flipped
    /// to stay on screen.
    Beside,
    /// Above the anchor, left-aligned with it; below it if there is no room.
    Above,
    /// To the anchor's right, top-aligned with it.
    Right,
}

/// Space between a card and its anchor, and between a card and the screen's edge.
pub const GAP_PX: f64 = 12.0;

/// The top-left corner of a `card` (width, height) placed on `side` of
/// `anchor`, kept inside a `screen` (width, height).
pub fn place(anchor: Rect, side: Side, card: (f64, f64), screen: (f64, f64)) -> (f64, f64) {
    let (width, height) = card;
    let (left, top) = match side {
        Side::InsideTopRight => (anchor.right() - width - GAP_PX, anchor.top + GAP_PX),
        Side::Beside => {
            let left = if anchor.right() + GAP_PX + width <= screen.0 - GAP_PX {
                anchor.right() + GAP_PX
            } else {
                anchor.left - GAP_PX - width
            };
            let top = if anchor.bottom() + GAP_PX + height <= screen.1 - GAP_PX {
                anchor.bottom() + GAP_PX
            } else {
                anchor.top - GAP_PX - height
            };
            (left, top)
        }
        Side::Above => {
            let above = anchor.top - GAP_PX - height;
            (anchor.left, if above >= GAP_PX { above } else { anchor.bottom() + GAP_PX })
        }
        Side::Right => (anchor.right() + GAP_PX, anchor.top),
    };
    let clamp = |value: f64, size: f64, limit: f64| value.min(limit - size - GAP_PX).max(GAP_PX);
    (clamp(left, width, screen.0), clamp(top, height, screen.1))
}

#[cfg(target_arch = "wasm32")]
pub use card::TourCard;

/// The card in the page.
#[cfg(target_arch = "wasm32")]
mod card {
    use gloo::events::EventListener;
    use gloo::render::{AnimationFrame, request_animation_frame};
    use wasm_bindgen::JsCast;
    use web_sys::{Element, HtmlElement, KeyboardEvent};
    use yew::prelude::*;

    use super::{Action, Anchor, Rect, Side, Step, place};

    /// What the card shows and whom it tells.
    #[derive(Properties, PartialEq)]
    pub struct TourProps {
        /// The tour's steps.
        pub steps: Vec<Step>,
        /// The step shown, 0-based.
        pub step: usize,
        /// Called with what the visitor does.
        pub on_action: Callback<Action>,
    }

    /// The card's messages.
    pub enum Msg {
        /// Measure the anchor again; with frames left, once more after that
        /// many animation frames (the timeline paints a new selection on one).
        Measure {
            /// Frames to wait before the next measure, if any.
            frames_left: u8,
        },
        /// Put the card here (and a ring on the selected mark, if any).
        Place { at: (f64, f64), ring: Option<(f64, f64)> },
    }

    /// The tour's card (see the [module docs](super)).
    pub struct TourCard {
        card: NodeRef,
        at: Option<(f64, f64)>,
        ring: Option<(f64, f64)>,
        /// The element outlined as the step's subject.
        outlined: Option<Element>,
        /// Esc anywhere skips, and a resized window moves the card.
        listeners: Vec<EventListener>,
        frame: Option<AnimationFrame>,
        /// Whether the card has taken the focus (once placed: a hidden card cannot).
        focused: bool,
    }

    fn document() -> Option<web_sys::Document> {
        web_sys::window()?.document()
    }

    /// Scrolls the element's nearest scrolling ancestor (never the page) so
    /// that the element shows whole, or its top if it is too tall for that.
    fn reveal(element: &Element) {
        let rect = element.get_bounding_client_rect();
        let (top, bottom) = (rect.top(), rect.bottom());
        let mut parent = element.parent_element();
        while let Some(scroller) = parent {
            if scroller.tag_name().eq_ignore_ascii_case("body") {
                return;
            }
            if scroller.scroll_height() > scroller.client_height() {
                let view = scroller.get_bounding_client_rect();
                let tall = bottom - top > view.height() - 16.0;
                let shows =
                    top >= view.top() && if tall { top <= view.bottom() - 48.0 } else { bottom <= view.bottom() };
                if shows {
                    return;
                }
                let before = scroller.scroll_top();
                let offset = (top - view.top() - 8.0).round() as i32;
                scroller.set_scroll_top(before + offset);
                // An element that overflows without scrolling does not move: try further out.
                if scroller.scroll_top() != before {
                    return;
                }
            }
            parent = scroller.parent_element();
        }
    }

    fn rect_of(element: &Element) -> Rect {
        let r = element.get_bounding_client_rect();
        Rect { left: r.left(), top: r.top(), width: r.width(), height: r.height() }
    }

    /// The selected mark's position on screen, from the canvas's hooks.
    fn mark_on(canvas: &Element) -> Option<(f64, f64)> {
        let x: f64 = canvas.get_attribute("data-selected-x")?.parse().ok()?;
        let y: f64 = canvas.get_attribute("data-selected-y")?.parse().ok()?;
        let r = canvas.get_bounding_client_rect();
        Some((r.left() + x, r.top() + y))
    }

    impl TourCard {
        /// Outlines the step's subject, scrolls it into view and works out where the card goes.
        fn measure(&mut self, ctx: &Context<Self>) {
            let props = ctx.props();
            let Some(step) = props.steps.get(props.step) else { return };
            let (Some(document), Some(card)) = (document(), self.card.cast::<HtmlElement>()) else { return };
            let Some(anchor) = document.query_selector(&step.anchor.selector()).ok().flatten() else { return };
            let outline = !matches!(step.anchor, Anchor::SelectedMark | Anchor::Lanes);
            if outline && self.outlined.as_ref() != Some(&anchor) {
                self.unoutline();
                let _ = anchor.class_list().add_1("tour-target");
                reveal(&anchor);
                self.outlined = Some(anchor.clone());
            } else if !outline {
                self.unoutline();
            }
            let ring = match step.anchor {
                Anchor::SelectedMark => mark_on(&anchor),
                _ => None,
            };
            let (rect, side) = match (&step.anchor, ring) {
                (Anchor::SelectedMark, Some((x, y))) => {
                    (Rect { left: x, top: y, width: 0.0, height: 0.0 }, Side::Beside)
                }
                // The mark is out of sight: the card goes where the lanes' would.
                (Anchor::SelectedMark, None) => (rect_of(&anchor), Anchor::Lanes.side()),
                (other, _) => (rect_of(&anchor), other.side()),
            };
            let Some(window) = web_sys::window() else { return };
            let size = |v: Result<wasm_bindgen::JsValue, _>| v.ok().and_then(|v| v.as_f64()).unwrap_or(0.0);
            let screen = (size(window.inner_width()), size(window.inner_height()));
            let card_size = (f64::from(card.offset_width()), f64::from(card.offset_height()));
            let at = place(rect, side, card_size, screen);
            let moved = |a: Option<(f64, f64)>, b: Option<(f64, f64)>| match (a, b) {
                (Some(a), Some(b)) => (a.0 - b.0).abs() > 0.5 || (a.1 - b.1).abs() > 0.5,
                (a, b) => a.is_some() != b.is_some(),
            };
            if moved(self.at, Some(at)) || moved(self.ring, ring) {
                ctx.link().send_message(Msg::Place { at, ring });
            }
        }

        fn unoutline(&mut self) {
            if let Some(element) = self.outlined.take() {
                let _ = element.class_list().remove_1("tour-target");
            }
        }

        /// Measures again once the timeline has surely painted this step's
        /// selection: it paints on the next animation frame, which may come
        /// before or after ours.
        fn measure_after_paint(&mut self, ctx: &Context<Self>) {
            self.measure_in(ctx, 2);
        }

        fn measure_in(&mut self, ctx: &Context<Self>, frames: u8) {
            let link = ctx.link().clone();
            let frames_left = frames.saturating_sub(1);
            self.frame = Some(request_animation_frame(move |_| link.send_message(Msg::Measure { frames_left })));
        }
    }

    impl Component for TourCard {
        type Message = Msg;
        type Properties = TourProps;

        fn create(_ctx: &Context<Self>) -> Self {
            TourCard {
                card: NodeRef::default(),
                at: None,
                ring: None,
                outlined: None,
                listeners: Vec::new(),
                frame: None,
                focused: false,
            }
        }

        fn changed(&mut self, ctx: &Context<Self>, old: &TourProps) -> bool {
            if ctx.props().step != old.step {
                self.measure_after_paint(ctx);
            }
            true
        }

        fn update(&mut self, ctx: &Context<Self>, msg: Msg) -> bool {
            match msg {
                Msg::Measure { frames_left } => {
                    self.frame = None;
                    self.measure(ctx);
                    if frames_left > 0 {
                        self.measure_in(ctx, frames_left);
                    }
                    false
                }
                Msg::Place { at, ring } => {
                    self.at = Some(at);
                    self.ring = ring;
                    true
                }
            }
        }

        fn view(&self, ctx: &Context<Self>) -> Html {
            let props = ctx.props();
            let Some(step) = props.steps.get(props.step) else { return html! {} };
            let (count, last) = (props.steps.len(), props.step + 1 == props.steps.len());
            let send = |action: Action| props.on_action.reform(move |_: MouseEvent| action);
            let card = self.card.clone();
            let on_action = props.on_action.clone();
            let onkeydown = Callback::from(move |e: KeyboardEvent| {
                let on_card = e.target().and_then(|t| t.dyn_into::<HtmlElement>().ok()).zip(card.cast::<HtmlElement>());
                let action = match e.key().as_str() {
                    "ArrowRight" => Action::Next,
                    "ArrowLeft" => Action::Back,
                    // On a button, Enter presses the button.
                    "Enter" if on_card.is_some_and(|(target, card)| target == card) => Action::Next,
                    _ => return,
                };
                e.prevent_default();
                on_action.emit(action);
            });
            let style = match self.at {
                Some((left, top)) => format!("left:{left:.0}px;top:{top:.0}px;"),
                // Measured before it is shown.
                None => "left:0;top:0;visibility:hidden;".to_owned(),
            };
            html! {
                <>
                    if let Some((x, y)) = self.ring {
                        <div class="tour-ring" aria-hidden="true"
                            style={format!("left:{:.0}px;top:{:.0}px;", x - 11.0, y - 11.0)}></div>
                    }
                    <div id="tour" class="tour-card" ref={self.card.clone()} role="dialog" aria-modal="false"
                        aria-labelledby="tour-title" aria-describedby="tour-text" tabindex="-1"
                        data-step={(props.step + 1).to_string()} {style} {onkeydown}>
                        <div class="tour-count">{ format!("Tour · {} of {count}", props.step + 1) }</div>
                        <h2 id="tour-title">{ &step.title }</h2>
                        <p id="tour-text">{ &step.text }</p>
                        <div class="tour-buttons">
                            <button id="tour-skip" type="button" class="tour-skip" onclick={send(Action::Skip)}
                                title="Close the tour (Esc)">{ "Skip" }</button>
                            <button id="tour-back" type="button" disabled={props.step == 0}
                                onclick={send(Action::Back)} title="Previous step (←)">{ "Back" }</button>
                            <button id="tour-next" type="button" onclick={send(Action::Next)}
                                title="Next step (→ or Enter)">{ if last { "Done" } else { "Next" } }</button>
                        </div>
                    </div>
                </>
            }
        }

        fn rendered(&mut self, ctx: &Context<Self>, first_render: bool) {
            if !self.focused
                && self.at.is_some()
                && let Some(card) = self.card.cast::<HtmlElement>()
            {
                self.focused = true;
                let _ = card.focus();
            }
            if first_render {
                let window = gloo::utils::window();
                let on_action = ctx.props().on_action.clone();
                self.listeners.push(EventListener::new(&window, "keydown", move |e| {
                    if e.dyn_ref::<KeyboardEvent>().is_some_and(|e| e.key() == "Escape") {
                        on_action.emit(Action::Skip);
                    }
                }));
                let link = ctx.link().clone();
                self.listeners.push(EventListener::new(&window, "resize", move |_| {
                    link.send_message(Msg::Measure { frames_left: 0 })
                }));
                self.measure_after_paint(ctx);
            }
            self.measure(ctx);
        }

        fn destroy(&mut self, _ctx: &Context<Self>) {
            self.unoutline();
            // A keyboard user inside the card lands on the button that reopens it.
            let inside = self.card.cast::<HtmlElement>().zip(document().and_then(|d| d.active_element()));
            if inside.is_some_and(|(card, active)| card.contains(Some(&active))) {
                let reopen = document().and_then(|d| d.get_element_by_id("tour-open"));
                if let Some(button) = reopen.and_then(|b| b.dyn_into::<HtmlElement>().ok()) {
                    let _ = button.focus();
                }
            }
        }
    }
}

/// Whether this browser has seen the tour; a browser without storage has not.
#[cfg(target_arch = "wasm32")]
pub fn seen() -> bool {
    let storage = web_sys::window().and_then(|w| w.local_storage().ok().flatten());
    storage.is_some_and(|s| s.get_item(SEEN_KEY).ok().flatten().is_some())
}

/// Remembers that the tour was taken or skipped (silently not, without storage).
#[cfg(target_arch = "wasm32")]
fn mark_seen() {
    if let Some(storage) = web_sys::window().and_then(|w| w.local_storage().ok().flatten()) {
        let _ = storage.set_item(SEEN_KEY, "1");
    }
}

#[cfg(target_arch = "wasm32")]
impl super::App {
    /// Applies what the visitor did with the tour: the step shown, the
    /// entry it selects, and remembering a tour that was closed.
    pub(super) fn tour_action(&mut self, action: Action) {
        let Some(run) = &self.state.run else { return };
        let steps = steps(run);
        let next = advance(self.tour, action, steps.len());
        if next.is_none() && self.tour.is_some() {
            mark_seen();
        }
        if (next != self.tour || action == Action::Start)
            && let Some(select) = next.and_then(|s| steps[s].select)
        {
            self.state.selected = Some(select);
        }
        self.tour = next;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use recon_web_protocol::{FromWorker, ToWorker};
    use recon_worker::runner::{Progress, Runner};

    struct Last(Option<FromWorker>);

    impl Progress for Last {
        fn now_ms(&mut self) -> f64 {
            0.0
        }
        fn report(&mut self, message: FromWorker) {
            self.0 = Some(message);
        }
    }

    fn run_library(name: &str) -> RunView {
        let library = recon_catalog::scenario(name).unwrap();
        let request = ToWorker::Run { id: 1, scenario: library.yaml.into(), seed: 1, uploads: Vec::new() };
        let mut out = Last(None);
        Runner::new().unwrap().handle(request, &mut out);
        let Some(FromWorker::Done { trace, hash, .. }) = out.0 else { panic!("{name} runs") };
        RunView::new(trace, hash, None)
    }

    #[test]
    fn the_default_runs_stale_read_is_node_1s_kubelet_listing_from_the_frozen_cache() {
        let run = run_library(recon_catalog::DEFAULT_SCENARIO);
        let id = stale_read(&run.trace, &run.explanations, run.headline_violation()).expect("a stale read");
        let Event::ListServed(list) = &run.trace.get(id).unwrap().event else { panic!("a list") };
        let (component, api_server, stale_ms) = (&list.component, &list.api_server, &list.stale_ms);
        assert_eq!((component.as_str(), api_server.as_str()), ("kubelet-node-1", "apiserver-2"));
        assert!(*stale_ms > 0);
        // It is the list the headline violation's causal chain walks through.
        let headline = run.explanations.iter().find(|e| Some(e.violation) == run.headline_violation()).unwrap();
        assert!(headline.steps.iter().any(|s| s.entry == id));
    }

    #[test]
    fn the_default_tour_points_at_the_stale_read_the_violation_and_the_kubelet() {
        let run = run_library(recon_catalog::DEFAULT_SCENARIO);
        let steps = steps(&run);
        assert!((4..=6).contains(&steps.len()));
        assert_eq!(steps[0].anchor, Anchor::Lanes);
        assert_eq!(steps[0].select, None, "the first step leaves the violation selected");
        let stale = stale_read(&run.trace, &run.explanations, run.headline_violation());
        assert_eq!((steps[1].anchor.clone(), steps[1].select), (Anchor::SelectedMark, stale));
        assert!(steps[1].text.contains("kubelet-node-1") && steps[1].text.contains("apiserver-2"), "{}", steps[1].text);
        assert!(steps[1].text.contains("12 revisions behind"), "{}", steps[1].text);
        assert_eq!((steps[2].anchor.clone(), steps[2].select), (Anchor::Violation, run.headline_violation()));
        assert_eq!(steps[3].anchor, Anchor::Component("kubelet-node-1".into()));
        assert_eq!(steps[3].anchor.selector(), "#component-kubelet-node-1");
        assert!(steps[3].text.contains("recon_plugin_kubelet_fixed.wasm"), "{}", steps[3].text);
        assert_eq!(steps.last().unwrap().anchor, Anchor::Inspector);
    }

    #[test]
    fn a_run_without_a_stale_read_or_a_violation_says_so() {
        let run = run_library("pod-safety-59848-quorum");
        assert!(run.explanations.is_empty(), "the quorum fix has no violation");
        let steps = steps(&run);
        assert_eq!(stale_read(&run.trace, &run.explanations, None), None);
        assert_eq!(steps[1].title, "No stale read");
        assert_eq!(steps[2].title, "Nothing broke");
        assert!(steps.iter().all(|s| s.select.is_none()));
    }

    #[test]
    fn the_tour_advances_goes_back_and_ends() {
        assert_eq!(advance(None, Action::Start, 5), Some(0));
        assert_eq!(advance(Some(3), Action::Start, 5), Some(0));
        assert_eq!(advance(Some(0), Action::Next, 5), Some(1));
        assert_eq!(advance(Some(4), Action::Next, 5), None, "Next on the last step ends it");
        assert_eq!(advance(Some(0), Action::Back, 5), Some(0));
        assert_eq!(advance(Some(2), Action::Back, 5), Some(1));
        assert_eq!(advance(Some(2), Action::Skip, 5), None);
        assert_eq!(advance(None, Action::Next, 5), None, "a closed tour stays closed");
        assert_eq!(advance(None, Action::Start, 0), None);
    }

    #[test]
    fn cards_sit_beside_their_anchor_and_stay_on_screen() {
        let screen = (1400.0, 900.0);
        let card = (300.0, 150.0);
        let canvas = Rect { left: 330.0, top: 100.0, width: 1060.0, height: 400.0 };
        assert_eq!(place(canvas, Side::InsideTopRight, card, screen), (1390.0 - 300.0 - GAP_PX, 100.0 + GAP_PX));
        // A point near the right and bottom edges: the card flips to its left and above it.
        let point = |x, y| Rect { left: x, top: y, width: 0.0, height: 0.0 };
        assert_eq!(place(point(500.0, 200.0), Side::Beside, card, screen), (512.0, 212.0));
        assert_eq!(
            place(point(1300.0, 850.0), Side::Beside, card, screen),
            (1300.0 - 12.0 - 300.0, 850.0 - 12.0 - 150.0)
        );
        // Above, or below when there is no room above.
        let findings = Rect { left: 330.0, top: 600.0, width: 600.0, height: 200.0 };
        assert_eq!(place(findings, Side::Above, card, screen), (330.0, 600.0 - 12.0 - 150.0));
        let high = Rect { top: 50.0, ..findings };
        assert_eq!(place(high, Side::Above, card, screen), (330.0, 262.0));
        // Right of a control, pulled back on screen when it would fall off the bottom.
        let control = Rect { left: 10.0, top: 820.0, width: 300.0, height: 60.0 };
        assert_eq!(place(control, Side::Right, card, screen), (322.0, 900.0 - 150.0 - GAP_PX));
    }
}
