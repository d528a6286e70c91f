//! Protobuf watch streams (`application/vnd.kubernetes.protobuf;stream=watch`): each event
//! is a 4-byte big-endian length, then a `meta.v1.WatchEvent` (`type` = 1, `object` = 2, a
//! RawExtension whose `raw` holds the enveloped object). See apiserver-semantics §5.2.

use serde_json::{Map, Value};

use super::special::utf8;
use super::wire::{Reader, WireValue, put_len};
use super::{ProtobufError, envelope};

/// The largest frame [`WatchFrameDecoder`] accepts by default (16 MiB, twice the embedded
/// server's object limit and far above etcd's 1.5 MiB).
pub const DEFAULT_MAX_FRAME_BYTES: usize = 16 << 20;

/// Encodes one watch event as a frame: the length prefix, then the `WatchEvent` message.
///
/// ```
/// use kubeclient_machinery::protobuf::{WatchFrameDecoder, encode_watch_event};
///
/// let pod = serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"}});
/// let frame = encode_watch_event("ADDED", &pod)?;
/// let mut decoder = WatchFrameDecoder::new();
/// decoder.push(&frame);
/// let event = decoder.next_event().unwrap()?;
/// assert_eq!(event["type"], "ADDED");
/// assert_eq!(event["object"]["metadata"]["name"], "a");
/// # Ok::<(), kubeclient_machinery::protobuf::ProtobufError>(())
/// ```
///
/// # Errors
///
/// [`ProtobufError`] when the object is not a built-in kind or does not fit its schema.
#[doc(alias = "WatchEvent")]
pub fn encode_watch_event(event_type: &str, object: &Value) -> Result<Vec<u8>, ProtobufError> {
    let enveloped = envelope::encode(object)?;
    let mut raw_extension = Vec::with_capacity(enveloped.len() + 8);
    put_len(&mut raw_extension, 1, &enveloped);
    let mut event = Vec::with_capacity(raw_extension.len() + event_type.len() + 12);
    put_len(&mut event, 1, event_type.as_bytes());
    put_len(&mut event, 2, &raw_extension);
    let len = u32::try_from(event.len()).map_err(|_| ProtobufError::FrameTooLarge {
        len: event.len() as u64,
        max: u32::MAX as usize,
    })?;
    let mut frame = Vec::with_capacity(event.len() + 4);
    frame.extend_from_slice(&len.to_be_bytes());
    frame.extend_from_slice(&event);
    Ok(frame)
}

/// The `type` and the raw object bytes (usually an enveloped protobuf object) of one
/// `WatchEvent` message, without decoding the object.
///
/// # Errors
///
/// [`ProtobufError`] for bytes that are not a watch event.
pub fn split_watch_event(message: &[u8]) -> Result<(&str, &[u8]), ProtobufError> {
    let (mut event_type, mut raw) = ("", &[][..]);
    let mut reader = Reader::new(message);
    while let Some((number, value)) = reader.field()? {
        match (number, value) {
            (1, WireValue::Len(b)) => event_type = utf8(b)?,
            (2, WireValue::Len(b)) => {
                let mut extension = Reader::new(b);
                while let Some((number, value)) = extension.field()? {
                    if let (1, WireValue::Len(r)) = (number, value) {
                        raw = r;
                    }
                }
            }
            _ => return Err(ProtobufError::WrongWireType),
        }
    }
    if event_type.is_empty() {
        return Err(ProtobufError::InvalidValue(
            "a watch event without a type".to_owned(),
        ));
    }
    Ok((event_type, raw))
}

/// Decodes one `WatchEvent` message (without its length prefix) into the JSON form of a
/// watch event, `{"type": ..., "object": ...}`.
///
/// # Errors
///
/// [`ProtobufError`] for bytes that are not a watch event of a built-in kind.
pub fn decode_watch_event(message: &[u8]) -> Result<Value, ProtobufError> {
    let (event_type, raw) = split_watch_event(message)?;
    let object = if raw.starts_with(envelope::MAGIC) {
        envelope::decode_at_depth(raw, 0)?
    } else {
        serde_json::from_slice(raw).map_err(ProtobufError::RawJson)?
    };
    let mut event = Map::new();
    event.insert("type".to_owned(), Value::String(event_type.to_owned()));
    event.insert("object".to_owned(), object);
    Ok(Value::Object(event))
}

