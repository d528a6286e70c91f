//! Watch responses as a `Stream` of [`WatchEvent`]s.
//!
//! Where events are decoded was measured (docs/BENCHMARKS.md, "Watch events decoded where
//! they are read"): handing each batch of a watch to a worker thread cost a third more CPU
//! per event than decoding it on the task that reads the body, for no more events per
//! second on two cores, because every hop wakes a thread and the decoded objects are
//! built in one thread's memory and dropped in another's. So changes are decoded where
//! they are read, in small batches; only the initial events of a watch-list (a whole
//! list, streamed) go to worker threads, as a LIST body does.

use std::collections::VecDeque;
use std::ops::Range;
use std::time::Duration;

use futures_util::{FutureExt as _, Stream};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use kubeclient_machinery::protobuf::WatchFrameDecoder;
use kubeclient_machinery::{WatchDecodeError, WatchEvent, WatchStreamDecoder};
use serde::de::DeserializeOwned;

use super::ordered_decode::OrderedDecoder;
use super::{Client, Request};
use crate::error::{Error, Result};

/// A stream of watch events (boxed, so it is `Unpin` and easy to store).
pub type WatchStream<K> = futures_util::stream::BoxStream<'static, Result<WatchEvent<K>>>;

/// Read at most this much already-arrived body before handing a batch to the workers.
const MAX_BATCH_BYTES: usize = 256 * 1024;
/// Read at most this much before decoding a batch on the reading task (a few dozen events:
/// the task never runs long without yielding).
const MAX_INLINE_BATCH_BYTES: usize = 64 * 1024;

/// Lines (or protobuf frames) of a watch body, copied out of the splitter so they can go
/// to a worker.
struct LineBatch {
    bytes: Vec<u8>,
    lines: Vec<std::result::Result<Range<usize>, WatchDecodeError>>,
    protobuf: bool,
}

/// How a watch body is split into events.
enum Framing {
    /// Newline-delimited JSON.
    Lines(WatchStreamDecoder),
    /// Length-prefixed protobuf frames (`application/vnd.kubernetes.protobuf;stream=watch`).
    Protobuf(WatchFrameDecoder),
}

impl Framing {
    fn push(&mut self, data: &[u8]) {
        match self {
            Framing::Lines(lines) => lines.push(data),
            Framing::Protobuf(frames) => frames.push(data),
        }
    }

    /// Hands every complete event, in order, to `each`.
    fn for_each_frame(
        &mut self,
        mut each: impl FnMut(std::result::Result<&[u8], WatchDecodeError>),
    ) {
        match self {
            Framing::Lines(lines) => {
                while let Some(frame) = lines.next_frame() {
                    each(frame);
                }
            }
            Framing::Protobuf(frames) => {
                while let Some(frame) = frames.next_frame() {
                    each(frame.map_err(WatchDecodeError::Protobuf));
                }
            }
        }
    }

    /// Moves every complete event into `batch`.
    fn drain_into(&mut self, batch: &mut LineBatch) {
        self.for_each_frame(|frame| {
            batch.lines.push(frame.map(|line| {
                let start = batch.bytes.len();
                batch.bytes.extend_from_slice(line);
                start..batch.bytes.len()
            }));
        });
    }

    /// What is left at the end of the body: a last unterminated JSON line, or a
    /// truncated protobuf frame.
    fn finish<K: DeserializeOwned>(&mut self) -> Option<Result<WatchEvent<K>>> {
        match self {
            Framing::Lines(lines) => lines.finish::<K>().map(|last| last.map_err(Error::from)),
            Framing::Protobuf(frames) => frames
                .finish()
                .err()
                .map(|err| Err(Error::from(WatchDecodeError::Protobuf(err)))),
        }
    }
}

struct State<K> {
    body: Incoming,
    lines: Framing,
    decoding: OrderedDecoder<Result<WatchEvent<K>>>,
    ready: VecDeque<Result<WatchEvent<K>>>,
    url: String,
    strip: bool,
    /// Decode batches on worker threads (the initial events of a watch-list) rather than
    /// on the reading task.
    parallel: bool,
    /// The body has ended (cleanly or not); only decoding is left.
    ended: bool,
    /// How long the body may stay silent.
    idle_limit: Option<Duration>,
}

