//! A request URI taken apart: which resource it names, and for reads the
//! query parameters that say how fresh the answer must be.
//!
//! The path rules are the API server's (`/api/v1/…` for the core group,
//! `/apis/GROUP/VERSION/…` for the others, `namespaces/NS/` before a
//! namespaced resource, a subresource after the name); the read modes are
//! the tables of the "Resource versions" section of the Kubernetes API
//! concepts page, see [`ReadMode`].

use std::fmt;

/// The parts of a request URI the analysis uses.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestUri {
    /// The API group; empty for the core group.
    pub group: String,
    /// The API version, e.g. `v1`.
    pub version: String,
    /// The namespace; empty for cluster-scoped resources and lists across namespaces.
    pub namespace: String,
    /// The resource, e.g. `pods`.
    pub resource: String,
    /// The object's name; empty for collections.
    pub name: String,
    /// The subresource, e.g. `status`.
    pub subresource: String,
    /// The query parameters that matter to reads.
    pub query: Query,
}

/// The query parameters of a read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Query {
    /// `resourceVersion`, `None` when unset (an empty value counts as unset).
    pub resource_version: Option<String>,
    /// `resourceVersionMatch`: `NotOlderThan` or `Exact`.
    pub resource_version_match: Option<String>,
    /// `watch=true` (or `1`): the request is a watch.
    pub watch: bool,
    /// `sendInitialEvents=true`: a watch that starts with the current state (a watch-list).
    pub send_initial_events: bool,
    /// `allowWatchBookmarks=true`.
    pub allow_watch_bookmarks: bool,
    /// `fieldSelector`, decoded.
    pub field_selector: String,
    /// `labelSelector`, decoded.
    pub label_selector: String,
    /// `limit` (a paginated list).
    pub limit: Option<u64>,
    /// `continue` (a later page of a paginated list).
    pub continue_token: Option<String>,
}

impl RequestUri {
    /// Takes a request URI apart. Paths that are not resource paths
    /// (`/healthz`, `/version`) give an error saying so.
    pub fn parse(uri: &str) -> Result<RequestUri, String> {
        let (path, query) = uri.split_once('?').unwrap_or((uri, ""));
        let mut parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
        let mut r = RequestUri { query: Query::parse(query), ..RequestUri::default() };
        match parts.first() {
            Some(&"api") if parts.len() >= 2 => {
                r.version = parts[1].to_string();
                parts.drain(..2);
            }
            Some(&"apis") if parts.len() >= 3 => {
                r.group = parts[1].to_string();
                r.version = parts[2].to_string();
                parts.drain(..3);
            }
            _ => return Err(format!("not a resource request: {path:?}")),
        }
        // The deprecated `/watch/` prefix: a watch of what follows.
        if parts.first() == Some(&"watch") {
            r.query.watch = true;
            parts.remove(0);
        }
        if parts.first() == Some(&"namespaces") && parts.len() > 1 {
            r.namespace = parts[1].to_string();
            // `namespaces/NS/status` and `/finalize` are the namespace's own
            // subresources; anything else after NS is a namespaced resource.
            if parts.len() > 2 && !matches!(parts[2], "status" | "finalize") {
                parts.drain(..2);
            }
        }
        let mut rest = parts.into_iter();
        r.resource = rest.next().ok_or_else(|| format!("no resource in {path:?}"))?.to_string();
        r.name = rest.next().unwrap_or_default().to_string();
        r.subresource = rest.collect::<Vec<_>>().join("/");
        Ok(r)
    }

    /// How a read with this verb (`get`, `list`, `watch`) asks to be served.
    pub fn read_mode(&self, verb: &str) -> ReadMode {
        let q = &self.query;
        let rv = q.resource_version.as_deref();
        let exact_or_not_older = |n: &str, exact: bool| {
            if exact { ReadMode::Exact(n.to_string()) } else { ReadMode::NotOlderThan(n.to_string()) }
        };
        if verb == "watch" || q.watch {
            return match (rv, q.send_initial_events) {
                (None, _) => ReadMode::WatchFromMostRecent { initial_events: true },
                (Some("0"), _) => ReadMode::WatchFromAny { initial_events: true },
                (Some(n), true) => ReadMode::WatchNotOlderThan(n.to_string()),
                (Some(n), false) => ReadMode::WatchAfter(n.to_string()),
            };
        }
        if verb == "get" {
            return match rv {
                None => ReadMode::MostRecent,
                Some("0") => ReadMode::Any,
                Some(n) => ReadMode::NotOlderThan(n.to_string()),
            };
        }
        if q.continue_token.is_some() {
            return ReadMode::Continue;
        }
        match (q.resource_version_match.as_deref(), rv) {
            (None, None) => ReadMode::MostRecent,
            (None, Some("0")) | (Some("NotOlderThan"), Some("0")) => ReadMode::Any,
            (None, Some(n)) => exact_or_not_older(n, q.limit.is_some()),
            (Some("NotOlderThan"), Some(n)) => exact_or_not_older(n, false),
            (Some("Exact"), Some(n)) if n != "0" => exact_or_not_older(n, true),
            _ => ReadMode::Invalid,
        }
    }
}

