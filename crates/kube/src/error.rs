//! `kube::Error`: what an [`Api`](crate::Api) call fails with, shaped like
//! kube-client's, so that `Err(kube::Error::Api(s)) if s.code == 409`
//! matches a conflict as it does against a real API server.

use kube_core::Status;

/// An `Api` call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The API server refused or failed the request: its `Status`, with
    /// the HTTP code (`code`) and the Kubernetes reason (`reason`, e.g.
    /// `Conflict`, `NotFound`, `Forbidden`).
    #[error("ApiError: {0} ({0:?})")]
    Api(#[source] Box<Status>),
    /// The object the API server returned does not decode as the `Api`'s
    /// type, or the object sent does not encode as a Kubernetes object.
    #[error("Error deserializing response: {0}")]
    SerdeError(#[source] serde_json::Error),
    /// The request cannot be built (e.g. server-side apply without a
    /// field manager).
    #[error("Failed to build request: {0}")]
    BuildRequest(#[source] kube_core::request::Error),
    /// The request asks for something a Recon plugin cannot do yet; the
    /// message names it and what to use instead.
    #[error("not supported in a Recon plugin: {0}")]
    Unsupported(String),
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The kube `Status` of a failed Recon request.
pub(crate) fn status(status: &recon_abi::Status) -> Status {
    Status::failure(&status.message, &format!("{:?}", status.reason)).with_code(status.code)
}
