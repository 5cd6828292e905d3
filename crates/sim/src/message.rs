//! The messages of the simulation: what the engine's queue holds
//! ([`Scheduled`]) and what travels between actors in it: who asked
//! ([`Client`]), what an API server answers ([`Reply`]), and the work an API
//! server has in flight to the store ([`StoreOp`]).

use std::sync::Arc;

use recon_abi::{Action, Object, ObjectKey, Outcome, Status, Verb, WatchEvent};
use recon_trace::{EntryId, ReadPurpose, ServedFrom};

use crate::api::Request;
use crate::cache::Filter;
use crate::ids::{ComponentId, ServerId};
use crate::network::Endpoint;

/// Something scheduled to happen at a virtual time, for the actor it names.
///
/// Requests, replies and store operations carry an object and are boxed:
/// the rest are a few words, and most of a large run's queue is small
/// events (every write feeds each API server's watch cache after its lag),
/// so the queue's memory is the small events' size, not the largest's.
pub(crate) enum Scheduled {
    Script(usize),
    PartitionEdge {
        server: ServerId,
        started: bool,
    },
    CacheFeed {
        server: ServerId,
        revision: u64,
    },
    CacheResync {
        server: ServerId,
    },
    Request {
        server: ServerId,
        client: Client,
        request: Box<Request>,
        cause: Option<EntryId>,
    },
    StoreOp(Box<StoreOp>),
    StoreTimeout(Box<StoreOp>, String),
    WaitDeadline {
        server: ServerId,
        wait: u64,
    },
    /// A watch that asked for bookmarks is due one.
    Bookmark {
        server: ServerId,
        watcher: u64,
    },
    /// The API servers' periodic compaction of etcd (`etcd.compactionInterval`).
    Compaction,
    Reply {
        server: ServerId,
        client: Client,
        reply: Box<Reply>,
    },
    Wake {
        component: ComponentId,
        epoch: u64,
    },
    Timer {
        component: ComponentId,
        epoch: u64,
        key: String,
    },
    Retry {
        component: ComponentId,
        epoch: u64,
        watch: usize,
    },
    Restart {
        component: ComponentId,
        epoch: u64,
        cause: EntryId,
    },
    ElectionTick {
        component: ComponentId,
        epoch: u64,
    },
    FirstStart {
        component: ComponentId,
    },
}

/// Who sent a request, so the reply finds its way back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Client {
    /// A component's reflector for one of its watches.
    Reflector {
        /// The component.
        component: ComponentId,
        /// Instance epoch: replies to a dead instance are dropped.
        epoch: u64,
        /// Index of the watch in the manifest.
        watch: usize,
    },
    /// A component's own request: a write, or a direct read.
    Writer {
        /// The component.
        component: ComponentId,
        /// Instance epoch.
        epoch: u64,
        /// The host's number for the request within the instance, which
        /// finds the request (and the controller's id for it) when the
        /// answer comes back, whatever the order of answers.
        request: u64,
    },
    /// A component's leader-election client, reading and writing its Lease.
    Elector {
        /// The component.
        component: ComponentId,
        /// Process epoch.
        epoch: u64,
    },
    /// The user, from the script.
    Kubectl,
    /// A test or console request made with [`Sim::request`].
    Probe(u64),
}

impl Client {
    /// What a read by this client is for.
    pub fn read_purpose(&self) -> ReadPurpose {
        match self {
            Client::Reflector { .. } => ReadPurpose::InformerList,
            Client::Elector { .. } => ReadPurpose::LeaseGet,
            Client::Writer { .. } => ReadPurpose::DirectRead,
            Client::Kubectl | Client::Probe(_) => ReadPurpose::Kubectl,
        }
    }

    /// Where the client sits on the network.
    pub(crate) fn endpoint(&self) -> Endpoint {
        match self {
            Client::Reflector { component, .. }
            | Client::Writer { component, .. }
            | Client::Elector { component, .. } => Endpoint::Component(*component),
            Client::Kubectl | Client::Probe(_) => Endpoint::Kubectl,
        }
    }
}

/// A read that was served.
#[derive(Clone, Debug, PartialEq)]
pub struct Served {
    /// The objects, in key order: the cache's or the store's own, shared.
    pub objects: Vec<Arc<Object>>,
    /// The revision of the state.
    pub revision: u64,
    /// Where it came from.
    pub from: ServedFrom,
    /// Token for the next page, if the list was cut at `limit`.
    pub continue_token: Option<String>,
    /// The trace entry of the read.
    pub entry: EntryId,
}

/// What an API server sends back.
#[allow(clippy::large_enum_variant, reason = "moved once per reply; boxing would only add an allocation")]
#[derive(Clone, Debug, PartialEq)]
pub enum Reply {
    /// A list (or get: zero or one object) was served.
    Read(Served),
    /// A watch was opened; the initial state (if any) comes as ADDED events first.
    WatchOpened {
        /// The API server's id for the watch.
        watcher: u64,
        /// The initial state, for watches that send one (with its trace entry).
        initial: Option<Served>,
        /// Whether an initial-events-end bookmark follows the initial state.
        bookmark: bool,
    },
    /// Events on an open watch, each with the trace entry of the cache apply that produced it.
    Events {
        /// The API server's id for the watch.
        watcher: u64,
        /// The events.
        events: Vec<(WatchEvent, EntryId)>,
    },
    /// A write completed.
    Written {
        /// The verb.
        verb: Verb,
        /// The object.
        key: ObjectKey,
        /// The result.
        outcome: Outcome,
        /// The store-write (or failure) trace entry.
        entry: EntryId,
    },
    /// The request failed (or the watch closed with an error).
    Failed(Status),
}