impl Query {
    /// Parses a query string; unknown parameters are ignored.
    pub fn parse(query: &str) -> Query {
        let mut q = Query::default();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            let value = percent_decode(value);
            let yes = value == "true" || value == "1";
            match key {
                "resourceVersion" if !value.is_empty() => q.resource_version = Some(value),
                "resourceVersionMatch" if !value.is_empty() => q.resource_version_match = Some(value),
                "watch" => q.watch = yes,
                "sendInitialEvents" => q.send_initial_events = yes,
                "allowWatchBookmarks" => q.allow_watch_bookmarks = yes,
                "fieldSelector" => q.field_selector = value,
                "labelSelector" => q.label_selector = value,
                "limit" => q.limit = value.parse().ok().filter(|l| *l > 0),
                "continue" if !value.is_empty() => q.continue_token = Some(value),
                _ => {}
            }
        }
        q
    }

    /// The node a field selector pins (`spec.nodeName=NODE`), as a kubelet's lists do.
    pub fn node_name(&self) -> Option<&str> {
        self.field_selector.split(',').find_map(|term| term.strip_prefix("spec.nodeName=")).filter(|n| !n.is_empty())
    }
}

/// How fresh a read asks its answer to be: the rows of the API concepts
/// page's tables for get, list and watch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReadMode {
    /// `resourceVersion` unset: the most recent state, consistent (a
    /// quorum read from etcd, or a cache proven as fresh).
    MostRecent,
    /// `resourceVersion="0"`: any state; may be much older than what the
    /// client has already seen (the page warns of partitions and stale caches).
    Any,
    /// `resourceVersion=N` (or `resourceVersionMatch=NotOlderThan`): at least as new as N.
    NotOlderThan(String),
    /// `resourceVersionMatch=Exact` (or N with `limit`): exactly at N, by request.
    Exact(String),
    /// A later page of a paginated list: at the first page's revision, by request.
    Continue,
    /// A combination the tables call invalid.
    Invalid,
    /// A watch with `resourceVersion` unset: the current state, then changes.
    WatchFromMostRecent {
        /// Whether it starts with the current state as synthetic events.
        initial_events: bool,
    },
    /// A watch with `resourceVersion="0"`: any state, then changes ("may
    /// return arbitrarily stale data", the page says).
    WatchFromAny {
        /// Whether it starts with the state as synthetic events.
        initial_events: bool,
    },
    /// A watch-list (`sendInitialEvents=true`) not older than N.
    WatchNotOlderThan(String),
    /// A watch of the changes after N.
    WatchAfter(String),
}

impl ReadMode {
    /// Whether the answer may be older than what was already committed
    /// when the request arrived: `Any` and `NotOlderThan` may, by design.
    pub fn may_be_stale(&self) -> bool {
        matches!(self, ReadMode::Any | ReadMode::NotOlderThan(_))
    }

    /// Whether the answer must be the most recent state.
    pub fn must_be_current(&self) -> bool {
        matches!(self, ReadMode::MostRecent)
    }
}

impl fmt::Display for ReadMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadMode::MostRecent => write!(f, "resourceVersion unset: the most recent state"),
            ReadMode::Any => write!(f, "resourceVersion=\"0\": any state, however old"),
            ReadMode::NotOlderThan(n) => write!(f, "resourceVersion=\"{n}\": not older than {n}"),
            ReadMode::Exact(n) => write!(f, "exactly at resourceVersion {n}"),
            ReadMode::Continue => write!(f, "a later page, at the first page's revision"),
            ReadMode::Invalid => write!(f, "an invalid resourceVersion combination"),
            ReadMode::WatchFromMostRecent { .. } => write!(f, "a watch from the most recent state"),
            ReadMode::WatchFromAny { .. } => write!(f, "a watch from any state, however old"),
            ReadMode::WatchNotOlderThan(n) => write!(f, "a watch-list not older than {n}"),
            ReadMode::WatchAfter(n) => write!(f, "a watch of the changes after {n}"),
        }
    }
}

