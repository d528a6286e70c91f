//! What every stored object must satisfy, checked on the final object of every create,
//! update, patch and apply (after merging), as the API server does:
//!
//! 1. It decodes into its type (400 BadRequest, `ConfigMap in version "v1" cannot be
//!    handled as a ConfigMap: ...`): the built-in types into their `k8s-openapi` structs,
//!    custom resources at least their `metadata` into `ObjectMeta`. One object that a typed
//!    client cannot decode would otherwise poison every list and informer of its resource.
//! 2. Its labels and annotation keys are valid (422 Invalid, the API server's messages).
//! 3. A custom resource matches its version's OpenAPI v3 schema (`validate_schema.rs`)
//!    and its `x-kubernetes-validations` rules (`cel_validation.rs`).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kubeclient_machinery::{Status, StatusCause};
use serde::Deserialize;
use serde_json::Value;

use super::names::{label_value, qualified_name};
use super::store::result::{StoreResult, fail, invalid_object};
use super::strategy::NameRule;
use crate::registry::{BuiltinType, ResourceDef, WithType, builtin_type};

/// The most bytes all annotations of an object may hold (keys plus values), as upstream.
const MAX_ANNOTATIONS_BYTES: usize = 256 * 1024;

/// Fields whose values are `resource.Quantity`, which the API server also accepts as JSON
/// numbers (`cpu: 1`) while `k8s-openapi` only reads strings.
const QUANTITY_FIELDS: [&str; 13] = [
    "limits",
    "requests",
    "capacity",
    "allocatable",
    "hard",
    "used",
    "overhead",
    "sizeLimit",
    "max",
    "min",
    "default",
    "defaultRequest",
    "maxLimitRequestRatio",
];

/// Runs the checks on `object`, a complete object about to be stored (`old`: the object
/// an update replaces, for transition rules).
///
/// # Errors
///
/// 400 when it does not decode into its type, 422 for invalid labels or annotations.
pub(crate) fn check_object(
    resource: &ResourceDef,
    object: &Value,
    old: Option<&Value>,
) -> StoreResult<()> {
    check_decodes(resource, object)?;
    check_metadata(resource, object)?;
    super::apiextensions::validate_schema::check_schema(resource, object, old)
}

/// Checks that `object` encodes to at most `max_bytes` (a patch can grow an object
/// beyond the request body limit: `copy` operations, long merge values).
///
/// # Errors
///
/// 413 RequestEntityTooLarge.
pub(crate) fn check_size(
    resource: &ResourceDef,
    object: &Value,
    max_bytes: usize,
) -> StoreResult<()> {
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 = self.0.saturating_add(buf.len());
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    if serde_json::to_writer(&mut counter, object).is_ok() && counter.0 <= max_bytes {
        return Ok(());
    }
    Err(fail(Status::failure(
        kubeclient_machinery::StatusReason::RequestEntityTooLarge,
        format!(
            "Request entity too large: the {} would be {} bytes, over the limit of {max_bytes}",
            resource.kind, counter.0
        ),
    )))
}

/// Checks that `object` decodes into its type.
///
/// # Errors
///
/// 400 BadRequest naming the kind and the decoding error; 422 Invalid when only a required
/// field is missing (the API server decodes those and its validation rejects them).
pub(crate) fn check_decodes(resource: &ResourceDef, object: &Value) -> StoreResult<()> {
    let result = if resource.builtin {
        decode_builtin(&resource.group, &resource.kind, object).or_else(|err| {
            // Quantities given as numbers are valid; retry with them as strings.
            match relaxed_quantities(object) {
                Some(relaxed) => decode_builtin(&resource.group, &resource.kind, &relaxed),
                None => Err(err),
            }
        })
    } else {
        match object.get("metadata") {
            Some(metadata) => ObjectMeta::deserialize(metadata).map(drop),
            None => Ok(()),
        }
    };
    let Err(err) = result else { return Ok(()) };
    let message = err.to_string();
    if let Some(field) = message
        .strip_prefix("missing field `")
        .and_then(|rest| rest.split('`').next())
    {
        return Err(fail(Status::invalid(
            &resource.group,
            &resource.kind,
            object
                .get("metadata")
                .and_then(|m| m.get("name"))
                .and_then(Value::as_str)
                .unwrap_or(""),
            vec![StatusCause::new(
                "FieldValueRequired",
                "Required value",
                field,
            )],
        )));
    }
    // Say which field has the wrong type, as kube-apiserver does.
    let message = if resource.builtin {
        super::type_errors::type_mismatch(
            &resource.group,
            &resource.version,
            &resource.kind,
            object,
        )
        .unwrap_or(message)
    } else {
        message
    };
    Err(fail(Status::bad_request(format!(
        "{kind} in version {version:?} cannot be handled as a {kind}: {message}",
        kind = resource.kind,
        version = resource.version,
    ))))
}

