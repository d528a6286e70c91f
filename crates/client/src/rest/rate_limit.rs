//! A client-side token bucket (client-go's `flowcontrol.NewTokenBucketRateLimiter`).

use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

/// The longest single wait [`TokenBucket::reserve`] returns (a day): a tiny QPS (say `1e-30`)
/// would otherwise ask for a wait no clock can represent.
pub(crate) const MAX_RATE_LIMIT_WAIT: Duration = Duration::from_secs(24 * 3600);

/// Allows `qps` requests per second on average with bursts of up to `burst`.
///
/// Edge cases never panic: a QPS that is zero, negative or NaN means *no limit* (as
/// client-go, which only installs a limiter for a positive QPS); an infinite QPS means no
/// limit too; a tiny positive QPS makes callers wait at most a day each.
///
/// Invariant: `tokens <= burst`.
#[derive(Debug)]
#[doc(alias = "tokenBucketRateLimiter", alias = "flowcontrol.RateLimiter")]
pub struct TokenBucket {
    qps: f64,
    burst: f64,
    max_wait: Duration,
    /// Tokens available at `updated` (may go negative: reservations wait in turn).
    state: Mutex<(f64, Instant)>,
}

impl TokenBucket {
    /// A bucket that starts full (a burst of 0 counts as 1).
    #[must_use]
    pub fn new(qps: f32, burst: u32) -> Self {
        Self::with_limits(f64::from(qps), burst.max(1), MAX_RATE_LIMIT_WAIT)
    }

    /// A bucket of `burst` tokens (0 allowed: every reservation waits) refilled at `qps`
    /// per second, whose reservations wait at most `max_wait` each.
    pub(crate) fn with_limits(qps: f64, burst: u32, max_wait: Duration) -> Self {
        let burst = f64::from(burst);
        TokenBucket {
            qps,
            burst,
            max_wait,
            state: Mutex::new((burst, Instant::now())),
        }
    }

    /// How long the caller must wait before its request may go (reserving a token now).
    pub fn reserve(&self) -> Duration {
        if !(self.qps.is_finite() && self.qps > 0.0) {
            return Duration::ZERO;
        }
        let mut state = crate::sync::lock(&self.state);
        let now = Instant::now();
        let elapsed = now.saturating_duration_since(state.1).as_secs_f64();
        let tokens = (state.0 + elapsed * self.qps).min(self.burst) - 1.0;
        *state = (tokens, now);
        if tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::try_from_secs_f64(-tokens / self.qps)
                .unwrap_or(self.max_wait)
                .min(self.max_wait)
        }
    }

    /// Takes a token if one is available now; never waits (client-go's `TryAccept`). With
    /// no limit (a QPS that is not a positive finite number) it always accepts.
    pub fn try_accept(&self) -> bool {
        if !(self.qps.is_finite() && self.qps > 0.0) {
            return true;
        }
        let mut state = crate::sync::lock(&self.state);
        let now = Instant::now();
        let elapsed = now.saturating_duration_since(state.1).as_secs_f64();
        let tokens = (state.0 + elapsed * self.qps).min(self.burst);
        if tokens >= 1.0 {
            *state = (tokens - 1.0, now);
            true
        } else {
            *state = (tokens, now);
            false
        }
    }

    /// Waits for a token.
    ///
    /// # Cancel safety
    ///
    /// Cancelling keeps the token reserved (the next caller waits a little longer).
    pub async fn acquire(&self) {
        let wait = self.reserve();
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn zero_negative_nan_or_tiny_qps_never_panics() {
        for qps in [0.0, -1.0, f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
            let bucket = TokenBucket::new(qps, 0);
            for _ in 0..5 {
                assert_eq!(bucket.reserve(), Duration::ZERO, "qps {qps}: no limit");
            }
        }
        let tiny = TokenBucket::new(f32::MIN_POSITIVE, 1);
        assert_eq!(tiny.reserve(), Duration::ZERO);
        assert_eq!(
            tiny.reserve(),
            MAX_RATE_LIMIT_WAIT,
            "clamped, not an overflow"
        );
        tokio::time::timeout(Duration::from_millis(10), tiny.acquire())
            .await
            .expect_err("waits (up to the clamp) rather than panicking");
    }

    #[tokio::test(start_paused = true)]
    async fn try_accept_takes_only_available_tokens() {
        let bucket = TokenBucket::with_limits(1.0 / 300.0, 2, MAX_RATE_LIMIT_WAIT);
        assert!(bucket.try_accept());
        assert!(bucket.try_accept());
        assert!(!bucket.try_accept(), "the burst is spent");
        tokio::time::advance(Duration::from_secs(299)).await;
        assert!(!bucket.try_accept(), "a refusal does not take a token");
        tokio::time::advance(Duration::from_secs(1)).await;
        assert!(bucket.try_accept(), "one token per 300 s");
    }

    #[tokio::test(start_paused = true)]
    async fn bursts_pass_at_once_then_requests_are_spaced_by_the_rate() {
        let bucket = TokenBucket::new(10.0, 3);
        for _ in 0..3 {
            assert_eq!(bucket.reserve(), Duration::ZERO);
        }
        let wait = bucket.reserve();
        assert!((wait.as_secs_f64() - 0.1).abs() < 1e-6, "{wait:?}");
        let next = bucket.reserve();
        assert!(
            (next.as_secs_f64() - 0.2).abs() < 1e-6,
            "waiters queue up: {next:?}"
        );
        tokio::time::advance(Duration::from_secs(10)).await;
        assert_eq!(
            bucket.reserve(),
            Duration::ZERO,
            "the bucket refills up to its burst"
        );
    }
}
