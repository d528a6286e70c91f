//! [`DynamicObject`]: an object of any kind, typed metadata plus the rest as JSON.

use std::borrow::Cow;
use std::fmt;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::de::{self, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::Object;

/// `apiVersion` and `kind`, the two fields every serialized object starts with
/// (Go's `metav1.TypeMeta`). Either may be empty, e.g. on list items of built-in types.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TypeMeta {
    /// `apiVersion`, e.g. `apps/v1`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// `kind`, e.g. `Deployment`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
}

/// An object whose type is known only at run time (a custom resource, or any resource
/// reached through the dynamic client): `apiVersion`, `kind` and `metadata` are typed,
/// every other top-level field is kept as JSON in [`data`](Self::data).
///
/// Serialization writes `kind`, `apiVersion`, `metadata`, then the other fields, so an
/// object read and written back keeps every field it had.
///
/// # Examples
///
/// ```
/// use kubeclient_machinery::{DynamicObject, Object};
///
/// let obj: DynamicObject = serde_json::from_str(
///     r#"{"apiVersion":"example.com/v1","kind":"Widget",
///         "metadata":{"name":"w1","namespace":"default"},"spec":{"size":3}}"#,
/// ).unwrap();
/// assert_eq!(obj.kind(), "Widget");
/// assert_eq!(obj.name(), "w1");
/// assert_eq!(obj.data["spec"]["size"], 3);
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
#[doc(alias = "Unstructured")]
pub struct DynamicObject {
    /// `apiVersion` and `kind`.
    pub types: TypeMeta,
    /// `metadata`.
    pub metadata: ObjectMeta,
    /// Every other top-level field (`spec`, `status`, `data`, ...).
    pub data: serde_json::Map<String, serde_json::Value>,
}

impl DynamicObject {
    /// A new object of the given `apiVersion` and `kind` with `metadata.name` set.
    ///
    /// # Examples
    ///
    /// ```
    /// use kubeclient_machinery::{DynamicObject, Object};
    /// let obj = DynamicObject::new("example.com/v1", "Widget", "w1");
    /// assert_eq!(obj.api_version(), "example.com/v1");
    /// assert_eq!(obj.name(), "w1");
    /// ```
    #[must_use]
    pub fn new(api_version: &str, kind: &str, name: &str) -> Self {
        DynamicObject {
            types: TypeMeta {
                api_version: api_version.to_owned(),
                kind: kind.to_owned(),
            },
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                ..ObjectMeta::default()
            },
            data: serde_json::Map::new(),
        }
    }
}

impl Object for DynamicObject {
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }

    fn api_version(&self) -> Cow<'_, str> {
        Cow::Borrowed(&self.types.api_version)
    }

    fn kind(&self) -> Cow<'_, str> {
        Cow::Borrowed(&self.types.kind)
    }
}

impl Serialize for DynamicObject {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        if !self.types.kind.is_empty() {
            map.serialize_entry("kind", &self.types.kind)?;
        }
        if !self.types.api_version.is_empty() {
            map.serialize_entry("apiVersion", &self.types.api_version)?;
        }
        map.serialize_entry("metadata", &self.metadata)?;
        for (key, value) in &self.data {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

/// Decodes in one pass without `#[serde(flatten)]`, which would buffer the whole object
/// into an intermediate tree before decoding it again.
impl<'de> Deserialize<'de> for DynamicObject {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct DynamicObjectVisitor;

        impl<'de> Visitor<'de> for DynamicObjectVisitor {
            type Value = DynamicObject;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a Kubernetes object (a JSON map)")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<DynamicObject, A::Error> {
                let mut obj = DynamicObject::default();
                let mut seen_metadata = false;
                while let Some(FieldName(key)) = map.next_key::<FieldName<'de>>()? {
                    match key.as_ref() {
                        "apiVersion" => {
                            obj.types.api_version =
                                map.next_value::<Option<String>>()?.unwrap_or_default();
                        }
                        "kind" => {
                            obj.types.kind =
                                map.next_value::<Option<String>>()?.unwrap_or_default();
                        }
                        "metadata" => {
                            if seen_metadata {
                                return Err(de::Error::duplicate_field("metadata"));
                            }
                            seen_metadata = true;
                            obj.metadata =
                                map.next_value::<Option<ObjectMeta>>()?.unwrap_or_default();
                        }
                        _ => {
                            let value = map.next_value::<serde_json::Value>()?;
                            obj.data.insert(key.into_owned(), value);
                        }
                    }
                }
                Ok(obj)
            }
        }

        deserializer.deserialize_map(DynamicObjectVisitor)
    }
}

/// A map key that borrows from the input when it can (serde's own `Cow<str>` impl always
/// allocates).
struct FieldName<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for FieldName<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct FieldNameVisitor;

        impl<'de> Visitor<'de> for FieldNameVisitor {
            type Value = FieldName<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a field name")
            }

            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(FieldName(Cow::Borrowed(v)))
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(FieldName(Cow::Owned(v.to_owned())))
            }

            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(FieldName(Cow::Owned(v)))
            }
        }

        deserializer.deserialize_str(FieldNameVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_every_field_with_type_meta_first() {
        let text = r#"{"kind":"Widget","apiVersion":"example.com/v1","metadata":{"name":"w1","namespace":"ns","resourceVersion":"7"},"spec":{"size":3},"status":{"ready":true}}"#;
        let obj: DynamicObject = serde_json::from_str(text).unwrap();
        assert_eq!(obj.namespace(), Some("ns"));
        assert_eq!(obj.resource_version(), "7");
        assert_eq!(serde_json::to_string(&obj).unwrap(), text);
    }

    #[test]
    fn missing_type_meta_and_metadata_decode_as_empty() {
        let obj: DynamicObject = serde_json::from_str(r#"{"data":{"k":"v"}}"#).unwrap();
        assert_eq!(obj.kind(), "");
        assert_eq!(obj.name(), "");
        assert_eq!(obj.data["data"]["k"], "v");
        assert_eq!(
            serde_json::to_string(&obj).unwrap(),
            r#"{"metadata":{},"data":{"k":"v"}}"#
        );
    }

    #[test]
    fn rejects_non_objects_and_duplicate_metadata_with_an_error() {
        assert!(serde_json::from_str::<DynamicObject>("[1,2]").is_err());
        assert!(serde_json::from_str::<DynamicObject>(r#"{"metadata":{},"metadata":{}}"#).is_err());
        assert!(serde_json::from_str::<DynamicObject>(r#"{"kind":5}"#).is_err());
    }
}
