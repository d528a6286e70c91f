//! [`CompactRepr`]: the compact cache. Each object is kept as its protobuf message (built-in
//! kinds; JSON for the rest) compressed with zstd, using a dictionary trained on the first
//! objects of the informer's type, and is decoded when it is read.
//!
//! Why this form: a `k8s-openapi` Pod costs ~34 KB of live heap (a third of it struct shapes
//! and empty optional fields), its JSON ~5-6 KB, its protobuf ~3 KB, and zstd with a
//! dictionary shared by all objects of a type a fraction of a KB: objects of one type repeat
//! the same field names, labels, images and probes, which is exactly what a trained
//! dictionary captures. Built-in kinds are written and read by the generated protobuf
//! encoders and decoders (no serde), several times faster than JSON; an object the protobuf
//! form would not give back exactly (see
//! [`Fidelity`](kubeclient_machinery::protobuf::Fidelity)), and every custom resource, is
//! kept as JSON (docs/BENCHMARKS.md has the measured figures).
//!
//! How the dictionary comes to be: the codec keeps the start of the first
//! [`TRAINING_SAMPLES`] objects it encodes (at most [`SAMPLE_PREFIX`] bytes of each) and then
//! trains a dictionary of at most [`DICTIONARY_SIZE`] bytes on a thread of its own. Objects
//! encoded before it is ready are compressed without it; each stored object records which
//! way it was compressed, so both kinds are read back correctly. Objects rewritten later
//! (every watch event) pick the dictionary up. When training fails (too few or too varied
//! objects), the codec goes on without a dictionary.

use std::cell::RefCell;
use std::sync::{Arc, Mutex, OnceLock};

use kubeclient_machinery::protobuf::{
    Fidelity, ProtobufError, decode_message, encode_message, has_generated_codec,
};
use kubeclient_machinery::{Object, ObjectDecodeError, decode_object};
use serde::Serialize;
use serde::de::DeserializeOwned;
use zstd::zstd_safe::{self, CCtx, CDict, DCtx, DDict};

use crate::sync::lock;

/// How many objects the dictionary is trained on.
pub const TRAINING_SAMPLES: usize = 256;

/// How much of each encoded object becomes a training sample (the start of an object
/// carries the structure its type repeats).
pub const SAMPLE_PREFIX: usize = 16 * 1024;

/// The largest dictionary trained (one per informer).
pub const DICTIONARY_SIZE: usize = 64 * 1024;

/// zstd's compression level: 3 is zstd's default. With a dictionary, objects of one type
/// compress to about a tenth of their JSON at this level.
const COMPRESSION_LEVEL: i32 = 3;

/// A decompressed object larger than this is refused (objects are limited to a few MiB
/// by the API server; the bound only keeps a corrupted header from allocating).
const MAX_DECODED_SIZE: u64 = 256 * 1024 * 1024;

/// Scratch buffers larger than this are not kept for the next call.
const MAX_KEPT_SCRATCH: usize = 4 * 1024 * 1024;

/// The header's flag for "compressed with the codec's dictionary".
const WITH_DICTIONARY: u8 = 1;

/// The header's flag for "the frame holds the protobuf message, not JSON".
const PROTOBUF: u8 = 2;

/// Bytes of header before the resourceVersion: flags (1), resourceVersion length (2).
const HEADER: usize = 3;

