//! [`ListStreamSplitter`]: a protobuf list body split into items as its bytes arrive, so
//! items can be decoded while the rest of the body is still on the way (as the JSON list
//! decoder does). The envelope's header gives the list's kind; the list message's
//! `metadata` (field 1) and each item (field 2) follow, each length-prefixed.

use serde_json::Value;

use super::schema::schema;
use super::special::utf8;
use super::wire::{Reader, WireValue};
use super::{DEFAULT_MAX_FRAME_BYTES, MAGIC, ProtobufError, to_json};

#[derive(Debug)]
enum State {
    /// Waiting for the magic, the type meta and the length of the list message.
    Header,
    /// Inside the list message; this many of its bytes have not been read.
    Body { remaining: usize },
    /// After the list message (the envelope's empty trailing fields).
    Trailer,
    /// A malformed body: nothing more is read.
    Failed,
}

/// Splits a protobuf list body (`k8s\0` + `runtime.Unknown` holding a `...List`) into its
/// items as chunks arrive, holding only the bytes of items not yet taken.
///
/// ```
/// use kubeclient_machinery::protobuf::{self, ListStreamSplitter};
///
/// let item = protobuf::encode_item(&serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}))?;
/// let body = protobuf::encode_list("v1", "ConfigMapList", &serde_json::json!({"resourceVersion": "9"}), &[&item, &item])?;
/// let mut splitter = ListStreamSplitter::new();
/// let mut items = 0;
/// for chunk in body.chunks(7) {
///     splitter.push(chunk);
///     while let Some(found) = splitter.next_item()? {
///         assert_eq!(found, &item[..]);
///         items += 1;
///     }
/// }
/// splitter.finish()?;
/// assert_eq!(items, 2);
/// assert_eq!(splitter.type_meta(), Some(("v1", "ConfigMapList")));
/// assert_eq!(splitter.metadata().unwrap()["resourceVersion"], "9");
/// # Ok::<(), protobuf::ProtobufError>(())
/// ```
#[derive(Debug)]
pub struct ListStreamSplitter {
    buf: Vec<u8>,
    start: usize,
    state: State,
    max_item_bytes: usize,
    type_meta: Option<(String, String)>,
    metadata: Option<Value>,
}

impl Default for ListStreamSplitter {
    fn default() -> Self {
        Self::new()
    }
}

impl ListStreamSplitter {
    /// A splitter refusing items over [`DEFAULT_MAX_FRAME_BYTES`].
    pub fn new() -> Self {
        Self::with_max_item_bytes(DEFAULT_MAX_FRAME_BYTES)
    }

    /// A splitter refusing items (and list metadata) over `max` bytes.
    pub fn with_max_item_bytes(max: usize) -> Self {
        ListStreamSplitter {
            buf: Vec::new(),
            start: 0,
            state: State::Header,
            max_item_bytes: max,
            type_meta: None,
            metadata: None,
        }
    }

