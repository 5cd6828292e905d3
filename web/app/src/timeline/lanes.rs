//! Which lanes the timeline shows, and in what order.
//!
//! The trace carries its lanes with their roles, written by the simulator
//! from the scenario in the order the timeline reads top-down: what the
//! user did, the store, each API server above its cache, the controllers,
//! then each node's agent above the node's runtime, and the checks. Here
//! they only get their rows: which are shown (the fixed topology always,
//! the rest when something happened on them), which belong together, and
//! which are drawn beneath another.

use recon_trace::{LaneId, Trace};

pub use recon_trace::LaneRole;

/// One row of the timeline.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lane {
    /// The trace's lane this row shows.
    pub id: LaneId,
    /// The name shown in the gutter and in `data-lanes`.
    pub name: String,
    /// What it stands for, as the trace says.
    pub role: LaneRole,
    /// The name of the lane it belongs under: a cache's API server, an
    /// agent's node.
    pub owner: Option<String>,
    /// Lanes that belong together (a server and its cache, a node and its
    /// agents) share a group; groups alternate background shades.
    pub group: usize,
    /// Drawn indented and lower beneath the lane it belongs to.
    pub sub: bool,
}

/// The rows of a trace, in display order, and the row of each trace lane
/// (`None` for a lane not shown: nothing happened on it).
pub fn derive_lanes(trace: &Trace) -> (Vec<Lane>, Vec<Option<usize>>) {
    let mut used = vec![false; trace.lanes.len()];
    for entry in &trace.entries {
        if let Some(u) = used.get_mut(entry.lane.index()) {
            *u = true;
        }
    }
    let shown = |i: usize| match trace.lanes[i].role {
        // The topology the scenario declares is shown even when quiet.
        LaneRole::Script | LaneRole::Store | LaneRole::ApiServer | LaneRole::Node => true,
        _ => used[i],
    };
    // A node is drawn beneath its agents when one of them is shown.
    let has_agent = |node: usize| {
        trace
            .lanes
            .iter()
            .enumerate()
            .any(|(i, l)| l.role == LaneRole::NodeAgent { node: LaneId::from_index(node) } && used[i])
    };
    let mut lanes: Vec<Lane> = Vec::new();
    let mut row_of = vec![None; trace.lanes.len()];
    let mut group = 0;
    for (i, lane) in trace.lanes.iter().enumerate().filter(|(i, _)| shown(*i)) {
        let previous = lanes.last();
        // A cache joins its server's group; a node joins its agents'; every
        // other lane starts a group, except an agent following another
        // agent of the same node.
        let joins = match (lane.role, previous.map(|p| p.role)) {
            (LaneRole::Cache { api_server }, Some(_)) => previous.is_some_and(|p| p.id == api_server),
            (LaneRole::Node, Some(LaneRole::NodeAgent { node })) => node.index() == i,
            (LaneRole::NodeAgent { node }, Some(LaneRole::NodeAgent { node: other })) => node == other,
            _ => false,
        };
        if !joins && !lanes.is_empty() {
            group += 1;
        }
        let sub = match lane.role {
            LaneRole::Cache { .. } => joins,
            LaneRole::Node => has_agent(i),
            _ => false,
        };
        let owner = lane.role.owner().map(|o| trace.lane(o).name.clone());
        row_of[i] = Some(lanes.len());
        lanes.push(Lane { id: LaneId::from_index(i), name: lane.name.clone(), role: lane.role, owner, group, sub });
    }
    (lanes, row_of)
}