/// Decodes `%XX` escapes and `+` (a space in a query); invalid escapes are kept as written.
pub fn percent_decode(s: &str) -> String {
    if !s.contains(['%', '+']) {
        return s.to_string();
    }
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' if i + 2 < b.len() => {
                let hex = std::str::from_utf8(&b[i + 1..i + 3]).ok().and_then(|h| u8::from_str_radix(h, 16).ok());
                match hex {
                    Some(v) => {
                        out.push(v);
                        i += 3;
                    }
                    None => {
                        out.push(b'%');
                        i += 1;
                    }
                }
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Encodes a query value: everything but unreserved characters as `%XX`.
pub fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uri(s: &str) -> RequestUri {
        RequestUri::parse(s).unwrap()
    }

    #[test]
    fn core_and_group_paths_name_their_resource() {
        let r = uri("/api/v1/namespaces/default/pods/web-0/status");
        assert_eq!((r.group.as_str(), r.namespace.as_str(), r.resource.as_str()), ("", "default", "pods"));
        assert_eq!((r.name.as_str(), r.subresource.as_str()), ("web-0", "status"));
        let r = uri("/apis/apps/v1/namespaces/default/statefulsets?limit=500");
        assert_eq!(
            (r.group.as_str(), r.version.as_str(), r.resource.as_str(), r.name.as_str()),
            ("apps", "v1", "statefulsets", "")
        );
        let r = uri("/api/v1/nodes/node-1");
        assert_eq!((r.namespace.as_str(), r.resource.as_str(), r.name.as_str()), ("", "nodes", "node-1"));
        // A namespace's own subresource is not a namespaced resource.
        let r = uri("/api/v1/namespaces/team-a/finalize");
        assert_eq!(
            (r.resource.as_str(), r.name.as_str(), r.subresource.as_str()),
            ("namespaces", "team-a", "finalize")
        );
        assert!(RequestUri::parse("/healthz").is_err());
    }

    #[test]
    fn list_modes_follow_the_resource_version_table() {
        let mode = |q: &str| uri(&format!("/api/v1/pods?{q}")).read_mode("list");
        assert_eq!(mode(""), ReadMode::MostRecent);
        assert_eq!(mode("resourceVersion=0"), ReadMode::Any);
        assert_eq!(mode("resourceVersion=42"), ReadMode::NotOlderThan("42".into()));
        assert_eq!(mode("resourceVersion=42&limit=500"), ReadMode::Exact("42".into()));
        assert_eq!(
            mode("resourceVersion=42&resourceVersionMatch=NotOlderThan&limit=500"),
            ReadMode::NotOlderThan("42".into())
        );
        assert_eq!(mode("resourceVersion=42&resourceVersionMatch=Exact"), ReadMode::Exact("42".into()));
        assert_eq!(mode("resourceVersion=0&resourceVersionMatch=Exact"), ReadMode::Invalid);
        assert_eq!(mode("resourceVersionMatch=NotOlderThan"), ReadMode::Invalid);
        assert_eq!(mode("limit=500&continue=abc"), ReadMode::Continue);
        assert!(mode("resourceVersion=0").may_be_stale() && !mode("").may_be_stale());
    }

    #[test]
    fn get_and_watch_modes_follow_their_tables() {
        let r = uri("/api/v1/namespaces/kube-node-lease/leases/node-1?resourceVersion=0");
        assert_eq!(r.read_mode("get"), ReadMode::Any);
        let w = |q: &str| uri(&format!("/api/v1/pods?watch=true&{q}")).read_mode("watch");
        assert_eq!(w("resourceVersion=17&allowWatchBookmarks=true"), ReadMode::WatchAfter("17".into()));
        assert_eq!(w("resourceVersion=0"), ReadMode::WatchFromAny { initial_events: true });
        assert_eq!(
            w("sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"),
            ReadMode::WatchFromMostRecent { initial_events: true }
        );
    }

    #[test]
    fn selectors_are_decoded_and_a_kubelet_list_names_its_node() {
        let r = uri("/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-1&labelSelector=app+in+(web)&resourceVersion=0");
        assert_eq!(r.query.field_selector, "spec.nodeName=node-1");
        assert_eq!(r.query.label_selector, "app in (web)");
        assert_eq!(r.query.node_name(), Some("node-1"));
        assert_eq!(percent_decode(&percent_encode("spec.nodeName=node-1")), "spec.nodeName=node-1");
        assert_eq!(percent_decode("100%"), "100%");
    }
}
