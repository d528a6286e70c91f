//! The error type of the cache module.

/// A boxed error from user-supplied code (key functions, index functions, transformers,
/// known-object lookups).
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// An error from a store, an indexer or a queue of the cache module.
///
/// Variants are grouped by who is at fault: user-supplied functions (`Key`, `Transform`,
/// `IndexWrite`, `IndexQuery`, `KnownObjects`), caller misuse (`IndexNotFound`,
/// `IndexerConflict`) and queue state (`Closed`).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The key function failed for an object (Go's `KeyError`). Nothing was stored or
    /// queued. Check the key function; the default one never fails.
    #[error("couldn't create key for object")]
    Key(#[source] BoxError),

    /// The transformer failed (Go's "transforming: …"). Nothing was stored or queued.
    #[error("transforming object")]
    Transform(#[source] BoxError),

    /// An index function failed on an object being written. client-go panics here; we
    /// refuse the write and leave the store exactly as it was. Index functions should be
    /// total over the objects a store holds.
    #[error(
        "unable to calculate an index entry for key {key:?} on index {index:?} (store left unchanged)"
    )]
    IndexWrite {
        /// The index whose function failed.
        index: String,
        /// The key of the object being written.
        key: String,
        /// What the index function returned.
        #[source]
        source: BoxError,
    },

    /// An index function failed on the object passed to [`Indexer::index`](super::Indexer::index).
    #[error("index function {index:?} failed on the query object")]
    IndexQuery {
        /// The index whose function failed.
        index: String,
        /// What the index function returned.
        #[source]
        source: BoxError,
    },

    /// No index with this name is registered. Register it with
    /// [`Indexer::add_indexers`](super::Indexer::add_indexers) or at construction.
    #[error("index with name {0} does not exist")]
    IndexNotFound(String),

    /// [`Indexer::add_indexers`](super::Indexer::add_indexers) was given names that are already
    /// registered; nothing was added. Pick other names.
    #[error("indexer conflict: {0:?}")]
    IndexerConflict(Vec<String>),

    /// A [`KnownObjects`](super::KnownObjects) lookup failed.
    #[error("looking up known object {key:?}")]
    KnownObjects {
        /// The key looked up.
        key: String,
        /// What the lookup returned.
        #[source]
        source: BoxError,
    },

    /// [`MutationCache::by_index`](super::MutationCache::by_index) was called on a cache
    /// built without an indexer. Pass one in
    /// [`MutationCacheOptions::indexer`](super::MutationCacheOptions::indexer).
    #[error("no indexer has been provided to the mutation cache")]
    NoIndexer,

    /// [`Heap::delete`](super::Heap::delete) found no object under this key.
    #[error("object {0:?} not found")]
    NotFound(String),

    /// The queue is closed and empty (Go's `ErrFIFOClosed`); the consumer should stop. A
    /// closed [`Heap`](super::Heap) also refuses writes with it.
    #[error("{0}: manipulating with closed queue")]
    Closed(String),
}

/// `Result` with the cache module's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