    /// Adds the next chunk of the body.
    pub fn push(&mut self, chunk: &[u8]) {
        if matches!(self.state, State::Failed | State::Trailer) {
            return;
        }
        if self.start > 0 && self.start * 2 >= self.buf.len() {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        self.buf.extend_from_slice(chunk);
    }

    /// The list's apiVersion and kind, once the header has arrived.
    pub fn type_meta(&self) -> Option<(&str, &str)> {
        self.type_meta
            .as_ref()
            .map(|(a, k)| (a.as_str(), k.as_str()))
    }

    /// The list's `metadata` (ListMeta's JSON form), once it has arrived.
    pub fn metadata(&self) -> Option<&Value> {
        self.metadata.as_ref()
    }

    /// The next complete item's message bytes, if one has arrived.
    ///
    /// # Errors
    ///
    /// [`ProtobufError`] for a body that is not an enveloped list, or an item over the
    /// limit; the splitter then yields nothing more.
    pub fn next_item(&mut self) -> Result<Option<&[u8]>, ProtobufError> {
        let result = self.advance();
        if result.is_err() {
            self.state = State::Failed;
            self.buf = Vec::new();
            self.start = 0;
        }
        match result? {
            Some(range) => Ok(self.buf.get(range)),
            None => Ok(None),
        }
    }

    /// Reads the header and list fields up to the next item; its range in `buf`.
    fn advance(&mut self) -> Result<Option<std::ops::Range<usize>>, ProtobufError> {
        loop {
            match self.state {
                State::Failed | State::Trailer => return Ok(None),
                State::Header => {
                    if !self.read_header()? {
                        return Ok(None);
                    }
                }
                State::Body { remaining } => {
                    if remaining == 0 {
                        self.state = State::Trailer;
                        return Ok(None);
                    }
                    let available = &self.buf[self.start..];
                    let window = &available[..available.len().min(remaining)];
                    let mut reader = Reader::new(window);
                    // Key and length first: a long item is refused before it is buffered.
                    let key = match reader.varint() {
                        Ok(key) => key,
                        Err(ProtobufError::Truncated) if window.len() < remaining => {
                            return Ok(None);
                        }
                        Err(err) => return Err(err),
                    };
                    if key & 7 == 2 {
                        let len = match reader.varint() {
                            Ok(len) => len,
                            Err(ProtobufError::Truncated) if window.len() < remaining => {
                                return Ok(None);
                            }
                            Err(err) => return Err(err),
                        };
                        if len > self.max_item_bytes as u64 {
                            return Err(ProtobufError::FrameTooLarge {
                                len,
                                max: self.max_item_bytes,
                            });
                        }
                    }
                    let mut reader = Reader::new(window);
                    let field = match reader.field() {
                        Ok(Some(field)) => field,
                        Ok(None) => return Ok(None),
                        Err(ProtobufError::Truncated) if window.len() < remaining => {
                            return Ok(None);
                        }
                        Err(err) => return Err(err),
                    };
                    let consumed = window.len() - reader.remaining().len();
                    let value_start = match field.1 {
                        WireValue::Len(bytes) => self.start + consumed - bytes.len(),
                        _ => self.start + consumed,
                    };
                    let end = self.start + consumed;
                    self.start = end;
                    self.state = State::Body {
                        remaining: remaining - consumed,
                    };
                    match field {
                        (1, WireValue::Len(bytes)) => {
                            let (api_version, kind) = self.type_meta().unwrap_or_default();
                            let schema = schema()?;
                            let list = schema.kind_message(api_version, kind)?;
                            let meta = list.field(1).ok_or(ProtobufError::WrongWireType)?;
                            let super::schema::Label::Optional(super::schema::Type::Message(name)) =
                                meta.label
                            else {
                                return Err(ProtobufError::WrongWireType);
                            };
                            let bytes = bytes.to_vec();
                            self.metadata =
                                Some(to_json::message(schema, schema.message(name)?, &bytes, 1)?);
                        }
                        (2, WireValue::Len(_)) => return Ok(Some(value_start..end)),
                        _ => {}
                    }
                }
            }
        }
    }

    /// Parses the envelope's header once it has arrived; whether it has.
    fn read_header(&mut self) -> Result<bool, ProtobufError> {
        let pending = &self.buf[self.start..];
        if pending.len() < MAGIC.len() {
            return Ok(false);
        }
        let body = pending
            .strip_prefix(MAGIC)
            .ok_or(ProtobufError::MissingMagic)?;
        let mut reader = Reader::new(body);
        let mut type_meta = None;
        loop {
            let before = reader.remaining().len();
            let key = match reader.varint() {
                Ok(key) => key,
                Err(ProtobufError::Truncated) => return Ok(false),
                Err(err) => return Err(err),
            };
            if key == (2 << 3) | 2 {
                // The list message: its length, then its fields arrive as the body.
                let len = match reader.varint() {
                    Ok(len) => len,
                    Err(ProtobufError::Truncated) => return Ok(false),
                    Err(err) => return Err(err),
                };
                let (api_version, kind): (String, String) = type_meta.ok_or_else(|| {
                    ProtobufError::InvalidValue("a list without a kind".to_owned())
                })?;
                self.type_meta = Some((api_version, kind));
                self.start += MAGIC.len() + (body.len() - reader.remaining().len());
                self.state = State::Body {
                    remaining: usize::try_from(len).map_err(|_| ProtobufError::Truncated)?,
                };
                return Ok(true);
            }
            // Any other field of the envelope (the type meta first): read it whole.
            let mut field_reader = Reader::new(&body[body.len() - before..]);
            match field_reader.field() {
                Ok(Some((1, WireValue::Len(meta)))) => {
                    let (mut api_version, mut kind) = (String::new(), String::new());
                    let mut fields = Reader::new(meta);
                    while let Some((number, value)) = fields.field()? {
                        match (number, value) {
                            (1, WireValue::Len(v)) => api_version = utf8(v)?.to_owned(),
                            (2, WireValue::Len(v)) => kind = utf8(v)?.to_owned(),
                            _ => {}
                        }
                    }
                    type_meta = Some((api_version, kind));
                }
                Ok(Some(_)) => {}
                Ok(None) | Err(ProtobufError::Truncated) => return Ok(false),
                Err(err) => return Err(err),
            }
            reader = field_reader;
        }
    }

    /// Checks that the body held a whole list.
    ///
    /// # Errors
    ///
    /// [`ProtobufError::Truncated`] when it ended early (or had no list at all).
    pub fn finish(&mut self) -> Result<(), ProtobufError> {
        match self.state {
            State::Trailer => Ok(()),
            State::Body { remaining: 0 } => {
                self.state = State::Trailer;
                Ok(())
            }
            _ => Err(ProtobufError::Truncated),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protobuf::{encode_item, encode_list};

    fn body(items: usize) -> (Vec<u8>, Vec<Vec<u8>>) {
        let items: Vec<Vec<u8>> = (0..items)
            .map(|i| {
                encode_item(&serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": format!("cm-{i}")}, "data": {"k": "v".repeat(i)}}))
                .unwrap()
            })
            .collect();
        let body = encode_list(
            "v1",
            "ConfigMapList",
            &serde_json::json!({"resourceVersion": "5", "continue": "x"}),
            &items,
        )
        .unwrap();
        (body, items)
    }

    #[test]
    fn a_list_split_at_every_byte_gives_its_items() {
        let (body, expected) = body(4);
        for cut in 0..=body.len() {
            let mut splitter = ListStreamSplitter::new();
            let mut items = Vec::new();
            for chunk in [&body[..cut], &body[cut..]] {
                splitter.push(chunk);
                while let Some(item) = splitter.next_item().unwrap() {
                    items.push(item.to_vec());
                }
            }
            splitter.finish().unwrap();
            assert_eq!(items, expected, "cut at {cut}");
            assert_eq!(splitter.metadata().unwrap()["continue"], "x");
        }
    }

    #[test]
    fn truncated_wrong_and_oversized_bodies_are_errors() {
        let (body, _) = body(3);
        let mut short = ListStreamSplitter::new();
        short.push(&body[..body.len() - 10]);
        while short.next_item().unwrap().is_some() {}
        assert!(matches!(short.finish(), Err(ProtobufError::Truncated)));

        let mut json = ListStreamSplitter::new();
        json.push(br#"{"kind":"List"}"#);
        assert!(matches!(json.next_item(), Err(ProtobufError::MissingMagic)));
        assert!(
            json.next_item().unwrap().is_none(),
            "nothing after an error"
        );

        let mut small = ListStreamSplitter::with_max_item_bytes(8);
        small.push(&body);
        assert!(matches!(
            small.next_item(),
            Err(ProtobufError::FrameTooLarge { .. })
        ));

        // A list and an item announcing 2^40 bytes: refused when the prefix arrives.
        let mut lying = MAGIC.to_vec();
        lying.extend_from_slice(b"\x0a\x13\x0a\x02v1\x12\x0dConfigMapList");
        lying.extend_from_slice(&[0x12, 0x80, 0x80, 0x80, 0x80, 0x80, 0x20]);
        lying.extend_from_slice(&[0x12, 0x80, 0x80, 0x80, 0x80, 0x80, 0x20]);
        let mut huge = ListStreamSplitter::new();
        huge.push(&lying);
        assert!(matches!(
            huge.next_item(),
            Err(ProtobufError::FrameTooLarge { .. })
        ));
    }
}
