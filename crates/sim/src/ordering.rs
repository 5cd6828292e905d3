//! Who reconciles first when several components have a reconcile due at the
//! same virtual moment.
//!
//! Components hear about changes over the network, so two controllers
//! watching the same object often have work due at the same millisecond.
//! By default they run in the order their work arrived (the queue's order).
//! A [`Chooser`] may pick another: the simulator asks it at every such
//! moment (a *choice point*) and runs the component it names first; the
//! others stay due and run after it, at the same moment. A scenario's
//! `ordering` choices ([`recon_scenario::OrderChoice`]) are one chooser;
//! `recon explore --orderings` installs its own to search over them.
//! Without a chooser the queue is read exactly as before, so runs without
//! an ordering are unchanged.

use recon_scenario::OrderChoice;
use recon_store::Store;

/// A choice point: several components have a reconcile due now.
pub struct Moment<'a> {
    /// Virtual time in milliseconds.
    pub time_ms: u64,
    /// The components with a reconcile due, in the order they would run
    /// by default (at least two, each once).
    pub pending: &'a [String],
    /// The store as it is at that moment (read-only).
    pub store: &'a Store,
}

/// Picks, at each [`Moment`], the index in `pending` of the component that
/// runs first (0 is the default order; an index past the end counts as 0).
pub type Chooser = Box<dyn FnMut(&Moment<'_>) -> usize>;

/// The chooser that follows a scenario's ordering: at each moment, the
/// first unused choice for that time whose component is waiting is used up.
pub(crate) fn following(choices: &[OrderChoice]) -> Chooser {
    let mut unused: Vec<Option<OrderChoice>> = choices.iter().cloned().map(Some).collect();
    Box::new(move |moment| {
        let found = unused.iter_mut().find_map(|slot| {
            let choice = slot.as_ref()?;
            let at = choice.at.0 == moment.time_ms;
            let index = moment.pending.iter().position(|c| *c == choice.first).filter(|_| at)?;
            *slot = None;
            Some(index)
        });
        found.unwrap_or(0)
    })
}
