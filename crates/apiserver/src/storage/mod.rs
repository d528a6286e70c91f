//! In-memory MVCC storage: one global revision counter, objects per resource, and a bounded
//! history of changes per resource that serves watches (and paginated lists) from older
//! revisions.
//!
//! Everything here is synchronous and guarded by one mutex: a write is atomic, and
//! watchers are registered under the same lock as writes, so a watch never misses or
//! duplicates a change. Expensive writes (patches, applies) compute and encode outside the
//! lock and commit by compare-and-swap ([`Store::update`]), so a patch of a huge object
//! does not stall reads of the others.

mod change;
mod object;
mod store;

pub use change::{Change, ChangeKind, event_line};
pub(crate) use object::TypeMetaFirst;
pub use object::{Prepared, StoredObject};
pub use store::{
    ListPage, ListRequest, Snapshot, StorageError, Store, WatchFrom, WatchQueue, WatchSubscription,
    WatcherLimits, Write, WriteOutcome,
};
