//! [`Heap`]: a keyed priority queue (client-go's `heap.go`), the queue behind schedulers'
//! backoff queues. Each key holds one object; pop hands out the smallest by a
//! user-supplied order, and an object can be updated or deleted in place.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use kubeclient_machinery::Object;

use super::error::{Error, Result};
use super::queue::{FifoCore, FifoEntries, KeyedEntries, Locked};
use super::store::{KeyFunc, key_of};

/// Whether the first object comes before the second (Go's `LessFunc`).
pub type LessFunc<K> = Arc<dyn Fn(&K, &K) -> bool + Send + Sync>;

/// A keyed priority queue (Go's `cache.Heap`).
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kubeclient_machinery::Object;
/// use kubeclient::cache::Heap;
///
/// // Smallest name first.
/// let heap = Heap::<ConfigMap>::new(Arc::new(|a, b| a.name() < b.name()));
/// for name in ["c", "a", "b"] {
///     let mut cm = ConfigMap::default();
///     cm.meta_mut().name = Some(name.into());
///     heap.add(Arc::new(cm)).unwrap();
/// }
/// assert_eq!(heap.try_pop().unwrap().unwrap().name(), "a");
/// ```
#[doc(alias = "NewHeap")]
pub struct Heap<K> {
    key_func: Option<KeyFunc<K>>,
    core: FifoCore<HeapData<K>>,
}

/// A binary min-heap of keyed objects with a key → position index.
///
/// Invariants (asserted by `check_invariants` in tests): `index[queue[i].0] == i` for
/// every `i`, `index` has exactly the keys of `queue`, and no parent is after its child.
struct HeapData<K> {
    queue: Vec<(String, Arc<K>)>,
    index: HashMap<String, usize>,
    less: LessFunc<K>,
}

impl<K: Send + Sync> FifoEntries for HeapData<K> {
    type Item = Arc<K>;

    fn pop_head(&mut self) -> Option<Option<Arc<K>>> {
        self.remove_at(0).map(|(_, obj)| Some(obj))
    }

    fn len(&self) -> usize {
        self.queue.len()
    }
}

impl<K> KeyedEntries<K> for HeapData<K> {
    fn object(&self, key: &str) -> Option<Arc<K>> {
        let i = *self.index.get(key)?;
        self.queue.get(i).map(|(_, obj)| Arc::clone(obj))
    }

    fn keys(&self) -> Vec<String> {
        self.queue.iter().map(|(key, _)| key.clone()).collect()
    }

    fn objects(&self) -> Vec<Arc<K>> {
        self.queue.iter().map(|(_, obj)| Arc::clone(obj)).collect()
    }
}

impl<K> HeapData<K> {
    fn before(&self, a: usize, b: usize) -> bool {
        (self.less)(&self.queue[a].1, &self.queue[b].1)
    }

    fn swap(&mut self, a: usize, b: usize) {
        self.queue.swap(a, b);
        for i in [a, b] {
            let key = &self.queue[i].0;
            if let Some(pos) = self.index.get_mut(key) {
                *pos = i;
            }
        }
    }

    fn up(&mut self, mut i: usize) {
        while i > 0 {
            let parent = (i - 1) / 2;
            if !self.before(i, parent) {
                break;
            }
            self.swap(i, parent);
            i = parent;
        }
    }

    /// Moves `i` down; returns whether it moved.
    fn down(&mut self, start: usize) -> bool {
        let mut i = start;
        loop {
            let left = 2 * i + 1;
            if left >= self.queue.len() {
                break;
            }
            let right = left + 1;
            let child = if right < self.queue.len() && self.before(right, left) {
                right
            } else {
                left
            };
            if !self.before(child, i) {
                break;
            }
            self.swap(i, child);
            i = child;
        }
        i > start
    }

    /// Restores the order after the object at `i` changed (Go's `heap.Fix`).
    fn fix(&mut self, i: usize) {
        if !self.down(i) {
            self.up(i);
        }
    }

    fn push(&mut self, key: String, obj: Arc<K>) {
        let i = self.queue.len();
        self.index.insert(key.clone(), i);
        self.queue.push((key, obj));
        self.up(i);
    }

    /// Removes the entry at `i` and restores the order; `None` when there is none.
    fn remove_at(&mut self, i: usize) -> Option<(String, Arc<K>)> {
        if i >= self.queue.len() {
            return None;
        }
        let last = self.queue.len() - 1;
        self.swap(i, last);
        let removed = self.queue.pop()?;
        self.index.remove(&removed.0);
        if i < self.queue.len() {
            self.fix(i);
        }
        Some(removed)
    }

    /// Adds `obj`, or replaces the object under its key and moves it to its new place.
    fn upsert(&mut self, key: String, obj: Arc<K>) {
        match self.index.get(&key) {
            Some(&i) => {
                self.queue[i].1 = obj;
                self.fix(i);
            }
            None => self.push(key, obj),
        }
    }
}

impl<K: Object> Heap<K> {
    /// An empty heap keyed by [`meta_namespace_key`](kubeclient_machinery::meta_namespace_key)
    /// and ordered by `less`.
    #[must_use]
    pub fn new(less: LessFunc<K>) -> Self {
        Heap::build(None, less)
    }

