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
    /// Changes pumped by a task that owns a remote watch; the task ends with the stream.
    Channel {
        receiver: mpsc::Receiver<Result<Arc<Change>, BackendError>>,
        pump: tokio::task::JoinHandle<()>,
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
    pub(crate) fn channel(
        receiver: mpsc::Receiver<Result<Arc<Change>, BackendError>>,
        pump: tokio::task::JoinHandle<()>,
    ) -> Self {
        ChangeStream {
            source: Source::Channel { receiver, pump },
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
        if let Source::Channel { pump, .. } = &self.source {
            pump.abort();
        }
    }
}
