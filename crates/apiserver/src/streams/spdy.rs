//! The part of SPDY/3.1 kubectl's port-forward needs from a server: reading and writing
//! frames, and the header blocks, zlib-compressed against the protocol's preset
//! dictionary (draft 3, section 2.6.10.1).
//!
//! Every input is bounded: frames over [`MAX_FRAME_PAYLOAD`] and header blocks that
//! inflate past [`MAX_HEADER_BYTES`] or hold more than [`MAX_HEADERS`] pairs are errors,
//! never allocations. Flow control (WINDOW_UPDATE) is not used: the SPDY peers of
//! Kubernetes (moby/spdystream) neither send nor honour it.

use bytes::{Bytes, BytesMut};
use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};
use tokio::io::{AsyncRead, AsyncReadExt as _};

/// The largest frame payload accepted (kubectl sends data in 32 KiB pieces).
pub(crate) const MAX_FRAME_PAYLOAD: usize = 1024 * 1024;
/// The largest inflated header block accepted.
pub(crate) const MAX_HEADER_BYTES: usize = 64 * 1024;
/// The most header pairs in one block.
pub(crate) const MAX_HEADERS: usize = 64;

const VERSION: u16 = 3;
const FLAG_FIN: u8 = 0x01;

const SYN_STREAM: u16 = 1;
const SYN_REPLY: u16 = 2;
const RST_STREAM: u16 = 3;
const PING: u16 = 6;
const GOAWAY: u16 = 7;

/// RST_STREAM status: the stream broke the protocol.
pub(crate) const RST_PROTOCOL_ERROR: u32 = 1;
/// RST_STREAM status: the stream is refused (e.g. too many streams).
pub(crate) const RST_REFUSED_STREAM: u32 = 3;
/// RST_STREAM status: the peer sent more than the receiver keeps.
pub(crate) const RST_FLOW_CONTROL_ERROR: u32 = 7;

/// One frame read from the peer.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Frame {
    /// A new stream; its header block is still compressed.
    SynStream {
        stream_id: u32,
        fin: bool,
        header_block: Bytes,
    },
    /// Data on a stream.
    Data {
        stream_id: u32,
        fin: bool,
        data: Bytes,
    },
    /// The peer abandons a stream.
    RstStream { stream_id: u32 },
    /// A ping to echo (the peer's ids are odd).
    Ping { id: u32 },
    /// The peer is closing the connection.
    GoAway,
    /// SYN_REPLY, SETTINGS, HEADERS, WINDOW_UPDATE and unknown types: nothing to do.
    Ignored,
}

/// Why a SPDY connection cannot go on.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SpdyError {
    /// Reading the connection failed.
    #[error("reading the SPDY connection failed")]
    Io(#[from] std::io::Error),
    /// A control frame of another SPDY version.
    #[error("SPDY version {0} is not supported (only 3)")]
    Version(u16),
    /// A frame larger than allowed.
    #[error("a SPDY frame of {0} bytes is over the {MAX_FRAME_PAYLOAD}-byte limit")]
    TooLarge(usize),
    /// A frame shorter than its fixed fields.
    #[error("a SPDY control frame of type {kind} is truncated ({len} bytes)")]
    Truncated { kind: u16, len: usize },
    /// A header block that does not inflate or parse.
    #[error("bad SPDY header block: {0}")]
    Headers(String),
}

/// Reads frames from a connection. A frame read in part stays in the buffer until the
/// rest arrives, so [`FrameReader::next`] can lose a `select!` race at any point without
/// losing its place in the stream (a half-read frame thrown away would make payload bytes
/// be read as the next header).
///
/// Invariant: `buffer` holds the bytes read but not yet returned as frames, at most one
/// frame header plus [`MAX_FRAME_PAYLOAD`] bytes once a header has been judged.
pub(crate) struct FrameReader<R> {
    reader: R,
    buffer: BytesMut,
}

/// How much the reader asks for at once when no frame is pending.
const READ_CHUNK: usize = 64 * 1024;

impl<R: AsyncRead + Unpin> FrameReader<R> {
    pub(crate) fn new(reader: R) -> Self {
        FrameReader {
            reader,
            buffer: BytesMut::with_capacity(READ_CHUNK),
        }
    }

