//! [`StoredObject`]: an object as stored, parsed and serialized once.

use bytes::Bytes;
use serde_json::Value;

/// An object as stored: its JSON tree (for selectors, patches and reads that change it)
/// and its compact serialized bytes (for lists and watch events, so neither re-encodes).
///
/// Invariant: `bytes` is the compact JSON encoding of `value`, and
/// `value.metadata.resourceVersion` is `rv` as a decimal string.
#[derive(Debug)]
pub struct StoredObject {
    /// The object.
    pub value: Value,
    /// `value` serialized.
    pub bytes: Bytes,
    /// The revision of the write that produced this state.
    pub rv: u64,
}

impl StoredObject {
    /// Stamps `rv` into the object's metadata and serializes it.
    pub fn new(mut value: Value, rv: u64) -> Self {
        set_resource_version(&mut value, rv);
        let bytes = Bytes::from(serde_json::to_vec(&value).unwrap_or_default());
        StoredObject { value, bytes, rv }
    }

    /// `metadata.name`.
    pub fn name(&self) -> &str {
        str_at(&self.value, "name")
    }

    /// `metadata.namespace`, `""` for cluster-scoped objects.
    pub fn namespace(&self) -> &str {
        str_at(&self.value, "namespace")
    }
}

fn str_at<'a>(value: &'a Value, field: &str) -> &'a str {
    value
        .get("metadata")
        .and_then(|meta| meta.get(field))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// Sets `metadata.resourceVersion` (creating `metadata` if needed).
pub(crate) fn set_resource_version(value: &mut Value, rv: u64) {
    if let Some(object) = value.as_object_mut() {
        let metadata = object
            .entry("metadata")
            .or_insert_with(|| Value::Object(serde_json::Map::new()));
        if let Some(metadata) = metadata.as_object_mut() {
            metadata.insert("resourceVersion".to_owned(), Value::String(rv.to_string()));
        }
    }
}
