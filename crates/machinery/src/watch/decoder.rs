//! [`WatchStreamDecoder`]: splits a watch response body into events, chunk by chunk.

use serde::de::DeserializeOwned;

use super::{WatchDecodeError, WatchEvent};

/// The default limit on one event: generous next to the API server's own 3 MiB request
/// limit and etcd's 1.5 MiB object limit, and small enough that a server that never sends a
/// newline cannot make the client buffer without bound.
const DEFAULT_MAX_EVENT_LEN: usize = 16 * 1024 * 1024;

/// Turns the bytes of a watch response body into events, whatever the chunking: an event
/// split across many chunks waits for its end; many events in one chunk come out one by
/// one. Events are newline-delimited, as every API server writes them; blank lines are
/// skipped.
///
/// A line that fails to decode yields one error and decoding goes on with the next line,
/// so one bad event never hides the ones after it. A line longer than the limit
/// yields one [`WatchDecodeError::TooLarge`] and is skipped up to its newline.
///
/// Invariants: `start <= scan_from <= buf.len()`; `buf[start..scan_from]` holds no newline.
///
/// # Examples
///
/// ```
/// use kubeclient_machinery::{DynamicObject, WatchEvent, WatchStreamDecoder};
///
/// let mut decoder = WatchStreamDecoder::new();
/// decoder.push(br#"{"type":"ADDED","object":{"metadata":{"name":"a"}}}
/// {"type":"DELE"#);
/// assert!(matches!(decoder.next_event::<DynamicObject>(), Some(Ok(WatchEvent::Added(_)))));
/// assert!(decoder.next_event::<DynamicObject>().is_none()); // the second event is incomplete
/// decoder.push(br#"TED","object":{"metadata":{"name":"a"}}}"#);
/// decoder.push(b"\n");
/// assert!(matches!(decoder.next_event::<DynamicObject>(), Some(Ok(WatchEvent::Deleted(_)))));
/// ```
#[derive(Debug)]
pub struct WatchStreamDecoder {
    /// Received bytes not yet handed out (from `start` on).
    buf: Vec<u8>,
    /// Start of the first line not yet handed out.
    start: usize,
    /// Where the search for the next newline resumes, so bytes fed one at a time are
    /// scanned once, not once per push.
    scan_from: usize,
    /// The longest line accepted.
    max_event_len: usize,
    /// Inside a line that was too long: drop bytes up to its newline.
    discarding: bool,
}

impl Default for WatchStreamDecoder {
    fn default() -> Self {
        WatchStreamDecoder::new()
    }
}

impl WatchStreamDecoder {
    /// A decoder with the default 16 MiB limit per event.
    #[must_use]
    pub fn new() -> Self {
        WatchStreamDecoder {
            buf: Vec::new(),
            start: 0,
            scan_from: 0,
            max_event_len: DEFAULT_MAX_EVENT_LEN,
            discarding: false,
        }
    }

    /// This decoder with a different limit on the size of one event.
    #[must_use]
    pub fn with_max_event_len(mut self, max_event_len: usize) -> Self {
        self.max_event_len = max_event_len;
        self
    }

    /// Appends a chunk of the body.
    pub fn push(&mut self, chunk: &[u8]) {
        if self.start > 0 && self.start * 2 >= self.buf.len() {
            // Reclaim consumed space once it is at least half the buffer: amortised O(1)
            // per byte.
            self.buf.drain(..self.start);
            self.scan_from -= self.start;
            self.start = 0;
        }
        self.buf.extend_from_slice(chunk);
    }

    /// Bytes received but not yet handed out as events.
    #[must_use]
    pub fn buffered_len(&self) -> usize {
        self.buf.len() - self.start
    }

