//! [`RateLimitingQueue`]: a [`DelayingQueue`] that retries items after a delay chosen by a
//! [`RateLimiter`] (`util/workqueue/rate_limiting_queue.go`).

use std::fmt;
use std::sync::Arc;

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
#[doc(alias = "RateLimitingInterface")]
pub struct RateLimitingQueue<T> {
    queue: DelayingQueue<T>,
    limiter: Arc<dyn RateLimiter<T>>,
}

/// A rate-limiting queue is a delaying queue with per-item retry delays (Go's
/// `RateLimitingInterface` embeds `DelayingInterface`): `add_after`, `add`, `get`, `done`,
/// `shutdown` ... are the [`DelayingQueue`]'s.
impl<T> std::ops::Deref for RateLimitingQueue<T> {
    type Target = DelayingQueue<T>;

    fn deref(&self) -> &DelayingQueue<T> {
        &self.queue
    }
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
    /// [`done`](super::WorkQueue::done)).
    pub fn forget(&self, item: &T) {
        self.limiter.forget(item);
    }

    /// How many failures of `item` the limiter counts.
    #[must_use]
    pub fn num_requeues(&self, item: &T) -> usize {
        self.limiter.num_requeues(item)
    }
}

impl<T: Item + fmt::Debug> fmt::Debug for RateLimitingQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimitingQueue")
            .field("queue", &self.queue)
            .finish_non_exhaustive()
    }
}
