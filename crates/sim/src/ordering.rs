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
//!
//! A second kind of choice point gives one reconcile a staler view: when
//! a component is about to be called with several inputs, a
//! [`StaleChooser`] may hold its newest ones back past the call, as if its
//! informer had not yet put them into its cache ([`Reconcile`]). The
//! scenario's `staleViews` ([`recon_scenario::StaleView`]) are one.

use recon_scenario::{OrderChoice, StaleView};
use recon_store::Store;

use crate::apiserver::ApiServer;
use crate::component::Component;
use crate::engine::Engine;

/// A choice point: several components have a reconcile due now.
pub struct Moment<'a> {
    /// Virtual time in milliseconds.
    pub time_ms: u64,
    /// The components with a reconcile due, in the order they would run
    /// by default (at least two, each once).
    pub pending: &'a [String],
    /// The store as it is at that moment (read-only).
    pub store: &'a Store,
    pub(crate) world: World<'a>,
}

impl Moment<'_> {
    /// The simulation's state beyond the store, in words, for telling two
    /// moments apart: API servers' caches and watches, components'
    /// processes, caches and undelivered inputs, messages in flight (see
    /// [`World`]). Two moments with the same time, store and world lead to
    /// the same runs, as far as the host can see.
    pub fn world(&self) -> String {
        self.world.describe()
    }
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

/// A reconcile that may be given a stale view: a component is about to be
/// called with two or more inputs delivered since its last call.
pub struct Reconcile<'a> {
    /// Virtual time in milliseconds.
    pub time_ms: u64,
    /// The component about to reconcile.
    pub component: &'a str,
    /// Its inputs, oldest first, one line each (as the trace shows them).
    pub inputs: &'a [String],
    /// The store as it is at that moment (read-only).
    pub store: &'a Store,
    pub(crate) world: World<'a>,
}

impl Reconcile<'_> {
    /// The simulation's state beyond the store, in words: see [`Moment::world`].
    pub fn world(&self) -> String {
        self.world.describe()
    }
}

/// Picks, at each [`Reconcile`], how many of the newest inputs are held
/// back past the call (0, the default, holds back nothing; more than
/// `inputs.len() - 1` counts as that many: a call always gets its oldest
/// input). Held-back inputs reach the component in a second call at the
/// same moment, after the first call's actions were sent.
pub type StaleChooser = Box<dyn FnMut(&Reconcile<'_>) -> usize>;

/// The stale-view chooser that follows a scenario's `staleViews`: at each
/// reconcile, the first unused choice for that time and component that
/// holds back fewer inputs than the call has is used up.
pub(crate) fn following_stale(choices: &[StaleView]) -> StaleChooser {
    let mut unused: Vec<Option<StaleView>> = choices.iter().cloned().map(Some).collect();
    Box::new(move |call| {
        let found = unused.iter_mut().find_map(|slot| {
            let choice = slot.as_ref()?;
            let fits = choice.at.0 == call.time_ms
                && choice.component == call.component
                && (choice.held_back as usize) < call.inputs.len();
            let held_back = choice.held_back as usize;
            fits.then(|| {
                *slot = None;
                held_back
            })
        });
        found.unwrap_or(0)
    })
}

/// Read-only access to what a fingerprint of the simulation's state needs.
pub(crate) struct World<'a> {
    pub engine: &'a Engine,
    pub servers: &'a [ApiServer],
    pub components: &'a [Component],
}

impl World<'_> {
    /// Everything but the store that later events depend on, in words:
    /// each API server's cache revision, watches and waiting reads; each
    /// component's process, cache (what the host delivered to it, by
    /// key and resourceVersion) and inputs not yet handed over; and every
    /// message in flight, in the order it will arrive, with its time.
    /// Trace entry ids (causes) are left out: they say how a state was
    /// reached, not what it is. A plugin's memory beyond its cache is not
    /// visible to the host and is not in it.
    fn describe(&self) -> String {
        let mut out = String::new();
        for server in self.servers {
            out += &server.describe_state();
        }
        for component in self.components {
            out += &component.describe_state();
        }
        for (time, what) in self.engine.queued() {
            out += &format!("{time} {}\n", what.describe());
        }
        out
    }
}
