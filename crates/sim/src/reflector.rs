//! The reflector the host runs for each watch of a controller, as
//! client-go's reflector (and kube-runtime's watcher) does: list, then
//! watch from the list's revision; on a failure back off and resume the
//! watch, or list again — from the most recent state after `410 Gone`.
//!
//! The reflector decides what to ask; the component sends it and hands
//! back what comes. Its life: [`Phase::Listing`] → [`Phase::Watching`]
//! (the watch requested, then open) → on a failure [`Phase::BackingOff`]
//! until the retry, which watches again if it can or lists if it must.

use recon_abi::{StatusReason, WatchSpec};
use recon_scenario::ListMode;

use crate::api::{ListRequest, Request, Selection, WatchRequest};
use crate::ids::ServerId;

/// Where a reflector is in its cycle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// A list is on its way: the first, or a relist.
    Listing,
    /// Synced; its watch is requested (`None`) or open on (API server, watcher id).
    Watching {
        /// The open watch, once the API server has answered.
        watcher: Option<(ServerId, u64)>,
    },
    /// Its last request failed or its connection broke; a retry is scheduled.
    BackingOff,
}

/// The host's reflector for one watch of an instance.
#[derive(Clone, Debug)]
pub(crate) struct Reflector {
    /// What it lists and watches.
    pub selection: Selection,
    /// Where it is.
    pub phase: Phase,
    /// The revision it has synced to (a list, then each event); `None`
    /// before its first list completes.
    pub synced: Option<u64>,
    /// Set by `410 Gone`, cleared by the next list: the history it would
    /// resume from is gone, so it must list the most recent state.
    pub must_relist: bool,
}

/// What a watch of the manifest selects.
pub(crate) fn selection(w: &WatchSpec) -> Selection {
    Selection {
        kind: w.kind.clone(),
        namespace: w.namespace.clone(),
        field_selector: w.field_selector.clone(),
        label_selector: w.label_selector.clone(),
    }
}

impl Reflector {
    /// A reflector for a watch, about to list.
    pub fn new(spec: &WatchSpec) -> Reflector {
        Reflector { selection: selection(spec), phase: Phase::Listing, synced: None, must_relist: false }
    }

    /// The revision of what it has delivered (0 before its first list).
    pub fn revision(&self) -> u64 {
        self.synced.unwrap_or(0)
    }

    /// The list that (re)fills it: the first list uses the component's
    /// list mode; after a 410, the most recent state; otherwise "not older
    /// than what I had".
    pub fn list(&mut self, mode: ListMode) -> Request {
        self.phase = Phase::Listing;
        let list = |rv: Option<String>| {
            Request::List(ListRequest { selection: self.selection.clone(), resource_version: rv, ..Default::default() })
        };
        match self.synced {
            None => match mode {
                ListMode::Any => list(Some("0".into())),
                ListMode::Quorum => list(None),
                ListMode::Consistent => Request::Watch(WatchRequest {
                    selection: self.selection.clone(),
                    resource_version: None,
                    send_initial_events: true,
                    allow_watch_bookmarks: true,
                }),
            },
            Some(_) if self.must_relist => list(None),
            Some(rv) => list(Some(rv.to_string())),
        }
    }

    /// The watch that resumes from where it is.
    pub fn watch(&mut self) -> Request {
        self.phase = Phase::Watching { watcher: None };
        Request::Watch(WatchRequest {
            selection: self.selection.clone(),
            resource_version: Some(self.revision().to_string()),
            send_initial_events: false,
            allow_watch_bookmarks: true,
        })
    }

    /// Whether a retry resumes the watch (rather than listing).
    pub fn can_resume(&self) -> bool {
        self.synced.is_some() && !self.must_relist
    }

    /// A list (or a watch-list's initial state) arrived at `revision`.
    pub fn listed(&mut self, revision: u64) {
        self.synced = Some(revision);
        self.must_relist = false;
    }

    /// The API server opened its watch.
    pub fn opened(&mut self, server: ServerId, watcher: u64) {
        self.phase = Phase::Watching { watcher: Some((server, watcher)) };
    }

    /// Whether events from this watch are for it (not one it has abandoned).
    pub fn watches(&self, server: ServerId, watcher: u64) -> bool {
        self.phase == Phase::Watching { watcher: Some((server, watcher)) }
    }

    /// A request failed: it backs off, and after `410 Gone` must relist.
    pub fn failed(&mut self, reason: StatusReason) {
        self.phase = Phase::BackingOff;
        if reason == StatusReason::Gone {
            self.must_relist = true;
        }
    }

    /// Its connection broke (or its component failed over): it waits for its retry.
    pub fn disconnected(&mut self) {
        self.phase = Phase::BackingOff;
    }
}
