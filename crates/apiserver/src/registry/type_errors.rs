//! Values of the wrong JSON type in a built-in object, worded as kube-apiserver words them
//! (Go's `encoding/json`, as it decodes): `json: cannot unmarshal string into Go struct
//! field DeploymentSpec.spec.replicas of type int32` — the innermost struct, the field's
//! path from the root (without indexes or map keys) and the Go type the field has.
//!
//! The types come from the kind's OpenAPI schema. Fields whose types decode themselves
//! (quantities, times, int-or-strings, raw extensions, managed fields) are not judged here.

use serde_json::Value;

use crate::registry::openapi::kind_schemas;

/// Schemas whose Go types unmarshal themselves, with their own rules.
const SELF_DECODING: [&str; 6] = [
    "io.k8s.apimachinery.pkg.api.resource.Quantity",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Time",
    "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime",
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString",
    "io.k8s.apimachinery.pkg.runtime.RawExtension",
    "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1",
];

/// The first field of `object` (in key order) whose value has a JSON type its kind's
/// schema does not allow, as kube-apiserver's message; `None` when every field fits (or
/// the kind has no schema here).
pub(crate) fn type_mismatch(
    group: &str,
    version: &str,
    kind: &str,
    object: &Value,
) -> Option<String> {
    let (schemas, root) = kind_schemas(group, version, kind)?;
    let walker = Walker { schemas: &schemas };
    let root_schema = schemas.get(&root)?;
    let mut path = Vec::new();
    walker.check_struct(&root, root_schema, object, &mut path)
}

struct Walker<'a> {
    schemas: &'a Value,
}

/// The Go struct a field belongs to and the field's path.
struct Field<'a> {
    owner: &'a str,
    path: &'a [String],
}

impl Walker<'_> {
    /// The schema `schema` refers to (`$ref`, or `allOf` with one `$ref`), with its name.
    fn resolve<'s>(&'s self, schema: &'s Value) -> (Option<&'s str>, &'s Value) {
        let reference = schema.get("$ref").and_then(Value::as_str).or_else(|| {
            schema
                .get("allOf")
                .and_then(Value::as_array)
                .and_then(|all| all.first())
                .and_then(|first| first.get("$ref"))
                .and_then(Value::as_str)
        });
        match reference.and_then(|r| r.strip_prefix("#/components/schemas/")) {
            Some(name) => (Some(name), self.schemas.get(name).unwrap_or(&Value::Null)),
            None => (None, schema),
        }
    }

    /// Checks the fields of a struct (`name`) against their schemas.
    fn check_struct(
        &self,
        name: &str,
        schema: &Value,
        object: &Value,
        path: &mut Vec<String>,
    ) -> Option<String> {
        let fields = object.as_object()?;
        let properties = schema.get("properties")?.as_object()?;
        let owner = name.rsplit('.').next().unwrap_or(name);
        for (key, value) in fields {
            let Some(property) = properties.get(key) else {
                continue;
            };
            path.push(key.clone());
            let found = self.check(
                property,
                value,
                &Field {
                    owner,
                    path: path.as_slice(),
                },
            );
            path.pop();
            if found.is_some() {
                return found;
            }
        }
        None
    }

    /// Checks one value against its schema; `field` is where Go would say it is.
    fn check(&self, schema: &Value, value: &Value, field: &Field<'_>) -> Option<String> {
        if value.is_null() {
            return None; // Go leaves the zero value.
        }
        let (reference, schema) = self.resolve(schema);
        if reference.is_some_and(|name| SELF_DECODING.contains(&name)) {
            return None;
        }
        let mismatch = || {
            Some(format!(
                "json: cannot unmarshal {} into Go struct field {}.{} of type {}",
                json_type(value, schema),
                field.owner,
                field.path.join("."),
                self.go_type(reference, schema)
            ))
        };
        if let Some(name) = reference {
            if !value.is_object() {
                return mismatch();
            }
            return self.check_struct(name, schema, value, &mut field.path.to_vec());
        }
        match schema.get("type").and_then(Value::as_str) {
            Some("string") if !value.is_string() => mismatch(),
            Some("boolean") if !value.is_boolean() => mismatch(),
            Some("integer") if !fits_integer(value, schema) => mismatch(),
            Some("number") if !value.is_number() => mismatch(),
            Some("array") => {
                let Some(items) = value.as_array() else {
                    return mismatch();
                };
                let item_schema = schema.get("items")?;
                items
                    .iter()
                    .find_map(|item| self.check(item_schema, item, field))
            }
            Some("object") => {
                let Some(entries) = value.as_object() else {
                    return mismatch();
                };
                match schema.get("additionalProperties").filter(|s| s.is_object()) {
                    Some(entry_schema) => entries
                        .values()
                        .find_map(|entry| self.check(entry_schema, entry, field)),
                    None => None,
                }
            }
            _ => None,
        }
    }

    /// The Go type of a field, as Go names it in the message.
    fn go_type(&self, reference: Option<&str>, schema: &Value) -> String {
        if let Some(name) = reference {
            let mut parts = name.rsplit('.');
            let type_name = parts.next().unwrap_or(name);
            return match parts.next() {
                Some(package) => format!("{package}.{type_name}"),
                None => type_name.to_owned(),
            };
        }
        let format = schema.get("format").and_then(Value::as_str);
        match schema.get("type").and_then(Value::as_str) {
            Some("integer") => format.unwrap_or("int64").to_owned(),
            Some("number") => "float64".to_owned(),
            Some("boolean") => "bool".to_owned(),
            Some("array") => {
                let items = schema.get("items").unwrap_or(&Value::Null);
                let (item_ref, item_schema) = self.resolve(items);
                format!("[]{}", self.go_type(item_ref, item_schema))
            }
            Some("object") => {
                let entries = schema.get("additionalProperties").unwrap_or(&Value::Null);
                let (entry_ref, entry_schema) = self.resolve(entries);
                format!("map[string]{}", self.go_type(entry_ref, entry_schema))
            }
            _ => "string".to_owned(),
        }
    }
}

