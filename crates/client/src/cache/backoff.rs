//! [`Backoff`]: the reflector's retry delays, with client-go's numbers.

use std::time::Duration;

use tokio::time::Instant;

/// Exponential backoff with full jitter and a periodic reset (client-go's reflector
/// backoff): base delays 0.8 s, 1.6 s, 3.2 s ... capped at 30 s, each sleep uniformly in
/// `[d, 2d)`, and back to 0.8 s once 2 minutes have passed since the last reset.
#[derive(Clone, Debug)]
pub struct Backoff {
    initial: Duration,
    cap: Duration,
    reset_after: Duration,
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
            next: initial,
            last_reset: Instant::now(),
        }
    }

    /// The next sleep: the current base delay plus a random jitter of up to itself.
    pub fn next_delay(&mut self) -> Duration {
        let now = Instant::now();
        if now.saturating_duration_since(self.last_reset) > self.reset_after {
            self.next = self.initial;
            self.last_reset = now;
        }
        let base = self.next;
        self.next = (self.next * 2).min(self.cap);
        base + base.mul_f64(fastrand::f64())
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
}
