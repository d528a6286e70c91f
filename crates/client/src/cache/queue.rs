//! The [`Queue`] contract shared by [`DeltaFIFO`](super::DeltaFIFO) and
//! [`RealFIFO`](super::RealFIFO), and [`FifoCore`], the one locking, popping, waiting and
//! closing core behind them and the plain [`FIFO`](super::FIFO).

use std::future::Future;
use std::ops::{Deref, DerefMut};
use std::pin::Pin;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use tokio::sync::Notify;

use super::delta::Deltas;
use super::error::{Error, Result};
use crate::sync::lock;

/// The consumer callback of a pop: the popped changes of one object, and whether they
/// belong to the initial list (`is_in_initial_list`).
///
/// It runs **while the queue's lock is held** (as in client-go), so that the consumer can
/// update the cache atomically with respect to the queue: a concurrent `replace` or `resync`
/// then never sees an object that has left the queue but not yet reached the cache. Keep it
/// short, never block on I/O in it, and never call back into the same queue (deadlock).
pub type ProcessFn<'a, K> = &'a mut (dyn FnMut(Deltas<K>, bool) + Send);

/// The future returned by [`Queue::pop`].
pub type PopFuture<'a> = Pin<Box<dyn Future<Output = Result<()>> + Send + 'a>>;

/// What a reflector writes into and a controller pops from (Go's `cache.Queue`).
///
/// Writes ([`add`](Self::add) … [`resync`](Self::resync)) never block on the consumer.
/// [`close`](Self::close) stops consumers once the queue is empty; it does not refuse writes.
///
/// # Initial population
///
/// [`has_synced`](Self::has_synced) becomes true once the queue has been populated (any
/// write, or the first `replace`) and every entry created by the first `replace` — if it came
/// before any other write — has been popped *and processed*. It then stays true.
pub trait Queue<K>: Send + Sync {
    /// Queues an addition.
    ///
    /// # Errors
    ///
    /// [`Error::Key`](super::Error::Key) or [`Error::Transform`](super::Error::Transform);
    /// nothing is queued.
    fn add(&self, obj: Arc<K>) -> Result<()>;

    /// Queues a modification.
    ///
    /// # Errors
    ///
    /// As for [`add`](Self::add).
    fn update(&self, obj: Arc<K>) -> Result<()>;

    /// Queues a deletion (`obj` is the final state).
    ///
    /// # Errors
    ///
    /// As for [`add`](Self::add).
    fn delete(&self, obj: Arc<K>) -> Result<()>;

    /// Queues a relist: every item as `Replaced` (or `Sync`), and a deletion tombstone for
    /// every queued or known key missing from `list`. `resource_version` is not used by the
    /// non-atomic queues.
    ///
    /// # Errors
    ///
    /// As for [`add`](Self::add), for any item; nothing is queued.
    fn replace(&self, list: Vec<Arc<K>>, resource_version: &str) -> Result<()>;

    /// Queues a `Sync` for every known object without pending changes.
    ///
    /// # Errors
    ///
    /// [`Error::Key`](super::Error::Key) for a known object.
    fn resync(&self) -> Result<()>;

    /// Pops the head if there is one, calling `process` with it under the queue's lock.
    /// `Ok(false)` when the queue is empty and open.
    ///
    /// # Errors
    ///
    /// [`Error::Closed`](super::Error::Closed) when the queue is closed and empty.
    fn try_pop(&self, process: ProcessFn<'_, K>) -> Result<bool>;

    /// Blocks the calling thread until an item can be popped, then pops it as
    /// [`try_pop`](Self::try_pop) does. Do not call from an async task; use [`pop`](Self::pop).
    ///
    /// # Errors
    ///
    /// [`Error::Closed`](super::Error::Closed) once the queue is closed and empty.
    fn pop_blocking(&self, process: ProcessFn<'_, K>) -> Result<()>;

    /// Waits until an item can be popped, then pops it as [`try_pop`](Self::try_pop) does.
    /// No lock is held while waiting.
    ///
    /// # Errors
    ///
    /// [`Error::Closed`](super::Error::Closed) once the queue is closed and empty.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: an item is removed only in the same (synchronous) step that runs
    /// `process`, so dropping the future never loses one.
    fn pop<'a>(&'a self, process: ProcessFn<'a, K>) -> PopFuture<'a>;

    /// Waits until the queue holds fewer than `max` entries (or is closed), so a writer
    /// can slow down instead of growing the queue without bound. The default returns at
    /// once (an unbounded queue).
    ///
    /// # Errors
    ///
    /// None from the queues of this crate.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe.
    fn wait_for_room<'a>(&'a self, max: usize) -> PopFuture<'a> {
        let _ = max;
        Box::pin(std::future::ready(Ok(())))
    }

