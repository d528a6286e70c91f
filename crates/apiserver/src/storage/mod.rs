//! In-memory MVCC storage: one global revision counter, objects per resource, and a bounded
//! history of changes per resource that serves watches (and paginated lists) from older
//! revisions.
//!
//! Everything here is synchronous and guarded by one mutex: a write (including the patch
//! computation the caller hands in) is atomic, and watchers are registered under the same
//! lock as writes, so a watch never misses or duplicates a change.

mod change;
mod object;
mod store;

pub use change::{Change, ChangeKind, event_line};
pub use object::StoredObject;
pub use store::{
    ListPage, ListRequest, Snapshot, StorageError, Store, WatchFrom, WatchSubscription, Write,
    WriteOutcome,
};
