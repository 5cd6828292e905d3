//! Which stretch of time the plot shows, and the arithmetic of panning and
//! zooming it; the time axis's ticks.
//!
//! Coordinates are CSS pixels from the left edge of the plot (right of the
//! label gutter); times are virtual milliseconds, as `f64` so that zooming
//! in below a millisecond per pixel stays smooth.

/// The closest zoom: 200 pixels per millisecond.
pub const MIN_MS_PER_PX: f64 = 0.005;
/// The shortest span "fit" will show, so a one-instant trace is not infinitely zoomed.
const MIN_FIT_SPAN_MS: f64 = 10.0;
/// Room left on each side of the trace when fitting, as a share of the span.
const FIT_PADDING: f64 = 0.02;
/// How far out one can zoom, relative to "fit all".
const MAX_ZOOM_OUT: f64 = 2.0;

/// The visible stretch of time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Viewport {
    /// Time at the plot's left edge.
    pub start_ms: f64,
    /// Milliseconds per CSS pixel.
    pub ms_per_px: f64,
    /// Width of the plot in CSS pixels.
    pub width_px: f64,
}

/// The times a viewport is kept around: the run's first and last entries.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Span {
    /// The first entry's time.
    pub start_ms: f64,
    /// The last entry's time.
    pub end_ms: f64,
}

impl Span {
    /// A span from the run's first to last entry.
    pub fn new(start_ms: u64, end_ms: u64) -> Span {
        Span { start_ms: start_ms as f64, end_ms: end_ms.max(start_ms) as f64 }
    }

    fn padded(self) -> (f64, f64) {
        let length = (self.end_ms - self.start_ms).max(MIN_FIT_SPAN_MS);
        let middle = (self.start_ms + self.end_ms) / 2.0;
        let half = length * (0.5 + FIT_PADDING);
        (middle - half, middle + half)
    }
}

impl Viewport {
    /// Shows the whole span, with a little room on each side.
    pub fn fit(span: Span, width_px: f64) -> Viewport {
        let width_px = width_px.max(1.0);
        let (from, to) = span.padded();
        Viewport { start_ms: from, ms_per_px: (to - from) / width_px, width_px }
    }

    /// Whether this is the "fit all" view of `span` (as [`Viewport::fit`] makes it).
    pub fn shows_all(&self, span: Span) -> bool {
        let fit = Viewport::fit(span, self.width_px);
        (self.start_ms - fit.start_ms).abs() < 1e-6 && (self.ms_per_px / fit.ms_per_px - 1.0).abs() < 1e-9
    }

    /// Time at the plot's right edge.
    pub fn end_ms(&self) -> f64 {
        self.start_ms + self.width_px * self.ms_per_px
    }

    /// Where a time is drawn.
    pub fn x_of(&self, time_ms: f64) -> f64 {
        (time_ms - self.start_ms) / self.ms_per_px
    }

    /// The time under a pixel.
    pub fn time_at(&self, x: f64) -> f64 {
        self.start_ms + x * self.ms_per_px
    }

    /// The moment under a pixel, in whole milliseconds, never before 0 (the
    /// fit's padding starts a little before the run).
    pub fn moment_at(&self, x: f64) -> u64 {
        self.time_at(x).round().max(0.0) as u64
    }

    /// Zooms by `factor` (above 1 zooms in) keeping the time under `x` where it is.
    pub fn zoom_at(&mut self, x: f64, factor: f64, span: Span) {
        if !(factor.is_finite() && factor > 0.0) {
            return;
        }
        let anchor = self.time_at(x);
        self.ms_per_px = within(self.ms_per_px / factor, MIN_MS_PER_PX, self.max_ms_per_px(span));
        self.start_ms = anchor - x * self.ms_per_px;
        self.keep_near(span);
    }

    /// Moves the content `dx` pixels to the right (a drag to the right shows earlier times).
    pub fn pan_by_px(&mut self, dx: f64, span: Span) {
        self.start_ms -= dx * self.ms_per_px;
        self.keep_near(span);
    }

