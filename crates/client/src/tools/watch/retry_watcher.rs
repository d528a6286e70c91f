//! [`RetryWatcher`]: a watch that survives broken connections (client-go's
//! `tools/watch/retrywatcher.go`).

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures_util::{Stream, StreamExt as _};
use kubeclient_machinery::{Object, Status, StatusReason, WatchEvent};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::api::WatchParams;
use crate::cache::{Backoff, ListerWatcher};
use crate::error::{Error, Result};

/// Why a [`RetryWatcher`] could not be created.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RetryWatcherError {
    /// The initial resourceVersion was `""` or `"0"`: those start a watch with synthetic
    /// events of the current state, which cannot be resumed exactly. List first and pass
    /// the list's resourceVersion.
    #[error("initial RV {0:?} is not supported due to issues with underlying WATCH")]
    UnsupportedResourceVersion(String),
}

/// What one watch attempt ended with.
enum Attempt {
    /// Stop for good (stopped, 410 surfaced, or a fatal error surfaced).
    Done,
    /// Watch again from the last resourceVersion after this extra delay.
    Retry(Duration),
}

/// A watch that re-opens itself from the last resourceVersion it delivered whenever the
/// connection breaks or the server ends it (Go's `RetryWatcher`).
///
/// It yields the events of the watch (bookmarks only advance the resume point and are not
/// yielded). It ends — after yielding the error as a [`WatchEvent::Error`] — when the
/// resourceVersion is too old (410 Gone/Expired: list again and start a new one), when
/// the server refuses the watch (401, 403), or when an object has no resourceVersion. It
/// also ends on [`stop`](Self::stop) or when dropped. Between attempts it backs off
/// exponentially (client-go's 800 ms doubling to 30 s), plus a `Retry-After` the server
/// sent.
///
/// The stream's items are `Result`s for symmetry with a raw watch, but it never yields
/// `Err`: failures are retried or surfaced as [`WatchEvent::Error`], as in client-go.
///
/// # Examples
///
/// ```no_run
/// use std::sync::Arc;
/// use futures_util::StreamExt;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kubeclient::cache::ApiListWatch;
/// use kubeclient::tools::watch::RetryWatcher;
/// use kubeclient::{Api, Client, ListParams};
///
/// # async fn run(client: Client) -> Result<(), Box<dyn std::error::Error>> {
/// let api = Api::<ConfigMap>::namespaced(client, "default");
/// let list = api.list(&ListParams::default()).await?;
/// let rv = list.metadata.resource_version.unwrap_or_default();
/// let mut watcher = RetryWatcher::new(&rv, Arc::new(ApiListWatch::new(api)))?;
/// while let Some(Ok(event)) = watcher.next().await {
///     println!("{}", event.type_name());
/// }
/// # Ok(()) }
/// ```
#[doc(alias = "NewRetryWatcher", alias = "NewRetryWatcherWithContext")]
pub struct RetryWatcher<K> {
    events: mpsc::Receiver<WatchEvent<K>>,
    stop: CancellationToken,
    done: CancellationToken,
}

impl<K> RetryWatcher<K>
where
    K: Object + Send + Sync + 'static,
{
    /// Starts watching from `initial_resource_version` with client-go's backoff. Must be
    /// called inside a tokio runtime (it spawns the watching task).
    ///
    /// # Errors
    ///
    /// [`RetryWatcherError::UnsupportedResourceVersion`] for `""` and `"0"`.
    pub fn new(
        initial_resource_version: &str,
        watcher: Arc<dyn ListerWatcher<K>>,
    ) -> Result<Self, RetryWatcherError> {
        RetryWatcher::with_backoff(initial_resource_version, watcher, Backoff::default())
    }

    /// As [`new`](Self::new), backing off between attempts with `backoff`.
    ///
    /// # Errors
    ///
    /// As [`new`](Self::new).
    pub fn with_backoff(
        initial_resource_version: &str,
        watcher: Arc<dyn ListerWatcher<K>>,
        backoff: Backoff,
    ) -> Result<Self, RetryWatcherError> {
        if matches!(initial_resource_version, "" | "0") {
            return Err(RetryWatcherError::UnsupportedResourceVersion(
                initial_resource_version.to_owned(),
            ));
        }
        let (sender, events) = mpsc::channel(1);
        let stop = CancellationToken::new();
        let done = CancellationToken::new();
        let mut task = Task {
            watcher,
            last_resource_version: initial_resource_version.to_owned(),
            sender,
            stop: stop.clone(),
        };
        let finished = done.clone();
        tokio::spawn(async move {
            task.run(backoff).await;
            finished.cancel();
        });
        Ok(RetryWatcher { events, stop, done })
    }

    /// Stops watching; the stream ends after the events already handed over.
    pub fn stop(&self) {
        self.stop.cancel();
    }

    /// Completes once the watching task has finished (after [`stop`](Self::stop), a
    /// surfaced 410, or a fatal error).
    pub async fn done(&self) {
        self.done.cancelled().await;
    }
}

