//! [`Controller::run`]: wait for the caches, run the workers, drain on stop
//! (client-go's `Run`, `runWorker`, `processNextWorkItem`).

use std::fmt::Display;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::time::Duration;

use futures_util::FutureExt;
use kubeclient_machinery::split_meta_namespace_key;
use tokio_util::sync::CancellationToken;

use super::action::{Action, ReconcileRequest};
use super::builder::Controller;
use crate::cache::Lister;
use crate::informers::FactoryResource;
use crate::workqueue::RateLimitingQueue;

/// How often [`Controller::run`] checks whether its handlers have synced.
const SYNC_POLL: Duration = Duration::from_millis(20);

impl<K: FactoryResource> Controller<K> {
    /// Waits until every handler of the controller has seen its informer's initial list,
    /// then runs the workers until `stop` is cancelled; then stops taking new keys, lets
    /// the workers finish the keys already queued and in flight, removes the controller's
    /// handlers from the shared informers and returns. The factory keeps running.
    ///
    /// Each key is handed to `reconcile` with the cached primary object:
    /// - `Ok(action)`: the key's failures are forgotten; [`Action::requeue_after`] adds it
    ///   again after the delay.
    /// - `Err(err)`: logged, and the key is re-added with the rate limiter's backoff.
    /// - a panic: caught, logged, and retried like an error; the worker goes on.
    ///
    /// Start the factory ([`SharedInformerFactory::start`]) before or while this runs.
    ///
    /// # Cancel safety
    ///
    /// Not cancel safe: dropping the future leaves the workers running until `stop`.
    ///
    /// [`SharedInformerFactory::start`]: crate::informers::SharedInformerFactory::start
    pub async fn run<F, Fut, E>(self, reconcile: F, stop: CancellationToken)
    where
        F: Fn(ReconcileRequest<K>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Action, E>> + Send + 'static,
        E: Display + Send + 'static,
    {
        let reconcile = std::sync::Arc::new(reconcile);
        tracing::info!(controller = %self.name, "waiting for informer caches to sync");
        let synced = loop {
            if self.has_synced() {
                break true;
            }
            tokio::select! {
                () = stop.cancelled() => break false,
                () = tokio::time::sleep(SYNC_POLL) => {}
            }
        };
        let mut workers = Vec::new();
        if synced {
            tracing::info!(controller = %self.name, workers = self.workers, "starting workers");
            for _ in 0..self.workers {
                let (queue, lister, reconcile, name) = (
                    self.queue.clone(),
                    self.lister.clone(),
                    reconcile.clone(),
                    self.name.clone(),
                );
                workers.push(tokio::spawn(async move {
                    while process_next_work_item(&name, &queue, &lister, reconcile.as_ref()).await {
                    }
                }));
            }
        }
        stop.cancelled().await;
        tracing::info!(controller = %self.name, "shutting down workers");
        for registered in &self.registrations {
            (registered.remove)(&registered.registration);
        }
        self.queue.shutdown_with_drain().await;
        for worker in workers {
            let _ = worker.await;
        }
    }
}

/// Takes one key, reconciles it and settles it in the queue; `false` once the queue has
/// shut down and is empty.
async fn process_next_work_item<K, F, Fut, E>(
    controller: &str,
    queue: &RateLimitingQueue<String>,
    lister: &Lister<K>,
    reconcile: &F,
) -> bool
where
    K: FactoryResource,
    F: Fn(ReconcileRequest<K>) -> Fut,
    Fut: Future<Output = Result<Action, E>>,
    E: Display,
{
    let Some(key) = queue.get().await else {
        return false;
    };
    let request = match split_meta_namespace_key(&key) {
        Ok((namespace, name)) => {
            let object = if namespace.is_empty() {
                lister.get(name)
            } else {
                lister.by_namespace(namespace).get(name)
            };
            ReconcileRequest {
                key: key.clone(),
                namespace: namespace.to_owned(),
                name: name.to_owned(),
                object: object.ok(),
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
    let outcome = AssertUnwindSafe(async { reconcile(request).await })
        .catch_unwind()
        .await;
    match outcome {
        Ok(Ok(action)) => {
            queue.forget(&key);
            if let Some(delay) = action.requeue_after_duration() {
                queue.add_after(key.clone(), delay);
            }
        }
        Ok(Err(err)) => {
            tracing::warn!(controller, key, error = %err, retries = queue.num_requeues(&key), "reconcile failed; retrying with backoff");
            queue.add_rate_limited(key.clone());
        }
        Err(panic) => {
            let message = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a non-string panic payload".to_owned());
            tracing::error!(controller, key, panic = %message, "reconcile panicked; retrying with backoff");
            queue.add_rate_limited(key.clone());
        }
    }
    queue.done(&key);
    true
}
