//! Drawing one frame on the canvas.
//!
//! The frame is painted back to front: lane backgrounds, time grid,
//! partition windows, staleness bands, violation lines, marks (one per
//! pixel column, batched into one path per colour, the most important kind
//! last so it stays on top), tags, the selection with its cause arrows, the
//! scrub cursor, then the time axis and the label gutter over the edges.
//! Only this module and the component touch the browser; everything it
//! draws comes from the plain-Rust modules beside it.

use std::borrow::Cow;

use recon_trace::EntryId;
use recon_trace::text::fmt_time;
use wasm_bindgen::{JsCast, JsValue};
use web_sys::{CanvasRenderingContext2d, HtmlCanvasElement};

use super::columns::{BandRun, ColumnMark, aggregate_marks, band_runs, column_of, informer_runs};
use super::layout::{LaneLayout, mark_position};
use super::model::{MarkKind, TimelineModel};
use super::theme::*;
use super::viewport::{Viewport, tick_label, ticks, within};

/// How far past the plot's edges marks are still gathered, so a mark cut by
/// the edge is drawn cut rather than missing.
const EDGE_MARGIN_PX: f64 = 8.0;
/// Above this many tags in view, tags are left out: they would hide the marks.
const MAX_TAGS: usize = 60;

/// A canvas and its 2D context, sized for the device's pixel ratio.
pub struct Surface {
    canvas: HtmlCanvasElement,
    context: CanvasRenderingContext2d,
}

impl Surface {
    /// The canvas's 2D context (opaque: the frame always paints its background).
    pub fn new(canvas: &HtmlCanvasElement) -> Option<Surface> {
        let options = js_sys::Object::new();
        js_sys::Reflect::set(&options, &JsValue::from_str("alpha"), &JsValue::FALSE).ok()?;
        let context = canvas.get_context_with_context_options("2d", &options).ok()??;
        let context = context.dyn_into::<CanvasRenderingContext2d>().ok()?;
        Some(Surface { canvas: canvas.clone(), context })
    }

    /// Whether this surface draws on `canvas`.
    pub fn is_on(&self, canvas: &HtmlCanvasElement) -> bool {
        &self.canvas == canvas
    }

    /// Gives the canvas a backing store of `width`×`height` CSS pixels at the
    /// device's pixel ratio, and scales drawing so CSS pixels can be used.
    pub fn resize(&self, width: f64, height: f64) {
        let ratio = web_sys::window().map_or(1.0, |w| w.device_pixel_ratio()).max(1.0);
        let (w, h) = ((width * ratio).round().max(1.0) as u32, (height * ratio).round().max(1.0) as u32);
        if self.canvas.width() != w {
            self.canvas.set_width(w);
        }
        if self.canvas.height() != h {
            self.canvas.set_height(h);
        }
        let _ = self.context.set_transform(ratio, 0.0, 0.0, ratio, 0.0, 0.0);
    }
}

/// What one frame shows.
pub struct Frame<'a> {
    /// The run.
    pub model: &'a TimelineModel,
    /// Where the lanes are.
    pub layout: &'a LaneLayout,
    /// The visible time.
    pub view: Viewport,
    /// The selected entry.
    pub selected: Option<EntryId>,
    /// The selected entry's causes.
    pub causes: &'a [EntryId],
    /// The entry under the pointer.
    pub hovered: Option<EntryId>,
    /// The scrub cursor's time.
    pub cursor_ms: Option<f64>,
    /// Canvas width in CSS pixels.
    pub width: f64,
    /// Width of the label gutter left of the plot ([`gutter_width`] of `width`).
    pub gutter: f64,
    /// Canvas height in CSS pixels.
    pub height: f64,
}

/// A rectangle in canvas CSS pixels.
#[derive(Clone, Copy)]
struct Rect {
    x: f64,
    y: f64,
    w: f64,
    h: f64,
}

/// A label beside a notable mark.
struct Tag {
    lane: usize,
    x: f64,
    y: f64,
    kind: MarkKind,
}

