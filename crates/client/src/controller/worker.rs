//! [`Controller::run`]: start the informers, wait for the caches, run the workers, drain
//! on stop (client-go's `Run`, `runWorker`, `processNextWorkItem`; controller-runtime's
//! `reconcileHandler` for what each outcome does to the key).

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt;
use kubeclient_machinery::{ErrorChain, split_meta_namespace_key};
use tokio_util::sync::CancellationToken;

use super::action::{Action, ReconcileRequest};
use super::builder::Controller;
use super::error::ControllerError;
use super::outcome::{ReconcileError, Reporter, RunSummary};
use crate::cache::Lister;
use crate::informers::FactoryResource;
use crate::workqueue::RateLimitingQueue;

/// How often [`Controller::run`] checks whether its handlers have synced.
const SYNC_POLL: Duration = Duration::from_millis(20);
/// How often a controller still waiting for its caches says which ones.
const SYNC_REPORT: Duration = Duration::from_secs(10);

/// What every worker shares.
struct Work<K: FactoryResource, R, P, Ctx: ?Sized> {
    queue: RateLimitingQueue<String>,
    lister: Lister<K>,
    reconcile: R,
    error_policy: P,
    ctx: Arc<Ctx>,
    reporter: Arc<Reporter>,
}

impl<K: FactoryResource> Controller<K> {
    /// Starts the factory's informers not started yet (so forgetting
    /// [`SharedInformerFactory::start`] cannot leave it waiting), waits until every handler
    /// of the controller has seen its informer's initial list, then runs the workers until
    /// `stop` is cancelled; then stops taking new keys, lets the workers finish the keys
    /// already queued and in flight, removes the controller's handlers from the shared
    /// informers and returns what the reconciles did. The factory keeps running.
    ///
    /// Each key is handed to `reconcile` with the cached primary object and `ctx`:
    /// - `Ok(action)`: the [`Action`] is carried out.
    /// - `Err(err)`: logged with its cause chain; `error_policy(request, err, ctx)` says
    ///   what to do with the key ([`retry_with_backoff`](super::retry_with_backoff):
    ///   re-add it with the rate limiter's backoff).
    /// - a panic: caught, logged, and retried with backoff; the worker goes on.
    ///
    /// Every outcome is also sent to the [`outcomes`](Self::outcomes) streams.
    ///
    /// # Errors
    ///
    /// [`ControllerError::FactoryShutDown`] when the factory is shut down before the
    /// caches synced.
    ///
    /// # Cancel safety
    ///
    /// Not cancel safe: dropping the future leaves the workers running until `stop`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use std::sync::Arc;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kubeclient::controller::{Action, Controller, ReconcileRequest, retry_with_backoff};
    /// use kubeclient::informers::SharedInformerFactory;
    /// use kubeclient::{CancellationToken, Client};
    ///
    /// struct Ctx { client: Client }
    ///
    /// async fn reconcile(request: ReconcileRequest<ConfigMap>, ctx: Arc<Ctx>) -> Result<Action, kubeclient::Error> {
    ///     let _ = (&ctx.client, request.object);
    ///     Ok(Action::done())
    /// }
    ///
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// let client = Client::try_default().await?;
    /// let factory = SharedInformerFactory::new(client.clone());
    /// let controller = Controller::<ConfigMap>::builder("config-maps", &factory).build()?;
    /// let summary = controller
    ///     .run(reconcile, retry_with_backoff, Arc::new(Ctx { client }), CancellationToken::new())
    ///     .await?;
    /// println!("{} reconciles", summary.reconciles());
    /// # Ok(()) }
    /// ```
    ///
    /// [`SharedInformerFactory::start`]: crate::informers::SharedInformerFactory::start
    pub async fn run<Ctx, R, Fut, E, P>(
        self,
        reconcile: R,
        error_policy: P,
        ctx: Arc<Ctx>,
        stop: CancellationToken,
    ) -> Result<RunSummary, ControllerError>
    where
        Ctx: Send + Sync + 'static + ?Sized,
        R: Fn(ReconcileRequest<K>, Arc<Ctx>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Action, E>> + Send + 'static,
        E: std::error::Error + Send + Sync + 'static,
        P: Fn(&ReconcileRequest<K>, &E, &Ctx) -> Action + Send + Sync + 'static,
    {
        self.factory.start();
        let synced = self.wait_for_sync(&stop).await;
        let work = Arc::new(Work {
            queue: self.queue.clone(),
            lister: self.lister.clone(),
            reconcile,
            error_policy,
            ctx,
            reporter: self.reporter.clone(),
        });
        let mut workers = Vec::new();
        if synced == Some(true) {
            tracing::info!(controller = %self.name, workers = self.workers, "starting workers");
            for _ in 0..self.workers {
                let work = work.clone();
                workers.push(tokio::spawn(async move {
                    while process_next_work_item(&work).await {}
                }));
            }
            stop.cancelled().await;
            tracing::info!(controller = %self.name, "shutting down workers");
        }
        for registered in &self.registrations {
            (registered.remove)(&registered.registration);
        }
        self.queue.shutdown_with_drain().await;
        for worker in workers {
            let _ = worker.await;
        }
        match synced {
            None => Err(ControllerError::FactoryShutDown),
            Some(_) => Ok(self.reporter.summary()),
        }
    }

    /// `Some(true)` once synced, `Some(false)` on stop, `None` when the factory shut down.
    async fn wait_for_sync(&self, stop: &CancellationToken) -> Option<bool> {
        tracing::info!(controller = %self.name, "waiting for informer caches to sync");
        let factory_stopped = self.factory.stopped();
        let mut report = tokio::time::Instant::now() + SYNC_REPORT;
        loop {
            if self.has_synced() {
                return Some(true);
            }
            if factory_stopped.is_cancelled() {
                return None;
            }
            if tokio::time::Instant::now() >= report {
                let waiting: Vec<&str> = self
                    .registrations
                    .iter()
                    .filter(|r| !r.registration.has_synced())
                    .map(|r| r.resource.as_str())
                    .collect();
                tracing::warn!(controller = %self.name, ?waiting, "still waiting for informer caches to sync");
                report += SYNC_REPORT;
            }
            tokio::select! {
                () = stop.cancelled() => return Some(false),
                () = factory_stopped.cancelled() => return None,
                () = tokio::time::sleep(SYNC_POLL) => {}
            }
        }
    }
}

/// Takes one key, reconciles it and settles it in the queue; `false` once the queue has
/// shut down and is empty.
async fn process_next_work_item<K, Ctx, R, Fut, E, P>(work: &Work<K, R, P, Ctx>) -> bool
where
    K: FactoryResource,
    Ctx: ?Sized,
    R: Fn(ReconcileRequest<K>, Arc<Ctx>) -> Fut,
    Fut: Future<Output = Result<Action, E>>,
    E: std::error::Error + Send + Sync + 'static,
    P: Fn(&ReconcileRequest<K>, &E, &Ctx) -> Action,
{
    let controller = &*work.reporter.controller;
    let queue = &work.queue;
    let Some(key) = queue.get().await else {
        return false;
    };
    let request = match split_meta_namespace_key(&key) {
        Ok((namespace, name)) => {
            let object = if namespace.is_empty() {
                work.lister.get(name)
            } else {
                work.lister.by_namespace(namespace).get(name)
            };
            ReconcileRequest {
                key: key.clone(),
                namespace: namespace.to_owned(),
                name: name.to_owned(),
                object: object.ok(),
                retries: queue.num_requeues(&key),
            }
        }
        Err(err) => {
            // A key no handler of ours makes: retrying cannot help (client-go forgets it).
            tracing::error!(controller, key, error = %err, "dropping an invalid key");
            queue.forget(&key);
            queue.done(&key);
            return true;
        }
    };
    // The call is inside the async block, so a panic before the first await is caught too.
    let call = request.clone();
    let outcome = AssertUnwindSafe(async { (work.reconcile)(call, work.ctx.clone()).await })
        .catch_unwind()
        .await;
    let (result, next) = match outcome {
        Ok(Ok(action)) => (Ok(action), action),
        Ok(Err(err)) => {
            let next = (work.error_policy)(&request, &err, &work.ctx);
            tracing::warn!(controller, key, error = %ErrorChain(&err), retries = request.retries, ?next, "reconcile failed");
            (Err(ReconcileError::Failed(Arc::new(err))), next)
        }
        Err(panic) => {
            let message = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a non-string panic payload".to_owned());
            tracing::error!(controller, key, panic = %message, "reconcile panicked; retrying with backoff");
            (Err(ReconcileError::Panicked(message)), Action::requeue())
        }
    };
    if next.is_rate_limited() {
        queue.add_rate_limited(key.clone());
    } else {
        queue.forget(&key);
        if let Some(delay) = next.requeue_after_duration() {
            queue.add_after(key.clone(), delay);
        }
    }
    queue.done(&key);
    work.reporter.report(key, result, next);
    true
}