    /// An empty heap keyed by `key_func` and ordered by `less`.
    #[must_use]
    pub fn with_key_func(key_func: KeyFunc<K>, less: LessFunc<K>) -> Self {
        Heap::build(Some(key_func), less)
    }

    fn build(key_func: Option<KeyFunc<K>>, less: LessFunc<K>) -> Self {
        let data = HeapData {
            queue: Vec::new(),
            index: HashMap::new(),
            less,
        };
        Heap {
            key_func,
            core: FifoCore::new("Heap".to_owned(), data),
        }
    }

    /// Runs `write` under the lock unless the heap is closed, then wakes consumers.
    fn write_open<R>(&self, write: impl FnOnce(&mut HeapData<K>) -> R) -> Result<R> {
        self.core.write(|inner: &mut Locked<HeapData<K>>| {
            if inner.closed {
                return Err(Error::Closed(self.core.name().to_owned()));
            }
            Ok(write(inner))
        })
    }

    /// Inserts `obj`, or replaces the object with its key and moves it to its new place.
    ///
    /// # Errors
    ///
    /// [`Error::Key`], or [`Error::Closed`] once the heap is closed.
    pub fn add(&self, obj: Arc<K>) -> Result<()> {
        let key = key_of(self.key_func.as_ref(), &obj)?;
        self.write_open(|data| data.upsert(key, obj))
    }

    /// The same as [`add`](Self::add).
    ///
    /// # Errors
    ///
    /// As [`add`](Self::add).
    pub fn update(&self, obj: Arc<K>) -> Result<()> {
        self.add(obj)
    }

    /// Adds every object as [`add`](Self::add) does, under one lock. Keys are computed
    /// first, so a key error adds nothing (client-go may have added a prefix).
    ///
    /// # Errors
    ///
    /// As [`add`](Self::add).
    pub fn bulk_add(&self, list: Vec<Arc<K>>) -> Result<()> {
        let keyed: Vec<(String, Arc<K>)> = list
            .into_iter()
            .map(|obj| Ok((key_of(self.key_func.as_ref(), &obj)?, obj)))
            .collect::<Result<_>>()?;
        self.write_open(|data| {
            for (key, obj) in keyed {
                data.upsert(key, obj);
            }
        })
    }

    /// Inserts `obj` only if its key is absent; an existing object is left as it is.
    ///
    /// # Errors
    ///
    /// As [`add`](Self::add).
    pub fn add_if_not_present(&self, obj: Arc<K>) -> Result<()> {
        let key = key_of(self.key_func.as_ref(), &obj)?;
        self.write_open(|data| {
            if !data.index.contains_key(&key) {
                data.push(key, obj);
            }
        })
    }

    /// Removes the object with `obj`'s key.
    ///
    /// # Errors
    ///
    /// [`Error::Key`], or [`Error::NotFound`] when no object has that key.
    pub fn delete(&self, obj: &K) -> Result<()> {
        let key = key_of(self.key_func.as_ref(), obj)?;
        let mut inner = self.core.lock();
        let Some(&i) = inner.index.get(&key) else {
            return Err(Error::NotFound(key));
        };
        inner.remove_at(i);
        Ok(())
    }

    /// Removes and returns the smallest object; `Ok(None)` when empty and open.
    ///
    /// # Errors
    ///
    /// [`Error::Closed`] once the heap is closed and empty.
    pub fn try_pop(&self) -> Result<Option<Arc<K>>> {
        self.core.try_pop(|_, obj, _| obj)
    }

    /// Waits (holding no lock) until the heap is not empty, then removes and returns the
    /// smallest object.
    ///
    /// # Errors
    ///
    /// [`Error::Closed`] once the heap is closed and empty.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: the object is removed only when the future completes.
    pub async fn pop(&self) -> Result<Arc<K>> {
        self.core.pop(|_, obj, _| obj).await
    }

    /// Blocks the calling thread until an object can be popped. Do not call from an async
    /// task.
    ///
    /// # Errors
    ///
    /// [`Error::Closed`] once the heap is closed and empty.
    pub fn pop_blocking(&self) -> Result<Arc<K>> {
        self.core.pop_blocking(|_, obj, _| obj)
    }

    /// Asserts the invariants of [`HeapData`].
    #[cfg(test)]
    pub(crate) fn check_invariants(&self) {
        let inner = self.core.lock();
        assert_eq!(inner.index.len(), inner.queue.len());
        for (i, (key, _)) in inner.queue.iter().enumerate() {
            assert_eq!(inner.index.get(key), Some(&i), "index of {key}");
            if i > 0 {
                assert!(!inner.before(i, (i - 1) / 2), "{key} is before its parent");
            }
        }
    }
}

super::queue::keyed_queue_methods!(
    Heap,
    "Closes the heap: writes are refused, consumers drain it and then get [`Error::Closed`].",
    "The number of objects."
);

impl<K: Object> fmt::Debug for Heap<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = self.core.lock();
        f.debug_struct("Heap")
            .field("len", &inner.queue.len())
            .field("closed", &inner.closed)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests;