    /// The next frame; `None` at a clean end of the connection (between frames).
    ///
    /// # Errors
    ///
    /// [`SpdyError`] for I/O failures, a connection ending inside a frame, and malformed
    /// or oversized frames.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: bytes read before the future is dropped stay buffered for the next
    /// call (the only await is `read_buf`, which reads nothing when cancelled).
    pub(crate) async fn next(&mut self) -> Result<Option<Frame>, SpdyError> {
        loop {
            let wanted = match parse_frame(&mut self.buffer)? {
                Parsed::Frame(frame) => return Ok(Some(frame)),
                Parsed::Need(bytes) => bytes,
            };
            self.buffer.reserve(wanted.max(READ_CHUNK));
            if self.reader.read_buf(&mut self.buffer).await? == 0 {
                if self.buffer.is_empty() {
                    return Ok(None);
                }
                return Err(SpdyError::Io(std::io::ErrorKind::UnexpectedEof.into()));
            }
        }
    }
}

/// What the buffer holds.
enum Parsed {
    /// A whole frame, taken off the buffer.
    Frame(Frame),
    /// Not yet a whole frame: this many more bytes are needed at least.
    Need(usize),
}

/// Takes the first frame off `buffer` if it is complete.
fn parse_frame(buffer: &mut BytesMut) -> Result<Parsed, SpdyError> {
    let Some(head) = buffer
        .get(..8)
        .and_then(|head| <[u8; 8]>::try_from(head).ok())
    else {
        return Ok(Parsed::Need(8 - buffer.len()));
    };
    let [a, b, c, d, flags, l1, l2, l3] = head;
    let length = usize::from(l1) << 16 | usize::from(l2) << 8 | usize::from(l3);
    if length > MAX_FRAME_PAYLOAD {
        return Err(SpdyError::TooLarge(length));
    }
    if buffer.len() < 8 + length {
        return Ok(Parsed::Need(8 + length - buffer.len()));
    }
    let mut frame = buffer.split_to(8 + length).freeze();
    let payload = frame.split_off(8);
    let fin = flags & FLAG_FIN != 0;
    if a & 0x80 == 0 {
        let stream_id = u32::from_be_bytes([a, b, c, d]) & 0x7fff_ffff;
        return Ok(Parsed::Frame(Frame::Data {
            stream_id,
            fin,
            data: payload,
        }));
    }
    let version = u16::from_be_bytes([a & 0x7f, b]);
    if version != VERSION {
        return Err(SpdyError::Version(version));
    }
    let kind = u16::from_be_bytes([c, d]);
    let word = |at: usize| -> Result<u32, SpdyError> {
        payload
            .get(at..at + 4)
            .and_then(|bytes| <[u8; 4]>::try_from(bytes).ok())
            .map(u32::from_be_bytes)
            .ok_or(SpdyError::Truncated { kind, len: length })
    };
    Ok(Parsed::Frame(match kind {
        SYN_STREAM => {
            let stream_id = word(0)? & 0x7fff_ffff;
            // stream id, associated stream id, priority and slot: 10 bytes.
            if payload.len() < 10 {
                return Err(SpdyError::Truncated { kind, len: length });
            }
            Frame::SynStream {
                stream_id,
                fin,
                header_block: payload.slice(10..),
            }
        }
        RST_STREAM => Frame::RstStream {
            stream_id: word(0)? & 0x7fff_ffff,
        },
        PING => Frame::Ping { id: word(0)? },
        GOAWAY => Frame::GoAway,
        _ => Frame::Ignored,
    }))
}

/// A DATA frame.
pub(crate) fn data_frame(stream_id: u32, fin: bool, data: &[u8]) -> Vec<u8> {
    let mut frame = Vec::with_capacity(8 + data.len());
    frame.extend_from_slice(&(stream_id & 0x7fff_ffff).to_be_bytes());
    frame.push(if fin { FLAG_FIN } else { 0 });
    push_length(&mut frame, data.len());
    frame.extend_from_slice(data);
    frame
}

