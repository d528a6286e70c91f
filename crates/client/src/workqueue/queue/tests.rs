//! Scenarios for client-go-semantics.md §13.1 and §13.5 (basic queue and its metrics),
//! §17.16, and a seeded many-producers/many-workers stress test.

use std::collections::HashMap;
use std::sync::Mutex;

use tokio::time::timeout;

use super::*;
use crate::workqueue::metrics::{CounterMetric, GaugeMetric, HistogramMetric, SettableGaugeMetric};

const HANG: Duration = Duration::from_secs(60);

fn queue() -> WorkQueue<&'static str> {
    WorkQueue::new(QueueConfig::default())
}

/// `get` that must not hang.
async fn get<T: Item>(queue: &WorkQueue<T>) -> Option<T> {
    timeout(HANG, queue.get())
        .await
        .expect("get hung: lost wake-up or deadlock?")
}

/// Whether `get` would block right now (it is not polled further).
async fn get_blocks<T: Item>(queue: &WorkQueue<T>) -> bool {
    timeout(Duration::from_millis(1), queue.get())
        .await
        .is_err()
}

#[tokio::test(start_paused = true)]
async fn items_are_handed_out_in_add_order() {
    let q = queue();
    q.add("a");
    q.add("b");
    assert_eq!(get(&q).await, Some("a"));
    assert_eq!(get(&q).await, Some("b"));
    q.check_invariants();
}

#[tokio::test(start_paused = true)]
async fn an_item_added_twice_while_waiting_is_handed_out_once() {
    let q = queue();
    q.add("a");
    q.add("a");
    assert_eq!(q.len(), 1);
    assert_eq!(get(&q).await, Some("a"));
    assert!(get_blocks(&q).await);
}

#[tokio::test(start_paused = true)]
async fn item_readded_during_processing_is_handed_out_again_only_after_done() {
    let q = queue();
    q.add("a");
    let item = get(&q).await.unwrap();
    q.add(item);
    q.add(item);
    assert_eq!(q.len(), 0, "a dirty item being processed is not queued");
    assert!(get_blocks(&q).await, "no second worker may receive it");
    q.check_invariants();
    q.done(&item);
    assert_eq!(q.len(), 1);
    assert_eq!(get(&q).await, Some("a"));
    q.done(&"a");
    assert!(get_blocks(&q).await, "processed again exactly once");
}

#[tokio::test(start_paused = true)]
async fn a_waiting_worker_is_woken_by_an_add() {
    let q = WorkQueue::new(QueueConfig::default());
    let worker = tokio::spawn({
        let q = q.clone();
        async move { q.get().await }
    });
    tokio::task::yield_now().await;
    q.add(7);
    assert_eq!(timeout(HANG, worker).await.unwrap().unwrap(), Some(7));
}

#[tokio::test(start_paused = true)]
async fn done_for_an_item_that_was_never_handed_out_is_a_no_op() {
    let q = queue();
    q.done(&"unknown");
    q.add("a");
    q.done(&"a"); // waiting, not processing: client-go would queue a duplicate
    assert_eq!(q.len(), 1);
    q.check_invariants();
}

#[tokio::test(start_paused = true)]
async fn queued_items_are_still_handed_out_after_shutdown() {
    let q = queue();
    q.add("a");
    q.shutdown();
    assert!(q.shutting_down());
    assert_eq!(get(&q).await, Some("a"));
    assert_eq!(get(&q).await, None);
}

#[tokio::test(start_paused = true)]
async fn add_after_shutdown_is_dropped() {
    let q = queue();
    q.shutdown();
    q.add("a");
    assert!(q.is_empty());
    assert_eq!(get(&q).await, None);
}

#[tokio::test(start_paused = true)]
async fn shutdown_wakes_every_waiting_worker() {
    let q: WorkQueue<u32> = WorkQueue::new(QueueConfig::default());
    let workers: Vec<_> = (0..3)
        .map(|_| {
            let q = q.clone();
            tokio::spawn(async move { q.get().await })
        })
        .collect();
    tokio::task::yield_now().await;
    q.shutdown();
    for worker in workers {
        assert_eq!(timeout(HANG, worker).await.unwrap().unwrap(), None);
    }
}

