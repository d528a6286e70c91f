//! Pod logs (`GET .../pods/{name}/log`, `kubectl logs`): the whole log at once, or a
//! stream of lines that follows the log until the server ends it.

use std::collections::VecDeque;

use bytes::{Bytes, BytesMut};
use futures_util::Stream;
use http_body_util::BodyExt as _;
use hyper::body::Incoming;
use k8s_openapi::api::core::v1::Pod;

use super::Api;
use crate::error::{Error, Result, StreamError};
use crate::rest::Request;

/// The longest line [`Api::log_stream`] yields whole; longer lines come in pieces of this
/// size, so a log without line breaks cannot grow memory without bound.
pub const MAX_LOG_LINE: usize = 1024 * 1024;

/// Which part of a container's log to read (`PodLogOptions`).
///
/// # Examples
///
/// ```
/// use kubeclient::api::LogParams;
///
/// let params = LogParams::default().container("main").tail_lines(100).timestamps();
/// assert_eq!(params.tail_lines, Some(100));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[must_use]
pub struct LogParams {
    /// The container (may be left out when the Pod has one).
    pub container: Option<String>,
    /// Keep the stream open and send lines as they are written.
    pub follow: bool,
    /// The previous, terminated instance of the container.
    pub previous: bool,
    /// Only lines newer than this many seconds.
    pub since_seconds: Option<i64>,
    /// Only lines newer than this RFC 3339 time (exclusive with `since_seconds`).
    pub since_time: Option<String>,
    /// Only the last this many lines (of the existing log, with `follow`).
    pub tail_lines: Option<i64>,
    /// At most this many bytes (the last line may be cut).
    pub limit_bytes: Option<i64>,
    /// Prefix each line with its RFC 3339 time and a space.
    pub timestamps: bool,
}

impl LogParams {
    /// The container to read.
    pub fn container(mut self, name: impl Into<String>) -> Self {
        self.container = Some(name.into());
        self
    }

    /// Follow the log.
    pub fn follow(mut self) -> Self {
        self.follow = true;
        self
    }

    /// Read the previous instance.
    pub fn previous(mut self) -> Self {
        self.previous = true;
        self
    }

    /// Only lines newer than `seconds`.
    pub fn since_seconds(mut self, seconds: i64) -> Self {
        self.since_seconds = Some(seconds);
        self
    }

    /// Only lines newer than an RFC 3339 time.
    pub fn since_time(mut self, time: impl Into<String>) -> Self {
        self.since_time = Some(time.into());
        self
    }

    /// Only the last `lines` lines.
    pub fn tail_lines(mut self, lines: i64) -> Self {
        self.tail_lines = Some(lines);
        self
    }

    /// At most `bytes` bytes.
    pub fn limit_bytes(mut self, bytes: i64) -> Self {
        self.limit_bytes = Some(bytes);
        self
    }

    /// Prefix lines with timestamps.
    pub fn timestamps(mut self) -> Self {
        self.timestamps = true;
        self
    }

    fn query(&self) -> Vec<(&'static str, String)> {
        let mut query = Vec::new();
        if let Some(container) = &self.container {
            query.push(("container", container.clone()));
        }
        for (name, enabled) in [
            ("follow", self.follow),
            ("previous", self.previous),
            ("timestamps", self.timestamps),
        ] {
            if enabled {
                query.push((name, "true".to_owned()));
            }
        }
        for (name, value) in [
            ("sinceSeconds", self.since_seconds),
            ("tailLines", self.tail_lines),
            ("limitBytes", self.limit_bytes),
        ] {
            if let Some(value) = value {
                query.push((name, value.to_string()));
            }
        }
        if let Some(time) = &self.since_time {
            query.push(("sinceTime", time.clone()));
        }
        query
    }
}

