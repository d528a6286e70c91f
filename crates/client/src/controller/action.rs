//! [`Action`] and [`ReconcileRequest`]: what a reconcile is given and what it answers, and
//! the default error policy.

use std::sync::Arc;
use std::time::Duration;

/// What a reconcile asks for next (controller-runtime's `reconcile.Result`, kube-rs's
/// `Action`); an [error policy](super::Controller::run) answers one too.
///
/// | action | the key's backoff | the key |
/// |---|---|---|
/// | [`done`](Self::done) | forgotten | waits for the next change |
/// | [`requeue_after`](Self::requeue_after) | forgotten | added again after the delay |
/// | [`requeue`](Self::requeue) | grows | added again after the rate limiter's delay |
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
/// assert!(Action::requeue().is_rate_limited());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[doc(alias = "Result", alias = "RequeueAfter")]
pub struct Action {
    next: Next,
}

/// What happens to the key.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Next {
    /// Nothing until the next event.
    #[default]
    AwaitChange,
    /// `add_after(delay)` once the backoff is forgotten.
    After(Duration),
    /// `add_rate_limited`.
    RateLimited,
}

impl Action {
    /// Nothing more to do until the next change: the key's backoff is forgotten. From an
    /// error policy this drops the key (controller-runtime's `TerminalError`).
    #[must_use]
    #[doc(alias = "await_change")]
    pub const fn done() -> Self {
        Action {
            next: Next::AwaitChange,
        }
    }

    /// Reconcile this key again after `delay` (its backoff is forgotten first, as
    /// controller-runtime does for `RequeueAfter`). A zero delay requeues at once.
    #[must_use]
    pub const fn requeue_after(delay: Duration) -> Self {
        Action {
            next: Next::After(delay),
        }
    }

    /// Reconcile this key again after the rate limiter's delay, which grows with every
    /// such requeue until an action forgets it (controller-runtime's `Requeue: true`;
    /// what [`retry_with_backoff`](super::retry_with_backoff) answers to every error).
    #[must_use]
    pub const fn requeue() -> Self {
        Action {
            next: Next::RateLimited,
        }
    }

    /// The delay asked for by [`requeue_after`](Self::requeue_after).
    #[must_use]
    pub const fn requeue_after_duration(&self) -> Option<Duration> {
        match self.next {
            Next::After(delay) => Some(delay),
            Next::AwaitChange | Next::RateLimited => None,
        }
    }

    /// Whether this is a [`requeue`](Self::requeue) through the rate limiter.
    #[must_use]
    pub const fn is_rate_limited(&self) -> bool {
        matches!(self.next, Next::RateLimited)
    }
}

/// The default error policy: every error re-queues its key through the rate limiter
/// ([`Action::requeue`]), client-go's and controller-runtime's behaviour.
///
/// # Examples
///
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kubeclient::controller::{Action, ReconcileRequest, retry_with_backoff};
///
/// let request = ReconcileRequest::<ConfigMap>::new("default/web", None);
/// let action = retry_with_backoff(&request, &std::io::Error::other("boom"), &());
/// assert_eq!(action, Action::requeue());
/// ```
pub fn retry_with_backoff<K, E, Ctx: ?Sized>(
    _request: &ReconcileRequest<K>,
    _error: &E,
    _ctx: &Ctx,
) -> Action {
    Action::requeue()
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
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kubeclient::controller::{Action, ReconcileRequest};
///
/// async fn reconcile(request: ReconcileRequest<ConfigMap>, _ctx: Arc<()>) -> Result<Action, kubeclient::Error> {
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
    /// How often this key was re-queued through the rate limiter since its last success
    /// (what an error policy reads to give up).
    pub retries: usize,
}

impl<K> ReconcileRequest<K> {
    /// A request for `key` (`namespace/name` or `name`) with the object the cache holds,
    /// as the workers make them; for tests of reconcile functions and error policies.
    /// A key that does not split gives an empty namespace and the key as the name.
    #[must_use]
    pub fn new(key: &str, object: Option<Arc<K>>) -> Self {
        let (namespace, name) =
            kubeclient_machinery::split_meta_namespace_key(key).unwrap_or(("", key));
        ReconcileRequest {
            key: key.to_owned(),
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            object,
            retries: 0,
        }
    }
}

impl<K> Clone for ReconcileRequest<K> {
    fn clone(&self) -> Self {
        ReconcileRequest {
            key: self.key.clone(),
            namespace: self.namespace.clone(),
            name: self.name.clone(),
            object: self.object.clone(),
            retries: self.retries,
        }
    }
}
