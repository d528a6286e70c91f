//! [`RetryWithDeadline`]: how long the reflector keeps re-watching after internal errors
//! before it relists (client-go's `retryWithDeadline`, used with
//! `MaxInternalErrorRetryDuration`).

use std::time::Duration;

use tokio::time::Instant;

/// Tracks a run of retryable errors. [`should_retry`](Self::should_retry) is true while
/// the run has lasted at most `max_retry_duration`; a gap of `min_reset_period` or more
/// between two errors starts a new run. A zero `max_retry_duration` never retries.
#[derive(Debug)]
pub(super) struct RetryWithDeadline {
    max_retry_duration: Duration,
    min_reset_period: Duration,
    first_error: Option<Instant>,
    last_error: Option<Instant>,
}

impl RetryWithDeadline {
    pub(super) fn new(max_retry_duration: Duration, min_reset_period: Duration) -> Self {
        RetryWithDeadline {
            max_retry_duration,
            min_reset_period,
            first_error: None,
            last_error: None,
        }
    }

    /// Records a retryable error now.
    pub(super) fn after_error(&mut self) {
        let now = Instant::now();
        if self
            .last_error
            .is_some_and(|last| now.saturating_duration_since(last) >= self.min_reset_period)
        {
            self.first_error = None;
        }
        self.first_error.get_or_insert(now);
        self.last_error = Some(now);
    }

    /// Whether to retry after the last recorded error; false also starts a new run.
    pub(super) fn should_retry(&mut self) -> bool {
        if self.max_retry_duration.is_zero() {
            return false;
        }
        let first = self.first_error.unwrap_or_else(Instant::now);
        if first.elapsed() <= self.max_retry_duration {
            return true;
        }
        self.first_error = None;
        self.last_error = None;
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn retries_within_the_deadline_of_a_run_of_errors_then_gives_up_and_starts_over() {
        let mut retry = RetryWithDeadline::new(Duration::from_secs(30), Duration::from_secs(60));
        retry.after_error();
        assert!(retry.should_retry());
        tokio::time::advance(Duration::from_secs(20)).await;
        retry.after_error();
        assert!(retry.should_retry(), "20 s into a 30 s budget");
        tokio::time::advance(Duration::from_secs(11)).await;
        retry.after_error();
        assert!(!retry.should_retry(), "31 s into the run: relist");
        retry.after_error();
        assert!(retry.should_retry(), "a refusal starts a new run");
    }

    #[tokio::test(start_paused = true)]
    async fn a_quiet_gap_resets_the_run_and_zero_never_retries() {
        let mut retry = RetryWithDeadline::new(Duration::from_secs(30), Duration::from_secs(60));
        retry.after_error();
        tokio::time::advance(Duration::from_secs(25)).await;
        retry.after_error();
        tokio::time::advance(Duration::from_secs(60)).await;
        retry.after_error();
        assert!(
            retry.should_retry(),
            "60 s without errors started a new run"
        );
        let mut never = RetryWithDeadline::new(Duration::ZERO, Duration::from_secs(60));
        never.after_error();
        assert!(!never.should_retry());
    }
}
