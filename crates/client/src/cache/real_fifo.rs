//! [`RealFIFO`]: a strict in-order log of changes (client-go's `the_real_fifo.go`, the
//! queue of client-go informers since 1.33).
//!
//! Unlike [`DeltaFIFO`](super::DeltaFIFO) nothing is grouped or merged: every write appends
//! one [`Delta`], and each pop hands out exactly one, in the order written.
//!
//! In its atomic mode (client-go's `AtomicFIFO` feature) a relist is one
//! [`Delta::ReplacedAll`] and a resync one [`Delta::SyncAll`], so the consumer applies a
//! relist as one transaction instead of one object at a time, and never shows a state
//! that is half old list, half new.

use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt;
use std::sync::Arc;

use kubeclient_machinery::{DeletedFinalStateUnknown, DeletedObject, Object};

use super::delta::{Delta, Deltas, ReplacedAllInfo, deleted_key, deltas_key};
use super::error::Result;
use super::queue::{FifoCore, FifoEntries, IncrementalReplace, PopFuture, ProcessFn, Queue};
use super::store::{KeyFunc, KnownObjects, TransformFunc, key_of, transform};

/// Options for [`RealFIFO`]; every field has client-go's default. The known objects are a
/// constructor argument because the non-atomic mode requires them (client-go panics without).
pub struct RealFifoOptions<K> {
    key_func: Option<KeyFunc<K>>,
    transformer: Option<TransformFunc<K>>,
    name: String,
    atomic_events: bool,
}

impl<K> Default for RealFifoOptions<K> {
    fn default() -> Self {
        RealFifoOptions {
            key_func: None,
            transformer: None,
            name: "RealFIFO".to_owned(),
            atomic_events: false,
        }
    }
}

impl<K> RealFifoOptions<K> {
    /// The key function (default [`meta_namespace_key`](kubeclient_machinery::meta_namespace_key)).
    #[must_use]
    pub fn key_func(mut self, key_func: KeyFunc<K>) -> Self {
        self.key_func = Some(key_func);
        self
    }

    /// A transformer applied to added, updated, deleted and relisted objects; never to
    /// tombstones or resync objects.
    #[must_use]
    pub fn transformer(mut self, transformer: TransformFunc<K>) -> Self {
        self.transformer = Some(transformer);
        self
    }

    /// The name used in errors (default `"RealFIFO"`).
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Whether `replace` queues one [`Delta::ReplacedAll`] and `resync` one
    /// [`Delta::SyncAll`] (client-go's `AtomicFIFO` feature gate; default false, as
    /// client-go's default).
    #[must_use]
    #[doc(alias = "AtomicEvents", alias = "AtomicFIFO")]
    pub fn atomic_events(mut self, atomic: bool) -> Self {
        self.atomic_events = atomic;
        self
    }
}

/// An in-order queue of single changes (Go's `RealFIFO`), optionally with atomic relists
/// ([`RealFifoOptions::atomic_events`]).
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kubeclient_machinery::Object;
/// use kubeclient::cache::{Cache, CacheOptions, Queue, RealFIFO, RealFifoOptions};
///
/// let cache = Arc::new(Cache::<ConfigMap>::new(CacheOptions::default()));
/// let fifo = RealFIFO::new(cache, RealFifoOptions::default());
/// let mut cm = ConfigMap::default();
/// cm.meta_mut().name = Some("a".into());
/// let cm = Arc::new(cm);
/// fifo.add(cm.clone()).unwrap();
/// fifo.update(cm).unwrap();
/// assert_eq!(fifo.len(), 2); // two pops, in order
/// ```
pub struct RealFIFO<K> {
    key_func: Option<KeyFunc<K>>,
    known_objects: Arc<dyn KnownObjects<K>>,
    transformer: Option<TransformFunc<K>>,
    atomic_events: bool,
    core: FifoCore<Entries<K>>,
}

/// The queued changes of a [`RealFIFO`].
///
/// Invariants (asserted by `check_invariants` in tests): each entry's key is the key of its
/// delta; the population's initial count is at most `items.len()`.
struct Entries<K> {
    /// (key, change) in write order.
    items: VecDeque<(String, Delta<K>)>,
    /// The keys listed so far by an incremental replace in progress.
    replacing: Option<HashSet<String>>,
}

impl<K: Send + Sync> FifoEntries for Entries<K> {
    type Item = Delta<K>;

    fn pop_head(&mut self) -> Option<Option<Delta<K>>> {
        self.items.pop_front().map(|(_, delta)| Some(delta))
    }

    fn len(&self) -> usize {
        self.items.len()
    }
}

impl<K: Object> RealFIFO<K> {
    /// An empty queue that infers deletions and resyncs from `known_objects` (normally the
    /// informer's indexer).
    #[must_use]
    pub fn new(known_objects: Arc<dyn KnownObjects<K>>, options: RealFifoOptions<K>) -> Self {
        RealFIFO {
            key_func: options.key_func,
            known_objects,
            transformer: options.transformer,
            atomic_events: options.atomic_events,
            core: FifoCore::new(
                options.name,
                Entries {
                    items: VecDeque::new(),
                    replacing: None,
                },
            ),
        }
    }

