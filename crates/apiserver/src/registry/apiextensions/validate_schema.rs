//! Validation of custom resources against their CRD version's `openAPIV3Schema`, with
//! kube-apiserver's messages (422 Invalid, one cause per field):
//!
//! - `type` (`object`, `array`, `string`, `integer`, `number`, `boolean`), `nullable`,
//!   `x-kubernetes-int-or-string`;
//! - `required`, `properties`, `additionalProperties` (a schema), `items`;
//! - `enum`; `minimum`/`maximum` (and their `exclusive` flags), `multipleOf`;
//!   `minLength`/`maxLength`, `pattern`, `format` (`schema_formats.rs`); `minItems`/`maxItems`;
//! - `allOf`, `anyOf`, `oneOf` and `not`, with the `<nil>` causes kube-apiserver gives them
//!   (after, respectively before, the causes of the alternative that failed best).
//!
//! With a scale subresource, the replicas at its spec and status paths must be integers
//! from 0 to 2^31-1 when present (kube-apiserver's `accessor error` causes).
//!
//! Not checked: `uniqueItems` (structural schemas forbid it), list and map types. CEL
//! rules (`x-kubernetes-validations`) run after these checks (`cel_validation.rs`). Unknown fields are
//! pruned and defaults applied before (`write/structural_schema.rs`). `metadata`,
//! `apiVersion` and `kind` are checked elsewhere.

use kubeclient_machinery::StatusCause;
use serde_json::Value;

use super::schema_formats;
use super::schema_patterns::CompiledPatterns;
use crate::registry::ResourceDef;
use crate::registry::store::result::{StoreResult, invalid_object};

/// Stop collecting after this many causes (a huge invalid object must not make a huge
/// answer).
const MAX_CAUSES: usize = 50;

/// Checks a custom resource against its schema, then (unless the schema checks found an
/// error that blocks them, as kube-apiserver) against its `x-kubernetes-validations`
/// rules (`cel_validation.rs`); `old` is the object an update replaces.
///
/// # Errors
///
/// 422 Invalid listing every field at fault.
pub(crate) fn check_schema(
    resource: &ResourceDef,
    object: &Value,
    old: Option<&Value>,
) -> StoreResult<()> {
    let Some(schema) = resource.schema.as_deref() else {
        return Ok(());
    };
    let mut causes = schema_causes(resource, schema, object);
    if let Some(root) = &resource.rules.root {
        if causes.iter().any(blocks_rules) {
            causes.push(StatusCause::new(
                "FieldValueInvalid",
                "Invalid value: \"null\": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
                "<nil>",
            ));
        } else {
            let evaluated = super::cel_stack::on_large_stack(|| {
                super::cel_validation::causes(root, schema, object, old)
            });
            causes.extend(evaluated.unwrap_or_else(|| {
                vec![StatusCause::new(
                    "FieldValueInvalid",
                    "Invalid value: \"object\": internal error: the validation rules could not be evaluated",
                    "<nil>",
                )]
            }));
        }
    }
    if causes.is_empty() {
        return Ok(());
    }
    causes.truncate(MAX_CAUSES);
    Err(invalid_object(resource, object, causes))
}

/// Whether a schema error keeps the rules from running (kube-apiserver's
/// `hasBlockingErr`: a wrong type or format, a missing required field, an unsupported
/// enum value, a string or list over its maximum).
fn blocks_rules(cause: &StatusCause) -> bool {
    matches!(
        cause.reason.as_str(),
        "FieldValueRequired" | "FieldValueNotSupported"
    ) || cause.message.contains("must be of type")
        || cause.message.contains("should be at most")
        || cause.message.contains("should have at most")
}

/// The schema checks' causes.
fn schema_causes(resource: &ResourceDef, schema: &Value, object: &Value) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    let (Some(properties), Some(fields)) = (
        schema.get("properties").and_then(Value::as_object),
        object.as_object(),
    ) else {
        return causes;
    };
    const CHECKED_ELSEWHERE: [&str; 3] = ["metadata", "apiVersion", "kind"];
    for (key, value) in fields {
        if CHECKED_ELSEWHERE.contains(&key.as_str()) {
            continue;
        }
        if let Some(property) = properties.get(key) {
            validate(&resource.patterns, property, value, key, &mut causes);
        }
    }
    if let Some(scale) = &resource.scale {
        for path in [&scale.spec_replicas_path, &scale.status_replicas_path] {
            check_replicas(object, path, &mut causes);
        }
    }
    for required in required_of(schema) {
        if !CHECKED_ELSEWHERE.contains(&required) && !fields.contains_key(required) {
            causes.push(StatusCause::new(
                "FieldValueRequired",
                "Required value",
                required,
            ));
        }
    }
    causes
}

