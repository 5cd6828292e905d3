//! Requests a client sends to an API server, and the Kubernetes
//! resourceVersion semantics that decide how a read is served.
//!
//! The semantics follow the table in the Kubernetes API concepts
//! documentation ("Semantics for get, list and watch"): [`plan_list`],
//! [`plan_get`] and [`plan_watch`] turn request parameters into a
//! [`ReadPlan`] (or a 400), and the API server then serves the plan from its
//! watch cache or from the store.

use std::fmt;

use recon_abi::{Action, ObjectKey, ResourceVersionMatch, Status, StatusReason};

/// `resourceVersionMatch`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VersionMatch {
    /// Serve data at least as new as the given resourceVersion.
    NotOlderThan,
    /// Serve data at exactly the given resourceVersion.
    Exact,
}

/// What the client selected.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Selection {
    /// Kind, e.g. `Pod`.
    pub kind: String,
    /// Namespace, empty for all.
    pub namespace: String,
    /// Field selector text.
    pub field_selector: String,
    /// Label selector text.
    pub label_selector: String,
}

/// A list request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListRequest {
    /// What to list.
    pub selection: Selection,
    /// `resourceVersion`; `None` when unset.
    pub resource_version: Option<String>,
    /// `resourceVersionMatch`.
    pub version_match: Option<VersionMatch>,
    /// `limit` (page size).
    pub limit: Option<usize>,
    /// `continue` token from a previous page.
    pub continue_token: Option<String>,
}

/// A get request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GetRequest {
    /// Which object.
    pub key: ObjectKey,
    /// `resourceVersion`; `None` when unset.
    pub resource_version: Option<String>,
}

/// A watch request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WatchRequest {
    /// What to watch.
    pub selection: Selection,
    /// `resourceVersion`; `None` when unset.
    pub resource_version: Option<String>,
    /// `sendInitialEvents` (watch-list, KEP-3157).
    pub send_initial_events: bool,
    /// `allowWatchBookmarks`: the client accepts periodic BOOKMARK events
    /// (`watchCache.bookmarkInterval`). Not part of the request's text.
    pub allow_watch_bookmarks: bool,
}

/// Anything a client can ask an API server.
#[allow(
    clippy::large_enum_variant,
    reason = "a request travels once through the queue; boxing would only add an allocation"
)]
#[derive(Clone, Debug, PartialEq)]
pub enum Request {
    /// List objects.
    List(ListRequest),
    /// Get one object.
    Get(GetRequest),
    /// Open a watch.
    Watch(WatchRequest),
    /// A write (create, update, update status, delete).
    Write(Action),
}

impl Request {
    /// The request a controller's direct read ([`Action::Get`],
    /// [`Action::List`]) makes; `None` for any other action.
    pub fn direct_read(action: &Action) -> Option<Request> {
        match action {
            Action::Get { key, resource_version } => {
                Some(Request::Get(GetRequest { key: key.clone(), resource_version: resource_version.clone() }))
            }
            Action::List {
                kind,
                namespace,
                field_selector,
                label_selector,
                resource_version,
                resource_version_match,
                limit,
                continue_token,
            } => Some(Request::List(ListRequest {
                selection: Selection {
                    kind: kind.clone(),
                    namespace: namespace.clone(),
                    field_selector: field_selector.clone(),
                    label_selector: label_selector.clone(),
                },
                resource_version: resource_version.clone(),
                version_match: resource_version_match.map(|m| match m {
                    ResourceVersionMatch::NotOlderThan => VersionMatch::NotOlderThan,
                    ResourceVersionMatch::Exact => VersionMatch::Exact,
                }),
                // As in Kubernetes, a limit of 0 is no limit; one larger than
                // memory saturates.
                limit: limit.filter(|l| *l > 0).map(|l| usize::try_from(l).unwrap_or(usize::MAX)),
                continue_token: continue_token.clone(),
            })),
            _ => None,
        }
    }
}

/// How a read must be served, once the parameters have been interpreted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReadPlan {
    /// The most recent state: a quorum read from the store, or (KEP-2340) the
    /// cache once it has caught up with the store's current revision.
    MostRecent,
    /// Any state: whatever the cache holds, however old.
    Any,
    /// State at least as new as the revision; the cache waits to catch up.
    NotOlderThan(u64),
    /// State at exactly the revision, from the store's history (410 if compacted).
    Exact(u64),
    /// Continue a paginated list at the token's revision after its key.
    Continue {
        /// Revision the first page was served at.
        revision: u64,
        /// Last key of the previous page.
        after_key: String,
    },
}

fn bad_request(message: impl Into<String>) -> Status {
    Status::new(StatusReason::BadRequest, message)
}

/// Parses a resourceVersion: unset, `"0"`, or a positive decimal revision.
fn parse_rv(rv: Option<&str>) -> Result<Option<u64>, Status> {
    match rv {
        None | Some("") => Ok(None),
        Some(text) => text
            .parse::<u64>()
            .map(Some)
            .map_err(|_| bad_request(format!("invalid resourceVersion {text:?}: not a revision"))),
    }
}

