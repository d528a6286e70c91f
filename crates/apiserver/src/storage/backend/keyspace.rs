//! The whole keyspace of a backend at once: [`Everything`], one page of every object of
//! every resource at one revision, and [`EventStream`], every later write in revision
//! order. These feed the server's watch cache (the in-memory [`Store`](super::super::Store)
//! over a backend), as kube-apiserver's cacher is fed by its reflector.

use std::sync::Arc;

use kubeclient_machinery::GroupResource;
use tokio::sync::mpsc;

use super::super::StoredObject;
use super::BackendError;

/// One stored object with the resource and key it is stored under.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The resource (its group from the key, or from the object's `apiVersion`).
    pub resource: GroupResource,
    /// `namespace/name` or `name`.
    pub key: String,
    /// The object, at its revision.
    pub object: Arc<StoredObject>,
}

/// One page of every object of every resource, at one revision.
#[derive(Debug)]
pub struct Everything {
    /// The revision the page was read at (continued pages read at the first one's).
    pub revision: u64,
    /// The objects, in the backend's key order.
    pub entries: Vec<Entry>,
    /// When more remain: the backend's own key to continue after.
    pub continue_after: Option<String>,
}

/// One write to the keyspace, as the watch of everything yields it.
#[derive(Debug, Clone)]
pub struct Event {
    /// The write's revision.
    pub rv: u64,
    /// The resource written.
    pub resource: GroupResource,
    /// The object's key in it.
    pub key: String,
    /// The state after the write; `None` for a delete.
    pub object: Option<Arc<StoredObject>>,
}

/// The writes after a revision, in revision order: ends (`None`) when the backend ended
/// the watch; an `Err` item says why it ended ([`BackendError::Expired`] after a
/// compaction).
#[derive(Debug)]
pub struct EventStream {
    receiver: mpsc::Receiver<Result<Event, BackendError>>,
    /// The task that feeds the channel, if one does (else the writers send themselves).
    pump: Option<tokio::task::JoinHandle<()>>,
}

impl EventStream {
    /// A stream fed by `pump` through `receiver`; the pump is stopped with the stream.
    #[cfg_attr(not(feature = "etcd"), allow(dead_code))]
    pub(crate) fn channel(
        receiver: mpsc::Receiver<Result<Event, BackendError>>,
        pump: tokio::task::JoinHandle<()>,
    ) -> Self {
        EventStream {
            receiver,
            pump: Some(pump),
        }
    }

    /// A stream of what is sent through `receiver` (it ends when every sender is gone).
    #[cfg_attr(not(feature = "disk"), allow(dead_code))]
    pub(crate) fn receiver(receiver: mpsc::Receiver<Result<Event, BackendError>>) -> Self {
        EventStream {
            receiver,
            pump: None,
        }
    }

    /// The next write; `None` once the watch ended.
    pub async fn next(&mut self) -> Option<Result<Event, BackendError>> {
        self.receiver.recv().await
    }
}

impl Drop for EventStream {
    fn drop(&mut self) {
        if let Some(pump) = &self.pump {
            pump.abort();
        }
    }
}
