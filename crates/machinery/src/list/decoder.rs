//! [`ListStreamDecoder`]: splits a list response body into its items, chunk by chunk.

use std::ops::Range;

use bytes::{Bytes, BytesMut};

/// The default limit on one item: far above the API server's own 3 MiB request limit and
/// etcd's 1.5 MiB object limit, small enough that a hostile server cannot make the
/// client buffer without bound inside one item.
const DEFAULT_MAX_ITEM_LEN: usize = 64 * 1024 * 1024;

/// Why a list body could not be split.
#[derive(Clone, Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum ListDecodeError {
    /// The body is not a JSON object of the expected shape.
    #[error("malformed list body at byte {offset}: {message}")]
    Malformed {
        /// Where in the body (counted from its first byte).
        offset: u64,
        /// What was expected.
        message: &'static str,
    },
    /// One item is larger than the limit.
    #[error(
        "a list item of more than {max} bytes (the limit is set by ListStreamDecoder::with_max_item_len)"
    )]
    TooLarge {
        /// The limit in bytes.
        max: usize,
    },
    /// The body ended before the list did.
    #[error("the list body ended early (at byte {offset}): the connection was cut")]
    Truncated {
        /// How many bytes arrived.
        offset: u64,
    },
}

/// Items ready to decode: their bytes (shared, cheap to send to another thread) and where
/// each item lies in them.
#[derive(Clone, Debug, Default)]
pub struct ItemBatch {
    /// The bytes that hold the items (and whatever lies between them).
    pub bytes: Bytes,
    /// One range per item, in list order.
    pub ranges: Vec<Range<usize>>,
}

impl ItemBatch {
    /// The items' bytes, in list order.
    pub fn items(&self) -> impl Iterator<Item = &[u8]> {
        self.ranges.iter().map(|range| &self.bytes[range.clone()])
    }

    /// How many items.
    #[must_use]
    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    /// Whether it holds no item.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }
}

/// Where the scanner is in the list's top-level object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// Before the opening `{`.
    Start,
    /// After `{` or `,`: a key or `}`.
    KeyOrEnd,
    /// Inside a top-level key.
    Key,
    /// After a key: `:`.
    Colon,
    /// After `:`: the start of a value.
    ValueStart,
    /// Inside a top-level value that is not the items array.
    Value { metadata: bool },
    /// After a top-level value: `,` or `}`.
    AfterValue,
    /// Inside the items array, between items.
    ItemOrEnd,
    /// Inside one item.
    Item,
    /// After the closing `}`.
    Done,
}

/// The state of the value being skipped, kept across chunks.
#[derive(Clone, Copy, Debug, Default)]
struct Skip {
    nest: u32,
    in_string: bool,
    escaped: bool,
    scalar: bool,
}

/// Turns the bytes of a list response (`{"kind":"PodList","metadata":{...},"items":[...]}`)
/// into batches of item bytes as they arrive, whatever the chunking, so a list never has
/// to be held in memory whole and items can be decoded (on other threads) while the rest
/// is still arriving. The list's `metadata` is kept aside for [`finish`](Self::finish).
///
/// Only the structure is checked here; each item is left for the caller to decode, so one
/// bad item can be reported and skipped without losing the others.
///
/// # Examples
///
/// ```
/// use kubeclient_machinery::list::ListStreamDecoder;
///
/// let mut decoder = ListStreamDecoder::new();
/// decoder.push(br#"{"kind":"ConfigMapList","metadata":{"resourceVersion":"7"},"items":[{"metadata":{"name":"a"}},{"meta"#);
/// let batch = decoder.next_batch().unwrap().unwrap();
/// assert_eq!(batch.items().collect::<Vec<_>>(), [&br#"{"metadata":{"name":"a"}}"#[..]]);
/// decoder.push(br#"data":{"name":"b"}}]}"#);
/// assert_eq!(decoder.next_batch().unwrap().unwrap().len(), 1);
/// assert_eq!(decoder.finish().unwrap().as_deref(), Some(&br#"{"resourceVersion":"7"}"#[..]));
/// ```
#[derive(Debug)]
pub struct ListStreamDecoder {
    /// Received bytes not yet handed out.
    buf: BytesMut,
    /// Bytes handed out or dropped before `buf` (for error offsets).
    consumed: u64,
    /// The next byte to scan, in `buf`.
    pos: usize,
    mode: Mode,
    skip: Skip,
    /// The current top-level key (raw).
    key: Vec<u8>,
    /// Where the current item or metadata value starts, in `buf`.
    value_start: usize,
    /// Complete items not yet handed out, in `buf`.
    ready: Vec<Range<usize>>,
    metadata: Option<Vec<u8>>,
    max_item_len: usize,
    failed: Option<ListDecodeError>,
}