/// Encodes a continue token.
pub fn continue_token(revision: u64, after_key: &str) -> String {
    format!("{revision}/{after_key}")
}

fn parse_continue(token: &str) -> Result<ReadPlan, Status> {
    let (rev, key) = token.split_once('/').ok_or_else(|| bad_request(format!("invalid continue token {token:?}")))?;
    let revision = rev.parse().map_err(|_| bad_request(format!("invalid continue token {token:?}")))?;
    Ok(ReadPlan::Continue { revision, after_key: format!("/{key}") })
}

/// Interprets list parameters, row by row of the Kubernetes table.
///
/// | match        | paging           | unset       | "0"  | N (≠0)        |
/// |--------------|------------------|-------------|------|---------------|
/// | unset        | no limit         | MostRecent  | Any  | NotOlderThan  |
/// | unset        | limit, no token  | MostRecent  | Any  | Exact         |
/// | unset        | continue token   | Continue    | Continue | 400       |
/// | Exact        | any              | 400         | 400  | Exact         |
/// | NotOlderThan | any              | 400         | Any  | NotOlderThan  |
pub fn plan_list(req: &ListRequest) -> Result<ReadPlan, Status> {
    let rv = parse_rv(req.resource_version.as_deref())?;
    if let Some(token) = &req.continue_token {
        if req.version_match.is_some() {
            return Err(bad_request("resourceVersionMatch is not allowed with a continue token"));
        }
        return match rv {
            None | Some(0) => parse_continue(token),
            Some(_) => Err(bad_request("specifying resourceVersion is not allowed with a continue token")),
        };
    }
    match (req.version_match, rv) {
        (None, None) => Ok(ReadPlan::MostRecent),
        (None, Some(0)) => Ok(ReadPlan::Any),
        (None, Some(n)) if req.limit.is_some() => Ok(ReadPlan::Exact(n)),
        (None, Some(n)) => Ok(ReadPlan::NotOlderThan(n)),
        (Some(VersionMatch::Exact), None | Some(0)) => {
            Err(bad_request("resourceVersionMatch=Exact requires a resourceVersion other than \"0\""))
        }
        (Some(VersionMatch::Exact), Some(n)) => Ok(ReadPlan::Exact(n)),
        (Some(VersionMatch::NotOlderThan), None) => {
            Err(bad_request("resourceVersionMatch=NotOlderThan requires a resourceVersion"))
        }
        (Some(VersionMatch::NotOlderThan), Some(0)) => Ok(ReadPlan::Any),
        (Some(VersionMatch::NotOlderThan), Some(n)) => Ok(ReadPlan::NotOlderThan(n)),
    }
}

/// Interprets get parameters: unset = MostRecent, "0" = Any, N = NotOlderThan.
pub fn plan_get(req: &GetRequest) -> Result<ReadPlan, Status> {
    Ok(match parse_rv(req.resource_version.as_deref())? {
        None => ReadPlan::MostRecent,
        Some(0) => ReadPlan::Any,
        Some(n) => ReadPlan::NotOlderThan(n),
    })
}

/// How a watch starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WatchStart {
    /// Send the current state as ADDED events, read as `plan`, then stream.
    /// With `bookmark`, end the initial state with an initial-events-end BOOKMARK.
    InitialState {
        /// MostRecent or Any.
        plan: ReadPlan,
        /// Whether to mark the end of the initial events (watch-list).
        bookmark: bool,
    },
    /// Stream events after this revision (410 if it is too old).
    After(u64),
}

/// Interprets watch parameters:
/// unset = get state and start at most recent, "0" = get state and start at
/// any, N = start at exact. With `sendInitialEvents=true`, unset and "0"
/// send the initial state followed by a bookmark; N is invalid.
pub fn plan_watch(req: &WatchRequest) -> Result<WatchStart, Status> {
    let rv = parse_rv(req.resource_version.as_deref())?;
    let bookmark = req.send_initial_events;
    match rv {
        None => Ok(WatchStart::InitialState { plan: ReadPlan::MostRecent, bookmark }),
        Some(0) => Ok(WatchStart::InitialState { plan: ReadPlan::Any, bookmark }),
        Some(_) if bookmark => {
            Err(bad_request("sendInitialEvents=true is only supported with resourceVersion unset or \"0\" here"))
        }
        Some(n) => Ok(WatchStart::After(n)),
    }
}

impl fmt::Display for Selection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}s", self.kind)?;
        if !self.namespace.is_empty() {
            write!(f, " in {}", self.namespace)?;
        }
        if !self.field_selector.is_empty() {
            write!(f, " {}", self.field_selector)?;
        }
        if !self.label_selector.is_empty() {
            write!(f, " -l {}", self.label_selector)?;
        }
        Ok(())
    }
}

fn rv_text(rv: &Option<String>) -> String {
    match rv {
        None => "resourceVersion unset".to_string(),
        Some(v) => format!("resourceVersion=\"{v}\""),
    }
}