/// A control frame of `kind` with `payload`.
fn control_frame(kind: u16, flags: u8, payload: &[u8]) -> Vec<u8> {
    let mut frame = Vec::with_capacity(8 + payload.len());
    frame.extend_from_slice(&(0x8000 | VERSION).to_be_bytes());
    frame.extend_from_slice(&kind.to_be_bytes());
    frame.push(flags);
    push_length(&mut frame, payload.len());
    frame.extend_from_slice(payload);
    frame
}

fn push_length(frame: &mut Vec<u8>, length: usize) {
    let length = u32::try_from(length.min(0x00ff_ffff)).unwrap_or(0x00ff_ffff);
    frame.extend_from_slice(&length.to_be_bytes()[1..]);
}

/// A SYN_REPLY accepting `stream_id`, with an already compressed header block.
pub(crate) fn syn_reply_frame(stream_id: u32, header_block: &[u8]) -> Vec<u8> {
    let mut payload = Vec::with_capacity(4 + header_block.len());
    payload.extend_from_slice(&(stream_id & 0x7fff_ffff).to_be_bytes());
    payload.extend_from_slice(header_block);
    control_frame(SYN_REPLY, 0, &payload)
}

/// A RST_STREAM.
pub(crate) fn rst_stream_frame(stream_id: u32, status: u32) -> Vec<u8> {
    let mut payload = (stream_id & 0x7fff_ffff).to_be_bytes().to_vec();
    payload.extend_from_slice(&status.to_be_bytes());
    control_frame(RST_STREAM, 0, &payload)
}

/// A PING echoing `id`.
pub(crate) fn ping_frame(id: u32) -> Vec<u8> {
    control_frame(PING, 0, &id.to_be_bytes())
}

/// A GOAWAY (status 0, OK).
pub(crate) fn goaway_frame(last_good_stream_id: u32) -> Vec<u8> {
    let mut payload = (last_good_stream_id & 0x7fff_ffff).to_be_bytes().to_vec();
    payload.extend_from_slice(&0u32.to_be_bytes());
    control_frame(GOAWAY, 0, &payload)
}

/// Inflates the peer's header blocks: one zlib stream for the whole connection, primed
/// with the SPDY dictionary.
pub(crate) struct HeaderDecoder {
    inflate: Decompress,
}

impl HeaderDecoder {
    pub(crate) fn new() -> Self {
        HeaderDecoder {
            inflate: Decompress::new(true),
        }
    }

    /// The name/value pairs of one header block (names lowercase, as SPDY sends them).
    ///
    /// # Errors
    ///
    /// [`SpdyError::Headers`] when the block does not inflate, is too large, or does not
    /// parse.
    pub(crate) fn decode(&mut self, block: &[u8]) -> Result<Vec<(String, String)>, SpdyError> {
        let mut out = Vec::with_capacity(256);
        let mut input = block;
        loop {
            if out.len() >= MAX_HEADER_BYTES {
                return Err(SpdyError::Headers(format!(
                    "more than {MAX_HEADER_BYTES} bytes of headers"
                )));
            }
            out.reserve(4096.min(MAX_HEADER_BYTES - out.len()));
            let before_in = self.inflate.total_in();
            let before_out = out.len();
            match self
                .inflate
                .decompress_vec(input, &mut out, FlushDecompress::Sync)
            {
                Ok(status) => {
                    let consumed =
                        usize::try_from(self.inflate.total_in() - before_in).unwrap_or(input.len());
                    input = input.get(consumed..).unwrap_or_default();
                    let progressed = consumed > 0 || out.len() > before_out;
                    if input.is_empty() && out.len() < out.capacity() {
                        break;
                    }
                    if matches!(status, Status::StreamEnd) || !progressed {
                        break;
                    }
                }
                Err(err) if err.needs_dictionary().is_some() => {
                    let consumed =
                        usize::try_from(self.inflate.total_in() - before_in).unwrap_or(input.len());
                    input = input.get(consumed..).unwrap_or_default();
                    self.inflate
                        .set_dictionary(&dictionary())
                        .map_err(|err| SpdyError::Headers(format!("dictionary: {err}")))?;
                }
                Err(err) => return Err(SpdyError::Headers(err.to_string())),
            }
        }
        parse_header_block(&out)
    }
}

