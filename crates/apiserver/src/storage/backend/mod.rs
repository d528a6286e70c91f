//! The storage seam: [`Backend`], what every store under the server implements — the
//! in-memory MVCC [`Store`](super::Store) (the default) and etcd v3 (`EtcdBackend`, with
//! the `etcd` feature) — kube-apiserver's `storage.Interface`.
//!
//! A backend stores objects per resource under keys (`namespace/name`, or `name` for
//! cluster-scoped objects) and gives them one global, growing revision: an object's
//! resourceVersion is the revision of its last write (etcd's mod revision). Writes are
//! conditional on that revision, so two servers over one backend never lose an update;
//! lists read one consistent revision (and can be continued at it); watches replay every
//! change after a revision, and answer [`BackendError::Expired`] (410 Gone) once that
//! revision was compacted away.
//!
//! The methods return boxed futures so that the server can hold any backend as
//! `Arc<dyn Backend>`.
//!
//! ```
//! use kubeclient_apiserver::storage::{Backend, Store};
//! use kubeclient_machinery::GroupResource;
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let backend: std::sync::Arc<dyn Backend> = std::sync::Arc::new(Store::new(100));
//! let configmaps = GroupResource::new("", "configmaps");
//! let created = backend
//!     .create(&configmaps, "default/cfg", serde_json::json!({"metadata": {"name": "cfg"}}))
//!     .await?;
//! let stored = backend.get(&configmaps, "default/cfg").await?;
//! assert_eq!(stored.map(|o| o.rv), Some(created.rv));
//! # Ok::<(), kubeclient_apiserver::storage::BackendError>(())
//! # }).unwrap();
//! ```

mod change_stream;
mod error;
mod keyspace;
mod memory;
mod status;
#[cfg(test)]
pub(crate) mod suite;

use std::sync::Arc;

use futures_util::future::BoxFuture;
use kubeclient_machinery::GroupResource;
use serde_json::Value;

pub use change_stream::ChangeStream;
pub use error::BackendError;
pub use keyspace::{Entry, Event, EventStream, Everything};

use super::{ListPage, StoredObject};

/// What a backend's call returns.
pub type BackendFuture<'a, T> = BoxFuture<'a, Result<T, BackendError>>;

/// What one page of a list reads (kube-apiserver's `storage.ListOptions`).
#[derive(Clone, Copy, Debug, Default)]
pub struct ListOptions<'a> {
    /// Only keys with this prefix (`"ns/"` for one namespace), or `""` for all.
    pub prefix: &'a str,
    /// `None`: the latest state (a quorum read). `Some(rv)`: the state exactly at `rv`
    /// (a continued list reads at the revision of its first page).
    pub at: Option<u64>,
    /// Start after this key (a continue token's position).
    pub start_after: Option<&'a str>,
    /// At most this many objects; 0 for no limit.
    pub limit: usize,
}

/// A store of objects with revisions, conditional writes and watches.
///
/// Invariants every implementation keeps (the shared suite checks them against each):
/// - the revision only grows, and every write that stores something takes a new one;
///   the object it stores carries it as `rv` and as `metadata.resourceVersion`;
/// - an update whose result equals the stored object stores nothing and keeps its
///   revision;
/// - a list is one consistent revision; its page ends with `continue_after` only when
///   keys remain after it, and `remaining` counts them;
/// - a watch after revision R yields every change of its keys with `rv > R`, in order,
///   each with the state before it, or fails with [`BackendError::Expired`] when R was
///   compacted.
pub trait Backend: Send + Sync + std::fmt::Debug {
    /// The current revision.
    fn revision(&self) -> BackendFuture<'_, u64>;

    /// The object under `key`, if any.
    fn get<'a>(
        &'a self,
        resource: &'a GroupResource,
        key: &'a str,
    ) -> BackendFuture<'a, Option<Arc<StoredObject>>>;

    /// One page of the objects of a resource, in key order.
    fn list<'a>(
        &'a self,
        resource: &'a GroupResource,
        options: ListOptions<'a>,
    ) -> BackendFuture<'a, ListPage>;

    /// Stores a new object; [`BackendError::AlreadyExists`] when the key is taken.
    fn create<'a>(
        &'a self,
        resource: &'a GroupResource,
        key: &'a str,
        object: Value,
    ) -> BackendFuture<'a, Arc<StoredObject>>;

    /// Replaces the object under `key` if its revision is still `expected_revision`;
    /// [`BackendError::Conflict`] when it moved on, [`BackendError::NotFound`] when it is
    /// gone. Returns the stored object (the old one when nothing changed).
    fn update<'a>(
        &'a self,
        resource: &'a GroupResource,
        key: &'a str,
        object: Value,
        expected_revision: u64,
    ) -> BackendFuture<'a, Arc<StoredObject>>;

    /// Removes the object under `key` (if its revision is `expected_revision`, when
    /// given) and returns its last state.
    fn delete<'a>(
        &'a self,
        resource: &'a GroupResource,
        key: &'a str,
        expected_revision: Option<u64>,
    ) -> BackendFuture<'a, Arc<StoredObject>>;

    /// Every change of the keys with `prefix` after revision `after`, then the live ones.
    fn watch<'a>(
        &'a self,
        resource: &'a GroupResource,
        prefix: &'a str,
        after: u64,
    ) -> BackendFuture<'a, ChangeStream>;

    /// Forgets the history up to the current revision (which it returns): lists at and
    /// watches from earlier revisions fail with [`BackendError::Expired`].
    fn compact(&self) -> BackendFuture<'_, u64>;

    /// One page of every object of every resource (what a watch cache starts from): at
    /// the current revision, or at `at` for a continued page, after the backend's key
    /// `start_after`, at most `limit` objects (0: no limit).
    ///
    /// Only backends that can feed a watch cache implement it (etcd); the default answers
    /// [`BackendError::Config`].
    fn list_everything<'a>(
        &'a self,
        at: Option<u64>,
        start_after: Option<&'a str>,
        limit: usize,
    ) -> BackendFuture<'a, Everything> {
        let _ = (at, start_after, limit);
        cannot_feed_a_cache()
    }

    /// Every write of every resource after revision `after`, in revision order, then the
    /// live ones (what keeps a watch cache current).
    ///
    /// As [`list_everything`](Self::list_everything), only for backends that can feed a
    /// watch cache.
    fn watch_everything(&self, after: u64) -> BackendFuture<'_, EventStream> {
        let _ = after;
        cannot_feed_a_cache()
    }
}

/// The answer of a backend that cannot feed a watch cache.
fn cannot_feed_a_cache<'a, T: Send + 'a>() -> BackendFuture<'a, T> {
    Box::pin(async {
        Err(BackendError::Config {
            context: "this backend cannot feed a watch cache".to_owned(),
            source: None,
        })
    })
}