#[tokio::test(start_paused = true)]
async fn shutdown_with_drain_waits_for_in_flight_items() {
    let q = queue();
    q.add("a");
    let item = get(&q).await.unwrap();
    let drain = tokio::spawn({
        let q = q.clone();
        async move { q.shutdown_with_drain().await }
    });
    tokio::task::yield_now().await;
    assert!(
        !drain.is_finished(),
        "drain returned with an item in flight"
    );
    assert_eq!(get(&q).await, None, "workers are told to exit");
    q.done(&item);
    timeout(HANG, drain)
        .await
        .expect("drain never finished")
        .unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_later_shutdown_cancels_a_pending_drain() {
    let q = queue();
    q.add("a");
    let _item = get(&q).await.unwrap();
    let drain = tokio::spawn({
        let q = q.clone();
        async move { q.shutdown_with_drain().await }
    });
    tokio::task::yield_now().await;
    q.shutdown();
    timeout(HANG, drain)
        .await
        .expect("shutdown did not cancel the drain")
        .unwrap();
}

#[tokio::test(start_paused = true)]
async fn shutdown_with_drain_hands_a_dirty_item_out_again() {
    // client-go's TestQueueDrainageUsingShutDownWithDrainWithDirtyItem.
    let q = queue();
    q.add("a");
    let item = get(&q).await.unwrap();
    q.add(item);
    let drain = tokio::spawn({
        let q = q.clone();
        async move { q.shutdown_with_drain().await }
    });
    tokio::task::yield_now().await;
    q.done(&item);
    assert_eq!(get(&q).await, Some("a"), "re-added item is processed again");
    q.done(&"a");
    timeout(HANG, drain)
        .await
        .expect("drain never finished")
        .unwrap();
    assert_eq!(get(&q).await, None);
}

#[derive(Default)]
struct Recorder {
    values: Mutex<HashMap<String, f64>>,
    observations: Mutex<HashMap<String, Vec<f64>>>,
}

struct Metric(Arc<Recorder>, String);

impl Metric {
    fn bump(&self, by: f64) {
        *self
            .0
            .values
            .lock()
            .unwrap()
            .entry(self.1.clone())
            .or_default() += by;
    }
}
impl GaugeMetric for Metric {
    fn inc(&self) {
        self.bump(1.0);
    }
    fn dec(&self) {
        self.bump(-1.0);
    }
}
impl CounterMetric for Metric {
    fn inc(&self) {
        self.bump(1.0);
    }
}
impl SettableGaugeMetric for Metric {
    fn set(&self, value: f64) {
        self.0.values.lock().unwrap().insert(self.1.clone(), value);
    }
}
impl HistogramMetric for Metric {
    fn observe(&self, value: f64) {
        let mut obs = self.0.observations.lock().unwrap();
        obs.entry(self.1.clone()).or_default().push(value);
    }
}

struct Provider(Arc<Recorder>);

impl Provider {
    fn metric(&self, name: &str, metric: &str) -> Arc<Metric> {
        Arc::new(Metric(self.0.clone(), format!("{metric}{{name={name}}}")))
    }
}

impl MetricsProvider for Provider {
    fn new_depth_metric(&self, name: &str) -> Arc<dyn GaugeMetric> {
        self.metric(name, metrics::DEPTH)
    }
    fn new_adds_metric(&self, name: &str) -> Arc<dyn CounterMetric> {
        self.metric(name, metrics::ADDS)
    }
    fn new_latency_metric(&self, name: &str) -> Arc<dyn HistogramMetric> {
        self.metric(name, metrics::QUEUE_DURATION)
    }
    fn new_work_duration_metric(&self, name: &str) -> Arc<dyn HistogramMetric> {
        self.metric(name, metrics::WORK_DURATION)
    }
    fn new_unfinished_work_seconds_metric(&self, name: &str) -> Arc<dyn SettableGaugeMetric> {
        self.metric(name, metrics::UNFINISHED_WORK)
    }
    fn new_longest_running_processor_seconds_metric(
        &self,
        name: &str,
    ) -> Arc<dyn SettableGaugeMetric> {
        self.metric(name, metrics::LONGEST_RUNNING_PROCESSOR)
    }
    fn new_retries_metric(&self, name: &str) -> Arc<dyn CounterMetric> {
        self.metric(name, metrics::RETRIES)
    }
}

use super::super::metrics;

#[tokio::test(start_paused = true)]
async fn a_named_queue_reports_client_go_metrics() {
    let recorder = Arc::new(Recorder::default());
    let q = WorkQueue::new(
        QueueConfig::default()
            .name("q")
            .metrics_provider(Arc::new(Provider(recorder.clone()))),
    );
    let value = |m: &str| {
        recorder
            .values
            .lock()
            .unwrap()
            .get(&format!("{m}{{name=q}}"))
            .copied()
    };
    let observed = |m: &str| {
        recorder
            .observations
            .lock()
            .unwrap()
            .get(&format!("{m}{{name=q}}"))
            .cloned()
    };
    q.add("a");
    q.add("a"); // duplicate: not counted
    assert_eq!(value(metrics::ADDS), Some(1.0));
    assert_eq!(value(metrics::DEPTH), Some(1.0));
    tokio::time::sleep(Duration::from_secs(2)).await;
    let item = get(&q).await.unwrap();
    assert_eq!(value(metrics::DEPTH), Some(0.0));
    assert_eq!(observed(metrics::QUEUE_DURATION), Some(vec![2.0]));
    tokio::time::sleep(Duration::from_secs(3)).await;
    for _ in 0..5 {
        tokio::task::yield_now().await; // let the 500 ms refresher tick at the same instant
    }
    assert_eq!(value(metrics::LONGEST_RUNNING_PROCESSOR), Some(3.0));
    assert_eq!(value(metrics::UNFINISHED_WORK), Some(3.0));
    q.done(&item);
    assert_eq!(observed(metrics::WORK_DURATION), Some(vec![3.0]));
    q.shutdown();
}

#[tokio::test(start_paused = true)]
async fn an_unnamed_queue_reports_no_metrics() {
    let recorder = Arc::new(Recorder::default());
    let q = WorkQueue::new(
        QueueConfig::default().metrics_provider(Arc::new(Provider(recorder.clone()))),
    );
    q.add("a");
    assert!(recorder.values.lock().unwrap().is_empty());
}

/// A small deterministic PRNG (xorshift64*), so the stress test has a fixed seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

#[derive(Default)]
struct Ledger {
    /// Items a worker holds right now.
    in_flight: std::collections::HashSet<u64>,
    /// Logical time of each item's last add.
    last_add: HashMap<u64, u64>,
    /// Logical time at which each item was last handed out.
    last_start: HashMap<u64, u64>,
    clock: u64,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn many_producers_and_workers_never_share_an_item_and_lose_none() {
    const PRODUCERS: u64 = 8;
    const WORKERS: usize = 8;
    const ADDS: usize = 2_000;
    const ITEMS: u64 = 50;
    let q: WorkQueue<u64> = WorkQueue::new(QueueConfig::default());
    let ledger = Arc::new(Mutex::new(Ledger::default()));

    let workers: Vec<_> = (0..WORKERS)
        .map(|w| {
            let (q, ledger) = (q.clone(), ledger.clone());
            tokio::spawn(async move {
                let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (w as u64 + 1));
                while let Some(item) = q.get().await {
                    {
                        let mut l = ledger.lock().unwrap();
                        assert!(
                            l.in_flight.insert(item),
                            "item {item} handed to two workers"
                        );
                        l.clock += 1;
                        let now = l.clock;
                        l.last_start.insert(item, now);
                    }
                    for _ in 0..rng.next() % 3 {
                        tokio::task::yield_now().await;
                    }
                    ledger.lock().unwrap().in_flight.remove(&item);
                    q.done(&item);
                }
            })
        })
        .collect();

    let producers: Vec<_> = (0..PRODUCERS)
        .map(|p| {
            let (q, ledger) = (q.clone(), ledger.clone());
            tokio::spawn(async move {
                let mut rng = Rng(0xD1B5_4A32_D192_ED03 ^ (p + 1));
                for _ in 0..ADDS {
                    let item = rng.next() % ITEMS;
                    {
                        let mut l = ledger.lock().unwrap();
                        l.clock += 1;
                        let now = l.clock;
                        l.last_add.insert(item, now);
                    }
                    q.add(item);
                    if rng.next().is_multiple_of(4) {
                        tokio::task::yield_now().await;
                    }
                }
            })
        })
        .collect();

    for producer in producers {
        timeout(HANG, producer)
            .await
            .expect("producer hung")
            .unwrap();
    }
    timeout(HANG, q.shutdown_with_drain())
        .await
        .expect("drain hung");
    for worker in workers {
        timeout(HANG, worker).await.expect("worker hung").unwrap();
    }
    q.check_invariants();
    let l = ledger.lock().unwrap();
    assert!(l.in_flight.is_empty());
    for (item, added) in &l.last_add {
        let started = l.last_start.get(item).copied().unwrap_or(0);
        assert!(
            started > *added,
            "item {item} added at {added} was never processed after that"
        );
    }
}
