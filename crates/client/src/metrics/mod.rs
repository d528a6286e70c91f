//! Prometheus metrics with client-go's names, and a small `/metrics`, `/healthz`,
//! `/readyz` server.
//!
//! - [`Metrics`]: one registry that the REST client ([`Config::metrics`]), work queues
//!   and controllers ([`MetricsProvider`]), informer factories
//!   ([`InformerMetricsProvider`]) and leader electors
//!   ([`leader_election_master_status`](Metrics::leader_election_master_status)) report
//!   to; [`encode`](Metrics::encode) renders the exposition text.
//! - [`MetricsServer`]: serves it over HTTP next to health and readiness probes.
//!
//! | family | labels | from |
//! |---|---|---|
//! | `rest_client_request_duration_seconds` | `verb`, `host` | every request |
//! | `rest_client_requests_total` | `code`, `method`, `host` | every request (`<error>` without an answer) |
//! | `rest_client_rate_limiter_duration_seconds` | `verb`, `host` | every request waiting for the client's limiter |
//! | `workqueue_depth`, `workqueue_adds_total`, `workqueue_queue_duration_seconds`, `workqueue_work_duration_seconds`, `workqueue_unfinished_work_seconds`, `workqueue_longest_running_processor_seconds`, `workqueue_retries_total` | `name` | named work queues (a controller's queue is named after it) |
//! | `reflector_lists_total`, `reflector_watches_total`, `reflector_last_resource_version` | `name` (the resource) | informers of a factory |
//! | `leader_election_master_status` | `name` | leader electors (1 while leading) |
//!
//! [`Config::metrics`]: crate::Config::metrics
//! [`MetricsProvider`]: crate::workqueue::MetricsProvider
//! [`InformerMetricsProvider`]: crate::informers::InformerMetricsProvider

mod metrics_server;
mod prometheus_metrics;

pub use metrics_server::MetricsServer;
pub use prometheus_metrics::Metrics;