    /// Told the reflector's current resourceVersion each time a watch event or bookmark
    /// advances it (client-go's optional `ResourceVersionUpdater` interface on the store).
    /// The queues of this crate ignore it; a wrapper can use it to know how fresh the data
    /// it has seen is, for example to answer "has the cache caught up with my write?".
    fn update_resource_version(&self, resource_version: &str) {
        let _ = resource_version;
    }

    /// Closes the queue: consumers drain what is left, then get
    /// [`Error::Closed`](super::Error::Closed).
    fn close(&self);

    /// Whether [`close`](Self::close) was called.
    fn is_closed(&self) -> bool;

    /// Whether the initial population has been popped and processed (see the trait docs).
    fn has_synced(&self) -> bool;

    /// The number of entries a consumer would pop (keys for DeltaFIFO, deltas for RealFIFO).
    fn len(&self) -> usize;

    /// Whether [`len`](Self::len) is zero.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The queue's name, used in errors.
    fn name(&self) -> &str;

    /// The same queue as an [`IncrementalReplace`], if it can take a relist in parts; a
    /// reflector with [`list_in_parts`](super::ReflectorOptions::list_in_parts) then hands
    /// each decoded part of a list to the queue while the rest is still arriving, so a list
    /// never holds all its decoded objects at once. The default: `None` (lists go to
    /// [`replace`](Self::replace) whole).
    fn incremental_replace(&self) -> Option<&dyn IncrementalReplace<K>> {
        None
    }
}

/// A relist delivered in parts ([`Queue::incremental_replace`]): [`begin`](Self::begin),
/// any number of [`part`](Self::part)s in list order, then [`finish`](Self::finish).
///
/// The items of each part are queued at once (consumers may pop them while later parts
/// are still being listed); the deletions (tombstones for known or queued keys that no
/// part listed) are queued by `finish`, after the items. A first list delivered this way
/// is the initial population: [`Queue::has_synced`] stays false until it has finished
/// and every entry it created has been popped. A list that fails part-way is simply
/// never finished: its items were real states of their objects, and the next list's
/// `finish` queues the deletions.
pub trait IncrementalReplace<K>: Send + Sync {
    /// Starts a relist; forgets the keys of a relist begun before and never finished.
    fn begin(&self);

    /// Queues the items of the next part, each as `Replaced`.
    ///
    /// # Errors
    ///
    /// As [`Queue::replace`] for any item; nothing of this part is queued.
    fn part(&self, items: Vec<Arc<K>>) -> Result<()>;

    /// Ends the relist: queues a tombstone for every queued or known key no part listed.
    ///
    /// # Errors
    ///
    /// None from the queues of this crate.
    fn finish(&self, resource_version: &str) -> Result<()>;
}

/// The initial-population bookkeeping both FIFOs share.
///
/// Invariant: `initial_population_count > 0` implies `populated`.
#[derive(Debug, Default)]
pub(super) struct Population {
    /// Set by the first write of any kind.
    populated: bool,
    /// Entries of the first `replace` (if it came first) not yet popped and processed.
    initial_population_count: usize,
    /// The first write is an incremental replace that has not finished yet: its parts are
    /// the initial population (popped as such), and the queue is not synced.
    initial_replace_in_progress: bool,
}

impl Population {
    /// Records a write other than `replace`.
    pub(super) fn write(&mut self) {
        self.populated = true;
        self.initial_replace_in_progress = false;
    }