/// Buffers kept between frames so drawing allocates nothing once warm.
#[derive(Default)]
pub struct Scratch {
    columns: Vec<ColumnMark>,
    runs: Vec<BandRun>,
    rects: Vec<Vec<Rect>>,
    tags: Vec<Tag>,
}

/// Draws a frame.
pub fn draw(surface: &Surface, frame: &Frame, scratch: &mut Scratch) {
    let ctx = &surface.context;
    // Clearing the whole canvas first lets the browser drop the previous
    // frame's recorded drawing instead of rasterising it.
    ctx.clear_rect(0.0, 0.0, frame.width, frame.height);
    ctx.set_fill_style_str(BACKGROUND);
    ctx.fill_rect(0.0, 0.0, frame.width, frame.height);
    lane_backgrounds(ctx, frame);

    ctx.save();
    ctx.begin_path();
    ctx.rect(frame.gutter, AXIS_HEIGHT, frame.view.width_px, frame.height - AXIS_HEIGHT);
    ctx.clip();
    let (step, tick_times) = ticks(&frame.view, TICK_SPACING);
    grid(ctx, frame, &tick_times);
    partitions(ctx, frame);
    bands(ctx, frame, scratch);
    informer_bands(ctx, frame, scratch);
    waits(ctx, frame);
    // Lines across every lane go under the marks, so they never tint them.
    violation_lines(ctx, frame);
    time_lines(ctx, frame);
    marks(ctx, frame, scratch);
    tags(ctx, scratch);
    selection(ctx, frame);
    lag_readouts(ctx, frame);
    ctx.restore();

    axis(ctx, frame, step, &tick_times);
    gutter(ctx, frame);
}

/// Alternating shades per lane group, rules between groups.
fn lane_backgrounds(ctx: &CanvasRenderingContext2d, f: &Frame) {
    ctx.set_fill_style_str(GROUP_SHADE);
    for (i, lane) in f.model.lanes.iter().enumerate() {
        if lane.group % 2 == 1 {
            ctx.fill_rect(0.0, f.layout.tops[i], f.width, f.layout.heights[i]);
        }
    }
    for (i, lane) in f.model.lanes.iter().enumerate().skip(1) {
        let new_group = f.model.lanes[i - 1].group != lane.group;
        ctx.set_fill_style_str(if new_group { RULE } else { GRID });
        let x = if new_group { 0.0 } else { f.gutter };
        ctx.fill_rect(x, f.layout.tops[i], f.width - x, 1.0);
    }
    ctx.set_fill_style_str(RULE);
    ctx.fill_rect(0.0, f.layout.total_height - 1.0, f.width, 1.0);
}

fn grid(ctx: &CanvasRenderingContext2d, f: &Frame, tick_times: &[f64]) {
    ctx.set_fill_style_str(GRID);
    ctx.begin_path();
    for t in tick_times {
        ctx.rect(f.gutter + f.view.x_of(*t).round(), AXIS_HEIGHT, 1.0, f.height);
    }
    ctx.fill();
}

fn partitions(ctx: &CanvasRenderingContext2d, f: &Frame) {
    for window in &f.model.partitions {
        let from = f.view.x_of(window.from_ms as f64);
        let to = window.until_ms.map_or(f.view.width_px + EDGE_MARGIN_PX, |t| f.view.x_of(t as f64));
        if to < 0.0 || from > f.view.width_px {
            continue;
        }
        let (from, to) = (from.max(-EDGE_MARGIN_PX), to.min(f.view.width_px + EDGE_MARGIN_PX));
        let width = (to - from).max(1.0);
        ctx.set_fill_style_str(PARTITION_FILL);
        ctx.fill_rect(f.gutter + from, f.layout.tops[window.lane], width, f.layout.heights[window.lane]);
        if let Some(cache) = window.cache_lane {
            ctx.set_fill_style_str(PARTITION_FILL_FAINT);
            ctx.fill_rect(f.gutter + from, f.layout.tops[cache], width, f.layout.heights[cache]);
        }
        if width > 90.0 {
            ctx.set_font(FONT_SMALL);
            ctx.set_text_baseline("middle");
            ctx.set_text_align("left");
            ctx.set_fill_style_str(TEXT_MUTED);
            let _ =
                ctx.fill_text("partitioned from etcd", f.gutter + from.max(0.0) + 6.0, f.layout.middle(window.lane));
        }
    }
}

