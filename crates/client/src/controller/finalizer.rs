//! [`finalizer()`]: run a reconcile behind a finalizer, so that the cleanup of external
//! state runs before an object goes away (kube-rs's `runtime::finalizer`, and
//! controller-runtime's `controllerutil.AddFinalizer` / `RemoveFinalizer` /
//! `ContainsFinalizer`, also here for callers that write objects whole).
//!
//! The four states of an object and what [`finalizer()`] does in each:
//!
//! | being deleted | has the finalizer | what happens |
//! |---|---|---|
//! | no | yes | [`FinalizerEvent::Apply`] |
//! | no | no | the finalizer is added, then [`FinalizerEvent::Apply`] on the object the server returned |
//! | yes | yes | [`FinalizerEvent::Cleanup`]; on success the finalizer is removed |
//! | yes | no | nothing: the cleanup already ran ([`Action::done`]) |
//!
//! Both writes are merge patches carrying the object's `resourceVersion`: a stale cache
//! gets a 409 Conflict and the key is retried, never a lost update of the finalizer list
//! (the API server does not de-duplicate finalizers).

use std::future::Future;
use std::sync::Arc;

use kubeclient_machinery::Object;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::json;

use super::action::Action;
use crate::api::{Api, Patch, PatchParams};

/// What the reconcile behind [`finalizer()`] is asked to do.
#[derive(Debug)]
pub enum FinalizerEvent<K> {
    /// Bring the world in line with the object; the finalizer is in place.
    Apply(Arc<K>),
    /// The object is being deleted: remove what [`Apply`](Self::Apply) made outside the
    /// object's owner-reference tree. The finalizer is removed once this returns `Ok`, so
    /// it must be idempotent (it may run again after a failed removal).
    Cleanup(Arc<K>),
}

