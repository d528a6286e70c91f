//! Watches as etcd watches: one etcd watch per [`ChangeStream`], from the revision after
//! the requested one, with the previous values (`prevKV`) so that updates and deletes
//! carry the state before them. A task reads the etcd stream and turns its events into
//! [`Change`]s; it ends with the stream, when the consumer drops it, or after telling
//! the consumer why the watch ended (compaction: 410 Gone).

use std::sync::Arc;

use etcd_client::{EventType, GetOptions, WatchOptions, WatchResponse, WatchStream};
use kubeclient_machinery::GroupResource;
use tokio::sync::mpsc;

use super::super::{BackendError, Change, ChangeKind, ChangeStream};
use super::{EtcdBackend, Resend, revision, stored};

/// How many decoded changes wait for a slow consumer before the reading of etcd's stream
/// pauses (gRPC flow control then slows etcd down, nothing grows without bound).
const BUFFERED_CHANGES: usize = 256;

/// Opens a watch of the keys of `resource` with `prefix`, after revision `after`.
pub(super) async fn open(
    backend: &EtcdBackend,
    resource: &GroupResource,
    prefix: &str,
    after: u64,
) -> Result<ChangeStream, BackendError> {
    let root = backend.root(resource);
    let from = format!("{root}{prefix}");
    if after > 0 {
        // The revision `after` itself must still be readable, as it must in the in-memory
        // store (etcd alone would accept one revision more).
        let probe = GetOptions::new().with_count_only();
        match backend.read_at(from.clone(), probe, Some(after)).await {
            Ok(_) | Err(BackendError::TooLarge { .. }) => {}
            Err(error) => return Err(error),
        }
    }
    let options = WatchOptions::new()
        .with_prefix()
        .with_prev_key()
        .with_start_revision(super::to_etcd(after.saturating_add(1)));
    let context = format!("watching {from}");
    let stream = backend
        .call(&context, Resend::Safe, |mut client| {
            let (from, options) = (from.clone(), options.clone());
            async move { client.watch(from, Some(options)).await }
        })
        .await?;
    let (sender, receiver) = mpsc::channel(BUFFERED_CHANGES);
    let pump = tokio::spawn(pump(stream, root, after, sender));
    Ok(ChangeStream::channel(receiver, pump))
}

/// The next response of an etcd watch from `after` under `root`: `None` once the stream
/// closed, an error once it broke, was compacted past (`Expired`, a 410) or canceled.
pub(super) async fn next_response(
    stream: &mut WatchStream,
    root: &str,
    after: u64,
) -> Option<Result<WatchResponse, BackendError>> {
    let response = match stream.message().await {
        Ok(Some(response)) => response,
        Ok(None) => return None,
        Err(error) => {
            return Some(Err(BackendError::Unavailable {
                context: format!("watching {root}"),
                source: Box::new(error),
            }));
        }
    };
    if response.compact_revision() > 0 {
        return Some(Err(BackendError::Expired {
            requested: after,
            oldest: Some(revision(response.compact_revision())),
        }));
    }
    if response.canceled() {
        return Some(Err(BackendError::Unavailable {
            context: format!("watching {root}"),
            source: format!("etcd canceled the watch: {}", response.cancel_reason()).into(),
        }));
    }
    Some(Ok(response))
}

/// Reads etcd's watch responses and sends their events as changes, until either side
/// ends.
async fn pump(
    mut stream: WatchStream,
    root: String,
    after: u64,
    sender: mpsc::Sender<Result<Arc<Change>, BackendError>>,
) {
    loop {
        let response = match next_response(&mut stream, &root, after).await {
            Some(Ok(response)) => response,
            Some(Err(ended)) => {
                let _ = sender.send(Err(ended)).await;
                return;
            }
            None => return,
        };
        for event in response.events() {
            if sender.send(change(&root, event)).await.is_err() {
                return;
            }
        }
    }
}

/// One etcd event as a change of the key under `root`.
fn change(root: &str, event: &etcd_client::Event) -> Result<Arc<Change>, BackendError> {
    let missing = |what: &str| BackendError::Unavailable {
        context: format!("watching {root}"),
        source: format!("etcd sent an event without {what}").into(),
    };
    let kv = event.kv().ok_or_else(|| missing("a key"))?;
    let full = String::from_utf8_lossy(kv.key()).into_owned();
    let key = full.strip_prefix(root).unwrap_or(&full).to_owned();
    let prev = event
        .prev_kv()
        .map(|prev| stored(&full, prev.value(), prev.mod_revision()))
        .transpose()?;
    let rv = revision(kv.mod_revision());
    let change = match event.event_type() {
        EventType::Put => {
            let new = stored(&full, kv.value(), kv.mod_revision())?;
            let kind = if kv.create_revision() == kv.mod_revision() {
                ChangeKind::Created
            } else {
                ChangeKind::Updated
            };
            Change::new(rv, kind, key, prev, Some(new))
        }
        EventType::Delete => {
            let prev = prev.ok_or_else(|| missing("the deleted value"))?;
            Change::new(rv, ChangeKind::Deleted, key, Some(prev), None)
        }
    };
    Ok(Arc::new(change))
}