impl<K: DeserializeOwned + Send + 'static> State<K> {
    /// Decodes every complete line received so far: on this task, straight from the
    /// splitter's buffer, or on workers as one batch.
    fn submit_lines(&mut self) {
        if !self.parallel {
            let strip = self.strip;
            let protobuf = matches!(self.lines, Framing::Protobuf(_));
            let lines = &mut self.lines;
            self.decoding.submit_inline(
                || {
                    let mut events = Vec::new();
                    lines.for_each_frame(|frame| {
                        events.push(
                            frame
                                .map_err(Error::from)
                                .and_then(|line| decode_line(line, protobuf, strip)),
                        );
                    });
                    events
                },
                |message| Err(Error::InvalidRequest(message)),
            );
            return;
        }
        let mut batch = LineBatch {
            bytes: Vec::new(),
            lines: Vec::new(),
            protobuf: matches!(self.lines, Framing::Protobuf(_)),
        };
        self.lines.drain_into(&mut batch);
        self.submit(batch);
    }

    fn submit(&mut self, batch: LineBatch) {
        if batch.lines.is_empty() {
            return;
        }
        let len = batch.bytes.len();
        let strip = self.strip;
        self.decoding.submit(
            len,
            move || decode_lines(batch, strip),
            |message| Err(Error::InvalidRequest(message)),
        );
    }

    /// Appends an item after everything already queued.
    fn submit_result(&mut self, result: Result<WatchEvent<K>>) {
        self.decoding.submit_inline(
            move || vec![result],
            |message| Err(Error::InvalidRequest(message)),
        );
    }

    /// Takes in a frame of the body and every frame that has already arrived after it, up
    /// to a batch's worth, then submits the complete lines.
    fn take_frames(
        &mut self,
        first: Option<std::result::Result<hyper::body::Frame<bytes::Bytes>, hyper::Error>>,
    ) {
        let mut next = first;
        let mut taken = 0usize;
        let limit = if self.parallel {
            MAX_BATCH_BYTES
        } else {
            MAX_INLINE_BATCH_BYTES
        };
        loop {
            match next {
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        taken += data.len();
                        self.lines.push(&data);
                    }
                }
                Some(Err(err)) => {
                    self.ended = true;
                    self.submit_lines();
                    let error = Error::transport(self.url.clone(), err);
                    self.submit_result(Err(error));
                    return;
                }
                None => {
                    self.ended = true;
                    self.submit_lines();
                    if let Some(last) = self.lines.finish::<K>() {
                        self.submit_result(last);
                    }
                    return;
                }
            }
            if taken >= limit {
                break;
            }
            match self.body.frame().now_or_never() {
                Some(frame) => next = frame,
                None => break,
            }
        }
        self.submit_lines();
    }
}

fn decode_lines<K: DeserializeOwned + 'static>(
    batch: LineBatch,
    strip: bool,
) -> Vec<Result<WatchEvent<K>>> {
    let LineBatch {
        bytes,
        lines,
        protobuf,
    } = batch;
    lines
        .into_iter()
        .map(|line| decode_line(&bytes[line?], protobuf, strip))
        .collect()
}

/// One event from its line (or protobuf frame).
fn decode_line<K: DeserializeOwned + 'static>(
    line: &[u8],
    protobuf: bool,
    strip: bool,
) -> Result<WatchEvent<K>> {
    let event = match (protobuf, strip) {
        (true, strip) => WatchEvent::from_protobuf(line, strip),
        (false, true) => WatchEvent::from_json_stripped(line),
        (false, false) => WatchEvent::from_json(line),
    };
    event.map_err(Error::from)
}

/// Decodes a watch response body into events as its bytes arrive. A malformed event
/// yields an error item and the stream goes on; a broken connection yields one error and
/// ends; a clean end of the body ends the stream. Events that arrive together are decoded
/// on worker threads, in order.
pub fn event_stream<K>(
    body: Incoming,
    url: String,
) -> impl Stream<Item = Result<WatchEvent<K>>> + Send
where
    K: DeserializeOwned + Send + 'static,
{
    decoded_event_stream(body, url, StreamOptions::default())
}

/// How [`decoded_event_stream`] reads a body.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct StreamOptions {
    /// Length-prefixed protobuf frames instead of JSON lines.
    pub(crate) protobuf: bool,
    /// Drop each object's `metadata.managedFields` from its bytes before decoding.
    pub(crate) strip: bool,
    /// The stream starts with a watch-list's initial events: decode them on worker
    /// threads until the initial-events-end bookmark.
    pub(crate) initial_events: bool,
    /// How long the body may stay silent.
    pub(crate) idle_limit: Option<Duration>,
}