/// Decodes `object` into a type.
struct Decode<'a>(&'a Value);

impl WithType for Decode<'_> {
    type Output = Result<(), serde_json::Error>;

    fn with<T: BuiltinType>(self) -> Self::Output {
        T::deserialize(self.0).map(drop)
    }
}

/// Decodes into the `k8s-openapi` type of a built-in kind (other kinds: their metadata).
fn decode_builtin(group: &str, kind: &str, object: &Value) -> Result<(), serde_json::Error> {
    builtin_type(group, kind, Decode(object)).unwrap_or_else(|| match object.get("metadata") {
        Some(metadata) => ObjectMeta::deserialize(metadata).map(drop),
        None => Ok(()),
    })
}

/// `object` with numbers under quantity-valued fields made strings, if it has any.
pub(crate) fn relaxed_quantities(object: &Value) -> Option<Value> {
    let mut relaxed = object.clone();
    stringify_quantities(&mut relaxed, false).then_some(relaxed)
}

/// Turns numbers under quantity-valued fields into strings; returns whether any changed.
fn stringify_quantities(value: &mut Value, under_quantity: bool) -> bool {
    match value {
        Value::Number(number) if under_quantity => {
            *value = Value::String(number.to_string());
            true
        }
        Value::Object(map) => {
            let mut changed = false;
            for (key, child) in map.iter_mut() {
                let quantity = QUANTITY_FIELDS.contains(&key.as_str())
                    || (under_quantity && !child.is_object());
                changed |= stringify_quantities(child, quantity);
            }
            changed
        }
        Value::Array(items) => {
            let mut changed = false;
            for item in items {
                changed |= stringify_quantities(item, false);
            }
            changed
        }
        _ => false,
    }
}

/// Checks label keys and values and annotation keys and size.
///
/// # Errors
///
/// 422 Invalid listing every invalid entry.
pub(crate) fn check_metadata(resource: &ResourceDef, object: &Value) -> StoreResult<()> {
    let metadata = object.get("metadata");
    let map = |field: &str| {
        metadata
            .and_then(|m| m.get(field))
            .and_then(Value::as_object)
    };
    let mut causes = Vec::new();
    let mut invalid = |field: &str, value: &str, why: &str| {
        causes.push(StatusCause::new(
            "FieldValueInvalid",
            &format!("Invalid value: {value:?}: {why}"),
            field,
        ));
    };
    if let Some(labels) = map("labels") {
        for (key, value) in labels {
            if let Err(why) = qualified_name(key) {
                invalid("metadata.labels", key, &why.to_string());
            }
            if let Some(why) = value.as_str().and_then(|v| label_value(v).err()) {
                invalid(
                    "metadata.labels",
                    value.as_str().unwrap_or(""),
                    &why.to_string(),
                );
            }
        }
    }
    if let Some(annotations) = map("annotations") {
        let mut total = 0usize;
        for (key, value) in annotations {
            if let Err(why) = qualified_name(&key.to_ascii_lowercase()) {
                invalid("metadata.annotations", key, &why.to_string());
            }
            total = total
                .saturating_add(key.len())
                .saturating_add(value.as_str().map_or(0, str::len));
        }
        if total > MAX_ANNOTATIONS_BYTES {
            causes.push(StatusCause::new(
                "FieldValueTooLong",
                &format!("Too long: must have at most {MAX_ANNOTATIONS_BYTES} bytes"),
                "metadata.annotations",
            ));
        }
    }
    if causes.is_empty() {
        return Ok(());
    }
    Err(invalid_object(resource, object, causes))
}

