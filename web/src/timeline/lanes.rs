//! Which lanes a trace has, and in what order.
//!
//! The trace names a lane on each entry, but not what kind of thing each lane
//! is; that is read from the events: API servers from the servers named in
//! reads, writes and partitions, watch caches from cache events, nodes from
//! container events (and the simulator's own Node objects), node agents from
//! the reconcile that started or stopped a node's container. The order reads
//! top-down like the control plane: what the user did, the store, each API
//! server above its cache, the controllers, then each node's agent above the
//! node's runtime.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

use recon_trace::ServedFrom;
use recon_trace::{Entry, Event, Trace};

/// The lane of the scenario's script (user actions and faults).
pub const SCRIPT_LANE: &str = "script";
/// The lane of the store.
pub const STORE_LANE: &str = "etcd";
/// The lane the simulator's safety checks report on.
pub const CHECKS_LANE: &str = "checks";
/// What a watch cache's lane name adds to its API server's name.
const CACHE_SUFFIX: &str = " cache";
/// Who writes the objects a scenario starts with.
const BOOTSTRAP_WRITER: &str = "scenario";

/// What a lane stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LaneRole {
    /// User actions and faults.
    Script,
    /// The store (etcd).
    Store,
    /// An API server: partitions, and reads it served to `kubectl`.
    ApiServer,
    /// An API server's watch cache.
    Cache,
    /// A controller that is not tied to a node.
    Controller,
    /// A node's agent (its kubelet).
    NodeAgent,
    /// A node's container runtime.
    Node,
    /// The safety checks.
    Checks,
    /// A lane the trace names that none of the above explains.
    Other,
}

/// One row of the timeline.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lane {
    /// The name shown in the gutter and in `data-lanes`.
    pub name: String,
    /// What it stands for.
    pub role: LaneRole,
    /// The API server of a server or cache lane; the node of a node or agent lane.
    pub owner: Option<String>,
    /// Lanes that belong together (a server and its cache, a node and its
    /// agent) share a group; groups alternate background shades.
    pub group: usize,
    /// Drawn indented and lower beneath the lane it belongs to.
    pub sub: bool,
}

/// The lane name of an API server's watch cache.
pub fn cache_lane_name(api_server: &str) -> String {
    format!("{api_server}{CACHE_SUFFIX}")
}

/// The lane an entry is drawn on: its own, except that cache events go to
/// the cache's lane (the trace files them under the API server) and
/// container events to the node's runtime.
pub fn lane_name_of(entry: &Entry) -> Cow<'_, str> {
    match &entry.event {
        Event::CacheApply { api_server, .. } | Event::CacheRelist { api_server, .. } => {
            Cow::Owned(cache_lane_name(api_server))
        }
        Event::ContainerStarted { node, .. } | Event::ContainerStopped { node, .. } => Cow::Borrowed(node),
        _ => Cow::Borrowed(&entry.lane),
    }
}

/// Names in order of first appearance, without repeats.
#[derive(Default)]
struct Appearances {
    names: Vec<String>,
    seen: BTreeSet<String>,
}

impl Appearances {
    fn add(&mut self, name: &str) {
        if !name.is_empty() && !self.seen.contains(name) {
            self.seen.insert(name.to_string());
            self.names.push(name.to_string());
        }
    }

    fn contains(&self, name: &str) -> bool {
        self.seen.contains(name)
    }
}

/// What the events say about each name.
#[derive(Default)]
struct Census {
    servers: Appearances,
    cached: BTreeSet<String>,
    nodes: Appearances,
    components: Appearances,
    /// Component → the node whose containers it starts or stops.
    agent_of: BTreeMap<String, String>,
    /// Every drawn lane, in order of first appearance.
    drawn: Appearances,
}