    /// The key of `obj` under this queue's key function.
    ///
    /// # Errors
    ///
    /// [`Error::Key`](super::Error::Key) when the key function fails (the default one never does).
    pub fn key_of(&self, obj: &K) -> Result<String> {
        key_of(self.key_func.as_ref(), obj)
    }

    /// The key of the newest change in `deltas` (as [`DeltaFIFO::key_of_deltas`](super::DeltaFIFO::key_of_deltas)).
    ///
    /// # Errors
    ///
    /// [`Error::Key`](super::Error::Key) when the key function fails or `deltas` is empty.
    pub fn key_of_deltas(&self, deltas: &Deltas<K>) -> Result<String> {
        deltas_key(self.key_func.as_ref(), deltas)
    }

    /// The key of a deleted object: a tombstone's own key, otherwise the key of the final
    /// state (as [`DeltaFIFO::key_of_deleted`](super::DeltaFIFO::key_of_deleted)).
    ///
    /// # Errors
    ///
    /// [`Error::Key`](super::Error::Key) when the key function fails on a final state.
    pub fn key_of_deleted(&self, deleted: &DeletedObject<K>) -> Result<String> {
        deleted_key(self.key_func.as_ref(), deleted)
    }

    fn append(&self, obj: Arc<K>, make: fn(Arc<K>) -> Delta<K>) -> Result<()> {
        let key = key_of(self.key_func.as_ref(), &obj)?;
        let obj = transform(self.transformer.as_ref(), obj)?;
        self.core.write(|inner| {
            inner.population.write();
            inner.items.push_back((key, make(obj)));
        });
        Ok(())
    }

    /// The atomic `replace`: keys checked and transforms applied first (an error queues
    /// nothing), then one entry.
    fn replace_atomically(&self, list: Vec<Arc<K>>, resource_version: &str) -> Result<()> {
        let objects = list
            .into_iter()
            .map(|obj| {
                key_of(self.key_func.as_ref(), &obj)?;
                transform(self.transformer.as_ref(), obj)
            })
            .collect::<Result<Vec<_>>>()?;
        let info = ReplacedAllInfo {
            resource_version: resource_version.to_owned(),
            objects,
        };
        self.core.write(|inner| {
            inner
                .items
                .push_back((String::new(), Delta::ReplacedAll(info)));
            let queued = inner.items.len();
            inner.population.replace(queued);
        });
        Ok(())
    }

    /// Asserts the invariants of [`Entries`].
    #[cfg(test)]
    pub(crate) fn check_invariants(&self) {
        let inner = self.core.lock();
        for (key, delta) in &inner.items {
            assert_eq!(&delta.key(self.key_func.as_ref()).unwrap(), key);
        }
        inner.population.check_invariants();
        assert!(inner.population.initial_population_count() <= inner.items.len());
    }
}

impl<K: Object> RealFIFO<K> {
    /// Each listed object with its key, transformed; the first key or transform error.
    fn keyed(&self, list: Vec<Arc<K>>) -> Result<Vec<(String, Arc<K>)>> {
        list.into_iter()
            .map(|obj| {
                let key = key_of(self.key_func.as_ref(), &obj)?;
                Ok((key, transform(self.transformer.as_ref(), obj)?))
            })
            .collect()
    }

    /// The tombstones a relist queues (client-go's `Replace`): one for every queued key not
    /// `listed` whose last queued change is not already a deletion (carrying that change's
    /// object), then one for every known key not `listed` and absent from the queue
    /// (carrying the known object).
    fn deletions(
        &self,
        items: &VecDeque<(String, Delta<K>)>,
        listed: impl Fn(&str) -> bool,
    ) -> Vec<(String, Delta<K>)> {
        // The last queued change of every queued key, keys in order of first appearance.
        let mut last: HashMap<&str, &Delta<K>> = HashMap::new();
        let mut order: Vec<&str> = Vec::new();
        for (key, delta) in items {
            if last.insert(key, delta).is_none() {
                order.push(key);
            }
        }
        let mut deletions: Vec<(String, Delta<K>)> = order
            .iter()
            .filter(|key| !listed(key))
            .filter_map(|key| {
                let delta = last.get(key)?;
                let already_deleted = matches!(delta, Delta::Deleted(_));
                (!already_deleted).then(|| tombstone(key, delta.object().cloned()))
            })
            .collect();
        for key in self.known_objects.list_keys() {
            if listed(&key) || last.contains_key(key.as_str()) {
                continue;
            }
            let obj = self.known_objects.get_by_key(&key).ok().flatten();
            deletions.push(tombstone(&key, obj));
        }
        deletions
    }
}

fn tombstone<K>(key: &str, obj: Option<Arc<K>>) -> (String, Delta<K>) {
    let tombstone = DeletedFinalStateUnknown {
        key: key.to_owned(),
        obj,
    };
    (
        key.to_owned(),
        Delta::Deleted(DeletedObject::FinalStateUnknown(tombstone)),
    )
}