impl fmt::Display for Request {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Request::List(r) => {
                write!(f, "list {} {}", r.selection, rv_text(&r.resource_version))?;
                if let Some(m) = r.version_match {
                    write!(f, " resourceVersionMatch={m:?}")?;
                }
                if let Some(l) = r.limit {
                    write!(f, " limit={l}")?;
                }
                Ok(())
            }
            Request::Get(r) => write!(f, "get {} {}", r.key, rv_text(&r.resource_version)),
            Request::Watch(r) => {
                write!(f, "watch {} {}", r.selection, rv_text(&r.resource_version))?;
                if r.send_initial_events {
                    write!(f, " sendInitialEvents=true")?;
                }
                Ok(())
            }
            Request::Write(a) => match a.as_write() {
                Some(target) => write!(f, "{target}"),
                None => write!(f, "{a:?}"),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(
        rv: Option<&str>,
        m: Option<VersionMatch>,
        limit: Option<usize>,
        token: Option<&str>,
    ) -> Result<ReadPlan, Status> {
        plan_list(&ListRequest {
            selection: Selection::default(),
            resource_version: rv.map(str::to_string),
            version_match: m,
            limit,
            continue_token: token.map(str::to_string),
        })
    }

    use VersionMatch::{Exact, NotOlderThan};

    #[test]
    fn list_row_match_unset_without_limit() {
        assert_eq!(list(None, None, None, None), Ok(ReadPlan::MostRecent));
        assert_eq!(list(Some("0"), None, None, None), Ok(ReadPlan::Any));
        assert_eq!(list(Some("7"), None, None, None), Ok(ReadPlan::NotOlderThan(7)));
    }

    #[test]
    fn list_row_match_unset_with_limit() {
        assert_eq!(list(None, None, Some(2), None), Ok(ReadPlan::MostRecent));
        assert_eq!(list(Some("0"), None, Some(2), None), Ok(ReadPlan::Any));
        assert_eq!(list(Some("7"), None, Some(2), None), Ok(ReadPlan::Exact(7)));
    }

    #[test]
    fn list_row_continue_token() {
        let cont = ReadPlan::Continue { revision: 9, after_key: "/registry/Pod/default/a".into() };
        assert_eq!(list(None, None, Some(2), Some("9/registry/Pod/default/a")), Ok(cont.clone()));
        assert_eq!(list(Some("0"), None, Some(2), Some("9/registry/Pod/default/a")), Ok(cont));
        assert_eq!(list(Some("7"), None, Some(2), Some("9/x")).unwrap_err().code, 400);
    }

    #[test]
    fn list_row_match_exact() {
        assert_eq!(list(None, Some(Exact), None, None).unwrap_err().code, 400);
        assert_eq!(list(Some("0"), Some(Exact), None, None).unwrap_err().code, 400);
        assert_eq!(list(Some("7"), Some(Exact), None, None), Ok(ReadPlan::Exact(7)));
        assert_eq!(list(Some("7"), Some(Exact), Some(3), None), Ok(ReadPlan::Exact(7)));
    }

    #[test]
    fn list_row_match_not_older_than() {
        assert_eq!(list(None, Some(NotOlderThan), None, None).unwrap_err().code, 400);
        assert_eq!(list(Some("0"), Some(NotOlderThan), None, None), Ok(ReadPlan::Any));
        assert_eq!(list(Some("7"), Some(NotOlderThan), None, None), Ok(ReadPlan::NotOlderThan(7)));
        assert_eq!(list(Some("7"), Some(NotOlderThan), Some(3), None), Ok(ReadPlan::NotOlderThan(7)));
    }

    #[test]
    fn unparseable_resource_version_is_a_bad_request() {
        let e = list(Some("abc"), None, None, None).unwrap_err();
        assert_eq!((e.code, e.reason), (400, StatusReason::BadRequest));
    }

    #[test]
    fn get_row() {
        let get = |rv: Option<&str>| {
            plan_get(&GetRequest { key: ObjectKey::default(), resource_version: rv.map(Into::into) })
        };
        assert_eq!(get(None), Ok(ReadPlan::MostRecent));
        assert_eq!(get(Some("0")), Ok(ReadPlan::Any));
        assert_eq!(get(Some("5")), Ok(ReadPlan::NotOlderThan(5)));
    }

    #[test]
    fn watch_row() {
        let watch = |rv: Option<&str>, initial: bool| {
            plan_watch(&WatchRequest {
                selection: Selection::default(),
                resource_version: rv.map(Into::into),
                send_initial_events: initial,
                allow_watch_bookmarks: false,
            })
        };
        assert_eq!(watch(None, false), Ok(WatchStart::InitialState { plan: ReadPlan::MostRecent, bookmark: false }));
        assert_eq!(watch(Some("0"), false), Ok(WatchStart::InitialState { plan: ReadPlan::Any, bookmark: false }));
        assert_eq!(watch(Some("5"), false), Ok(WatchStart::After(5)));
        assert_eq!(watch(None, true), Ok(WatchStart::InitialState { plan: ReadPlan::MostRecent, bookmark: true }));
        assert_eq!(watch(Some("5"), true).unwrap_err().code, 400);
    }
}
