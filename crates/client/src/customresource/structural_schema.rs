//! A structural OpenAPI v3 schema (what `apiextensions.k8s.io/v1` requires) from a schemars
//! schema: every node has a `type` (or `x-kubernetes-preserve-unknown-fields`), no `$ref`,
//! no `additionalProperties` beside `properties`, `nullable` instead of `null` types, the
//! properties of enum variants hoisted to their parent, and only formats Kubernetes knows.

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value};

/// The formats kube-apiserver accepts in a CRD schema (apiextensions' supported formats).
const KUBERNETES_FORMATS: &[&str] = &[
    "bsonobjectid",
    "uri",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "cidr",
    "mac",
    "uuid",
    "uuid3",
    "uuid4",
    "uuid5",
    "isbn",
    "isbn10",
    "isbn13",
    "creditcard",
    "ssn",
    "hexcolor",
    "rgbcolor",
    "byte",
    "password",
    "date",
    "duration",
    "datetime",
    "date-time",
    "int32",
    "int64",
    "float",
    "double",
];

/// Keys that describe a schema but are not allowed (or not useful) in a CRD schema.
const DROPPED_KEYS: &[&str] = &[
    "$schema",
    "$defs",
    "definitions",
    "$id",
    "title",
    "examples",
    "readOnly",
    "writeOnly",
    "deprecated",
];

/// The structural schema of `T` (inlined, openapi3 flavour, made structural).
///
/// # Examples
///
/// ```
/// #[derive(schemars::JsonSchema)]
/// struct Spec { replicas: i32, image: Option<String> }
///
/// let schema = kubeclient::customresource::structural_schema::<Spec>();
/// assert_eq!(schema["type"], "object");
/// assert_eq!(schema["properties"]["replicas"]["format"], "int32");
/// assert_eq!(schema["properties"]["image"]["nullable"], true);
/// assert_eq!(schema["required"], serde_json::json!(["replicas"]));
/// ```
#[must_use]
pub fn structural_schema<T: JsonSchema>() -> Value {
    let generator = SchemaSettings::openapi3()
        .with(|settings| {
            settings.inline_subschemas = true;
            settings.meta_schema = None;
        })
        .into_generator();
    let mut value = generator.into_root_schema_for::<T>().to_value();
    make_structural(&mut value);
    value
}

/// Rewrites a JSON schema in place into a structural one (see the module doc).
pub fn make_structural(schema: &mut Value) {
    rewrite(schema, false);
}

/// `in_junctor`: the node is a branch of `allOf`/`anyOf`/`oneOf`, where structural schemas
/// allow value validations only (no type, no `x-kubernetes-preserve-unknown-fields`).
fn rewrite(schema: &mut Value, in_junctor: bool) {
    let Value::Object(node) = schema else {
        // `true` (anything goes) and `false` both become "keep whatever is there".
        *schema = preserve_unknown();
        return;
    };
    for key in DROPPED_KEYS {
        node.remove(*key);
    }
    if let Some(Value::String(format)) = node.get("format")
        && !KUBERNETES_FORMATS.contains(&format.as_str())
    {
        node.remove("format");
    }
    if let Some(constant) = node.remove("const") {
        node.insert("enum".to_owned(), Value::Array(vec![constant]));
    }
    fold_type_array(node);
    for combinator in ["anyOf", "oneOf"] {
        fold_nullable_branch(node, combinator);
    }
    hoist_variant_properties(node);
    for key in ["allOf", "anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = node.get_mut(key) {
            for branch in branches {
                rewrite(branch, true);
            }
        }
    }
    if let Some(Value::Object(properties)) = node.get_mut("properties") {
        for property in properties.values_mut() {
            make_structural(property);
        }
    }
    if let Some(items) = node.get_mut("items") {
        make_structural(items);
    }
    if node.contains_key("properties") {
        node.remove("additionalProperties");
    } else if let Some(additional) = node.get_mut("additionalProperties") {
        match additional {
            Value::Bool(false) => {
                node.remove("additionalProperties");
            }
            other => make_structural(other),
        }
    }
    let untyped = !in_junctor
        && !node.contains_key("type")
        && !node.contains_key("anyOf")
        && !node.contains_key("oneOf")
        && !node.contains_key("allOf")
        && !node.contains_key("x-kubernetes-int-or-string");
    if untyped {
        node.insert(
            "x-kubernetes-preserve-unknown-fields".to_owned(),
            Value::Bool(true),
        );
    }
}