    /// Records a `replace` that created `entries` entries.
    pub(super) fn replace(&mut self, entries: usize) {
        if !self.populated {
            self.populated = true;
            self.initial_population_count = entries;
        }
    }

    /// Records the start of an incremental replace.
    pub(super) fn begin_replace(&mut self) {
        if !self.populated {
            self.initial_replace_in_progress = true;
        }
    }

    /// Records the end of an incremental replace, with `entries` entries still queued:
    /// for the first one, those are what is left of the initial population.
    pub(super) fn finish_replace(&mut self, entries: usize) {
        if self.initial_replace_in_progress {
            self.initial_replace_in_progress = false;
            self.replace(entries);
        }
    }

    /// Records that one entry was popped and processed.
    pub(super) fn popped(&mut self) {
        self.initial_population_count = self.initial_population_count.saturating_sub(1);
    }

    pub(super) fn has_synced(&self) -> bool {
        self.populated && self.initial_population_count == 0
    }

    #[cfg(test)]
    pub(super) fn initial_population_count(&self) -> usize {
        self.initial_population_count
    }

    #[cfg(test)]
    pub(super) fn check_invariants(&self) {
        assert!(self.initial_population_count == 0 || self.populated);
    }
}

/// Wakes blocked and async consumers. Every state change that could let a pop proceed
/// (a write or `close`) calls [`wake_all`](Self::wake_all) after updating the state.
#[derive(Debug, Default)]
pub(super) struct Waiters {
    cond: Condvar,
    notify: Notify,
}

impl Waiters {
    pub(super) fn wake_all(&self) {
        self.cond.notify_all();
        self.notify.notify_waiters();
    }

