//! [`PartialObjectMetadata`]: an object's metadata and nothing else.

use std::borrow::Cow;
use std::fmt;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::de::{self, IgnoredAny, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::Object;

/// An object reduced to its `metadata` (Go's `metav1.PartialObjectMetadata`): what a
/// metadata-only client asks the server for (`Accept: ...;as=PartialObjectMetadata`), and
/// what metadata-only informers cache.
///
/// Decoding reads `metadata` and skips every other field without building it, so the
/// result is the same small value whether the server honoured `as=PartialObjectMetadata`
/// or ignored it and sent the whole object (older or non-standard servers, proxies that
/// rewrite `Accept`). `apiVersion` and `kind` are always `meta.k8s.io/v1` and
/// `PartialObjectMetadata`, whatever the bytes said (client-go's metadata client also
/// drops the kind of a full object it falls back to); which resource the object belongs
/// to is the informer's or the `Api`'s to know.
///
/// # Examples
///
/// ```
/// use kubeclient_machinery::{Object, PartialObjectMetadata};
///
/// // A whole Pod, as a server that ignores `as=` sends it: only its metadata is kept.
/// let pod = br#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-0","namespace":"prod"},
///                "spec":{"containers":[{"name":"c","image":"nginx"}]},"status":{"phase":"Running"}}"#;
/// let partial: PartialObjectMetadata = kubeclient_machinery::decode_object(pod, false).unwrap();
/// assert_eq!((partial.namespace(), partial.name()), (Some("prod"), "web-0"));
/// assert_eq!((&*partial.api_version(), &*partial.kind()), ("meta.k8s.io/v1", "PartialObjectMetadata"));
/// assert_eq!(
///     serde_json::to_string(&partial).unwrap(),
///     r#"{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"web-0","namespace":"prod"}}"#
/// );
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PartialObjectMetadata {
    /// `metadata`.
    pub metadata: ObjectMeta,
}

impl PartialObjectMetadata {
    /// `meta.k8s.io/v1`.
    pub const API_VERSION: &'static str = "meta.k8s.io/v1";
    /// `PartialObjectMetadata`.
    pub const KIND: &'static str = "PartialObjectMetadata";
}

impl Object for PartialObjectMetadata {
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }

    fn api_version(&self) -> Cow<'_, str> {
        Cow::Borrowed(Self::API_VERSION)
    }

    fn kind(&self) -> Cow<'_, str> {
        Cow::Borrowed(Self::KIND)
    }
}

impl Serialize for PartialObjectMetadata {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(3))?;
        map.serialize_entry("kind", Self::KIND)?;
        map.serialize_entry("apiVersion", Self::API_VERSION)?;
        map.serialize_entry("metadata", &self.metadata)?;
        map.end()
    }
}

/// Reads `metadata` and skips every other member with [`IgnoredAny`]: a full object's
/// `spec` and `status` are never built.
impl<'de> Deserialize<'de> for PartialObjectMetadata {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct PartialVisitor;

        impl<'de> Visitor<'de> for PartialVisitor {
            type Value = PartialObjectMetadata;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a Kubernetes object (a JSON map)")
            }

            fn visit_map<A: MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<PartialObjectMetadata, A::Error> {
                let mut metadata = None;
                while let Some(key) = map.next_key::<Member>()? {
                    match key {
                        Member::Metadata => {
                            if metadata.is_some() {
                                return Err(de::Error::duplicate_field("metadata"));
                            }
                            metadata = Some(map.next_value::<Option<ObjectMeta>>()?);
                        }
                        Member::Other => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(PartialObjectMetadata {
                    metadata: metadata.flatten().unwrap_or_default(),
                })
            }
        }

        deserializer.deserialize_map(PartialVisitor)
    }
}

/// A top-level member name: `metadata`, or one to skip (never allocated).
enum Member {
    Metadata,
    Other,
}

impl<'de> Deserialize<'de> for Member {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MemberVisitor;

        impl Visitor<'_> for MemberVisitor {
            type Value = Member;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a field name")
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<Member, E> {
                Ok(if v == "metadata" {
                    Member::Metadata
                } else {
                    Member::Other
                })
            }
        }

        deserializer.deserialize_identifier(MemberVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode_object;

    const FULL_POD: &[u8] = br#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"n","uid":"u1","resourceVersion":"7","labels":{"a":"b"},"managedFields":[{"manager":"m","fieldsV1":{"f:x":{}}}]},"spec":{"containers":[{"name":"c","image":"i"}]},"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}"#;

    #[test]
    fn a_full_object_and_a_partial_one_decode_to_the_same_value() {
        let full: PartialObjectMetadata = decode_object(FULL_POD, false).unwrap();
        let partial_json = serde_json::to_vec(&full).unwrap();
        let partial: PartialObjectMetadata = decode_object(&partial_json, false).unwrap();
        assert_eq!(full, partial);
        assert_eq!(full.resource_version(), "7");
        assert_eq!(full.labels()["a"], "b");
        assert_eq!(full.meta().managed_fields.as_ref().map(Vec::len), Some(1));
        let stripped: PartialObjectMetadata = decode_object(FULL_POD, true).unwrap();
        assert!(stripped.metadata.managed_fields.is_none());
        // serde_json agrees with the simd-json path.
        assert_eq!(
            serde_json::from_slice::<PartialObjectMetadata>(FULL_POD).unwrap(),
            full
        );
    }

    #[test]
    fn missing_or_null_metadata_is_empty_and_bad_input_is_an_error() {
        let empty: PartialObjectMetadata =
            decode_object(br#"{"kind":"Pod","spec":{}}"#, false).unwrap();
        assert_eq!(empty, PartialObjectMetadata::default());
        let null: PartialObjectMetadata = decode_object(br#"{"metadata":null}"#, false).unwrap();
        assert_eq!(null, PartialObjectMetadata::default());
        for bad in [
            &b"[1]"[..],
            b"{",
            br#"{"metadata":{},"metadata":{}}"#,
            br#"{"metadata":{"labels":[1]}}"#,
            br#"{"metadata":5}"#,
        ] {
            assert!(
                decode_object::<PartialObjectMetadata>(bad, false).is_err(),
                "{bad:?}"
            );
        }
    }
}