fn preserve_unknown() -> Value {
    serde_json::json!({"x-kubernetes-preserve-unknown-fields": true})
}

/// `type: [X, "null"]` -> `type: X, nullable: true`.
fn fold_type_array(node: &mut Map<String, Value>) {
    let Some(Value::Array(types)) = node.get("type") else {
        return;
    };
    let nullable = types.iter().any(|t| t == "null");
    let rest: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
    match rest.as_slice() {
        [one] => {
            node.insert("type".to_owned(), one.clone());
        }
        _ => {
            // Several types: only "keep anything" describes that structurally.
            node.remove("type");
            node.insert(
                "x-kubernetes-preserve-unknown-fields".to_owned(),
                Value::Bool(true),
            );
        }
    }
    if nullable {
        node.insert("nullable".to_owned(), Value::Bool(true));
    }
}

/// `{type: null}`, `{nullable: true}`, `{enum: [null]}` or `{const: null}` (with or
/// without `nullable`): the "or null" branch of an optional value.
fn is_null_schema(schema: &Value) -> bool {
    if schema.get("type").is_some_and(|t| t == "null") {
        return true;
    }
    let Some(node) = schema.as_object() else {
        return false;
    };
    let only_null = |key: &str, value: &Value| match key {
        "nullable" => value == &Value::Bool(true),
        "enum" => value == &Value::Array(vec![Value::Null]),
        "const" => value.is_null(),
        _ => false,
    };
    !node.is_empty() && node.iter().all(|(key, value)| only_null(key, value))
}

/// `anyOf: [S, {type: null}]` -> S merged into the node, `nullable: true`.
fn fold_nullable_branch(node: &mut Map<String, Value>, combinator: &str) {
    let Some(Value::Array(branches)) = node.get(combinator) else {
        return;
    };
    if !branches.iter().any(is_null_schema) {
        return;
    }
    let rest: Vec<Value> = branches
        .iter()
        .filter(|b| !is_null_schema(b))
        .cloned()
        .collect();
    if let [Value::Object(only)] = rest.as_slice() {
        node.remove(combinator);
        for (key, value) in only {
            node.entry(key.clone()).or_insert_with(|| value.clone());
        }
    } else {
        node.insert(combinator.to_owned(), Value::Array(rest));
    }
    node.insert("nullable".to_owned(), Value::Bool(true));
}

