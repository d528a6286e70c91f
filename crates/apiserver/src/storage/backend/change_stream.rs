//! [`ChangeStream`]: the changes a backend's watch yields.

use std::collections::VecDeque;
use std::sync::Arc;

use tokio::sync::mpsc;

use super::super::{Change, WatchQueue};
use super::BackendError;

/// The changes of one watch, in revision order: first the replayed history, then the
/// live changes. It ends (`None`) when the backend ended the watch (the client
/// re-watches from the last revision it saw); an `Err` item reports a change that could
/// not be read, or why the watch ended.
#[derive(Debug)]
pub struct ChangeStream {
    source: Source,
}

#[derive(Debug)]
enum Source {
    /// The in-memory store's subscription: its backlog, then its queue.
    Memory {
        backlog: VecDeque<Arc<Change>>,
        queue: WatchQueue,
        /// Changes at or below this revision were already replayed.
        after: u64,
    },
    /// Changes sent through a channel: by a task that owns a remote watch (etcd), which
    /// ends with the stream, or by the writers themselves (disk).
    #[cfg_attr(not(any(feature = "etcd", feature = "disk")), allow(dead_code))]
    Channel {
        receiver: mpsc::Receiver<Result<Arc<Change>, BackendError>>,
        pump: Option<tokio::task::JoinHandle<()>>,
    },
}

impl ChangeStream {
    /// A stream over an in-memory subscription.
    pub(crate) fn memory(backlog: Vec<Arc<Change>>, queue: WatchQueue, after: u64) -> Self {
        ChangeStream {
            source: Source::Memory {
                backlog: backlog.into(),
                queue,
                after,
            },
        }
    }

    /// A stream fed by `pump` through `receiver`.
    #[cfg_attr(not(feature = "etcd"), allow(dead_code))]
    pub(crate) fn channel(
        receiver: mpsc::Receiver<Result<Arc<Change>, BackendError>>,
        pump: tokio::task::JoinHandle<()>,
    ) -> Self {
        ChangeStream {
            source: Source::Channel {
                receiver,
                pump: Some(pump),
            },
        }
    }

    /// A stream of what is sent through `receiver` (it ends when every sender is gone).
    #[cfg_attr(not(feature = "disk"), allow(dead_code))]
    pub(crate) fn receiver(receiver: mpsc::Receiver<Result<Arc<Change>, BackendError>>) -> Self {
        ChangeStream {
            source: Source::Channel {
                receiver,
                pump: None,
            },
        }
    }

    /// The next change; `None` once the watch ended.
    pub async fn next(&mut self) -> Option<Result<Arc<Change>, BackendError>> {
        match &mut self.source {
            Source::Memory {
                backlog,
                queue,
                after,
            } => {
                if let Some(change) = backlog.pop_front() {
                    return Some(Ok(change));
                }
                loop {
                    let change = queue.recv().await?;
                    if change.rv > *after {
                        return Some(Ok(change));
                    }
                }
            }
            Source::Channel { receiver, .. } => receiver.recv().await,
        }
    }
}

impl Drop for ChangeStream {
    fn drop(&mut self) {
        if let Source::Channel {
            pump: Some(pump), ..
        } = &self.source
        {
            pump.abort();
        }
    }
}
