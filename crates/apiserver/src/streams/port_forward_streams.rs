//! The streams of one SPDY port-forward connection ([`Streams`]): which are open, which
//! pairs (error + data stream of one forwarded connection) are still incomplete, and which
//! forwards run. Kept apart from the I/O so that its bounds can be tested directly:
//!
//! - at most [`MAX_STREAMS`] streams are open, and a stream counts until it is reset or its
//!   forward ends: resetting streams frees their slots and their buffers, nothing else;
//! - data sent on a data stream before its pair is complete is kept (up to
//!   [`EARLY_CHUNKS`] chunks per stream, [`MAX_EARLY_BYTES`] per connection) and freed
//!   when the stream is reset; beyond the budget the stream is refused.

use std::collections::HashMap;

use bytes::Bytes;
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

/// The most streams one connection may have open (two per forwarded connection).
pub(super) const MAX_STREAMS: usize = 1024;
/// The most data chunks kept for one data stream whose pair is incomplete.
pub(super) const EARLY_CHUNKS: usize = 8;
/// The most bytes kept for all incomplete pairs of one connection.
pub(super) const MAX_EARLY_BYTES: usize = 4 * 1024 * 1024;

/// The kind of a port-forward stream (`streamtype` header).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    /// Carries the forwarded bytes.
    Data,
    /// Carries the failure message, if any, then ends.
    Error,
}

/// A stream the client opened.
struct Stream {
    request_id: String,
    /// Where data from the client goes (data streams, once forwarding started).
    to_target: Option<mpsc::Sender<Bytes>>,
}

/// The two streams of one forwarded connection, as they arrive.
#[derive(Default)]
struct Pair {
    port: u16,
    error: Option<u32>,
    data: Option<u32>,
    /// Data the client sent before the pair was complete.
    early: Vec<Bytes>,
    /// The client finished the data stream before the pair was complete.
    data_fin: bool,
}

impl Pair {
    fn early_bytes(&self) -> usize {
        self.early.iter().map(Bytes::len).sum()
    }
}

/// A forward in progress.
struct Running {
    data: u32,
    error: u32,
    abort: AbortHandle,
}

/// A pair just completed: what its forward needs.
pub(super) struct Complete {
    /// The request id both streams carry.
    pub(super) request_id: String,
    /// The port to forward to.
    pub(super) port: u16,
    /// The data stream.
    pub(super) data: u32,
    /// The error stream.
    pub(super) error: u32,
    /// Data from the client, early data first.
    pub(super) from_client: mpsc::Receiver<Bytes>,
}

/// What opening a stream led to.
pub(super) enum Opened {
    /// Over [`MAX_STREAMS`]: reset it as refused.
    Refused,
    /// Accepted; its pair is not complete yet.
    Waiting,
    /// Accepted, and its pair is complete: start the forward, then
    /// [`Streams::started`].
    Complete(Complete),
}

/// What to do with data a client sent on a stream.
pub(super) enum Delivery {
    /// Send it to the forward (awaiting the queue: back-pressure on the client).
    Forward(mpsc::Sender<Bytes>),
    /// Kept until the pair completes, or dropped (unknown stream, error stream).
    Done,
    /// Over the early-data budget: reset the stream (its buffer is freed already).
    Refuse,
}

/// The streams of one connection.
///
/// Invariants: every stream id in `pairs` or `running` is in `streams`, and a request id
/// is in at most one of `pairs` and `running`; `early_bytes` is the sum of the early
/// bytes of `pairs`, at most [`MAX_EARLY_BYTES`]; `streams.len() <= MAX_STREAMS`.
#[derive(Default)]
pub(super) struct Streams {
    streams: HashMap<u32, Stream>,
    pairs: HashMap<String, Pair>,
    running: HashMap<String, Running>,
    early_bytes: usize,
}

