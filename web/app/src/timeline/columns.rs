//! Pixel-column aggregation: however many marks or lag samples fall on one
//! pixel, a frame draws one thing there, and the one that matters.
//!
//! Both functions scan only the visible stretch (found by binary search) and
//! write into a buffer the caller keeps between frames, so a frame allocates
//! nothing once warmed up.

use recon_trace::EntryId;

use super::model::{LaneMarks, MarkKind, range_of};
use super::staleness::{InformerBand, StalenessBand, StoreRevisions};
use super::viewport::Viewport;

/// The mark drawn in one pixel column of a lane.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ColumnMark {
    /// The column: whole CSS pixels from the plot's left edge.
    pub column: i64,
    /// The entry drawn: the most important in the column (the earliest among equals).
    pub id: EntryId,
    /// Its kind.
    pub kind: MarkKind,
    /// How many marks share the column.
    pub count: u32,
}

/// The pixel column a time falls in.
pub fn column_of(view: &Viewport, time_ms: f64) -> i64 {
    view.x_of(time_ms).floor() as i64
}

/// One lane's visible marks, one per pixel column, in `out` (cleared first).
/// `margin_px` extends the scan past both edges so marks cut by the edge still show.
/// Zoomed out, it reads the lane's summary ([`LaneMarks::summary_for`])
/// instead of every mark.
pub fn aggregate_marks(marks: &LaneMarks, view: &Viewport, margin_px: f64, out: &mut Vec<ColumnMark>) {
    out.clear();
    let (from, to) = (view.time_at(-margin_px), view.time_at(view.width_px + margin_px));
    match marks.summary_for(view.ms_per_px) {
        Some(summary) => gather(summary.rows(range_of(&summary.times, from, to)), view, out),
        None => gather(marks.rows(marks.range(from, to)), view, out),
    }
}

/// Folds `(time, kind, id, count)` rows, sorted by time, into one mark per
/// pixel column. The hot loop of a zoomed-out frame: locals only.
fn gather(rows: impl Iterator<Item = (u64, MarkKind, EntryId, u32)>, view: &Viewport, out: &mut Vec<ColumnMark>) {
    let mut current: Option<ColumnMark> = None;
    for (time, kind, id, count) in rows {
        let column = column_of(view, time as f64);
        match &mut current {
            Some(mark) if mark.column == column => {
                mark.count += count;
                if kind.importance() > mark.kind.importance() {
                    mark.kind = kind;
                    mark.id = id;
                }
            }
            _ => {
                out.extend(current.take());
                current = Some(ColumnMark { column, id, kind, count });
            }
        }
    }
    out.extend(current);
}

/// A stretch of whole pixel columns over which a cache is equally far behind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BandRun {
    /// First column.
    pub from_column: i64,
    /// One past the last column.
    pub to_column: i64,
    /// Revisions behind: the most within any column of the run.
    pub behind: u64,
}

/// A band's visible lag as runs of columns, in `out` (cleared first). A
/// column shows the most the cache was behind anywhere within it, so a lag
/// shorter than a pixel still shows; adjacent equal columns merge.
pub fn band_runs(band: &StalenessBand, view: &Viewport, out: &mut Vec<BandRun>) {
    out.clear();
    let (from, to) = (view.time_at(-1.0), view.time_at(view.width_px + 1.0));
    let first = band.samples.partition_point(|s| (s.time_ms as f64) <= from).saturating_sub(1);
    let limit = view.width_px.ceil() as i64 + 1;
    for i in first..band.samples.len() {
        let sample = &band.samples[i];
        if sample.time_ms as f64 > to {
            break;
        }
        let start = view.x_of(sample.time_ms as f64).floor().max(-1.0) as i64;
        let end = (view.x_of(band.sample_end(i) as f64).ceil() as i64).min(limit);
        add_run(out, start, end.max(start + 1), sample.behind());
    }
}

/// A component's informer lag (see [`InformerBand`]) over the visible
/// columns, as [`band_runs`] does for a cache: each column shows the most
/// it was behind within it. One question per column
/// ([`InformerBand::max_behind_in`]), so a frame costs the same whatever
/// number of writes the view spans.
pub fn informer_runs(band: &InformerBand, store: &StoreRevisions, view: &Viewport, out: &mut Vec<BandRun>) {
    out.clear();
    let limit = view.width_px.ceil() as i64 + 1;
    for column in -1..limit {
        let (from, to) = (view.time_at(column as f64), view.time_at(column as f64 + 1.0));
        add_run(out, column, column + 1, band.max_behind_in(store, from, to));
    }
}

/// Adds `[from, to)` at `behind`, where it overlaps the runs before keeping
/// the larger value.
fn add_run(out: &mut Vec<BandRun>, mut from: i64, to: i64, behind: u64) {
    while let Some(last) = out.last_mut() {
        if from >= last.to_column {
            break;
        }
        if behind <= last.behind {
            from = last.to_column; // the overlap already shows as much or more
            break;
        }
        last.to_column = from;
        if last.to_column <= last.from_column {
            out.pop();
        } else {
            break;
        }
    }
    if to <= from {
        return;
    }
    match out.last_mut() {
        Some(last) if last.to_column == from && last.behind == behind => last.to_column = to,
        _ => out.push(BandRun { from_column: from, to_column: to, behind }),
    }
}
