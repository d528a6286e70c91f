//! Kubernetes' protobuf encoding (`application/vnd.kubernetes.protobuf`) for the built-in
//! types, to and from the JSON form ([`serde_json::Value`]) that typed objects serialize to.
//!
//! The codec is driven by a schema generated from the upstream `.proto` files and Go structs
//! (`schema.txt`, by `scripts/gen-protobuf-schema`), which knows each field's number and
//! wire type, its JSON name, and what the `.proto` files leave out: whether a zero value is
//! meaningful (Go pointers) or left out of JSON (`omitempty`), and which nested messages are
//! inlined in JSON (`VolumeSource` in `Volume`). Special types: `Time` and `MicroTime`
//! (RFC 3339 in JSON, seconds and nanos on the wire), `Duration`, `Quantity`,
//! `IntOrString`, the raw JSON holders (`RawExtension`, `FieldsV1`, apiextensions' `JSON`),
//! byte fields (base64 in JSON, as Secret data), maps and Go's named slices.
//!
//! Bodies carry the envelope: the magic `k8s\0`, then a `runtime.Unknown` with the kind's
//! `apiVersion` and `kind`; watch streams are frames of a 4-byte big-endian length and a
//! `WatchEvent` ([`WatchFrameDecoder`]). Custom resources have no protobuf form.
//!
//! Hostile bytes give a [`ProtobufError`], never a panic: lengths are checked against the
//! bytes that arrived before anything is read (a length prefix never allocates), nesting is
//! bounded, and a watch frame longer than the decoder's limit is refused when its prefix
//! arrives.
//!
//! ```
//! use kubeclient_machinery::protobuf;
//!
//! let cm = serde_json::json!({
//!     "apiVersion": "v1", "kind": "ConfigMap",
//!     "metadata": {"name": "cfg", "creationTimestamp": "2024-05-01T10:00:00Z"},
//!     "data": {"a": "b"},
//! });
//! let bytes = protobuf::encode(&cm)?;
//! assert!(bytes.starts_with(protobuf::MAGIC));
//! assert_eq!(protobuf::decode(&bytes)?, cm);
//! assert!(protobuf::supports("v1", "ConfigMap"));
//! assert!(!protobuf::supports("example.com/v1", "Widget"));
//! # Ok::<(), protobuf::ProtobufError>(())
//! ```

mod de;
mod envelope;
mod from_json;
mod list;
mod list_stream;
mod schema;
mod special;
mod to_json;
mod typed;
mod watch_frame;
mod wire;
mod zero_value;

pub use de::{from_protobuf, from_protobuf_via_serde, from_protobuf_with, item_from_protobuf};
pub use envelope::MAGIC;
pub use list::{ProtobufList, decode_item, encode_item, encode_list, peek_item_meta, split_list};
pub use list_stream::ListStreamSplitter;
pub use typed::{Fidelity, decode_message, encode_message, has_generated_codec};
pub use watch_frame::{
    DEFAULT_MAX_FRAME_BYTES, WatchFrameDecoder, decode_watch_event, encode_watch_event,
    split_watch_event,
};
pub use zero_value::{go_type_at, go_zero_value};

use serde_json::Value;

/// The protobuf media type.
pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// The media type of a protobuf watch stream.
pub const WATCH_MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf;stream=watch";

/// How deeply messages may nest (CRD schemas nest; nothing legitimate comes close).
const MAX_DEPTH: usize = 100;

