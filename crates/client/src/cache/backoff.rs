//! [`Backoff`]: the reflector's retry delays, with client-go's numbers.

use std::time::Duration;

use tokio::time::Instant;

/// Exponential backoff with jitter and a periodic reset (client-go's reflector backoff):
/// base delays 0.8 s, 1.6 s, 3.2 s ... (factor 2) capped at 30 s, each sleep uniformly in
/// `[d, d + jitter * d)` with jitter 1.0, and back to 0.8 s once 2 minutes have passed
/// since the last reset.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use kubeclient::cache::{Backoff, ReflectorOptions};
///
/// // Gentler than client-go: 1 s growing by half each time up to a minute, +/- nothing.
/// let backoff = Backoff::new(Duration::from_secs(1), Duration::from_secs(60), Duration::from_secs(300))
///     .with_factor(1.5)
///     .with_jitter(0.0);
/// let options = ReflectorOptions { backoff, ..ReflectorOptions::default() };
/// # let _ = options;
/// ```
#[derive(Clone, Debug)]
#[doc(alias = "BackoffManager")]
pub struct Backoff {
    initial: Duration,
    cap: Duration,
    reset_after: Duration,
    factor: f64,
    jitter: f64,
    next: Duration,
    last_reset: Instant,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff::new(
            Duration::from_millis(800),
            Duration::from_secs(30),
            Duration::from_secs(120),
        )
    }
}

impl Backoff {
    /// A backoff starting at `initial`, doubling up to `cap`, reset every `reset_after`.
    #[must_use]
    pub fn new(initial: Duration, cap: Duration, reset_after: Duration) -> Self {
        Backoff {
            initial,
            cap,
            reset_after,
            factor: 2.0,
            jitter: 1.0,
            next: initial,
            last_reset: Instant::now(),
        }
    }

    /// Multiplies the base delay by `factor` after each step (default 2). A factor below
    /// 1, or not a finite number, keeps the delay constant.
    #[must_use]
    pub fn with_factor(mut self, factor: f64) -> Self {
        self.factor = if factor.is_finite() && factor >= 1.0 {
            factor
        } else {
            1.0
        };
        self
    }

    /// Adds a random extra of up to `jitter` times the base delay to each sleep (default
    /// 1.0: sleeps in `[d, 2d)`). Zero, negative or not a finite number: no jitter.
    #[must_use]
    pub fn with_jitter(mut self, jitter: f64) -> Self {
        self.jitter = if jitter.is_finite() && jitter > 0.0 {
            jitter
        } else {
            0.0
        };
        self
    }

    /// The next sleep: the current base delay plus a random jitter of up to itself.
    pub fn next_delay(&mut self) -> Duration {
        let now = Instant::now();
        if now.saturating_duration_since(self.last_reset) > self.reset_after {
            self.next = self.initial;
            self.last_reset = now;
        }
        let base = self.next.min(self.cap);
        self.next = Duration::try_from_secs_f64(base.as_secs_f64() * self.factor)
            .unwrap_or(self.cap)
            .min(self.cap);
        let extra = Duration::try_from_secs_f64(base.as_secs_f64() * self.jitter * fastrand::f64())
            .unwrap_or(Duration::ZERO);
        base.saturating_add(extra)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn delays_double_with_jitter_up_to_the_cap_then_reset() {
        let mut backoff = Backoff::default();
        let mut bases = Vec::new();
        for _ in 0..8 {
            let delay = backoff.next_delay();
            bases.push(delay);
        }
        let expected = [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0];
        for (delay, base) in bases.iter().zip(expected) {
            let seconds = delay.as_secs_f64();
            assert!(
                seconds >= base && seconds < 2.0 * base,
                "{seconds} not in [{base}, {})",
                2.0 * base
            );
        }
        tokio::time::advance(Duration::from_secs(121)).await;
        assert!(
            backoff.next_delay() < Duration::from_millis(1600),
            "reset after 2 minutes"
        );
    }

    #[test]
    fn factor_and_jitter_are_options_and_absurd_values_never_panic() {
        let mut steady = Backoff::new(
            Duration::from_secs(1),
            Duration::from_secs(10),
            Duration::MAX,
        )
        .with_factor(1.5)
        .with_jitter(0.0);
        let delays: Vec<f64> = (0..7).map(|_| steady.next_delay().as_secs_f64()).collect();
        assert_eq!(delays, [1.0, 1.5, 2.25, 3.375, 5.0625, 7.59375, 10.0]);
        for (factor, jitter) in [
            (f64::NAN, f64::NAN),
            (f64::INFINITY, f64::INFINITY),
            (-3.0, -1.0),
            (1e300, 1e300),
            (0.5, 0.0),
        ] {
            let mut backoff = Backoff::new(Duration::MAX, Duration::MAX, Duration::MAX)
                .with_factor(factor)
                .with_jitter(jitter);
            for _ in 0..5 {
                let _ = backoff.next_delay();
            }
        }
        let mut constant = Backoff::new(
            Duration::from_secs(2),
            Duration::from_secs(60),
            Duration::MAX,
        )
        .with_factor(0.5)
        .with_jitter(0.0);
        assert_eq!(constant.next_delay(), constant.next_delay());
    }
}
