//! `kube::runtime::watcher`: how a controller's watches list and filter.
//!
//! The host runs the list and the watch; [`Config`] says what it watches
//! (selectors) and how its first list after a (re)start reads
//! ([`ListSemantic`], [`InitialListStrategy`]), which becomes the plugin
//! manifest's `listMode`.

/// What a list may return (`resourceVersion` of the first list).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ListSemantic {
    /// The most recent state (`resourceVersion` unset): a quorum read.
    MostRecent,
    /// Any state the API server has, however old (`resourceVersion="0"`):
    /// kube's default, and the stale first list of issue #59848.
    #[default]
    Any,
}

/// How the first state is fetched.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum InitialListStrategy {
    /// A list, then a watch.
    #[default]
    ListWatch,
    /// A watch-list (KEP-3157): a consistent stream of the current state.
    StreamingList,
}

/// What a watch selects and how it lists, as kube's `watcher::Config`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Config {
    /// Label selector, e.g. `app=web`.
    pub label_selector: Option<String>,
    /// Field selector, e.g. `spec.nodeName=node-1`.
    pub field_selector: Option<String>,
    /// The server-side timeout of a watch (the host manages watches; kept
    /// for kube's API).
    pub timeout: Option<u32>,
    /// What the first list may return.
    pub list_semantic: ListSemantic,
    /// How the first state is fetched.
    pub initial_list_strategy: InitialListStrategy,
    /// Page size of the first list (the host lists whole; kept for kube's API).
    pub page_size: Option<u32>,
    /// Whether to ask for bookmarks (the host handles them).
    pub bookmarks: bool,
}

impl Config {
    /// Only objects whose labels match `label_selector`.
    #[must_use]
    pub fn labels(mut self, label_selector: &str) -> Self {
        self.label_selector = Some(label_selector.to_owned());
        self
    }

    /// Only objects whose fields match `field_selector`.
    #[must_use]
    pub fn fields(mut self, field_selector: &str) -> Self {
        self.field_selector = Some(field_selector.to_owned());
        self
    }

    /// The first list reads any state (`resourceVersion="0"`, the default).
    #[must_use]
    pub fn any_semantic(mut self) -> Self {
        self.list_semantic = ListSemantic::Any;
        self
    }

    /// The first list reads the most recent state (a quorum read).
    #[must_use]
    pub fn list_semantic(mut self, semantic: ListSemantic) -> Self {
        self.list_semantic = semantic;
        self
    }

    /// The first state comes from a watch-list (consistent).
    #[must_use]
    pub fn streaming_lists(mut self) -> Self {
        self.initial_list_strategy = InitialListStrategy::StreamingList;
        self
    }

    /// Asks for bookmarks.
    #[must_use]
    pub fn disable_bookmarks(mut self) -> Self {
        self.bookmarks = false;
        self
    }

    /// The manifest's `listMode` this configuration asks for.
    pub(crate) fn list_mode(&self) -> recon_abi::ListMode {
        match (self.initial_list_strategy, self.list_semantic) {
            (InitialListStrategy::StreamingList, _) => recon_abi::ListMode::Consistent,
            (_, ListSemantic::MostRecent) => recon_abi::ListMode::Quorum,
            (_, ListSemantic::Any) => recon_abi::ListMode::Any,
        }
    }
}

/// A watch failed. In a Recon plugin the host runs every list and watch
/// and relists by itself, so no stream yields one; the type is kube's.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The first list failed.
    #[error("failed to perform initial object list: {0}")]
    InitialListFailed(#[source] crate::Error),
    /// A watch could not start.
    #[error("failed to start watching object: {0}")]
    WatchStartFailed(#[source] crate::Error),
    /// A watch failed.
    #[error("error returned by apiserver during watch: {0}")]
    WatchError(#[source] Box<kube_core::Status>),
    /// A watch stream failed.
    #[error("watch stream failed: {0}")]
    WatchFailed(#[source] crate::Error),
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