/// Each cache's lag as a filled step area rising from the lane's bottom,
/// on one scale for all caches, with a darker top edge.
fn bands(ctx: &CanvasRenderingContext2d, f: &Frame, scratch: &mut Scratch) {
    let max_behind = f.model.max_behind();
    if max_behind == 0 {
        return;
    }
    for band in &f.model.bands {
        band_runs(band, &f.view, &mut scratch.runs);
        let bottom = f.layout.bottom(band.lane);
        let usable = f.layout.heights[band.lane] - 3.0;
        let height = |behind: u64| (usable * behind as f64 / max_behind as f64).max(1.5);
        ctx.set_fill_style_str(STALENESS_FILL);
        ctx.begin_path();
        for run in scratch.runs.iter().filter(|r| r.behind > 0) {
            let h = height(run.behind);
            let x = f.gutter + run.from_column as f64;
            ctx.rect(x, bottom - h, (run.to_column - run.from_column) as f64, h);
        }
        ctx.fill();
        ctx.set_fill_style_str(STALENESS_EDGE);
        ctx.begin_path();
        for run in scratch.runs.iter().filter(|r| r.behind > 0 && height(r.behind) >= 3.0) {
            let h = height(run.behind);
            let x = f.gutter + run.from_column as f64;
            ctx.rect(x, bottom - h, (run.to_column - run.from_column) as f64, 1.5);
        }
        ctx.fill();
    }
}

/// Each component's informer lag (its view behind etcd) as a thin step
/// strip along its lane's bottom, on one scale for all components, one
/// value per pixel column (the most behind within it).
fn informer_bands(ctx: &CanvasRenderingContext2d, f: &Frame, scratch: &mut Scratch) {
    let max_behind = f.model.max_informer_behind();
    if max_behind == 0 {
        return;
    }
    ctx.set_fill_style_str(INFORMER_FILL);
    ctx.begin_path();
    for band in &f.model.informers {
        informer_runs(band, &f.model.store, &f.view, &mut scratch.runs);
        let bottom = f.layout.bottom(band.lane);
        let usable = (f.layout.heights[band.lane] * 0.3).min(INFORMER_BAND_MAX_PX);
        for run in scratch.runs.iter().filter(|r| r.behind > 0) {
            let h = (usable * run.behind as f64 / max_behind as f64).max(1.0);
            let x = f.gutter + run.from_column as f64;
            ctx.rect(x, bottom - h, (run.to_column - run.from_column) as f64, h);
        }
    }
    ctx.fill();
}

/// Reconciles a staleness mitigation held: a band across the upper half of
/// the component's lane from when it was held to when it went ahead, with
/// "waiting for own Pod write rv N" where it fits.
fn waits(ctx: &CanvasRenderingContext2d, f: &Frame) {
    ctx.set_font(FONT_SMALL);
    ctx.set_text_baseline("middle");
    ctx.set_text_align("left");
    for wait in &f.model.waits {
        let from = f.view.x_of(wait.from_ms as f64);
        let until = wait.until_ms.unwrap_or(f.model.end_ms);
        let to = f.view.x_of(until as f64);
        if to < -EDGE_MARGIN_PX || from > f.view.width_px + EDGE_MARGIN_PX {
            continue;
        }
        let (from, to) = (from.max(-EDGE_MARGIN_PX), to.min(f.view.width_px + EDGE_MARGIN_PX));
        let width = (to - from).max(2.0);
        let top = f.layout.tops[wait.lane] + 2.0;
        let height = (f.layout.heights[wait.lane] * 0.45).max(6.0);
        ctx.set_fill_style_str(WAIT_FILL);
        ctx.fill_rect(f.gutter + from, top, width, height);
        ctx.set_fill_style_str(WAIT_EDGE);
        ctx.fill_rect(f.gutter + from, top, 1.5, height);
        ctx.fill_rect(f.gutter + from + width - 1.5, top, 1.5, height);
        let label = wait.label();
        if width > label.len() as f64 * 5.5 + 10.0 {
            let _ = ctx.fill_text(&label, f.gutter + from.max(0.0) + 5.0, top + height / 2.0);
        }
    }
}

