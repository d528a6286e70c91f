//! Rate limiters: how long to wait before retrying an item (`util/workqueue/default_rate_limiters.go`).

use std::collections::HashMap;
use std::fmt;
use std::hash::Hash;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::delaying_queue::MAX_DELAY;
use crate::rest::TokenBucket;
use crate::sync::lock;

/// Decides how long an item waits before it is retried.
pub trait RateLimiter<T>: Send + Sync {
    /// The delay before the next retry of `item`; counts as one more failure.
    fn when(&self, item: &T) -> Duration;
    /// Forgets `item`'s failures (after a success).
    fn forget(&self, item: &T);
    /// How many failures of `item` are counted.
    fn num_requeues(&self, item: &T) -> usize;
}

/// Per-item exponential backoff: `base · 2^failures`, capped at `max` (Go's
/// `ItemExponentialFailureRateLimiter`). The first delay is `base`.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use kubeclient::workqueue::{ItemExponentialFailureRateLimiter, RateLimiter};
///
/// let limiter = ItemExponentialFailureRateLimiter::new(Duration::from_millis(5), Duration::from_secs(1000));
/// assert_eq!(limiter.when(&"a"), Duration::from_millis(5));
/// assert_eq!(limiter.when(&"a"), Duration::from_millis(10));
/// assert_eq!(limiter.num_requeues(&"a"), 2);
/// limiter.forget(&"a");
/// assert_eq!(limiter.when(&"a"), Duration::from_millis(5));
/// ```
pub struct ItemExponentialFailureRateLimiter<T> {
    base: Duration,
    max: Duration,
    failures: Mutex<HashMap<T, u32>>,
}

impl<T> ItemExponentialFailureRateLimiter<T> {
    /// A limiter starting at `base` and capped at `max`.
    #[must_use]
    pub fn new(base: Duration, max: Duration) -> Self {
        ItemExponentialFailureRateLimiter {
            base,
            max,
            failures: Mutex::new(HashMap::new()),
        }
    }
}

impl<T: Eq + Hash + Clone + Send + Sync> RateLimiter<T> for ItemExponentialFailureRateLimiter<T> {
    fn when(&self, item: &T) -> Duration {
        let exp = {
            let mut failures = lock(&self.failures);
            let count = failures.entry(item.clone()).or_insert(0);
            let exp = *count;
            *count = count.saturating_add(1);
            exp
        };
        // Computed in floating point, as client-go does, so large exponents saturate.
        let backoff = self.base.as_secs_f64() * 2f64.powf(f64::from(exp));
        match Duration::try_from_secs_f64(backoff) {
            Ok(delay) if delay <= self.max => delay,
            _ => self.max,
        }
        .min(MAX_DELAY)
    }

    fn forget(&self, item: &T) {
        lock(&self.failures).remove(item);
    }

    fn num_requeues(&self, item: &T) -> usize {
        lock(&self.failures).get(item).map_or(0, |n| *n as usize)
    }
}

/// `fast` for the first `max_fast_attempts` failures of an item, then `slow` (Go's
/// `ItemFastSlowRateLimiter`).
pub struct ItemFastSlowRateLimiter<T> {
    fast: Duration,
    slow: Duration,
    max_fast_attempts: u32,
    failures: Mutex<HashMap<T, u32>>,
}

impl<T> ItemFastSlowRateLimiter<T> {
    /// A limiter that waits `fast` for `max_fast_attempts` failures, then `slow`.
    #[must_use]
    pub fn new(fast: Duration, slow: Duration, max_fast_attempts: u32) -> Self {
        ItemFastSlowRateLimiter {
            fast,
            slow,
            max_fast_attempts,
            failures: Mutex::new(HashMap::new()),
        }
    }
}

impl<T: Eq + Hash + Clone + Send + Sync> RateLimiter<T> for ItemFastSlowRateLimiter<T> {
    fn when(&self, item: &T) -> Duration {
        let mut failures = lock(&self.failures);
        let count = failures.entry(item.clone()).or_insert(0);
        *count = count.saturating_add(1);
        if *count <= self.max_fast_attempts {
            self.fast
        } else {
            self.slow
        }
    }

    fn forget(&self, item: &T) {
        lock(&self.failures).remove(item);
    }

    fn num_requeues(&self, item: &T) -> usize {
        lock(&self.failures).get(item).map_or(0, |n| *n as usize)
    }
}

/// An overall token bucket shared by all items: `burst` tokens, refilled at `qps` per
/// second (Go's `BucketRateLimiter` over `rate.Limiter`). Each `when` reserves a token and
/// returns the wait until it is available; the token is consumed even if the caller never
/// waits. A QPS that is not a positive finite number means no limit; waits are clamped to
/// [`MAX_DELAY`]. Uses tokio's clock. It is the client's [`TokenBucket`](crate::rest::TokenBucket).
pub struct BucketRateLimiter {
    bucket: TokenBucket,
}