impl Census {
    fn take(trace: &Trace) -> Census {
        let mut c = Census::default();
        for entry in &trace.entries {
            c.drawn.add(&lane_name_of(entry));
            match &entry.event {
                Event::Partition { api_server, .. } => c.servers.add(api_server),
                Event::StoreWrite { via, by, key, .. } => {
                    c.servers.add(via);
                    // The simulator writes a Node object for each simulated node at start.
                    if by == BOOTSTRAP_WRITER && key.kind == "Node" {
                        c.nodes.add(&key.name);
                    }
                }
                Event::WriteFailed { via, .. } => c.servers.add(via),
                Event::CacheApply { api_server, .. } | Event::CacheRelist { api_server, .. } => {
                    c.servers.add(api_server);
                    c.cached.insert(api_server.clone());
                }
                Event::ListServed { component, api_server, served_from, .. } => {
                    c.servers.add(api_server);
                    if *served_from == ServedFrom::Cache {
                        c.cached.insert(api_server.clone());
                    }
                    // kubectl's reads are drawn on the API server's lane.
                    if *component == entry.lane {
                        c.components.add(component);
                    }
                }
                Event::RequestFailed { component, api_server, .. }
                | Event::WatchDelivered { component, api_server, .. }
                | Event::ComponentStarted { component, api_server, .. } => {
                    c.servers.add(api_server);
                    c.components.add(component);
                }
                Event::Failover { component, from, to } => {
                    c.components.add(component);
                    c.servers.add(from);
                    c.servers.add(to);
                }
                Event::ComponentCrashed { component, .. }
                | Event::Leadership { component, .. }
                | Event::Reconcile { component, .. }
                | Event::ActionRefused { component, .. } => c.components.add(component),
                Event::ContainerStarted { node, .. } | Event::ContainerStopped { node, .. } => {
                    c.nodes.add(node);
                    // The reconcile that asked for it names the node's agent.
                    let asked_by = entry.causes.first().and_then(|id| trace.get(*id));
                    if let Some(Entry { event: Event::Reconcile { component, .. }, .. }) = asked_by {
                        c.agent_of.entry(component.clone()).or_insert_with(|| node.clone());
                    }
                }
                Event::Script { .. } | Event::Compaction { .. } | Event::Violation { .. } | Event::Halted { .. } => {}
            }
        }
        // An agent that never touched a container is found by its name:
        // `kubelet-node-1` belongs to `node-1`.
        for component in &c.components.names {
            if c.agent_of.contains_key(component) {
                continue;
            }
            let named_after = c
                .nodes
                .names
                .iter()
                .filter(|node| component.strip_suffix(node.as_str()).is_some_and(|rest| rest.ends_with('-')))
                .max_by_key(|node| node.len());
            if let Some(node) = named_after {
                c.agent_of.insert(component.clone(), node.clone());
            }
        }
        c
    }
}

/// The lanes of a trace, in display order.
pub fn derive_lanes(trace: &Trace) -> Vec<Lane> {
    let census = Census::take(trace);
    let mut lanes = Vec::new();
    let mut group = 0;
    let push = |lanes: &mut Vec<Lane>, name: &str, role: LaneRole, owner: Option<&str>, group: usize, sub| {
        lanes.push(Lane { name: name.to_string(), role, owner: owner.map(str::to_string), group, sub });
    };

    push(&mut lanes, SCRIPT_LANE, LaneRole::Script, None, group, false);
    group += 1;
    push(&mut lanes, STORE_LANE, LaneRole::Store, None, group, false);
    group += 1;

    let mut servers = census.servers.names.clone();
    servers.sort_by(|a, b| natural_cmp(a, b));
    for server in &servers {
        push(&mut lanes, server, LaneRole::ApiServer, Some(server), group, false);
        if census.cached.contains(server) {
            push(&mut lanes, &cache_lane_name(server), LaneRole::Cache, Some(server), group, true);
        }
        group += 1;
    }

    let is_special = |name: &str| {
        name == SCRIPT_LANE
            || name == STORE_LANE
            || name == CHECKS_LANE
            || census.servers.contains(name)
            || census.nodes.contains(name)
    };
    for component in &census.components.names {
        if !census.agent_of.contains_key(component) && !is_special(component) {
            push(&mut lanes, component, LaneRole::Controller, None, group, false);
            group += 1;
        }
    }

    let mut nodes = census.nodes.names.clone();
    nodes.sort_by(|a, b| natural_cmp(a, b));
    for node in &nodes {
        let agents: Vec<&String> = census
            .components
            .names
            .iter()
            .filter(|c| census.agent_of.get(*c) == Some(node) && !is_special(c))
            .collect();
        for agent in &agents {
            push(&mut lanes, agent, LaneRole::NodeAgent, Some(node), group, false);
        }
        push(&mut lanes, node, LaneRole::Node, Some(node), group, !agents.is_empty());
        group += 1;
    }

    let named: BTreeSet<String> = lanes.iter().map(|l| l.name.clone()).collect();
    for name in &census.drawn.names {
        if !named.contains(name) && name != CHECKS_LANE {
            push(&mut lanes, name, LaneRole::Other, None, group, false);
            group += 1;
        }
    }
    if census.drawn.contains(CHECKS_LANE) {
        push(&mut lanes, CHECKS_LANE, LaneRole::Checks, None, group, false);
    }
    lanes
}

/// Compares names the way people count: `node-2` before `node-10`.
pub fn natural_cmp(a: &str, b: &str) -> Ordering {
    let (mut a, mut b) = (a, b);
    loop {
        match (a.chars().next(), b.chars().next()) {
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(x), Some(y)) if x.is_ascii_digit() && y.is_ascii_digit() => {
                let a_digits = a.len() - a.trim_start_matches(|c: char| c.is_ascii_digit()).len();
                let b_digits = b.len() - b.trim_start_matches(|c: char| c.is_ascii_digit()).len();
                let (a_num, b_num) = (a[..a_digits].trim_start_matches('0'), b[..b_digits].trim_start_matches('0'));
                let by_value = a_num.len().cmp(&b_num.len()).then_with(|| a_num.cmp(b_num));
                if by_value != Ordering::Equal {
                    return by_value;
                }
                a = &a[a_digits..];
                b = &b[b_digits..];
            }
            (Some(x), Some(y)) => {
                if x != y {
                    return x.cmp(&y);
                }
                a = &a[x.len_utf8()..];
                b = &b[y.len_utf8()..];
            }
        }
    }
}
