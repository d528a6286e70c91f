//! The [`Store`] and [`Indexer`] contracts, the [`KnownObjects`] view a FIFO needs, and
//! [`Cache`], the store an informer keeps (Go's `cache` = ThreadSafeStore + key function).

use std::fmt;
use std::sync::Arc;

use kubeclient_machinery::{Object, meta_namespace_key};

use super::error::{BoxError, Error, Result};
use super::index::{Indexer, Indexers};
use super::representation::{Representation, SharedOrCompact};
use super::thread_safe_store::ThreadSafeStore;
use super::transaction::{Transaction, TransactionType};

/// Computes an object's key. The default everywhere is
/// [`meta_namespace_key`] (`namespace/name`, or `name`), which never fails.
pub type KeyFunc<K> = Arc<dyn Fn(&K) -> Result<String, BoxError> + Send + Sync>;

/// Rewrites an object before it is stored or queued, e.g. to drop `managedFields` and save
/// memory. It should be idempotent: objects can pass through it more than once.
pub type TransformFunc<K> = Arc<dyn Fn(Arc<K>) -> Result<Arc<K>, BoxError> + Send + Sync>;

/// The key of `obj` under `key_func` (`None` = [`meta_namespace_key`]).
pub(super) fn key_of<K: Object>(key_func: Option<&KeyFunc<K>>, obj: &K) -> Result<String> {
    match key_func {
        Some(func) => func(obj).map_err(Error::Key),
        None => Ok(meta_namespace_key(obj)),
    }
}

/// Applies `transform` (if any) to `obj`.
pub(super) fn transform<K>(transform: Option<&TransformFunc<K>>, obj: Arc<K>) -> Result<Arc<K>> {
    match transform {
        Some(func) => func(obj).map_err(Error::Transform),
        None => Ok(obj),
    }
}

/// What a FIFO needs to know about the objects already in the cache (Go's
/// `KeyListerGetter`): it infers deletions on `replace` and re-delivers objects on `resync`.
/// In an informer this is the [`Indexer`].
pub trait KnownObjects<K>: Send + Sync {
    /// Every key, in no particular order.
    fn list_keys(&self) -> Vec<String>;

    /// The object under `key`, `None` when absent.
    ///
    /// # Errors
    ///
    /// Whatever the implementation's lookup fails with ([`Error::KnownObjects`] by
    /// convention). [`Cache`] never fails.
    fn get_by_key(&self, key: &str) -> Result<Option<Arc<K>>>;
}

/// A keyed object store (Go's `cache.Store`). Objects are shared `Arc<K>`; treat them as
/// immutable.
pub trait Store<K>: KnownObjects<K> {
    /// Stores `obj` under its key (identical to [`update`](Self::update)).
    ///
    /// # Errors
    ///
    /// [`Error::Key`], [`Error::Transform`] or [`Error::IndexWrite`]; nothing is stored.
    fn add(&self, obj: Arc<K>) -> Result<()>;

    /// Stores `obj` under its key, replacing the previous object.
    ///
    /// # Errors
    ///
    /// [`Error::Key`], [`Error::Transform`] or [`Error::IndexWrite`]; nothing is stored.
    fn update(&self, obj: Arc<K>) -> Result<()>;

    /// Removes the object with `obj`'s key; a missing object is not an error.
    ///
    /// # Errors
    ///
    /// [`Error::Key`].
    fn delete(&self, obj: &K) -> Result<()>;

    /// Removes the object under `key` (used for tombstones, whose object may be absent);
    /// a missing key is a no-op.
    fn delete_by_key(&self, key: &str);

    /// The stored object with `obj`'s key.
    ///
    /// # Errors
    ///
    /// [`Error::Key`].
    fn get(&self, obj: &K) -> Result<Option<Arc<K>>>;

    /// Every object, in no particular order.
    fn list(&self) -> Vec<Arc<K>>;

    /// Replaces the whole contents atomically.
    ///
    /// # Errors
    ///
    /// [`Error::Key`], [`Error::Transform`] or [`Error::IndexWrite`] for any item; the store
    /// is unchanged.
    fn replace(&self, list: Vec<Arc<K>>, resource_version: &str) -> Result<()>;

