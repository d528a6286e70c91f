//! [`decode_object`]: the one place where an object's JSON becomes a typed value, for list
//! items and watch events alike.
//!
//! It uses simd-json's serde deserializer, chosen by measurement on the benchmark's Pod
//! (`cargo run --release -p kubeclient-bench --example pod_heap`): it decodes faster than
//! serde_json, and because it knows each array's length before building it, every `Vec`
//! of the object is allocated at its exact size. serde_json grows vectors by doubling and
//! leaves about 16% of a Pod's heap as unused capacity (41.0 KB against 34.5 KB).

use std::borrow::Cow;
use std::cell::RefCell;

use serde::de::DeserializeOwned;

use crate::list::strip_managed_fields;

/// An object's JSON that does not decode as the expected type.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct ObjectDecodeError {
    message: String,
}

impl ObjectDecodeError {
    /// An error with this message.
    #[must_use]
    pub fn new(message: impl Into<String>) -> Self {
        ObjectDecodeError {
            message: message.into(),
        }
    }
}

/// A scratch copy of the input larger than this is not kept for the next call.
const MAX_KEPT_SCRATCH: usize = 4 * 1024 * 1024;

thread_local! {
    /// simd-json parses in place: a per-thread copy of the input and its work buffers.
    static SCRATCH: RefCell<(Vec<u8>, simd_json::Buffers)> = RefCell::new((Vec::new(), simd_json::Buffers::default()));
}

/// Decodes one object's JSON into `K`, first dropping `metadata.managedFields` from the
/// bytes when `strip_managed_fields` is set.
///
/// # Errors
///
/// [`ObjectDecodeError`] when the text is not JSON or does not fit `K`.
///
/// # Examples
///
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kubeclient_machinery::decode_object;
///
/// let json = br#"{"metadata":{"name":"a","managedFields":[{"manager":"m"}]},"data":{"k":"v"}}"#;
/// let cm: ConfigMap = decode_object(json, true).unwrap();
/// assert_eq!(cm.metadata.name.as_deref(), Some("a"));
/// assert!(cm.metadata.managed_fields.is_none());
/// assert!(decode_object::<ConfigMap>(br#"{"data":5}"#, false).is_err());
/// ```
pub fn decode_object<K: DeserializeOwned>(
    json: &[u8],
    strip_managed_fields: bool,
) -> Result<K, ObjectDecodeError> {
    let json = if strip_managed_fields {
        self::strip_managed_fields(json)
    } else {
        Cow::Borrowed(json)
    };
    SCRATCH.with(|scratch| {
        let Ok(mut scratch) = scratch.try_borrow_mut() else {
            // Re-entered from inside a Deserialize impl: use fresh buffers.
            let mut copy = json.into_owned();
            return simd_json::serde::from_slice(&mut copy)
                .map_err(|err| ObjectDecodeError::new(err.to_string()));
        };
        let (input, buffers) = &mut *scratch;
        input.clear();
        input.extend_from_slice(&json);
        let result = simd_json::serde::from_slice_with_buffers(input, buffers)
            .map_err(|err| ObjectDecodeError::new(err.to_string()));
        if input.capacity() > MAX_KEPT_SCRATCH {
            *scratch = (Vec::new(), simd_json::Buffers::default());
        }
        result
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DynamicObject;
    use k8s_openapi::api::core::v1::{ConfigMap, Pod};

    #[test]
    fn objects_decode_like_serde_json_does() {
        let text = br#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"n","labels":{"a":"b"},"managedFields":[{"manager":"m","fieldsV1":{"f:x":{}}}]},"spec":{"containers":[{"name":"c","image":"i","ports":[{"containerPort":80}],"resources":{"limits":{"cpu":"500m"}}}]},"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True","lastProbeTime":null}]}}"#;
        let ours: Pod = decode_object(text, false).unwrap();
        let reference: Pod = serde_json::from_slice(text).unwrap();
        assert_eq!(ours, reference);
        let stripped: Pod = decode_object(text, true).unwrap();
        assert!(stripped.metadata.managed_fields.is_none());
        assert_eq!(stripped.spec, reference.spec);
        let dynamic: DynamicObject = decode_object(text, false).unwrap();
        assert_eq!(
            dynamic,
            serde_json::from_slice::<DynamicObject>(text).unwrap()
        );
    }

    #[test]
    fn bad_input_is_an_error_never_a_panic() {
        for text in [
            &b""[..],
            b"{",
            b"null",
            br#"{"data":5}"#,
            br#"{"metadata":{"finalizers":"x"}}"#,
            br#"{"metadata":{"labels":[1]}}"#,
            b"\xff\xfe",
            br#"{"a":1e999999}"#,
        ] {
            assert!(decode_object::<ConfigMap>(text, false).is_err(), "{text:?}");
        }
        // A lone surrogate escape (which no API server writes) decodes, without a panic,
        // to U+0000 where serde_json refuses it and Go writes U+FFFD.
        let cm: ConfigMap = decode_object(br#"{"data":{"k":"\ud800x"}}"#, false).unwrap();
        assert_eq!(cm.data.unwrap()["k"], "\0x");
    }
}