/// Go's `%v` and `%T` of a decoded JSON value, for kube-apiserver's accessor errors.
fn go_value_and_type(value: &Value) -> (String, &'static str) {
    match value {
        Value::Null => ("<nil>".to_owned(), "<nil>"),
        Value::Bool(b) => (b.to_string(), "bool"),
        Value::Number(n) if n.is_i64() || n.is_u64() => (n.to_string(), "int64"),
        Value::Number(n) => (n.to_string(), "float64"),
        Value::String(s) => (s.clone(), "string"),
        Value::Array(_) => (value.to_string(), "[]interface {}"),
        Value::Object(_) => (value.to_string(), "map[string]interface {}"),
    }
}

/// The replicas at a scale path (`.spec.replicas`) must be an int32 when present.
fn check_replicas(object: &Value, path: &str, causes: &mut Vec<StatusCause>) {
    let mut value = object;
    for field in path.trim_start_matches('.').split('.') {
        match value.get(field) {
            Some(next) => value = next,
            None => return,
        }
    }
    let message = match value.as_i64() {
        Some(n) if n < 0 => format!("Invalid value: {n}: should be a non-negative integer"),
        Some(n) if n > i64::from(i32::MAX) => format!(
            "Invalid value: {n}: must be less than or equal to {}",
            i32::MAX
        ),
        Some(_) => return,
        None => {
            let (shown, go_type) = go_value_and_type(value);
            format!(
                "Invalid value: 0: {path} accessor error: {shown} is of the type {go_type}, expected int64"
            )
        }
    };
    causes.push(StatusCause::new("FieldValueInvalid", &message, path));
}

fn required_of(schema: &Value) -> impl Iterator<Item = &str> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

/// The JSON type name kube-apiserver reports for a value.
fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn invalid(causes: &mut Vec<StatusCause>, path: &str, shown: &str, detail: &str) {
    causes.push(StatusCause::new(
        "FieldValueInvalid",
        &format!("Invalid value: {shown}: {path} in body {detail}"),
        path,
    ));
}

fn number(schema: &Value, key: &str) -> Option<f64> {
    schema.get(key).and_then(Value::as_f64)
}

fn count(schema: &Value, key: &str) -> Option<usize> {
    schema
        .get(key)
        .and_then(Value::as_u64)
        .map(|n| usize::try_from(n).unwrap_or(usize::MAX))
}

