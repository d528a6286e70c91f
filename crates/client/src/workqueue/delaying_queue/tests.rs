//! Scenarios for client-go-semantics.md §13.2–13.3 (delaying and rate-limited queues) and
//! §17.17, on tokio's paused clock.

use tokio::time::timeout;

use super::*;
use crate::workqueue::{ItemExponentialFailureRateLimiter, RateLimitingQueue};

const HANG: Duration = Duration::from_secs(3600);

/// Gets the next item and how long (virtual time) it took.
async fn timed_get<T: Item>(q: &DelayingQueue<T>) -> (Option<T>, Duration) {
    let start = Instant::now();
    let item = timeout(HANG, q.get())
        .await
        .expect("get hung: delayed item never added");
    (item, start.elapsed())
}

#[tokio::test(start_paused = true)]
async fn add_after_adds_the_item_once_the_delay_has_passed() {
    let q = DelayingQueue::new(QueueConfig::default());
    q.add_after("a", Duration::from_secs(5));
    assert_eq!(q.len(), 0);
    assert_eq!(q.waiting_len(), 1);
    assert_eq!(timed_get(&q).await, (Some("a"), Duration::from_secs(5)));
    assert_eq!(q.waiting_len(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_zero_delay_adds_immediately() {
    let q = DelayingQueue::new(QueueConfig::default());
    q.add_after("a", Duration::ZERO);
    assert_eq!(q.len(), 1);
}

#[tokio::test(start_paused = true)]
async fn add_after_keeps_the_earliest_time_for_a_waiting_item() {
    let q = DelayingQueue::new(QueueConfig::default());
    q.add_after("a", Duration::from_secs(10));
    q.add_after("a", Duration::from_secs(2));
    q.add_after("a", Duration::from_secs(30));
    assert_eq!(q.waiting_len(), 1);
    assert_eq!(timed_get(&q).await, (Some("a"), Duration::from_secs(2)));
    q.done(&"a");
    let blocked = timeout(Duration::from_secs(60), q.get()).await;
    assert!(
        blocked.is_err(),
        "the superseded times must not add the item again"
    );
}

#[tokio::test(start_paused = true)]
async fn delayed_items_come_out_in_ready_time_order() {
    let q = DelayingQueue::new(QueueConfig::default());
    q.add_after("late", Duration::from_secs(3));
    q.add_after("early", Duration::from_secs(1));
    q.add_after("middle", Duration::from_secs(2));
    assert_eq!(timed_get(&q).await.0, Some("early"));
    assert_eq!(timed_get(&q).await.0, Some("middle"));
    assert_eq!(timed_get(&q).await.0, Some("late"));
}

#[tokio::test(start_paused = true)]
async fn a_delayed_item_already_queued_is_deduplicated_when_due() {
    let q = DelayingQueue::new(QueueConfig::default());
    q.add("a");
    q.add_after("a", Duration::from_secs(1));
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(q.len(), 1);
}

#[tokio::test(start_paused = true)]
async fn add_after_during_shutdown_is_ignored_and_waiting_items_are_dropped() {
    let q = DelayingQueue::new(QueueConfig::default());
    q.add_after("a", Duration::from_secs(1));
    q.shutdown();
    q.add_after("b", Duration::ZERO);
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(timeout(HANG, q.get()).await.unwrap(), None);
}

#[tokio::test(start_paused = true)]
async fn the_waiting_task_stops_when_the_last_handle_is_dropped() {
    let q = DelayingQueue::<u8>::new(QueueConfig::default());
    let weak = Arc::downgrade(&q.shared);
    drop(q);
    tokio::task::yield_now().await;
    assert!(weak.upgrade().is_none());
}

#[tokio::test(start_paused = true)]
async fn add_rate_limited_waits_for_the_limiters_delay_and_forget_resets_it() {
    let limiter = Arc::new(ItemExponentialFailureRateLimiter::new(
        Duration::from_secs(1),
        Duration::from_secs(60),
    ));
    let q = RateLimitingQueue::new(limiter, QueueConfig::default());
    q.add_rate_limited("a");
    q.add_rate_limited("a"); // 2 s, later than the 1 s already waiting: ignored
    assert_eq!(q.num_requeues(&"a"), 2);
    assert_eq!(timed_get(&q).await, (Some("a"), Duration::from_secs(1)));
    q.forget(&"a");
    assert_eq!(q.num_requeues(&"a"), 0);
    q.done(&"a");
    q.add_rate_limited("a");
    assert_eq!(timed_get(&q).await, (Some("a"), Duration::from_secs(1)));
}

#[tokio::test(start_paused = true)]
async fn retries_are_counted_for_every_add_after() {
    use crate::workqueue::metrics::{CounterMetric, MetricsProvider};
    use std::sync::atomic::{AtomicU32, Ordering};

    struct Retries(Arc<AtomicU32>);
    impl CounterMetric for Retries {
        fn inc(&self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    struct Provider(Arc<AtomicU32>);
    impl MetricsProvider for Provider {
        fn new_retries_metric(&self, _name: &str) -> Arc<dyn CounterMetric> {
            Arc::new(Retries(self.0.clone()))
        }
    }
    let count = Arc::new(AtomicU32::new(0));
    let q = DelayingQueue::new(
        QueueConfig::default()
            .name("q")
            .metrics_provider(Arc::new(Provider(count.clone()))),
    );
    q.add_after("a", Duration::ZERO);
    q.add_after("b", Duration::from_secs(1));
    q.add_after("b", Duration::from_secs(2));
    assert_eq!(count.load(Ordering::SeqCst), 3);
    q.shutdown();
    q.add_after("c", Duration::ZERO);
    assert_eq!(count.load(Ordering::SeqCst), 3);
}