/// What a pending read is waiting to serve.
#[derive(Clone, Debug)]
pub(crate) enum ReadTarget {
    List {
        filter: Filter,
        limit: Option<usize>,
        request: String,
    },
    Get {
        /// Where the store keeps it.
        key: String,
        /// The object, to name it when it is not there.
        object: ObjectKey,
        request: String,
    },
    /// `bookmark`: end the initial state with an initial-events-end
    /// bookmark; `allow_bookmarks`: send periodic bookmarks afterwards.
    Watch {
        filter: Filter,
        bookmark: bool,
        allow_bookmarks: bool,
        request: String,
    },
}

impl ReadTarget {
    pub fn request(&self) -> &str {
        match self {
            ReadTarget::List { request, .. } | ReadTarget::Get { request, .. } | ReadTarget::Watch { request, .. } => {
                request
            }
        }
    }
}

/// Work that reaches the store after a network hop.
#[derive(Clone, Debug)]
pub(crate) struct StoreOp {
    pub server: ServerId,
    pub client: Client,
    pub kind: StoreOpKind,
    pub cause: Option<EntryId>,
}

#[allow(
    clippy::large_enum_variant,
    reason = "one per request in flight to the store; boxing would only add an allocation"
)]
#[derive(Clone, Debug)]
pub(crate) enum StoreOpKind {
    /// A read at the current revision (`None`) or a past one.
    Read {
        target: ReadTarget,
        at: Option<u64>,
        after_key: Option<String>,
        min_revision: Option<u64>,
    },
    /// KEP-2340: learn the store's revision, then wait for the cache to reach it.
    CurrentRevision {
        target: ReadTarget,
    },
    /// A watch served by etcd (the watch cache is off): it streams the
    /// events after `after`, or fails 410 Gone if etcd has compacted them.
    Watch {
        filter: Filter,
        after: u64,
        allow_bookmarks: bool,
        request: String,
    },
    Write(Action),
}

/// The component behind a client, if it is one.
pub(crate) fn client_component(client: &Client) -> Option<ComponentId> {
    match client {
        Client::Reflector { component, .. } | Client::Writer { component, .. } | Client::Elector { component, .. } => {
            Some(*component)
        }
        _ => None,
    }
}

impl Scheduled {
    /// What it is, in words, without the trace entries that caused it (for
    /// a state's fingerprint: see [`crate::ordering::Moment::world`]).
    pub(crate) fn describe(&self) -> String {
        match self {
            Scheduled::Script(i) => format!("script {i}"),
            Scheduled::PartitionEdge { server, started } => format!("partition {server:?} {started}"),
            Scheduled::CacheFeed { server, revision } => format!("feed {server:?} {revision}"),
            Scheduled::CacheResync { server } => format!("resync {server:?}"),
            Scheduled::Request { server, client, request, .. } => format!("request {server:?} {client:?} {request:?}"),
            Scheduled::StoreOp(op) => format!("store {:?} {:?} {:?}", op.server, op.client, op.kind),
            Scheduled::StoreTimeout(op, request) => {
                format!("timeout {:?} {:?} {:?} {request}", op.server, op.client, op.kind)
            }
            Scheduled::WaitDeadline { server, wait } => format!("deadline {server:?} {wait}"),
            Scheduled::Bookmark { server, watcher } => format!("bookmark {server:?} {watcher}"),
            Scheduled::Compaction => "compaction".into(),
            Scheduled::Reply { server, client, reply } => format!("reply {server:?} {client:?} {}", reply.describe()),
            Scheduled::Wake { component, epoch } => format!("wake {component:?} {epoch}"),
            Scheduled::Timer { component, epoch, key } => format!("timer {component:?} {epoch} {key}"),
            Scheduled::Retry { component, epoch, watch } => format!("retry {component:?} {epoch} {watch}"),
            Scheduled::Restart { component, epoch, .. } => format!("restart {component:?} {epoch}"),
            Scheduled::ElectionTick { component, epoch } => format!("election {component:?} {epoch}"),
            Scheduled::FirstStart { component } => format!("start {component:?}"),
        }
    }
}

impl Reply {
    /// What it says, without the trace entries behind it.
    fn describe(&self) -> String {
        let served = |s: &Served| format!("{:?} {} {:?} {:?}", s.objects, s.revision, s.from, s.continue_token);
        match self {
            Reply::Read(s) => format!("read {}", served(s)),
            Reply::WatchOpened { watcher, initial, bookmark } => {
                format!("opened {watcher} {} {bookmark}", initial.as_ref().map(served).unwrap_or_default())
            }
            Reply::Events { watcher, events } => {
                let events: Vec<&WatchEvent> = events.iter().map(|(e, _)| e).collect();
                format!("events {watcher} {events:?}")
            }
            Reply::Written { verb, key, outcome, .. } => format!("written {verb:?} {key} {outcome:?}"),
            Reply::Failed(status) => format!("failed {status:?}"),
        }
    }
}