thread_local! {
    /// Per-thread zstd contexts and the buffer objects are compressed into (one exact-size
    /// allocation per stored object is copied out of it).
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

#[derive(Default)]
struct Scratch {
    compressor: Option<CCtx<'static>>,
    decompressor: Option<DCtx<'static>>,
    /// Compressed output, or decompressed input.
    buffer: Vec<u8>,
    /// The object's encoded form, before compression.
    plain: Vec<u8>,
}

impl Scratch {
    fn trim(&mut self) {
        if self.buffer.capacity() > MAX_KEPT_SCRATCH {
            self.buffer = Vec::new();
        }
        if self.plain.capacity() > MAX_KEPT_SCRATCH {
            self.plain = Vec::new();
        }
    }
}

/// One object as the compact cache holds it: a small header (how it was encoded and
/// compressed, its resourceVersion, readable without decoding) and the zstd frame of its
/// protobuf message or JSON, in one allocation.
#[derive(Clone, PartialEq, Eq)]
pub struct CompactObject {
    bytes: Box<[u8]>,
}

impl CompactObject {
    /// The object's `metadata.resourceVersion`, read without decoding the object.
    #[must_use]
    pub fn resource_version(&self) -> &str {
        let len = usize::from(u16::from_le_bytes([self.bytes[1], self.bytes[2]]));
        std::str::from_utf8(&self.bytes[HEADER..HEADER + len]).unwrap_or("")
    }

    /// The bytes this object takes in memory (header and compressed JSON).
    #[must_use]
    pub fn encoded_len(&self) -> usize {
        self.bytes.len()
    }

    fn with_dictionary(&self) -> bool {
        self.bytes[0] & WITH_DICTIONARY != 0
    }

    /// Whether the object is held as its protobuf message (otherwise as JSON).
    #[must_use]
    pub fn is_protobuf(&self) -> bool {
        self.bytes[0] & PROTOBUF != 0
    }

    fn frame(&self) -> &[u8] {
        let len = usize::from(u16::from_le_bytes([self.bytes[1], self.bytes[2]]));
        &self.bytes[HEADER + len..]
    }
}

impl std::fmt::Debug for CompactObject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompactObject")
            .field("resource_version", &self.resource_version())
            .field("encoded_len", &self.encoded_len())
            .field("with_dictionary", &self.with_dictionary())
            .field("protobuf", &self.is_protobuf())
            .finish()
    }
}