    /// Does nothing for a plain store (a FIFO re-queues known objects).
    ///
    /// # Errors
    ///
    /// Implementation-defined; never for [`Cache`].
    fn resync(&self) -> Result<()>;
}

/// Options for [`Cache`]. The default is client-go's `NewStore(MetaNamespaceKeyFunc)`: no
/// indexes, no transformer.
///
/// # Examples
///
/// ```
/// use k8s_openapi::api::core::v1::Pod;
/// use kubeclient::cache::{Cache, CacheOptions, Indexer, Indexers};
///
/// let indexer = Cache::new(CacheOptions::default().indexers(Indexers::<Pod>::namespace()));
/// assert!(indexer.list_index_func_values("namespace").is_empty());
/// ```
pub struct CacheOptions<K> {
    key_func: Option<KeyFunc<K>>,
    indexers: Indexers<K>,
    transformer: Option<TransformFunc<K>>,
}

impl<K> Default for CacheOptions<K> {
    fn default() -> Self {
        CacheOptions {
            key_func: None,
            indexers: Indexers::new(),
            transformer: None,
        }
    }
}

impl<K> CacheOptions<K> {
    /// The key function (default [`meta_namespace_key`]).
    #[must_use]
    pub fn key_func(mut self, key_func: KeyFunc<K>) -> Self {
        self.key_func = Some(key_func);
        self
    }

    /// The index functions (default none).
    #[must_use]
    pub fn indexers(mut self, indexers: Indexers<K>) -> Self {
        self.indexers = indexers;
        self
    }

    /// A transformer applied on add, update and replace (default none).
    #[must_use]
    pub fn transformer(mut self, transformer: TransformFunc<K>) -> Self {
        self.transformer = Some(transformer);
        self
    }
}

/// The informer's cache: a [`ThreadSafeStore`] plus a key function and an optional
/// transformer. Implements [`Store`], [`Indexer`] and [`KnownObjects`].
///
/// Objects are held as shared `Arc<K>` ([`Cache::new`]) or compact
/// ([`Cache::with_representation`] with [`SharedOrCompact::Compact`]); both are the
/// same type, so an informer's cache is a `Cache<K>` either way.
///
/// Keys are computed on the untransformed object, then the transformer runs, then the
/// object is stored.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kubeclient_machinery::Object;
/// use kubeclient::cache::{Cache, CacheOptions, KnownObjects, Store};
///
/// let cache = Cache::<ConfigMap>::new(CacheOptions::default());
/// let mut cm = ConfigMap::default();
/// cm.meta_mut().name = Some("a".into());
/// cm.meta_mut().namespace = Some("prod".into());
/// cache.add(Arc::new(cm)).unwrap();
/// assert_eq!(cache.list_keys(), ["prod/a"]);
/// assert!(cache.get_by_key("prod/a").unwrap().is_some());
/// ```
#[doc(alias = "NewIndexer", alias = "NewStore")]
pub struct Cache<K, R: Representation<K> = SharedOrCompact<K>> {
    store: ThreadSafeStore<K, R>,
    key_func: Option<KeyFunc<K>>,
    transformer: Option<TransformFunc<K>>,
}

impl<K: Object> Cache<K> {
    /// A cache holding objects as shared `Arc<K>`.
    #[must_use]
    pub fn new(options: CacheOptions<K>) -> Self {
        Cache::with_representation(options, SharedOrCompact::Shared)
    }
}

impl<K: Object, R: Representation<K>> Cache<K, R> {
    /// A cache holding objects in representation `repr`.
    #[must_use]
    pub fn with_representation(options: CacheOptions<K>, repr: R) -> Self {
        Cache {
            store: ThreadSafeStore::with_representation(options.indexers, repr),
            key_func: options.key_func,
            transformer: options.transformer,
        }
    }

    /// The key of `obj` under this cache's key function.
    ///
    /// # Errors
    ///
    /// [`Error::Key`].
    pub fn key_of(&self, obj: &K) -> Result<String> {
        key_of(self.key_func.as_ref(), obj)
    }