/// Checks a name as the API server does: a DNS-1123 subdomain for most resources, a
/// DNS-1123 label for namespaces, a path segment for the RBAC kinds.
pub(crate) fn validate_name(resource: &ResourceDef, name: &str) -> StoreResult<()> {
    let rule = super::kinds::strategy_for(resource).name_rule();
    let valid_label = |label: &str| {
        let bytes = label.as_bytes();
        match (bytes.first(), bytes.last()) {
            (Some(first), Some(last)) => {
                first.is_ascii_alphanumeric()
                    && last.is_ascii_alphanumeric()
                    && bytes
                        .iter()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
            }
            _ => false,
        }
    };
    let message = match rule {
        NameRule::Label if name.len() <= 63 && valid_label(name) => return Ok(()),
        NameRule::Subdomain if name.len() <= 253 && name.split('.').all(valid_label) => {
            return Ok(());
        }
        NameRule::Label => {
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
        }
        NameRule::Subdomain => {
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
        }
        NameRule::PathSegment => match name {
            "." => "may not be '.'",
            ".." => "may not be '..'",
            _ if name.contains('/') => "may not contain '/'",
            _ if name.contains('%') => "may not contain '%'",
            _ => return Ok(()),
        },
    };
    Err(fail(Status::invalid(
        &resource.group,
        &resource.kind,
        name,
        vec![StatusCause::new(
            "FieldValueInvalid",
            &format!("Invalid value: {name:?}: {message}"),
            "metadata.name",
        )],
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;

    #[test]
    fn names_are_checked_like_the_api_server() {
        let registry = Registry::new();
        let configmaps = registry.lookup("", "v1", "configmaps").unwrap();
        let namespaces = registry.lookup("", "v1", "namespaces").unwrap();
        assert!(validate_name(&configmaps, "app.config-1").is_ok());
        assert!(validate_name(&configmaps, "App").is_err());
        assert!(validate_name(&configmaps, "-a").is_err());
        assert!(validate_name(&namespaces, "a.b").is_err());
        let roles = registry
            .lookup("rbac.authorization.k8s.io", "v1", "clusterroles")
            .unwrap();
        assert!(
            validate_name(&roles, "system:basic-user").is_ok(),
            "RBAC names are path segments"
        );
        assert!(validate_name(&roles, "Mixed Case").is_ok());
        for bad in [".", "..", "a/b", "100%"] {
            assert!(validate_name(&roles, bad).is_err(), "{bad}");
        }
        let err = validate_name(&configmaps, "Bad_Name").unwrap_err();
        assert_eq!(err.code, 422);
        assert!(
            err.message
                .starts_with("ConfigMap \"Bad_Name\" is invalid: metadata.name: Invalid value"),
            "{}",
            err.message
        );
    }

    #[test]
    fn label_keys_over_63_characters_and_values_with_spaces_are_invalid() {
        assert_eq!(
            qualified_name(&"a".repeat(64)).unwrap_err().to_string(),
            "name part must be no more than 63 characters"
        );
        assert!(qualified_name(&"a".repeat(63)).is_ok());
        assert!(qualified_name("example.com/app").is_ok());
        assert!(qualified_name("Example.com/app").is_err());
        assert!(qualified_name("/app").is_err());
        assert!(qualified_name("a/b/c").is_err());
        assert!(label_value("with space").is_err());
        assert!(label_value("").is_ok());
        assert!(label_value("v1.2_x-y").is_ok());
        assert!(label_value(&"v".repeat(64)).is_err());
    }

    #[test]
    fn quantities_as_numbers_are_strings_for_decoding_only_where_quantities_live() {
        let mut pod = serde_json::json!({"spec": {"containers": [{"name": "c",
            "resources": {"limits": {"cpu": 1, "memory": "1Gi"}}}], "priority": 5}});
        assert!(stringify_quantities(&mut pod, false));
        assert_eq!(
            pod["spec"]["containers"][0]["resources"]["limits"]["cpu"],
            "1"
        );
        assert_eq!(pod["spec"]["priority"], 5);
    }
}
