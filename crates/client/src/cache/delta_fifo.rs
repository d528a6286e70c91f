//! [`DeltaFIFO`]: a queue of objects, each with the ordered list of its pending changes
//! (client-go's `delta_fifo.go`).
//!
//! A key is queued once, however many changes it accumulates; its changes are popped
//! together, oldest first. Only consecutive deletions are merged. `replace` infers
//! deletions (tombstones) for keys that are queued or known but missing from a relist.

use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt;
use std::sync::Arc;

use kubeclient_machinery::{DeletedFinalStateUnknown, DeletedObject, Object};

use super::delta::{Delta, Deltas, deleted_key, deltas_key};
use super::error::Result;
use super::queue::{FifoCore, FifoEntries, PopFuture, ProcessFn, Queue};
use super::store::{KeyFunc, KnownObjects, TransformFunc, key_of, transform};

/// Options for [`DeltaFIFO`]; every field has client-go's default.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::Pod;
/// use kubeclient::cache::{Cache, CacheOptions, DeltaFIFO, DeltaFifoOptions, Indexers, Queue};
///
/// let indexer = Arc::new(Cache::new(CacheOptions::default().indexers(Indexers::<Pod>::namespace())));
/// let fifo = DeltaFIFO::new(
///     DeltaFifoOptions::default()
///         .known_objects(indexer.clone())
///         .emit_delta_type_replaced(true),
/// );
/// assert_eq!(fifo.name(), "DeltaFIFO");
/// ```
pub struct DeltaFifoOptions<K> {
    key_func: Option<KeyFunc<K>>,
    known_objects: Option<Arc<dyn KnownObjects<K>>>,
    emit_delta_type_replaced: bool,
    transformer: Option<TransformFunc<K>>,
    name: String,
}

impl<K> Default for DeltaFifoOptions<K> {
    fn default() -> Self {
        DeltaFifoOptions {
            key_func: None,
            known_objects: None,
            emit_delta_type_replaced: false,
            transformer: None,
            name: "DeltaFIFO".to_owned(),
        }
    }
}

impl<K> DeltaFifoOptions<K> {
    /// The key function (default [`meta_namespace_key`](kubeclient_machinery::meta_namespace_key)).
    #[must_use]
    pub fn key_func(mut self, key_func: KeyFunc<K>) -> Self {
        self.key_func = Some(key_func);
        self
    }

    /// The objects already in the cache, normally the informer's indexer (default none).
    /// Without them `replace` infers deletions only for queued keys, `resync` does nothing
    /// and deletions of unqueued keys are dropped.
    #[must_use]
    pub fn known_objects(mut self, known_objects: Arc<dyn KnownObjects<K>>) -> Self {
        self.known_objects = Some(known_objects);
        self
    }

    /// Whether `replace` queues `Replaced` (true) or `Sync` (false, the default kept for
    /// compatibility with old consumers that cannot tell a relist from a resync; informers
    /// always set it).
    #[must_use]
    pub fn emit_delta_type_replaced(mut self, emit: bool) -> Self {
        self.emit_delta_type_replaced = emit;
        self
    }

    /// A transformer applied to added, updated, deleted and relisted objects; never to
    /// tombstones or resync objects, which come from the cache already transformed.
    #[must_use]
    pub fn transformer(mut self, transformer: TransformFunc<K>) -> Self {
        self.transformer = Some(transformer);
        self
    }

    /// The name used in errors (default `"DeltaFIFO"`).
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }
}

/// A queue of keys, each with its pending [`Deltas`] (Go's `DeltaFIFO`).
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kubeclient_machinery::Object;
/// use kubeclient::cache::{DeltaFIFO, DeltaFifoOptions, DeltaType, Queue};
///
/// let fifo = DeltaFIFO::<ConfigMap>::new(DeltaFifoOptions::default());
/// let mut cm = ConfigMap::default();
/// cm.meta_mut().name = Some("a".into());
/// let cm = Arc::new(cm);
/// fifo.add(cm.clone()).unwrap();
/// fifo.update(cm).unwrap();
///
/// let mut types = Vec::new();
/// fifo.pop_blocking(&mut |deltas, _| types = deltas.iter().map(|d| d.delta_type()).collect())
///     .unwrap();
/// assert_eq!(types, [DeltaType::Added, DeltaType::Updated]);
/// ```
pub struct DeltaFIFO<K> {
    key_func: Option<KeyFunc<K>>,
    known_objects: Option<Arc<dyn KnownObjects<K>>>,
    emit_delta_type_replaced: bool,
    transformer: Option<TransformFunc<K>>,
    core: FifoCore<Entries<K>>,
}

/// The queued keys and changes of a [`DeltaFIFO`].
///
/// Invariants (asserted by `check_invariants` in tests):
/// - a key is in `queue` iff it is in `items`, and `queue` has no duplicates;
/// - every `Deltas` in `items` is non-empty and never ends with two `Deleted`;
/// - the population's initial count is at most `queue.len()`.
struct Entries<K> {
    /// key → pending changes, oldest first.
    items: HashMap<Arc<str>, Deltas<K>>,
    /// Keys in pop order. A key keeps its place while it gains changes and goes to the back
    /// only after being popped.
    queue: VecDeque<Arc<str>>,
}