impl Default for ListStreamDecoder {
    fn default() -> Self {
        ListStreamDecoder::new()
    }
}

impl ListStreamDecoder {
    /// A decoder with the default 64 MiB limit per item.
    #[must_use]
    pub fn new() -> Self {
        ListStreamDecoder {
            buf: BytesMut::new(),
            consumed: 0,
            pos: 0,
            mode: Mode::Start,
            skip: Skip::default(),
            key: Vec::new(),
            value_start: 0,
            ready: Vec::new(),
            metadata: None,
            max_item_len: DEFAULT_MAX_ITEM_LEN,
            failed: None,
        }
    }

    /// This decoder with a different limit on the size of one item.
    #[must_use]
    pub fn with_max_item_len(mut self, max_item_len: usize) -> Self {
        self.max_item_len = max_item_len;
        self
    }

    /// Appends a chunk of the body.
    pub fn push(&mut self, chunk: &[u8]) {
        self.buf.extend_from_slice(chunk);
    }

    /// Bytes of complete items not yet handed out (after scanning what was pushed).
    ///
    /// # Errors
    ///
    /// As [`next_batch`](Self::next_batch).
    pub fn ready_len(&mut self) -> Result<usize, ListDecodeError> {
        self.scan()?;
        Ok(match (self.ready.first(), self.ready.last()) {
            (Some(first), Some(last)) => last.end - first.start,
            _ => 0,
        })
    }

    /// The complete items received so far and not yet handed out; `None` when there is
    /// none.
    ///
    /// # Errors
    ///
    /// A [`ListDecodeError`] when the body is not a list; every later call fails the same way.
    pub fn next_batch(&mut self) -> Result<Option<ItemBatch>, ListDecodeError> {
        self.scan()?;
        let Some(end) = self.ready.last().map(|range| range.end) else {
            return Ok(None);
        };
        let bytes = self.buf.split_to(end).freeze();
        self.consumed += end as u64;
        self.pos -= end;
        self.value_start = self.value_start.saturating_sub(end);
        Ok(Some(ItemBatch {
            bytes,
            ranges: std::mem::take(&mut self.ready),
        }))
    }

    /// Call when the body has ended (after taking the last batch): the list's `metadata`
    /// object, if it had one.
    ///
    /// # Errors
    ///
    /// [`ListDecodeError::Truncated`] when the list is incomplete, or the error that
    /// stopped the decoder.
    pub fn finish(&mut self) -> Result<Option<Vec<u8>>, ListDecodeError> {
        self.scan()?;
        if !self.ready.is_empty() || self.mode != Mode::Done {
            return Err(ListDecodeError::Truncated {
                offset: self.consumed + self.buf.len() as u64,
            });
        }
        Ok(self.metadata.take())
    }

    fn fail(&mut self, message: &'static str) -> ListDecodeError {
        let error = ListDecodeError::Malformed {
            offset: self.consumed + self.pos as u64,
            message,
        };
        self.failed = Some(error.clone());
        error
    }

