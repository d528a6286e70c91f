//! [`Watchers`]: the open watches of a disk backend, and how a committed change reaches
//! them. A watch is registered under the same lock as the writes commit under, with the
//! history after its revision queued first, so it never misses nor repeats a change. A
//! watcher whose queue is full (a consumer that stopped reading) is dropped: its stream
//! ends and its client watches again from the last revision it saw, as after any broken
//! watch.

use std::sync::Arc;

use kubeclient_machinery::GroupResource;
use tokio::sync::mpsc;

use super::super::{BackendError, Change, ChangeStream, Event, EventStream};
use super::history::{History, Record};

/// How many live changes wait for a slow consumer (beyond its replayed history).
const QUEUED_CHANGES: usize = 4096;

/// Which changes a watch wants, and where they go.
#[derive(Debug)]
enum Sink {
    /// The changes of the keys of one resource with a prefix.
    Resource {
        resource: GroupResource,
        prefix: String,
        sender: mpsc::Sender<Result<Arc<Change>, BackendError>>,
    },
    /// Every write (a watch cache's feed).
    Everything {
        sender: mpsc::Sender<Result<Event, BackendError>>,
    },
}

impl Sink {
    /// Queues `record` if the watch wants it; false when the watch is gone or full.
    fn offer(&self, record: &Record) -> bool {
        let sent = match self {
            Sink::Resource {
                resource,
                prefix,
                sender,
            } => {
                if record.resource != *resource || !record.change.key.starts_with(prefix.as_str()) {
                    return true;
                }
                sender.try_send(Ok(record.change.clone())).is_ok()
            }
            Sink::Everything { sender } => sender.try_send(Ok(event(record))).is_ok(),
        };
        if !sent {
            tracing::info!(
                rv = record.change.rv,
                "ending a disk-backend watch that fell behind; its client will re-watch"
            );
        }
        sent
    }
}

/// The write of `record` as the watch of everything yields it.
fn event(record: &Record) -> Event {
    Event {
        rv: record.change.rv,
        resource: record.resource.clone(),
        key: record.change.key.clone(),
        object: record.change.new.clone(),
    }
}

/// The open watches.
#[derive(Debug, Default)]
pub(super) struct Watchers {
    sinks: Vec<Sink>,
}

impl Watchers {
    /// Sends a committed change to every watch that wants it, dropping those that cannot
    /// take it.
    pub(super) fn send(&mut self, record: &Record) {
        self.sinks.retain(|sink| sink.offer(record));
    }

    /// A watch of the keys of `resource` with `prefix` after `after`: the history after it,
    /// then every later change.
    pub(super) fn watch(
        &mut self,
        history: &History,
        resource: &GroupResource,
        prefix: &str,
        after: u64,
    ) -> ChangeStream {
        let replay: Vec<_> = history
            .after(after)
            .filter(|r| r.resource == *resource && r.change.key.starts_with(prefix))
            .collect();
        let (sender, receiver) = mpsc::channel(replay.len() + QUEUED_CHANGES);
        let sink = Sink::Resource {
            resource: resource.clone(),
            prefix: prefix.to_owned(),
            sender,
        };
        if replay.iter().all(|record| sink.offer(record)) {
            self.sinks.push(sink);
        }
        ChangeStream::receiver(receiver)
    }

    /// A watch of every write after `after`: the history after it, then every later write.
    pub(super) fn watch_everything(&mut self, history: &History, after: u64) -> EventStream {
        let replay: Vec<_> = history.after(after).collect();
        let (sender, receiver) = mpsc::channel(replay.len() + QUEUED_CHANGES);
        let sink = Sink::Everything { sender };
        if replay.iter().all(|record| sink.offer(record)) {
            self.sinks.push(sink);
        }
        EventStream::receiver(receiver)
    }
}
