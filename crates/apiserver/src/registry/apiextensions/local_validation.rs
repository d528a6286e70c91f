//! [`validate_custom_resource`]: a CRD's structural schema and CEL validation rules
//! checked on an object in-process, with the very code the embedded server runs on a
//! write, for unit tests that want the server's verdict without starting one.

use kubeclient_machinery::Status;
use serde_json::Value;

use super::{crd, crd_validation, structural_schema, validate_schema};

/// Checks `object` against the CustomResourceDefinition `crd` as the API server would on
/// a write of it: the version its `apiVersion` names is found, its defaults applied and
/// unknown fields pruned, then its schema and its `x-kubernetes-validations` CEL rules
/// checked (transition rules against `old`, the object an update replaces; `None` for a
/// create). Returns the object as it would be stored (defaulted and pruned).
///
/// The CRD itself is checked first, as a create of it would be (a rule that does not
/// compile is its 422).
///
/// # Errors
///
/// The Status the API server would answer: 422 Invalid with one cause per field at fault
/// (`Widget.example.com "w" is invalid: spec: Invalid value: "object": ...`), for the
/// object or for the CRD; 400 when the object is not of the CRD's group and kind or names
/// a version the CRD does not serve.
///
/// # Examples
///
/// ```
/// use kubeclient_apiserver::validate_custom_resource;
/// use serde_json::json;
///
/// let crd = json!({
///     "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
///     "metadata": {"name": "widgets.example.com"},
///     "spec": {"group": "example.com", "scope": "Namespaced",
///              "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
///              "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
///                  "type": "object",
///                  "properties": {"spec": {"type": "object",
///                      "properties": {"replicas": {"type": "integer"}, "max": {"type": "integer"}},
///                      "x-kubernetes-validations": [{"rule": "self.replicas <= self.max", "message": "replicas above max"}]}}}}}]},
/// });
/// let ok = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
///                 "spec": {"replicas": 2, "max": 3}});
/// assert!(validate_custom_resource(&crd, &ok, None).is_ok());
/// let too_many = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
///                       "spec": {"replicas": 5, "max": 3}});
/// let status = validate_custom_resource(&crd, &too_many, None).unwrap_err();
/// assert_eq!(status.code, 422);
/// assert_eq!(status.message, r#"Widget.example.com "w" is invalid: spec: Invalid value: "object": replicas above max"#);
/// ```
pub fn validate_custom_resource(
    crd: &Value,
    object: &Value,
    old: Option<&Value>,
) -> Result<Value, Box<Status>> {
    let crd_name = crd
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let causes = crd_validation::validate(crd, None);
    if !causes.is_empty() {
        return Err(Box::new(Status::invalid(
            "apiextensions.k8s.io",
            "CustomResourceDefinition",
            crd_name,
            causes,
        )));
    }
    let resources = crd::crd_served_resources(crd).map_err(|err| {
        Box::new(Status::bad_request(format!(
            "the CustomResourceDefinition {crd_name:?} serves nothing: {err}"
        )))
    })?;
    let api_version = object
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let kind = object.get("kind").and_then(Value::as_str).unwrap_or("");
    let Some(resource) = resources
        .iter()
        .find(|r| r.api.api_version == api_version && r.api.kind == kind)
    else {
        let served: Vec<&str> = resources
            .iter()
            .map(|r| r.api.api_version.as_str())
            .collect();
        return Err(Box::new(Status::bad_request(format!(
            "{kind} {api_version} is not served by the CustomResourceDefinition {crd_name:?} (it serves {})",
            served.join(", ")
        ))));
    };
    let mut stored = object.clone();
    if let (Some(schema), Some(fields)) = (resource.schema.as_deref(), stored.as_object_mut()) {
        structural_schema::default_and_prune(schema, fields);
    }
    validate_schema::check_schema(resource, &stored, old)?;
    Ok(stored)
}
