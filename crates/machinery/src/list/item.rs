//! Work on one encoded object before decoding it: drop `metadata.managedFields` from its
//! bytes, or read its key and resourceVersion without decoding the rest.

use std::borrow::Cow;

use super::json_scan::{find_member, object_members, skip_whitespace};

/// The object's JSON without `metadata.managedFields` (borrowed unchanged when it has
/// none, or when the text is not an object this scanner understands; the decoder then
/// reports the problem).
///
/// Stripping the bytes before decoding saves the time and memory of building a
/// `managedFields` tree that would be thrown away: about a quarter of a typical Pod.
///
/// # Examples
///
/// ```
/// use kubeclient_machinery::list::strip_managed_fields;
///
/// let pod = br#"{"metadata":{"name":"a","managedFields":[{"manager":"kubectl"}],"uid":"1"},"spec":{}}"#;
/// assert_eq!(&*strip_managed_fields(pod), br#"{"metadata":{"name":"a","uid":"1"},"spec":{}}"#);
/// ```
#[must_use]
pub fn strip_managed_fields(object: &[u8]) -> Cow<'_, [u8]> {
    match managed_fields_span(object) {
        Some((from, to)) => {
            let mut stripped = Vec::with_capacity(object.len() - (to - from));
            stripped.extend_from_slice(&object[..from]);
            stripped.extend_from_slice(&object[to..]);
            Cow::Owned(stripped)
        }
        None => Cow::Borrowed(object),
    }
}

/// The byte range to cut to remove the `managedFields` member and one comma next to it.
fn managed_fields_span(object: &[u8]) -> Option<(usize, usize)> {
    let start = skip_whitespace(object, 0);
    let metadata = find_member(object, start, b"metadata")?;
    let members = object_members(object, metadata.value.0)?;
    let index = members
        .iter()
        .position(|m| &object[m.key.0..m.key.1] == b"managedFields")?;
    let member = members[index];
    Some(if index > 0 {
        // From the end of the previous value (so its comma goes too) to this value's end.
        (members[index - 1].value.1, member.value.1)
    } else if let Some(next) = members.get(1) {
        // The first member: up to the next key, taking the comma between.
        (member.key_start, next.key_start)
    } else {
        (member.key_start, member.value.1)
    })
}

/// The identity of an encoded object, read from its bytes: enough to find it in a cache
/// and to tell whether the cached copy is the same version.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ItemMeta {
    /// `metadata.namespace` (empty when absent).
    pub namespace: String,
    /// `metadata.name` (empty when absent).
    pub name: String,
    /// `metadata.resourceVersion` (empty when absent).
    pub resource_version: String,
}

impl ItemMeta {
    /// The object's cache key (`namespace/name`, or `name` for cluster-scoped objects), as
    /// [`meta_namespace_key`](crate::meta_namespace_key) computes it.
    #[must_use]
    pub fn key(&self) -> String {
        if self.namespace.is_empty() {
            self.name.clone()
        } else {
            format!("{}/{}", self.namespace, self.name)
        }
    }
}

/// Reads `metadata.namespace`, `name` and `resourceVersion` from an encoded object without
/// decoding the rest; `None` when the text is not an object with a metadata object.
///
/// # Examples
///
/// ```
/// use kubeclient_machinery::list::peek_item_meta;
///
/// let meta = peek_item_meta(br#"{"metadata":{"name":"a","namespace":"ns","resourceVersion":"7"},"data":{}}"#).unwrap();
/// assert_eq!((meta.key().as_str(), meta.resource_version.as_str()), ("ns/a", "7"));
/// ```
#[must_use]
pub fn peek_item_meta(object: &[u8]) -> Option<ItemMeta> {
    let start = skip_whitespace(object, 0);
    let metadata = find_member(object, start, b"metadata")?;
    let mut meta = ItemMeta::default();
    for member in object_members(object, metadata.value.0)? {
        let field = match &object[member.key.0..member.key.1] {
            b"name" => &mut meta.name,
            b"namespace" => &mut meta.namespace,
            b"resourceVersion" => &mut meta.resource_version,
            _ => continue,
        };
        *field = serde_json::from_slice(&object[member.value.0..member.value.1]).ok()?;
    }
    Some(meta)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stripped(text: &str) -> String {
        String::from_utf8(strip_managed_fields(text.as_bytes()).into_owned()).unwrap()
    }

    #[test]
    fn managed_fields_go_wherever_they_sit_in_metadata() {
        assert_eq!(
            stripped(r#"{"metadata":{"managedFields":[],"name":"a"}}"#),
            r#"{"metadata":{"name":"a"}}"#
        );
        assert_eq!(
            stripped(r#"{"metadata":{"name":"a", "managedFields" : [{"x":"]"}] },"b":1}"#),
            r#"{"metadata":{"name":"a" },"b":1}"#
        );
        assert_eq!(
            stripped(r#"{"metadata":{"managedFields":[]}}"#),
            r#"{"metadata":{}}"#
        );
        // Only metadata's own member: a nested "managedFields" elsewhere stays.
        let other = r#"{"spec":{"managedFields":1},"metadata":{"name":"a"}}"#;
        assert_eq!(stripped(other), other);
        for text in ["", "{", r#"{"metadata":"#, "[]", r#"{"metadata":[]}"#] {
            assert_eq!(stripped(text), text);
        }
    }

    #[test]
    fn stripped_objects_still_decode_to_the_same_object_less_managed_fields() {
        let text = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"n","managedFields":[{"manager":"m","operation":"Update"}],"labels":{"x":"y"}},"data":{"k":"v"}}"#;
        let mut expected: serde_json::Value = serde_json::from_str(text).unwrap();
        expected["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("managedFields");
        let got: serde_json::Value =
            serde_json::from_slice(&strip_managed_fields(text.as_bytes())).unwrap();
        assert_eq!(got, expected);
    }

    #[test]
    fn item_meta_is_read_without_decoding_and_unescaped() {
        let meta = peek_item_meta(
            br#" {"kind":"Pod","metadata":{"uid":"u","name":"w\u0065b","resourceVersion":"12"}}"#,
        )
        .unwrap();
        assert_eq!(meta.name, "web");
        assert_eq!(meta.key(), "web");
        assert_eq!(meta.resource_version, "12");
        assert!(peek_item_meta(br#"{"metadata":{"name":5}}"#).is_none());
        assert!(peek_item_meta(b"{}").is_none());
        assert!(peek_item_meta(b"garbage").is_none());
    }
}