impl<K: Object> Queue<K> for RealFIFO<K> {
    fn wait_for_room<'a>(&'a self, max: usize) -> PopFuture<'a> {
        Box::pin(async move {
            self.core.wait_for_room(max).await;
            Ok(())
        })
    }

    fn add(&self, obj: Arc<K>) -> Result<()> {
        self.append(obj, Delta::Added)
    }

    fn update(&self, obj: Arc<K>) -> Result<()> {
        self.append(obj, Delta::Updated)
    }

    /// Always appends, even for a key never seen: the consumer decides.
    fn delete(&self, obj: Arc<K>) -> Result<()> {
        self.append(obj, |obj| Delta::Deleted(DeletedObject::Final(obj)))
    }

    /// Appends the deletions first — a tombstone for every queued key missing from `list`
    /// whose last queued change is not already a deletion (carrying that change's object),
    /// then for every known key missing from `list` and absent from the queue (carrying the
    /// known object) — and then `Replaced` for every item, in list order.
    ///
    /// In atomic mode it appends one [`Delta::ReplacedAll`] with every item, transformed,
    /// and infers nothing: the consumer compares the list with its state.
    fn replace(&self, list: Vec<Arc<K>>, resource_version: &str) -> Result<()> {
        if self.atomic_events {
            return self.replace_atomically(list, resource_version);
        }
        let items = self.keyed(list)?;
        let listed: HashSet<&str> = items.iter().map(|(key, _)| key.as_str()).collect();
        let mut inner = self.core.lock();
        let deletions = self.deletions(&inner.items, |key| listed.contains(key));
        inner.items.extend(deletions);
        let replaced = items
            .iter()
            .map(|(key, obj)| (key.clone(), Delta::Replaced(Arc::clone(obj))));
        inner.items.extend(replaced);
        let queued = inner.items.len();
        inner.population.replace(queued);
        drop(inner);
        self.core.write(|_| ());
        Ok(())
    }

    /// Appends `Sync` for every known object whose key is nowhere in the queue. Not
    /// transformed.
    ///
    /// In atomic mode it appends one [`Delta::SyncAll`].
    fn resync(&self) -> Result<()> {
        if self.atomic_events {
            self.core
                .write(|inner| inner.items.push_back((String::new(), Delta::SyncAll)));
            return Ok(());
        }
        let mut inner = self.core.lock();
        let queued: HashSet<String> = inner.items.iter().map(|(key, _)| key.clone()).collect();
        let mut syncs = Vec::new();
        for known_key in self.known_objects.list_keys() {
            if queued.contains(&known_key) {
                continue;
            }
            let Ok(Some(obj)) = self.known_objects.get_by_key(&known_key) else {
                continue;
            };
            let key = key_of(self.key_func.as_ref(), &obj)?;
            if !queued.contains(&key) {
                syncs.push((key, Delta::Sync(obj)));
            }
        }
        let any = !syncs.is_empty();
        inner.items.extend(syncs);
        drop(inner);
        if any {
            self.core.write(|_| ());
        }
        Ok(())
    }

    /// `Some` unless in atomic mode (an atomic relist is one [`Delta::ReplacedAll`]).
    fn incremental_replace(&self) -> Option<&dyn IncrementalReplace<K>> {
        (!self.atomic_events).then_some(self as &dyn IncrementalReplace<K>)
    }

    super::queue::forward_queue_to_core!(Deltas::one);
}

/// A relist in parts: each part's items are queued as `Replaced` at once, the deletions
/// after the last part (where [`Queue::replace`] queues them first).
impl<K: Object> IncrementalReplace<K> for RealFIFO<K> {
    fn begin(&self) {
        let mut inner = self.core.lock();
        inner.population.begin_replace();
        inner.replacing = Some(HashSet::new());
    }

    fn part(&self, items: Vec<Arc<K>>) -> Result<()> {
        let items = self.keyed(items)?;
        self.core.write(|inner| {
            let listed = inner.replacing.get_or_insert_with(HashSet::new);
            listed.extend(items.iter().map(|(key, _)| key.clone()));
            inner.items.extend(
                items
                    .into_iter()
                    .map(|(key, obj)| (key, Delta::Replaced(obj))),
            );
        });
        Ok(())
    }

    fn finish(&self, _resource_version: &str) -> Result<()> {
        self.core.write(|inner| {
            let listed = inner.replacing.take().unwrap_or_default();
            let deletions = self.deletions(&inner.items, |key| listed.contains(key));
            inner.items.extend(deletions);
            let queued = inner.items.len();
            inner.population.finish_replace(queued);
        });
        Ok(())
    }
}

impl<K: Object> fmt::Debug for RealFIFO<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = self.core.lock();
        f.debug_struct("RealFIFO")
            .field("name", &self.core.name())
            .field("len", &inner.items.len())
            .field("closed", &inner.closed)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests;