/// Compresses our header blocks: one zlib stream, sync-flushed after each block (the
/// dictionary is optional for a sender; peers accept a stream without it).
pub(crate) struct HeaderEncoder {
    deflate: Compress,
}

impl HeaderEncoder {
    pub(crate) fn new() -> Self {
        HeaderEncoder {
            deflate: Compress::new(Compression::default(), true),
        }
    }

    /// The compressed block for `headers`.
    pub(crate) fn encode(&mut self, headers: &[(&str, &str)]) -> Vec<u8> {
        let mut raw = Vec::new();
        push_u32(&mut raw, headers.len());
        for (name, value) in headers {
            push_u32(&mut raw, name.len());
            raw.extend_from_slice(name.as_bytes());
            push_u32(&mut raw, value.len());
            raw.extend_from_slice(value.as_bytes());
        }
        let mut out = Vec::with_capacity(raw.len() + 64);
        let mut input = &raw[..];
        loop {
            out.reserve(256);
            let before_in = self.deflate.total_in();
            if self
                .deflate
                .compress_vec(input, &mut out, FlushCompress::Sync)
                .is_err()
            {
                break;
            }
            let consumed =
                usize::try_from(self.deflate.total_in() - before_in).unwrap_or(input.len());
            input = input.get(consumed..).unwrap_or_default();
            // Done when all input is in and the flush fit (space left in the output).
            if input.is_empty() && out.len() < out.capacity() {
                break;
            }
        }
        out
    }
}

fn push_u32(out: &mut Vec<u8>, value: usize) {
    let value = u32::try_from(value).unwrap_or(u32::MAX);
    out.extend_from_slice(&value.to_be_bytes());
}

/// Parses an inflated header block: a count, then length-prefixed names and values.
fn parse_header_block(block: &[u8]) -> Result<Vec<(String, String)>, SpdyError> {
    let mut rest = block;
    let mut take = |len: usize| -> Result<&[u8], SpdyError> {
        if rest.len() < len {
            return Err(SpdyError::Headers("truncated header block".to_owned()));
        }
        let (head, tail) = rest.split_at(len);
        rest = tail;
        Ok(head)
    };
    let count = read_u32(take(4)?);
    if count > MAX_HEADERS {
        return Err(SpdyError::Headers(format!(
            "{count} headers (at most {MAX_HEADERS})"
        )));
    }
    let mut headers = Vec::with_capacity(count);
    for _ in 0..count {
        let name_len = read_u32(take(4)?);
        let name = String::from_utf8_lossy(take(name_len)?).to_ascii_lowercase();
        let value_len = read_u32(take(4)?);
        let value = String::from_utf8_lossy(take(value_len)?).into_owned();
        headers.push((name, value));
    }
    Ok(headers)
}

fn read_u32(bytes: &[u8]) -> usize {
    let word = <[u8; 4]>::try_from(bytes).map_or(0, u32::from_be_bytes);
    usize::try_from(word).unwrap_or(usize::MAX)
}