/// The violations' times in view, one per pixel column.
fn visible_violations<'a>(f: &'a Frame) -> impl Iterator<Item = i64> + 'a {
    let model = f.model;
    let time = move |id: &EntryId| model.time_of(*id).unwrap_or(0) as f64;
    let from = model.violations.partition_point(|id| time(id) < f.view.time_at(-EDGE_MARGIN_PX));
    let to = model.violations.partition_point(|id| time(id) <= f.view.time_at(f.view.width_px + EDGE_MARGIN_PX));
    let mut last = None;
    model.violations[from..to.max(from)].iter().filter_map(move |id| {
        let column = column_of(&f.view, time(id));
        (last.replace(column) != Some(column)).then_some(column)
    })
}

fn violation_lines(ctx: &CanvasRenderingContext2d, f: &Frame) {
    ctx.set_fill_style_str(VIOLATION_LINE);
    ctx.begin_path();
    for column in visible_violations(f) {
        ctx.rect(f.gutter + column as f64, AXIS_HEIGHT, 1.0, f.layout.total_height - AXIS_HEIGHT);
    }
    ctx.fill();
}

/// One mark per pixel column per lane, batched by kind.
fn marks(ctx: &CanvasRenderingContext2d, f: &Frame, scratch: &mut Scratch) {
    scratch.rects.resize_with(MarkKind::ALL.len(), Vec::new);
    scratch.rects.iter_mut().for_each(Vec::clear);
    scratch.tags.clear();
    // Wider marks as one zooms in, never so wide that neighbours merge into a bar.
    let base_width = (1.0 / f.view.ms_per_px).clamp(2.0, 6.0);
    for (lane, lane_marks) in f.model.marks.iter().enumerate() {
        aggregate_marks(lane_marks, &f.view, EDGE_MARGIN_PX, &mut scratch.columns);
        let middle = f.layout.middle(lane);
        let lane_height = f.layout.heights[lane];
        for mark in &scratch.columns {
            let (w, h) = match mark.kind {
                MarkKind::Violation | MarkKind::TimeTravel => (base_width + 2.0, lane_height * 0.8),
                MarkKind::Crash => (base_width + 1.0, lane_height * 0.7),
                MarkKind::Watch | MarkKind::Cache => (base_width, lane_height * 0.38),
                // Small: a note beside the reconcile, its text on hover.
                MarkKind::Log | MarkKind::KubeEvent => (base_width, lane_height * 0.3),
                _ => (base_width, lane_height * 0.55),
            };
            let x = f.gutter + mark.column as f64 + 0.5 - w / 2.0;
            let rect = Rect { x, y: middle - h / 2.0, w, h };
            // Touching marks of one kind on one lane become one rectangle:
            // the same pixels, far fewer calls into the canvas.
            match scratch.rects[mark.kind.rank()].last_mut() {
                Some(last) if last.y == rect.y && last.h == rect.h && last.x + last.w >= rect.x => {
                    last.w = rect.x + rect.w - last.x;
                }
                _ => scratch.rects[mark.kind.rank()].push(rect),
            }
            if matches!(mark.kind, MarkKind::TimeTravel | MarkKind::StaleRead | MarkKind::Violation) {
                scratch.tags.push(Tag { lane, x: x + w + 3.0, y: middle, kind: mark.kind });
            }
        }
    }
    // Least important first, so the important kinds end up on top.
    for slot in (0..MarkKind::ALL.len()).rev() {
        let rects = &scratch.rects[slot];
        if rects.is_empty() {
            continue;
        }
        ctx.set_fill_style_str(mark_colour(MarkKind::ALL[slot]));
        ctx.begin_path();
        for r in rects {
            ctx.rect(r.x, r.y, r.w, r.h);
        }
        ctx.fill();
    }
}

