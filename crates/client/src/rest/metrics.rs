//! [`ClientMetrics`]: what the REST client reports about its requests (client-go's
//! `tools/metrics` hooks: request latency, request results, rate-limiter latency).

use std::time::Duration;

/// Receives one observation per request; every method defaults to doing nothing.
/// [`Metrics`](crate::metrics::Metrics) implements it with client-go's Prometheus names.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use kubeclient::rest::ClientMetrics;
///
/// #[derive(Debug)]
/// struct Log;
/// impl ClientMetrics for Log {
///     fn request_result(&self, code: &str, method: &str, host: &str) { println!("{method} {host} -> {code}"); }
/// }
/// let mut config = kubeclient::Config::new("http://127.0.0.1:8080".parse().unwrap());
/// config.metrics = Some(Arc::new(Log));
/// ```
#[doc(alias = "LatencyMetric", alias = "ResultMetric")]
pub trait ClientMetrics: Send + Sync + std::fmt::Debug {
    /// How long a request took to its response headers (`rest_client_request_duration_seconds`).
    fn request_latency(&self, verb: &str, host: &str, latency: Duration) {
        let _ = (verb, host, latency);
    }

    /// How a request ended: the HTTP code, or `<error>` when no answer came
    /// (`rest_client_requests_total`).
    fn request_result(&self, code: &str, method: &str, host: &str) {
        let _ = (code, method, host);
    }

    /// How long a request waited for the client-side rate limiter
    /// (`rest_client_rate_limiter_duration_seconds`).
    fn rate_limiter_latency(&self, verb: &str, host: &str, wait: Duration) {
        let _ = (verb, host, wait);
    }
}