    /// Scans every byte received so far.
    fn scan(&mut self) -> Result<(), ListDecodeError> {
        if let Some(error) = &self.failed {
            return Err(error.clone());
        }
        while self.pos < self.buf.len() {
            let byte = self.buf[self.pos];
            match self.mode {
                Mode::Start
                | Mode::KeyOrEnd
                | Mode::Colon
                | Mode::ValueStart
                | Mode::AfterValue
                | Mode::ItemOrEnd
                | Mode::Done
                    if matches!(byte, b' ' | b'\t' | b'\n' | b'\r') =>
                {
                    self.pos += 1;
                }
                Mode::Start => {
                    if byte != b'{' {
                        return Err(self.fail("expected a JSON object"));
                    }
                    self.pos += 1;
                    self.mode = Mode::KeyOrEnd;
                }
                Mode::KeyOrEnd => match byte {
                    b'"' => {
                        self.key.clear();
                        self.skip = Skip::default();
                        self.pos += 1;
                        self.mode = Mode::Key;
                    }
                    b'}' => {
                        self.pos += 1;
                        self.mode = Mode::Done;
                    }
                    _ => return Err(self.fail("expected a key or '}'")),
                },
                Mode::Key if self.skip.escaped => {
                    // The byte after a backslash: part of the key whatever it is.
                    self.key.push(byte);
                    self.pos += 1;
                    self.skip.escaped = false;
                }
                Mode::Key => {
                    let rest = &self.buf[self.pos..];
                    match memchr::memchr2(b'"', b'\\', rest) {
                        Some(offset) if rest[offset] == b'"' => {
                            self.key.extend_from_slice(&rest[..offset]);
                            self.pos += offset + 1;
                            self.mode = Mode::Colon;
                        }
                        Some(offset) => {
                            // Keys with escapes are kept raw: none of the list's keys has any.
                            self.key.extend_from_slice(&rest[..=offset]);
                            self.pos += offset + 1;
                            self.skip.escaped = true;
                        }
                        None => {
                            self.key.extend_from_slice(rest);
                            self.pos = self.buf.len();
                        }
                    }
                    if self.key.len() > 1024 {
                        return Err(self.fail("a top-level key longer than 1 KiB"));
                    }
                }
                Mode::Colon => {
                    if byte != b':' {
                        return Err(self.fail("expected ':' after a key"));
                    }
                    self.pos += 1;
                    self.mode = Mode::ValueStart;
                }
                Mode::ValueStart => {
                    self.value_start = self.pos;
                    self.skip = Skip::default();
                    self.mode = if self.key == b"items" && byte == b'[' {
                        self.pos += 1;
                        Mode::ItemOrEnd
                    } else {
                        Mode::Value {
                            metadata: self.key == b"metadata",
                        }
                    };
                }
                Mode::Value { metadata } => {
                    if self.skip_value()? {
                        if metadata {
                            self.metadata = Some(self.buf[self.value_start..self.pos].to_vec());
                        }
                        self.mode = Mode::AfterValue;
                    } else if metadata && self.pos - self.value_start > self.max_item_len {
                        self.failed = Some(ListDecodeError::TooLarge {
                            max: self.max_item_len,
                        });
                        return Err(ListDecodeError::TooLarge {
                            max: self.max_item_len,
                        });
                    }
                }
                Mode::AfterValue => match byte {
                    b',' => {
                        self.pos += 1;
                        self.mode = Mode::KeyOrEnd;
                    }
                    b'}' => {
                        self.pos += 1;
                        self.mode = Mode::Done;
                    }
                    _ => return Err(self.fail("expected ',' or '}' after a value")),
                },
                Mode::ItemOrEnd => match byte {
                    b']' => {
                        self.pos += 1;
                        self.mode = Mode::AfterValue;
                    }
                    b',' => self.pos += 1,
                    _ => {
                        self.value_start = self.pos;
                        self.skip = Skip::default();
                        self.mode = Mode::Item;
                    }
                },
                Mode::Item => {
                    if self.skip_value()? {
                        self.ready.push(self.value_start..self.pos);
                        self.mode = Mode::ItemOrEnd;
                    } else if self.pos - self.value_start > self.max_item_len {
                        self.failed = Some(ListDecodeError::TooLarge {
                            max: self.max_item_len,
                        });
                        return Err(ListDecodeError::TooLarge {
                            max: self.max_item_len,
                        });
                    }
                }
                Mode::Done => return Err(self.fail("data after the end of the list")),
            }
        }
        Ok(())
    }