impl BucketRateLimiter {
    /// A bucket of `burst` tokens refilled at `qps` per second; starts full.
    #[must_use]
    pub fn new(qps: f64, burst: u32) -> Self {
        BucketRateLimiter {
            bucket: TokenBucket::with_limits(qps, burst, MAX_DELAY),
        }
    }
}

impl<T> RateLimiter<T> for BucketRateLimiter {
    fn when(&self, _item: &T) -> Duration {
        self.bucket.reserve()
    }

    fn forget(&self, _item: &T) {}

    fn num_requeues(&self, _item: &T) -> usize {
        0
    }
}

/// The largest delay of several limiters (Go's `MaxOfRateLimiter`). Every limiter is asked
/// on every `when`, so all their counters advance.
pub struct MaxOfRateLimiter<T> {
    limiters: Vec<Arc<dyn RateLimiter<T>>>,
}

impl<T> MaxOfRateLimiter<T> {
    /// The maximum of `limiters`.
    #[must_use]
    pub fn new(limiters: Vec<Arc<dyn RateLimiter<T>>>) -> Self {
        MaxOfRateLimiter { limiters }
    }
}

impl<T> RateLimiter<T> for MaxOfRateLimiter<T> {
    fn when(&self, item: &T) -> Duration {
        self.limiters
            .iter()
            .map(|limiter| limiter.when(item))
            .fold(Duration::ZERO, Duration::max)
    }

    fn forget(&self, item: &T) {
        for limiter in &self.limiters {
            limiter.forget(item);
        }
    }

    fn num_requeues(&self, item: &T) -> usize {
        self.limiters
            .iter()
            .map(|limiter| limiter.num_requeues(item))
            .max()
            .unwrap_or(0)
    }
}

/// Caps another limiter's delay at `max_delay` (Go's `WithMaxWaitRateLimiter`).
pub struct WithMaxWaitRateLimiter<T> {
    limiter: Arc<dyn RateLimiter<T>>,
    max_delay: Duration,
}

impl<T> WithMaxWaitRateLimiter<T> {
    /// `limiter`, capped at `max_delay`.
    #[must_use]
    pub fn new(limiter: Arc<dyn RateLimiter<T>>, max_delay: Duration) -> Self {
        WithMaxWaitRateLimiter { limiter, max_delay }
    }
}

impl<T> RateLimiter<T> for WithMaxWaitRateLimiter<T> {
    fn when(&self, item: &T) -> Duration {
        self.limiter.when(item).min(self.max_delay)
    }

    fn forget(&self, item: &T) {
        self.limiter.forget(item);
    }

    fn num_requeues(&self, item: &T) -> usize {
        self.limiter.num_requeues(item)
    }
}

/// client-go's `DefaultControllerRateLimiter`: the maximum of a per-item exponential backoff
/// (5 ms, 10 ms, 20 ms … capped at 1000 s) and an overall token bucket (10 qps, burst 100:
/// the first 100 retries are free, then they are spaced 100 ms apart).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use kubeclient::workqueue::default_controller_rate_limiter;
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)] async fn main() {
/// let limiter = default_controller_rate_limiter::<String>();
/// assert_eq!(limiter.when(&"a".to_string()), Duration::from_millis(5));
/// # }
/// ```
#[must_use]
pub fn default_controller_rate_limiter<T>() -> Arc<dyn RateLimiter<T>>
where
    T: Eq + Hash + Clone + Send + Sync + 'static,
{
    Arc::new(MaxOfRateLimiter::new(vec![
        Arc::new(ItemExponentialFailureRateLimiter::new(
            Duration::from_millis(5),
            Duration::from_secs(1000),
        )),
        Arc::new(BucketRateLimiter::new(10.0, 100)),
    ]))
}

/// client-go's `DefaultItemBasedRateLimiter`: per-item exponential, 1 ms to 1000 s.
#[must_use]
pub fn default_item_based_rate_limiter<T>() -> Arc<dyn RateLimiter<T>>
where
    T: Eq + Hash + Clone + Send + Sync + 'static,
{
    Arc::new(ItemExponentialFailureRateLimiter::new(
        Duration::from_millis(1),
        Duration::from_secs(1000),
    ))
}

impl<T> fmt::Debug for ItemExponentialFailureRateLimiter<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ItemExponentialFailureRateLimiter")
            .field("base", &self.base)
            .field("max", &self.max)
            .finish_non_exhaustive()
    }
}

impl fmt::Debug for BucketRateLimiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BucketRateLimiter")
            .field("bucket", &self.bucket)
            .finish()
    }
}

#[cfg(test)]
mod tests;
