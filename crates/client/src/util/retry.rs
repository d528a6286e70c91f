//! Retrying a write that lost a race: client-go's `util/retry` ([`retry_on_conflict`],
//! [`on_error`], [`RetryBackoff::DEFAULT_RETRY`], [`RetryBackoff::DEFAULT_BACKOFF`]).
//!
//! An update carries the resourceVersion it was read at; when another writer got there
//! first the server answers 409 Conflict. The fix is to read the object again, change it
//! again and write again, a few times with short sleeps in between: pass that whole
//! read-modify-write as the closure.

use std::future::Future;
use std::time::Duration;

use crate::error::Error;

/// How often and how long to wait between attempts (apimachinery's `wait.Backoff`): at most
/// `steps` attempts; the first sleep is `duration`, each next one `factor` times the last
/// (capped at `cap`, which also ends the retries once reached); every sleep gets a random
/// extra of up to `jitter` times itself.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use kubeclient::util::retry::RetryBackoff;
///
/// let patient = RetryBackoff { steps: 10, duration: Duration::from_millis(100), ..RetryBackoff::DEFAULT_BACKOFF };
/// assert_eq!(patient.factor, 5.0);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
#[doc(alias = "Backoff")]
pub struct RetryBackoff {
    /// Attempts at most (0 counts as 1: the closure always runs once).
    pub steps: u32,
    /// The first sleep.
    pub duration: Duration,
    /// What each sleep is multiplied by for the next one (below 1, or not a number: 1).
    pub factor: f64,
    /// The random extra, as a fraction of the sleep (0: none).
    pub jitter: f64,
    /// The longest sleep; reaching it makes the next attempt the last. `None`: no cap.
    pub cap: Option<Duration>,
}

impl RetryBackoff {
    /// client-go's `retry.DefaultRetry`, for conflicts between several clients changing
    /// one object: 5 attempts, 10 ms apart (+ up to 10%).
    #[doc(alias = "DefaultRetry")]
    pub const DEFAULT_RETRY: RetryBackoff = RetryBackoff {
        steps: 5,
        duration: Duration::from_millis(10),
        factor: 1.0,
        jitter: 0.1,
        cap: None,
    };

    /// client-go's `retry.DefaultBackoff`, for a change to an object that controllers
    /// manage: 4 attempts, sleeping 10 ms, 50 ms, 250 ms (+ up to 10% each).
    #[doc(alias = "DefaultBackoff")]
    pub const DEFAULT_BACKOFF: RetryBackoff = RetryBackoff {
        steps: 4,
        duration: Duration::from_millis(10),
        factor: 5.0,
        jitter: 0.1,
        cap: None,
    };

    /// The next sleep, advancing the backoff (apimachinery's `Backoff.Step`).
    fn step(&mut self) -> Duration {
        self.steps = self.steps.saturating_sub(1);
        let sleep = self.duration;
        let factor = if self.factor.is_finite() && self.factor > 1.0 {
            self.factor
        } else {
            1.0
        };
        self.duration = Duration::try_from_secs_f64(self.duration.as_secs_f64() * factor)
            .unwrap_or(MAX_SLEEP)
            .min(MAX_SLEEP);
        if let Some(cap) = self.cap
            && self.duration > cap
        {
            self.duration = cap;
            self.steps = 0;
        }
        if self.jitter.is_finite() && self.jitter > 0.0 {
            let extra = sleep.as_secs_f64() * self.jitter * fastrand::f64();
            sleep.saturating_add(Duration::try_from_secs_f64(extra).unwrap_or(Duration::ZERO))
        } else {
            sleep
        }
    }
}

impl Default for RetryBackoff {
    fn default() -> Self {
        RetryBackoff::DEFAULT_RETRY
    }
}

/// No sleep grows beyond a day, whatever the factor (an absurd factor must not overflow).
const MAX_SLEEP: Duration = Duration::from_secs(24 * 60 * 60);

/// Runs `attempt` until it succeeds, fails with an error `retriable` refuses, or `backoff`
/// runs out of steps; then returns its last result (client-go's `retry.OnError`).
///
/// # Examples
///
/// ```no_run
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kubeclient::util::retry::{RetryBackoff, on_error};
/// use kubeclient::{Api, Client};
///
/// # async fn example(client: Client) -> kubeclient::Result<()> {
/// let config_maps: Api<ConfigMap> = Api::namespaced(client, "default");
/// // Reads retried on 429s, 5xx and dropped connections.
/// let settings = on_error(RetryBackoff::DEFAULT_BACKOFF, kubeclient::Error::is_retryable, || {
///     config_maps.get("settings")
/// })
/// .await?;
/// # let _ = settings; Ok(()) }
/// ```
pub async fn on_error<T, E, F, Fut>(
    backoff: RetryBackoff,
    retriable: impl Fn(&E) -> bool,
    mut attempt: F,
) -> Result<T, E>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    let mut backoff = backoff;
    loop {
        match attempt().await {
            Ok(value) => return Ok(value),
            Err(err) if backoff.steps <= 1 || !retriable(&err) => return Err(err),
            Err(_) => tokio::time::sleep(backoff.step()).await,
        }
    }
}

