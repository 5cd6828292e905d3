//! Every colour, size and font the timeline uses, in one place.
//!
//! Colours are CSS strings so the canvas and the HTML around it (toolbar
//! legend, tooltip) use the very same values. A light theme: white plot,
//! slate text, saturated colours kept for what deserves attention.

use super::model::MarkKind;

/// Plot background.
pub const BACKGROUND: &str = "#ffffff";
/// Background of every other lane group, so groups read as rows.
pub const GROUP_SHADE: &str = "#f6f8fb";
/// The label gutter on the left.
pub const GUTTER: &str = "#f1f5f9";
/// Lines between lane groups and around the gutter and axis.
pub const RULE: &str = "#d9e0e8";
/// Faint lines between lanes of one group, and tick lines.
pub const GRID: &str = "#eef1f5";
/// Main text.
pub const TEXT: &str = "#0f172a";
/// Secondary text (sub-lanes, tick labels).
pub const TEXT_MUTED: &str = "#64748b";
/// Time axis background.
pub const AXIS: &str = "#f8fafc";

/// A partition window on an API server lane.
pub const PARTITION_FILL: &str = "rgba(100, 116, 139, 0.20)";
/// The same window, fainter, on that server's cache lane (the cache is frozen too).
pub const PARTITION_FILL_FAINT: &str = "rgba(100, 116, 139, 0.09)";
/// The staleness band: how far a watch cache trails the store.
pub const STALENESS_FILL: &str = "rgba(234, 88, 12, 0.30)";
/// The band's top edge, so small lags stay visible.
pub const STALENESS_EDGE: &str = "rgba(194, 65, 12, 0.85)";
/// A component's informer lag (its view behind etcd): a thin strip at its lane's bottom.
pub const INFORMER_FILL: &str = "rgba(13, 148, 136, 0.35)";
/// The tallest an informer band's strip gets.
pub const INFORMER_BAND_MAX_PX: f64 = 7.0;
/// A reconcile held by a staleness mitigation, waiting for its own write.
pub const WAIT_FILL: &str = "rgba(202, 138, 4, 0.22)";
/// The edge and label of a held reconcile's band.
pub const WAIT_EDGE: &str = "rgba(161, 98, 7, 0.95)";
/// The line across every lane at a violation.
pub const VIOLATION_LINE: &str = "rgba(220, 38, 38, 0.35)";
/// The selected entry's outline and time line.
pub const SELECTION: &str = "#0f172a";
/// The line across every lane at the selected entry's time.
pub const SELECTION_LINE: &str = "rgba(15, 23, 42, 0.22)";
/// Behind text written over the plot, so it stays legible over marks.
pub const LABEL_BACKDROP: &str = "rgba(255, 255, 255, 0.88)";
/// Outline of the selected entry's causes, and the arrows from them.
pub const CAUSE: &str = "#2563eb";
/// Outline of the mark under the pointer.
pub const HOVER: &str = "#475569";
/// The scrub cursor.
pub const CURSOR: &str = "#7c3aed";
/// Text on the scrub cursor's handle.
pub const CURSOR_TEXT: &str = "#ffffff";

/// Fonts, as CSS `font` values.
pub const FONT_LABEL: &str = "12px system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif";
/// Sub-lane labels and tick labels.
pub const FONT_SMALL: &str = "11px system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif";
/// Tags next to notable marks ("time travel", "stale read").
pub const FONT_TAG: &str = "bold 10px system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif";

/// Width of the label gutter on a wide canvas, in CSS pixels.
pub const GUTTER_WIDTH: f64 = 168.0;
/// The narrowest the gutter gets (a phone), in CSS pixels: room for
/// "kubelet-no…" while the plot keeps most of the screen.
pub const MIN_GUTTER_WIDTH: f64 = 88.0;