/// The SPDY/3 header dictionary (draft 3, 2.6.10.1): length-prefixed header names and
/// common values, then a run of common text. 1423 bytes.
pub(crate) fn dictionary() -> Vec<u8> {
    const WORDS: &[&str] = &[
        "options",
        "head",
        "post",
        "put",
        "delete",
        "trace",
        "accept",
        "accept-charset",
        "accept-encoding",
        "accept-language",
        "accept-ranges",
        "age",
        "allow",
        "authorization",
        "cache-control",
        "connection",
        "content-base",
        "content-encoding",
        "content-language",
        "content-length",
        "content-location",
        "content-md5",
        "content-range",
        "content-type",
        "date",
        "etag",
        "expect",
        "expires",
        "from",
        "host",
        "if-match",
        "if-modified-since",
        "if-none-match",
        "if-range",
        "if-unmodified-since",
        "last-modified",
        "location",
        "max-forwards",
        "pragma",
        "proxy-authenticate",
        "proxy-authorization",
        "range",
        "referer",
        "retry-after",
        "server",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "user-agent",
        "vary",
        "via",
        "warning",
        "www-authenticate",
        "method",
        "get",
        "status",
        "200 OK",
        "version",
        "HTTP/1.1",
        "url",
        "public",
        "set-cookie",
        "keep-alive",
        "origin",
    ];
    const TAIL: &[&str] = &[
        "100101201202205206300302303304305306307402405406407408409410411412413414415416417",
        "502504505203 Non-Authoritative Information204 No Content301 Moved Permanently",
        "400 Bad Request401 Unauthorized403 Forbidden404 Not Found500 Internal Server Error",
        "501 Not Implemented503 Service Unavailable",
        "Jan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 ",
        "Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMT",
        "chunked,text/html,image/png,image/jpg,image/gif,application/xml,application/xhtml+xml,",
        "text/plain,text/javascript,publicprivatemax-age=gzip,deflate,sdch",
        "charset=utf-8charset=iso-8859-1,utf-,*,enq=0.",
    ];
    let mut dictionary = Vec::with_capacity(1423);
    for word in WORDS {
        push_u32(&mut dictionary, word.len());
        dictionary.extend_from_slice(word.as_bytes());
    }
    for part in TAIL {
        dictionary.extend_from_slice(part.as_bytes());
    }
    dictionary
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt as _;

    #[test]
    fn dictionary_is_the_spdy3_one() {
        let dictionary = dictionary();
        assert_eq!(dictionary.len(), 1423);
        assert_eq!(&dictionary[..11], b"\0\0\0\x07options");
        assert!(dictionary.ends_with(b"utf-,*,enq=0."));
    }

    #[test]
    fn header_blocks_round_trip_through_a_dictionary_compressor() {
        // A peer compresses with the dictionary, as Go's spdy framer does.
        let mut peer = Compress::new(Compression::best(), true);
        peer.set_dictionary(&dictionary()).unwrap();
        let mut decoder = HeaderDecoder::new();
        for (i, port) in ["8080", "9090"].iter().enumerate() {
            let mut raw = Vec::new();
            let headers = [("streamtype", "data"), ("port", *port), ("requestid", "0")];
            push_u32(&mut raw, headers.len());
            for (name, value) in headers {
                push_u32(&mut raw, name.len());
                raw.extend_from_slice(name.as_bytes());
                push_u32(&mut raw, value.len());
                raw.extend_from_slice(value.as_bytes());
            }
            let mut block = Vec::with_capacity(1024);
            peer.compress_vec(&raw, &mut block, FlushCompress::Sync)
                .unwrap();
            let decoded = decoder.decode(&block).unwrap();
            assert_eq!(
                decoded[1],
                ("port".to_owned(), (*port).to_owned()),
                "block {i}"
            );
        }
    }

    #[test]
    fn our_header_blocks_inflate_as_one_stream() {
        let mut encoder = HeaderEncoder::new();
        let mut inflate = Decompress::new(true);
        for _ in 0..3 {
            let block = encoder.encode(&[]);
            let mut out = Vec::with_capacity(64);
            inflate
                .decompress_vec(&block, &mut out, FlushDecompress::Sync)
                .unwrap();
            assert_eq!(out, [0, 0, 0, 0]);
        }
    }

    #[test]
    fn garbage_header_blocks_and_huge_counts_are_errors() {
        assert!(HeaderDecoder::new().decode(b"not zlib at all").is_err());
        assert!(parse_header_block(&[0, 0, 1, 0]).is_err());
        assert!(parse_header_block(&[0, 0, 0, 1, 0, 0, 0, 9, b'a']).is_err());
    }

    /// Every frame of `bytes`, read through `reader`; the error ends the list.
    async fn all_frames<R: AsyncRead + Unpin>(reader: R) -> Vec<Result<Frame, String>> {
        let mut frames = FrameReader::new(reader);
        let mut out = Vec::new();
        loop {
            match frames.next().await {
                Ok(Some(frame)) => out.push(Ok(frame)),
                Ok(None) => return out,
                Err(err) => {
                    out.push(Err(err.to_string()));
                    return out;
                }
            }
        }
    }

    /// A reader handing out bytes one piece per read.
    struct Pieces(std::collections::VecDeque<Vec<u8>>);

    impl AsyncRead for Pieces {
        fn poll_read(
            mut self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
            buf: &mut tokio::io::ReadBuf<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            if let Some(mut piece) = self.0.pop_front() {
                let n = piece.len().min(buf.remaining());
                buf.put_slice(&piece[..n]);
                if n < piece.len() {
                    self.0.push_front(piece.split_off(n));
                }
            }
            std::task::Poll::Ready(Ok(()))
        }
    }

    /// `bytes` in pieces of the given sizes (then the rest at once).
    fn in_pieces(bytes: &[u8], sizes: &[usize]) -> Pieces {
        let mut pieces = std::collections::VecDeque::new();
        let mut rest = bytes;
        for size in sizes {
            let (piece, tail) = rest.split_at((*size).min(rest.len()));
            if !piece.is_empty() {
                pieces.push_back(piece.to_vec());
            }
            rest = tail;
        }
        if !rest.is_empty() {
            pieces.push_back(rest.to_vec());
        }
        Pieces(pieces)
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_bytes_never_panic_the_frame_reader_or_header_decoder(
            bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..512)
        ) {
            let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
            runtime.block_on(all_frames(&bytes[..]));
            let _ = HeaderDecoder::new().decode(&bytes);
            let _ = parse_header_block(&bytes);
        }

        #[test]
        fn frames_split_across_reads_come_out_whole_and_in_order(
            payloads in proptest::collection::vec(proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300), 1..8),
            sizes in proptest::collection::vec(1usize..40, 0..40),
        ) {
            let mut wire = Vec::new();
            for (i, payload) in payloads.iter().enumerate() {
                wire.extend(data_frame(u32::try_from(i).unwrap() * 2 + 1, i % 2 == 0, payload));
                wire.extend(ping_frame(u32::try_from(i).unwrap()));
            }
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            let whole = runtime.block_on(all_frames(&wire[..]));
            let split = runtime.block_on(all_frames(in_pieces(&wire, &sizes)));
            proptest::prop_assert_eq!(whole.len(), payloads.len() * 2);
            proptest::prop_assert_eq!(split, whole);
        }
    }

    #[tokio::test]
    async fn a_read_cancelled_mid_frame_resumes_where_it_stopped() {
        let frame = data_frame(5, false, &[7u8; 1000]);
        let (mut client, server) = tokio::io::duplex(64 * 1024);
        let mut reader = FrameReader::new(server);
        client.write_all(&frame[..500]).await.unwrap();
        // The read loses a race (as a `select!` branch would) with half a frame in.
        let raced = tokio::time::timeout(std::time::Duration::from_millis(20), reader.next()).await;
        assert!(raced.is_err(), "no frame yet");
        client.write_all(&frame[500..]).await.unwrap();
        client.write_all(&ping_frame(9)).await.unwrap();
        assert_eq!(
            reader.next().await.unwrap(),
            Some(Frame::Data {
                stream_id: 5,
                fin: false,
                data: Bytes::from(vec![7u8; 1000])
            })
        );
        assert_eq!(reader.next().await.unwrap(), Some(Frame::Ping { id: 9 }));
    }

    #[tokio::test]
    async fn frames_are_bounded_and_versions_checked() {
        let huge: &[u8] = &[0, 0, 0, 1, 0, 0xff, 0xff, 0xff];
        assert!(matches!(
            FrameReader::new(huge).next().await,
            Err(SpdyError::TooLarge(_))
        ));
        let v2: &[u8] = &[0x80, 2, 0, 6, 0, 0, 0, 4, 0, 0, 0, 1];
        assert!(matches!(
            FrameReader::new(v2).next().await,
            Err(SpdyError::Version(2))
        ));
        let ping = ping_frame(7);
        assert_eq!(
            FrameReader::new(&ping[..]).next().await.unwrap(),
            Some(Frame::Ping { id: 7 })
        );
        let data = data_frame(3, true, b"hi");
        assert_eq!(
            FrameReader::new(&data[..]).next().await.unwrap(),
            Some(Frame::Data {
                stream_id: 3,
                fin: true,
                data: Bytes::from_static(b"hi")
            })
        );
        let empty: &[u8] = &[];
        assert_eq!(FrameReader::new(empty).next().await.unwrap(), None);
        let truncated = &data[..5];
        assert!(
            FrameReader::new(truncated).next().await.is_err(),
            "an end inside a frame"
        );
    }
}