/// Why an object could not be stored in or read from its compact form.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CompactError {
    /// The object did not serialize to JSON.
    #[error("the object does not serialize to JSON")]
    Serialize(#[source] serde_json::Error),
    /// Its resourceVersion is longer than a compact object records (65,535 bytes).
    #[error("the resourceVersion is {0} bytes long, more than a compact object records")]
    ResourceVersionTooLong(usize),
    /// zstd refused to compress or decompress.
    #[error("zstd failed: {0}")]
    Zstd(&'static str),
    /// The compressed frame does not say how large the object is, or says too large.
    #[error("the compressed object has no usable size")]
    Size,
    /// The object was compressed with a dictionary this codec does not have (it was stored
    /// by another codec).
    #[error("the object was compressed with a dictionary this codec does not have")]
    MissingDictionary,
    /// The decompressed JSON does not decode as the object's type.
    #[error("the stored object does not decode")]
    Decode(#[source] ObjectDecodeError),
    /// The decompressed protobuf message does not decode as the object's type.
    #[error("the stored object does not decode")]
    DecodeProtobuf(#[source] ProtobufError),
    /// The object says it is held as protobuf, but its type has no protobuf decoder (it was
    /// stored by another codec).
    #[error("the object is held as protobuf, which its type has no decoder for")]
    NoProtobufDecoder,
}

/// A trained dictionary, prepared for both directions.
struct Dictionary {
    compress: CDict<'static>,
    decompress: DDict<'static>,
}

/// The samples collected until the dictionary is trained.
#[derive(Default)]
struct Training {
    samples: Vec<u8>,
    sizes: Vec<usize>,
    /// Set once training has been started (or has given up): no more samples are kept.
    done: bool,
}

struct Codec<K> {
    to_json: fn(&K, &mut Vec<u8>) -> serde_json::Result<()>,
    from_json: fn(&[u8]) -> Result<K, ObjectDecodeError>,
    /// Whether `K` has generated protobuf code (built-in kinds).
    protobuf: bool,
    dictionary: Arc<OnceLock<Dictionary>>,
    training: Mutex<Training>,
}

/// The compact representation of a [`Cache`](super::Cache): objects held as zstd-compressed
/// protobuf (built-in kinds) or JSON with a dictionary trained per informer, decoded on every read (see the module
/// documentation for the trade-off). Clones share the codec and its dictionary.
///
/// An informer uses it when it is made with
/// [`SharedInformerFactory::compact_cache`](crate::informers::SharedInformerFactory::compact_cache)
/// or [`InformerOptions::compact_cache`](super::InformerOptions::compact_cache).
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kubeclient::cache::{Cache, CacheOptions, CompactRepr, KnownObjects, SharedOrCompact, Store};
/// use kubeclient::machinery::Object;
///
/// let cache = Cache::with_representation(
///     CacheOptions::default(),
///     SharedOrCompact::Compact(CompactRepr::<ConfigMap>::new()),
/// );
/// let mut cm = ConfigMap::default();
/// cm.meta_mut().name = Some("a".into());
/// cm.data = Some([("k".to_owned(), "v".to_owned())].into());
/// cache.add(Arc::new(cm.clone())).unwrap();
/// assert_eq!(*cache.get_by_key("a").unwrap().unwrap(), cm);
/// ```
pub struct CompactRepr<K> {
    codec: Arc<Codec<K>>,
}

impl<K> Clone for CompactRepr<K> {
    fn clone(&self) -> Self {
        CompactRepr {
            codec: Arc::clone(&self.codec),
        }
    }
}

impl<K> std::fmt::Debug for CompactRepr<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompactRepr")
            .field("dictionary", &self.has_dictionary())
            .finish_non_exhaustive()
    }
}

fn to_json<K: Serialize>(obj: &K, out: &mut Vec<u8>) -> serde_json::Result<()> {
    serde_json::to_writer(out, obj)
}

fn from_json<K: DeserializeOwned>(json: &[u8]) -> Result<K, ObjectDecodeError> {
    decode_object(json, false)
}

impl<K: Object + Serialize + DeserializeOwned> CompactRepr<K> {
    /// A codec for `K` with no dictionary yet (one is trained on the first objects).
    #[must_use]
    pub fn new() -> Self {
        CompactRepr {
            codec: Arc::new(Codec {
                to_json: to_json::<K>,
                from_json: from_json::<K>,
                protobuf: has_generated_codec::<K>(),
                dictionary: Arc::new(OnceLock::new()),
                training: Mutex::new(Training::default()),
            }),
        }
    }
}

impl<K: Object + Serialize + DeserializeOwned> Default for CompactRepr<K> {
    fn default() -> Self {
        CompactRepr::new()
    }
}

impl<K> CompactRepr<K> {
    /// Whether the dictionary has been trained (objects encoded from then on use it).
    #[must_use]
    pub fn has_dictionary(&self) -> bool {
        self.codec.dictionary.get().is_some()
    }
}

impl<K: Object> CompactRepr<K> {
    /// Encodes `obj`.
    ///
    /// # Errors
    ///
    /// [`CompactError`] when the object does not serialize, its resourceVersion is absurdly
    /// long, or zstd fails.
    pub fn encode(&self, obj: &K) -> Result<CompactObject, CompactError> {
        let resource_version = obj.resource_version().as_bytes();
        let rv_len = u16::try_from(resource_version.len())
            .map_err(|_| CompactError::ResourceVersionTooLong(resource_version.len()))?;
        SCRATCH.with(|scratch| {
            let mut scratch = scratch.borrow_mut();
            let result = self.encode_with(obj, resource_version, rv_len, &mut scratch);
            scratch.trim();
            result
        })
    }

    fn encode_with(
        &self,
        obj: &K,
        resource_version: &[u8],
        rv_len: u16,
        scratch: &mut Scratch,
    ) -> Result<CompactObject, CompactError> {
        let Scratch {
            compressor,
            buffer,
            plain,
            ..
        } = scratch;
        plain.clear();
        let mut flags = 0;
        if self.codec.protobuf && encode_message(obj, plain) == Some(Fidelity::Exact) {
            flags |= PROTOBUF;
        } else {
            plain.clear();
            (self.codec.to_json)(obj, plain).map_err(CompactError::Serialize)?;
        }
        self.sample(plain);
        let dictionary = self.codec.dictionary.get();
        if dictionary.is_some() {
            flags |= WITH_DICTIONARY;
        }
        let compressor = compressor.get_or_insert_with(CCtx::create);
        buffer.clear();
        buffer.reserve(HEADER + resource_version.len() + zstd_safe::compress_bound(plain.len()));
        buffer.push(flags);
        buffer.extend_from_slice(&rv_len.to_le_bytes());
        buffer.extend_from_slice(resource_version);
        // The frame goes after the header (a plain `Vec` would be written from its start).
        let mut frame = std::io::Cursor::new(&mut *buffer);
        frame.set_position((HEADER + resource_version.len()) as u64);
        let written = match dictionary {
            Some(dictionary) => {
                compressor.compress_using_cdict(&mut frame, plain, &dictionary.compress)
            }
            None => compressor.compress(&mut frame, plain, COMPRESSION_LEVEL),
        };
        match written {
            Ok(_) => Ok(CompactObject {
                bytes: Box::from(buffer.as_slice()),
            }),
            Err(code) => Err(CompactError::Zstd(zstd_safe::get_error_name(code))),
        }
    }

    /// Decodes a stored object.
    ///
    /// # Errors
    ///
    /// [`CompactError`] when the stored bytes do not decompress or decode (a stored object
    /// always does, unless memory was corrupted).
    pub fn decode(&self, stored: &CompactObject) -> Result<K, CompactError> {
        let frame = stored.frame();
        let size = zstd_safe::get_frame_content_size(frame)
            .ok()
            .flatten()
            .filter(|size| *size <= MAX_DECODED_SIZE)
            .ok_or(CompactError::Size)?;
        let size = usize::try_from(size).map_err(|_| CompactError::Size)?;
        let dictionary = if stored.with_dictionary() {
            Some(
                self.codec
                    .dictionary
                    .get()
                    .ok_or(CompactError::MissingDictionary)?,
            )
        } else {
            None
        };
        SCRATCH.with(|scratch| {
            let mut scratch = scratch.borrow_mut();
            let Scratch {
                decompressor,
                buffer,
                ..
            } = &mut *scratch;
            let decompressor = decompressor.get_or_insert_with(DCtx::create);
            buffer.clear();
            buffer.reserve(size);
            let written = match dictionary {
                Some(dictionary) => {
                    decompressor.decompress_using_ddict(buffer, frame, &dictionary.decompress)
                }
                None => decompressor.decompress(buffer, frame),
            };
            let result = match written {
                Ok(_) if stored.is_protobuf() => match decode_message::<K>(buffer) {
                    Some(decoded) => decoded.map_err(CompactError::DecodeProtobuf),
                    None => Err(CompactError::NoProtobufDecoder),
                },
                Ok(_) => (self.codec.from_json)(buffer).map_err(CompactError::Decode),
                Err(code) => Err(CompactError::Zstd(zstd_safe::get_error_name(code))),
            };
            scratch.trim();
            result
        })
    }

    /// Keeps the start of an encoded object as a training sample until enough are
    /// collected, then trains the dictionary on a thread of its own.
    fn sample(&self, encoded: &[u8]) {
        let mut training = lock(&self.codec.training);
        if training.done {
            return;
        }
        let prefix = &encoded[..encoded.len().min(SAMPLE_PREFIX)];
        training.samples.extend_from_slice(prefix);
        training.sizes.push(prefix.len());
        if training.sizes.len() < TRAINING_SAMPLES {
            return;
        }
        training.done = true;
        let samples = std::mem::take(&mut training.samples);
        let sizes = std::mem::take(&mut training.sizes);
        drop(training);
        let target = Arc::clone(&self.codec.dictionary);
        let spawned = std::thread::Builder::new()
            .name("compact-cache-dictionary".to_owned())
            .spawn(move || train(&samples, &sizes, &target));
        if let Err(err) = spawned {
            tracing::warn!(error = %err, "the compact cache could not start training its dictionary; objects are compressed without one");
        }
    }
}

/// Trains a dictionary on `samples` and publishes it in `target`; on failure the codec
/// stays without one.
fn train(samples: &[u8], sizes: &[usize], target: &OnceLock<Dictionary>) {
    match zstd::dict::from_continuous(samples, sizes, DICTIONARY_SIZE) {
        Ok(trained) => {
            let compress = CDict::try_create(&trained, COMPRESSION_LEVEL);
            let decompress = DDict::try_create(&trained);
            if let (Some(compress), Some(decompress)) = (compress, decompress) {
                let _ = target.set(Dictionary {
                    compress,
                    decompress,
                });
                tracing::debug!(
                    bytes = trained.len(),
                    "the compact cache trained its dictionary"
                );
            }
        }
        Err(err) => {
            tracing::debug!(error = %err, "the compact cache could not train a dictionary; objects are compressed without one");
        }
    }
}

#[cfg(test)]
mod tests;
