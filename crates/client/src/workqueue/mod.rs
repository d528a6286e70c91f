//! Work queues for controllers (client-go's `util/workqueue`), for async workers on tokio.
//!
//! - [`WorkQueue`]: deduplicating FIFO; an item is never processed by two workers at once,
//!   and one re-added while being processed is handed out again after
//!   [`done`](WorkQueue::done).
//! - [`DelayingQueue`]: adds [`add_after`](DelayingQueue::add_after) (the earliest time wins).
//! - [`RateLimitingQueue`]: adds [`add_rate_limited`](RateLimitingQueue::add_rate_limited),
//!   [`forget`](RateLimitingQueue::forget) and [`num_requeues`](RateLimitingQueue::num_requeues),
//!   driven by a [`RateLimiter`]; [`default_controller_rate_limiter`] has client-go's numbers.
//! - Metrics with client-go's names ([`metrics`]) behind a [`MetricsProvider`].
//!
//! Time is tokio's clock throughout, so tests run on virtual time
//! (`#[tokio::test(start_paused = true)]`). No lock is held across an await.

mod delaying_queue;
pub mod metrics;
mod queue;
mod rate_limiter;
mod rate_limiting_queue;

pub use delaying_queue::{DelayingQueue, MAX_DELAY};
pub use metrics::{
    CounterMetric, GaugeMetric, HistogramMetric, MetricsProvider, NoopMetric, NoopMetricsProvider,
    SettableGaugeMetric,
};
pub use queue::{Item, QueueConfig, WorkQueue};
pub use rate_limiter::{
    BucketRateLimiter, ItemExponentialFailureRateLimiter, ItemFastSlowRateLimiter,
    MaxOfRateLimiter, RateLimiter, WithMaxWaitRateLimiter, default_controller_rate_limiter,
    default_item_based_rate_limiter,
};
pub use rate_limiting_queue::RateLimitingQueue;