impl<K: Send + Sync> FifoEntries for Entries<K> {
    type Item = Deltas<K>;

    /// A queued key always has items (invariant); a key without is stale and skipped, as
    /// client-go does.
    fn pop_head(&mut self) -> Option<Option<Deltas<K>>> {
        let key = self.queue.pop_front()?;
        Some(self.items.remove(&key))
    }

    fn len(&self) -> usize {
        self.queue.len()
    }
}

impl<K: Object> DeltaFIFO<K> {
    /// An empty queue.
    #[must_use]
    pub fn new(options: DeltaFifoOptions<K>) -> Self {
        DeltaFIFO {
            key_func: options.key_func,
            known_objects: options.known_objects,
            emit_delta_type_replaced: options.emit_delta_type_replaced,
            transformer: options.transformer,
            core: FifoCore::new(
                options.name,
                Entries {
                    items: HashMap::new(),
                    queue: VecDeque::new(),
                },
            ),
        }
    }

    /// The key of `obj` under this queue's key function.
    ///
    /// # Errors
    ///
    /// [`Error::Key`](super::Error::Key).
    pub fn key_of(&self, obj: &K) -> Result<String> {
        key_of(self.key_func.as_ref(), obj)
    }

    /// The key of the newest change in `deltas`, as popped from a queue (client-go's
    /// `KeyOf` on `Deltas`): for an inferred deletion, the tombstone's own key.
    ///
    /// # Errors
    ///
    /// [`Error::Key`](super::Error::Key) when the key function fails or `deltas` is empty.
    pub fn key_of_deltas(&self, deltas: &Deltas<K>) -> Result<String> {
        deltas_key(self.key_func.as_ref(), deltas)
    }