/// Why [`finalizer()`] failed. Each variant keeps its cause in `source()`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FinalizerError<E: std::error::Error + 'static> {
    /// The reconcile failed on [`FinalizerEvent::Apply`].
    #[error("apply failed")]
    ApplyFailed(#[source] E),
    /// The reconcile failed on [`FinalizerEvent::Cleanup`]; the finalizer stays and the
    /// deletion waits.
    #[error("cleanup failed")]
    CleanupFailed(#[source] E),
    /// The patch adding the finalizer failed (a 409 Conflict means the cache was behind;
    /// the retry will see the newer object).
    #[error("cannot add finalizer {finalizer:?}")]
    AddFinalizer {
        /// The finalizer.
        finalizer: String,
        /// The request's error.
        #[source]
        source: crate::Error,
    },
    /// The patch removing the finalizer failed; the cleanup will run again.
    #[error("cannot remove finalizer {finalizer:?}")]
    RemoveFinalizer {
        /// The finalizer.
        finalizer: String,
        /// The request's error.
        #[source]
        source: crate::Error,
    },
    /// The object has no name (it was not read from the server).
    #[error("the object has no name; finalizers are managed on objects read from the server")]
    UnnamedObject,
}

/// Runs `reconcile` behind the finalizer `finalizer` of `object`, writing through `api`
/// (an `Api` whose namespace is the object's). Four cases: not being deleted and holding
/// the finalizer, [`FinalizerEvent::Apply`]; not holding it, the finalizer is added first;
/// being deleted and holding it, [`FinalizerEvent::Cleanup`], then the finalizer is
/// removed; being deleted without it, nothing ([`Action::done`]).
///
/// # Errors
///
/// [`FinalizerError`]: the reconcile's own error (wrapped by the event it failed on), or
/// the patch that adds or removes the finalizer.
///
/// # Cancel safety
///
/// Not cancel safe: a cancelled call may have added the finalizer without running the
/// reconcile (the next reconcile does).
///
/// # Examples
///
/// ```no_run
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kubeclient::controller::{Action, FinalizerError, FinalizerEvent, ReconcileRequest, finalizer};
/// use kubeclient::{Api, Client};
///
/// async fn reconcile(request: ReconcileRequest<ConfigMap>, client: Arc<Client>) -> Result<Action, FinalizerError<kubeclient::Error>> {
///     let Some(config_map) = request.object else { return Ok(Action::done()) };
///     let api: Api<ConfigMap> = Api::namespaced((*client).clone(), &request.namespace);
///     finalizer(&api, "example.com/cleanup", config_map, |event| async move {
///         match event {
///             FinalizerEvent::Apply(cm) => println!("sync {:?}", cm.metadata.name),
///             FinalizerEvent::Cleanup(cm) => println!("clean up after {:?}", cm.metadata.name),
///         }
///         Ok::<_, kubeclient::Error>(Action::done())
///     })
///     .await
/// }
/// # drop(reconcile);
/// ```
pub async fn finalizer<K, F, Fut, E>(
    api: &Api<K>,
    finalizer: &str,
    object: Arc<K>,
    reconcile: F,
) -> Result<Action, FinalizerError<E>>
where
    K: Object + DeserializeOwned + Serialize + Send + 'static,
    F: FnOnce(FinalizerEvent<K>) -> Fut,
    Fut: Future<Output = Result<Action, E>>,
    E: std::error::Error + 'static,
{
    if object.name().is_empty() {
        return Err(FinalizerError::UnnamedObject);
    }
    let deleting = object.deletion_timestamp().is_some();
    match (deleting, contains_finalizer(object.as_ref(), finalizer)) {
        (false, true) => reconcile(FinalizerEvent::Apply(object))
            .await
            .map_err(FinalizerError::ApplyFailed),
        (false, false) => {
            let mut finalizers = object.finalizers().to_vec();
            finalizers.push(finalizer.to_owned());
            let patched = patch_finalizers(api, object.as_ref(), &finalizers)
                .await
                .map_err(|source| FinalizerError::AddFinalizer {
                    finalizer: finalizer.to_owned(),
                    source,
                })?;
            reconcile(FinalizerEvent::Apply(Arc::new(patched)))
                .await
                .map_err(FinalizerError::ApplyFailed)
        }
        (true, true) => {
            let action = reconcile(FinalizerEvent::Cleanup(object.clone()))
                .await
                .map_err(FinalizerError::CleanupFailed)?;
            let rest: Vec<String> = object
                .finalizers()
                .iter()
                .filter(|f| *f != finalizer)
                .cloned()
                .collect();
            match patch_finalizers(api, object.as_ref(), &rest).await {
                // Gone already: another writer removed the last finalizer first.
                Err(err) if err.is_not_found() => {}
                Err(source) => {
                    return Err(FinalizerError::RemoveFinalizer {
                        finalizer: finalizer.to_owned(),
                        source,
                    });
                }
                Ok(_) => {}
            }
            Ok(action)
        }
        (true, false) => Ok(Action::done()),
    }
}

/// Writes `finalizers` as the object's whole list, on condition that the object is still
/// at the resourceVersion it was read at.
async fn patch_finalizers<K>(api: &Api<K>, object: &K, finalizers: &[String]) -> crate::Result<K>
where
    K: Object + DeserializeOwned + Serialize + Send + 'static,
{
    let patch = json!({"metadata": {
        "finalizers": finalizers,
        "resourceVersion": object.resource_version(),
    }});
    api.patch(object.name(), &PatchParams::default(), &Patch::Merge(patch))
        .await
}

/// Whether `object` lists `finalizer` (controller-runtime's `ContainsFinalizer`).
#[must_use]
pub fn contains_finalizer<K: Object + ?Sized>(object: &K, finalizer: &str) -> bool {
    object.finalizers().iter().any(|f| f == finalizer)
}

/// Adds `finalizer` unless present; `true` when the list changed (controller-runtime's
/// `AddFinalizer`). For callers that write the object whole; [`finalizer()`] patches.
///
/// # Examples
///
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kubeclient::controller::{add_finalizer, contains_finalizer, remove_finalizer};
///
/// let mut cm = ConfigMap::default();
/// assert!(add_finalizer(&mut cm, "example.com/cleanup"));
/// assert!(!add_finalizer(&mut cm, "example.com/cleanup"), "never twice");
/// assert!(contains_finalizer(&cm, "example.com/cleanup"));
/// assert!(remove_finalizer(&mut cm, "example.com/cleanup"));
/// assert_eq!(cm.metadata.finalizers, None);
/// ```
pub fn add_finalizer<K: Object + ?Sized>(object: &mut K, finalizer: &str) -> bool {
    if contains_finalizer(object, finalizer) {
        return false;
    }
    object
        .meta_mut()
        .finalizers
        .get_or_insert_with(Vec::new)
        .push(finalizer.to_owned());
    true
}

/// Removes every occurrence of `finalizer`; `true` when the list changed (an emptied list
/// becomes absent, as the server stores it) (controller-runtime's `RemoveFinalizer`).
pub fn remove_finalizer<K: Object + ?Sized>(object: &mut K, finalizer: &str) -> bool {
    let meta = object.meta_mut();
    let Some(finalizers) = meta.finalizers.as_mut() else {
        return false;
    };
    let before = finalizers.len();
    finalizers.retain(|f| f != finalizer);
    let changed = finalizers.len() != before;
    if finalizers.is_empty() {
        meta.finalizers = None;
    }
    changed
}