/// Why protobuf bytes or a JSON object could not be converted.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProtobufError {
    /// The body does not start with `k8s\0`.
    #[error("not a Kubernetes protobuf body: the k8s\\0 magic is missing")]
    MissingMagic,
    /// A length or value runs past the end of the bytes.
    #[error("truncated protobuf data")]
    Truncated,
    /// A varint longer than ten bytes.
    #[error("invalid varint")]
    InvalidVarint,
    /// Field number 0 or one beyond 2^32.
    #[error("invalid field number")]
    InvalidFieldNumber,
    /// Wire types 3 and 4 (groups) and 6 and 7 do not occur in Kubernetes' messages.
    #[error("unsupported wire type in field {number}")]
    UnsupportedWireType {
        /// The field.
        number: u32,
    },
    /// A field's wire type does not fit its schema type.
    #[error("wrong wire type for the field's type")]
    WrongWireType,
    /// Invalid UTF-8 in a string field.
    #[error("invalid UTF-8 in a string")]
    InvalidUtf8,
    /// Messages nested deeper than the limit.
    #[error("messages nested too deeply")]
    TooDeep,
    /// The kind has no protobuf schema (custom resources, unknown kinds).
    #[error("{api_version}, Kind={kind} has no protobuf encoding")]
    UnknownKind {
        /// The apiVersion.
        api_version: String,
        /// The kind.
        kind: String,
    },
    /// The object to encode lacks `apiVersion` or `kind`.
    #[error("the object has no apiVersion and kind to encode it by")]
    MissingTypeMeta,
    /// A watch frame's length prefix is above the limit.
    #[error("watch frame of {len} bytes is longer than the limit of {max}")]
    FrameTooLarge {
        /// The announced length.
        len: u64,
        /// The limit.
        max: usize,
    },
    /// A JSON value of the wrong type for its field.
    #[error("expected {expected}, found {found}")]
    JsonType {
        /// What the schema wants.
        expected: &'static str,
        /// What the JSON had.
        found: &'static str,
    },
    /// A value out of range or in the wrong format (times, durations, base64, ...).
    #[error("invalid value: {0}")]
    InvalidValue(String),
    /// A raw extension that is not JSON.
    #[error("raw extension is not JSON")]
    RawJson(#[source] serde_json::Error),
    /// A raw extension (or `FieldsV1`) that is not JSON, found by the generated decoders.
    #[error("raw extension is not JSON")]
    RawJsonDecode(#[source] crate::ObjectDecodeError),
    /// A content encoding or type inside the envelope this codec does not read.
    #[error("unsupported {0}")]
    Unsupported(String),
    /// The checked-in schema is broken (a build problem).
    #[error("protobuf schema: {0}")]
    Schema(String),
    /// An error inside one field.
    #[error("in {message} field {field:?}")]
    InField {
        /// The message's full name.
        message: &'static str,
        /// The field's JSON name.
        field: &'static str,
        /// What went wrong.
        #[source]
        source: Box<ProtobufError>,
    },
}

impl ProtobufError {
    fn in_field(self, message: &'static str, field: &'static str) -> Self {
        Self::InField {
            message,
            field,
            source: Box::new(self),
        }
    }
}

/// Encodes a built-in object, list or Status (its `apiVersion` and `kind` pick the schema)
/// as an enveloped protobuf body (see the module example).
///
/// # Errors
///
/// [`ProtobufError::UnknownKind`] for custom resources and kinds without a schema, and
/// others when the JSON does not fit the schema.
#[doc(alias = "runtime.Unknown", alias = "protobuf.Serializer")]
pub fn encode(value: &Value) -> Result<Vec<u8>, ProtobufError> {
    envelope::encode(value)
}

/// Decodes an enveloped protobuf body into the JSON form, `apiVersion` and `kind` first
/// (see the module example; [`from_protobuf`] decodes straight into a typed struct).
///
/// # Errors
///
/// [`ProtobufError`] for bytes without the magic, truncated or malformed messages and kinds
/// without a schema.
#[doc(alias = "runtime.Unknown", alias = "protobuf.Serializer")]
pub fn decode(bytes: &[u8]) -> Result<Value, ProtobufError> {
    envelope::decode_at_depth(bytes, 0)
}

/// Whether a kind has a protobuf encoding (built-in kinds, their lists, and apimachinery's
/// own kinds such as `Status`).
pub fn supports(api_version: &str, kind: &str) -> bool {
    schema::schema().is_ok_and(|s| s.kind(api_version, kind).is_some())
}

#[cfg(test)]
mod kinds_tests;
#[cfg(test)]
mod tests;