/// "time travel", "stale read" and "violation" beside their marks, where
/// they fit; where two collide, the more important is kept.
fn tags(ctx: &CanvasRenderingContext2d, scratch: &mut Scratch) {
    if scratch.tags.is_empty() || scratch.tags.len() > MAX_TAGS {
        return;
    }
    ctx.set_font(FONT_TAG);
    ctx.set_text_baseline("middle");
    ctx.set_text_align("left");
    scratch.tags.sort_by(|a, b| b.kind.importance().cmp(&a.kind.importance()).then(a.x.total_cmp(&b.x)));
    let mut taken: Vec<(usize, f64, f64)> = Vec::with_capacity(scratch.tags.len());
    for tag in &scratch.tags {
        let text = tag.kind.label();
        let width = ctx.measure_text(text).map_or(text.len() as f64 * 6.0, |m| m.width());
        let (from, to) = (tag.x - 8.0, tag.x + width + 4.0);
        if taken.iter().any(|(lane, a, b)| *lane == tag.lane && from < *b && *a < to) {
            continue;
        }
        taken.push((tag.lane, from, to));
        ctx.set_fill_style_str(LABEL_BACKDROP);
        ctx.fill_rect(tag.x - 2.0, tag.y - 7.0, width + 4.0, 14.0);
        ctx.set_fill_style_str(mark_colour(tag.kind));
        let _ = ctx.fill_text(text, tag.x, tag.y);
    }
}

/// The selected entry: a time line, an outline, its causes outlined and
/// arrows from each cause to it. Also the outline of the hovered mark.
fn selection(ctx: &CanvasRenderingContext2d, f: &Frame) {
    let outline = |id: EntryId, colour: &str, line_width: f64| {
        let Some((x, y)) = mark_position(f.model, f.layout, &f.view, id) else { return };
        let lane_height = f.model.lane_of(id).map_or(LANE_HEIGHT, |l| f.layout.heights[l]);
        ctx.set_stroke_style_str(colour);
        ctx.set_line_width(line_width);
        ctx.stroke_rect(f.gutter + x - 6.0, y - lane_height * 0.46, 12.0, lane_height * 0.92);
    };
    if let Some(hovered) = f.hovered.filter(|h| Some(*h) != f.selected) {
        outline(hovered, HOVER, 1.5);
    }
    let Some(selected) = f.selected else { return };
    let Some((sx, sy)) = mark_position(f.model, f.layout, &f.view, selected) else { return };
    let sx = f.gutter + sx;
    for cause in f.causes {
        outline(*cause, CAUSE, 1.5);
    }
    ctx.set_stroke_style_str(CAUSE);
    ctx.set_fill_style_str(CAUSE);
    ctx.set_line_width(1.5);
    for cause in f.causes {
        if let Some((cx, cy)) = mark_position(f.model, f.layout, &f.view, *cause) {
            arrow(ctx, (f.gutter + cx, cy), (sx, sy));
        }
    }
    outline(selected, SELECTION, 2.0);
}

/// A curved arrow from `from` to `to`, its head stopping short of the target mark.
fn arrow(ctx: &CanvasRenderingContext2d, from: (f64, f64), to: (f64, f64)) {
    let (ax, ay) = from;
    let (bx, by) = to;
    // Same lane: bow upwards; otherwise an S-curve leaving and arriving horizontally.
    let (c1, c2) = if (ay - by).abs() < 1.0 {
        let lift = 14.0 + ((bx - ax).abs() * 0.15).min(30.0);
        ((ax, ay - lift), (bx, by - lift))
    } else {
        let reach = ((bx - ax).abs() / 2.0).max(24.0);
        ((ax + reach, ay), (bx - reach, by))
    };
    let angle = (by - c2.1).atan2(bx - c2.0);
    let (tx, ty) = (bx - 7.0 * angle.cos(), by - 7.0 * angle.sin());
    ctx.begin_path();
    ctx.move_to(ax, ay);
    ctx.bezier_curve_to(c1.0, c1.1, c2.0, c2.1, tx, ty);
    ctx.stroke();
    let head = 6.0;
    ctx.begin_path();
    ctx.move_to(tx, ty);
    ctx.line_to(tx - head * (angle - 0.45).cos(), ty - head * (angle - 0.45).sin());
    ctx.line_to(tx - head * (angle + 0.45).cos(), ty - head * (angle + 0.45).sin());
    ctx.close_path();
    ctx.fill();
}

