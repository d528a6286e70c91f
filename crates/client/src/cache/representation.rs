//! How a store holds an object: the seam that lets the cache's in-memory form change.
//!
//! Two forms exist. [`ArcRepr`] holds the decoded object as an `Arc<K>`: one allocation
//! shared with the FIFO, every handler and every lister, nothing to decode on read.
//! [`CompactRepr`] holds it compressed (a tenth of the memory or less) and decodes it on
//! every read. [`SharedOrCompact`] is the choice between the two made at run time; it is
//! what a [`Cache`](super::Cache) and every informer use (shared unless the informer was
//! asked for a compact cache).
//!
//! Only [`ThreadSafeStore`](super::ThreadSafeStore) and [`Cache`](super::Cache) are generic over
//! the representation. Everything that *uses* a store sees `Arc<K>` through the
//! [`Store`](super::Store), [`Indexer`](super::Indexer) and [`KnownObjects`](super::KnownObjects)
//! traits, so DeltaFIFO, RealFIFO and the reflector do not change with the representation.

use std::sync::Arc;

use kubeclient_machinery::Object;

use super::compact::{CompactObject, CompactRepr};

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
///     fn to_object(&self, stored: &Box<[u8]>) -> Option<Arc<DynamicObject>> {
///         serde_json::from_slice(stored).ok().map(Arc::new)
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

    /// Reads a stored object back; `None` when the stored form cannot be read (a broken
    /// representation: the store then treats the object as absent, never panics).
    fn to_object(&self, stored: &Self::Stored) -> Option<Arc<K>>;

    /// Whether reading an object back decodes it (costly). The store then keeps each
    /// object's index values beside it, so that updates and deletes never decode the
    /// object they replace.
    fn decodes_on_read(&self) -> bool {
        false
    }
}

/// The default representation: the shared `Arc<K>` itself (no copy, no encoding).
#[derive(Clone, Copy, Debug, Default)]
pub struct ArcRepr;

impl<K: Object> Representation<K> for ArcRepr {
    type Stored = Arc<K>;

    fn to_stored(&self, obj: Arc<K>) -> Arc<K> {
        obj
    }

    fn to_object(&self, stored: &Arc<K>) -> Option<Arc<K>> {
        Some(Arc::clone(stored))
    }
}

/// The representation chosen at run time: objects shared as `Arc<K>` (the default), or held
/// compact ([`CompactRepr`]). The default representation of a [`Cache`](super::Cache).
///
/// In the compact form, an object that cannot be encoded (it does not serialize) is kept
/// shared instead, so nothing is ever dropped from the cache.
///
/// # Examples
///
/// ```
/// use k8s_openapi::api::core::v1::Pod;
/// use kubeclient::cache::{CompactRepr, SharedOrCompact};
///
/// let shared = SharedOrCompact::<Pod>::Shared;
/// let compact = SharedOrCompact::Compact(CompactRepr::<Pod>::new());
/// assert!(!shared.is_compact() && compact.is_compact());
/// ```
pub enum SharedOrCompact<K> {
    /// Objects held as `Arc<K>`.
    Shared,
    /// Objects held compressed, decoded on read.
    Compact(CompactRepr<K>),
}

impl<K> Clone for SharedOrCompact<K> {
    fn clone(&self) -> Self {
        match self {
            SharedOrCompact::Shared => SharedOrCompact::Shared,
            SharedOrCompact::Compact(codec) => SharedOrCompact::Compact(codec.clone()),
        }
    }
}

impl<K> std::fmt::Debug for SharedOrCompact<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SharedOrCompact::Shared => f.write_str("Shared"),
            SharedOrCompact::Compact(codec) => f.debug_tuple("Compact").field(codec).finish(),
        }
    }
}

impl<K> SharedOrCompact<K> {
    /// Whether objects are held compact.
    #[must_use]
    pub fn is_compact(&self) -> bool {
        matches!(self, SharedOrCompact::Compact(_))
    }
}

/// One object as a [`SharedOrCompact`] store holds it.
pub enum StoredObject<K> {
    /// The shared object.
    Shared(Arc<K>),
    /// Its compact form.
    Compact(CompactObject),
}

impl<K: Object> StoredObject<K> {
    /// The object's resourceVersion, read without decoding it.
    #[must_use]
    pub fn resource_version(&self) -> &str {
        match self {
            StoredObject::Shared(obj) => obj.resource_version(),
            StoredObject::Compact(compact) => compact.resource_version(),
        }
    }
}

impl<K: Object> SharedOrCompact<K> {
    /// Decodes a stored object (a clone of the `Arc` when it is shared).
    pub(crate) fn read(&self, stored: &StoredObject<K>) -> Option<Arc<K>> {
        match (stored, self) {
            (StoredObject::Shared(obj), _) => Some(Arc::clone(obj)),
            (StoredObject::Compact(compact), SharedOrCompact::Compact(codec)) => {
                match codec.decode(compact) {
                    Ok(obj) => Some(Arc::new(obj)),
                    Err(err) => {
                        tracing::error!(error = %kubeclient_machinery::ErrorChain(&err), "a compact cache entry did not decode; it reads as absent");
                        None
                    }
                }
            }
            (StoredObject::Compact(_), SharedOrCompact::Shared) => None,
        }
    }
}

impl<K: Object> Representation<K> for SharedOrCompact<K> {
    type Stored = StoredObject<K>;

    fn to_stored(&self, obj: Arc<K>) -> StoredObject<K> {
        match self {
            SharedOrCompact::Shared => StoredObject::Shared(obj),
            SharedOrCompact::Compact(codec) => match codec.encode(&obj) {
                Ok(compact) => StoredObject::Compact(compact),
                Err(err) => {
                    tracing::warn!(error = %kubeclient_machinery::ErrorChain(&err), "an object could not be held compact; it is kept decoded");
                    StoredObject::Shared(obj)
                }
            },
        }
    }

    fn to_object(&self, stored: &StoredObject<K>) -> Option<Arc<K>> {
        self.read(stored)
    }

    fn decodes_on_read(&self) -> bool {
        self.is_compact()
    }
}
