//! [`WorkQueue`]: client-go's basic work queue (`util/workqueue/queue.go`) for async workers.
//!
//! Items are deduplicated while they wait, and an item is never handed to two workers at
//! once: one added again while a worker holds it is handed out again only after that worker
//! calls [`done`](WorkQueue::done).

use std::collections::{HashSet, VecDeque};
use std::fmt;
use std::hash::Hash;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use tokio::sync::Notify;

use super::metrics::{MetricsProvider, QueueMetrics};
use crate::sync::lock;

/// How often the unfinished-work gauges are refreshed (client-go: 500 ms).
const UNFINISHED_WORK_UPDATE_PERIOD: Duration = Duration::from_millis(500);

/// What a work queue item must be: cheap to clone (keys, `Arc`s), hashable, sendable.
pub trait Item: Clone + Eq + Hash + Send + Sync + 'static {}
impl<T: Clone + Eq + Hash + Send + Sync + 'static> Item for T {}

/// Options for the work queues. The default is an unnamed queue without metrics.
#[derive(Clone, Default)]
pub struct QueueConfig {
    pub(super) name: String,
    pub(super) metrics_provider: Option<Arc<dyn MetricsProvider>>,
}

impl QueueConfig {
    /// The queue's name, the `name` label of its metrics (default `""`: no metrics).
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Where the metrics go (default none: no metrics). Metrics need a name too.
    #[must_use]
    pub fn metrics_provider(mut self, provider: Arc<dyn MetricsProvider>) -> Self {
        self.metrics_provider = Some(provider);
        self
    }

    pub(super) fn metrics_enabled(&self) -> bool {
        !self.name.is_empty() && self.metrics_provider.is_some()
    }
}

impl fmt::Debug for QueueConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QueueConfig")
            .field("name", &self.name)
            .field("metrics", &self.metrics_provider.is_some())
            .finish()
    }
}

/// A deduplicating FIFO work queue for many async workers (Go's `workqueue.Typed`).
///
/// Cloning gives another handle to the same queue. Time is tokio's clock, so tests can
/// use `#[tokio::test(start_paused = true)]`.
///
/// # Examples
///
/// The canonical worker loop:
///
/// ```
/// use kubeclient::workqueue::{QueueConfig, WorkQueue};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let queue = WorkQueue::new(QueueConfig::default());
/// queue.add("default/web".to_string());
/// queue.add("default/web".to_string()); // deduplicated while waiting
/// assert_eq!(queue.len(), 1);
///
/// let worker = {
///     let queue = queue.clone();
///     tokio::spawn(async move {
///         let mut seen = Vec::new();
///         while let Some(key) = queue.get().await {
///             seen.push(key.clone()); // reconcile `key` here
///             queue.done(&key);
///         }
///         seen
///     })
/// };
/// queue.shutdown_with_drain().await;
/// assert_eq!(worker.await.unwrap(), ["default/web"]);
/// # }
/// ```
#[doc(
    alias = "Interface",
    alias = "TypedInterface",
    alias = "workqueue.Type"
)]
pub struct WorkQueue<T> {
    shared: Arc<Shared<T>>,
}

impl<T> Clone for WorkQueue<T> {
    fn clone(&self) -> Self {
        WorkQueue {
            shared: Arc::clone(&self.shared),
        }
    }
}

struct Shared<T> {
    /// Guards every field of [`Inner`] together.
    inner: Mutex<Inner<T>>,
    /// Wakes workers waiting in `get` (one per added item; all on shutdown).
    item_ready: Notify,
    /// Wakes `shutdown_with_drain` when the last in-flight item is done.
    drained: Notify,
}

/// The locked state of a [`WorkQueue`].
///
/// Invariants (asserted by `check_invariants` in tests):
/// - `queue` has no duplicates, and its items are exactly `dirty ∖ processing`;
/// - so an item waiting in `queue` is never being processed, and an item is handed out
///   (moved to `processing`) only from `queue`.
struct Inner<T> {
    /// Items to hand out, in order.
    queue: VecDeque<T>,
    /// Items that need processing (waiting in `queue`, or re-added while processing).
    dirty: HashSet<T>,
    /// Items handed out and not yet done.
    processing: HashSet<T>,
    shutting_down: bool,
    /// Whether `shutdown_with_drain` is waiting for `processing` to empty.
    drain: bool,
    metrics: Option<QueueMetrics<T>>,
}