    /// Advances through the value being skipped; true when it ended (at `pos`).
    fn skip_value(&mut self) -> Result<bool, ListDecodeError> {
        let len = self.buf.len();
        while self.pos < len {
            if self.skip.escaped {
                self.skip.escaped = false;
                self.pos += 1;
                continue;
            }
            if self.skip.in_string {
                match memchr::memchr2(b'"', b'\\', &self.buf[self.pos..]) {
                    None => self.pos = len,
                    Some(offset) => {
                        self.pos += offset + 1;
                        if self.buf[self.pos - 1] == b'\\' {
                            self.skip.escaped = true;
                        } else {
                            self.skip.in_string = false;
                            if self.skip.nest == 0 {
                                return Ok(true);
                            }
                        }
                    }
                }
                continue;
            }
            match self.buf[self.pos] {
                b'"' if self.skip.scalar => return Err(self.fail("unexpected '\"'")),
                b'"' => self.skip.in_string = true,
                b'{' | b'[' if self.skip.scalar => return Err(self.fail("unexpected bracket")),
                b'{' | b'[' => self.skip.nest += 1,
                b'}' | b']' | b',' | b' ' | b'\t' | b'\n' | b'\r' if self.skip.nest == 0 => {
                    // The end of a number or literal; the delimiter is the parent's.
                    return if self.skip.scalar {
                        Ok(true)
                    } else {
                        Err(self.fail("expected a value"))
                    };
                }
                b'}' | b']' => {
                    self.skip.nest -= 1;
                    if self.skip.nest == 0 {
                        self.pos += 1;
                        return Ok(true);
                    }
                }
                _ if self.skip.nest == 0 => self.skip.scalar = true,
                _ => {}
            }
            self.pos += 1;
        }
        Ok(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIST: &str = r#"{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"42","continue":"c"},"items":[{"metadata":{"name":"a\"]}"}},{"metadata":{"name":"b"},"spec":[1,2,{"x":null}]} , {"n":-1.5e3,"t":true}]}"#;

    fn items_and_metadata(chunks: &[&[u8]]) -> (Vec<String>, Option<String>) {
        let mut decoder = ListStreamDecoder::new();
        let mut items = Vec::new();
        for chunk in chunks {
            decoder.push(chunk);
            if let Some(batch) = decoder.next_batch().unwrap() {
                items.extend(
                    batch
                        .items()
                        .map(|i| String::from_utf8(i.to_vec()).unwrap()),
                );
            }
        }
        let metadata = decoder
            .finish()
            .unwrap()
            .map(|m| String::from_utf8(m).unwrap());
        (items, metadata)
    }

    #[test]
    fn a_list_split_at_every_byte_gives_the_same_items() {
        let whole = items_and_metadata(&[LIST.as_bytes()]);
        assert_eq!(
            whole.0,
            [
                r#"{"metadata":{"name":"a\"]}"}}"#,
                r#"{"metadata":{"name":"b"},"spec":[1,2,{"x":null}]}"#,
                r#"{"n":-1.5e3,"t":true}"#
            ]
        );
        assert_eq!(
            whole.1.as_deref(),
            Some(r#"{"resourceVersion":"42","continue":"c"}"#)
        );
        let bytes = LIST.as_bytes();
        for split in 0..bytes.len() {
            assert_eq!(
                items_and_metadata(&[&bytes[..split], &bytes[split..]]),
                whole
            );
        }
        let singles: Vec<&[u8]> = bytes.chunks(1).collect();
        assert_eq!(items_and_metadata(&singles), whole);
    }

    #[test]
    fn null_empty_and_scalar_items_and_metadata_after_items() {
        assert_eq!(
            items_and_metadata(&[br#"{"items":null,"metadata":{}}"#]),
            (vec![], Some("{}".to_owned()))
        );
        assert_eq!(items_and_metadata(&[br#" { } "#]), (vec![], None));
        assert_eq!(
            items_and_metadata(&[br#"{"a\\":"\\","b\"items":[9],"items":[2]}"#]).0,
            ["2"]
        );
        assert_eq!(
            items_and_metadata(&[br#"{"items":[ 1 ,"x",[]],"metadata":{"resourceVersion":"1"}}"#])
                .0,
            ["1", r#""x""#, "[]"]
        );
    }

    #[test]
    fn broken_bodies_are_errors_never_panics() {
        for body in [
            &b"[]"[..],
            b"{\"items\" 1}",
            b"{\"items\":[1}",
            b"{\"a\":1 \"b\":2}",
            b"{1:2}",
            b"{\"a\":1}}",
            b"{\"a\":tr\"ue}",
        ] {
            let mut decoder = ListStreamDecoder::new();
            decoder.push(body);
            let result = decoder.next_batch().and_then(|_| decoder.finish());
            assert!(result.is_err(), "{:?}", String::from_utf8_lossy(body));
        }
        let mut decoder = ListStreamDecoder::new();
        decoder.push(br#"{"items":[{"a":1},{"b":"#);
        assert_eq!(decoder.next_batch().unwrap().unwrap().len(), 1);
        assert!(matches!(
            decoder.finish(),
            Err(ListDecodeError::Truncated { .. })
        ));
    }

    #[test]
    fn an_item_over_the_limit_stops_the_decoder() {
        let mut decoder = ListStreamDecoder::new().with_max_item_len(10);
        decoder.push(br#"{"items":[{"a":"0123456789"#);
        assert_eq!(
            decoder.next_batch().unwrap_err(),
            ListDecodeError::TooLarge { max: 10 }
        );
        decoder.push(b"\"}]}");
        assert!(decoder.finish().is_err());
    }
}
