//! The part of SPDY/3.1 kubectl's port-forward needs from a server: reading and writing
//! frames, and the header blocks, zlib-compressed against the protocol's preset
//! dictionary (draft 3, section 2.6.10.1).
//!
//! Every input is bounded: frames over [`MAX_FRAME_PAYLOAD`] and header blocks that
//! inflate past [`MAX_HEADER_BYTES`] or hold more than [`MAX_HEADERS`] pairs are errors,
//! never allocations. Flow control (WINDOW_UPDATE) is not used: the SPDY peers of
//! Kubernetes (moby/spdystream) neither send nor honour it.

use bytes::Bytes;
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

/// Reads the next frame; `None` at a clean end of the connection.
///
/// # Errors
///
/// [`SpdyError`] for I/O failures and malformed or oversized frames.
pub(crate) async fn read_frame<R: AsyncRead + Unpin>(
    reader: &mut R,
) -> Result<Option<Frame>, SpdyError> {
    let mut head = [0u8; 8];
    match reader.read_exact(&mut head).await {
        Ok(_) => {}
        Err(err) if err.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(err) => return Err(err.into()),
    }
    let [a, b, c, d, flags, l1, l2, l3] = head;
    let length = usize::from(l1) << 16 | usize::from(l2) << 8 | usize::from(l3);
    if length > MAX_FRAME_PAYLOAD {
        return Err(SpdyError::TooLarge(length));
    }
    let mut payload = vec![0u8; length];
    reader.read_exact(&mut payload).await?;
    let fin = flags & FLAG_FIN != 0;
    if a & 0x80 == 0 {
        let stream_id = u32::from_be_bytes([a, b, c, d]) & 0x7fff_ffff;
        return Ok(Some(Frame::Data {
            stream_id,
            fin,
            data: Bytes::from(payload),
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
    Ok(Some(match kind {
        SYN_STREAM => {
            let stream_id = word(0)? & 0x7fff_ffff;
            // stream id, associated stream id, priority and slot: 10 bytes.
            let header_block = payload
                .get(10..)
                .map(Bytes::copy_from_slice)
                .ok_or(SpdyError::Truncated { kind, len: length })?;
            Frame::SynStream {
                stream_id,
                fin,
                header_block,
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

    proptest::proptest! {
        #[test]
        fn arbitrary_bytes_never_panic_the_frame_reader_or_header_decoder(
            bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..512)
        ) {
            let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
            let mut reader: &[u8] = &bytes;
            runtime.block_on(async {
                while let Ok(Some(_)) = read_frame(&mut reader).await {}
            });
            let _ = HeaderDecoder::new().decode(&bytes);
            let _ = parse_header_block(&bytes);
        }
    }

    #[tokio::test]
    async fn frames_are_bounded_and_versions_checked() {
        let mut huge: &[u8] = &[0, 0, 0, 1, 0, 0xff, 0xff, 0xff];
        assert!(matches!(
            read_frame(&mut huge).await,
            Err(SpdyError::TooLarge(_))
        ));
        let mut v2: &[u8] = &[0x80, 2, 0, 6, 0, 0, 0, 4, 0, 0, 0, 1];
        assert!(matches!(
            read_frame(&mut v2).await,
            Err(SpdyError::Version(2))
        ));
        let ping = ping_frame(7);
        let mut reader: &[u8] = &ping;
        assert_eq!(
            read_frame(&mut reader).await.unwrap(),
            Some(Frame::Ping { id: 7 })
        );
        let data = data_frame(3, true, b"hi");
        let mut reader: &[u8] = &data;
        assert_eq!(
            read_frame(&mut reader).await.unwrap(),
            Some(Frame::Data {
                stream_id: 3,
                fin: true,
                data: Bytes::from_static(b"hi")
            })
        );
        let mut empty: &[u8] = &[];
        assert_eq!(read_frame(&mut empty).await.unwrap(), None);
    }
}
