//! [`Metrics`]: a Prometheus registry (the `prometheus-client` crate) behind every metrics
//! hook of the library.

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::informers::InformerMetricsProvider;
use crate::rest::ClientMetrics;
use crate::workqueue::{
    CounterMetric, GaugeMetric, HistogramMetric, MetricsProvider, SettableGaugeMetric,
};

type Labels = Vec<(String, String)>;
type Histograms = Family<Labels, Histogram, fn() -> Histogram>;
type FloatGauge = Gauge<f64, AtomicU64>;

/// component-base's buckets for REST client latencies, in seconds.
const REQUEST_BUCKETS: [f64; 12] = [
    0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0,
];

fn request_histogram() -> Histogram {
    Histogram::new(REQUEST_BUCKETS)
}

/// client-go's work-queue buckets: 10 ns to 1000 s, factor 10.
fn queue_histogram() -> Histogram {
    Histogram::new(exponential_buckets(1e-8, 10.0, 12))
}

fn labels(pairs: &[(&str, &str)]) -> Labels {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

struct QueueGauge(Gauge);
impl GaugeMetric for QueueGauge {
    fn inc(&self) {
        self.0.inc();
    }
    fn dec(&self) {
        self.0.dec();
    }
}

struct QueueCounter(Counter);
impl CounterMetric for QueueCounter {
    fn inc(&self) {
        self.0.inc();
    }
}

struct QueueHistogram(Histogram);
impl HistogramMetric for QueueHistogram {
    fn observe(&self, value: f64) {
        self.0.observe(value);
    }
}

struct Settable(FloatGauge);
impl SettableGaugeMetric for Settable {
    fn set(&self, value: f64) {
        self.0.set(value);
    }
}

type Reader = Arc<dyn Fn() -> String + Send + Sync>;

/// Reads each informer's last synced resourceVersion at scrape time.
#[derive(Clone, Default)]
struct LastResourceVersions(Arc<Mutex<Vec<(String, Reader)>>>);

impl std::fmt::Debug for LastResourceVersions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LastResourceVersions")
            .finish_non_exhaustive()
    }
}

impl Collector for LastResourceVersions {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let readers: Vec<(String, Reader)> = crate::sync::lock(&self.0).clone();
        if readers.is_empty() {
            return Ok(());
        }
        let mut metric = encoder.encode_descriptor(
            "reflector_last_resource_version",
            "Last resourceVersion an informer synced to (resourceVersions that are not numbers are left out)",
            None,
            MetricType::Gauge,
        )?;
        for (name, read) in readers {
            // resourceVersions are opaque; every known server uses integers.
            if let Ok(version) = read().parse::<f64>() {
                let labels = labels(&[("name", &name)]);
                ConstGauge::new(version).encode(metric.encode_family(&labels)?)?;
            }
        }
        Ok(())
    }
}

/// A Prometheus registry with client-go's metric families (see [the module](super)).
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use std::sync::Arc;
/// use kubeclient::metrics::Metrics;
/// use kubeclient::workqueue::{default_controller_rate_limiter, QueueConfig, RateLimitingQueue};
///
/// let metrics = Arc::new(Metrics::new());
/// let queue = RateLimitingQueue::new(
///     default_controller_rate_limiter(),
///     QueueConfig::default().name("installations").metrics_provider(metrics.clone()),
/// );
/// queue.add("default/web".to_owned());
/// let text = metrics.encode();
/// assert!(text.contains(r#"workqueue_adds_total{name="installations"} 1"#));
/// assert!(text.contains(r#"workqueue_depth{name="installations"} 1"#));
/// # }
/// ```
pub struct Metrics {
    registry: Registry,
    request_latency: Histograms,
    request_result: Family<Labels, Counter>,
    rate_limiter_latency: Histograms,
    depth: Family<Labels, Gauge>,
    adds: Family<Labels, Counter>,
    queue_latency: Histograms,
    work_duration: Histograms,
    unfinished_work: Family<Labels, FloatGauge>,
    longest_running: Family<Labels, FloatGauge>,
    retries: Family<Labels, Counter>,
    lists: Family<Labels, Counter>,
    watches: Family<Labels, Counter>,
    last_resource_versions: LastResourceVersions,
    leader: Family<Labels, FloatGauge>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Metrics {
    /// An empty registry with every family registered.
    #[must_use]
    pub fn new() -> Self {
        let metrics = Metrics {
            registry: Registry::default(),
            request_latency: Family::new_with_constructor(request_histogram as fn() -> Histogram),
            request_result: Family::default(),
            rate_limiter_latency: Family::new_with_constructor(
                request_histogram as fn() -> Histogram,
            ),
            depth: Family::default(),
            adds: Family::default(),
            queue_latency: Family::new_with_constructor(queue_histogram as fn() -> Histogram),
            work_duration: Family::new_with_constructor(queue_histogram as fn() -> Histogram),
            unfinished_work: Family::default(),
            longest_running: Family::default(),
            retries: Family::default(),
            lists: Family::default(),
            watches: Family::default(),
            last_resource_versions: LastResourceVersions::default(),
            leader: Family::default(),
        };
        let mut registry = Registry::default();
        registry.register(
            "rest_client_request_duration_seconds",
            "Request latency in seconds, by verb and host",
            metrics.request_latency.clone(),
        );
        registry.register(
            "rest_client_requests",
            "HTTP requests, by status code, method and host",
            metrics.request_result.clone(),
        );
        registry.register(
            "rest_client_rate_limiter_duration_seconds",
            "Client-side rate limiter latency in seconds, by verb and host",
            metrics.rate_limiter_latency.clone(),
        );
        registry.register(
            "workqueue_depth",
            "Current depth of the work queue",
            metrics.depth.clone(),
        );
        registry.register(
            "workqueue_adds",
            "Adds handled by the work queue",
            metrics.adds.clone(),
        );
        registry.register(
            "workqueue_queue_duration_seconds",
            "How long an item stays in the work queue before being requested",
            metrics.queue_latency.clone(),
        );
        registry.register(
            "workqueue_work_duration_seconds",
            "How long processing an item from the work queue takes",
            metrics.work_duration.clone(),
        );
        registry.register(
            "workqueue_unfinished_work_seconds",
            "Seconds of work in progress not yet observed by work_duration",
            metrics.unfinished_work.clone(),
        );
        registry.register(
            "workqueue_longest_running_processor_seconds",
            "Seconds the longest running processor has been running",
            metrics.longest_running.clone(),
        );
        registry.register(
            "workqueue_retries",
            "Retries handled by the work queue",
            metrics.retries.clone(),
        );
        registry.register(
            "reflector_lists",
            "List requests of an informer (one per page)",
            metrics.lists.clone(),
        );
        registry.register(
            "reflector_watches",
            "Watch requests of an informer",
            metrics.watches.clone(),
        );
        registry.register_collector(Box::new(metrics.last_resource_versions.clone()));
        registry.register(
            "leader_election_master_status",
            "1 while this process leads the named election, 0 otherwise",
            metrics.leader.clone(),
        );
        Metrics {
            registry,
            ..metrics
        }
    }

    /// The exposition text (OpenMetrics, which Prometheus reads).
    #[must_use]
    pub fn encode(&self) -> String {
        let mut text = String::new();
        if prometheus_client::encoding::text::encode(&mut text, &self.registry).is_err() {
            // Writing to a String cannot fail; a collector error leaves what was written.
            tracing::warn!("encoding the metrics failed part-way");
        }
        text
    }

    /// The `leader_election_master_status{name}` gauge, for
    /// [`LeaderElectionConfig::master_status_metric`](crate::leaderelection::LeaderElectionConfig::master_status_metric).
    pub fn leader_election_master_status(&self, name: &str) -> Arc<dyn SettableGaugeMetric> {
        Arc::new(Settable(
            self.leader
                .get_or_create(&labels(&[("name", name)]))
                .clone(),
        ))
    }
}

impl ClientMetrics for Metrics {
    fn request_latency(&self, verb: &str, host: &str, latency: Duration) {
        self.request_latency
            .get_or_create(&labels(&[("verb", verb), ("host", host)]))
            .observe(latency.as_secs_f64());
    }

