//! [`ThreadSafeStore`]: a map `key → object` guarded by one lock, plus named indexes
//! (Go's `threadSafeMap`). It never computes keys; [`Cache`](super::Cache) does.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use kubeclient_machinery::Object;

use super::error::{Error, Result};
use super::index::{IndexValues, Indexers, StoreIndex};
use super::representation::{ArcRepr, Representation};
use super::transaction::{Transaction, TransactionError, TransactionType};
use crate::sync::{read, write};

/// A thread-safe map from key to object with named indexes.
///
/// Writes take the write lock, compute every index value *before* changing anything (so a
/// failing index function leaves the store untouched), then update the map and the indexes
/// together. Reads share the lock and return `Arc<K>` clones; treat returned objects as
/// immutable (they are shared with every other reader).
///
/// `R` is how objects are held (see [`Representation`]); the default is the shared
/// `Arc<K>` itself.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kubeclient_machinery::Object;
/// use kubeclient::cache::{Indexers, ThreadSafeStore, NAMESPACE_INDEX};
///
/// let store = ThreadSafeStore::new(Indexers::<ConfigMap>::namespace());
/// let mut cm = ConfigMap::default();
/// cm.meta_mut().name = Some("a".into());
/// cm.meta_mut().namespace = Some("prod".into());
/// store.add("prod/a", Arc::new(cm)).unwrap();
/// assert_eq!(store.index_keys(NAMESPACE_INDEX, "prod").unwrap(), ["prod/a"]);
/// ```
pub struct ThreadSafeStore<K, R: Representation<K> = ArcRepr> {
    repr: R,
    /// Guards the items, the indexes and the store's resource version together.
    inner: RwLock<Inner<K, R::Stored>>,
}

/// The locked state of a [`ThreadSafeStore`].
///
/// Invariants (asserted by `check_invariants` in tests):
/// - for every index and every stored key `k`, `k` is in exactly the value sets its object's
///   index values name, and in no other;
/// - no index holds an empty value set, or a key that is not in `items`.
struct Inner<K, S> {
    /// key → stored object. Keys are `Arc<str>` so the index sets share the allocation.
    items: HashMap<Arc<str>, Entry<S>>,
    index: StoreIndex<K>,
    /// The resource version of the last write that carried one ("last write wins").
    resource_version: String,
}

/// A stored object and, when its representation decodes on read, the index values it was
/// filed under (so replacing or deleting it needs no decode).
struct Entry<S> {
    stored: S,
    index_values: Option<Box<[Option<Vec<String>>]>>,
}

impl<K: Object> ThreadSafeStore<K> {
    /// An empty store with these indexes, holding objects as `Arc<K>`.
    #[must_use]
    pub fn new(indexers: Indexers<K>) -> Self {
        ThreadSafeStore::with_representation(indexers, ArcRepr)
    }
}

impl<K: Object, R: Representation<K>> ThreadSafeStore<K, R> {
    /// An empty store with these indexes, holding objects in representation `repr`.
    #[must_use]
    pub fn with_representation(indexers: Indexers<K>, repr: R) -> Self {
        ThreadSafeStore {
            repr,
            inner: RwLock::new(Inner {
                items: HashMap::new(),
                index: StoreIndex::new(indexers),
                resource_version: String::new(),
            }),
        }
    }

    /// How this store holds objects.
    #[must_use]
    pub fn representation(&self) -> &R {
        &self.repr
    }

    /// Stores `obj` under `key`, replacing any previous object, and updates every index.
    /// Identical to [`update`](Self::update).
    ///
    /// # Errors
    ///
    /// [`Error::IndexWrite`] when an index function fails on `obj`; the store is unchanged.
    pub fn add(&self, key: &str, obj: Arc<K>) -> Result<()> {
        self.update(key, obj)
    }

    /// Stores `obj` under `key`, replacing any previous object, and updates every index.
    ///
    /// # Errors
    ///
    /// [`Error::IndexWrite`] when an index function fails on `obj`; the store is unchanged.
    pub fn update(&self, key: &str, obj: Arc<K>) -> Result<()> {
        self.swap(key, obj).map(drop)
    }

