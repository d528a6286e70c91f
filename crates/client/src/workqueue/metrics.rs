//! Queue metrics behind a [`MetricsProvider`], with client-go's names and semantics
//! (`util/workqueue/metrics.go`).
//!
//! A queue reports metrics only when it has a non-empty name *and* a provider; the default
//! provider ([`NoopMetricsProvider`]) discards everything.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Arc;

use tokio::time::Instant;

/// `workqueue_depth`: current depth (gauge).
pub const DEPTH: &str = "workqueue_depth";
/// `workqueue_adds_total`: adds handled (counter).
pub const ADDS: &str = "workqueue_adds_total";
/// `workqueue_queue_duration_seconds`: time an item waits before being handed out (histogram).
pub const QUEUE_DURATION: &str = "workqueue_queue_duration_seconds";
/// `workqueue_work_duration_seconds`: time from `get` to `done` (histogram).
pub const WORK_DURATION: &str = "workqueue_work_duration_seconds";
/// `workqueue_unfinished_work_seconds`: sum of the ages of in-flight items (settable gauge).
pub const UNFINISHED_WORK: &str = "workqueue_unfinished_work_seconds";
/// `workqueue_longest_running_processor_seconds`: age of the oldest in-flight item (settable gauge).
pub const LONGEST_RUNNING_PROCESSOR: &str = "workqueue_longest_running_processor_seconds";
/// `workqueue_retries_total`: delayed (`add_after`, `add_rate_limited`) adds (counter).
pub const RETRIES: &str = "workqueue_retries_total";

/// A gauge that goes up and down.
pub trait GaugeMetric: Send + Sync {
    /// Adds one.
    fn inc(&self);
    /// Subtracts one.
    fn dec(&self);
}

/// A gauge that is set.
pub trait SettableGaugeMetric: Send + Sync {
    /// Sets the value.
    fn set(&self, value: f64);
}

/// A monotonic counter.
pub trait CounterMetric: Send + Sync {
    /// Adds one.
    fn inc(&self);
}

/// A histogram of durations in seconds. client-go's Prometheus provider uses exponential
/// buckets starting at 1e-8 s with factor 10.
pub trait HistogramMetric: Send + Sync {
    /// Records one observation.
    fn observe(&self, value: f64);
}

/// A metric that discards everything.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoopMetric;

impl GaugeMetric for NoopMetric {
    fn inc(&self) {}
    fn dec(&self) {}
}
impl SettableGaugeMetric for NoopMetric {
    fn set(&self, _: f64) {}
}
impl CounterMetric for NoopMetric {
    fn inc(&self) {}
}
impl HistogramMetric for NoopMetric {
    fn observe(&self, _: f64) {}
}

/// Creates a queue's metrics; `name` is the queue's name (Prometheus label `name`). Every
/// method defaults to a [`NoopMetric`], so a provider implements only what it exports.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use kubeclient::workqueue::{CounterMetric, MetricsProvider};
///
/// #[derive(Default)]
/// struct Adds(Arc<AtomicU64>);
/// impl CounterMetric for Adds {
///     fn inc(&self) { self.0.fetch_add(1, Ordering::Relaxed); }
/// }
/// struct Provider(Arc<AtomicU64>);
/// impl MetricsProvider for Provider {
///     fn new_adds_metric(&self, _name: &str) -> Arc<dyn CounterMetric> {
///         Arc::new(Adds(self.0.clone()))
///     }
/// }
/// ```
pub trait MetricsProvider: Send + Sync {
    /// [`DEPTH`].
    fn new_depth_metric(&self, _name: &str) -> Arc<dyn GaugeMetric> {
        Arc::new(NoopMetric)
    }
    /// [`ADDS`].
    fn new_adds_metric(&self, _name: &str) -> Arc<dyn CounterMetric> {
        Arc::new(NoopMetric)
    }
    /// [`QUEUE_DURATION`].
    fn new_latency_metric(&self, _name: &str) -> Arc<dyn HistogramMetric> {
        Arc::new(NoopMetric)
    }
    /// [`WORK_DURATION`].
    fn new_work_duration_metric(&self, _name: &str) -> Arc<dyn HistogramMetric> {
        Arc::new(NoopMetric)
    }
    /// [`UNFINISHED_WORK`].
    fn new_unfinished_work_seconds_metric(&self, _name: &str) -> Arc<dyn SettableGaugeMetric> {
        Arc::new(NoopMetric)
    }
    /// [`LONGEST_RUNNING_PROCESSOR`].
    fn new_longest_running_processor_seconds_metric(
        &self,
        _name: &str,
    ) -> Arc<dyn SettableGaugeMetric> {
        Arc::new(NoopMetric)
    }
    /// [`RETRIES`].
    fn new_retries_metric(&self, _name: &str) -> Arc<dyn CounterMetric> {
        Arc::new(NoopMetric)
    }
}

/// The default provider: no metrics.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoopMetricsProvider;

impl MetricsProvider for NoopMetricsProvider {}

/// The metrics of one named queue, plus the per-item timestamps they need. Lives in the
/// queue's locked state; absent when metrics are off, so unnamed queues pay nothing.
pub(super) struct QueueMetrics<T> {
    depth: Arc<dyn GaugeMetric>,
    adds: Arc<dyn CounterMetric>,
    latency: Arc<dyn HistogramMetric>,
    work_duration: Arc<dyn HistogramMetric>,
    unfinished_work_seconds: Arc<dyn SettableGaugeMetric>,
    longest_running_processor: Arc<dyn SettableGaugeMetric>,
    /// When each dirty item was first added (cleared when handed out).
    added_at: HashMap<T, Instant>,
    /// When each in-flight item was handed out.
    processing_since: HashMap<T, Instant>,
}

impl<T: Clone + Eq + Hash> QueueMetrics<T> {
    pub(super) fn new(provider: &dyn MetricsProvider, name: &str) -> Self {
        QueueMetrics {
            depth: provider.new_depth_metric(name),
            adds: provider.new_adds_metric(name),
            latency: provider.new_latency_metric(name),
            work_duration: provider.new_work_duration_metric(name),
            unfinished_work_seconds: provider.new_unfinished_work_seconds_metric(name),
            longest_running_processor: provider.new_longest_running_processor_seconds_metric(name),
            added_at: HashMap::new(),
            processing_since: HashMap::new(),
        }
    }

    /// An item became dirty (duplicate adds are not counted).
    pub(super) fn add(&mut self, item: &T) {
        self.adds.inc();
        self.depth.inc();
        self.added_at
            .entry(item.clone())
            .or_insert_with(Instant::now);
    }

    /// An item was handed out.
    pub(super) fn get(&mut self, item: &T) {
        self.depth.dec();
        let now = Instant::now();
        if let Some(added) = self.added_at.remove(item) {
            self.latency.observe((now - added).as_secs_f64());
        }
        self.processing_since.insert(item.clone(), now);
    }

    /// An item was marked done.
    pub(super) fn done(&mut self, item: &T) {
        if let Some(start) = self.processing_since.remove(item) {
            self.work_duration.observe(start.elapsed().as_secs_f64());
        }
    }

    /// Sets the unfinished-work gauges (client-go does this every 500 ms).
    pub(super) fn update_unfinished_work(&self) {
        let now = Instant::now();
        let mut total = 0.0;
        let mut oldest = 0.0_f64;
        for start in self.processing_since.values() {
            let age = (now - *start).as_secs_f64();
            total += age;
            oldest = oldest.max(age);
        }
        self.unfinished_work_seconds.set(total);
        self.longest_running_processor.set(oldest);
    }
}