impl<T: Item> WorkQueue<T> {
    /// An empty queue. With metrics enabled (a name and a provider), a task refreshing the
    /// unfinished-work gauges every 500 ms is spawned if a tokio runtime is running.
    #[must_use]
    pub fn new(config: QueueConfig) -> Self {
        let metrics = match &config.metrics_provider {
            Some(provider) if config.metrics_enabled() => {
                Some(QueueMetrics::new(provider.as_ref(), &config.name))
            }
            _ => None,
        };
        let with_metrics = metrics.is_some();
        let queue = WorkQueue {
            shared: Arc::new(Shared {
                inner: Mutex::new(Inner {
                    queue: VecDeque::new(),
                    dirty: HashSet::new(),
                    processing: HashSet::new(),
                    shutting_down: false,
                    drain: false,
                    metrics,
                }),
                item_ready: Notify::new(),
                drained: Notify::new(),
            }),
        };
        if with_metrics && let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(update_unfinished_work_loop(Arc::downgrade(&queue.shared)));
        }
        queue
    }

    /// Marks `item` as needing processing. Ignored after shutdown; a no-op if the item is
    /// already waiting; if a worker holds it, it is handed out again after
    /// [`done`](Self::done).
    pub fn add(&self, item: T) {
        let mut inner = lock(&self.shared.inner);
        if inner.shutting_down || inner.dirty.contains(&item) {
            return;
        }
        if let Some(metrics) = &mut inner.metrics {
            metrics.add(&item);
        }
        inner.dirty.insert(item.clone());
        if inner.processing.contains(&item) {
            return;
        }
        inner.queue.push_back(item);
        drop(inner);
        self.shared.item_ready.notify_one();
    }

    /// Waits for the next item and marks it as being processed; the caller must call
    /// [`done`](Self::done) with it. `None` once the queue is shut down **and** empty:
    /// items queued before shutdown are still handed out.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: an item is taken in the same synchronous step that returns it.
    pub async fn get(&self) -> Option<T> {
        loop {
            let notified = self.shared.item_ready.notified();
            let mut notified = std::pin::pin!(notified);
            // Register before checking, so an add between the check and the await wakes us.
            notified.as_mut().enable();
            if let Some(result) = self.try_get() {
                return result;
            }
            notified.await;
        }
    }

    /// `Some(Some(item))` if one was taken, `Some(None)` if shut down and empty, `None` to wait.
    fn try_get(&self) -> Option<Option<T>> {
        let mut inner = lock(&self.shared.inner);
        let Some(item) = inner.queue.pop_front() else {
            return inner.shutting_down.then_some(None);
        };
        if let Some(metrics) = &mut inner.metrics {
            metrics.get(&item);
        }
        inner.processing.insert(item.clone());
        inner.dirty.remove(&item);
        Some(Some(item))
    }

    /// Marks `item` as processed. If it was added again meanwhile, it is queued again.
    ///
    /// Calling `done` for an item that is not being processed is a no-op. (client-go would
    /// queue an item that is already waiting a second time; we keep the queue free of
    /// duplicates instead.)
    pub fn done(&self, item: &T) {
        let mut inner = lock(&self.shared.inner);
        if !inner.processing.remove(item) {
            return;
        }
        if let Some(metrics) = &mut inner.metrics {
            metrics.done(item);
        }
        if inner.dirty.contains(item) {
            inner.queue.push_back(item.clone());
            drop(inner);
            self.shared.item_ready.notify_one();
        } else if inner.processing.is_empty() {
            drop(inner);
            self.shared.drained.notify_waiters();
        }
    }

    /// The number of items waiting to be handed out (not those being processed).
    #[must_use]
    pub fn len(&self) -> usize {
        lock(&self.shared.inner).queue.len()
    }

    /// Whether no item is waiting.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Stops accepting items and wakes every worker; workers still receive the items already
    /// queued, then `None`. Does not wait for in-flight items. Unblocks a pending
    /// [`shutdown_with_drain`](Self::shutdown_with_drain).
    pub fn shutdown(&self) {
        let mut inner = lock(&self.shared.inner);
        inner.shutting_down = true;
        inner.drain = false;
        drop(inner);
        self.shared.item_ready.notify_waiters();
        self.shared.drained.notify_waiters();
    }

    /// Like [`shutdown`](Self::shutdown), then waits until every handed-out item is done
    /// (or a later [`shutdown`](Self::shutdown) cancels the wait).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: the queue is shut down on the first poll; dropping the future only stops
    /// the waiting.
    pub async fn shutdown_with_drain(&self) {
        {
            let mut inner = lock(&self.shared.inner);
            inner.shutting_down = true;
            inner.drain = true;
        }
        self.shared.item_ready.notify_waiters();
        loop {
            let notified = self.shared.drained.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            {
                let inner = lock(&self.shared.inner);
                if !inner.drain || inner.processing.is_empty() {
                    return;
                }
            }
            notified.await;
        }
    }

    /// Whether the queue is shutting down.
    #[must_use]
    pub fn shutting_down(&self) -> bool {
        lock(&self.shared.inner).shutting_down
    }

    /// Asserts the invariants of [`Inner`].
    #[cfg(test)]
    pub(crate) fn check_invariants(&self) {
        let inner = lock(&self.shared.inner);
        let queued: HashSet<&T> = inner.queue.iter().collect();
        assert_eq!(queued.len(), inner.queue.len(), "queue has duplicates");
        let waiting: HashSet<&T> = inner.dirty.difference(&inner.processing).collect();
        assert!(queued == waiting, "queue is not dirty minus processing");
    }
}

impl<T: Item + fmt::Debug> fmt::Debug for WorkQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = lock(&self.shared.inner);
        f.debug_struct("WorkQueue")
            .field("queue", &inner.queue)
            .field("processing", &inner.processing)
            .field("shutting_down", &inner.shutting_down)
            .finish_non_exhaustive()
    }
}

/// Refreshes the unfinished-work gauges until the queue shuts down or is dropped.
async fn update_unfinished_work_loop<T: Item>(shared: Weak<Shared<T>>) {
    let mut ticker = tokio::time::interval(UNFINISHED_WORK_UPDATE_PERIOD);
    loop {
        ticker.tick().await;
        let Some(shared) = shared.upgrade() else {
            return;
        };
        let inner = lock(&shared.inner);
        if inner.shutting_down {
            return;
        }
        if let Some(metrics) = &inner.metrics {
            metrics.update_unfinished_work();
        }
    }
}

#[cfg(test)]
mod tests;
