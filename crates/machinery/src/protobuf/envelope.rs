//! The envelope of every protobuf body: the magic `k8s\0`, then a `runtime.Unknown` whose
//! `typeMeta` names the kind and whose `raw` holds the object (apiserver-semantics §8.3).

use serde_json::{Map, Value};

use super::schema::schema;
use super::special::utf8;
use super::wire::{Reader, WireValue, put_len};
use super::{MAX_DEPTH, MEDIA_TYPE, ProtobufError, from_json, to_json};

/// The four bytes every protobuf body starts with.
pub const MAGIC: &[u8; 4] = b"k8s\0";

/// Encodes a JSON object of a built-in kind (its `apiVersion` and `kind` pick the message).
pub(crate) fn encode(value: &Value) -> Result<Vec<u8>, ProtobufError> {
    let (api_version, kind) = type_meta(value)?;
    let schema = schema()?;
    let message = schema.kind_message(api_version, kind)?;
    let mut raw = Vec::new();
    from_json::message(schema, message, value, 0, &mut raw)?;
    Ok(wrap(api_version, kind, &raw))
}

/// The envelope around an encoded message.
pub(crate) fn wrap(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    let mut type_meta = Vec::new();
    put_len(&mut type_meta, 1, api_version.as_bytes());
    put_len(&mut type_meta, 2, kind.as_bytes());
    let mut out = Vec::with_capacity(raw.len() + type_meta.len() + 16);
    out.extend_from_slice(MAGIC);
    put_len(&mut out, 1, &type_meta);
    put_len(&mut out, 2, raw);
    // Go writes the two empty strings too.
    put_len(&mut out, 3, b"");
    put_len(&mut out, 4, b"");
    out
}

pub(crate) fn type_meta(value: &Value) -> Result<(&str, &str), ProtobufError> {
    let field = |name| value.get(name).and_then(Value::as_str).unwrap_or_default();
    let (api_version, kind) = (field("apiVersion"), field("kind"));
    if api_version.is_empty() || kind.is_empty() {
        return Err(ProtobufError::MissingTypeMeta);
    }
    Ok((api_version, kind))
}

/// The envelope's apiVersion, kind and raw object, for a protobuf object (content type
/// empty or protobuf, no content encoding).
pub(crate) fn open(bytes: &[u8]) -> Result<(&str, &str, &[u8]), ProtobufError> {
    let (api_version, kind, raw, content_type) = open_any(bytes)?;
    match content_type {
        "" | MEDIA_TYPE => Ok((api_version, kind, raw)),
        other => Err(ProtobufError::Unsupported(format!(
            "content type {other:?}"
        ))),
    }
}

fn open_any(bytes: &[u8]) -> Result<(&str, &str, &[u8], &str), ProtobufError> {
    let body = bytes
        .strip_prefix(MAGIC)
        .ok_or(ProtobufError::MissingMagic)?;
    let (mut api_version, mut kind, mut raw) = ("", "", &[][..]);
    let (mut content_encoding, mut content_type) = ("", "");
    let mut reader = Reader::new(body);
    while let Some((number, value)) = reader.field()? {
        let WireValue::Len(b) = value else {
            return Err(ProtobufError::WrongWireType);
        };
        match number {
            1 => {
                let mut type_meta = Reader::new(b);
                while let Some((number, value)) = type_meta.field()? {
                    match (number, value) {
                        (1, WireValue::Len(v)) => api_version = utf8(v)?,
                        (2, WireValue::Len(v)) => kind = utf8(v)?,
                        _ => {}
                    }
                }
            }
            2 => raw = b,
            3 => content_encoding = utf8(b)?,
            4 => content_type = utf8(b)?,
            _ => {}
        }
    }
    if !content_encoding.is_empty() {
        return Err(ProtobufError::Unsupported(format!(
            "content encoding {content_encoding:?}"
        )));
    }
    Ok((api_version, kind, raw, content_type))
}

/// Decodes an enveloped body into the JSON form, `apiVersion` and `kind` first.
pub(crate) fn decode_at_depth(bytes: &[u8], depth: usize) -> Result<Value, ProtobufError> {
    if depth > MAX_DEPTH {
        return Err(ProtobufError::TooDeep);
    }
    let (api_version, kind, raw, content_type) = open_any(bytes)?;
    let decoded = match content_type {
        "" | MEDIA_TYPE => {
            let schema = schema()?;
            let message = schema.kind_message(api_version, kind)?;
            to_json::message(schema, message, raw, depth)?
        }
        "application/json" => serde_json::from_slice(raw).map_err(ProtobufError::RawJson)?,
        other => {
            return Err(ProtobufError::Unsupported(format!(
                "content type {other:?}"
            )));
        }
    };
    let mut object = Map::new();
    object.insert(
        "apiVersion".to_owned(),
        Value::String(api_version.to_owned()),
    );
    object.insert("kind".to_owned(), Value::String(kind.to_owned()));
    match decoded {
        Value::Object(fields) => object.extend(fields),
        other => return Err(super::special::mismatch("an object", &other)),
    }
    Ok(Value::Object(object))
}
