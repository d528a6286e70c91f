//! The [`Queue`] contract shared by [`DeltaFIFO`](super::DeltaFIFO) and
//! [`RealFIFO`](super::RealFIFO), and the waiting machinery behind their `pop`s.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Condvar, Mutex, PoisonError};

use tokio::sync::Notify;

use super::delta::Deltas;
use super::error::Result;
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
}

impl Population {
    /// Records a write other than `replace`.
    pub(super) fn write(&mut self) {
        self.populated = true;
    }

    /// Records a `replace` that created `entries` entries.
    pub(super) fn replace(&mut self, entries: usize) {
        if !self.populated {
            self.populated = true;
            self.initial_population_count = entries;
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

/// The [`Queue`] methods both FIFOs share word for word: popping (`try_pop`,
/// `pop_blocking`, `pop`) through the type's own `pop_locked`, and closing and sync state.
/// Expanded inside `impl Queue<K> for ...` of a type with fields `inner: Mutex<Inner>`
/// (where `Inner` has `closed: bool` and `population: Population`) and `waiters: Waiters`,
/// and a method `pop_locked(&self, &mut Inner, ProcessFn) -> Option<Result<bool>>`.
macro_rules! fifo_pop_and_lifecycle {
    () => {
        fn try_pop(&self, process: ProcessFn<'_, K>) -> Result<bool> {
            let mut inner = lock(&self.inner);
            self.pop_locked(&mut inner, process).unwrap_or(Ok(false))
        }

        fn pop_blocking(&self, process: ProcessFn<'_, K>) -> Result<()> {
            self.waiters
                .wait_blocking(&self.inner, |inner| self.pop_locked(inner, &mut *process))
                .map(drop)
        }

        fn pop<'a>(&'a self, process: ProcessFn<'a, K>) -> PopFuture<'a> {
            Box::pin(async move {
                self.waiters
                    .wait_async(&self.inner, |inner| self.pop_locked(inner, &mut *process))
                    .await
                    .map(drop)
            })
        }

        fn close(&self) {
            lock(&self.inner).closed = true;
            self.waiters.wake_all();
        }

        fn is_closed(&self) -> bool {
            lock(&self.inner).closed
        }

        fn has_synced(&self) -> bool {
            lock(&self.inner).population.has_synced()
        }
    };
}
pub(super) use fifo_pop_and_lifecycle;