impl Streams {
    /// A SYN_STREAM of `kind` for `port` and `request_id`.
    pub(super) fn open(
        &mut self,
        stream_id: u32,
        request_id: &str,
        kind: Kind,
        port: u16,
        fin: bool,
    ) -> Opened {
        if self.streams.len() >= MAX_STREAMS || self.running.contains_key(request_id) {
            return Opened::Refused;
        }
        if let Some(replaced) = self.streams.insert(
            stream_id,
            Stream {
                request_id: request_id.to_owned(),
                to_target: None,
            },
        ) {
            // A reused stream id: whatever the old one held goes.
            self.forget_in_pair(stream_id, &replaced.request_id);
        }
        let pair = self.pairs.entry(request_id.to_owned()).or_default();
        pair.port = port;
        let previous = match kind {
            Kind::Data => {
                pair.data_fin |= fin;
                pair.data.replace(stream_id)
            }
            Kind::Error => pair.error.replace(stream_id),
        };
        if let Some(previous) = previous.filter(|id| *id != stream_id) {
            // A second stream of the same kind for the request replaces the first.
            if kind == Kind::Data {
                self.early_bytes -= pair.early_bytes();
                pair.early.clear();
            }
            self.streams.remove(&previous);
        }
        let (Some(error), Some(data)) = (pair.error, pair.data) else {
            return Opened::Waiting;
        };
        let Some(pair) = self.pairs.remove(request_id) else {
            return Opened::Waiting;
        };
        self.early_bytes -= pair.early_bytes();
        let (sender, from_client) = mpsc::channel(EARLY_CHUNKS);
        for chunk in pair.early {
            let _ = sender.try_send(chunk);
        }
        if !pair.data_fin
            && let Some(stream) = self.streams.get_mut(&data)
        {
            stream.to_target = Some(sender);
        }
        Opened::Complete(Complete {
            request_id: request_id.to_owned(),
            port: pair.port,
            data,
            error,
            from_client,
        })
    }

    /// The forward of a completed pair runs (`abort` stops it when a stream is reset).
    pub(super) fn started(&mut self, complete: &Complete, abort: AbortHandle) {
        self.running.insert(
            complete.request_id.clone(),
            Running {
                data: complete.data,
                error: complete.error,
                abort,
            },
        );
    }

    /// Data on a stream.
    pub(super) fn data(&mut self, stream_id: u32, data: Bytes, fin: bool) -> Delivery {
        let Some(stream) = self.streams.get_mut(&stream_id) else {
            return Delivery::Done;
        };
        if let Some(sender) = &stream.to_target {
            let sender = sender.clone();
            if fin {
                // Half-close: the target sees EOF once the queue drains.
                stream.to_target = None;
            }
            return if data.is_empty() {
                Delivery::Done
            } else {
                Delivery::Forward(sender)
            };
        }
        let request_id = stream.request_id.clone();
        let Some(pair) = self.pairs.get_mut(&request_id) else {
            return Delivery::Done;
        };
        if pair.data != Some(stream_id) {
            return Delivery::Done;
        }
        pair.data_fin |= fin;
        if data.is_empty() {
            return Delivery::Done;
        }
        if pair.early.len() >= EARLY_CHUNKS || self.early_bytes + data.len() > MAX_EARLY_BYTES {
            self.reset(stream_id);
            return Delivery::Refuse;
        }
        self.early_bytes += data.len();
        pair.early.push(data);
        Delivery::Done
    }

    /// The data stream's queue to the target closed: drop further data.
    pub(super) fn target_gone(&mut self, stream_id: u32) {
        if let Some(stream) = self.streams.get_mut(&stream_id) {
            stream.to_target = None;
        }
    }

    /// A RST_STREAM (from the client, or ours): the stream goes with what it buffered; a
    /// running forward it belongs to is stopped and both its streams go.
    pub(super) fn reset(&mut self, stream_id: u32) {
        let Some(stream) = self.streams.remove(&stream_id) else {
            return;
        };
        if let Some(running) = self
            .running
            .get(&stream.request_id)
            .filter(|r| r.data == stream_id || r.error == stream_id)
        {
            running.abort.abort();
            let (data, error) = (running.data, running.error);
            self.running.remove(&stream.request_id);
            self.streams.remove(&data);
            self.streams.remove(&error);
            return;
        }
        self.forget_in_pair(stream_id, &stream.request_id);
    }

    /// The forward of `request_id` ended: its streams close.
    pub(super) fn finished(&mut self, request_id: &str) {
        if let Some(running) = self.running.remove(request_id) {
            self.streams.remove(&running.data);
            self.streams.remove(&running.error);
        }
    }

    /// Stops every running forward (the connection ends).
    pub(super) fn abort_all(&mut self) {
        for running in self.running.values() {
            running.abort.abort();
        }
    }