    /// Stores `obj` under `key` like [`update`](Self::update) and hands back what was
    /// stored there before, as it was stored (not decoded; dropped by the caller, outside
    /// the store's lock).
    ///
    /// # Errors
    ///
    /// [`Error::IndexWrite`] when an index function fails on `obj`; the store is unchanged.
    pub fn swap(&self, key: &str, obj: Arc<K>) -> Result<Option<R::Stored>> {
        // Encoding can be costly: do it before taking the lock.
        let stored = self.repr.to_stored(Arc::clone(&obj));
        self.store_locked(&mut write(&self.inner), key, &obj, stored)
    }

    /// The old values of the entry under `key`: remembered, or computed from its object.
    fn old_values(
        &self,
        inner: &Inner<K, R::Stored>,
        entry: &Entry<R::Stored>,
    ) -> Vec<Option<Vec<String>>> {
        match &entry.index_values {
            Some(values) => values.to_vec(),
            None => match self.repr.to_object(&entry.stored) {
                Some(old) => inner.index.old_values_of(&old),
                None => Vec::new(),
            },
        }
    }

    fn store_locked(
        &self,
        inner: &mut Inner<K, R::Stored>,
        key: &str,
        obj: &K,
        stored: R::Stored,
    ) -> Result<Option<R::Stored>> {
        let new_values = inner.index.values_of(key, obj)?;
        let (key, old_values) = match inner.items.get_key_value(key) {
            Some((stored_key, entry)) => {
                (Arc::clone(stored_key), Some(self.old_values(inner, entry)))
            }
            None => (Arc::from(key), None),
        };
        set_resource_version(&mut inner.resource_version, obj);
        let index_values = self.remembered(&new_values);
        let previous = inner.items.insert(
            Arc::clone(&key),
            Entry {
                stored,
                index_values,
            },
        );
        inner.index.update(&key, old_values, Some(new_values));
        Ok(previous.map(|entry| entry.stored))
    }

    /// The index values to keep beside an object (only when reading it back decodes).
    fn remembered(&self, values: &IndexValues) -> Option<Box<[Option<Vec<String>>]>> {
        self.repr
            .decodes_on_read()
            .then(|| values.iter().cloned().map(Some).collect())
    }

    /// Removes `key` from the map and every index; a missing key is a silent no-op.
    pub fn delete(&self, key: &str) {
        self.delete_with_object(key, None);
    }

    /// Like [`delete`](Self::delete); `obj`, the deleted object's final state, also sets the
    /// store's resource version.
    pub fn delete_with_object(&self, key: &str, obj: Option<&K>) {
        self.delete_locked(&mut write(&self.inner), key, obj);
    }

    /// Applies every write under one lock acquisition (Go's `Transaction` on a
    /// `ThreadSafeStoreWithTransaction`): `(key, transaction)` pairs, in order. A write
    /// whose index function fails is skipped; the others are applied.
    ///
    /// # Errors
    ///
    /// [`TransactionError`] naming the writes that were applied and the errors of the
    /// others.
    pub fn transaction(
        &self,
        transactions: Vec<(String, Transaction<K>)>,
    ) -> Result<(), TransactionError> {
        let total = transactions.len();
        let mut guard = write(&self.inner);
        let mut failure = TransactionError::new(total);
        for (i, (key, transaction)) in transactions.into_iter().enumerate() {
            let applied = match transaction.kind {
                TransactionType::Add | TransactionType::Update => {
                    let stored = self.repr.to_stored(Arc::clone(&transaction.object));
                    self.store_locked(&mut guard, &key, &transaction.object, stored)
                        .map(drop)
                }
                TransactionType::Delete => {
                    self.delete_locked(&mut guard, &key, Some(&transaction.object));
                    Ok(())
                }
            };
            failure.record(i, applied);
        }
        failure.into_result()
    }

    fn delete_locked(&self, inner: &mut Inner<K, R::Stored>, key: &str, obj: Option<&K>) {
        if let Some(obj) = obj {
            set_resource_version(&mut inner.resource_version, obj);
        }
        if let Some((key, entry)) = inner.items.remove_entry(key) {
            let old_values = self.old_values(inner, &entry);
            inner.index.update(&key, Some(old_values), None);
        }
    }

    /// The object stored under `key`.
    #[must_use]
    pub fn get(&self, key: &str) -> Option<Arc<K>> {
        let inner = read(&self.inner);
        inner
            .items
            .get(key)
            .and_then(|entry| self.repr.to_object(&entry.stored))
    }

