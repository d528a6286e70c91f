//! Watch responses as a `Stream` of [`WatchEvent`]s, decoded on worker threads when events
//! arrive in bursts.

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

/// Read at most this much already-arrived body before handing a batch to the decoders.
const MAX_BATCH_BYTES: usize = 256 * 1024;

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

    /// Moves every complete event into `batch`.
    fn drain_into(&mut self, batch: &mut LineBatch) {
        let mut add = |frame: std::result::Result<&[u8], WatchDecodeError>| {
            batch.lines.push(frame.map(|line| {
                let start = batch.bytes.len();
                batch.bytes.extend_from_slice(line);
                start..batch.bytes.len()
            }));
        };
        match self {
            Framing::Lines(lines) => {
                while let Some(frame) = lines.next_frame() {
                    add(frame);
                }
            }
            Framing::Protobuf(frames) => {
                while let Some(frame) = frames.next_frame() {
                    add(frame.map_err(WatchDecodeError::Protobuf));
                }
            }
        }
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
    /// The body has ended (cleanly or not); only decoding is left.
    ended: bool,
    /// How long the body may stay silent.
    idle_limit: Option<Duration>,
}

impl<K: DeserializeOwned + Send + 'static> State<K> {
    /// Hands every complete line received so far to the decoders, as one batch.
    fn submit_lines(&mut self) {
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
        let strip = self.strip;
        self.decoding.submit(
            batch.bytes.len(),
            move || decode_lines(batch, strip),
            |message| Err(Error::InvalidRequest(message)),
        );
    }

    /// Appends an item after everything already queued.
    fn submit_result(&mut self, result: Result<WatchEvent<K>>) {
        self.decoding.submit(
            0,
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
            if taken >= MAX_BATCH_BYTES {
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

fn decode_lines<K: DeserializeOwned>(batch: LineBatch, strip: bool) -> Vec<Result<WatchEvent<K>>> {
    let LineBatch {
        bytes,
        lines,
        protobuf,
    } = batch;
    lines
        .into_iter()
        .map(|line| {
            let line = &bytes[line?];
            let event = match (protobuf, strip) {
                (true, strip) => WatchEvent::from_protobuf(line, strip),
                (false, true) => WatchEvent::from_json_stripped(line),
                (false, false) => WatchEvent::from_json(line),
            };
            event.map_err(Error::from)
        })
        .collect()
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
    decoded_event_stream(body, url, false, false, None)
}

pub(crate) fn decoded_event_stream<K>(
    body: Incoming,
    url: String,
    protobuf: bool,
    strip: bool,
    idle_limit: Option<Duration>,
) -> impl Stream<Item = Result<WatchEvent<K>>> + Send
where
    K: DeserializeOwned + Send + 'static,
{
    let state = State {
        body,
        lines: if protobuf {
            Framing::Protobuf(WatchFrameDecoder::new())
        } else {
            Framing::Lines(WatchStreamDecoder::new())
        },
        decoding: OrderedDecoder::new(),
        ready: VecDeque::new(),
        url,
        strip,
        ended: false,
        idle_limit,
    };
    futures_util::stream::unfold(state, |mut state| async move {
        loop {
            if let Some(event) = state.ready.pop_front() {
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

/// The `timeoutSeconds` of a request path's query, if any.
fn timeout_seconds(path: &str) -> Option<u64> {
    let (_, query) = path.split_once('?')?;
    form_urlencoded::parse(query.as_bytes())
        .find(|(name, _)| name == "timeoutSeconds")
        .and_then(|(_, value)| value.parse().ok())
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
        let idle_limit = timeout_seconds(&request.path)
            .and_then(|seconds| Duration::from_secs(seconds).checked_add(self.watch_idle_margin()));
        let response = self.send(&request).await?;
        let protobuf = super::is_protobuf(
            response
                .headers()
                .get(http::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok()),
        );
        Ok(Box::pin(decoded_event_stream(
            response.into_body(),
            url,
            protobuf,
            strip_managed_fields,
            idle_limit,
        )))
    }
}
