//! Extracting what one field manager owns (client-go's `managedfields.ExtractInto`): the
//! manager's `Apply` entry of `managedFields` is a field set in the `FieldsV1` encoding
//! (`f:name`, `k:{"port":80,"protocol":"TCP"}`, `v:"value"`, `i:0`, `.`), walked beside the
//! object's JSON to keep what it names: a leaf keeps its whole value (atomic lists, maps and
//! structs are owned as leaves), an inner node keeps only its named children. List-map items
//! keep their key fields, so an extracted configuration applies again as it stands.

use k8s_openapi::Metadata;
use serde_json::{Map, Value};

use super::ApplyConfiguration;

/// Why an apply configuration could not be extracted from an object.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExtractError {
    /// The object does not serialize to JSON.
    #[error("the object does not serialize")]
    Serialize(#[source] serde_json::Error),
    /// A key of the manager's field set is not a valid `FieldsV1` path element.
    #[error("the managed field set has an invalid path element {element:?}")]
    FieldSet {
        /// The offending element.
        element: String,
    },
    /// The extracted fields do not decode as the apply configuration.
    #[error("the extracted fields do not decode as an apply configuration")]
    Decode(#[source] serde_json::Error),
}

/// The configuration `field_manager` applied to `object` through `subresource` (`""`: the
/// main resource).
pub(super) fn extract_into<A: ApplyConfiguration>(
    object: &A::Object,
    field_manager: &str,
    subresource: &str,
) -> Result<A, ExtractError> {
    let meta = object.metadata();
    let entry = meta.managed_fields.iter().flatten().find(|entry| {
        entry.manager.as_deref() == Some(field_manager)
            && entry.operation.as_deref() == Some("Apply")
            && entry.subresource.as_deref().unwrap_or("") == subresource
    });
    let identity = A::identity(
        meta.name.as_deref().unwrap_or_default(),
        meta.namespace.as_deref(),
    );
    let Some(fields) = entry.and_then(|entry| entry.fields_v1.as_ref()) else {
        return Ok(identity);
    };
    let Value::Object(set) = &fields.0 else {
        return Ok(identity);
    };
    let value = serde_json::to_value(object).map_err(ExtractError::Serialize)?;
    let mut extracted = match extract_items(&value, set)? {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    // The identity (apiVersion, kind, name, namespace) wins over whatever was extracted.
    let Value::Object(identity) =
        serde_json::to_value(&identity).map_err(ExtractError::Serialize)?
    else {
        return Ok(identity);
    };
    merge_identity(&mut extracted, identity);
    serde_json::from_value(Value::Object(extracted)).map_err(ExtractError::Decode)
}

fn merge_identity(into: &mut Map<String, Value>, identity: Map<String, Value>) {
    for (key, value) in identity {
        match (into.get_mut(&key), value) {
            (Some(Value::Object(existing)), Value::Object(inner)) => {
                merge_identity(existing, inner)
            }
            (_, value) => {
                into.insert(key, value);
            }
        }
    }
}

/// Whether a field-set node names its value as a whole: no children, or only `.`.
fn is_leaf(node: &Value) -> bool {
    match node {
        Value::Object(children) => children.keys().all(|key| key == "."),
        _ => true,
    }
}

/// What `set` names of `value`.
fn extract_items(value: &Value, set: &Map<String, Value>) -> Result<Value, ExtractError> {
    match value {
        Value::Object(fields) => {
            let mut out = Map::new();
            for (element, node) in set {
                let Some(name) = element.strip_prefix("f:") else {
                    continue;
                };
                if let Some(child) = fields.get(name) {
                    out.insert(name.to_owned(), extract_node(child, node)?);
                }
            }
            Ok(Value::Object(out))
        }
        Value::Array(items) => {
            let selectors = set
                .iter()
                .filter(|(element, _)| element.as_str() != ".")
                .map(|(element, node)| Ok((Selector::parse(element)?, node)))
                .collect::<Result<Vec<_>, ExtractError>>()?;
            let mut out = Vec::new();
            for (index, item) in items.iter().enumerate() {
                let Some((selector, node)) = selectors.iter().find(|(s, _)| s.matches(index, item))
                else {
                    continue;
                };
                let mut kept = extract_node(item, node)?;
                if let (Selector::Key(keys), Value::Object(kept)) = (selector, &mut kept) {
                    for (key, key_value) in keys {
                        kept.entry(key.clone()).or_insert_with(|| key_value.clone());
                    }
                }
                out.push(kept);
            }
            Ok(Value::Array(out))
        }
        scalar => Ok(scalar.clone()),
    }
}

fn extract_node(value: &Value, node: &Value) -> Result<Value, ExtractError> {
    match node {
        Value::Object(children) if !is_leaf(node) => extract_items(value, children),
        _ => Ok(value.clone()),
    }
}

/// A path element selecting list items.
enum Selector {
    /// `k:{...}`: the item whose key fields have these values.
    Key(Map<String, Value>),
    /// `v:...`: the item equal to this value (a set).
    Value(Value),
    /// `i:N`: the item at this index.
    Index(usize),
}

impl Selector {
    fn parse(element: &str) -> Result<Self, ExtractError> {
        let invalid = || ExtractError::FieldSet {
            element: element.to_owned(),
        };
        if let Some(keys) = element.strip_prefix("k:") {
            match serde_json::from_str(keys) {
                Ok(Value::Object(keys)) => Ok(Selector::Key(keys)),
                _ => Err(invalid()),
            }
        } else if let Some(value) = element.strip_prefix("v:") {
            serde_json::from_str(value)
                .map(Selector::Value)
                .map_err(|_| invalid())
        } else if let Some(index) = element.strip_prefix("i:") {
            index.parse().map(Selector::Index).map_err(|_| invalid())
        } else {
            Err(invalid())
        }
    }

    fn matches(&self, index: usize, item: &Value) -> bool {
        match self {
            Selector::Key(keys) => keys.iter().all(|(key, value)| item.get(key) == Some(value)),
            Selector::Value(value) => item == value,
            Selector::Index(at) => *at == index,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn extract(value: Value, set: Value) -> Value {
        let Value::Object(set) = set else {
            panic!("a set is an object")
        };
        extract_items(&value, &set).unwrap()
    }

    #[test]
    fn leaves_keep_whole_values_and_inner_nodes_their_children() {
        let object = json!({
            "metadata": {"name": "a", "labels": {"x": "1", "y": "2"}},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "a"}}, "paused": true},
        });
        let set = json!({
            "f:metadata": {"f:labels": {"f:x": {}}},
            "f:spec": {"f:replicas": {}, "f:selector": {}},
        });
        assert_eq!(
            extract(object, set),
            json!({
                "metadata": {"labels": {"x": "1"}},
                "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "a"}}},
            })
        );
    }

    #[test]
    fn list_map_items_keep_their_keys_and_the_objects_order() {
        let object = json!({"ports": [
            {"port": 443, "protocol": "TCP", "name": "https", "targetPort": 8443},
            {"port": 53, "protocol": "UDP", "name": "dns"},
            {"port": 80, "protocol": "TCP", "name": "http"},
        ]});
        let set = json!({"f:ports": {
            "k:{\"port\":80,\"protocol\":\"TCP\"}": {".": {}, "f:name": {}},
            "k:{\"port\":443,\"protocol\":\"TCP\"}": {".": {}, "f:targetPort": {}},
        }});
        assert_eq!(
            extract(object, set),
            json!({"ports": [
                {"port": 443, "protocol": "TCP", "targetPort": 8443},
                {"port": 80, "protocol": "TCP", "name": "http"},
            ]})
        );
    }

    #[test]
    fn sets_and_indices_select_items() {
        let object = json!({"finalizers": ["a", "b", "c"], "args": ["x", "y"]});
        let set = json!({"f:finalizers": {"v:\"c\"": {}, "v:\"a\"": {}}, "f:args": {"i:1": {}}});
        assert_eq!(
            extract(object, set),
            json!({"finalizers": ["a", "c"], "args": ["y"]})
        );
    }

    #[test]
    fn a_malformed_path_element_is_an_error_not_a_panic() {
        let Value::Object(set) = json!({"f:ports": {"k:{not json": {}}}) else {
            unreachable!()
        };
        let err = extract_items(&json!({"ports": [{"port": 1}]}), &set).unwrap_err();
        assert!(matches!(err, ExtractError::FieldSet { element } if element == "k:{not json"));
        let Value::Object(set) = json!({"f:ports": {"q:1": {}}}) else {
            unreachable!()
        };
        assert!(extract_items(&json!({"ports": [1]}), &set).is_err());
    }
}
