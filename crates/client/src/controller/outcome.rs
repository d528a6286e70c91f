//! What became of each reconcile: [`ReconcileOutcome`] on the stream of
//! [`Controller::outcomes`](super::Controller::outcomes), and the [`RunSummary`]
//! [`Controller::run`](super::Controller::run) returns.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use futures_util::stream::BoxStream;
use tokio::sync::broadcast;

use super::action::Action;

/// How many outcomes a slow subscriber may fall behind before it misses some.
pub(super) const OUTCOME_BUFFER: usize = 1024;

/// Why one reconcile did not succeed. The reconcile's own error is kept whole (with its
/// `source()` chain) behind an `Arc`, so every subscriber gets it.
#[derive(Clone, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReconcileError {
    /// The reconcile returned an error; `source()` is that error.
    #[error("reconcile failed")]
    Failed(#[source] Arc<dyn std::error::Error + Send + Sync>),
    /// The reconcile panicked (caught; the worker went on). A bug in the reconcile.
    #[error("reconcile panicked: {0}")]
    Panicked(String),
}

/// One reconcile of one key and what the controller did with the key afterwards.
///
/// # Examples
///
/// ```no_run
/// # async fn run(controller: kubeclient::controller::Controller<k8s_openapi::api::core::v1::ConfigMap>) {
/// use futures_util::StreamExt;
///
/// let mut outcomes = controller.outcomes();
/// tokio::spawn(async move {
///     while let Some(outcome) = outcomes.next().await {
///         if let Err(err) = &outcome.result {
///             eprintln!("{}: {}", outcome.key, kubeclient::machinery::ErrorChain(err));
///         }
///     }
/// });
/// # }
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ReconcileOutcome {
    /// The controller's name.
    pub controller: Arc<str>,
    /// The key reconciled.
    pub key: String,
    /// What the reconcile answered.
    pub result: Result<Action, ReconcileError>,
    /// What the controller did with the key: the reconcile's action, or the error
    /// policy's after an error (a rate-limited requeue after a panic).
    pub next: Action,
}

/// Counts of the reconciles one [`Controller::run`](super::Controller::run) performed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RunSummary {
    /// Reconciles that returned `Ok`.
    pub succeeded: u64,
    /// Reconciles that returned `Err`.
    pub failed: u64,
    /// Reconciles that panicked.
    pub panicked: u64,
}

impl RunSummary {
    /// Every reconcile, whatever its outcome.
    #[must_use]
    pub const fn reconciles(&self) -> u64 {
        self.succeeded + self.failed + self.panicked
    }
}

/// Where workers report outcomes: the counters of the summary and the broadcast channel
/// of the subscribers (sending never waits: a subscriber that lags loses the oldest).
pub(super) struct Reporter {
    pub(super) controller: Arc<str>,
    succeeded: AtomicU64,
    failed: AtomicU64,
    panicked: AtomicU64,
    sender: broadcast::Sender<ReconcileOutcome>,
}

impl Reporter {
    pub(super) fn new(controller: &str) -> Self {
        Reporter {
            controller: controller.into(),
            succeeded: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            panicked: AtomicU64::new(0),
            sender: broadcast::channel(OUTCOME_BUFFER).0,
        }
    }

    pub(super) fn report(&self, key: String, result: Result<Action, ReconcileError>, next: Action) {
        let counter = match &result {
            Ok(_) => &self.succeeded,
            Err(ReconcileError::Failed(_)) => &self.failed,
            Err(ReconcileError::Panicked(_)) => &self.panicked,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        if self.sender.receiver_count() > 0 {
            // No receiver left between the check and the send is not an error.
            let _ = self.sender.send(ReconcileOutcome {
                controller: self.controller.clone(),
                key,
                result,
                next,
            });
        }
    }

    pub(super) fn summary(&self) -> RunSummary {
        RunSummary {
            succeeded: self.succeeded.load(Ordering::Relaxed),
            failed: self.failed.load(Ordering::Relaxed),
            panicked: self.panicked.load(Ordering::Relaxed),
        }
    }

    /// A stream of the outcomes reported from now on; it ends once the run has returned
    /// (or the controller is dropped unrun).
    pub(super) fn subscribe(&self) -> BoxStream<'static, ReconcileOutcome> {
        let receiver = self.sender.subscribe();
        let controller = self.controller.clone();
        Box::pin(futures_util::stream::unfold(
            receiver,
            move |mut receiver| {
                let controller = controller.clone();
                async move {
                    loop {
                        match receiver.recv().await {
                            Ok(outcome) => return Some((outcome, receiver)),
                            Err(broadcast::error::RecvError::Lagged(missed)) => {
                                tracing::warn!(%controller, missed, "an outcome subscriber fell behind and missed outcomes");
                            }
                            Err(broadcast::error::RecvError::Closed) => return None,
                        }
                    }
                }
            },
        ))
    }
}