/// Splits a protobuf watch body, arriving in chunks of any size, into events.
///
/// A frame longer than the limit ends the stream with [`ProtobufError::FrameTooLarge`]
/// before any of it is buffered; after an error in the framing the decoder yields nothing
/// more (the stream cannot be resynchronised). An event whose object does not decode is an
/// error for that event only.
///
/// ```
/// use kubeclient_machinery::protobuf::{ProtobufError, WatchFrameDecoder};
///
/// let mut decoder = WatchFrameDecoder::with_max_frame_bytes(1024);
/// decoder.push(&[0x7f, 0xff, 0xff, 0xff]); // a 2 GiB frame announced
/// assert!(matches!(decoder.next_frame(), Some(Err(ProtobufError::FrameTooLarge { .. }))));
/// assert!(decoder.next_frame().is_none());
/// ```
#[doc(alias = "LengthDelimitedFramer", alias = "StreamWatcher")]
#[derive(Debug)]
pub struct WatchFrameDecoder {
    buf: Vec<u8>,
    start: usize,
    max_frame_bytes: usize,
    broken: bool,
}

impl Default for WatchFrameDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl WatchFrameDecoder {
    /// A decoder with [`DEFAULT_MAX_FRAME_BYTES`].
    pub fn new() -> Self {
        Self::with_max_frame_bytes(DEFAULT_MAX_FRAME_BYTES)
    }

    /// A decoder that refuses frames longer than `max` bytes.
    pub fn with_max_frame_bytes(max: usize) -> Self {
        Self {
            buf: Vec::new(),
            start: 0,
            max_frame_bytes: max,
            broken: false,
        }
    }

    /// Adds the next chunk of the body.
    pub fn push(&mut self, chunk: &[u8]) {
        if self.broken {
            return;
        }
        if self.start > 0 && self.start == self.buf.len() {
            self.buf.clear();
            self.start = 0;
        } else if self.start > self.buf.len() / 2 {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        self.buf.extend_from_slice(chunk);
    }

    /// The next whole frame's message bytes, if one has arrived.
    ///
    /// # Errors
    ///
    /// [`ProtobufError::FrameTooLarge`] for a length prefix above the limit.
    pub fn next_frame(&mut self) -> Option<Result<&[u8], ProtobufError>> {
        if self.broken {
            return None;
        }
        let pending = &self.buf[self.start..];
        let prefix: [u8; 4] = pending.get(..4)?.try_into().ok()?;
        let len = u32::from_be_bytes(prefix);
        let len_usize = usize::try_from(len).unwrap_or(usize::MAX);
        if len_usize > self.max_frame_bytes {
            self.broken = true;
            self.buf = Vec::new();
            return Some(Err(ProtobufError::FrameTooLarge {
                len: u64::from(len),
                max: self.max_frame_bytes,
            }));
        }
        let end = 4 + len_usize;
        if pending.len() < end {
            return None;
        }
        let frame_start = self.start + 4;
        self.start += end;
        Some(Ok(&self.buf[frame_start..frame_start + len_usize]))
    }

    /// The next event in its JSON form (`{"type": ..., "object": ...}`), if one has arrived.
    ///
    /// # Errors
    ///
    /// [`ProtobufError`] for an oversized frame or an event that does not decode.
    pub fn next_event(&mut self) -> Option<Result<Value, ProtobufError>> {
        Some(self.next_frame()?.and_then(decode_watch_event))
    }

    /// Checks that the body ended on a frame boundary.
    ///
    /// # Errors
    ///
    /// [`ProtobufError::Truncated`] when part of a frame is left over.
    pub fn finish(&self) -> Result<(), ProtobufError> {
        if !self.broken && self.start < self.buf.len() {
            return Err(ProtobufError::Truncated);
        }
        Ok(())
    }
}
