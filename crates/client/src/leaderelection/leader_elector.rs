//! [`LeaderElector`], its [`LeaderElectionConfig`] and [`LeaderCallbacks`] (client-go's
//! `leaderelection.LeaderElector`, `LeaderElectionConfig`, `LeaderCallbacks`).

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::error::LeaderElectionError;
use super::leader_election_record::LeaderElectionRecord;
use super::lease_lock::LeaseLock;
use crate::workqueue::SettableGaugeMetric;

/// client-go's default lease duration: how long non-leaders wait, from when they last saw
/// the record change, before they may take the lock.
pub const DEFAULT_LEASE_DURATION: Duration = Duration::from_secs(15);
/// client-go's default renew deadline: how long the leader keeps retrying a renewal
/// before it gives up leading.
pub const DEFAULT_RENEW_DEADLINE: Duration = Duration::from_secs(10);
/// client-go's default retry period between attempts to acquire or renew.
pub const DEFAULT_RETRY_PERIOD: Duration = Duration::from_secs(2);
/// client-go's `JitterFactor`: an acquire attempt waits retry period x (1 + up to 1.2).
pub const JITTER_FACTOR: f64 = 1.2;

/// How a [`LeaderElector`] behaves; [`Default`] has client-go's timings.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use kubeclient::leaderelection::LeaderElectionConfig;
///
/// let config = LeaderElectionConfig::default()
///     .lease_duration(Duration::from_secs(4))
///     .renew_deadline(Duration::from_secs(3))
///     .retry_period(Duration::from_millis(500))
///     .release_on_cancel(true);
/// assert!(config.validate().is_ok());
/// assert!(LeaderElectionConfig::default().renew_deadline(Duration::from_secs(20)).validate().is_err());
/// ```
#[derive(Clone)]
#[doc(alias = "leaderelection.LeaderElectionConfig")]
pub struct LeaderElectionConfig {
    lease_duration: Duration,
    renew_deadline: Duration,
    retry_period: Duration,
    release_on_cancel: bool,
    name: String,
    master_status: Option<Arc<dyn SettableGaugeMetric>>,
}

impl Default for LeaderElectionConfig {
    fn default() -> Self {
        LeaderElectionConfig {
            lease_duration: DEFAULT_LEASE_DURATION,
            renew_deadline: DEFAULT_RENEW_DEADLINE,
            retry_period: DEFAULT_RETRY_PERIOD,
            release_on_cancel: false,
            name: String::new(),
            master_status: None,
        }
    }
}

impl LeaderElectionConfig {
    /// [`DEFAULT_LEASE_DURATION`] unless set. The Lease stores whole seconds (at least 1).
    #[must_use]
    pub fn lease_duration(mut self, duration: Duration) -> Self {
        self.lease_duration = duration;
        self
    }

    /// [`DEFAULT_RENEW_DEADLINE`] unless set.
    #[must_use]
    pub fn renew_deadline(mut self, duration: Duration) -> Self {
        self.renew_deadline = duration;
        self
    }

    /// [`DEFAULT_RETRY_PERIOD`] unless set.
    #[must_use]
    pub fn retry_period(mut self, duration: Duration) -> Self {
        self.retry_period = duration;
        self
    }

    /// Give the lock up when stopped (default false, as client-go): the next candidate
    /// takes over at once instead of after the lease duration. Only set it when the code
    /// that needs the lock is done once `run` returns (it is: `run` waits for it).
    #[must_use]
    pub fn release_on_cancel(mut self, release: bool) -> Self {
        self.release_on_cancel = release;
        self
    }

    /// A name for logs and metrics (client-go's `Name`).
    #[must_use]
    pub fn name(mut self, name: &str) -> Self {
        name.clone_into(&mut self.name);
        self
    }

    /// Set to 1 while leading and 0 otherwise (`leader_election_master_status`).
    #[must_use]
    pub fn master_status_metric(mut self, gauge: Arc<dyn SettableGaugeMetric>) -> Self {
        self.master_status = Some(gauge);
        self
    }

