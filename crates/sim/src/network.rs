//! The network model: every message takes a latency drawn from the seeded
//! RNG, and messages on one link arrive in the order they were sent (like a
//! TCP connection), so watch streams never reorder.

use recon_scenario::LatencyRange;
use rustc_hash::FxHashMap;

use crate::ids::{ComponentId, ServerId};
use crate::rng::Rng;

/// One end of a link.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Endpoint {
    /// The store (etcd).
    Store,
    /// An API server.
    Server(ServerId),
    /// A component.
    Component(ComponentId),
    /// The user's kubectl.
    Kubectl,
}

/// Latency sampling and per-link ordering.
#[derive(Clone, Debug)]
pub struct Network {
    latency: LatencyRange,
    rng: Rng,
    /// The last arrival on each link. Looked up for every message and
    /// never iterated, so a hash table (with `rustc-hash`'s hasher, which
    /// has no random seed): a tree of every link was 1 % of a run.
    last_arrival: FxHashMap<(Endpoint, Endpoint), u64>,
}

impl Network {
    /// A network with the scenario's latency and its own RNG stream.
    pub fn new(latency: LatencyRange, rng: Rng) -> Network {
        Network { latency, rng, last_arrival: FxHashMap::default() }
    }

    /// When a message sent from `from` to `to` at `sent_ms`, delayed by an
    /// extra `extra_ms`, arrives: never before an earlier message on that link.
    pub fn arrival(&mut self, from: Endpoint, to: Endpoint, sent_ms: u64, extra_ms: u64) -> u64 {
        let latency = self.rng.range_inclusive(self.latency.min.0, self.latency.max.0);
        let last = self.last_arrival.entry((from, to)).or_insert(0);
        let at = (sent_ms + latency + extra_ms).max(*last);
        *last = at;
        at
    }

    /// One latency sample, for round trips whose ordering does not matter.
    pub fn sample(&mut self) -> u64 {
        self.rng.range_inclusive(self.latency.min.0, self.latency.max.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use recon_scenario::Millis;

    #[test]
    fn messages_on_one_link_never_overtake_each_other() {
        let range = LatencyRange { min: Millis(1), max: Millis(50) };
        let mut net = Network::new(range, Rng::new(9));
        let mut last = 0;
        for sent in 0..200 {
            let at = net.arrival(Endpoint::Store, Endpoint::Server(ServerId(0)), sent, 0);
            assert!(at >= last && at > sent);
            last = at;
        }
    }

    #[test]
    fn latency_stays_in_the_configured_range() {
        let range = LatencyRange { min: Millis(3), max: Millis(7) };
        let mut net = Network::new(range, Rng::new(1));
        for _ in 0..200 {
            assert!((3..=7).contains(&net.sample()));
        }
    }
}
