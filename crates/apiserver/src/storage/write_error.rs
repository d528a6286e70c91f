//! [`WriteError`]: the error types a [`Store`](super::Store) write may fail with on its
//! own. The in-memory store never fails a write itself (only a decision does); a store
//! over a backend does when the backend fails or the write keeps losing its
//! compare-and-swap, and reports it as the Status kube-apiserver answers then, converted
//! into the caller's error type.

use kubeclient_machinery::Status;

use super::BackendError;

/// An error type a failed storage write can be reported as.
pub trait WriteError: Sized {
    /// The error for a write storage failed, with the Status the API answers for it.
    fn storage_failed(status: Box<Status>) -> Self;
}

impl WriteError for Box<Status> {
    fn storage_failed(status: Box<Status>) -> Self {
        status
    }
}

/// For callers that only need to know that a write failed.
impl WriteError for () {
    fn storage_failed(_: Box<Status>) -> Self {}
}

impl WriteError for &'static str {
    fn storage_failed(_: Box<Status>) -> Self {
        "the storage backend failed the write"
    }
}

impl WriteError for String {
    fn storage_failed(status: Box<Status>) -> Self {
        status.message
    }
}

impl WriteError for BackendError {
    fn storage_failed(status: Box<Status>) -> Self {
        BackendError::Unavailable {
            context: "writing".to_owned(),
            source: status.message.into(),
        }
    }
}