impl<K> Stream for RetryWatcher<K> {
    type Item = Result<WatchEvent<K>>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.events.poll_recv(cx).map(|event| event.map(Ok))
    }
}

impl<K> Drop for RetryWatcher<K> {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl<K> std::fmt::Debug for RetryWatcher<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RetryWatcher")
            .field("stopped", &self.stop.is_cancelled())
            .field("done", &self.done.is_cancelled())
            .finish_non_exhaustive()
    }
}

/// The watching task's state.
struct Task<K> {
    watcher: Arc<dyn ListerWatcher<K>>,
    last_resource_version: String,
    sender: mpsc::Sender<WatchEvent<K>>,
    stop: CancellationToken,
}

impl<K: Object + Send + Sync + 'static> Task<K> {
    async fn run(&mut self, mut backoff: Backoff) {
        loop {
            let extra = match self.attempt().await {
                Attempt::Done => return,
                Attempt::Retry(extra) => extra,
            };
            let delay = backoff.next_delay().saturating_add(extra);
            tracing::debug!(resource_version = %self.last_resource_version, ?delay, "re-creating the watch");
            tokio::select! {
                () = self.stop.cancelled() => return,
                () = tokio::time::sleep(delay) => {}
            }
        }
    }

    /// Hands `event` to the consumer; false when stopped or the consumer is gone.
    async fn send(&self, event: WatchEvent<K>) -> bool {
        tokio::select! {
            () = self.stop.cancelled() => false,
            sent = self.sender.send(event) => sent.is_ok(),
        }
    }

    async fn surface(&self, status: Status) -> Attempt {
        let _ = self.send(WatchEvent::Error(Box::new(status))).await;
        Attempt::Done
    }

    /// One watch from the last resourceVersion, until it ends (client-go's `doReceive`).
    async fn attempt(&mut self) -> Attempt {
        let params = WatchParams::default(); // bookmarks allowed
        let opened = tokio::select! {
            () = self.stop.cancelled() => return Attempt::Done,
            opened = self.watcher.watch(&params, &self.last_resource_version) => opened,
        };
        let mut stream = match opened {
            Ok(stream) => stream,
            Err(err) => return self.open_failed(err).await,
        };
        loop {
            let next = tokio::select! {
                () = self.stop.cancelled() => return Attempt::Done,
                next = stream.next() => next,
            };
            let event = match next {
                None => return Attempt::Retry(Duration::ZERO),
                Some(Err(err)) => {
                    tracing::debug!(error = %kubeclient_machinery::ErrorChain(&err), "watch broke; re-creating it");
                    return Attempt::Retry(Duration::ZERO);
                }
                Some(Ok(event)) => event,
            };
            match event {
                WatchEvent::Bookmark(bookmark) => {
                    if bookmark.resource_version.is_empty() {
                        return self.surface(missing_resource_version()).await;
                    }
                    self.last_resource_version = bookmark.resource_version;
                }
                WatchEvent::Added(_) | WatchEvent::Modified(_) | WatchEvent::Deleted(_) => {
                    let rv = event.object().map(|obj| obj.resource_version().to_owned());
                    let Some(rv) = rv.filter(|rv| !rv.is_empty()) else {
                        return self.surface(missing_resource_version()).await;
                    };
                    if !self.send(event).await {
                        return Attempt::Done;
                    }
                    self.last_resource_version = rv;
                }
                WatchEvent::Error(status) => {
                    let delay = status
                        .details
                        .as_ref()
                        .and_then(|details| u64::try_from(details.retry_after_seconds).ok())
                        .map_or(Duration::ZERO, Duration::from_secs);
                    if status.code == 410 {
                        let _ = self.send(WatchEvent::Error(status)).await;
                        return Attempt::Done;
                    }
                    tracing::debug!(code = status.code, message = %status.message, "watch ended with an error; retrying");
                    return Attempt::Retry(delay);
                }
            }
        }
    }

    /// Opening the watch failed: surface what retrying cannot fix, retry the rest.
    async fn open_failed(&self, err: Error) -> Attempt {
        if let Some(api) = err.api() {
            if api.is_forbidden() || api.is_unauthorized() {
                tracing::error!(error = %kubeclient_machinery::ErrorChain(&err), "watch failed: ensure the client has valid credentials and watch permissions on the resource");
                return self.surface(api.status.clone()).await;
            }
            if api.is_gone_or_expired() {
                return self.surface(api.status.clone()).await;
            }
            let delay = api.retry_after().unwrap_or(Duration::ZERO);
            tracing::debug!(error = %kubeclient_machinery::ErrorChain(&err), "watch failed; retrying");
            return Attempt::Retry(delay);
        }
        tracing::debug!(error = %kubeclient_machinery::ErrorChain(&err), "watch failed; retrying");
        Attempt::Retry(Duration::ZERO)
    }
}

fn missing_resource_version() -> Status {
    Status::failure(
        StatusReason::InternalError,
        "retryWatcher: object doesn't support resourceVersion",
    )
}
