//! [`RateLimitingQueue`]: a [`DelayingQueue`] that retries items after a delay chosen by a
//! [`RateLimiter`] (`util/workqueue/rate_limiting_queue.go`).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::delaying_queue::DelayingQueue;
use super::queue::{Item, QueueConfig};
use super::rate_limiter::RateLimiter;

/// A work queue with rate-limited retries (Go's `workqueue.TypedRateLimitingInterface`).
///
/// # Examples
///
/// The canonical controller worker: forget on success, retry with backoff on failure,
/// always `done`.
///
/// ```
/// use kubeclient::workqueue::{default_controller_rate_limiter, QueueConfig, RateLimitingQueue};
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)] async fn main() {
/// let queue = RateLimitingQueue::new(default_controller_rate_limiter(), QueueConfig::default());
/// queue.add("default/web".to_string());
/// let key = queue.get().await.unwrap();
/// let failed = true; // reconcile(key)
/// if failed {
///     queue.add_rate_limited(key.clone());
/// } else {
///     queue.forget(&key);
/// }
/// queue.done(&key);
/// assert_eq!(queue.num_requeues(&key), 1);
/// assert_eq!(queue.get().await.as_deref(), Some("default/web")); // after 5 ms
/// # }
/// ```
pub struct RateLimitingQueue<T> {
    queue: DelayingQueue<T>,
    limiter: Arc<dyn RateLimiter<T>>,
}

impl<T> Clone for RateLimitingQueue<T> {
    fn clone(&self) -> Self {
        RateLimitingQueue {
            queue: self.queue.clone(),
            limiter: Arc::clone(&self.limiter),
        }
    }
}

impl<T: Item> RateLimitingQueue<T> {
    /// An empty queue retrying with `limiter`.
    ///
    /// # Panics
    ///
    /// When called outside a tokio runtime (see [`DelayingQueue::new`]).
    #[must_use]
    #[track_caller]
    pub fn new(limiter: Arc<dyn RateLimiter<T>>, config: QueueConfig) -> Self {
        RateLimitingQueue {
            queue: DelayingQueue::new(config),
            limiter,
        }
    }

    /// Adds `item` after the limiter's delay for it (counting one more failure).
    pub fn add_rate_limited(&self, item: T) {
        let delay = self.limiter.when(&item);
        self.queue.add_after(item, delay);
    }

    /// Forgets `item`'s failures; it does not touch the queue (still call
    /// [`done`](Self::done)).
    pub fn forget(&self, item: &T) {
        self.limiter.forget(item);
    }

    /// How many failures of `item` the limiter counts.
    #[must_use]
    pub fn num_requeues(&self, item: &T) -> usize {
        self.limiter.num_requeues(item)
    }

    /// See [`DelayingQueue::add_after`].
    pub fn add_after(&self, item: T, delay: Duration) {
        self.queue.add_after(item, delay);
    }

    /// See [`WorkQueue::add`](super::WorkQueue::add).
    pub fn add(&self, item: T) {
        self.queue.add(item);
    }

    /// See [`WorkQueue::get`](super::WorkQueue::get).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe.
    pub async fn get(&self) -> Option<T> {
        self.queue.get().await
    }

    /// See [`WorkQueue::done`](super::WorkQueue::done).
    pub fn done(&self, item: &T) {
        self.queue.done(item);
    }

    /// The number of items ready to be handed out.
    #[must_use]
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    /// Whether no item is ready.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// See [`DelayingQueue::shutdown`].
    pub fn shutdown(&self) {
        self.queue.shutdown();
    }

    /// See [`DelayingQueue::shutdown_with_drain`].
    ///
    /// # Cancel safety
    ///
    /// Cancel safe.
    pub async fn shutdown_with_drain(&self) {
        self.queue.shutdown_with_drain().await;
    }

    /// Whether the queue is shutting down.
    #[must_use]
    pub fn shutting_down(&self) -> bool {
        self.queue.shutting_down()
    }

    /// The underlying delaying queue.
    #[must_use]
    pub fn delaying_queue(&self) -> &DelayingQueue<T> {
        &self.queue
    }
}

impl<T: Item + fmt::Debug> fmt::Debug for RateLimitingQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimitingQueue")
            .field("queue", &self.queue)
            .finish_non_exhaustive()
    }
}