    /// Every stored object, in no particular order.
    #[must_use]
    pub fn list(&self) -> Vec<Arc<K>> {
        let inner = read(&self.inner);
        inner
            .items
            .values()
            .filter_map(|entry| self.repr.to_object(&entry.stored))
            .collect()
    }

    /// Every key, in no particular order.
    #[must_use]
    pub fn list_keys(&self) -> Vec<String> {
        let inner = read(&self.inner);
        inner.items.keys().map(|key| key.to_string()).collect()
    }

    /// The number of stored objects.
    #[must_use]
    pub fn len(&self) -> usize {
        read(&self.inner).items.len()
    }

    /// Whether the store is empty.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        read(&self.inner).items.is_empty()
    }

    /// Replaces the whole contents with `items` (a later duplicate key wins), rebuilds every
    /// index from scratch and sets the store's resource version to `resource_version`.
    ///
    /// # Errors
    ///
    /// [`Error::IndexWrite`] when an index function fails on any item; the store is unchanged.
    pub fn replace(&self, items: Vec<(String, Arc<K>)>, resource_version: &str) -> Result<()> {
        let mut map: HashMap<Arc<str>, Arc<K>> = HashMap::with_capacity(items.len());
        for (key, obj) in items {
            map.insert(Arc::from(key), obj);
        }
        // Encoding can be costly: do it before taking the lock.
        let stored: Vec<(Arc<str>, Arc<K>, R::Stored)> = map
            .into_iter()
            .map(|(key, obj)| {
                let stored = self.repr.to_stored(Arc::clone(&obj));
                (key, obj, stored)
            })
            .collect();
        let mut guard = write(&self.inner);
        let inner = &mut *guard;
        let values: Vec<IndexValues> = stored
            .iter()
            .map(|(key, obj, _)| inner.index.values_of(key, obj))
            .collect::<Result<_>>()?;
        let remembered: Vec<_> = values.iter().map(|v| self.remembered(v)).collect();
        inner
            .index
            .rebuild(stored.iter().map(|(key, _, _)| key).zip(values));
        let previous = std::mem::replace(
            &mut inner.items,
            stored
                .into_iter()
                .zip(remembered)
                .map(|((key, _, stored), index_values)| {
                    (
                        key,
                        Entry {
                            stored,
                            index_values,
                        },
                    )
                })
                .collect(),
        );
        resource_version.clone_into(&mut inner.resource_version);
        drop(guard);
        // The replaced objects are freed outside the lock.
        drop(previous);
        Ok(())
    }

    /// Does nothing (Go's deprecated `Resync`); kept so every store has the same surface.
    ///
    /// # Errors
    ///
    /// Never.
    pub fn resync(&self) -> Result<()> {
        Ok(())
    }

    /// The stored objects that share at least one value of index `index_name` with `obj`
    /// (deduplicated, in no particular order).
    ///
    /// # Errors
    ///
    /// [`Error::IndexNotFound`] for an unknown index; [`Error::IndexQuery`] when the index
    /// function fails on `obj`.
    pub fn index(&self, index_name: &str, obj: &K) -> Result<Vec<Arc<K>>> {
        let inner = read(&self.inner);
        let values = (inner.index.func(index_name)?)(obj).map_err(|source| Error::IndexQuery {
            index: index_name.to_owned(),
            source,
        })?;
        let mut keys: Vec<&Arc<str>> = Vec::new();
        for value in &values {
            if let Some(set) = inner.index.keys(index_name, value)? {
                keys.extend(set.iter());
            }
        }
        if values.len() > 1 {
            keys.sort_unstable();
            keys.dedup();
        }
        Ok(self.objects(&inner, keys.into_iter()))
    }

    /// The keys under `value` in index `index_name`, **sorted**; empty for an unknown value.
    ///
    /// # Errors
    ///
    /// [`Error::IndexNotFound`] for an unknown index.
    pub fn index_keys(&self, index_name: &str, value: &str) -> Result<Vec<String>> {
        let inner = read(&self.inner);
        let mut keys: Vec<String> = inner
            .index
            .keys(index_name, value)?
            .map(|set| set.iter().map(|key| key.to_string()).collect())
            .unwrap_or_default();
        keys.sort_unstable();
        Ok(keys)
    }

    /// The objects under `value` in index `index_name` (unordered); empty for an unknown
    /// value.
    ///
    /// # Errors
    ///
    /// [`Error::IndexNotFound`] for an unknown index.
    pub fn by_index(&self, index_name: &str, value: &str) -> Result<Vec<Arc<K>>> {
        let inner = read(&self.inner);
        let keys = inner.index.keys(index_name, value)?;
        Ok(self.objects(&inner, keys.into_iter().flatten()))
    }

    /// Every value currently present in index `index_name` (unordered); empty, not an error,
    /// for an unknown index (as in client-go).
    #[must_use]
    pub fn list_index_func_values(&self, index_name: &str) -> Vec<String> {
        read(&self.inner).index.values(index_name)
    }

    /// The registered index functions.
    #[must_use]
    pub fn get_indexers(&self) -> Indexers<K> {
        read(&self.inner).index.indexers()
    }

    /// Registers more index functions and indexes every stored object with them.
    ///
    /// # Errors
    ///
    /// [`Error::IndexerConflict`] when a name is already registered, [`Error::IndexWrite`]
    /// when a new function fails on a stored object; in both cases nothing is added.
    pub fn add_indexers(&self, indexers: Indexers<K>) -> Result<()> {
        let mut guard = write(&self.inner);
        let inner = &mut *guard;
        let items: Vec<(Arc<str>, Arc<K>)> = inner
            .items
            .iter()
            .filter_map(|(key, entry)| Some((Arc::clone(key), self.repr.to_object(&entry.stored)?)))
            .collect();
        inner
            .index
            .add_indexers(indexers, items.iter().map(|(k, o)| (k, Arc::clone(o))))?;
        if self.repr.decodes_on_read() {
            // The remembered values are positional: file every object again.
            for (key, obj) in &items {
                let values = inner.index.values_of(key, obj).ok();
                let remembered = values.as_ref().and_then(|v| self.remembered(v));
                if let Some(entry) = inner.items.get_mut(key) {
                    entry.index_values = remembered;
                }
            }
        }
        Ok(())
    }

    /// Sets the store's resource version without changing its contents (Go's `Bookmark`).
    pub fn bookmark(&self, resource_version: &str) {
        resource_version.clone_into(&mut write(&self.inner).resource_version);
    }

    /// The resource version of the last write that carried one: "last write wins", not a
    /// maximum; `""` initially (Go's `LastStoreSyncResourceVersion` with AtomicFIFO on).
    #[must_use]
    pub fn last_store_sync_resource_version(&self) -> String {
        read(&self.inner).resource_version.clone()
    }

    fn objects<'a>(
        &self,
        inner: &Inner<K, R::Stored>,
        keys: impl Iterator<Item = &'a Arc<str>>,
    ) -> Vec<Arc<K>> {
        keys.filter_map(|key| inner.items.get(key))
            .filter_map(|entry| self.repr.to_object(&entry.stored))
            .collect()
    }

    /// Asserts the invariants of [`Inner`].
    #[cfg(test)]
    pub(crate) fn check_invariants(&self) {
        let inner = read(&self.inner);
        let items: Vec<(&Arc<str>, Arc<K>)> = inner
            .items
            .iter()
            .filter_map(|(key, entry)| Some((key, self.repr.to_object(&entry.stored)?)))
            .collect();
        assert_eq!(
            items.len(),
            inner.items.len(),
            "every stored object reads back"
        );
        for (key, obj) in &items {
            let remembered = &inner.items[*key].index_values;
            assert_eq!(
                remembered.is_some(),
                self.repr.decodes_on_read(),
                "index values are remembered exactly when reading decodes"
            );
            if let Some(remembered) = remembered {
                let recomputed: Vec<Option<Vec<String>>> = inner
                    .index
                    .values_of(key, obj)
                    .map(|values| values.into_iter().map(Some).collect())
                    .unwrap_or_default();
                assert_eq!(
                    **remembered, *recomputed,
                    "remembered index values of {key}"
                );
            }
        }
        inner
            .index
            .check(items.iter().map(|(k, o)| (*k, Arc::clone(o))));
    }
}

/// Records `obj`'s resource version (reusing the string's buffer). Every Rust object has
/// metadata, so every write that carries an object records its version, even `""`.
fn set_resource_version<K: Object>(current: &mut String, obj: &K) {
    obj.resource_version().clone_into(current);
}

#[cfg(test)]
mod tests;