    /// The key of a deleted object: a [`DeletedFinalStateUnknown`] tombstone's own key,
    /// otherwise the key of the final state (client-go's `KeyOf` on a tombstone).
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use k8s_openapi::api::core::v1::ConfigMap;
    /// use kubeclient_machinery::{DeletedFinalStateUnknown, DeletedObject};
    /// # let fifo = kubeclient::cache::DeltaFIFO::<ConfigMap>::new(kubeclient::cache::DeltaFifoOptions::default());
    /// let tombstone = DeletedObject::<ConfigMap>::FinalStateUnknown(DeletedFinalStateUnknown {
    ///     key: "default/gone".into(),
    ///     obj: None,
    /// });
    /// assert_eq!(fifo.key_of_deleted(&tombstone).unwrap(), "default/gone");
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Key`](super::Error::Key) when the key function fails on a final state.
    pub fn key_of_deleted(&self, deleted: &DeletedObject<K>) -> Result<String> {
        deleted_key(self.key_func.as_ref(), deleted)
    }

    fn add_or_update(&self, obj: Arc<K>, make: fn(Arc<K>) -> Delta<K>) -> Result<()> {
        let key = self.key_of(&obj);
        self.core.write(|inner| {
            inner.population.write();
            let key = key?;
            let obj = transform(self.transformer.as_ref(), obj)?;
            inner.queue_action(&key, make(obj));
            Ok(())
        })
    }

    /// Asserts the invariants of [`Entries`].
    #[cfg(test)]
    pub(crate) fn check_invariants(&self) {
        let inner = self.core.lock();
        let queued: HashSet<&Arc<str>> = inner.queue.iter().collect();
        assert_eq!(queued.len(), inner.queue.len(), "queue has duplicates");
        assert_eq!(queued.len(), inner.items.len(), "queue and items differ");
        for (key, deltas) in &inner.items {
            assert!(queued.contains(key), "{key} has items but is not queued");
            assert!(!deltas.is_empty(), "{key} has empty deltas");
            assert!(
                !matches!(deltas.as_ref(), [.., Delta::Deleted(_), Delta::Deleted(_)]),
                "{key} ends with two deletions"
            );
        }
        inner.population.check_invariants();
        assert!(inner.population.initial_population_count() <= inner.queue.len());
    }
}

impl<K> Entries<K> {
    /// Appends `delta` to `key`'s changes, merging consecutive deletions, and queues the key
    /// if it is new (Go's `queueActionLocked`, after key and transform).
    fn queue_action(&mut self, key: &str, delta: Delta<K>) {
        match self.items.get_mut(key) {
            Some(deltas) => {
                deltas.push(delta);
                dedup_deletions(deltas.as_vec_mut());
            }
            None => {
                let key: Arc<str> = Arc::from(key);
                self.items.insert(Arc::clone(&key), Deltas::one(delta));
                self.queue.push_back(key);
            }
        }
    }

    fn queue_tombstone(&mut self, key: &str, obj: Option<Arc<K>>) {
        let tombstone = DeletedFinalStateUnknown {
            key: key.to_owned(),
            obj,
        };
        self.queue_action(
            key,
            Delta::Deleted(DeletedObject::FinalStateUnknown(tombstone)),
        );
    }
}

/// Merges the last two changes if both are deletions: the older one is kept, unless it is a
/// tombstone and so knows less than the newer one.
fn dedup_deletions<K>(deltas: &mut Vec<Delta<K>>) {
    if let [.., Delta::Deleted(older), Delta::Deleted(_)] = deltas.as_slice() {
        if matches!(older, DeletedObject::FinalStateUnknown(_)) {
            let newer = deltas.pop();
            deltas.pop();
            deltas.extend(newer);
        } else {
            deltas.pop();
        }
    }
}

impl<K: Object> Queue<K> for DeltaFIFO<K> {
    fn add(&self, obj: Arc<K>) -> Result<()> {
        self.add_or_update(obj, Delta::Added)
    }

    fn update(&self, obj: Arc<K>) -> Result<()> {
        self.add_or_update(obj, Delta::Updated)
    }

    /// Queues a deletion, unless the key is neither queued nor known: then the object was
    /// never seen (or its deletion is already in the cache) and the deletion is dropped. A
    /// failing known-object lookup queues it.
    fn delete(&self, obj: Arc<K>) -> Result<()> {
        let key = self.key_of(&obj)?;
        let mut inner = self.core.lock();
        inner.population.write();
        if !inner.items.contains_key(key.as_str()) {
            let unknown = match &self.known_objects {
                None => true,
                Some(known) => matches!(known.get_by_key(&key), Ok(None)),
            };
            if unknown {
                return Ok(());
            }
        }
        let obj = transform(self.transformer.as_ref(), obj)?;
        inner.queue_action(&key, Delta::Deleted(DeletedObject::Final(obj)));
        drop(inner);
        self.core.write(|_| ());
        Ok(())
    }

    /// Queues every item as `Replaced` (or `Sync`), even behind a queued deletion (a delete
    /// then re-create must reach the consumer, kubernetes issue 83810). Then queues a
    /// tombstone for every queued key missing from `list`, carrying its newest queued object,
    /// and for every known key missing from `list` with nothing queued, carrying the known
    /// object. Keys and transforms are computed first: an error queues nothing.
    fn replace(&self, list: Vec<Arc<K>>, _resource_version: &str) -> Result<()> {
        let items: Vec<(String, Arc<K>)> = list
            .into_iter()
            .map(|obj| {
                let key = self.key_of(&obj)?;
                Ok((key, transform(self.transformer.as_ref(), obj)?))
            })
            .collect::<Result<_>>()?;
        let mut inner = self.core.lock();
        let mut listed: HashSet<&str> = HashSet::with_capacity(items.len());
        for (key, obj) in &items {
            listed.insert(key);
            let obj = Arc::clone(obj);
            let delta = if self.emit_delta_type_replaced {
                Delta::Replaced(obj)
            } else {
                Delta::Sync(obj)
            };
            inner.queue_action(key, delta);
        }

        // Queued keys first, in queue order (deterministic, unlike Go's map order).
        let gone: Vec<(Arc<str>, Option<Arc<K>>)> = inner
            .queue
            .iter()
            .filter(|key| !listed.contains(key.as_ref()))
            .map(|key| {
                let newest = inner.items.get(key).and_then(|d| d.newest());
                (Arc::clone(key), newest.and_then(Delta::object).cloned())
            })
            .collect();
        let mut deletions = gone.len();
        for (key, obj) in gone {
            inner.queue_tombstone(&key, obj);
        }

        if let Some(known) = &self.known_objects {
            for key in known.list_keys() {
                if listed.contains(key.as_str()) || inner.items.contains_key(key.as_str()) {
                    continue;
                }
                // A failed or empty lookup still yields a tombstone, without an object.
                let obj = known.get_by_key(&key).ok().flatten();
                inner.queue_tombstone(&key, obj);
                deletions += 1;
            }
        }

        inner.population.replace(listed.len() + deletions);
        drop(inner);
        self.core.write(|_| ());
        Ok(())
    }

    /// Queues `Sync` for every known object, except those whose key has pending changes
    /// (a stale copy must not follow a newer queued one). Not transformed.
    fn resync(&self) -> Result<()> {
        let Some(known) = &self.known_objects else {
            return Ok(());
        };
        let mut inner = self.core.lock();
        let mut queued_any = false;
        for known_key in known.list_keys() {
            let Ok(Some(obj)) = known.get_by_key(&known_key) else {
                continue;
            };
            let key = self.key_of(&obj)?;
            if inner.items.contains_key(key.as_str()) {
                continue;
            }
            inner.queue_action(&key, Delta::Sync(obj));
            queued_any = true;
        }
        drop(inner);
        if queued_any {
            self.core.write(|_| ());
        }
        Ok(())
    }

    super::queue::forward_queue_to_core!(std::convert::identity);
}

impl<K: Object> fmt::Debug for DeltaFIFO<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = self.core.lock();
        f.debug_struct("DeltaFIFO")
            .field("name", &self.core.name())
            .field("queue", &inner.queue)
            .field("closed", &inner.closed)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests;