/// The selected entry's time and the scrub cursor, as lines across the lanes.
fn time_lines(ctx: &CanvasRenderingContext2d, f: &Frame) {
    let height = f.layout.total_height - AXIS_HEIGHT;
    if let Some((x, _)) = f.selected.and_then(|id| mark_position(f.model, f.layout, &f.view, id)) {
        ctx.set_fill_style_str(SELECTION_LINE);
        ctx.fill_rect(f.gutter + x - 0.5, AXIS_HEIGHT, 1.0, height);
    }
    if let Some(x) = cursor_x(f) {
        ctx.set_fill_style_str(CURSOR);
        ctx.fill_rect(f.gutter + x - 0.75, AXIS_HEIGHT, 1.5, height);
    }
}

/// Where the scrub cursor is drawn, if it is in view.
fn cursor_x(f: &Frame) -> Option<f64> {
    let x = f.view.x_of(f.cursor_ms?);
    (0.0..=f.view.width_px).contains(&x).then_some(x)
}

/// Each lagging cache's lag, written where the scrub cursor crosses its lane.
fn lag_readouts(ctx: &CanvasRenderingContext2d, f: &Frame) {
    let (Some(time), Some(x)) = (f.cursor_ms, cursor_x(f)) else { return };
    let x = f.gutter + x;
    ctx.set_font(FONT_SMALL);
    ctx.set_text_baseline("middle");
    ctx.set_text_align("left");
    let at = time.max(0.0).round() as u64;
    for band in &f.model.bands {
        let Some(sample) = band.at(time).filter(|s| s.behind() > 0) else { continue };
        let text = format!("{} behind · {} ms", sample.behind(), sample.lag_ms_at(at));
        let width = ctx.measure_text(&text).map_or(text.len() as f64 * 6.0, |m| m.width());
        let y = f.layout.tops[band.lane] + 8.0;
        ctx.set_fill_style_str(LABEL_BACKDROP);
        ctx.fill_rect(x + 4.0, y - 7.0, width + 6.0, 14.0);
        ctx.set_fill_style_str(STALENESS_EDGE);
        let _ = ctx.fill_text(&text, x + 7.0, y);
    }
}