fn validate(
    patterns: &CompiledPatterns,
    schema: &Value,
    value: &Value,
    path: &str,
    causes: &mut Vec<StatusCause>,
) {
    if causes.len() >= MAX_CAUSES {
        return;
    }
    if value.is_null() {
        let nullable = schema.get("nullable").and_then(Value::as_bool) == Some(true);
        if !nullable && let Some(expected) = schema.get("type").and_then(Value::as_str) {
            invalid(
                causes,
                path,
                "\"null\"",
                &format!("must be of type {expected}: \"null\""),
            );
        }
        return;
    }
    let actual = type_name(value);
    let int_or_string = schema
        .get("x-kubernetes-int-or-string")
        .and_then(Value::as_bool)
        == Some(true);
    if int_or_string {
        if !matches!(actual, "integer" | "string") {
            invalid(
                causes,
                path,
                &format!("{actual:?}"),
                &format!("must be of type integer-or-string: {actual:?}"),
            );
            return;
        }
    } else if let Some(expected) = schema.get("type").and_then(Value::as_str) {
        let matches = expected == actual || (expected == "number" && actual == "integer");
        if !matches {
            invalid(
                causes,
                path,
                &format!("{actual:?}"),
                &format!("must be of type {expected}: {actual:?}"),
            );
            return;
        }
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array)
        && !allowed.contains(value)
    {
        let supported: Vec<String> = allowed.iter().map(Value::to_string).collect();
        causes.push(StatusCause::new(
            "FieldValueNotSupported",
            &format!(
                "Unsupported value: {value}: supported values: {}",
                supported.join(", ")
            ),
            path,
        ));
    }
    match value {
        Value::Number(n) => check_number(schema, n.as_f64().unwrap_or(0.0), value, path, causes),
        Value::String(s) => {
            let length = s.chars().count();
            if let Some(min) = count(schema, "minLength")
                && length < min
            {
                invalid(
                    causes,
                    path,
                    &value.to_string(),
                    &format!("should be at least {min} chars long"),
                );
            }
            if let Some(max) = count(schema, "maxLength")
                && length > max
            {
                invalid(
                    causes,
                    path,
                    &value.to_string(),
                    &format!("should be at most {max} chars long"),
                );
            }
            if let Some(pattern) = schema.get("pattern").and_then(Value::as_str)
                && !patterns.is_match(pattern, s)
            {
                invalid(
                    causes,
                    path,
                    &value.to_string(),
                    &format!("should match '{pattern}'"),
                );
            }
            if let Some(format) = schema.get("format").and_then(Value::as_str)
                && schema_formats::conforms(format, s) == Some(false)
            {
                invalid(
                    causes,
                    path,
                    &value.to_string(),
                    &format!("must be of type {format}: {value}"),
                );
            }
        }
        Value::Array(items) => {
            if let Some(min) = count(schema, "minItems")
                && items.len() < min
            {
                invalid(
                    causes,
                    path,
                    &items.len().to_string(),
                    &format!("should have at least {min} items"),
                );
            }
            if let Some(max) = count(schema, "maxItems")
                && items.len() > max
            {
                invalid(
                    causes,
                    path,
                    &items.len().to_string(),
                    &format!("should have at most {max} items"),
                );
            }
            if let Some(item_schema) = schema.get("items").filter(|s| s.is_object()) {
                for (index, item) in items.iter().enumerate() {
                    validate(
                        patterns,
                        item_schema,
                        item,
                        &format!("{path}[{index}]"),
                        causes,
                    );
                }
            }
        }
        Value::Object(fields) => {
            let properties = schema.get("properties").and_then(Value::as_object);
            let additional = schema.get("additionalProperties").filter(|s| s.is_object());
            for (key, field) in fields {
                let child = format!("{path}.{key}");
                if let Some(property) = properties.and_then(|p| p.get(key)) {
                    validate(patterns, property, field, &child, causes);
                } else if let Some(additional) = additional {
                    validate(patterns, additional, field, &child, causes);
                }
            }
            for required in required_of(schema) {
                if !fields.contains_key(required) {
                    causes.push(StatusCause::new(
                        "FieldValueRequired",
                        "Required value",
                        &format!("{path}.{required}"),
                    ));
                }
            }
        }
        Value::Null | Value::Bool(_) => {}
    }
    check_junctors(patterns, schema, value, path, causes);
}

/// The causes `schema` finds in `value`, apart.
fn causes_under(
    patterns: &CompiledPatterns,
    schema: &Value,
    value: &Value,
    path: &str,
) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    validate(patterns, schema, value, path, &mut causes);
    causes
}