/// An enum with data is a `oneOf` of objects; structural schemas want the properties on the
/// parent, and the branches to say only which property is required.
fn hoist_variant_properties(node: &mut Map<String, Value>) {
    for combinator in ["oneOf", "anyOf"] {
        let Some(Value::Array(branches)) = node.get(combinator) else {
            continue;
        };
        let all_objects = !branches.is_empty()
            && branches.iter().all(|b| {
                b.get("type") == Some(&Value::String("object".to_owned()))
                    || b.get("properties").is_some()
            });
        let all_strings = branches
            .iter()
            .all(|b| b.get("type") == Some(&Value::String("string".to_owned())));
        if all_strings {
            // Unit variants with docs: one string enum.
            let values: Vec<Value> = branches
                .iter()
                .filter_map(|b| b.get("enum").and_then(Value::as_array))
                .flatten()
                .cloned()
                .collect();
            node.remove(combinator);
            node.insert("type".to_owned(), Value::String("string".to_owned()));
            if !values.is_empty() {
                node.insert("enum".to_owned(), Value::Array(values));
            }
            continue;
        }
        if !all_objects {
            continue;
        }
        let mut properties = node
            .get("properties")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let mut slim = Vec::new();
        for branch in branches {
            if let Some(Value::Object(props)) = branch.get("properties") {
                for (key, value) in props {
                    properties
                        .entry(key.clone())
                        .or_insert_with(|| value.clone());
                }
            }
            let mut only_required = Map::new();
            if let Some(required) = branch.get("required") {
                only_required.insert("required".to_owned(), required.clone());
            }
            slim.push(Value::Object(only_required));
        }
        node.insert("type".to_owned(), Value::String("object".to_owned()));
        node.insert("properties".to_owned(), Value::Object(properties));
        node.insert(combinator.to_owned(), Value::Array(slim));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn nullable_type_arrays_and_foreign_formats_are_rewritten() {
        let mut schema = json!({"type": "object", "title": "T", "additionalProperties": false,
            "properties": {"n": {"type": ["integer", "null"], "format": "uint32", "minimum": 0},
                           "any": true}});
        make_structural(&mut schema);
        assert_eq!(
            schema,
            json!({"type": "object", "properties": {
                "n": {"type": "integer", "nullable": true, "minimum": 0},
                "any": {"x-kubernetes-preserve-unknown-fields": true}}})
        );
    }

    #[test]
    fn enum_variants_with_data_hoist_their_properties() {
        let mut schema = json!({"oneOf": [
            {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
            {"type": "object", "properties": {"b": {"type": "integer"}}, "required": ["b"]}]});
        make_structural(&mut schema);
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["properties"]["b"]["type"], "integer");
        assert_eq!(
            schema["oneOf"],
            json!([{"required": ["a"]}, {"required": ["b"]}])
        );
    }

    /// Every node outside a junctor has a type (or keeps unknown fields); no `$ref`, no
    /// `additionalProperties` beside `properties`, no type inside a junctor.
    fn assert_structural(schema: &Value, path: &str, in_junctor: bool) {
        let node = schema
            .as_object()
            .unwrap_or_else(|| panic!("{path}: not an object"));
        assert!(!node.contains_key("$ref"), "{path}: $ref");
        if in_junctor {
            assert!(
                !node.contains_key("type"),
                "{path}: a type inside a junctor"
            );
        } else {
            assert!(
                node.contains_key("type")
                    || node.contains_key("x-kubernetes-preserve-unknown-fields"),
                "{path}: no type in {schema}"
            );
        }
        assert!(
            !(node.contains_key("properties") && node.contains_key("additionalProperties")),
            "{path}: properties and additionalProperties"
        );
        if let Some(Value::Object(properties)) = node.get("properties") {
            for (key, property) in properties {
                assert_structural(property, &format!("{path}.{key}"), false);
            }
        }
        for key in ["items", "additionalProperties"] {
            if let Some(child) = node.get(key).filter(|c| c.is_object()) {
                assert_structural(child, &format!("{path}.{key}"), false);
            }
        }
        for junctor in ["allOf", "anyOf", "oneOf"] {
            for branch in node
                .get(junctor)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                assert_structural(branch, &format!("{path}.{junctor}"), true);
            }
        }
    }

    #[test]
    fn rust_types_of_every_common_shape_become_structural_schemas() {
        #[derive(schemars::JsonSchema)]
        #[allow(dead_code)]
        enum Mode {
            Fast,
            Safe,
        }
        #[derive(schemars::JsonSchema)]
        #[allow(dead_code)]
        enum Source {
            Git { url: String, branch: Option<String> },
            Image(String),
        }
        #[derive(schemars::JsonSchema)]
        #[allow(dead_code)]
        struct Port {
            port: u16,
            name: Option<String>,
        }
        #[derive(schemars::JsonSchema)]
        #[allow(dead_code)]
        struct Spec {
            replicas: u32,
            ratio: f64,
            mode: Mode,
            source: Option<Source>,
            ports: Vec<Port>,
            labels: std::collections::BTreeMap<String, String>,
            extra: serde_json::Value,
            nested: Option<Port>,
        }
        let schema = structural_schema::<Spec>();
        assert_structural(&schema, "spec", false);
        assert_eq!(
            schema["properties"]["mode"]["enum"],
            json!(["Fast", "Safe"])
        );
        assert_eq!(
            schema["properties"]["ports"]["items"]["properties"]["port"]["minimum"],
            0
        );
        assert_eq!(
            schema["properties"]["labels"]["additionalProperties"]["type"],
            "string"
        );
        assert_eq!(
            schema["properties"]["extra"]["x-kubernetes-preserve-unknown-fields"],
            true
        );
        assert_eq!(schema["properties"]["nested"]["nullable"], true);
    }

    #[test]
    fn an_optional_struct_in_any_of_folds_into_a_nullable_object() {
        let mut schema = json!({"anyOf": [{"type": "object", "properties": {"x": {"type": "string"}}}, {"type": "null"}]});
        make_structural(&mut schema);
        assert_eq!(
            schema,
            json!({"type": "object", "nullable": true, "properties": {"x": {"type": "string"}}})
        );
    }
}
