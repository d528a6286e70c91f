//! [`FIFO`]: the plain producer/consumer queue of client-go's `fifo.go`.
//!
//! Each key is queued at most once and holds only its newest object: adding an object
//! whose key is already queued replaces the object and keeps the key's place. Unlike
//! [`DeltaFIFO`](super::DeltaFIFO) no history of changes is kept, and a deletion simply
//! forgets the object (its queued key is skipped on pop).

use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt;
use std::sync::Arc;

use kubeclient_machinery::Object;

use super::error::{BoxError, Error, Result};
use super::queue::{FifoCore, FifoEntries, KeyedEntries, Locked};
use super::store::{KeyFunc, key_of};

/// Why a [`FIFO::pop`] consumer failed. Return [`Requeue`](Self::Requeue) to put the item
/// back at the end of the queue (unless a newer object with its key was added meanwhile).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProcessError {
    /// Put the item back and report the cause (Go's `ErrRequeue`).
    #[doc(alias = "ErrRequeue")]
    #[error("processing failed; the item was requeued")]
    Requeue(#[source] BoxError),
    /// Drop the item and report the cause.
    #[error("processing failed")]
    Failed(#[source] BoxError),
}

/// The error of [`FIFO::pop`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PopError {
    /// The queue is closed and empty ([`Error::Closed`]); the consumer should stop.
    #[error(transparent)]
    Closed(#[from] Error),
    /// The consumer failed on the item with this key.
    #[error("processing {key:?}")]
    Process {
        /// The key of the popped item.
        key: String,
        /// What the consumer returned.
        #[source]
        source: ProcessError,
    },
}

/// The consumer of a [`FIFO`] pop: the object and whether it belongs to the initial list.
/// It runs under the queue's lock, as in client-go: keep it short and never call back into
/// the same queue.
pub type PopProcessFn<'a, K> =
    &'a mut (dyn FnMut(&Arc<K>, bool) -> Result<(), ProcessError> + Send);

/// A queue of keys, each holding its newest object (Go's `cache.FIFO`).
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kubeclient_machinery::Object;
/// use kubeclient::cache::FIFO;
///
/// let fifo = FIFO::<ConfigMap>::new();
/// let mut cm = ConfigMap::default();
/// cm.meta_mut().name = Some("a".into());
/// fifo.add(Arc::new(cm.clone())).unwrap();
/// cm.meta_mut().resource_version = Some("2".into());
/// fifo.update(Arc::new(cm)).unwrap(); // same key: replaces the object, keeps its place
/// assert_eq!(fifo.list_keys(), ["a"]);
///
/// let popped = fifo.try_pop(&mut |_, _| Ok(())).unwrap().unwrap();
/// assert_eq!(popped.meta().resource_version.as_deref(), Some("2"));
/// ```
#[doc(alias = "NewFIFO")]
pub struct FIFO<K> {
    key_func: Option<KeyFunc<K>>,
    core: FifoCore<Entries<K>>,
}

/// The queued keys and objects of a [`FIFO`].
///
/// Invariant (asserted by `check_invariants` in tests): `queue` holds every key of
/// `items`. A queued key without an item was deleted and is skipped on pop; as in
/// client-go, re-adding a deleted key queues it again, so such a key may stand twice.
struct Entries<K> {
    items: HashMap<String, Arc<K>>,
    queue: VecDeque<String>,
}

impl<K: Send + Sync> FifoEntries for Entries<K> {
    type Item = (String, Arc<K>);

    fn pop_head(&mut self) -> Option<Option<(String, Arc<K>)>> {
        let key = self.queue.pop_front()?;
        Some(self.items.remove(&key).map(|obj| (key, obj)))
    }

    fn len(&self) -> usize {
        self.queue.len()
    }
}

impl<K> KeyedEntries<K> for Entries<K> {
    fn object(&self, key: &str) -> Option<Arc<K>> {
        self.items.get(key).cloned()
    }

    fn keys(&self) -> Vec<String> {
        self.items.keys().cloned().collect()
    }

    fn objects(&self) -> Vec<Arc<K>> {
        self.items.values().cloned().collect()
    }
}

impl<K> Entries<K> {
    /// Stores `obj` under `key` and queues the key, unless the key holds an object.
    fn add_if_not_present(&mut self, key: String, obj: Arc<K>) {
        if !self.items.contains_key(&key) {
            self.queue.push_back(key.clone());
            self.items.insert(key, obj);
        }
    }
}

impl<K: Object> Default for FIFO<K> {
    fn default() -> Self {
        FIFO::new()
    }
}

impl<K: Object> FIFO<K> {
    /// An empty queue keyed by [`meta_namespace_key`](kubeclient_machinery::meta_namespace_key).
    #[must_use]
    pub fn new() -> Self {
        FIFO::build(None)
    }

    /// An empty queue keyed by `key_func`.
    #[must_use]
    pub fn with_key_func(key_func: KeyFunc<K>) -> Self {
        FIFO::build(Some(key_func))
    }

    fn build(key_func: Option<KeyFunc<K>>) -> Self {
        let entries = Entries {
            items: HashMap::new(),
            queue: VecDeque::new(),
        };
        FIFO {
            key_func,
            core: FifoCore::new("FIFO".to_owned(), entries),
        }
    }

    /// Stores `obj` under its key, queueing the key unless it holds an object already
    /// (then the key keeps its place and only the object is replaced).
    ///
    /// # Errors
    ///
    /// [`Error::Key`]; nothing is queued.
    pub fn add(&self, obj: Arc<K>) -> Result<()> {
        let key = key_of(self.key_func.as_ref(), &obj)?;
        self.core.write(|inner| {
            inner.population.write();
            if !inner.items.contains_key(&key) {
                inner.queue.push_back(key.clone());
            }
            inner.items.insert(key, obj);
        });
        Ok(())
    }

    /// The same as [`add`](Self::add).
    ///
    /// # Errors
    ///
    /// [`Error::Key`].
    pub fn update(&self, obj: Arc<K>) -> Result<()> {
        self.add(obj)
    }

    /// Adds `obj` only if its key holds no object; an object already queued is not
    /// replaced. Used to requeue an item without overwriting a newer one.
    ///
    /// # Errors
    ///
    /// [`Error::Key`].
    pub fn add_if_not_present(&self, obj: Arc<K>) -> Result<()> {
        let key = key_of(self.key_func.as_ref(), &obj)?;
        self.core.write(|inner| {
            inner.population.write();
            inner.add_if_not_present(key, obj);
        });
        Ok(())
    }

    /// Forgets the object with `obj`'s key. Its key stays queued and is skipped on pop
    /// (as in client-go, where it still counts towards the initial population).
    ///
    /// # Errors
    ///
    /// [`Error::Key`].
    pub fn delete(&self, obj: &K) -> Result<()> {
        let key = key_of(self.key_func.as_ref(), obj)?;
        let mut inner = self.core.lock();
        inner.population.write();
        inner.items.remove(&key);
        Ok(())
    }

    /// Replaces the whole contents with `list` and queues its keys in list order (a key
    /// listed twice keeps its first place and its last object). The first `replace` before
    /// any other write sets the initial population. `resource_version` is unused.
    ///
    /// # Errors
    ///
    /// [`Error::Key`] for any item; the queue is unchanged.
    pub fn replace(&self, list: Vec<Arc<K>>, resource_version: &str) -> Result<()> {
        let _ = resource_version;
        let mut items = HashMap::with_capacity(list.len());
        let mut queue = VecDeque::with_capacity(list.len());
        for obj in list {
            let key = key_of(self.key_func.as_ref(), &obj)?;
            if items.insert(key.clone(), obj).is_none() {
                queue.push_back(key);
            }
        }
        self.core.write(|inner: &mut Locked<Entries<K>>| {
            inner.population.replace(items.len());
            inner.entries = Entries { items, queue };
        });
        Ok(())
    }

    /// Queues every stored key that is not queued.
    pub fn resync(&self) {
        self.core.write(|inner| {
            let queued: HashSet<String> = inner.queue.iter().cloned().collect();
            let mut missing: Vec<String> = inner
                .items
                .keys()
                .filter(|key| !queued.contains(*key))
                .cloned()
                .collect();
            missing.sort_unstable();
            inner.queue.extend(missing);
        });
    }

    /// Pops the head if there is one, calling `process` with it under the queue's lock.
    /// `Ok(None)` when the queue is empty and open. See [`pop`](Self::pop) for errors.
    ///
    /// # Errors
    ///
    /// As [`pop`](Self::pop).
    pub fn try_pop(&self, process: PopProcessFn<'_, K>) -> Result<Option<Arc<K>>, PopError> {
        match self
            .core
            .try_pop(|entries, item, initial| process_item(entries, item, initial, process))?
        {
            Some(popped) => popped.map(Some),
            None => Ok(None),
        }
    }

    /// Waits (holding no lock) until an item is queued, removes it and calls `process`
    /// with it under the queue's lock, and returns it. A stale key (its object was
    /// deleted) is skipped.
    ///
    /// # Errors
    ///
    /// [`PopError::Closed`] once the queue is closed and empty; [`PopError::Process`] when
    /// `process` failed (after a [`ProcessError::Requeue`] the item is queued again at the
    /// end, unless its key was re-added meanwhile).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: an item is removed only in the synchronous step that runs `process`.
    pub async fn pop(&self, process: PopProcessFn<'_, K>) -> Result<Arc<K>, PopError> {
        self.core
            .pop(|entries, item, initial| process_item(entries, item, initial, process))
            .await?
    }

    /// Blocks the calling thread until an item can be popped, then pops it as
    /// [`pop`](Self::pop) does. Do not call from an async task.
    ///
    /// # Errors
    ///
    /// As [`pop`](Self::pop).
    pub fn pop_blocking(&self, process: PopProcessFn<'_, K>) -> Result<Arc<K>, PopError> {
        self.core
            .pop_blocking(|entries, item, initial| process_item(entries, item, initial, process))?
    }

    /// Whether the initial population has been popped (and processed): true once any write
    /// came first, or every item of a first `replace` has been popped.
    #[must_use]
    pub fn has_synced(&self) -> bool {
        self.core.has_synced()
    }

    /// Asserts the invariants of [`Entries`].
    #[cfg(test)]
    pub(crate) fn check_invariants(&self) {
        let inner = self.core.lock();
        let queued: HashSet<&String> = inner.queue.iter().collect();
        for key in inner.items.keys() {
            assert!(queued.contains(key), "{key} is stored but not queued");
        }
    }
}

/// Runs the consumer on a popped item and requeues it when asked to.
fn process_item<K>(
    entries: &mut Entries<K>,
    (key, obj): (String, Arc<K>),
    is_in_initial_list: bool,
    process: PopProcessFn<'_, K>,
) -> Result<Arc<K>, PopError> {
    match process(&obj, is_in_initial_list) {
        Ok(()) => Ok(obj),
        Err(source) => {
            if matches!(source, ProcessError::Requeue(_)) {
                entries.add_if_not_present(key.clone(), obj);
            }
            Err(PopError::Process { key, source })
        }
    }
}

super::queue::keyed_queue_methods!(
    FIFO,
    "Closes the queue: consumers drain what is left, then get [`PopError::Closed`].",
    "The number of queued keys (including stale ones of deleted objects, which pops skip)."
);

impl<K: Object> fmt::Debug for FIFO<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = self.core.lock();
        f.debug_struct("FIFO")
            .field("queue", &inner.queue)
            .field("closed", &inner.closed)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests;