    /// Removes `stream_id` from the incomplete pair of `request_id`, freeing its early
    /// data; a pair left with no stream goes.
    fn forget_in_pair(&mut self, stream_id: u32, request_id: &str) {
        let Some(pair) = self.pairs.get_mut(request_id) else {
            return;
        };
        if pair.data == Some(stream_id) {
            self.early_bytes -= pair.early_bytes();
            pair.early.clear();
            pair.data = None;
            pair.data_fin = false;
        }
        if pair.error == Some(stream_id) {
            pair.error = None;
        }
        if pair.data.is_none() && pair.error.is_none() {
            self.pairs.remove(request_id);
        }
    }

    /// Open streams.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.streams.len()
    }

    /// Asserts the invariants.
    #[cfg(test)]
    fn check_invariants(&self) {
        let early: usize = self.pairs.values().map(Pair::early_bytes).sum();
        assert_eq!(early, self.early_bytes);
        assert!(self.early_bytes <= MAX_EARLY_BYTES);
        assert!(self.streams.len() <= MAX_STREAMS);
        for pair in self.pairs.values() {
            for id in pair.data.iter().chain(&pair.error) {
                assert!(self.streams.contains_key(id), "pair stream {id} is open");
            }
        }
        for (request_id, running) in &self.running {
            assert!(!self.pairs.contains_key(request_id));
            assert!(self.streams.contains_key(&running.data));
            assert!(self.streams.contains_key(&running.error));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resetting_unpaired_data_streams_frees_their_buffers() {
        let mut streams = Streams::default();
        for round in 0..80u32 {
            let id = round * 2 + 1;
            let request = round.to_string();
            assert!(matches!(
                streams.open(id, &request, Kind::Data, 80, false),
                Opened::Waiting
            ));
            for _ in 0..EARLY_CHUNKS {
                let _ = streams.data(id, Bytes::from(vec![0u8; 64 * 1024]), false);
            }
            streams.check_invariants();
            streams.reset(id);
            streams.check_invariants();
        }
        assert_eq!(streams.early_bytes, 0);
        assert!(streams.pairs.is_empty() && streams.len() == 0);
    }

    #[test]
    fn early_data_is_bounded_per_connection() {
        let mut streams = Streams::default();
        let chunk = Bytes::from(vec![0u8; 1024 * 1024]);
        let mut refused = 0;
        for id in 0..16u32 {
            let _ = streams.open(id, &id.to_string(), Kind::Data, 80, false);
            if matches!(streams.data(id, chunk.clone(), false), Delivery::Refuse) {
                refused += 1;
            }
            streams.check_invariants();
        }
        assert_eq!(refused, 16 - MAX_EARLY_BYTES / chunk.len());
    }

    #[test]
    fn resets_do_not_get_around_the_stream_cap() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let _guard = runtime.enter();
        let mut streams = Streams::default();
        let mut forwards = Vec::new();
        for n in 0..(MAX_STREAMS as u32 / 2) {
            let request = n.to_string();
            let _ = streams.open(n * 4 + 1, &request, Kind::Error, 80, false);
            let Opened::Complete(complete) =
                streams.open(n * 4 + 3, &request, Kind::Data, 80, false)
            else {
                panic!("pair {n} completes");
            };
            let task = runtime.spawn(std::future::pending::<()>());
            streams.started(&complete, task.abort_handle());
            forwards.push((task, complete.from_client));
        }
        streams.check_invariants();
        assert!(matches!(
            streams.open(90_001, "extra", Kind::Error, 80, false),
            Opened::Refused
        ));
        // Resetting a running forward's streams stops the forward and frees both slots.
        streams.reset(1);
        streams.check_invariants();
        assert_eq!(streams.len(), MAX_STREAMS - 2);
        runtime.block_on(async {
            let (task, _) = forwards.remove(0);
            assert!(task.await.unwrap_err().is_cancelled());
        });
        assert!(matches!(
            streams.open(90_001, "extra", Kind::Error, 80, false),
            Opened::Waiting
        ));
        streams.check_invariants();
    }

    #[test]
    fn early_data_reaches_the_forward_first() {
        let mut streams = Streams::default();
        let _ = streams.open(3, "r", Kind::Data, 80, false);
        let _ = streams.data(3, Bytes::from_static(b"early"), false);
        let Opened::Complete(mut complete) = streams.open(1, "r", Kind::Error, 80, false) else {
            panic!("the pair completes");
        };
        assert_eq!(complete.from_client.try_recv().unwrap(), "early");
        assert_eq!(streams.early_bytes, 0);
        assert!(matches!(
            streams.data(3, Bytes::from_static(b"late"), false),
            Delivery::Forward(_)
        ));
    }
}
