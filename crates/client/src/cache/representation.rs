//! How a store holds an object: the seam that lets the cache's in-memory form change.
//!
//! Today every store holds the decoded object as an `Arc<K>` ([`ArcRepr`]): one allocation
//! shared with the FIFO, every handler and every lister. A compact encoded form (for
//! example the object's JSON or a compressed form, decoded on read) is planned to cut the
//! cache's memory, which is its main cost (docs/BENCHMARKS.md).
//!
//! Only [`ThreadSafeStore`](super::ThreadSafeStore) and [`Cache`](super::Cache) are generic over
//! the representation. Everything that *uses* a store sees `Arc<K>` through the
//! [`Store`](super::Store), [`Indexer`](super::Indexer) and [`KnownObjects`](super::KnownObjects)
//! traits, so DeltaFIFO, RealFIFO, the reflector and informers do not change when a new
//! representation is added.

use std::sync::Arc;

use kubeclient_machinery::Object;

/// How a store holds an object of type `K`.
///
/// A representation must round-trip: `to_object(&to_stored(obj))` is equal to `obj`
/// (the same values, not necessarily the same allocation). Both conversions run under the
/// store's lock, so they should be cheap; encoded forms decode on every read.
///
/// # Examples
///
/// A representation that keeps objects as JSON bytes:
///
/// ```
/// use std::sync::Arc;
/// use kubeclient_machinery::DynamicObject;
/// use kubeclient::cache::{Cache, CacheOptions, KnownObjects, Representation, Store};
///
/// struct Json;
/// impl Representation<DynamicObject> for Json {
///     type Stored = Box<[u8]>;
///     fn to_stored(&self, obj: Arc<DynamicObject>) -> Box<[u8]> {
///         serde_json::to_vec(&*obj).unwrap_or_default().into()
///     }
///     fn to_object(&self, stored: &Box<[u8]>) -> Arc<DynamicObject> {
///         Arc::new(serde_json::from_slice(stored).unwrap_or_default())
///     }
/// }
///
/// let cache = Cache::with_representation(CacheOptions::default(), Json);
/// cache.add(Arc::new(DynamicObject::new("v1", "ConfigMap", "a"))).unwrap();
/// assert!(cache.get_by_key("a").unwrap().is_some());
/// ```
pub trait Representation<K>: Send + Sync + 'static {
    /// What the store keeps per object.
    type Stored: Send + Sync + 'static;

    /// Converts an object for storage.
    fn to_stored(&self, obj: Arc<K>) -> Self::Stored;

    /// Reads a stored object back.
    fn to_object(&self, stored: &Self::Stored) -> Arc<K>;
}

/// The default representation: the shared `Arc<K>` itself (no copy, no encoding).
#[derive(Clone, Copy, Debug, Default)]
pub struct ArcRepr;

impl<K: Object> Representation<K> for ArcRepr {
    type Stored = Arc<K>;

    fn to_stored(&self, obj: Arc<K>) -> Arc<K> {
        obj
    }

    fn to_object(&self, stored: &Arc<K>) -> Arc<K> {
        Arc::clone(stored)
    }
}
