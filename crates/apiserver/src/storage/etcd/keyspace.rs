//! The whole keyspace under the prefix, for the watch cache: every object at one revision
//! in pages, and one etcd watch of the prefix (with `prevKV`) for every later write. Each
//! key is parsed back into its resource ([`keys::parse`]); the group of a built-in
//! resource, which its key does not name, is the stored object's `apiVersion`'s. Keys that
//! name no object, and values that do not decode, are reported and skipped.

use std::sync::Arc;

use etcd_client::{EventType, GetOptions, KeyValue, WatchOptions, WatchStream};
use kubeclient_machinery::GroupResource;
use tokio::sync::mpsc;

use super::super::{BackendError, Entry, Event, EventStream, Everything, StoredObject};
use super::watch::next_response;
use super::{EtcdBackend, Resend, keys, revision, stored, to_etcd};

/// How many decoded writes wait for a slow cache before the reading of etcd's stream
/// pauses.
const BUFFERED_EVENTS: usize = 1024;

impl EtcdBackend {
    /// The key of everything, ending in `/`: `/registry/`.
    fn everything_root(&self) -> String {
        format!("{}/", self.config.prefix.trim_end_matches('/'))
    }

    /// One page of every object under the prefix.
    pub(super) async fn list_everything_impl(
        &self,
        at: Option<u64>,
        start_after: Option<&str>,
        limit: usize,
    ) -> Result<Everything, BackendError> {
        let root = self.everything_root();
        let start = match start_after {
            Some(after) if after.starts_with(&root) => format!("{after}\0"),
            _ => root.clone(),
        };
        let mut options = GetOptions::new().with_range(keys::prefix_end(root.as_bytes()));
        if limit > 0 {
            options = options.with_limit(i64::try_from(limit).unwrap_or(i64::MAX));
        }
        let response = self.read_at(start, options, at).await?;
        let read_at = response.header().map_or(0, |h| revision(h.revision()));
        let entries = response
            .kvs()
            .iter()
            .filter_map(|kv| locate(&root, kv, kv))
            .map(|(resource, key, object)| Entry {
                resource,
                key,
                object,
            })
            .collect();
        let continue_after = if response.more() {
            response
                .kvs()
                .last()
                .map(|kv| String::from_utf8_lossy(kv.key()).into_owned())
        } else {
            None
        };
        Ok(Everything {
            revision: at.filter(|at| *at > 0).unwrap_or(read_at),
            entries,
            continue_after,
        })
    }

    /// A watch of every key under the prefix after revision `after`.
    pub(super) async fn watch_everything_impl(
        &self,
        after: u64,
    ) -> Result<EventStream, BackendError> {
        let root = self.everything_root();
        let options = WatchOptions::new()
            .with_prefix()
            .with_prev_key()
            .with_start_revision(to_etcd(after.saturating_add(1)));
        let context = format!("watching {root}");
        let stream = self
            .call(&context, Resend::Safe, |mut client| {
                let (root, options) = (root.clone(), options.clone());
                async move { client.watch(root, Some(options)).await }
            })
            .await?;
        let (sender, receiver) = mpsc::channel(BUFFERED_EVENTS);
        let pump = tokio::spawn(pump(stream, root, after, sender));
        Ok(EventStream::channel(receiver, pump))
    }
}

/// The resource and key of `kv` under `root`, with the decoded object of `typed`: the
/// value whose `apiVersion` names the group of a built-in resource (the key's own value,
/// or for a delete the previous one). `None`, reported, for a key that names no object
/// or a value that does not decode.
fn locate(
    root: &str,
    kv: &KeyValue,
    typed: &KeyValue,
) -> Option<(GroupResource, String, Arc<StoredObject>)> {
    let full = String::from_utf8_lossy(kv.key());
    let (named_group, resource, key) = keys::parse(full.strip_prefix(root)?)?;
    let object = match stored(&full, typed.value(), typed.mod_revision()) {
        Ok(object) => object,
        Err(error) => {
            let error = kubeclient_machinery::ErrorChain(&error).to_string();
            tracing::warn!(%error, "skipping a stored object");
            return None;
        }
    };
    let resource = keys::group_resource(named_group, resource, &object.value);
    Some((resource, key.to_owned(), object))
}

/// Reads etcd's watch responses and sends their writes, until either side ends.
async fn pump(
    mut stream: WatchStream,
    root: String,
    after: u64,
    sender: mpsc::Sender<Result<Event, BackendError>>,
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
            let Some(kv) = event.kv() else { continue };
            let rv = revision(kv.mod_revision());
            let parsed = match event.event_type() {
                EventType::Put => locate(&root, kv, kv)
                    .map(|(resource, key, object)| (resource, key, Some(object))),
                EventType::Delete => match event.prev_kv() {
                    Some(prev) => {
                        locate(&root, kv, prev).map(|(resource, key, _)| (resource, key, None))
                    }
                    None => {
                        tracing::warn!(key = %String::from_utf8_lossy(kv.key()), "etcd sent a delete without the deleted value; skipping it");
                        None
                    }
                },
            };
            let Some((resource, key, object)) = parsed else {
                continue;
            };
            let event = Event {
                rv,
                resource,
                key,
                object,
            };
            if sender.send(Ok(event)).await.is_err() {
                return;
            }
        }
    }
}
