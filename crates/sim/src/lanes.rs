//! The run's lanes: one per place the scenario has, written into the trace
//! before the run with what each place is (see [`recon_trace::LaneRole`]),
//! so that no reader has to guess topology from names.

use recon_scenario::Scenario;
use recon_trace::{LaneId, LaneRole, Trace};

use crate::ids::{ComponentId, NodeId, ServerId};

/// The lane of each place, by the simulator's own indices.
pub(crate) struct Lanes {
    /// The script: user actions and faults.
    pub script: LaneId,
    /// The store.
    pub store: LaneId,
    /// The safety and liveness checks.
    pub checks: LaneId,
    servers: Vec<LaneId>,
    caches: Vec<LaneId>,
    components: Vec<LaneId>,
    nodes: Vec<LaneId>,
}

impl Lanes {
    /// An API server's lane.
    pub fn server(&self, id: ServerId) -> LaneId {
        self.servers[id.index()]
    }

    /// An API server's watch cache's lane.
    pub fn cache(&self, id: ServerId) -> LaneId {
        self.caches[id.index()]
    }

    /// A component's lane.
    pub fn component(&self, id: ComponentId) -> LaneId {
        self.components[id.index()]
    }

    /// A node's lane.
    pub fn node(&self, id: NodeId) -> LaneId {
        self.nodes[id.index()]
    }

    /// Adds the scenario's lanes to `trace`, in the order a reader shows
    /// them: the script, the store, each API server above its cache, the
    /// controllers, each node's agents above the node, the checks.
    pub fn write(scenario: &Scenario, trace: &mut Trace) -> Lanes {
        let script = trace.add_lane("script", LaneRole::Script);
        let store = trace.add_lane("etcd", LaneRole::Store);
        let mut servers = Vec::new();
        let mut caches = Vec::new();
        for server in &scenario.api_servers {
            let id = trace.add_lane(server.name.clone(), LaneRole::ApiServer);
            servers.push(id);
            caches.push(trace.add_lane(format!("{} cache", server.name), LaneRole::Cache { api_server: id }));
        }
        // Each component's node, found once (by name, through an index:
        // at thousands of nodes a scan per component per node was cubic).
        let node_index: std::collections::BTreeMap<&str, usize> =
            scenario.nodes.iter().enumerate().rev().map(|(n, node)| (node.name.as_str(), n)).collect();
        let node_of: Vec<Option<usize>> = scenario
            .components
            .iter()
            .map(|c| c.node.as_deref().and_then(|node| node_index.get(node).copied()))
            .collect();
        let mut agents_of: Vec<Vec<usize>> = vec![Vec::new(); scenario.nodes.len()];
        let mut components = vec![None; scenario.components.len()];
        for (c, component) in scenario.components.iter().enumerate() {
            match node_of[c] {
                Some(n) => agents_of[n].push(c),
                None => components[c] = Some(trace.add_lane(component.name.clone(), LaneRole::Controller)),
            }
        }
        let mut nodes = Vec::new();
        for (n, node) in scenario.nodes.iter().enumerate() {
            // The node's lane id is known before it is added: after its agents.
            let agents = std::mem::take(&mut agents_of[n]);
            let node_lane = LaneId::from_index(trace.lanes.len() + agents.len());
            for c in agents {
                let name = scenario.components[c].name.clone();
                components[c] = Some(trace.add_lane(name, LaneRole::NodeAgent { node: node_lane }));
            }
            nodes.push(trace.add_lane(node.name.clone(), LaneRole::Node));
            debug_assert_eq!(nodes[n], node_lane);
        }
        let checks = trace.add_lane("checks", LaneRole::Checks);
        let components = components.into_iter().map(|l| l.expect("every component has a lane")).collect();
        Lanes { script, store, checks, servers, caches, components, nodes }
    }
}
