//! Storage: the seam every store of the server implements ([`Backend`], kube-apiserver's
//! `storage.Interface`), the in-memory MVCC [`Store`] (the default) and, with the `etcd`
//! feature, the etcd v3 backend (`EtcdBackend`), which keeps objects as kube-apiserver keeps
//! them; with the `disk` feature, a single-process backend in a file on disk
//! (`DiskBackend`, redb).
//!
//! The in-memory store: one global revision counter, objects per resource, and a bounded
//! history of changes per resource that serves watches (and paginated lists) from older
//! revisions. Everything in it is synchronous and guarded by one mutex: a write is atomic, and
//! watchers are registered under the same lock as writes, so a watch never misses or
//! duplicates a change. Expensive writes (patches, applies) compute and encode outside the
//! lock and commit by compare-and-swap ([`Store::update`]), so a patch of a huge object
//! does not stall reads of the others.

mod backend;
mod cacher;
mod change;
#[cfg(feature = "disk")]
mod disk;
#[cfg(feature = "etcd")]
mod etcd;
#[cfg(any(feature = "etcd", feature = "disk"))]
mod keys;
mod list_page;
mod object;
mod storage_error;
mod store;
mod write_error;

pub use backend::{
    Backend, BackendError, BackendFuture, ChangeStream, Entry, Event, EventStream, Everything,
    ListOptions,
};
pub use cacher::{Cacher, OpenBackend};
pub use change::{Change, ChangeKind, event_line};
#[cfg(feature = "disk")]
pub use disk::DiskBackend;
#[cfg(feature = "etcd")]
pub(crate) use etcd::test_etcd;
#[cfg(feature = "etcd")]
pub use etcd::{EtcdBackend, EtcdConfig};
pub use list_page::ListPage;
pub(crate) use object::TypeMetaFirst;
pub use object::{Prepared, StoredObject};
pub use storage_error::StorageError;
pub use store::{
    AppliedObserver, ListRequest, Snapshot, Store, WatchFrom, WatchQueue, WatchSubscription,
    WatcherLimits, Write, WriteOutcome,
};
pub use write_error::WriteError;