/// `allOf`, `anyOf`, `oneOf` and `not`.
fn check_junctors(
    patterns: &CompiledPatterns,
    schema: &Value,
    value: &Value,
    path: &str,
    causes: &mut Vec<StatusCause>,
) {
    let junctor = |message: String| {
        StatusCause::new(
            "FieldValueInvalid",
            &format!("Invalid value: \"\": \"{path}\" {message}"),
            "<nil>",
        )
    };
    let alternatives = |key| {
        schema
            .get(key)
            .and_then(Value::as_array)
            .map(|schemas| {
                schemas
                    .iter()
                    .map(|s| causes_under(patterns, s, value, path))
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default()
    };
    // The causes of the alternative that failed least, as kube-apiserver reports them.
    let best_failure = |results: Vec<Vec<StatusCause>>| {
        results
            .into_iter()
            .filter(|found| !found.is_empty())
            .min_by_key(Vec::len)
            .unwrap_or_default()
    };
    let all = alternatives("allOf");
    if all.iter().any(|found| !found.is_empty()) {
        causes.extend(all.into_iter().flatten());
        causes.push(junctor("must validate all the schemas (allOf)".to_owned()));
    }
    let any = alternatives("anyOf");
    if !any.is_empty() && any.iter().all(|found| !found.is_empty()) {
        causes.push(junctor(
            "must validate at least one schema (anyOf)".to_owned(),
        ));
        causes.extend(best_failure(any));
    }
    let one = alternatives("oneOf");
    let valid = one.iter().filter(|found| found.is_empty()).count();
    if !one.is_empty() && valid != 1 {
        let found = if valid == 0 {
            "Found none valid".to_owned()
        } else {
            format!("Found {valid} valid alternatives")
        };
        causes.push(junctor(format!(
            "must validate one and only one schema (oneOf). {found}"
        )));
        if valid == 0 {
            causes.extend(best_failure(one));
        }
    }
    if let Some(negated) = schema.get("not").filter(|s| s.is_object())
        && causes_under(patterns, negated, value, path).is_empty()
    {
        causes.push(junctor("must not validate the schema (not)".to_owned()));
    }
}

fn check_number(schema: &Value, n: f64, value: &Value, path: &str, causes: &mut Vec<StatusCause>) {
    let flag = |key| schema.get(key).and_then(Value::as_bool) == Some(true);
    if let Some(factor) = number(schema, "multipleOf").filter(|f| *f > 0.0) {
        // As go-openapi: a factor below 1 divides by multiplying with its inverse.
        let quotient = if factor < 1.0 {
            1.0 / factor * n
        } else {
            n / factor
        };
        if (quotient - quotient.round()).abs() > 1e-9 * quotient.abs().max(1.0) {
            invalid(
                causes,
                path,
                &value.to_string(),
                &format!("should be a multiple of {factor}"),
            );
        }
    }
    if let Some(min) = number(schema, "minimum") {
        let (bad, word) = if flag("exclusiveMinimum") {
            (n <= min, "greater than")
        } else {
            (n < min, "greater than or equal to")
        };
        if bad {
            invalid(
                causes,
                path,
                &value.to_string(),
                &format!("should be {word} {min}"),
            );
        }
    }
    if let Some(max) = number(schema, "maximum") {
        let (bad, word) = if flag("exclusiveMaximum") {
            (n >= max, "less than")
        } else {
            (n > max, "less than or equal to")
        };
        if bad {
            invalid(
                causes,
                path,
                &value.to_string(),
                &format!("should be {word} {max}"),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn causes_of(schema: Value, value: Value) -> Vec<(String, String, String)> {
        let mut causes = Vec::new();
        let patterns = crate::registry::apiextensions::schema_patterns::compile(&schema, "")
            .unwrap_or_default();
        validate(&patterns, &schema, &value, "spec", &mut causes);
        causes
            .into_iter()
            .map(|c| (c.reason, c.field, c.message))
            .collect()
    }

    #[test]
    fn wrong_types_missing_fields_and_unsupported_values_are_each_reported() {
        let schema = json!({"type": "object", "required": ["image", "replicas"], "properties": {
            "replicas": {"type": "integer", "format": "int32", "minimum": 0},
            "image": {"type": "string"},
            "mode": {"type": "string", "enum": ["fast", "safe"]},
            "ports": {"type": "array", "items": {"type": "integer"}}}});
        let causes = causes_of(
            schema,
            json!({"replicas": "three", "mode": "yolo", "ports": [80, "http"]}),
        );
        assert_eq!(
            causes,
            [
                ("FieldValueNotSupported".into(), "spec.mode".into(), "Unsupported value: \"yolo\": supported values: \"fast\", \"safe\"".into()),
                ("FieldValueInvalid".into(), "spec.ports[1]".into(), "Invalid value: \"string\": spec.ports[1] in body must be of type integer: \"string\"".into()),
                ("FieldValueInvalid".into(), "spec.replicas".into(), "Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\"".into()),
                ("FieldValueRequired".into(), "spec.image".into(), "Required value".into()),
            ]
        );
    }

    #[test]
    fn bounds_nullable_and_int_or_string_follow_the_schema() {
        let schema = json!({"type": "object", "properties": {
            "replicas": {"type": "integer", "minimum": 0, "maximum": 10},
            "name": {"type": "string", "maxLength": 3, "nullable": true},
            "port": {"x-kubernetes-int-or-string": true},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}}}});
        assert!(
            causes_of(
                schema.clone(),
                json!({"replicas": 10, "name": null, "port": "http", "labels": {"a": "b"}})
            )
            .is_empty()
        );
        let causes = causes_of(
            schema,
            json!({"replicas": -1, "name": "long", "port": true, "labels": {"a": 1}}),
        );
        let fields: Vec<&str> = causes.iter().map(|c| c.1.as_str()).collect();
        assert_eq!(
            fields,
            ["spec.labels.a", "spec.name", "spec.port", "spec.replicas"]
        );
        assert!(
            causes[3]
                .2
                .ends_with("should be greater than or equal to 0")
        );
    }

    /// The answers of kube-apiserver v1.20 for the same schema and values.
    #[test]
    fn patterns_formats_multiples_and_junctors_give_kube_apiservers_causes() {
        let schema = json!({"type": "object", "properties": {
            "name": {"type": "string", "pattern": "^[a-z]+$"},
            "id": {"type": "string", "format": "uuid"},
            "weird": {"type": "string", "format": "no-such-format"},
            "i32": {"type": "integer", "format": "int32"},
            "step": {"type": "integer", "multipleOf": 5},
            "fstep": {"type": "number", "multipleOf": 0.5},
            "any": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
                    "anyOf": [{"required": ["a"]}, {"required": ["b"]}]},
            "one": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
                    "oneOf": [{"required": ["a"]}, {"required": ["b"]}]},
            "all": {"type": "string", "allOf": [{"minLength": 2}, {"maxLength": 3}]},
            "nope": {"type": "string", "not": {"enum": ["x"]}}}});
        let good = json!({"name": "abc", "id": "01234567-89ab-cdef-0123-456789abcdef",
            "weird": "anything", "i32": 9_999_999_999_i64, "step": 10, "fstep": 1.5,
            "any": {"b": "1"}, "one": {"a": "1"}, "all": "abc", "nope": "y"});
        assert_eq!(causes_of(schema.clone(), good), []);
        let causes = causes_of(
            schema.clone(),
            json!({"name": "ABC", "id": "nope", "step": 7, "fstep": 0.3, "any": {},
                   "one": {"a": "1", "b": "2"}, "all": "abcdef", "nope": "x"}),
        );
        let expected: Vec<(String, String, String)> = [
            ("FieldValueInvalid", "spec.all", "Invalid value: \"abcdef\": spec.all in body should be at most 3 chars long"),
            ("FieldValueInvalid", "<nil>", "Invalid value: \"\": \"spec.all\" must validate all the schemas (allOf)"),
            ("FieldValueInvalid", "<nil>", "Invalid value: \"\": \"spec.any\" must validate at least one schema (anyOf)"),
            ("FieldValueRequired", "spec.any.a", "Required value"),
            ("FieldValueInvalid", "spec.fstep", "Invalid value: 0.3: spec.fstep in body should be a multiple of 0.5"),
            ("FieldValueInvalid", "spec.id", "Invalid value: \"nope\": spec.id in body must be of type uuid: \"nope\""),
            ("FieldValueInvalid", "spec.name", "Invalid value: \"ABC\": spec.name in body should match '^[a-z]+$'"),
            ("FieldValueInvalid", "<nil>", "Invalid value: \"\": \"spec.nope\" must not validate the schema (not)"),
            ("FieldValueInvalid", "<nil>", "Invalid value: \"\": \"spec.one\" must validate one and only one schema (oneOf). Found 2 valid alternatives"),
            ("FieldValueInvalid", "spec.step", "Invalid value: 7: spec.step in body should be a multiple of 5"),
        ]
        .into_iter()
        .map(|(r, f, m)| (r.to_owned(), f.to_owned(), m.to_owned()))
        .collect();
        assert_eq!(causes, expected);
        let none_valid = causes_of(schema, json!({"one": {}}));
        assert_eq!(
            none_valid,
            [
                ("FieldValueInvalid".into(), "<nil>".into(), "Invalid value: \"\": \"spec.one\" must validate one and only one schema (oneOf). Found none valid".into()),
                ("FieldValueRequired".into(), "spec.one.a".into(), "Required value".into()),
            ]
        );
    }
}
