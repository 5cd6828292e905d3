//! Lanes: where things happen in a run, and what each place is.
//!
//! The simulator writes one lane per place the scenario has (the script,
//! the store, each API server and its watch cache, each component, each
//! node, the checks) before the run, with its [`LaneRole`]; every entry
//! names its lane by [`LaneId`]. So a reader never infers topology from
//! names: the role says that `kubelet-node-1` is the agent of `node-1`, and
//! which cache belongs to which API server.

use serde::{Deserialize, Serialize};

/// Index of a lane in [`crate::Trace::lanes`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct LaneId(pub u32);

impl LaneId {
    /// The lane at this position.
    pub fn from_index(i: usize) -> LaneId {
        LaneId(u32::try_from(i).expect("fewer than 2^32 lanes"))
    }

    /// Its position in the lane table.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// One place where things happen.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Lane {
    /// Its name, as the scenario spells it (`etcd`, `apiserver-2 cache`).
    pub name: String,
    /// What it is.
    #[serde(flatten)]
    pub role: LaneRole,
}

/// What a lane stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "role")]
pub enum LaneRole {
    /// The scenario's script: user actions (kubectl) and faults.
    Script,
    /// The store (etcd).
    Store,
    /// An API server: partitions, and the reads it served to kubectl.
    ApiServer,
    /// An API server's watch cache.
    #[serde(rename_all = "camelCase")]
    Cache {
        /// The API server's lane.
        api_server: LaneId,
    },
    /// A component that is not tied to a node.
    Controller,
    /// A component that runs on a node (its kubelet).
    #[serde(rename_all = "camelCase")]
    NodeAgent {
        /// The node's lane.
        node: LaneId,
    },
    /// A node's container runtime.
    Node,
    /// The safety and liveness checks.
    Checks,
}

impl LaneRole {
    /// The lane this one belongs under, if any: a cache's API server, an
    /// agent's node.
    pub fn owner(self) -> Option<LaneId> {
        match self {
            LaneRole::Cache { api_server } => Some(api_server),
            LaneRole::NodeAgent { node } => Some(node),
            _ => None,
        }
    }
}