    /// Checks client-go's rules: lease duration > renew deadline > 1.2 x retry period, all
    /// above zero, and a lease duration of at least one second (the Lease stores seconds).
    ///
    /// # Errors
    ///
    /// [`LeaderElectionError::InvalidConfig`] naming the broken rule.
    pub fn validate(&self) -> Result<(), LeaderElectionError> {
        let invalid = |message: &str| Err(LeaderElectionError::InvalidConfig(message.to_owned()));
        if self.lease_duration <= self.renew_deadline {
            return invalid("lease duration must be greater than the renew deadline");
        }
        if self.renew_deadline.as_secs_f64() <= JITTER_FACTOR * self.retry_period.as_secs_f64() {
            return invalid("renew deadline must be greater than 1.2 x the retry period");
        }
        if self.retry_period.is_zero() {
            return invalid("retry period must be greater than zero");
        }
        if self.lease_duration < Duration::from_secs(1) {
            return invalid("lease duration must be at least 1 s (a Lease stores whole seconds)");
        }
        if self.lease_duration.as_secs() > i32::MAX as u64 {
            return invalid("lease duration does not fit a Lease's leaseDurationSeconds");
        }
        Ok(())
    }
}

impl std::fmt::Debug for LeaderElectionConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderElectionConfig")
            .field("lease_duration", &self.lease_duration)
            .field("renew_deadline", &self.renew_deadline)
            .field("retry_period", &self.retry_period)
            .field("release_on_cancel", &self.release_on_cancel)
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

type StartedFn = Arc<dyn Fn(CancellationToken) -> BoxFuture<'static, ()> + Send + Sync>;
type NewLeaderFn = Arc<dyn Fn(&str) + Send + Sync>;

/// What to do on leadership changes (client-go's `LeaderCallbacks`). Keep
/// `on_stopped_leading` and `on_new_leader` quick: they run on the elector's task.
///
/// # Examples
///
/// ```
/// use kubeclient::leaderelection::LeaderCallbacks;
///
/// let callbacks = LeaderCallbacks::new()
///     .on_started_leading(|lost| async move {
///         // reconcile until leadership is lost
///         lost.cancelled().await;
///     })
///     .on_stopped_leading(|| println!("no longer leading"))
///     .on_new_leader(|identity| println!("{identity} leads"));
/// # drop(callbacks);
/// ```
#[derive(Clone, Default)]
pub struct LeaderCallbacks {
    on_started_leading: Option<StartedFn>,
    on_stopped_leading: Option<Arc<dyn Fn() + Send + Sync>>,
    on_new_leader: Option<NewLeaderFn>,
}

impl LeaderCallbacks {
    /// No callbacks yet.
    #[must_use]
    pub fn new() -> Self {
        LeaderCallbacks::default()
    }

    /// Spawned when this candidate becomes the leader; the token is cancelled the moment
    /// it stops leading (lost renewal or stop), and the work must end then.
    #[must_use]
    pub fn on_started_leading<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(CancellationToken) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.on_started_leading = Some(Arc::new(move |token| Box::pin(f(token))));
        self
    }

    /// Called when [`LeaderElector::run`] ends, whether or not this candidate led (as
    /// client-go).
    #[must_use]
    pub fn on_stopped_leading(mut self, f: impl Fn() + Send + Sync + 'static) -> Self {
        self.on_stopped_leading = Some(Arc::new(f));
        self
    }

    /// Called with the identity of each new leader this candidate observes (itself
    /// included).
    #[must_use]
    pub fn on_new_leader(mut self, f: impl Fn(&str) + Send + Sync + 'static) -> Self {
        self.on_new_leader = Some(Arc::new(f));
        self
    }
}

impl std::fmt::Debug for LeaderCallbacks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderCallbacks").finish_non_exhaustive()
    }
}

/// The record as last seen, and when *this* candidate saw it change.
#[derive(Default)]
struct Observed {
    record: Option<LeaderElectionRecord>,
    time: Option<Instant>,
    reported_leader: String,
}

