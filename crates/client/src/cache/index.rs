//! The [`Indexer`] trait, named index functions ([`Indexers`]) and the index structure a store maintains with them.
//!
//! An index maps each *value* an index function computes (a namespace, a node name, an
//! owner UID) to the set of keys whose objects produce that value. The rules are client-go's
//! (`thread_safe_store.go`, `storeIndex`), except that a failing index function makes the
//! write fail instead of panicking.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::sync::Arc;

use kubeclient_machinery::Object;

use super::error::{BoxError, Error, Result};
use super::store::Store;

/// A [`Store`](super::Store) with named indexes (Go's `cache.Indexer`).
pub trait Indexer<K>: Store<K> {
    /// The objects that share at least one value of `index_name` with `obj`.
    ///
    /// # Errors
    ///
    /// [`Error::IndexNotFound`], [`Error::IndexQuery`].
    fn index(&self, index_name: &str, obj: &K) -> Result<Vec<Arc<K>>>;

    /// The keys under `value`, sorted.
    ///
    /// # Errors
    ///
    /// [`Error::IndexNotFound`].
    fn index_keys(&self, index_name: &str, value: &str) -> Result<Vec<String>>;

    /// Every value present in `index_name`; empty for an unknown index.
    fn list_index_func_values(&self, index_name: &str) -> Vec<String>;

    /// The objects under `value`.
    ///
    /// # Errors
    ///
    /// [`Error::IndexNotFound`].
    fn by_index(&self, index_name: &str, value: &str) -> Result<Vec<Arc<K>>>;

    /// The registered index functions.
    fn get_indexers(&self) -> Indexers<K>;

    /// Registers more index functions and indexes the existing objects with them.
    ///
    /// # Errors
    ///
    /// [`Error::IndexerConflict`], [`Error::IndexWrite`]; nothing is added.
    fn add_indexers(&self, indexers: Indexers<K>) -> Result<()>;
}

/// The name of the built-in namespace index (Go's `cache.NamespaceIndex`).
pub const NAMESPACE_INDEX: &str = "namespace";

/// An index function: the values under which an object is indexed (none, one or many).
///
/// It must be total over the objects a store holds: a failure refuses the write
/// ([`Error::IndexWrite`]).
pub type IndexFunc<K> = Arc<dyn Fn(&K) -> Result<Vec<String>, BoxError> + Send + Sync>;

/// Indexes an object by its namespace, `""` for cluster-scoped objects (Go's
/// `MetaNamespaceIndexFunc`). Registered under [`NAMESPACE_INDEX`].
///
/// # Errors
///
/// Never; the signature is that of an [`IndexFunc`].
///
/// # Examples
///
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kubeclient_machinery::Object;
/// use kubeclient::cache::meta_namespace_index_func;
///
/// let mut cm = ConfigMap::default();
/// cm.meta_mut().namespace = Some("prod".into());
/// assert_eq!(meta_namespace_index_func(&cm).unwrap(), ["prod"]);
/// ```
pub fn meta_namespace_index_func<K: Object>(obj: &K) -> Result<Vec<String>, BoxError> {
    Ok(vec![obj.namespace().unwrap_or("").to_owned()])
}

/// A set of named index functions (Go's `cache.Indexers`).
///
/// # Examples
///
/// ```
/// use k8s_openapi::api::core::v1::Pod;
/// use kubeclient::cache::{Indexers, NAMESPACE_INDEX};
///
/// let indexers = Indexers::<Pod>::namespace().with("by-node", |pod: &Pod| {
///     Ok(pod.spec.as_ref().and_then(|s| s.node_name.clone()).into_iter().collect())
/// });
/// assert_eq!(indexers.names().collect::<Vec<_>>(), ["by-node", NAMESPACE_INDEX]);
/// ```
pub struct Indexers<K> {
    funcs: BTreeMap<String, IndexFunc<K>>,
}

impl<K> Indexers<K> {
    /// No index functions.
    #[must_use]
    pub fn new() -> Self {
        Indexers {
            funcs: BTreeMap::new(),
        }
    }

    /// Adds (or replaces) the index function `name`.
    #[must_use]
    pub fn with<F>(mut self, name: impl Into<String>, func: F) -> Self
    where
        F: Fn(&K) -> Result<Vec<String>, BoxError> + Send + Sync + 'static,
    {
        self.insert(name, Arc::new(func));
        self
    }

