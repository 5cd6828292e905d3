//! Where lanes sit vertically, and which mark is under the pointer.

use recon_trace::EntryId;

use super::columns::column_of;
use super::lanes::Lane;
use super::model::TimelineModel;
use super::theme::{AXIS_HEIGHT, LANE_HEIGHT, SUB_LANE_HEIGHT};
use super::viewport::Viewport;

/// The vertical layout: the axis on top, then the lanes.
#[derive(Clone, Debug, PartialEq)]
pub struct LaneLayout {
    /// Each lane's top edge, in CSS pixels from the canvas top.
    pub tops: Vec<f64>,
    /// Each lane's height.
    pub heights: Vec<f64>,
    /// The canvas height that shows every lane.
    pub total_height: f64,
}

impl LaneLayout {
    /// Stacks the lanes under the axis; sub-lanes are shorter.
    pub fn new(lanes: &[Lane]) -> LaneLayout {
        let mut tops = Vec::with_capacity(lanes.len());
        let mut heights = Vec::with_capacity(lanes.len());
        let mut y = AXIS_HEIGHT;
        for lane in lanes {
            let height = if lane.sub { SUB_LANE_HEIGHT } else { LANE_HEIGHT };
            tops.push(y);
            heights.push(height);
            y += height;
        }
        LaneLayout { tops, heights, total_height: y + 1.0 }
    }

    /// The lane at height `y`, if any.
    pub fn lane_at(&self, y: f64) -> Option<usize> {
        let i = self.tops.partition_point(|top| *top <= y).checked_sub(1)?;
        (y < self.tops[i] + self.heights[i]).then_some(i)
    }

    /// A lane's vertical middle.
    pub fn middle(&self, lane: usize) -> f64 {
        self.tops[lane] + self.heights[lane] / 2.0
    }

    /// A lane's bottom edge.
    pub fn bottom(&self, lane: usize) -> f64 {
        self.tops[lane] + self.heights[lane]
    }
}

/// The mark nearest to plot point (`x`, `y`) within `radius_px` columns, on
/// the lane under `y`. Among marks equally near, the one drawn (the most
/// important) wins, so clicking what you see selects it.
pub fn hit_test(
    model: &TimelineModel,
    layout: &LaneLayout,
    view: &Viewport,
    x: f64,
    y: f64,
    radius_px: f64,
) -> Option<EntryId> {
    let lane = layout.lane_at(y)?;
    let marks = model.marks.get(lane)?;
    let pointer = x.floor() as i64;
    let range = marks.range(view.time_at(x - radius_px - 1.0), view.time_at(x + radius_px + 1.0));
    let radius = radius_px.round() as i64;
    range
        .filter_map(|i| {
            let distance = (column_of(view, marks.times[i] as f64) - pointer).abs();
            (distance <= radius).then_some((distance, std::cmp::Reverse(marks.kinds[i].importance()), i))
        })
        .min()
        .map(|(_, _, i)| marks.ids[i])
}

/// Where an entry's mark is drawn, in plot coordinates (x at its column's middle).
pub fn mark_position(model: &TimelineModel, layout: &LaneLayout, view: &Viewport, id: EntryId) -> Option<(f64, f64)> {
    let lane = model.lane_of(id)?;
    let time = model.time_of(id)? as f64;
    Some((column_of(view, time) as f64 + 0.5, layout.middle(lane)))
}