/// Runs one candidate of a leader election (client-go's `LeaderElector`).
///
/// # Examples
///
/// ```no_run
/// use kubeclient::leaderelection::{LeaderCallbacks, LeaderElectionConfig, LeaderElector, LeaseLock};
/// use kubeclient::{CancellationToken, Client};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let client = Client::try_default().await?;
/// let lock = LeaseLock::new(client, "default", "my-controller", "replica-a");
/// let callbacks = LeaderCallbacks::new()
///     .on_started_leading(|lost| async move {
///         println!("leading");
///         lost.cancelled().await; // run the controller until then
///     })
///     .on_new_leader(|who| println!("the leader is {who}"));
/// let elector = LeaderElector::new(lock, LeaderElectionConfig::default().release_on_cancel(true), callbacks)?;
/// let stop = CancellationToken::new();
/// elector.run(stop).await;
/// # Ok(()) }
/// ```
#[doc(alias = "leaderelection.LeaderElector")]
pub struct LeaderElector {
    lock: LeaseLock,
    config: LeaderElectionConfig,
    callbacks: LeaderCallbacks,
    observed: Mutex<Observed>,
}

impl LeaderElector {
    /// A candidate taking `lock` with `config` (validated).
    ///
    /// # Errors
    ///
    /// [`LeaderElectionError::InvalidConfig`] for timings that break client-go's rules or
    /// an empty identity.
    pub fn new(
        lock: LeaseLock,
        config: LeaderElectionConfig,
        callbacks: LeaderCallbacks,
    ) -> Result<Self, LeaderElectionError> {
        config.validate()?;
        if lock.identity().is_empty() {
            return Err(LeaderElectionError::InvalidConfig(
                "the lock's identity must not be empty".to_owned(),
            ));
        }
        Ok(LeaderElector {
            lock,
            config,
            callbacks,
            observed: Mutex::new(Observed::default()),
        })
    }

    /// The identity of the leader as last observed (empty when none).
    pub fn get_leader(&self) -> String {
        crate::sync::lock(&self.observed)
            .record
            .as_ref()
            .map(|r| r.holder_identity.clone())
            .unwrap_or_default()
    }

    /// Whether the last observed record names this candidate.
    pub fn is_leader(&self) -> bool {
        let identity = self.lock.identity();
        crate::sync::lock(&self.observed)
            .record
            .as_ref()
            .is_some_and(|r| r.holder_identity == identity)
    }

    /// client-go's `Check` (its healthz adaptor): an error when this candidate believes it
    /// leads but its lease has not been renewed for longer than the lease duration plus
    /// `max_tolerable_expired_lease`. Serve it as a health check, so a leader that is stuck
    /// is restarted.
    ///
    /// # Errors
    ///
    /// [`LeaderElectionError::LeaseNotRenewed`].
    pub fn check(&self, max_tolerable_expired_lease: Duration) -> Result<(), LeaderElectionError> {
        let since = {
            let observed = crate::sync::lock(&self.observed);
            let leads = observed
                .record
                .as_ref()
                .is_some_and(|r| r.holder_identity == self.lock.identity());
            match observed.time {
                Some(time) if leads => time.elapsed(),
                _ => return Ok(()),
            }
        };
        if since
            > self
                .config
                .lease_duration
                .saturating_add(max_tolerable_expired_lease)
        {
            return Err(LeaderElectionError::LeaseNotRenewed {
                lock: self.lock.describe(),
                seconds: since.as_secs_f64(),
                lease_seconds: self.config.lease_duration.as_secs(),
            });
        }
        Ok(())
    }

    /// Campaigns until this candidate leads, then leads until it fails to renew within the
    /// renew deadline or `stop` is cancelled. Then it cancels the leading token, waits for
    /// the `on_started_leading` future to end, releases the lock if configured, calls
    /// `on_stopped_leading` and returns. Run it again to campaign again.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future cancels the leading token (the work stops) but does not
    /// release the lock: the others take over after the lease duration, as after a crash.
    pub async fn run(&self, stop: CancellationToken) {
        if self.acquire(&stop).await {
            let leading = CancellationToken::new();
            let _stop_leading_on_drop = leading.clone().drop_guard();
            self.set_master_status(1.0);
            let work = self
                .callbacks
                .on_started_leading
                .as_ref()
                .map(|started| tokio::spawn(started(leading.clone())));
            self.renew(&stop).await;
            leading.cancel();
            self.set_master_status(0.0);
            if let Some(work) = work {
                let _ = work.await;
            }
            if self.config.release_on_cancel {
                self.release().await;
            }
        }
        if let Some(stopped) = &self.callbacks.on_stopped_leading {
            stopped();
        }
    }