impl Api<Pod> {
    /// Reads a container's log as text (`kubectl logs`). With `follow` this waits until
    /// the server ends the log; use [`log_stream`](Self::log_stream) to see lines as they
    /// come.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn run(pods: kubeclient::Api<k8s_openapi::api::core::v1::Pod>) -> kubeclient::Result<()> {
    /// use kubeclient::api::LogParams;
    ///
    /// let text = pods.logs("web-0", &LogParams::default().tail_lines(10)).await?;
    /// print!("{text}");
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Api`] (404 for a missing Pod, 400 for a missing or unknown container,
    /// 422 for invalid options); transport errors. Invalid UTF-8 is replaced.
    pub async fn logs(&self, name: &str, params: &LogParams) -> Result<String> {
        let mut request = self.log_request(name, params);
        if params.follow {
            request = request.streaming();
        }
        let bytes = self.client.request_bytes(request).await?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// Streams a container's log line by line (without the line breaks). With `follow`,
    /// the stream stays open and yields lines as the container writes them, and ends when
    /// the server ends the log (the container terminated, the Pod went away).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn run(pods: kubeclient::Api<k8s_openapi::api::core::v1::Pod>) -> kubeclient::Result<()> {
    /// use futures_util::TryStreamExt;
    /// use kubeclient::api::LogParams;
    ///
    /// let mut lines = std::pin::pin!(pods.log_stream("web-0", &LogParams::default().follow()).await?);
    /// while let Some(line) = lines.try_next().await? {
    ///     println!("{line}");
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// As [`logs`](Self::logs) to open the stream; a broken connection later is an
    /// [`Error::Stream`] item.
    pub async fn log_stream(
        &self,
        name: &str,
        params: &LogParams,
    ) -> Result<impl Stream<Item = Result<String>> + Send + use<>> {
        let request = self.log_request(name, params).streaming();
        let url = format!("{}{}", self.client.base_url(), request.path);
        let response = self.client.send(&request).await?;
        let reader = LineReader {
            body: response.into_body(),
            buffer: BytesMut::new(),
            ready: VecDeque::new(),
            ended: false,
            url,
        };
        Ok(futures_util::stream::unfold(
            reader,
            |mut reader| async move { reader.next_line().await.map(|line| (line, reader)) },
        ))
    }

    fn log_request(&self, name: &str, params: &LogParams) -> Request {
        let query = params.query();
        Request::get(self.item(name, Some("log")))
            .query(&super::query_pairs(&query))
            .accept("*/*")
    }
}

/// Splits a streamed body into lines.
struct LineReader {
    body: Incoming,
    /// Bytes after the last line break.
    buffer: BytesMut,
    /// Lines split off and not yet yielded.
    ready: VecDeque<String>,
    ended: bool,
    url: String,
}

impl LineReader {
    async fn next_line(&mut self) -> Option<Result<String>> {
        loop {
            if let Some(line) = self.ready.pop_front() {
                return Some(Ok(line));
            }
            if self.ended {
                if self.buffer.is_empty() {
                    return None;
                }
                let rest = self.buffer.split();
                return Some(Ok(String::from_utf8_lossy(&rest).into_owned()));
            }
            match self.body.frame().await {
                None => self.ended = true,
                Some(Err(err)) => {
                    self.ended = true;
                    self.buffer.clear();
                    return Some(Err(Error::Stream {
                        url: self.url.clone(),
                        source: StreamError::Body(err.to_string()),
                    }));
                }
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        self.push(&data);
                    }
                }
            }
        }
    }

    fn push(&mut self, data: &Bytes) {
        self.buffer.extend_from_slice(data);
        while let Some(newline) = self.buffer.iter().position(|b| *b == b'\n') {
            let line = self.buffer.split_to(newline + 1);
            let text = &line[..newline];
            let text = text.strip_suffix(b"\r").unwrap_or(text);
            self.ready
                .push_back(String::from_utf8_lossy(text).into_owned());
        }
        while self.buffer.len() >= MAX_LOG_LINE {
            let piece = self.buffer.split_to(MAX_LOG_LINE);
            self.ready
                .push_back(String::from_utf8_lossy(&piece).into_owned());
        }
    }
}