    /// The key of a transaction's object and, for an add or update, the transformed
    /// object: what [`ThreadSafeStore::transaction`] takes.
    pub(super) fn prepare(&self, transaction: Transaction<K>) -> Result<(String, Transaction<K>)> {
        let key = self.key_of(&transaction.object)?;
        let object = match transaction.kind {
            TransactionType::Delete => transaction.object,
            TransactionType::Add | TransactionType::Update => {
                transform(self.transformer.as_ref(), transaction.object)?
            }
        };
        Ok((key, Transaction::new(transaction.kind, object)))
    }

    /// The underlying store.
    #[must_use]
    pub fn thread_safe_store(&self) -> &ThreadSafeStore<K, R> {
        &self.store
    }

    /// How this cache holds objects.
    #[must_use]
    pub fn representation(&self) -> &R {
        self.store.representation()
    }

    /// Stores `obj` under its key like [`Store::update`] and hands back the object stored
    /// there before, in its stored form (nothing is decoded).
    ///
    /// # Errors
    ///
    /// [`Error::Key`], [`Error::Transform`] or [`Error::IndexWrite`]; nothing is stored.
    pub fn swap(&self, obj: Arc<K>) -> Result<Option<R::Stored>> {
        let key = self.key_of(&obj)?;
        let obj = transform(self.transformer.as_ref(), obj)?;
        self.store.swap(&key, obj)
    }

    /// The number of objects.
    #[must_use]
    pub fn len(&self) -> usize {
        self.store.len()
    }

    /// Whether the cache is empty.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.store.is_empty()
    }
}

impl<K: Object, R: Representation<K>> KnownObjects<K> for Cache<K, R> {
    fn list_keys(&self) -> Vec<String> {
        self.store.list_keys()
    }

    fn get_by_key(&self, key: &str) -> Result<Option<Arc<K>>> {
        Ok(self.store.get(key))
    }
}

impl<K: Object, R: Representation<K>> Store<K> for Cache<K, R> {
    fn add(&self, obj: Arc<K>) -> Result<()> {
        self.update(obj)
    }

    fn update(&self, obj: Arc<K>) -> Result<()> {
        self.swap(obj).map(drop)
    }

    fn delete(&self, obj: &K) -> Result<()> {
        let key = self.key_of(obj)?;
        self.store.delete_with_object(&key, Some(obj));
        Ok(())
    }

    fn delete_by_key(&self, key: &str) {
        self.store.delete(key);
    }

    fn get(&self, obj: &K) -> Result<Option<Arc<K>>> {
        Ok(self.store.get(&self.key_of(obj)?))
    }

    fn list(&self) -> Vec<Arc<K>> {
        self.store.list()
    }

    fn replace(&self, list: Vec<Arc<K>>, resource_version: &str) -> Result<()> {
        // Every key first (a failure leaves the store untouched), then every transform.
        let keys: Vec<String> = list
            .iter()
            .map(|obj| self.key_of(obj))
            .collect::<Result<_>>()?;
        let items = keys
            .into_iter()
            .zip(list)
            .map(|(key, obj)| Ok((key, transform(self.transformer.as_ref(), obj)?)))
            .collect::<Result<_>>()?;
        self.store.replace(items, resource_version)
    }

    fn resync(&self) -> Result<()> {
        self.store.resync()
    }
}

impl<K: Object, R: Representation<K>> Indexer<K> for Cache<K, R> {
    fn index(&self, index_name: &str, obj: &K) -> Result<Vec<Arc<K>>> {
        self.store.index(index_name, obj)
    }

    fn index_keys(&self, index_name: &str, value: &str) -> Result<Vec<String>> {
        self.store.index_keys(index_name, value)
    }

    fn list_index_func_values(&self, index_name: &str) -> Vec<String> {
        self.store.list_index_func_values(index_name)
    }

    fn by_index(&self, index_name: &str, value: &str) -> Result<Vec<Arc<K>>> {
        self.store.by_index(index_name, value)
    }

    fn get_indexers(&self) -> Indexers<K> {
        self.store.get_indexers()
    }

    fn add_indexers(&self, indexers: Indexers<K>) -> Result<()> {
        self.store.add_indexers(indexers)
    }
}

impl<K: Object, R: Representation<K>> fmt::Debug for Cache<K, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cache")
            .field("len", &self.store.len())
            .field("indexers", &self.store.get_indexers())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests;