    /// The next complete line (without its newline), skipping blank lines; `None` when
    /// the buffered bytes hold no complete line.
    ///
    /// # Errors
    ///
    /// [`WatchDecodeError::TooLarge`] once for a line longer than the limit.
    pub fn next_frame(&mut self) -> Option<Result<&[u8], WatchDecodeError>> {
        loop {
            match memchr::memchr(b'\n', &self.buf[self.scan_from..]) {
                Some(offset) => {
                    let line_start = self.start;
                    let line_end = self.scan_from + offset;
                    self.start = line_end + 1;
                    self.scan_from = self.start;
                    if self.discarding {
                        self.discarding = false;
                        continue;
                    }
                    let line = &self.buf[line_start..line_end];
                    if line.iter().all(u8::is_ascii_whitespace) {
                        continue;
                    }
                    return Some(Ok(line));
                }
                None => {
                    self.scan_from = self.buf.len();
                    if self.discarding {
                        self.start = self.buf.len();
                        self.scan_from = self.start;
                        return None;
                    }
                    if self.buf.len() - self.start > self.max_event_len {
                        self.discarding = true;
                        self.start = self.buf.len();
                        self.scan_from = self.start;
                        return Some(Err(WatchDecodeError::TooLarge {
                            max: self.max_event_len,
                        }));
                    }
                    return None;
                }
            }
        }
    }

    /// The next complete event; `None` when the buffered bytes hold no complete line.
    ///
    /// # Errors
    ///
    /// A [`WatchDecodeError`] for a line that is not a valid event; the next call goes on
    /// with the following line.
    pub fn next_event<K: DeserializeOwned>(
        &mut self,
    ) -> Option<Result<WatchEvent<K>, WatchDecodeError>> {
        Some(self.next_frame()?.and_then(WatchEvent::from_json))
    }

    /// Call when the body has ended: the unterminated last line, if it holds anything but
    /// whitespace, as an event (a server that closes without a final newline loses
    /// nothing). Clears the decoder.
    ///
    /// # Errors
    ///
    /// A [`WatchDecodeError`] when that last line is not a valid event (typically a stream
    /// cut off mid-event).
    pub fn finish<K: DeserializeOwned>(
        &mut self,
    ) -> Option<Result<WatchEvent<K>, WatchDecodeError>> {
        let rest = &self.buf[self.start..];
        let result = if self.discarding || rest.iter().all(u8::is_ascii_whitespace) {
            None
        } else {
            Some(WatchEvent::from_json(rest))
        };
        self.buf.clear();
        self.start = 0;
        self.scan_from = 0;
        self.discarding = false;
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DynamicObject, Object};

