//! [`DelayingQueue`]: a [`WorkQueue`] that can add an item after a delay
//! (`util/workqueue/delaying_queue.go`).

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::{Instant, sleep_until};

use super::metrics::{CounterMetric, NoopMetric};
use super::queue::{Item, QueueConfig, WorkQueue};
use crate::sync::lock;

/// The waiting loop wakes at least this often even with nothing due (client-go's `maxWait`).
const MAX_WAIT: Duration = Duration::from_secs(10);

/// The longest an item can wait in a [`DelayingQueue`]: longer delays (a rate limiter with
/// a huge maximum backoff, a tiny QPS) are clamped to it instead of overflowing the clock.
pub const MAX_DELAY: Duration = Duration::from_secs(365 * 24 * 3600);

/// A work queue with [`add_after`](Self::add_after) (Go's `workqueue.TypedDelayingInterface`).
///
/// A background task moves items into the queue when they are due; it stops on shutdown
/// or when the last handle is dropped. Time is tokio's clock.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use kubeclient::workqueue::{DelayingQueue, QueueConfig};
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)] async fn main() {
/// let queue = DelayingQueue::new(QueueConfig::default());
/// queue.add_after("a", Duration::from_secs(5));
/// assert_eq!(queue.len(), 0);
/// assert_eq!(queue.get().await, Some("a")); // virtual time jumps 5 s
/// queue.done(&"a");
/// # }
/// ```
#[doc(alias = "DelayingInterface")]
pub struct DelayingQueue<T> {
    queue: WorkQueue<T>,
    shared: Arc<DelayShared<T>>,
}

/// A delaying queue is a work queue with delayed adds (Go's `DelayingInterface` embeds
/// `Interface`): `add`, `get`, `done`, `len` ... are the [`WorkQueue`]'s.
impl<T> std::ops::Deref for DelayingQueue<T> {
    type Target = WorkQueue<T>;

    fn deref(&self) -> &WorkQueue<T> {
        &self.queue
    }
}

impl<T> Clone for DelayingQueue<T> {
    fn clone(&self) -> Self {
        DelayingQueue {
            queue: self.queue.clone(),
            shared: Arc::clone(&self.shared),
        }
    }
}

struct DelayShared<T> {
    /// Guards the waiting items.
    waiting: Mutex<Waiting<T>>,
    /// Wakes the waiting loop: a new entry, shutdown, or this struct being dropped.
    wake: Arc<Notify>,
    retries: Arc<dyn CounterMetric>,
}

impl<T> Drop for DelayShared<T> {
    fn drop(&mut self) {
        // The loop holds only a `Weak`; wake it so it notices and exits.
        self.wake.notify_one();
    }
}

/// Items waiting for their time.
///
/// Invariant: every item in `ready_at` has a heap entry with exactly that time; heap
/// entries whose time differs from `ready_at` are stale (superseded by an earlier time)
/// and skipped.
struct Waiting<T> {
    heap: BinaryHeap<Reverse<Entry<T>>>,
    ready_at: HashMap<T, Instant>,
    /// Insertion counter: equal times pop in insertion order.
    seq: u64,
}

struct Entry<T> {
    ready_at: Instant,
    seq: u64,
    item: T,
}

impl<T> PartialEq for Entry<T> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl<T> Eq for Entry<T> {}
impl<T> PartialOrd for Entry<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<T> Ord for Entry<T> {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.ready_at, self.seq).cmp(&(other.ready_at, other.seq))
    }
}

impl<T: Item> Waiting<T> {
    /// Schedules `item` at `ready_at`, or earlier if it is already scheduled earlier.
    fn insert(&mut self, item: T, ready_at: Instant) -> bool {
        if let Some(current) = self.ready_at.get(&item)
            && *current <= ready_at
        {
            return false;
        }
        self.ready_at.insert(item.clone(), ready_at);
        self.seq += 1;
        let seq = self.seq;
        self.heap.push(Reverse(Entry {
            ready_at,
            seq,
            item,
        }));
        true
    }