/// Whether `value` is an integer in the range of the schema's format.
fn fits_integer(value: &Value, schema: &Value) -> bool {
    let Some(n) = value.as_i64() else {
        // Beyond i64, or a fraction: no Go integer holds it.
        return false;
    };
    match schema.get("format").and_then(Value::as_str) {
        Some("int32") => i32::try_from(n).is_ok(),
        _ => true,
    }
}

/// How Go names the JSON value it could not put in the field (`number 1.5` for a number
/// that does not fit an integer).
fn json_type(value: &Value, schema: &Value) -> String {
    match value {
        Value::String(_) => "string".to_owned(),
        Value::Bool(_) => "bool".to_owned(),
        Value::Array(_) => "array".to_owned(),
        Value::Object(_) => "object".to_owned(),
        Value::Number(n) if schema.get("type").and_then(Value::as_str) == Some("integer") => {
            format!("number {n}")
        }
        Value::Number(_) | Value::Null => "number".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::type_mismatch;

    fn deployment(spec: serde_json::Value) -> serde_json::Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": spec})
    }

    #[test]
    fn wrong_types_are_worded_as_go_decoding_words_them() {
        let cases = [
            (
                deployment(json!({"replicas": "two"})),
                "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32",
            ),
            (
                deployment(
                    json!({"template": {"spec": {"containers": [{"name": "c", "env": [{"name": "A", "value": 1}]}]}}}),
                ),
                "json: cannot unmarshal number into Go struct field EnvVar.spec.template.spec.containers.env.value of type string",
            ),
            (
                deployment(json!("nope")),
                "json: cannot unmarshal string into Go struct field Deployment.spec of type v1.DeploymentSpec",
            ),
            (
                deployment(json!({"replicas": 1.5})),
                "json: cannot unmarshal number 1.5 into Go struct field DeploymentSpec.spec.replicas of type int32",
            ),
            (
                deployment(json!({"template": {"spec": {"containers": {}}}})),
                "json: cannot unmarshal object into Go struct field PodSpec.spec.template.spec.containers of type []v1.Container",
            ),
            (
                json!({"metadata": {"name": "d", "labels": {"a": 1}}}),
                "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels of type string",
            ),
        ];
        for (object, expected) in cases {
            assert_eq!(
                type_mismatch("apps", "v1", "Deployment", &object).as_deref(),
                Some(expected),
                "{object}"
            );
        }
    }

    #[test]
    fn values_of_the_right_type_and_self_decoding_fields_pass() {
        let object = deployment(
            json!({"replicas": 2, "selector": {"matchLabels": {"a": "b"}},
            "strategy": {"rollingUpdate": {"maxSurge": 1, "maxUnavailable": "25%"}},
            "template": {"metadata": {"creationTimestamp": null},
                "spec": {"containers": [{"name": "c", "resources": {"limits": {"cpu": 1}}}]}}}),
        );
        assert_eq!(type_mismatch("apps", "v1", "Deployment", &object), None);
        assert_eq!(type_mismatch("example.com", "v1", "Widget", &object), None);
    }
}
