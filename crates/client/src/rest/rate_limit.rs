//! A client-side token bucket (client-go's `flowcontrol.NewTokenBucketRateLimiter`).

use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

/// Allows `qps` requests per second on average with bursts of up to `burst`.
///
/// Invariant: `tokens <= burst`.
#[derive(Debug)]
pub struct TokenBucket {
    qps: f64,
    burst: f64,
    /// Tokens available at `updated` (may go negative: reservations wait in turn).
    state: Mutex<(f64, Instant)>,
}

impl TokenBucket {
    /// A bucket that starts full.
    #[must_use]
    pub fn new(qps: f32, burst: u32) -> Self {
        let burst = f64::from(burst.max(1));
        TokenBucket {
            qps: f64::from(qps),
            burst,
            state: Mutex::new((burst, Instant::now())),
        }
    }

    /// How long the caller must wait before its request may go (reserving a token now).
    pub fn reserve(&self) -> Duration {
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let now = Instant::now();
        let elapsed = now.saturating_duration_since(state.1).as_secs_f64();
        let tokens = (state.0 + elapsed * self.qps).min(self.burst) - 1.0;
        *state = (tokens, now);
        if tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-tokens / self.qps)
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