pub(crate) fn decoded_event_stream<K>(
    body: Incoming,
    url: String,
    options: StreamOptions,
) -> impl Stream<Item = Result<WatchEvent<K>>> + Send
where
    K: DeserializeOwned + Send + 'static,
{
    let state = State {
        body,
        lines: if options.protobuf {
            Framing::Protobuf(WatchFrameDecoder::new())
        } else {
            Framing::Lines(WatchStreamDecoder::new())
        },
        decoding: OrderedDecoder::new(),
        ready: VecDeque::new(),
        url,
        strip: options.strip,
        parallel: options.initial_events,
        ended: false,
        idle_limit: options.idle_limit,
    };
    futures_util::stream::unfold(state, |mut state| async move {
        loop {
            if let Some(event) = state.ready.pop_front() {
                if let Ok(WatchEvent::Bookmark(bookmark)) = &event
                    && bookmark.is_initial_events_end()
                {
                    // The list part is over: from here on, changes.
                    state.parallel = false;
                }
                return Some((event, state));
            }
            if state.ended || state.decoding.is_full() {
                state.ready.extend(state.decoding.next().await?);
                continue;
            }
            let silent = async {
                match state.idle_limit {
                    Some(limit) => tokio::time::sleep(limit).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                biased;
                Some(batch) = state.decoding.next(), if !state.decoding.is_empty() => {
                    state.ready.extend(batch);
                }
                frame = state.body.frame() => state.take_frames(frame),
                () = silent => {
                    state.ended = true;
                    let seconds = state.idle_limit.map_or(0, |limit| limit.as_secs());
                    let error = Error::transport(
                        state.url.clone(),
                        format!("the watch sent nothing for {seconds} s, past its timeout; reconnecting"),
                    );
                    state.submit_result(Err(error));
                }
            }
        }
    })
}

/// The value of `name` in a request path's query, if any.
fn query_value(path: &str, name: &str) -> Option<String> {
    let (_, query) = path.split_once('?')?;
    form_urlencoded::parse(query.as_bytes())
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.into_owned())
}

impl Client {
    /// Opens a watch and returns its events as a stream. A watch with `timeoutSeconds`
    /// that stays silent past that by [`Config::watch_idle_margin`](crate::Config::watch_idle_margin)
    /// (30 s by default) ends with a transport error.
    ///
    /// # Errors
    ///
    /// The error of opening the watch (the stream then carries per-event errors).
    pub async fn watch<K>(&self, request: Request) -> Result<WatchStream<K>>
    where
        K: DeserializeOwned + Send + 'static,
    {
        self.watch_decoded(request, false).await
    }

    /// As [`watch`](Self::watch); with `strip_managed_fields`, each object's
    /// `metadata.managedFields` are dropped from its bytes before it is decoded.
    ///
    /// # Errors
    ///
    /// As [`watch`](Self::watch).
    pub async fn watch_decoded<K>(
        &self,
        request: Request,
        strip_managed_fields: bool,
    ) -> Result<WatchStream<K>>
    where
        K: DeserializeOwned + Send + 'static,
    {
        let request = request.streaming();
        let url = format!("{}{}", self.base_url(), request.path);
        let idle_limit = query_value(&request.path, "timeoutSeconds")
            .and_then(|seconds| seconds.parse().ok())
            .and_then(|seconds| Duration::from_secs(seconds).checked_add(self.watch_idle_margin()));
        let response = self.send(&request).await?;
        let protobuf = super::is_protobuf(
            response
                .headers()
                .get(http::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok()),
        );
        let options = StreamOptions {
            protobuf,
            strip: strip_managed_fields,
            initial_events: query_value(&request.path, "sendInitialEvents")
                .is_some_and(|value| value == "true"),
            idle_limit,
        };
        Ok(Box::pin(decoded_event_stream(
            response.into_body(),
            url,
            options,
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::query_value;

    #[test]
    fn query_values_are_read_decoded_and_only_by_their_exact_name() {
        let path =
            "/api/v1/pods?watch=true&sendInitialEvents=true&timeoutSeconds=300&label%20x=a%3Db";
        assert_eq!(
            query_value(path, "sendInitialEvents").as_deref(),
            Some("true")
        );
        assert_eq!(query_value(path, "timeoutSeconds").as_deref(), Some("300"));
        assert_eq!(query_value(path, "label x").as_deref(), Some("a=b"));
        assert_eq!(query_value(path, "timeout"), None);
        assert_eq!(query_value("/api/v1/pods", "watch"), None);
    }
}