    fn set_master_status(&self, value: f64) {
        if let Some(gauge) = &self.config.master_status {
            gauge.set(value);
        }
    }

    /// Tries every retry period (with jitter) until the lock is ours; `false` on stop.
    async fn acquire(&self, stop: &CancellationToken) -> bool {
        tracing::info!(lock = %self.lock.describe(), identity = self.lock.identity(), "attempting to acquire leader lease");
        loop {
            let acquired = tokio::select! {
                () = stop.cancelled() => return false,
                acquired = self.try_acquire_or_renew() => acquired,
            };
            self.maybe_report_transition();
            if acquired {
                tracing::info!(lock = %self.lock.describe(), identity = self.lock.identity(), "acquired leader lease");
                return true;
            }
            let jitter = 1.0 + fastrand::f64() * JITTER_FACTOR;
            let wait = self.config.retry_period.mul_f64(jitter);
            tokio::select! {
                () = stop.cancelled() => return false,
                () = tokio::time::sleep(wait) => {}
            }
        }
    }

    /// Renews every retry period; returns when a renewal did not succeed within the renew
    /// deadline, or on stop.
    async fn renew(&self, stop: &CancellationToken) {
        loop {
            let deadline = Instant::now() + self.config.renew_deadline;
            let renewed = loop {
                let attempt = tokio::time::timeout_at(deadline, self.try_acquire_or_renew());
                let renewed = tokio::select! {
                    () = stop.cancelled() => return,
                    attempt = attempt => attempt.unwrap_or(false),
                };
                if renewed {
                    break true;
                }
                let next = Instant::now() + self.config.retry_period;
                if next >= deadline {
                    break false;
                }
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep_until(next) => {}
                }
            };
            self.maybe_report_transition();
            if !renewed {
                tracing::info!(lock = %self.lock.describe(), identity = self.lock.identity(), "failed to renew lease within the renew deadline; stopped leading");
                return;
            }
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(self.config.retry_period) => {}
            }
        }
    }

    /// Whether the observed lease is still valid at `now`, by this candidate's clock.
    fn is_lease_valid(observed: &Observed, now: Instant) -> bool {
        let (Some(record), Some(time)) = (&observed.record, observed.time) else {
            return false;
        };
        let seconds = u64::try_from(record.lease_duration_seconds).unwrap_or(0);
        time.checked_add(Duration::from_secs(seconds))
            .is_none_or(|expiry| expiry > now)
    }

    fn observe(&self, record: LeaderElectionRecord) {
        let mut observed = crate::sync::lock(&self.observed);
        observed.record = Some(record);
        observed.time = Some(Instant::now());
    }

    fn lease_seconds(&self) -> i32 {
        i32::try_from(self.config.lease_duration.as_secs()).unwrap_or(i32::MAX)
    }

    /// One attempt to take or keep the lock (client-go's `tryAcquireOrRenew`).
    async fn try_acquire_or_renew(&self) -> bool {
        let now = jiff::Timestamp::now();
        let identity = self.lock.identity();
        let mut record = LeaderElectionRecord {
            holder_identity: identity.to_owned(),
            lease_duration_seconds: self.lease_seconds(),
            acquire_time: Some(now),
            renew_time: Some(now),
            leader_transitions: 0,
        };
        // Fast path: the leader renews from the Lease it wrote last, without a GET.
        let renewable = {
            let observed = crate::sync::lock(&self.observed);
            observed
                .record
                .as_ref()
                .filter(|r| r.holder_identity == identity)
                .filter(|_| Self::is_lease_valid(&observed, Instant::now()))
                .cloned()
        };
        if let Some(current) = renewable {
            record.acquire_time = current.acquire_time;
            record.leader_transitions = current.leader_transitions;
            match self.lock.update(&record).await {
                Ok(()) => {
                    self.observe(record);
                    return true;
                }
                Err(err) => {
                    tracing::debug!(error = %kubeclient_machinery::ErrorChain(&err), "renewing the lease failed; reading it again");
                }
            }
        }
        // Slow path: read the lock, create it when missing.
        let old = match self.lock.get().await {
            Ok(Some(old)) => old,
            Ok(None) => {
                return match self.lock.create(&record).await {
                    Ok(()) => {
                        self.observe(record);
                        true
                    }
                    Err(err) => {
                        tracing::debug!(error = %kubeclient_machinery::ErrorChain(&err), "creating the lease failed");
                        false
                    }
                };
            }
            Err(err) => {
                tracing::warn!(error = %kubeclient_machinery::ErrorChain(&err), "reading the lease failed");
                return false;
            }
        };
        // The observed-time rule: a changed record restarts this candidate's clock.
        let (valid, we_lead) = {
            let mut observed = crate::sync::lock(&self.observed);
            if observed.record.as_ref() != Some(&old) {
                observed.record = Some(old.clone());
                observed.time = Some(Instant::now());
            }
            (
                Self::is_lease_valid(&observed, Instant::now()),
                old.holder_identity == identity,
            )
        };
        if !old.holder_identity.is_empty() && valid && !we_lead {
            tracing::debug!(holder = %old.holder_identity, "the lease is held and has not expired");
            return false;
        }
        if we_lead {
            record.acquire_time = old.acquire_time;
            record.leader_transitions = old.leader_transitions;
        } else {
            record.leader_transitions = old.leader_transitions.saturating_add(1);
        }
        match self.lock.update(&record).await {
            Ok(()) => {
                self.observe(record);
                true
            }
            Err(err) => {
                tracing::debug!(error = %kubeclient_machinery::ErrorChain(&err), "taking the lease failed");
                false
            }
        }
    }

    /// Gives the lock up: an empty holder and a one-second lease (client-go's `release`).
    /// A conflict (a renewal cut short by the stop may have been written without us seeing
    /// the answer) is resolved by reading the Lease again, while it still names us.
    async fn release(&self) {
        const ATTEMPTS: usize = 3;
        let current = {
            let observed = crate::sync::lock(&self.observed);
            observed
                .record
                .clone()
                .filter(|r| r.holder_identity == self.lock.identity())
        };
        let Some(current) = current else {
            return;
        };
        let now = jiff::Timestamp::now();
        let record = LeaderElectionRecord {
            holder_identity: String::new(),
            lease_duration_seconds: 1,
            acquire_time: Some(now),
            renew_time: Some(now),
            leader_transitions: current.leader_transitions,
        };
        for attempt in 1..=ATTEMPTS {
            match self.lock.update(&record).await {
                Ok(()) => {
                    tracing::info!(lock = %self.lock.describe(), identity = self.lock.identity(), "released the lease");
                    self.observe(record);
                    return;
                }
                Err(err) => {
                    tracing::debug!(error = %kubeclient_machinery::ErrorChain(&err), attempt, "releasing the lease failed; reading it again");
                }
            }
            match self.lock.get().await {
                Ok(Some(latest)) if latest.holder_identity == self.lock.identity() => {}
                Ok(_) => return, // someone else holds it, or nobody: nothing to release
                Err(err) => {
                    tracing::warn!(error = %kubeclient_machinery::ErrorChain(&err), "reading the lease to release it failed");
                    return;
                }
            }
        }
        tracing::warn!(lock = %self.lock.describe(), "could not release the lease; the others take over when it expires");
    }

    /// Calls `on_new_leader` when the observed holder changed since the last report.
    fn maybe_report_transition(&self) {
        let leader = {
            let mut observed = crate::sync::lock(&self.observed);
            let Some(holder) = observed.record.as_ref().map(|r| r.holder_identity.clone()) else {
                return;
            };
            if holder == observed.reported_leader {
                return;
            }
            observed.reported_leader.clone_from(&holder);
            holder
        };
        if let Some(on_new_leader) = &self.callbacks.on_new_leader {
            on_new_leader(&leader);
        }
    }
}

impl std::fmt::Debug for LeaderElector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderElector")
            .field("lock", &self.lock)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}