/// The label gutter's width on a canvas `canvas_width` CSS pixels wide: at
/// most [`GUTTER_WIDTH`], and never more than about a third of the canvas,
/// so the plot gets most of a narrow screen.
pub fn gutter_width(canvas_width: f64) -> f64 {
    super::viewport::within(canvas_width * 0.3, MIN_GUTTER_WIDTH, GUTTER_WIDTH)
}
/// Height of the time axis at the top.
pub const AXIS_HEIGHT: f64 = 26.0;
/// Height of a main lane.
pub const LANE_HEIGHT: f64 = 26.0;
/// Height of a sub-lane (a watch cache, a node's runtime).
pub const SUB_LANE_HEIGHT: f64 = 22.0;
/// How close (in CSS pixels) a click must be to a mark to pick it.
pub const PICK_RADIUS: f64 = 6.0;
/// Minimum spacing between time axis ticks.
pub const TICK_SPACING: f64 = 90.0;

/// The colour of a mark of this kind.
pub fn mark_colour(kind: MarkKind) -> &'static str {
    match kind {
        MarkKind::Violation => "#dc2626",
        // Still red, a shade deeper, so the two read apart in the legend.
        MarkKind::TimeTravel => "#be123c",
        MarkKind::Crash => "#111827",
        MarkKind::Write => "#2563eb",
        MarkKind::StaleRead => "#ea580c",
        MarkKind::Failure => "#d97706",
        MarkKind::Container => "#4f46e5",
        MarkKind::Lifecycle => "#9333ea",
        MarkKind::Partition => "#475569",
        MarkKind::Script => "#0f766e",
        MarkKind::KubeEvent => "#0d9488",
        MarkKind::Log => "#ca8a04",
        MarkKind::Reconcile => "#16a34a",
        MarkKind::Read => "#0891b2",
        MarkKind::Cache => "#94a3b8",
        MarkKind::Watch => "#a3b1c2",
    }
}

/// The component's root: the toolbar above the plot.
pub const ROOT_STYLE: &str = "display:flex;flex-direction:column;gap:6px;position:relative;min-width:0;";
/// The toolbar row.
pub const TOOLBAR_STYLE: &str = "display:flex;flex-wrap:wrap;align-items:center;gap:4px;\
    font:12px system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;color:#0f172a;";
/// Space between the toolbar's button groups.
pub const TOOLBAR_GAP_STYLE: &str = "display:inline-block;width:8px;";
/// A toolbar button.
pub const BUTTON_STYLE: &str = "font:inherit;line-height:1.4;padding:2px 9px;border:1px solid #cbd5e1;\
    border-radius:4px;background:#ffffff;color:#0f172a;cursor:pointer;";
/// The legend, at the toolbar's right.
pub const LEGEND_STYLE: &str =
    "display:flex;flex-wrap:wrap;gap:4px 12px;margin-left:auto;color:#64748b;font-size:11px;";
/// A legend swatch (its background colour is appended).
pub const SWATCH_STYLE: &str =
    "display:inline-block;width:9px;height:9px;border-radius:2px;margin-right:4px;vertical-align:-1px;";
/// The box around the canvas.
pub const PLOT_STYLE: &str = "position:relative;border:1px solid #d9e0e8;background:#ffffff;";
/// The tooltip (its position is appended).
pub const TOOLTIP_STYLE: &str = "position:absolute;z-index:10;pointer-events:none;max-width:440px;\
    padding:6px 9px;background:#ffffff;color:#0f172a;border:1px solid #cbd5e1;border-radius:4px;\
    box-shadow:0 4px 14px rgba(15,23,42,0.14);font:12px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;";
/// The tooltip's first line.
pub const TOOLTIP_HEADING_STYLE: &str = "font-weight:600;margin-bottom:2px;";
/// Nearer than this to the canvas's right edge, the tooltip opens to the pointer's left.
pub const TOOLTIP_FLIP_PX: f64 = 360.0;
/// Present for scripts and screen readers, invisible on screen.
pub const VISUALLY_HIDDEN_STYLE: &str = "position:absolute;width:1px;height:1px;padding:0;margin:-1px;\
    overflow:hidden;clip:rect(0,0,0,0);white-space:nowrap;border:0;";
