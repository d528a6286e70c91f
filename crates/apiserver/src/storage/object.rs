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
        let bytes = Bytes::from(encode(&value));
        StoredObject { value, bytes, rv }
    }

    /// An object whose bytes were serialized ahead of its commit, with the hole for its
    /// resourceVersion filled now.
    pub(crate) fn from_prepared(prepared: Prepared, rv: u64) -> Self {
        let Prepared {
            mut value,
            mut before,
            after,
            has_hole,
        } = prepared;
        set_resource_version(&mut value, rv);
        if has_hole {
            before.reserve(after.len() + 24);
            before.push(b'"');
            before.extend_from_slice(rv.to_string().as_bytes());
            before.push(b'"');
            before.extend_from_slice(&after);
        }
        StoredObject {
            value,
            bytes: Bytes::from(before),
            rv,
        }
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

/// An object serialized before its revision is known: the expensive encoding runs outside
/// the store lock, and the commit only splices the resourceVersion in.
///
/// Invariant: with `has_hole`, `before + "\"<rv>\"" + after` is the compact encoding of
/// `value` with `metadata.resourceVersion` = rv; without, `before` is the encoding of
/// `value`, which has no `metadata` object to stamp (never the case for stored objects,
/// whose metadata the handlers create).
#[derive(Debug)]
pub struct Prepared {
    value: Value,
    before: Vec<u8>,
    after: Vec<u8>,
    has_hole: bool,
}

impl Prepared {
    /// Serializes `value` with a placeholder resourceVersion (random, so no user data can
    /// contain it) and remembers where it is.
    pub fn new(mut value: Value) -> Self {
        let placeholder = format!("kubeclient-rv-{}", uuid::Uuid::new_v4().simple());
        let stamped = set_resource_version_text(&mut value, &placeholder);
        let mut bytes = encode(&value);
        let quoted = format!("\"{placeholder}\"");
        let at = stamped
            .then(|| {
                bytes
                    .windows(quoted.len())
                    .position(|window| window == quoted.as_bytes())
            })
            .flatten();
        match at {
            Some(at) => {
                let after = bytes.split_off(at + quoted.len());
                bytes.truncate(at);
                Prepared {
                    value,
                    before: bytes,
                    after,
                    has_hole: true,
                }
            }
            None => Prepared {
                value,
                before: bytes,
                after: Vec::new(),
                has_hole: false,
            },
        }
    }

    /// The object (its resourceVersion is the placeholder until committed).
    pub fn value(&self) -> &Value {
        &self.value
    }

    /// The size of the encoded object.
    pub fn encoded_len(&self) -> usize {
        self.before.len() + self.after.len() + 22
    }
}

/// An object's JSON as kube-apiserver writes it: `kind` and `apiVersion` first (Go
/// encodes the struct's `TypeMeta` first), then the other fields.
fn encode(value: &Value) -> Vec<u8> {
    serde_json::to_vec(&TypeMetaFirst(value)).unwrap_or_default()
}

/// Serializes a JSON object with `kind` and `apiVersion` ahead of its other keys (which
/// keep their order); any other value as it is.
pub(crate) struct TypeMetaFirst<'a>(pub(crate) &'a Value);

impl serde::Serialize for TypeMetaFirst<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let Value::Object(map) = self.0 else {
            return self.0.serialize(serializer);
        };
        let mut out = serializer.serialize_map(Some(map.len()))?;
        for key in ["kind", "apiVersion"] {
            if let Some(value) = map.get(key) {
                out.serialize_entry(key, value)?;
            }
        }
        for (key, value) in map {
            if key != "kind" && key != "apiVersion" {
                out.serialize_entry(key, value)?;
            }
        }
        out.end()
    }
}

/// Sets `metadata.resourceVersion` to `text`; false when the value is not an object.
fn set_resource_version_text(value: &mut Value, text: &str) -> bool {
    let Some(object) = value.as_object_mut() else {
        return false;
    };
    let metadata = object
        .entry("metadata")
        .or_insert_with(|| Value::Object(serde_json::Map::new()));
    match metadata.as_object_mut() {
        Some(metadata) => {
            metadata.insert("resourceVersion".to_owned(), Value::String(text.to_owned()));
            true
        }
        None => false,
    }
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

/// Removes what a backend never stores from an object: `metadata.resourceVersion` (the
/// revision of its key, stamped on every read) and the long-gone `metadata.selfLink`.
#[cfg(any(feature = "etcd", feature = "disk"))]
pub(crate) fn strip_for_storage(object: &mut Value) {
    if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        metadata.remove("resourceVersion");
        metadata.remove("selfLink");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prepared_objects_encode_exactly_like_fresh_ones() {
        let value = serde_json::json!({"kind": "ConfigMap", "metadata": {"name": "a",
            "resourceVersion": "7"}, "data": {"resourceVersion": "", "z": "\"q\""}});
        let fresh = StoredObject::new(value.clone(), 12345);
        let prepared = StoredObject::from_prepared(Prepared::new(value), 12345);
        assert_eq!(prepared.bytes, fresh.bytes);
        assert_eq!(prepared.value, fresh.value);
        let odd = StoredObject::from_prepared(Prepared::new(serde_json::json!([1])), 3);
        assert_eq!(&odd.bytes[..], b"[1]");
    }
}
