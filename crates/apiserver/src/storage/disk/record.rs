//! The bytes stored under one key: the revision of the key's last write (8 bytes, little
//! endian), then the object as compact JSON without its resourceVersion (which is that
//! revision, stamped on every read, as etcd's mod revision is).

use std::sync::Arc;

use serde_json::Value;

use super::super::object::strip_for_storage;
use super::super::{BackendError, StoredObject};

/// How many bytes the revision takes.
const REVISION_BYTES: usize = 8;

/// The record of `object` written at revision `rv`, from its JSON `encoded` by [`json`].
pub(super) fn encode(rv: u64, encoded: &[u8]) -> Vec<u8> {
    let mut record = Vec::with_capacity(REVISION_BYTES + encoded.len());
    record.extend_from_slice(&rv.to_le_bytes());
    record.extend_from_slice(encoded);
    record
}

/// The JSON stored for `object` under `full_key`: without its resourceVersion, so that
/// an update that changes nothing else stores the same bytes.
pub(super) fn json(full_key: &str, mut object: Value) -> Result<(Value, Vec<u8>), BackendError> {
    strip_for_storage(&mut object);
    let encoded = serde_json::to_vec(&object).map_err(|source| BackendError::Encode {
        key: full_key.to_owned(),
        source: Box::new(source),
    })?;
    Ok((object, encoded))
}

/// The revision and JSON of a record; a record too short for a revision does not decode.
pub(super) fn split<'r>(full_key: &str, record: &'r [u8]) -> Result<(u64, &'r [u8]), BackendError> {
    match record.split_first_chunk::<REVISION_BYTES>() {
        Some((revision, json)) => Ok((u64::from_le_bytes(*revision), json)),
        None => Err(BackendError::Decode {
            key: full_key.to_owned(),
            source: format!("a record of {} bytes has no revision", record.len()).into(),
        }),
    }
}

/// The object stored in `record` under `full_key`.
pub(super) fn decode(full_key: &str, record: &[u8]) -> Result<Arc<StoredObject>, BackendError> {
    let (rv, json) = split(full_key, record)?;
    let decode_error = |source: Box<dyn std::error::Error + Send + Sync>| BackendError::Decode {
        key: full_key.to_owned(),
        source,
    };
    let value: Value = serde_json::from_slice(json).map_err(|e| decode_error(Box::new(e)))?;
    if !value.is_object() {
        return Err(decode_error("the stored value is not a JSON object".into()));
    }
    Ok(Arc::new(StoredObject::new(value, rv)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_is_its_revision_and_its_json_without_the_resource_version() {
        let cm = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a", "resourceVersion": "3"}, "data": {"k": "v"}});
        let (_, encoded) = json("/registry/configmaps/a", cm).expect("encodes");
        assert!(!String::from_utf8_lossy(&encoded).contains("resourceVersion"));
        let record = encode(42, &encoded);
        let object = decode("/registry/configmaps/a", &record).expect("decodes");
        assert_eq!(object.rv, 42);
        assert_eq!(object.value["metadata"]["resourceVersion"], "42");
        assert_eq!(object.value["data"]["k"], "v");
    }

    #[test]
    fn garbage_does_not_decode() {
        for garbage in [
            &b"short"[..],
            b"\x01\0\0\0\0\0\0\0not json",
            b"\x01\0\0\0\0\0\0\0[1]",
        ] {
            let error = decode("/registry/pods/a", garbage).expect_err("garbage");
            assert!(
                matches!(error, BackendError::Decode { ref key, .. } if key == "/registry/pods/a")
            );
        }
    }
}
