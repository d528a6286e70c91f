//! Leaf: helpers over an object's JSON form that every layer uses — its store key, its
//! `metadata` strings and map, finalizers, generated names, label selectors, and the time
//! as the API server writes it. Nothing here knows about resources, requests or storage.

use k8s_openapi::apimachinery::pkg::apis::meta::v1 as metav1;
use kubeclient_machinery::{LabelSelector, SelectorError};
use serde::Deserialize as _;
use serde_json::{Map, Value};

/// The current time as the API server writes `metav1.Time`: RFC 3339, UTC, seconds.
pub(crate) fn now() -> String {
    let seconds = jiff::Timestamp::now().as_second();
    jiff::Timestamp::from_second(seconds)
        .map(|t| t.to_string())
        .unwrap_or_else(|_| "1970-01-01T00:00:00Z".to_owned())
}

/// The store key of an object.
pub(crate) fn store_key(namespace: Option<&str>, name: &str) -> String {
    match namespace {
        Some(namespace) if !namespace.is_empty() => format!("{namespace}/{name}"),
        _ => name.to_owned(),
    }
}

/// Why an object's label selector does not convert.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LabelSelectorError {
    /// It is not a `metav1.LabelSelector`.
    #[error("not a label selector")]
    Decode(#[source] serde_json::Error),
    /// Its requirements do not form a selector.
    #[error("invalid label selector")]
    Convert(#[source] SelectorError),
}

/// The API's `metav1.LabelSelector` at `selector` (absent or `null`: none, which selects
/// nothing) as a [`LabelSelector`] (Go's `metav1.LabelSelectorAsSelector`).
///
/// # Errors
///
/// The decoding or conversion error.
pub(crate) fn label_selector(
    selector: Option<&Value>,
) -> Result<LabelSelector, LabelSelectorError> {
    let api = match selector {
        None | Some(Value::Null) => None,
        Some(selector) => {
            Some(metav1::LabelSelector::deserialize(selector).map_err(LabelSelectorError::Decode)?)
        }
    };
    LabelSelector::from_api(api.as_ref()).map_err(LabelSelectorError::Convert)
}

/// Go's name for the JSON type of a value, as `encoding/json`'s decoding errors print
/// it (`cannot unmarshal string into ...`).
pub(crate) fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The strings of a JSON list (`["a", "b"]`), skipping items that are not strings; empty
/// when `value` is absent or not a list.
pub(crate) fn string_list(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// A string under `metadata` (`""` when absent).
pub(crate) fn meta_str<'a>(object: &'a Value, field: &str) -> &'a str {
    object
        .get("metadata")
        .and_then(|m| m.get(field))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// `metadata` of an object, created (or replaced, if it was not a map) when needed.
pub(crate) fn metadata_mut(object: &mut Map<String, Value>) -> &mut Map<String, Value> {
    let metadata = object
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !metadata.is_object() {
        *metadata = Value::Object(Map::new());
    }
    match metadata {
        Value::Object(map) => map,
        // Just made an object above.
        _ => unreachable!("metadata is an object"),
    }
}

/// The finalizers of an object (`metadata.finalizers`).
pub(crate) fn finalizers(object: &Value) -> impl Iterator<Item = &str> {
    object
        .get("metadata")
        .and_then(|m| m.get("finalizers"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

/// A Namespace's own finalizers (`spec.finalizers`, `kubernetes` until the namespace
/// controller emptied it).
fn namespace_finalizers(object: &Value) -> bool {
    object.get("kind").and_then(Value::as_str) == Some("Namespace")
        && object
            .get("spec")
            .and_then(|s| s.get("finalizers"))
            .and_then(Value::as_array)
            .is_some_and(|f| !f.is_empty())
}

/// Whether an object being deleted has lost its last finalizer (and must now go).
pub(crate) fn finalized(object: &Value) -> bool {
    object
        .get("metadata")
        .and_then(|m| m.get("deletionTimestamp"))
        .is_some()
        && finalizers(object).next().is_none()
        && !namespace_finalizers(object)
}

/// A name from `generateName`: the prefix (cut to 58 characters) plus 5 random characters.
pub(crate) fn generate_name(prefix: &str) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let prefix: String = prefix.chars().take(58).collect();
    let suffix: String = (0..5)
        .map(|_| char::from(ALPHABET[fastrand::usize(..ALPHABET.len())]))
        .collect();
    format!("{prefix}{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_names_keep_the_prefix_and_add_five_characters() {
        let name = generate_name("web-");
        assert_eq!(name.len(), 9);
        assert!(name.starts_with("web-"));
        assert_eq!(generate_name(&"x".repeat(100)).len(), 63);
    }

    #[test]
    fn an_object_is_finalized_once_marked_and_without_finalizers() {
        let marked = serde_json::json!({"metadata": {"deletionTimestamp": "t"}});
        assert!(finalized(&marked));
        let held = serde_json::json!({"metadata": {"deletionTimestamp": "t", "finalizers": ["x"]}});
        assert!(!finalized(&held));
        let namespace = serde_json::json!({"kind": "Namespace", "metadata": {"deletionTimestamp": "t"},
                                            "spec": {"finalizers": ["kubernetes"]}});
        assert!(!finalized(&namespace));
        assert!(!finalized(&serde_json::json!({"metadata": {}})));
    }
}