    fn request_result(&self, code: &str, method: &str, host: &str) {
        self.request_result
            .get_or_create(&labels(&[
                ("code", code),
                ("method", method),
                ("host", host),
            ]))
            .inc();
    }

    fn rate_limiter_latency(&self, verb: &str, host: &str, wait: Duration) {
        self.rate_limiter_latency
            .get_or_create(&labels(&[("verb", verb), ("host", host)]))
            .observe(wait.as_secs_f64());
    }
}

impl MetricsProvider for Metrics {
    fn new_depth_metric(&self, name: &str) -> Arc<dyn GaugeMetric> {
        Arc::new(QueueGauge(
            self.depth.get_or_create(&labels(&[("name", name)])).clone(),
        ))
    }
    fn new_adds_metric(&self, name: &str) -> Arc<dyn CounterMetric> {
        Arc::new(QueueCounter(
            self.adds.get_or_create(&labels(&[("name", name)])).clone(),
        ))
    }
    fn new_latency_metric(&self, name: &str) -> Arc<dyn HistogramMetric> {
        Arc::new(QueueHistogram(
            self.queue_latency
                .get_or_create(&labels(&[("name", name)]))
                .clone(),
        ))
    }
    fn new_work_duration_metric(&self, name: &str) -> Arc<dyn HistogramMetric> {
        Arc::new(QueueHistogram(
            self.work_duration
                .get_or_create(&labels(&[("name", name)]))
                .clone(),
        ))
    }
    fn new_unfinished_work_seconds_metric(&self, name: &str) -> Arc<dyn SettableGaugeMetric> {
        Arc::new(Settable(
            self.unfinished_work
                .get_or_create(&labels(&[("name", name)]))
                .clone(),
        ))
    }
    fn new_longest_running_processor_seconds_metric(
        &self,
        name: &str,
    ) -> Arc<dyn SettableGaugeMetric> {
        Arc::new(Settable(
            self.longest_running
                .get_or_create(&labels(&[("name", name)]))
                .clone(),
        ))
    }
    fn new_retries_metric(&self, name: &str) -> Arc<dyn CounterMetric> {
        Arc::new(QueueCounter(
            self.retries
                .get_or_create(&labels(&[("name", name)]))
                .clone(),
        ))
    }
}

impl InformerMetricsProvider for Metrics {
    fn new_lists_metric(&self, name: &str) -> Arc<dyn CounterMetric> {
        Arc::new(QueueCounter(
            self.lists.get_or_create(&labels(&[("name", name)])).clone(),
        ))
    }
    fn new_watches_metric(&self, name: &str) -> Arc<dyn CounterMetric> {
        Arc::new(QueueCounter(
            self.watches
                .get_or_create(&labels(&[("name", name)]))
                .clone(),
        ))
    }
    fn register_last_resource_version(
        &self,
        name: &str,
        read: Arc<dyn Fn() -> String + Send + Sync>,
    ) {
        crate::sync::lock(&self.last_resource_versions.0).push((name.to_owned(), read));
    }
}
