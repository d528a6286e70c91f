//! Defaulting and pruning of custom resources by their CRD version's structural schema,
//! as apiextensions-apiserver does before validation: a property's `default` fills it when
//! absent, and fields the schema does not declare are dropped unless the node says
//! `x-kubernetes-preserve-unknown-fields: true` (or is `x-kubernetes-int-or-string`).
//! `apiVersion`, `kind` and `metadata` at the root are never pruned, nor in an
//! `x-kubernetes-embedded-resource`.

use serde_json::{Map, Value};

/// Applies the defaults of `schema` to `object`, then prunes what it does not declare.
pub(crate) fn default_and_prune(schema: &Value, object: &mut Map<String, Value>) {
    apply_object(schema, object, true, true);
}

/// Prunes what `schema` does not declare from `object`, filling no defaults (a conversion
/// to another version's schema).
pub(crate) fn prune(schema: &Value, object: &mut Map<String, Value>) {
    apply_object(schema, object, true, false);
}

fn preserves_unknown(schema: &Value) -> bool {
    schema
        .get("x-kubernetes-preserve-unknown-fields")
        .and_then(Value::as_bool)
        == Some(true)
        || schema
            .get("x-kubernetes-int-or-string")
            .and_then(Value::as_bool)
            == Some(true)
}

fn apply(schema: &Value, value: &mut Value, defaults: bool) {
    match value {
        Value::Object(map) => {
            let embedded = schema
                .get("x-kubernetes-embedded-resource")
                .and_then(Value::as_bool)
                == Some(true);
            apply_object(schema, map, embedded, defaults);
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for item in items {
                    apply(item_schema, item, defaults);
                }
            }
        }
        _ => {}
    }
}

/// Defaults (if `defaults`) and prunes one object node; `keeps_type_meta` spares
/// `apiVersion`, `kind` and `metadata` (the root, embedded resources).
fn apply_object(
    schema: &Value,
    object: &mut Map<String, Value>,
    keeps_type_meta: bool,
    defaults: bool,
) {
    let properties = schema.get("properties").and_then(Value::as_object);
    if let Some(properties) = properties.filter(|_| defaults) {
        for (key, property) in properties {
            if let Some(default) = property.get("default")
                && object.get(key).is_none_or(Value::is_null)
                && !(keeps_type_meta && is_type_meta(key))
            {
                object.insert(key.clone(), default.clone());
            }
        }
    }
    let additional = schema.get("additionalProperties").filter(|a| a.is_object());
    let preserve = preserves_unknown(schema)
        || schema.get("additionalProperties").and_then(Value::as_bool) == Some(true);
    let keys: Vec<String> = object.keys().cloned().collect();
    for key in keys {
        if keeps_type_meta && is_type_meta(&key) {
            continue;
        }
        let property = properties.and_then(|p| p.get(&key)).or(additional);
        match (property, object.get_mut(&key)) {
            (Some(property), Some(value)) => apply(property, value, defaults),
            (None, _) if !preserve => {
                object.remove(&key);
            }
            _ => {}
        }
    }
}

fn is_type_meta(key: &str) -> bool {
    matches!(key, "apiVersion" | "kind" | "metadata")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(schema: Value, object: Value) -> Value {
        let mut object = object.as_object().cloned().unwrap();
        default_and_prune(&schema, &mut object);
        Value::Object(object)
    }

    #[test]
    fn unknown_fields_are_pruned_and_defaults_filled() {
        let schema = json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {
                "size": {"type": "integer", "default": 3},
                "tags": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}});
        let object = json!({"apiVersion": "x/v1", "kind": "X", "metadata": {"name": "a"},
            "spec": {"bogus": 1, "tags": [{"name": "t", "extra": 2}], "labels": {"a": "b"},
                     "free": {"anything": {"goes": true}}},
            "top": "level"});
        assert_eq!(
            run(schema, object),
            json!({"apiVersion": "x/v1", "kind": "X", "metadata": {"name": "a"},
                "spec": {"size": 3, "tags": [{"name": "t"}], "labels": {"a": "b"},
                         "free": {"anything": {"goes": true}}}})
        );
    }

    #[test]
    fn a_preserving_root_keeps_everything() {
        let schema = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
        let object = json!({"spec": {"a": 1}, "other": [1, 2]});
        assert_eq!(run(schema, object.clone()), object);
    }
}