    /// Adds (or replaces) the index function `name`.
    pub fn insert(&mut self, name: impl Into<String>, func: IndexFunc<K>) {
        self.funcs.insert(name.into(), func);
    }

    /// The function registered as `name`.
    #[must_use]
    pub fn get(&self, name: &str) -> Option<&IndexFunc<K>> {
        self.funcs.get(name)
    }

    /// The registered names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.funcs.keys().map(String::as_str)
    }

    /// The number of index functions.
    #[must_use]
    pub fn len(&self) -> usize {
        self.funcs.len()
    }

    /// Whether there are no index functions.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.funcs.is_empty()
    }
}

impl<K: Object> Indexers<K> {
    /// Just the built-in [`NAMESPACE_INDEX`].
    #[must_use]
    pub fn namespace() -> Self {
        Indexers::new().with(NAMESPACE_INDEX, meta_namespace_index_func::<K>)
    }
}

impl<K> Default for Indexers<K> {
    fn default() -> Self {
        Indexers::new()
    }
}

// Manual impls: the functions are shared `Arc`s, so `K` need not be `Clone` or `Debug`.
impl<K> Clone for Indexers<K> {
    fn clone(&self) -> Self {
        Indexers {
            funcs: self.funcs.clone(),
        }
    }
}

impl<K> fmt::Debug for Indexers<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.funcs.keys()).finish()
    }
}

/// Keys under each value of one index.
type ValueSets = HashMap<String, HashSet<Arc<str>>>;

/// One registered index: its function and its value sets.
struct IndexEntry<K> {
    func: IndexFunc<K>,
    /// value → keys. Invariant: no set is empty (kubernetes issue 84959).
    sets: ValueSets,
}

/// The values an object has in every index, in index-name order.
pub(super) type IndexValues = Vec<Vec<String>>;

/// The index structure of a store (Go's `storeIndex`).
///
/// Invariants (checked by [`StoreIndex::check`]):
/// - no value set is empty;
/// - for every index, key `k` is in the set of value `v` iff the index function of the
///   object stored under `k` returns `v`.
pub(super) struct StoreIndex<K> {
    entries: BTreeMap<String, IndexEntry<K>>,
}

impl<K: Object> StoreIndex<K> {
    pub(super) fn new(indexers: Indexers<K>) -> Self {
        let entries = indexers
            .funcs
            .into_iter()
            .map(|(name, func)| {
                let entry = IndexEntry {
                    func,
                    sets: HashMap::new(),
                };
                (name, entry)
            })
            .collect();
        StoreIndex { entries }
    }

    pub(super) fn indexers(&self) -> Indexers<K> {
        let funcs = self
            .entries
            .iter()
            .map(|(name, entry)| (name.clone(), Arc::clone(&entry.func)))
            .collect();
        Indexers { funcs }
    }

    /// The values of `obj` (stored under `key`) in every index, or the first failure.
    /// Computed before any mutation so that a failure leaves the store unchanged.
    pub(super) fn values_of(&self, key: &str, obj: &K) -> Result<IndexValues> {
        self.entries
            .iter()
            .map(|(name, entry)| {
                (entry.func)(obj).map_err(|source| Error::IndexWrite {
                    index: name.clone(),
                    key: key.to_owned(),
                    source,
                })
            })
            .collect()
    }

    /// The values of an object already stored. A function that fails now (it succeeded when
    /// the object was written, so it is not deterministic) yields `None`, and the key is then
    /// removed from that index by a scan instead.
    pub(super) fn old_values_of(&self, obj: &K) -> Vec<Option<Vec<String>>> {
        self.entries
            .values()
            .map(|entry| (entry.func)(obj).ok())
            .collect()
    }

    /// Moves `key` from its `old` values to its `new` values in every index. `None` for `old`
    /// means the key was not stored; `None` for `new` means it is being deleted.
    pub(super) fn update(
        &mut self,
        key: &Arc<str>,
        old: Option<Vec<Option<Vec<String>>>>,
        new: Option<IndexValues>,
    ) {
        let mut old = old.map(Vec::into_iter);
        let mut new = new.map(Vec::into_iter);
        for entry in self.entries.values_mut() {
            let old_values = old.as_mut().and_then(Iterator::next);
            let new_values = new.as_mut().and_then(Iterator::next);
            update_one(&mut entry.sets, key, old_values, new_values);
        }
    }

