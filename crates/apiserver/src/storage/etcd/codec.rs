//! How objects are encoded in etcd, as kube-apiserver encodes them: built-in types as
//! protobuf with the `k8s\0` envelope, custom resources (and the types of the groups with
//! their own servers) as JSON. The resourceVersion is never stored: it is the key's mod
//! revision, stamped on every read.

use kubeclient_machinery::protobuf;
use serde_json::Value;

use super::super::object::strip_for_storage;
use super::keys::stored_as_json;

/// Why a value read from etcd is not an object.
pub(crate) type CodecError = Box<dyn std::error::Error + Send + Sync>;

/// The bytes to store for `object` of a resource in `group`.
pub(crate) fn encode(group: &str, mut object: Value) -> Result<Vec<u8>, CodecError> {
    strip_for_storage(&mut object);
    let type_meta = |field: &str| object.get(field).and_then(Value::as_str).unwrap_or("");
    if !stored_as_json(group) && protobuf::supports(type_meta("apiVersion"), type_meta("kind")) {
        return Ok(protobuf::encode(&object)?);
    }
    Ok(serde_json::to_vec(&object)?)
}

/// The object stored as `bytes` (protobuf when it starts with `k8s\0`, else JSON).
pub(crate) fn decode(bytes: &[u8]) -> Result<Value, CodecError> {
    let object = if bytes.starts_with(protobuf::MAGIC) {
        protobuf::decode(bytes)?
    } else {
        serde_json::from_slice(bytes)?
    };
    if !object.is_object() {
        return Err("the stored value is not a JSON object".into());
    }
    Ok(object)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_types_are_protobuf_and_custom_resources_json() {
        let cm = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a", "namespace": "n", "resourceVersion": "9"},
            "data": {"k": "v"}});
        let bytes = encode("", cm.clone()).expect("a ConfigMap encodes");
        assert!(bytes.starts_with(protobuf::MAGIC));
        let decoded = decode(&bytes).expect("it decodes");
        assert_eq!(decoded["data"], cm["data"]);
        assert_eq!(decoded["metadata"].get("resourceVersion"), None);

        let widget = serde_json::json!({"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "w", "resourceVersion": "3"}, "spec": {"size": 1}});
        let bytes = encode("example.com", widget).expect("a custom resource encodes");
        assert_eq!(bytes.first(), Some(&b'{'));
        assert_eq!(decode(&bytes).expect("it decodes")["spec"]["size"], 1);
    }

    #[test]
    fn garbage_is_an_error() {
        assert!(decode(b"k8s\0\x0a\xff").is_err());
        assert!(decode(b"not json").is_err());
        assert!(decode(b"[1]").is_err());
    }
}
