//! [`Runnable`]: work a [`Manager`](super::Manager) starts and stops (controller-runtime's
//! `manager.Runnable` and `LeaderElectionRunnable`), and
//! [`Controller::into_runnable`].

use std::future::Future;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use crate::controller::{Action, Controller, ReconcileRequest};
use crate::informers::FactoryResource;

/// The error of a runnable: any error, kept whole with its `source()` chain.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

type RunFn = Box<dyn FnOnce(CancellationToken) -> BoxFuture<'static, Result<(), BoxError>> + Send>;

/// Work a manager starts once its caches synced and stops by cancelling the token it is
/// given, then waits for (up to the graceful shutdown timeout). By default it needs
/// leader election: with election on, it runs only while this replica leads.
///
/// # Examples
///
/// ```
/// use kubeclient::manager::Runnable;
///
/// let heartbeat = Runnable::new("heartbeat", |stop| async move {
///     stop.cancelled().await;
///     Ok::<_, std::io::Error>(())
/// })
/// .without_leader_election();
/// assert!(!heartbeat.needs_leader_election());
/// assert_eq!(heartbeat.name(), "heartbeat");
/// ```
#[must_use = "a runnable does nothing until added to a manager"]
pub struct Runnable {
    name: String,
    needs_leader_election: bool,
    pub(super) run: RunFn,
}

impl Runnable {
    /// A runnable named `name` (in logs and errors) running `run` until its token is
    /// cancelled. Returning early is fine; returning an error stops the manager.
    pub fn new<F, Fut, E>(name: &str, run: F) -> Self
    where
        F: FnOnce(CancellationToken) -> Fut + Send + 'static,
        Fut: Future<Output = Result<(), E>> + Send + 'static,
        E: Into<BoxError>,
    {
        Runnable {
            name: name.to_owned(),
            needs_leader_election: true,
            run: Box::new(move |stop| Box::pin(async move { run(stop).await.map_err(Into::into) })),
        }
    }

    /// Runs on every replica, leader or not (caches, servers, warmers).
    pub fn without_leader_election(mut self) -> Self {
        self.needs_leader_election = false;
        self
    }

    /// Its name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether it runs only while this replica leads.
    #[must_use]
    pub fn needs_leader_election(&self) -> bool {
        self.needs_leader_election
    }
}

impl std::fmt::Debug for Runnable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runnable")
            .field("name", &self.name)
            .field("needs_leader_election", &self.needs_leader_election)
            .finish_non_exhaustive()
    }
}

impl<K: FactoryResource> Controller<K> {
    /// This controller as a [`Runnable`] for a [`Manager`](super::Manager): it runs
    /// [`run`](Self::run) with these arguments under the manager's stop token (only
    /// while leading, when the manager elects a leader) and logs the summary.
    pub fn into_runnable<Ctx, R, Fut, E, P>(
        self,
        reconcile: R,
        error_policy: P,
        ctx: Arc<Ctx>,
    ) -> Runnable
    where
        Ctx: Send + Sync + 'static + ?Sized,
        R: Fn(ReconcileRequest<K>, Arc<Ctx>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Action, E>> + Send + 'static,
        E: std::error::Error + Send + Sync + 'static,
        P: Fn(&ReconcileRequest<K>, &E, &Ctx) -> Action + Send + Sync + 'static,
    {
        let name = self.name().to_owned();
        Runnable::new(&name.clone(), move |stop| async move {
            let summary = self.run(reconcile, error_policy, ctx, stop).await?;
            tracing::info!(controller = %name, ?summary, "controller stopped");
            Ok::<_, crate::controller::ControllerError>(())
        })
    }
}