/// Runs a read-modify-write again while the server answers 409 Conflict, up to `backoff`'s
/// steps (client-go's `retry.RetryOnConflict`). The closure must read the object afresh on
/// each attempt and return the write's error unchanged.
///
/// # Examples
///
/// ```no_run
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kubeclient::util::retry::{RetryBackoff, retry_on_conflict};
/// use kubeclient::{Api, Client, PostParams};
///
/// # async fn example(client: Client) -> kubeclient::Result<()> {
/// let config_maps: Api<ConfigMap> = Api::namespaced(client, "default");
/// let updated = retry_on_conflict(RetryBackoff::DEFAULT_RETRY, || async {
///     let mut settings = config_maps.get("settings").await?;
///     settings.data.get_or_insert_default().insert("mode".into(), "fast".into());
///     config_maps.replace("settings", &PostParams::default(), &settings).await
/// })
/// .await?;
/// # let _ = updated; Ok(()) }
/// ```
#[doc(alias = "RetryOnConflict")]
pub async fn retry_on_conflict<T, F, Fut>(backoff: RetryBackoff, attempt: F) -> crate::Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = crate::Result<T>>,
{
    on_error(backoff, Error::is_conflict, attempt).await
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::time::Duration;

    use tokio::time::Instant;

    use super::{RetryBackoff, on_error};

    /// Runs `on_error` over attempts that fail with the given errors in turn (then
    /// succeed), and says how many ran, the result and how long the sleeps took.
    async fn run(
        backoff: RetryBackoff,
        errors: &[&'static str],
    ) -> (usize, Result<usize, &'static str>, Duration) {
        let calls = Cell::new(0);
        let start = Instant::now();
        let result = on_error(
            backoff,
            |err: &&str| *err == "conflict",
            || {
                let call = calls.get();
                calls.set(call + 1);
                let outcome = errors.get(call).map_or(Ok(call), |err| Err(*err));
                async move { outcome }
            },
        )
        .await;
        (calls.get(), result, start.elapsed())
    }

    #[tokio::test(start_paused = true)]
    async fn default_retry_tries_five_times_ten_milliseconds_apart() {
        let (calls, result, slept) = run(RetryBackoff::DEFAULT_RETRY, &["conflict"; 9]).await;
        assert_eq!(
            (calls, result),
            (5, Err("conflict")),
            "the last error comes back"
        );
        assert!(
            slept >= Duration::from_millis(40) && slept < Duration::from_millis(45),
            "four sleeps of 10-11 ms: {slept:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn default_backoff_sleeps_ten_fifty_and_two_hundred_fifty_milliseconds() {
        let (calls, result, slept) = run(RetryBackoff::DEFAULT_BACKOFF, &["conflict"; 9]).await;
        assert_eq!((calls, result), (4, Err("conflict")));
        assert!(
            slept >= Duration::from_millis(310) && slept < Duration::from_millis(342),
            "10 + 50 + 250 ms, each up to 10% more: {slept:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn success_after_retriable_errors_and_other_errors_at_once() {
        let (calls, result, _) = run(RetryBackoff::DEFAULT_RETRY, &["conflict", "conflict"]).await;
        assert_eq!((calls, result), (3, Ok(2)), "the third attempt succeeds");
        let (calls, result, slept) =
            run(RetryBackoff::DEFAULT_RETRY, &["conflict", "forbidden"]).await;
        assert_eq!(
            (calls, result),
            (2, Err("forbidden")),
            "an error that is not retriable ends it"
        );
        assert!(slept < Duration::from_millis(12), "{slept:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn zero_steps_still_run_once_and_a_cap_ends_the_retries() {
        let none = RetryBackoff {
            steps: 0,
            ..RetryBackoff::DEFAULT_RETRY
        };
        assert_eq!(run(none, &["conflict"; 3]).await.0, 1);
        // Sleeps 10 ms, then the cap (20 ms) is reached: one more attempt, no more.
        let capped = RetryBackoff {
            steps: 10,
            factor: 4.0,
            jitter: 0.0,
            cap: Some(Duration::from_millis(20)),
            ..RetryBackoff::DEFAULT_RETRY
        };
        let (calls, _, slept) = run(capped, &["conflict"; 20]).await;
        assert_eq!((calls, slept), (2, Duration::from_millis(10)));
    }

    #[test]
    fn a_huge_first_sleep_neither_panics_nor_overflows() {
        let mut backoff = RetryBackoff {
            steps: 3,
            duration: Duration::MAX,
            factor: 5.0,
            jitter: 1.0,
            cap: None,
        };
        assert_eq!(backoff.step(), Duration::MAX, "the jitter saturates");
        assert_eq!(
            backoff.duration,
            super::MAX_SLEEP,
            "the next sleep is capped"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn absurd_factors_and_jitters_neither_panic_nor_overflow() {
        for (factor, jitter) in [
            (f64::INFINITY, f64::NAN),
            (f64::NAN, f64::INFINITY),
            (1e300, -1.0),
            (-5.0, 1e300),
        ] {
            let backoff = RetryBackoff {
                steps: 3,
                duration: Duration::from_millis(1),
                factor,
                jitter,
                cap: None,
            };
            let (calls, _, _) = run(backoff, &["conflict"; 5]).await;
            assert_eq!(calls, 3, "factor {factor}, jitter {jitter}");
        }
    }
}