    /// Drops every value set and indexes `items` from scratch (used by `replace`).
    pub(super) fn rebuild<'a>(&mut self, items: impl Iterator<Item = (&'a Arc<str>, IndexValues)>) {
        for entry in self.entries.values_mut() {
            entry.sets.clear();
        }
        for (key, values) in items {
            for (entry, values) in self.entries.values_mut().zip(values) {
                for value in values {
                    add_key(&mut entry.sets, value, key);
                }
            }
        }
    }

    /// Registers `indexers` and indexes `items` with them (Go's `AddIndexers`: a name
    /// conflict adds nothing; otherwise existing items are indexed for the new indexers only).
    pub(super) fn add_indexers<'a>(
        &mut self,
        indexers: Indexers<K>,
        items: impl Iterator<Item = (&'a Arc<str>, Arc<K>)>,
    ) -> Result<()> {
        let conflicts: Vec<String> = indexers
            .names()
            .filter(|name| self.entries.contains_key(*name))
            .map(str::to_owned)
            .collect();
        if !conflicts.is_empty() {
            return Err(Error::IndexerConflict(conflicts));
        }
        let mut added: BTreeMap<String, IndexEntry<K>> = BTreeMap::new();
        for (name, func) in indexers.funcs {
            let entry = IndexEntry {
                func,
                sets: HashMap::new(),
            };
            added.insert(name, entry);
        }
        for (key, obj) in items {
            for (name, entry) in &mut added {
                let values = (entry.func)(&obj).map_err(|source| Error::IndexWrite {
                    index: name.clone(),
                    key: key.to_string(),
                    source,
                })?;
                for value in values {
                    add_key(&mut entry.sets, value, key);
                }
            }
        }
        self.entries.extend(added);
        Ok(())
    }

    pub(super) fn func(&self, index: &str) -> Result<&IndexFunc<K>> {
        self.entries
            .get(index)
            .map(|entry| &entry.func)
            .ok_or_else(|| Error::IndexNotFound(index.to_owned()))
    }

    /// The keys under `value` (`None` for an unknown value), or an error for an unknown index.
    pub(super) fn keys(&self, index: &str, value: &str) -> Result<Option<&HashSet<Arc<str>>>> {
        let entry = self
            .entries
            .get(index)
            .ok_or_else(|| Error::IndexNotFound(index.to_owned()))?;
        Ok(entry.sets.get(value))
    }

    /// The values present in `index`; empty for an unknown index (no error, like client-go).
    pub(super) fn values(&self, index: &str) -> Vec<String> {
        self.entries
            .get(index)
            .map(|entry| entry.sets.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// Asserts the invariants against the store's items.
    #[cfg(test)]
    pub(super) fn check<'a>(&self, items: impl Iterator<Item = (&'a Arc<str>, Arc<K>)> + Clone) {
        for (name, entry) in &self.entries {
            let mut expected: HashMap<String, HashSet<Arc<str>>> = HashMap::new();
            for (key, obj) in items.clone() {
                let values = (entry.func)(&obj).expect("index functions are total in tests");
                for value in values {
                    expected.entry(value).or_default().insert(Arc::clone(key));
                }
            }
            assert!(
                entry.sets.values().all(|set| !set.is_empty()),
                "index {name} has an empty value set"
            );
            assert_eq!(entry.sets, expected, "index {name} is out of date");
        }
    }
}

fn update_one(
    sets: &mut ValueSets,
    key: &Arc<str>,
    old: Option<Option<Vec<String>>>,
    new: Option<Vec<String>>,
) {
    // Fast path (client-go): one value before and after, and the same one.
    if let (Some(Some(old)), Some(new)) = (&old, &new)
        && old.len() == 1
        && new.len() == 1
        && old[0] == new[0]
    {
        return;
    }
    match old {
        Some(Some(values)) => {
            for value in &values {
                remove_key(sets, value, key);
            }
        }
        // The function failed on the stored object: find the key by scanning.
        Some(None) => sets.retain(|_, set| {
            set.remove(key);
            !set.is_empty()
        }),
        None => {}
    }
    for value in new.into_iter().flatten() {
        add_key(sets, value, key);
    }
}

fn add_key(sets: &mut ValueSets, value: String, key: &Arc<str>) {
    sets.entry(value).or_default().insert(Arc::clone(key));
}

fn remove_key(sets: &mut ValueSets, value: &str, key: &str) {
    if let Some(set) = sets.get_mut(value) {
        set.remove(key);
        if set.is_empty() {
            sets.remove(value);
        }
    }
}