    /// Removes the items due at `now`, and returns them with the next wake-up time.
    fn take_ready(&mut self, now: Instant) -> (Vec<T>, Option<Instant>) {
        let mut ready = Vec::new();
        while let Some(Reverse(entry)) = self.heap.peek() {
            if entry.ready_at > now {
                return (ready, Some(entry.ready_at));
            }
            let Some(Reverse(entry)) = self.heap.pop() else {
                break;
            };
            if self.ready_at.get(&entry.item) == Some(&entry.ready_at) {
                self.ready_at.remove(&entry.item);
                ready.push(entry.item);
            }
        }
        (ready, None)
    }
}

impl<T: Item> DelayingQueue<T> {
    /// An empty queue and its waiting task.
    ///
    /// # Panics
    ///
    /// When called outside a tokio runtime (the waiting task is spawned on it).
    #[must_use]
    #[track_caller]
    pub fn new(config: QueueConfig) -> Self {
        let retries = match &config.metrics_provider {
            Some(provider) if config.metrics_enabled() => provider.new_retries_metric(&config.name),
            _ => Arc::new(NoopMetric),
        };
        let queue = WorkQueue::new(config);
        let wake = Arc::new(Notify::new());
        let shared = Arc::new(DelayShared {
            waiting: Mutex::new(Waiting {
                heap: BinaryHeap::new(),
                ready_at: HashMap::new(),
                seq: 0,
            }),
            wake: Arc::clone(&wake),
            retries,
        });
        tokio::spawn(waiting_loop(queue.clone(), Arc::downgrade(&shared), wake));
        DelayingQueue { queue, shared }
    }

    /// Adds `item` once `delay` has passed; a zero delay adds it now. If the item is already
    /// waiting, the earlier of the two times is kept. Ignored after shutdown.
    pub fn add_after(&self, item: T, delay: Duration) {
        if self.queue.shutting_down() {
            return;
        }
        self.shared.retries.inc();
        if delay.is_zero() {
            self.queue.add(item);
            return;
        }
        let now = Instant::now();
        let delay = delay.min(MAX_DELAY);
        let ready_at = now.checked_add(delay).unwrap_or(now + MAX_WAIT);
        if lock(&self.shared.waiting).insert(item, ready_at) {
            self.shared.wake.notify_one();
        }
    }

    /// The number of items waiting for their time.
    #[must_use]
    pub fn waiting_len(&self) -> usize {
        lock(&self.shared.waiting).ready_at.len()
    }

    /// Shuts the queue down (see [`WorkQueue::shutdown`]) and stops the waiting task;
    /// items still waiting are dropped.
    pub fn shutdown(&self) {
        self.queue.shutdown();
        self.shared.wake.notify_one();
    }

    /// Shuts down, then waits for in-flight items (see [`WorkQueue::shutdown_with_drain`]);
    /// items still waiting are dropped.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe.
    pub async fn shutdown_with_drain(&self) {
        self.shared.wake.notify_one();
        self.queue.shutdown_with_drain().await;
    }
}

impl<T: Item + fmt::Debug> fmt::Debug for DelayingQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DelayingQueue")
            .field("queue", &self.queue)
            .field("waiting", &self.waiting_len())
            .finish()
    }
}

/// Moves due items into the queue; exits on shutdown or when the last handle is gone.
async fn waiting_loop<T: Item>(
    queue: WorkQueue<T>,
    shared: Weak<DelayShared<T>>,
    wake: Arc<Notify>,
) {
    loop {
        if queue.shutting_down() {
            return;
        }
        let Some(strong) = shared.upgrade() else {
            return;
        };
        let now = Instant::now();
        let (ready, next) = lock(&strong.waiting).take_ready(now);
        drop(strong);
        for item in ready {
            queue.add(item);
        }
        let deadline = next.map_or(now + MAX_WAIT, |next| next.min(now + MAX_WAIT));
        tokio::select! {
            () = sleep_until(deadline) => {}
            () = wake.notified() => {}
        }
    }
}

#[cfg(test)]
mod tests;