/// The time axis: ticks in seconds, violation markers, the cursor's handle.
fn axis(ctx: &CanvasRenderingContext2d, f: &Frame, step: f64, tick_times: &[f64]) {
    ctx.save();
    ctx.begin_path();
    ctx.rect(f.gutter, 0.0, f.view.width_px, AXIS_HEIGHT);
    ctx.clip();
    ctx.set_fill_style_str(AXIS);
    ctx.fill_rect(f.gutter, 0.0, f.view.width_px, AXIS_HEIGHT);
    ctx.set_fill_style_str(RULE);
    ctx.fill_rect(f.gutter, AXIS_HEIGHT - 1.0, f.view.width_px, 1.0);

    ctx.set_font(FONT_SMALL);
    ctx.set_text_baseline("middle");
    ctx.set_text_align("left");
    for t in tick_times {
        let x = f.gutter + f.view.x_of(*t).round();
        ctx.set_fill_style_str(TEXT_MUTED);
        ctx.fill_rect(x, AXIS_HEIGHT - 7.0, 1.0, 6.0);
        let _ = ctx.fill_text(&tick_label(*t, step), x + 4.0, AXIS_HEIGHT / 2.0 - 2.0);
    }

    ctx.set_fill_style_str(mark_colour(MarkKind::Violation));
    ctx.begin_path();
    for column in visible_violations(f) {
        let x = f.gutter + column as f64 + 0.5;
        ctx.move_to(x - 5.0, AXIS_HEIGHT - 9.0);
        ctx.line_to(x + 5.0, AXIS_HEIGHT - 9.0);
        ctx.line_to(x, AXIS_HEIGHT - 1.0);
        ctx.close_path();
    }
    ctx.fill();

    if let (Some(time), Some(x)) = (f.cursor_ms, cursor_x(f)) {
        let label = fmt_time(time.max(0.0).round() as u64);
        let width = ctx.measure_text(&label).map_or(60.0, |m| m.width()) + 10.0;
        let left = within(f.gutter + x - width / 2.0, f.gutter, f.gutter + f.view.width_px - width);
        ctx.set_fill_style_str(CURSOR);
        ctx.fill_rect(left, 3.0, width, AXIS_HEIGHT - 6.0);
        ctx.set_fill_style_str(CURSOR_TEXT);
        ctx.set_text_align("center");
        let _ = ctx.fill_text(&label, left + width / 2.0, AXIS_HEIGHT / 2.0);
    }
    ctx.restore();
}

/// Lane names on the left; sub-lanes indented under the lane they belong to.
fn gutter(ctx: &CanvasRenderingContext2d, f: &Frame) {
    ctx.set_fill_style_str(GUTTER);
    ctx.fill_rect(0.0, 0.0, f.gutter, f.height);
    for (i, lane) in f.model.lanes.iter().enumerate().skip(1) {
        if f.model.lanes[i - 1].group != lane.group {
            ctx.set_fill_style_str(RULE);
            ctx.fill_rect(0.0, f.layout.tops[i], f.gutter, 1.0);
        }
    }
    ctx.set_fill_style_str(RULE);
    ctx.fill_rect(f.gutter - 1.0, 0.0, 1.0, f.height);
    ctx.fill_rect(0.0, AXIS_HEIGHT - 1.0, f.gutter, 1.0);

    ctx.set_text_baseline("middle");
    ctx.set_text_align("left");
    ctx.set_font(FONT_SMALL);
    ctx.set_fill_style_str(TEXT_MUTED);
    let _ = ctx.fill_text("time (s)", 10.0, AXIS_HEIGHT / 2.0 - 1.0);
    for (i, lane) in f.model.lanes.iter().enumerate() {
        let middle = f.layout.middle(i);
        let x = if lane.sub { 26.0 } else { 10.0 };
        if lane.sub {
            // A small elbow joining the sub-lane to the lane above.
            ctx.set_fill_style_str(RULE);
            ctx.fill_rect(15.0, f.layout.tops[i] - 4.0, 1.0, middle - f.layout.tops[i] + 4.0);
            ctx.fill_rect(15.0, middle, 7.0, 1.0);
        }
        ctx.set_font(if lane.sub { FONT_SMALL } else { FONT_LABEL });
        ctx.set_fill_style_str(if lane.sub { TEXT_MUTED } else { TEXT });
        let text = ellipsize(ctx, &lane.name, f.gutter - x - 8.0);
        let _ = ctx.fill_text(&text, x, middle);
    }
}

/// `text`, shortened with an ellipsis to fit `max_width` in the current font.
fn ellipsize<'t>(ctx: &CanvasRenderingContext2d, text: &'t str, max_width: f64) -> Cow<'t, str> {
    let width = |s: &str| ctx.measure_text(s).map_or(s.len() as f64 * 7.0, |m| m.width());
    if width(text) <= max_width {
        return Cow::Borrowed(text);
    }
    let mut end = text.len();
    while end > 0 {
        end = text.floor_char_boundary(end - 1);
        let candidate = format!("{}…", &text[..end]);
        if width(&candidate) <= max_width {
            return Cow::Owned(candidate);
        }
    }
    Cow::Borrowed("…")
}
