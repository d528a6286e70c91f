//! [`Action`] and [`ReconcileRequest`]: what a reconcile is given and what it answers.

use std::sync::Arc;
use std::time::Duration;

/// What a successful reconcile asks for next (controller-runtime's `reconcile.Result`).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use kubeclient::controller::Action;
///
/// assert_eq!(Action::done().requeue_after_duration(), None);
/// let poll = Action::requeue_after(Duration::from_secs(30));
/// assert_eq!(poll.requeue_after_duration(), Some(Duration::from_secs(30)));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[doc(alias = "Result", alias = "RequeueAfter")]
pub struct Action {
    requeue_after: Option<Duration>,
}

impl Action {
    /// Nothing more to do until the next change: the key's backoff is forgotten.
    #[must_use]
    pub const fn done() -> Self {
        Action {
            requeue_after: None,
        }
    }

    /// Reconcile this key again after `delay` (its backoff is forgotten first, as
    /// controller-runtime does for `RequeueAfter`). A zero delay requeues at once.
    #[must_use]
    pub const fn requeue_after(delay: Duration) -> Self {
        Action {
            requeue_after: Some(delay),
        }
    }

    /// The delay asked for by [`requeue_after`](Self::requeue_after).
    #[must_use]
    pub const fn requeue_after_duration(&self) -> Option<Duration> {
        self.requeue_after
    }
}

/// One unit of work: the key taken from the queue, and the primary object the cache holds
/// for it when the worker picked it up (`None` once it is deleted).
///
/// Workers read the cache, never the server: `object` is what the informer has seen,
/// which may be behind the server (client-go's listers have the same rule).
///
/// # Examples
///
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kubeclient::controller::{Action, ReconcileRequest};
///
/// async fn reconcile(request: ReconcileRequest<ConfigMap>) -> Result<Action, kubeclient::Error> {
///     let Some(config_map) = request.object else {
///         return Ok(Action::done()); // deleted
///     };
///     println!("{} has {} keys", request.key, config_map.data.as_ref().map_or(0, |d| d.len()));
///     Ok(Action::done())
/// }
/// # drop(reconcile);
/// ```
#[derive(Debug)]
#[doc(alias = "Request")]
pub struct ReconcileRequest<K> {
    /// `namespace/name` (or `name` for cluster-scoped objects).
    pub key: String,
    /// The namespace (empty for cluster-scoped objects).
    pub namespace: String,
    /// The name.
    pub name: String,
    /// The cached object, or `None` when it is no longer in the cache.
    pub object: Option<Arc<K>>,
}

impl<K> Clone for ReconcileRequest<K> {
    fn clone(&self) -> Self {
        ReconcileRequest {
            key: self.key.clone(),
            namespace: self.namespace.clone(),
            name: self.name.clone(),
            object: self.object.clone(),
        }
    }
}
