//! gzip response bodies: inflated whole (bounded) or chunk by chunk as they stream.

use std::io::Write as _;

/// The most a whole (non-streamed) body may inflate to. A gzip bomb (a megabyte that
/// inflates to gigabytes) is refused instead of exhausting memory; lists are streamed and
/// not bound by this.
pub(crate) const MAX_INFLATED_BODY: usize = 512 * 1024 * 1024;

/// Decompresses a whole gzip body, refusing to produce more than `limit` bytes.
pub(crate) fn gunzip(bytes: &[u8], limit: usize) -> Result<Vec<u8>, String> {
    let mut inflater = Inflater::new();
    let mut out = inflater.inflate(bytes)?;
    out.extend(inflater.finish()?);
    if out.len() > limit {
        return Err(format!(
            "the gzip body inflates to more than {limit} bytes; refused"
        ));
    }
    Ok(out)
}

/// Inflates a gzip stream chunk by chunk.
pub(crate) struct Inflater {
    decoder: flate2::write::GzDecoder<Vec<u8>>,
}

impl Inflater {
    pub(crate) fn new() -> Self {
        Inflater {
            decoder: flate2::write::GzDecoder::new(Vec::new()),
        }
    }

    /// The bytes this chunk of compressed input inflates to.
    pub(crate) fn inflate(&mut self, chunk: &[u8]) -> Result<Vec<u8>, String> {
        self.decoder
            .write_all(chunk)
            .map_err(|err| format!("the gzip body is corrupt: {err}"))?;
        Ok(std::mem::take(self.decoder.get_mut()))
    }

    /// Whatever is left once the input has ended; fails on a truncated stream.
    pub(crate) fn finish(&mut self) -> Result<Vec<u8>, String> {
        self.decoder
            .try_finish()
            .map_err(|err| format!("the gzip body is corrupt or cut short: {err}"))?;
        Ok(std::mem::take(self.decoder.get_mut()))
    }
}

/// The next chunk of a response body, inflated when `inflater` is set, and whether the body
/// has ended (the last chunk is then what the inflater still held).
pub(crate) async fn next_chunk(
    body: &mut hyper::body::Incoming,
    inflater: &mut Option<Inflater>,
    url: &str,
) -> crate::Result<(bytes::Bytes, bool)> {
    use http_body_util::BodyExt as _;
    let transport = |cause: String| crate::Error::transport(url, cause);
    match body.frame().await {
        None => {
            let rest = match inflater {
                Some(inflater) => inflater.finish().map_err(transport)?,
                None => Vec::new(),
            };
            Ok((bytes::Bytes::from(rest), true))
        }
        Some(Err(err)) => Err(crate::Error::transport(url, err)),
        Some(Ok(frame)) => {
            let data = frame.into_data().unwrap_or_default();
            let chunk = match inflater {
                Some(inflater) => bytes::Bytes::from(inflater.inflate(&data).map_err(transport)?),
                None => data,
            };
            Ok((chunk, false))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compress(data: &[u8]) -> Vec<u8> {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        encoder.write_all(data).unwrap();
        encoder.finish().unwrap()
    }

    #[test]
    fn gzip_bodies_are_decompressed_and_corrupt_ones_reported() {
        let body = b"{\"kind\":\"PodList\",\"items\":[]}";
        assert_eq!(gunzip(&compress(body), 1024).unwrap(), body);
        assert!(gunzip(b"not gzip", 1024).unwrap_err().contains("corrupt"));
    }

    #[test]
    fn a_gzip_bomb_is_refused_past_the_limit() {
        let bomb = compress(&vec![0u8; 4 * 1024 * 1024]);
        assert!(bomb.len() < 64 * 1024);
        assert!(gunzip(&bomb, 1024 * 1024).unwrap_err().contains("refused"));
    }

    #[test]
    fn streamed_inflation_gives_the_same_bytes_at_any_chunking() {
        let data: Vec<u8> = (0..100_000u32).flat_map(|i| i.to_le_bytes()).collect();
        let compressed = compress(&data);
        let mut inflater = Inflater::new();
        let mut out = Vec::new();
        for chunk in compressed.chunks(777) {
            out.extend(inflater.inflate(chunk).unwrap());
        }
        out.extend(inflater.finish().unwrap());
        assert_eq!(out, data);
        let mut cut = Inflater::new();
        let _ = cut.inflate(&compressed[..compressed.len() / 2]).unwrap();
        assert!(cut.finish().is_err());
    }
}