    fn body() -> Vec<u8> {
        let mut body = Vec::new();
        for i in 0..5 {
            body.extend_from_slice(
                format!(
                    r#"{{"type":"ADDED","object":{{"kind":"ConfigMap","apiVersion":"v1","metadata":{{"name":"cm-{i}","resourceVersion":"{}"}},"data":{{"k":"é {i}"}}}}}}"#,
                    10 + i
                )
                .as_bytes(),
            );
            body.push(b'\n');
        }
        body.extend_from_slice(br#"{"type":"BOOKMARK","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"20"}}}"#);
        body.extend_from_slice(b"\n\n");
        body.extend_from_slice(br#"{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"gone","reason":"Expired","code":410}}"#);
        body.push(b'\n');
        body
    }

    /// Decodes `body` fed in chunks of `chunk_len` bytes; returns a short description per event.
    fn decode_in_chunks(body: &[u8], chunk_len: usize) -> Vec<String> {
        let mut decoder = WatchStreamDecoder::new();
        let mut seen = Vec::new();
        for chunk in body.chunks(chunk_len) {
            decoder.push(chunk);
            while let Some(event) = decoder.next_event::<DynamicObject>() {
                seen.push(describe(event));
            }
        }
        if let Some(event) = decoder.finish::<DynamicObject>() {
            seen.push(describe(event));
        }
        seen
    }

    fn describe(event: Result<WatchEvent<DynamicObject>, WatchDecodeError>) -> String {
        match event {
            Ok(WatchEvent::Bookmark(b)) => format!("BOOKMARK {}", b.resource_version),
            Ok(WatchEvent::Error(s)) => format!("ERROR {}", s.code),
            Ok(e) => format!(
                "{} {}",
                e.type_name(),
                e.object().map(|o| o.name().to_owned()).unwrap_or_default()
            ),
            Err(err) => format!("error: {err}"),
        }
    }

    #[test]
    fn one_byte_at_a_time_and_all_at_once_give_the_same_events() {
        let body = body();
        let whole = decode_in_chunks(&body, body.len());
        assert_eq!(
            whole,
            [
                "ADDED cm-0",
                "ADDED cm-1",
                "ADDED cm-2",
                "ADDED cm-3",
                "ADDED cm-4",
                "BOOKMARK 20",
                "ERROR 410"
            ]
        );
        for chunk_len in [1, 2, 3, 7, 64, 100] {
            assert_eq!(
                decode_in_chunks(&body, chunk_len),
                whole,
                "chunks of {chunk_len}"
            );
        }
    }

    #[test]
    fn a_malformed_line_is_reported_and_the_next_line_still_decodes() {
        let mut decoder = WatchStreamDecoder::new();
        decoder
            .push(b"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\"}}}\n{not json}\n");
        decoder.push(b"{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"a\"}}}\n");
        let events: Vec<String> = std::iter::from_fn(|| decoder.next_event::<DynamicObject>())
            .map(describe)
            .collect();
        assert_eq!(events.len(), 3);
        assert_eq!(events[0], "ADDED a");
        assert!(
            events[1].starts_with("error: malformed watch event"),
            "{}",
            events[1]
        );
        assert!(events[1].contains("{not json}"), "{}", events[1]);
        assert_eq!(events[2], "MODIFIED a");
    }

    #[test]
    fn a_last_line_without_newline_is_decoded_by_finish() {
        let mut decoder = WatchStreamDecoder::new();
        decoder.push(br#"{"type":"ADDED","object":{"metadata":{"name":"last"}}}"#);
        assert!(decoder.next_event::<DynamicObject>().is_none());
        assert_eq!(describe(decoder.finish().unwrap()), "ADDED last");
        assert!(decoder.finish::<DynamicObject>().is_none());
    }

    #[test]
    fn a_stream_cut_mid_event_is_an_error_at_finish() {
        let mut decoder = WatchStreamDecoder::new();
        decoder.push(br#"{"type":"ADDED","object":{"metad"#);
        assert!(decoder.finish::<DynamicObject>().unwrap().is_err());
    }

    #[test]
    fn an_oversized_event_is_skipped_with_one_error() {
        let mut decoder = WatchStreamDecoder::new().with_max_event_len(64);
        let big = format!(
            r#"{{"type":"ADDED","object":{{"metadata":{{"name":"{}"}}}}}}"#,
            "x".repeat(200)
        );
        for chunk in big.as_bytes().chunks(10) {
            decoder.push(chunk);
            if let Some(result) = decoder.next_event::<DynamicObject>() {
                assert!(matches!(
                    result,
                    Err(WatchDecodeError::TooLarge { max: 64 })
                ));
            }
        }
        assert!(
            decoder.buffered_len() <= 64 + 10,
            "oversized event must not be buffered"
        );
        decoder.push(b"\n{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"ok\"}}}\n");
        assert_eq!(describe(decoder.next_event().unwrap()), "ADDED ok");
        assert!(decoder.next_event::<DynamicObject>().is_none());
    }

    #[test]
    fn crlf_and_blank_lines_are_tolerated() {
        let mut decoder = WatchStreamDecoder::new();
        decoder
            .push(b"\r\n  \n{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\"}}}\r\n");
        assert_eq!(describe(decoder.next_event().unwrap()), "ADDED a");
        assert!(decoder.next_event::<DynamicObject>().is_none());
    }
}
