//! Time travel: a component observes a revision older than one it has
//! already observed — its view went backwards (a relist from a cache behind
//! the one it watched before). Flagged the moment it happens, once per
//! episode.

use std::collections::BTreeMap;

use recon_scenario::Check;
use recon_trace::EntryId;

use crate::ids::ComponentId;

use super::{Finding, Observation, Observer, Truth};

/// The highest revision each component has observed in its life (across
/// restarts: its memory is gone, but what it did on it is not).
#[derive(Default)]
pub(super) struct TimeTravel {
    seen: BTreeMap<ComponentId, Seen>,
}

#[derive(Default)]
struct Seen {
    max: u64,
    entry: Option<EntryId>,
    /// Behind `max` after going back: one episode is flagged once, not at
    /// every stale event that follows.
    travelling: bool,
}

impl Observer for TimeTravel {
    fn observed(&mut self, _truth: &Truth<'_>, o: &Observation<'_>) -> Vec<Finding> {
        let seen = self.seen.entry(o.component).or_default();
        if o.revision >= seen.max {
            *seen = Seen { max: o.revision, entry: Some(o.entry), travelling: false };
            return Vec::new();
        }
        if std::mem::replace(&mut seen.travelling, true) {
            return Vec::new();
        }
        let message = format!(
            "{} went back in time: it observed revision {} from {} after it had already observed revision {}",
            o.name, o.revision, o.api_server, seen.max
        );
        let causes = std::iter::once(o.entry).chain(seen.entry).collect();
        vec![Finding { check: Check::TimeTravel, message, causes, component: Some(o.component) }]
    }
}
