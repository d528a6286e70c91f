//! Waiting on a watch for conditions (client-go's `tools/watch/until.go`).

use std::sync::Arc;

use futures_util::{Stream, StreamExt as _};
use kubeclient_machinery::{DeletedObject, Object, WatchEvent};
use tokio_util::sync::CancellationToken;

use super::retry_watcher::{RetryWatcher, RetryWatcherError};
use crate::api::ListParams;
use crate::cache::{
    BoxError, InformerOptions, ListerWatcher, Notification, SharedIndexInformer, Store,
};
use crate::error::Result;

/// A condition on one watch event: `Ok(true)` when met, `Err` to give up (Go's
/// `ConditionFunc`).
pub type ConditionFunc<'a, K> =
    Box<dyn FnMut(&WatchEvent<K>) -> Result<bool, BoxError> + Send + 'a>;

/// A check on the synced cache before watching: `Ok(true)` means already done (Go's
/// `PreconditionFunc`).
pub type PreconditionFunc<'a, K> =
    Box<dyn FnOnce(&dyn Store<K>) -> Result<bool, BoxError> + Send + 'a>;

/// Why waiting for conditions ended without meeting them all.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UntilError {
    /// The watch ended before the conditions were met (Go's `ErrWatchClosed`).
    #[doc(alias = "ErrWatchClosed")]
    #[error("watch closed before the conditions were met")]
    WatchClosed,
    /// The cancellation token fired first (Go's `wait.ErrorInterrupted`).
    #[error("cancelled while waiting for the conditions")]
    Interrupted,
    /// A condition or precondition returned an error.
    #[error("a condition failed")]
    Condition(#[source] BoxError),
    /// The watch stream, the list or the informer failed.
    #[error(transparent)]
    Client(#[from] crate::Error),
    /// The informer's cache did not sync before cancellation (`until_with_sync`).
    #[error("unable to sync caches")]
    Sync,
    /// The retry watcher could not start.
    #[error(transparent)]
    RetryWatcher(#[from] RetryWatcherError),
}

/// Reads `watch` until each condition in turn has been met by an event, and returns the
/// last event (Go's `UntilWithoutRetry`). An event that meets a condition is also
/// offered to the next one. `Ok(None)` when there are no conditions.
///
/// The watch is not restarted if it ends; prefer [`until`] or [`until_with_sync`].
///
/// # Errors
///
/// [`UntilError::WatchClosed`] when the stream ends first, [`UntilError::Interrupted`]
/// when `cancel` fires first, [`UntilError::Condition`], or [`UntilError::Client`] for an
/// error item of the stream.
///
/// # Examples
///
/// ```
/// use futures_util::stream;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kubeclient::machinery::WatchEvent;
/// use kubeclient::tools::watch::{ConditionFunc, until_without_retry};
/// use tokio_util::sync::CancellationToken;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let events = stream::iter([
///     Ok(WatchEvent::Added(ConfigMap::default())),
///     Ok(WatchEvent::Deleted(ConfigMap::default())),
/// ]);
/// let deleted: ConditionFunc<ConfigMap> = Box::new(|event| Ok(matches!(event, WatchEvent::Deleted(_))));
/// let last = until_without_retry(&CancellationToken::new(), events, vec![deleted]).await?;
/// assert!(matches!(last, Some(WatchEvent::Deleted(_))));
/// # Ok(()) }
/// ```
#[doc(alias = "UntilWithoutRetry")]
pub async fn until_without_retry<K, S>(
    cancel: &CancellationToken,
    watch: S,
    conditions: Vec<ConditionFunc<'_, K>>,
) -> Result<Option<WatchEvent<K>>, UntilError>
where
    S: Stream<Item = Result<WatchEvent<K>>>,
{
    let mut watch = std::pin::pin!(watch);
    let mut last: Option<WatchEvent<K>> = None;
    for mut condition in conditions {
        if let Some(event) = &last
            && condition(event).map_err(UntilError::Condition)?
        {
            continue;
        }
        loop {
            let next = tokio::select! {
                () = cancel.cancelled() => return Err(UntilError::Interrupted),
                next = watch.next() => next,
            };
            let event = next.ok_or(UntilError::WatchClosed)??;
            let done = condition(&event).map_err(UntilError::Condition)?;
            last = Some(event);
            if done {
                break;
            }
        }
    }
    Ok(last)
}

/// Watches from `initial_resource_version` with a [`RetryWatcher`] until the conditions
/// are met (Go's `Until`). A 410 arrives as a [`WatchEvent::Error`] the conditions see;
/// the watch then ends.
///
/// # Errors
///
/// As [`until_without_retry`], and [`UntilError::RetryWatcher`] for `""` or `"0"`.
#[doc(alias = "Until")]
pub async fn until<K>(
    cancel: &CancellationToken,
    initial_resource_version: &str,
    watcher: Arc<dyn ListerWatcher<K>>,
    conditions: Vec<ConditionFunc<'_, K>>,
) -> Result<Option<WatchEvent<K>>, UntilError>
where
    K: Object + Send + Sync + 'static,
{
    let retry = RetryWatcher::new(initial_resource_version, watcher)?;
    until_without_retry(cancel, retry, conditions).await
}

/// Lists, offers the listed items to the conditions as `Added` events, and watches from
/// the list's resourceVersion for the conditions not yet met (Go's `ListWatchUntil`).
///
/// # Errors
///
/// As [`until`], and [`UntilError::Client`] when the list fails.
#[doc(alias = "ListWatchUntil")]
pub async fn list_watch_until<K>(
    cancel: &CancellationToken,
    lister_watcher: Arc<dyn ListerWatcher<K>>,
    conditions: Vec<ConditionFunc<'_, K>>,
) -> Result<Option<WatchEvent<K>>, UntilError>
where
    K: Object + Clone + Send + Sync + 'static,
{
    if conditions.is_empty() {
        return Ok(None);
    }
    let list = lister_watcher.list(&ListParams::default()).await?;
    let resource_version = list.metadata.resource_version.clone().unwrap_or_default();
    let mut items = list.items.into_iter();
    let mut last: Option<WatchEvent<K>> = None;
    let mut conditions = conditions.into_iter();
    let mut remaining = Vec::new();
    for mut condition in conditions.by_ref() {
        let mut met = match &last {
            Some(event) => condition(event).map_err(UntilError::Condition)?,
            None => false,
        };
        while !met {
            let Some(item) = items.next() else { break };
            let event = WatchEvent::Added(item);
            met = condition(&event).map_err(UntilError::Condition)?;
            last = Some(event);
        }
        if !met {
            remaining.push(condition);
            break;
        }
    }
    remaining.extend(conditions);
    if remaining.is_empty() {
        return Ok(last);
    }
    until(cancel, &resource_version, lister_watcher, remaining).await
}

/// Runs an informer over `lister_watcher` and waits until the conditions are met by its
/// events (Go's `UntilWithSync`). Unlike [`until`], it survives a 410: the informer lists
/// again. With a `precondition`, the informer's cache is synced first and handed to it;
/// `Ok(true)` there returns `Ok(None)` at once.
///
/// The informer's events reach the conditions as `Added`, `Modified` and `Deleted`
/// events (a deletion the informer only inferred, without a final state, is skipped).
///
/// # Errors
///
/// As [`until_without_retry`], [`UntilError::Sync`] when cancelled before the cache
/// synced, [`UntilError::Condition`] when the precondition fails.
#[doc(alias = "UntilWithSync")]
pub async fn until_with_sync<K>(
    cancel: &CancellationToken,
    lister_watcher: Arc<dyn ListerWatcher<K>>,
    precondition: Option<PreconditionFunc<'_, K>>,
    conditions: Vec<ConditionFunc<'_, K>>,
) -> Result<Option<WatchEvent<K>>, UntilError>
where
    K: Object + Clone + serde::de::DeserializeOwned + Send + Sync + 'static,
{
    let informer = SharedIndexInformer::new(lister_watcher, InformerOptions::default());
    let (_registration, notifications) = informer
        .notifications()
        .map_err(|err| UntilError::Condition(Box::new(err)))?;
    let stop = cancel.child_token();
    let task = tokio::spawn({
        let (informer, stop) = (informer.clone(), stop.clone());
        async move { informer.run(stop).await }
    });
    let result = async {
        if let Some(precondition) = precondition {
            if !informer.wait_for_cache_sync(cancel).await {
                return Err(UntilError::Sync);
            }
            let indexer = informer.indexer();
            if precondition(&*indexer).map_err(UntilError::Condition)? {
                return Ok(None);
            }
        }
        let events = notifications
            .filter_map(|notification| std::future::ready(to_watch_event(notification).map(Ok)));
        until_without_retry(cancel, events, conditions).await
    }
    .await;
    stop.cancel();
    let _ = task.await;
    result
}

/// The watch event an informer notification stands for.
fn to_watch_event<K: Clone>(notification: Notification<K>) -> Option<WatchEvent<K>> {
    match notification {
        Notification::Add { obj, .. } => Some(WatchEvent::Added(Arc::unwrap_or_clone(obj))),
        Notification::Update { new, .. } => Some(WatchEvent::Modified(Arc::unwrap_or_clone(new))),
        Notification::Delete(DeletedObject::Final(obj)) => {
            Some(WatchEvent::Deleted(Arc::unwrap_or_clone(obj)))
        }
        Notification::Delete(DeletedObject::FinalStateUnknown(tombstone)) => tombstone
            .obj
            .map(|obj| WatchEvent::Deleted(Arc::unwrap_or_clone(obj))),
    }
}
