//! [`Cacher`]: what makes the in-memory [`Store`](super::Store) the watch cache of a [`Backend`]
//! (kube-apiserver's `Cacher` and its reflector). The backend lives on a runtime of its own
//! (one thread), so that the server's synchronous write path can wait for it from any
//! runtime without starving the task that keeps the cache current:
//!
//! - at start the cache is filled with every object of the backend at one revision, and
//!   its revisions are the backend's from then on;
//! - a feed task applies every later write of the backend (the server's own and other
//!   servers') to the cache, in revision order, through one watch of everything; after a
//!   broken watch it re-watches from the last applied revision, after a compaction that
//!   passed it (410) it reloads everything and ends the cache's watches (their clients
//!   re-watch, or relist after 410, as with kube-apiserver);
//! - a write commits to the backend first, conditional on the revision the cache showed
//!   (`GuaranteedUpdate`, in `store/guaranteed_update.rs`), and is answered once the feed
//!   applied it, so a server reads its own writes.

use std::future::Future;
use std::sync::Arc;

use futures_util::future::BoxFuture;

use super::{Backend, BackendError, Entry};

/// How many objects one page of the initial load reads.
const LOAD_PAGE: usize = 1000;

/// Opens a backend (on the cacher's runtime, where its connections then live).
pub type OpenBackend =
    Box<dyn FnOnce() -> BoxFuture<'static, Result<Arc<dyn Backend>, BackendError>> + Send>;

/// A backend on its own runtime, where the feed that keeps a [`Store`](super::Store) a
/// cache of it runs.
pub struct Cacher {
    /// `None` only while dropping.
    runtime: Option<tokio::runtime::Runtime>,
    backend: Arc<dyn Backend>,
}

impl std::fmt::Debug for Cacher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cacher")
            .field("backend", &self.backend)
            .finish_non_exhaustive()
    }
}

impl Cacher {
    /// Starts the backend's runtime and opens the backend on it.
    ///
    /// # Errors
    ///
    /// What opening the backend failed with (an etcd that does not answer names its
    /// endpoints); [`BackendError::Unavailable`] when no runtime can be started.
    pub async fn open(open: OpenBackend) -> Result<Cacher, BackendError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("kubeclient-storage")
            .enable_all()
            .build()
            .map_err(|error| BackendError::Unavailable {
                context: "starting the storage backend's runtime".to_owned(),
                source: Box::new(error),
            })?;
        let opened = runtime.spawn(open()).await;
        // A failed runtime is shut down, never dropped in place: that blocks, which an
        // async caller may not.
        let backend = match opened {
            Ok(Ok(backend)) => backend,
            Ok(Err(error)) => {
                runtime.shutdown_background();
                return Err(error);
            }
            Err(error) => {
                runtime.shutdown_background();
                return Err(BackendError::Unavailable {
                    context: "opening the storage backend".to_owned(),
                    source: Box::new(error),
                });
            }
        };
        Ok(Cacher {
            runtime: Some(runtime),
            backend,
        })
    }

    /// The backend.
    pub fn backend(&self) -> &Arc<dyn Backend> {
        &self.backend
    }

    /// Runs `future` on the backend's runtime and waits for it, from synchronous code on
    /// any thread but the backend's own (on a multi-threaded runtime the wait moves the
    /// thread's other tasks away first).
    pub(crate) fn block_on<T: Send + 'static>(
        &self,
        future: impl Future<Output = Result<T, BackendError>> + Send + 'static,
    ) -> Result<T, BackendError> {
        let gone = || BackendError::Unavailable {
            context: "calling the storage backend".to_owned(),
            source: "its runtime has stopped".into(),
        };
        let handle = self.runtime.as_ref().ok_or_else(gone)?.handle().clone();
        let (sender, receiver) = std::sync::mpsc::sync_channel(1);
        handle.spawn(async move {
            let _ = sender.send(future.await);
        });
        in_place(|| receiver.recv()).map_err(|_| gone())?
    }

    /// Runs `future` on the backend's runtime and awaits it (from async code).
    async fn run<T: Send + 'static>(
        &self,
        future: impl Future<Output = Result<T, BackendError>> + Send + 'static,
    ) -> Result<T, BackendError> {
        let runtime = self
            .runtime
            .as_ref()
            .ok_or_else(|| BackendError::Unavailable {
                context: "calling the storage backend".to_owned(),
                source: "its runtime has stopped".into(),
            })?;
        runtime
            .spawn(future)
            .await
            .map_err(|error| BackendError::Unavailable {
                context: "calling the storage backend".to_owned(),
                source: Box::new(error),
            })?
    }

    /// Every object of the backend at one revision.
    pub(crate) async fn load(&self) -> Result<(u64, Vec<Entry>), BackendError> {
        self.run(load_everything(self.backend.clone())).await
    }

    /// Runs `task` on the backend's runtime (the cache's feed).
    pub(crate) fn spawn(&self, task: impl Future<Output = ()> + Send + 'static) {
        if let Some(runtime) = &self.runtime {
            runtime.spawn(task);
        }
    }
}

impl Drop for Cacher {
    fn drop(&mut self) {
        // Never blocks, so a server may be dropped anywhere (even on this runtime).
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// Runs `body` where it may block: on a multi-threaded tokio runtime through
/// `block_in_place`, elsewhere as it is.
pub(crate) fn in_place<T>(body: impl FnOnce() -> T) -> T {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(body)
        }
        _ => body(),
    }
}

/// Every object of `backend`, paged, at the revision of the first page.
pub(crate) async fn load_everything(
    backend: Arc<dyn Backend>,
) -> Result<(u64, Vec<Entry>), BackendError> {
    let first = backend.list_everything(None, None, LOAD_PAGE).await?;
    let revision = first.revision;
    let mut entries = first.entries;
    let mut next = first.continue_after;
    while let Some(after) = next {
        let page = backend
            .list_everything(Some(revision), Some(&after), LOAD_PAGE)
            .await?;
        entries.extend(page.entries);
        next = page.continue_after;
    }
    Ok((revision, entries))
}
