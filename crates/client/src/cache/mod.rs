//! The informer's cache core (client-go's `tools/cache`): the [`Store`] / [`Indexer`] that
//! holds objects, and the two queues a reflector writes into, [`DeltaFIFO`] and [`RealFIFO`].
//!
//! ```text
//! reflector ──add/update/delete/replace/resync──▶ Queue (DeltaFIFO | RealFIFO)
//!                                                   │ pop(process)  (under the queue lock)
//!                                                   ▼
//!                                          process loop ──▶ Indexer (Cache) ──▶ handlers
//!                                                   ▲                 │
//!                                                   └── KnownObjects ─┘  (replace, resync)
//! ```
//!
//! Start with [`Cache`] (a [`Store`] and [`Indexer`]) and [`DeltaFIFO`] / [`RealFIFO`] (both
//! [`Queue`]s). The rest of client-go's toolbox is here too: the plain [`FIFO`]
//! (requeue on error), the keyed priority queue [`Heap`], the expiring store
//! [`ExpirationCache`], the [`MutationCache`] that overlays a controller's own writes on an
//! informer's cache, the [`UndeltaStore`] that pushes whole snapshots, and [`Transaction`]
//! writes. These are plain synchronous data structures; only [`Queue::pop`] is async,
//! and no lock is held across an await.
//!
//! # How the store holds objects
//!
//! A [`Cache`] holds each object in one of two forms, chosen when it is made
//! ([`SharedOrCompact`], the seam being [`Representation`]):
//! - **shared** (the default): the decoded `Arc<K>`, shared with the queue, every handler
//!   and every lister, never deep-copied; reads cost an `Arc` clone.
//! - **compact** ([`CompactRepr`], an informer's
//!   [`InformerOptions::compact_cache`] or the factory's `compact_cache(true)`): the object's
//!   JSON compressed with a zstd dictionary trained on the informer's first objects, about
//!   a thirtieth of the decoded object's heap on the benchmark's Pods; every read decodes
//!   (~17 µs per Pod). The store keeps each object's index values beside it, so updates
//!   and deletes never decode the object they replace, and it hands the replaced object
//!   back in its stored form ([`Cache::swap`]): an informer decodes the old object of an
//!   update on the listener's task, once for all handlers, never on the watch path.
//!
//! Everything above the store — the queues' [`KnownObjects`] view, the reflector,
//! informers, listers — talks to the [`Store`], [`Indexer`] and [`KnownObjects`] traits,
//! which speak `Arc<K>` only, so they work unchanged over either form.
//!
//! # Which queue informers use
//!
//! Both queues implement [`Queue`], so an informer can run on either.
//! **Our informers should default to [`RealFIFO`]**, as client-go's have since 1.33
//! (`InOrderInformers`, locked on since 1.36): it hands out changes in exactly the order the
//! reflector saw them, so the cache moves through the same sequence of states as the server
//! and handlers see events in watch order across objects. [`DeltaFIFO`] groups changes per
//! object (an object with a backlog of changes is processed in one pop, ahead of objects
//! queued after its first change), which reorders events across objects. It remains
//! available, with client-go's classic semantics, for users who depend on them.
//! [`RealFIFO`]'s atomic mode (client-go's `AtomicFIFO` feature, off by default there and
//! here: [`InformerOptions::atomic_events`]) delivers a relist as one
//! [`Delta::ReplacedAll`] that the informer applies to its cache as one replacement, and a
//! resync as one [`Delta::SyncAll`]. client-go's `Bookmark` deltas are not queued.
//!
//! # Differences from client-go, on purpose
//!
//! - A failing index function refuses the write with [`Error::IndexWrite`] and leaves the
//!   store unchanged; client-go panics.
//! - `replace` computes every key and transform before changing anything, so a failure
//!   queues or stores nothing; client-go may have queued part of the list.
//! - Deltas are typed: only [`Delta::Deleted`] can carry a tombstone.
//! - DeltaFIFO's `replace` infers queue-side deletions in queue order (client-go: map order,
//!   unspecified), which makes its output deterministic.

mod backoff;
mod compact;
mod delta;
mod delta_fifo;
mod error;
mod expiration_cache;
mod fifo;
mod handler;
mod heap;
mod index;
mod list_watch;
mod lister;
mod mutation_cache;
mod pending_notification;
mod processor;
mod processor_listener;
mod queue;
mod real_fifo;
mod reflector;
mod representation;
mod retry_with_deadline;
mod shared_informer;
mod store;
mod thread_safe_store;
mod transaction;
mod undelta_store;

pub use backoff::Backoff;
pub use compact::{
    CompactError, CompactObject, CompactRepr, DICTIONARY_SIZE, SAMPLE_PREFIX, TRAINING_SAMPLES,
};
pub use delta::{Delta, DeltaType, Deltas, ReplacedAllInfo};
pub use delta_fifo::{DeltaFIFO, DeltaFifoOptions};
pub use error::{BoxError, Error, Result};
pub use expiration_cache::{ExpirationCache, ExpirationPolicy, TimestampedEntry, TtlPolicy};
pub use fifo::{FIFO, PopError, PopProcessFn, ProcessError};
pub use handler::{
    FilteringResourceEventHandler, Notification, ResourceEventHandler, ResourceEventHandlerFuncs,
};
pub use heap::{Heap, LessFunc};
pub use index::{IndexFunc, Indexer, Indexers, NAMESPACE_INDEX, meta_namespace_index_func};
pub use list_watch::{ApiListWatch, BoxFuture, ListWatchMode, ListerWatcher, TweakListOptions};
pub use lister::{Lister, NamespaceLister};
pub use mutation_cache::{MutationCache, MutationCacheOptions};
pub use processor::{EventHandlerRegistration, LISTENER_CAPACITY, MINIMUM_RESYNC_PERIOD};
pub use queue::{IncrementalReplace, PopFuture, ProcessFn, Queue};
pub use real_fifo::{RealFIFO, RealFifoOptions};
pub use reflector::{
    DEFAULT_MAX_QUEUED_EVENTS, DEFAULT_MIN_WATCH_TIMEOUT, DEFAULT_PAGE_SIZE, Reflector,
    ReflectorOptions, WatchErrorHandler,
};
pub use representation::{ArcRepr, Representation, SharedOrCompact, StoredObject};
pub use shared_informer::{InformerError, InformerOptions, SharedIndexInformer};
pub use store::{Cache, CacheOptions, KeyFunc, KnownObjects, Store, TransformFunc};
pub use thread_safe_store::ThreadSafeStore;
pub use transaction::{Transaction, TransactionError, TransactionStore, TransactionType};
pub use undelta_store::{PushFunc, UndeltaStore};

#[cfg(test)]
mod pipeline_tests;
#[cfg(test)]
mod test_util;