    /// Calls `attempt` under `mutex` until it returns `Some`, sleeping on the condvar in between.
    pub(super) fn wait_blocking<T, R>(
        &self,
        mutex: &Mutex<T>,
        mut attempt: impl FnMut(&mut T) -> Option<R>,
    ) -> R {
        let mut guard = lock(mutex);
        loop {
            if let Some(result) = attempt(&mut guard) {
                return result;
            }
            guard = self
                .cond
                .wait(guard)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Calls `attempt` under `mutex` until it returns `Some`, awaiting a wake-up in between.
    /// The waiter registers *before* checking, so a wake-up between the check and the
    /// await is not lost; the lock is released before awaiting.
    pub(super) async fn wait_async<T, R>(
        &self,
        mutex: &Mutex<T>,
        mut attempt: impl FnMut(&mut T) -> Option<R>,
    ) -> R {
        loop {
            let notified = self.notify.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            let result = {
                let mut guard = lock(mutex);
                attempt(&mut guard)
            };
            if let Some(result) = result {
                return result;
            }
            notified.await;
        }
    }
}

/// What a FIFO keeps in its queue, as seen by [`FifoCore`]: something to pop from the head.
pub(super) trait FifoEntries: Send {
    /// What one pop hands to the consumer.
    type Item;

    /// Removes the head: `None` when empty, `Some(None)` for a stale head (a queued key
    /// whose item is gone), which the core skips and counts as popped.
    fn pop_head(&mut self) -> Option<Option<Self::Item>>;

    /// The number of entries a consumer would pop.
    fn len(&self) -> usize;
}

/// The locked state of a FIFO: its entries plus what every FIFO tracks. Dereferences to
/// the entries so that a queue's code reads `inner.items`, `inner.queue`.
#[derive(Debug)]
pub(super) struct Locked<S> {
    pub(super) entries: S,
    pub(super) population: Population,
    pub(super) closed: bool,
}

impl<S> Deref for Locked<S> {
    type Target = S;

    fn deref(&self) -> &S {
        &self.entries
    }
}

impl<S> DerefMut for Locked<S> {
    fn deref_mut(&mut self) -> &mut S {
        &mut self.entries
    }
}

/// The core every FIFO of this module shares: one mutex over [`Locked`] state, the
/// initial-population bookkeeping, blocking and async pops that wait without holding the
/// lock, closing, and waiting for room. A queue supplies its entries ([`FifoEntries`]) and
/// its writes; the core does the rest.
pub(super) struct FifoCore<S> {
    name: String,
    /// Guards the entries, the population and `closed` together.
    locked: Mutex<Locked<S>>,
    waiters: Waiters,
    /// Notified after every pop, for writers waiting in [`wait_for_room`](Self::wait_for_room).
    room: Notify,
}

impl<S: FifoEntries> FifoCore<S> {
    pub(super) fn new(name: String, entries: S) -> Self {
        FifoCore {
            name,
            locked: Mutex::new(Locked {
                entries,
                population: Population::default(),
                closed: false,
            }),
            waiters: Waiters::default(),
            room: Notify::new(),
        }
    }

    pub(super) fn name(&self) -> &str {
        &self.name
    }

    /// The locked state, for reads and for writes that wake consumers themselves.
    pub(super) fn lock(&self) -> MutexGuard<'_, Locked<S>> {
        lock(&self.locked)
    }

    /// Runs a write under the lock, then wakes every waiting consumer.
    pub(super) fn write<R>(&self, write: impl FnOnce(&mut Locked<S>) -> R) -> R {
        let result = write(&mut self.lock());
        self.waiters.wake_all();
        result
    }

    /// Pops the head under the lock if there is one (`Some`), handing it to `process`
    /// together with the entries (so a consumer can requeue) and whether it belongs to the
    /// initial population. `None` when empty and open; `Some(Err(Closed))` when closed and
    /// empty. The population counts the pop only after `process` returns.
    fn pop_locked<R>(
        &self,
        locked: &mut Locked<S>,
        process: &mut impl FnMut(&mut S, S::Item, bool) -> R,
    ) -> Option<Result<R>> {
        loop {
            let Some(head) = locked.entries.pop_head() else {
                return locked.closed.then(|| Err(Error::Closed(self.name.clone())));
            };
            let is_in_initial_list = !locked.population.has_synced();
            let Some(item) = head else {
                locked.population.popped();
                continue;
            };
            let result = process(&mut locked.entries, item, is_in_initial_list);
            // After processing: `has_synced` flips only once the last initial item is handled.
            locked.population.popped();
            self.room.notify_waiters();
            return Some(Ok(result));
        }
    }

    /// Pops the head if there is one; `Ok(None)` when empty and open.
    pub(super) fn try_pop<R>(
        &self,
        mut process: impl FnMut(&mut S, S::Item, bool) -> R,
    ) -> Result<Option<R>> {
        self.pop_locked(&mut self.lock(), &mut process).transpose()
    }

    /// Blocks the calling thread until the head can be popped.
    pub(super) fn pop_blocking<R>(
        &self,
        mut process: impl FnMut(&mut S, S::Item, bool) -> R,
    ) -> Result<R> {
        self.waiters
            .wait_blocking(&self.locked, |locked| self.pop_locked(locked, &mut process))
    }

    /// Waits (holding no lock) until the head can be popped. Cancel safe: the head is
    /// removed only in the synchronous step that runs `process`.
    pub(super) async fn pop<R>(
        &self,
        mut process: impl FnMut(&mut S, S::Item, bool) -> R,
    ) -> Result<R> {
        self.waiters
            .wait_async(&self.locked, |locked| self.pop_locked(locked, &mut process))
            .await
    }

    /// Waits until fewer than `max` entries are queued, or the queue is closed.
    pub(super) async fn wait_for_room(&self, max: usize) {
        loop {
            let room = self.room.notified();
            let mut room = std::pin::pin!(room);
            room.as_mut().enable();
            {
                let locked = self.lock();
                if locked.entries.len() < max || locked.closed {
                    return;
                }
            }
            room.await;
        }
    }

    pub(super) fn close(&self) {
        self.lock().closed = true;
        self.waiters.wake_all();
    }

    pub(super) fn is_closed(&self) -> bool {
        self.lock().closed
    }

    pub(super) fn has_synced(&self) -> bool {
        self.lock().population.has_synced()
    }

    pub(super) fn len(&self) -> usize {
        self.lock().entries.len()
    }
}

/// The [`Queue`] methods that only forward to a [`FifoCore`] in field `core`, for a queue
/// whose entries pop [`Deltas`]-convertible items; `$to_deltas` turns a popped item into
/// the [`Deltas`] the consumer receives. Expanded inside `impl Queue<K> for ...`; the logic
/// is [`FifoCore`]'s, this only saves writing the forwarding twice.
macro_rules! forward_queue_to_core {
    ($to_deltas:expr) => {
        fn try_pop(&self, process: ProcessFn<'_, K>) -> Result<bool> {
            let popped = self
                .core
                .try_pop(|_, item, initial| process($to_deltas(item), initial))?;
            Ok(popped.is_some())
        }

        fn pop_blocking(&self, process: ProcessFn<'_, K>) -> Result<()> {
            self.core
                .pop_blocking(|_, item, initial| process($to_deltas(item), initial))
        }

        fn pop<'a>(&'a self, process: ProcessFn<'a, K>) -> PopFuture<'a> {
            let popping = self
                .core
                .pop(move |_, item, initial| process($to_deltas(item), initial));
            Box::pin(popping)
        }

        fn close(&self) {
            self.core.close();
        }

        fn is_closed(&self) -> bool {
            self.core.is_closed()
        }

        fn has_synced(&self) -> bool {
            self.core.has_synced()
        }

        fn len(&self) -> usize {
            self.core.len()
        }

        fn name(&self) -> &str {
            self.core.name()
        }
    };
}
pub(super) use forward_queue_to_core;

/// Entries that hold one object per key, for the keyed queues ([`FIFO`](super::FIFO),
/// [`Heap`](super::Heap)).
pub(super) trait KeyedEntries<K> {
    /// The object stored under `key`.
    fn object(&self, key: &str) -> Option<Arc<K>>;
    /// Every stored key.
    fn keys(&self) -> Vec<String>;
    /// Every stored object.
    fn objects(&self) -> Vec<Arc<K>>;
}

/// The read and lifecycle methods of a keyed queue over a [`FifoCore`] in field `core`
/// whose entries are [`KeyedEntries`], with its key function in field `key_func`, and its
/// [`KnownObjects`](super::KnownObjects) implementation. `$ty` is the queue type,
/// `$closed` documents what `close` does, `$len` what `len` counts. Only forwarding: the
/// logic is the core's and the entries'.
macro_rules! keyed_queue_methods {
    ($ty:ident, $closed:literal, $len:literal) => {
        impl<K: Object> $ty<K> {
            /// Every stored object, in no particular order.
            #[must_use]
            pub fn list(&self) -> Vec<Arc<K>> {
                self.core.lock().objects()
            }

            /// Every stored key, in no particular order.
            #[must_use]
            pub fn list_keys(&self) -> Vec<String> {
                self.core.lock().keys()
            }

            /// The stored object with `obj`'s key.
            ///
            /// # Errors
            ///
            /// [`Error::Key`](super::Error::Key).
            pub fn get(&self, obj: &K) -> Result<Option<Arc<K>>> {
                let key = key_of(self.key_func.as_ref(), obj)?;
                Ok(self.get_by_key(&key))
            }

            /// The stored object under `key`.
            #[must_use]
            pub fn get_by_key(&self, key: &str) -> Option<Arc<K>> {
                self.core.lock().object(key)
            }

            #[doc = $closed]
            pub fn close(&self) {
                self.core.close();
            }

            /// Whether [`close`](Self::close) was called.
            #[must_use]
            pub fn is_closed(&self) -> bool {
                self.core.is_closed()
            }

            #[doc = $len]
            #[must_use]
            pub fn len(&self) -> usize {
                self.core.len()
            }

            /// Whether [`len`](Self::len) is zero.
            #[must_use]
            pub fn is_empty(&self) -> bool {
                self.len() == 0
            }
        }

        impl<K: Object> super::KnownObjects<K> for $ty<K> {
            fn list_keys(&self) -> Vec<String> {
                $ty::list_keys(self)
            }

            fn get_by_key(&self, key: &str) -> Result<Option<Arc<K>>> {
                Ok($ty::get_by_key(self, key))
            }
        }
    };
}
pub(super) use keyed_queue_methods;