    /// Scrolls so `time_ms` is at least `margin_px` inside the plot; centres
    /// it if it was outside. Returns whether the view moved.
    pub fn reveal(&mut self, time_ms: f64, margin_px: f64, span: Span) -> bool {
        let x = self.x_of(time_ms);
        let margin = margin_px.min(self.width_px / 2.0);
        if x >= margin && x <= self.width_px - margin {
            return false;
        }
        let before = self.start_ms;
        self.start_ms = time_ms - self.width_px / 2.0 * self.ms_per_px;
        self.keep_near(span);
        self.start_ms != before
    }

    /// Follows two fingers: the time that was under their midpoint
    /// `from_x` stays under it as it moves to `to_x`, and the view zooms
    /// by how much farther apart they are (`to_distance / from_distance`).
    pub fn pinch(&mut self, from_x: f64, from_distance: f64, to_x: f64, to_distance: f64, span: Span) {
        let anchor = self.time_at(from_x);
        if from_distance > 1.0 && to_distance > 1.0 {
            self.ms_per_px =
                within(self.ms_per_px * from_distance / to_distance, MIN_MS_PER_PX, self.max_ms_per_px(span));
        }
        self.start_ms = anchor - to_x * self.ms_per_px;
        self.keep_near(span);
    }

    /// Follows a new plot width, keeping the same stretch of time in view
    /// (so a fitted run stays fitted).
    pub fn resize(&mut self, width_px: f64, span: Span) {
        let shown_ms = self.width_px * self.ms_per_px;
        self.width_px = width_px.max(1.0);
        self.ms_per_px = within(shown_ms / self.width_px, MIN_MS_PER_PX, self.max_ms_per_px(span));
        self.keep_near(span);
    }

    /// The farthest zoom out; never closer than [`MIN_MS_PER_PX`], so a very
    /// wide plot of a very short run still has a valid zoom range.
    fn max_ms_per_px(&self, span: Span) -> f64 {
        (Viewport::fit(span, self.width_px).ms_per_px * MAX_ZOOM_OUT).max(MIN_MS_PER_PX)
    }

    /// Keeps the view's centre within the run, so it cannot be lost off either end.
    fn keep_near(&mut self, span: Span) {
        let half = self.width_px / 2.0 * self.ms_per_px;
        let centre = within(self.start_ms + half, span.start_ms, span.end_ms);
        self.start_ms = centre - half;
    }
}

/// `value` kept within `[low, high]`; where the range is empty (`high <
/// low`, as when a label is wider than a narrow plot) the answer is `low`.
/// Unlike `f64::clamp` it never panics: drawing code must survive any size.
pub fn within(value: f64, low: f64, high: f64) -> f64 {
    value.min(high).max(low)
}

/// The time axis's ticks for a viewport: a round step at least
/// `min_spacing_px` apart, and the ticks in view (none before time 0).
pub fn ticks(view: &Viewport, min_spacing_px: f64) -> (f64, Vec<f64>) {
    let step = tick_step(view.ms_per_px, min_spacing_px);
    let first = (view.start_ms.max(0.0) / step).ceil() * step;
    let mut times = Vec::new();
    let mut k = 0.0;
    loop {
        let t = first + k * step;
        if t > view.end_ms() {
            break;
        }
        times.push(t);
        k += 1.0;
    }
    (step, times)
}

/// The smallest of 1, 2, 5 × 10ⁿ milliseconds (at least 1 ms) that spaces ticks `min_spacing_px` apart.
pub fn tick_step(ms_per_px: f64, min_spacing_px: f64) -> f64 {
    let wanted = (ms_per_px * min_spacing_px).max(1.0);
    let mut decade = 1.0;
    loop {
        for multiple in [1.0, 2.0, 5.0] {
            if decade * multiple >= wanted {
                return decade * multiple;
            }
        }
        decade *= 10.0;
    }
}

/// A tick's label in seconds, with as many decimals as the step needs: `5s`, `5.2s`, `5.25s`, `5.125s`.
pub fn tick_label(time_ms: f64, step_ms: f64) -> String {
    let decimals = if step_ms >= 1000.0 {
        0
    } else if step_ms >= 100.0 {
        1
    } else if step_ms >= 10.0 {
        2
    } else {
        3
    };
    format!("{:.*}s", decimals, time_ms / 1000.0)
}
