//! Turning a CustomResourceDefinition into served resources, and the status the server
//! gives it.

use serde_json::{Map, Value, json};

use crate::object::string_list;
use crate::registry::resource::{
    FieldSelectors, PrinterColumn, ResourceDef, ScaleSpec, Special, api_resource,
};

fn str_field<'a>(value: &'a Value, path: &[&str]) -> &'a str {
    path.iter()
        .try_fold(value, |v, key| v.get(key))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// Why a CustomResourceDefinition serves nothing: the field at fault and what is wrong
/// with it (shown as `field: detail`, the cause of a 422).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {detail}")]
pub(crate) struct CrdDefinitionError {
    /// The field path (`spec.names.plural`).
    pub(crate) field: &'static str,
    /// What is wrong (`Required value`).
    pub(crate) detail: String,
}

impl CrdDefinitionError {
    fn required(field: &'static str) -> Self {
        CrdDefinitionError {
            field,
            detail: "Required value".to_owned(),
        }
    }
}

/// The resources a CRD serves, one per served version.
///
/// # Errors
///
/// The field at fault when the CRD lacks its group, names or versions, or its name is
/// not `<plural>.<group>`.
pub(crate) fn crd_resources(crd: &Value) -> Result<Vec<ResourceDef>, CrdDefinitionError> {
    let required = CrdDefinitionError::required;
    let spec = crd.get("spec").ok_or_else(|| required("spec"))?;
    let group = str_field(spec, &["group"]);
    let names = spec.get("names").ok_or_else(|| required("spec.names"))?;
    let plural = str_field(names, &["plural"]);
    let kind = str_field(names, &["kind"]);
    if group.is_empty() {
        return Err(required("spec.group"));
    }
    if plural.is_empty() {
        return Err(required("spec.names.plural"));
    }
    if kind.is_empty() {
        return Err(required("spec.names.kind"));
    }
    let expected_name = format!("{plural}.{group}");
    let name = str_field(crd, &["metadata", "name"]);
    if name != expected_name {
        return Err(CrdDefinitionError {
            field: "metadata.name",
            detail: format!("Invalid value: {name:?}: must be spec.names.plural+\".\"+spec.group"),
        });
    }
    let singular = match str_field(names, &["singular"]) {
        "" => kind.to_ascii_lowercase(),
        s => s.to_owned(),
    };
    let list_kind = match str_field(names, &["listKind"]) {
        "" => format!("{kind}List"),
        s => s.to_owned(),
    };
    let namespaced = str_field(spec, &["scope"]) != "Cluster";
    let versions = spec
        .get("versions")
        .and_then(Value::as_array)
        .filter(|v| !v.is_empty())
        .ok_or_else(|| required("spec.versions"))?;
    let schema_of = |version: &Value| {
        version
            .get("schema")
            .and_then(|s| s.get("openAPIV3Schema"))
            .filter(|s| s.is_object())
            .map(|s| std::sync::Arc::new(s.clone()))
    };
    let storage = versions
        .iter()
        .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true));
    let storage_version = storage.map(|v| str_field(v, &["name"]).to_owned());
    let storage_schema = storage.and_then(schema_of);
    let conversion_webhook = super::conversion_webhook::ConversionWebhook::of_crd(crd);
    let mut resources = Vec::new();
    for version in versions {
        if version.get("served").and_then(Value::as_bool) == Some(false) {
            continue;
        }
        let version_name = str_field(version, &["name"]);
        if version_name.is_empty() {
            return Err(required("spec.versions[].name"));
        }
        let subresources = version.get("subresources");
        let scale = subresources
            .and_then(|s| s.get("scale"))
            .map(|scale| ScaleSpec {
                spec_replicas_path: str_field(scale, &["specReplicasPath"]).to_owned(),
                status_replicas_path: str_field(scale, &["statusReplicasPath"]).to_owned(),
                label_selector_path: scale
                    .get("labelSelectorPath")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
            });
        let printer_columns = version
            .get("additionalPrinterColumns")
            .and_then(Value::as_array)
            .map(|columns| {
                columns
                    .iter()
                    .map(|c| PrinterColumn {
                        name: str_field(c, &["name"]).to_owned(),
                        column_type: str_field(c, &["type"]).to_owned(),
                        format: str_field(c, &["format"]).to_owned(),
                        description: str_field(c, &["description"]).to_owned(),
                        priority: c.get("priority").and_then(Value::as_i64).unwrap_or(0),
                        json_path: str_field(c, &["jsonPath"]).to_owned(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let selectable = version
            .get("selectableFields")
            .and_then(Value::as_array)
            .map(|fields| {
                fields
                    .iter()
                    .map(|f| {
                        str_field(f, &["jsonPath"])
                            .trim_start_matches('.')
                            .to_owned()
                    })
                    .collect()
            })
            .unwrap_or_default();
        let verbs = [
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "create",
            "update",
            "watch",
        ];
        resources.push(ResourceDef {
            api: api_resource(
                group,
                version_name,
                kind,
                plural,
                singular.clone(),
                namespaced,
                verbs.iter().map(|v| (*v).to_owned()).collect(),
                string_list(names.get("shortNames")),
                string_list(names.get("categories")),
            ),
            list_kind: list_kind.clone(),
            status_subresource: subresources.and_then(|s| s.get("status")).is_some(),
            scale,
            tracks_generation: true,
            builtin: false,
            field_selectors: FieldSelectors::Custom(selectable),
            printer_columns,
            special: Special::None,
            patterns: std::sync::Arc::default(),
            rules: std::sync::Arc::default(),
            schema: schema_of(version),
            storage_version: storage_version.clone(),
            storage_schema: storage_schema.clone(),
            conversion_webhook: conversion_webhook.clone(),
            deprecation_warning: deprecation_warning(group, version_name, kind, version),
        });
    }
    Ok(resources)
}

/// The resources a CRD serves, as [`crd_resources`], with each version's schema
/// `pattern`s and `x-kubernetes-validations` rules compiled: what the registry serves. Compiling is the costly part, so the
/// other callers (validation, deletion, cleanup) use [`crd_resources`].
///
/// # Errors
///
/// As [`crd_resources`].
pub(crate) fn crd_served_resources(crd: &Value) -> Result<Vec<ResourceDef>, CrdDefinitionError> {
    let mut resources = crd_resources(crd)?;
    for resource in &mut resources {
        let Some(schema) = resource.schema.as_deref() else {
            continue;
        };
        match super::schema_patterns::compile(schema, "") {
            Ok(patterns) => resource.patterns = std::sync::Arc::new(patterns),
            // An accepted CRD's patterns compile (its validation compiled them): one
            // stored before that check serves a version whose patterns match nothing.
            Err(causes) => tracing::warn!(
                group = %resource.group,
                version = %resource.version,
                causes = causes.len(),
                "a served CRD version has schema patterns that do not compile"
            ),
        }
        match super::cel_rules::compile(schema, "") {
            Ok(rules) => resource.rules = std::sync::Arc::new(rules),
            // As for patterns: an accepted CRD's rules compile; one stored before the
            // check serves a version without rules.
            Err(causes) => tracing::warn!(
                group = %resource.group,
                version = %resource.version,
                causes = causes.len(),
                "a served CRD version has validation rules that do not compile"
            ),
        }
    }
    Ok(resources)
}

/// The warning of a deprecated CRD version: its `deprecationWarning`, or
/// kube-apiserver's default text.
fn deprecation_warning(
    group: &str,
    version_name: &str,
    kind: &str,
    version: &Value,
) -> Option<String> {
    if version.get("deprecated").and_then(Value::as_bool) != Some(true) {
        return None;
    }
    Some(
        match version.get("deprecationWarning").and_then(Value::as_str) {
            Some(text) => text.to_owned(),
            None => format!("{group}/{version_name} {kind} is deprecated"),
        },
    )
}

/// The status the API server gives an accepted CRD: names accepted, established, and the
/// storage version recorded.
pub(crate) fn crd_status(crd: &Value, now: &str) -> Value {
    let names = crd
        .get("spec")
        .and_then(|s| s.get("names"))
        .cloned()
        .unwrap_or(json!({}));
    let storage_versions: Vec<Value> = crd
        .get("spec")
        .and_then(|s| s.get("versions"))
        .and_then(Value::as_array)
        .map(|versions| {
            versions
                .iter()
                .filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
                .filter_map(|v| v.get("name").cloned())
                .collect()
        })
        .unwrap_or_default();
    let condition = |kind: &str, reason: &str, message: &str| json!({"type": kind, "status": "True", "lastTransitionTime": now, "reason": reason, "message": message});
    json!({
        "conditions": [
            condition("NamesAccepted", "NoConflicts", "no conflicts found"),
            condition("Established", "InitialNamesAccepted", "the initial names have been accepted"),
        ],
        "acceptedNames": names,
        "storedVersions": storage_versions,
    })
}

/// The finalizer that holds a deleted CustomResourceDefinition until its custom resources
/// are gone (apiextensions-apiserver's `customresourcecleanup.apiextensions.k8s.io`).
pub(crate) const CRD_CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

/// Sets the `Terminating` condition of a CustomResourceDefinition being deleted (replacing
/// an earlier one; its transition time stays while its status does).
pub(crate) fn set_terminating(
    crd: &mut Map<String, Value>,
    reason: &str,
    message: &str,
    now: &str,
) {
    let status = crd.entry("status").or_insert_with(|| json!({}));
    let Value::Object(status) = status else {
        return;
    };
    let conditions = status
        .entry("conditions")
        .or_insert_with(|| Value::Array(Vec::new()));
    if !conditions.is_array() {
        *conditions = Value::Array(Vec::new());
    }
    let Value::Array(conditions) = conditions else {
        return;
    };
    let since = conditions
        .iter()
        .find(|c| {
            c.get("type") == Some(&json!("Terminating")) && c.get("status") == Some(&json!("True"))
        })
        .and_then(|c| c.get("lastTransitionTime").cloned())
        .unwrap_or_else(|| json!(now));
    conditions.retain(|c| c.get("type") != Some(&json!("Terminating")));
    conditions.push(
        json!({"type": "Terminating", "status": "True", "lastTransitionTime": since,
        "reason": reason, "message": message}),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn widget_crd() -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {
                "group": "example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "kind": "Widget", "shortNames": ["wd"]},
                "versions": [
                    {"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
                     "additionalPrinterColumns": [{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}]},
                    {"name": "v1beta1", "served": false, "storage": false}
                ]
            }
        })
    }

    #[test]
    fn served_versions_become_resources() {
        let resources = crd_resources(&widget_crd()).unwrap();
        assert_eq!(resources.len(), 1);
        let widgets = &resources[0];
        assert_eq!(
            (
                widgets.plural.as_str(),
                widgets.singular.as_str(),
                widgets.list_kind.as_str()
            ),
            ("widgets", "widget", "WidgetList")
        );
        assert!(widgets.namespaced && widgets.status_subresource && !widgets.builtin);
        assert_eq!(widgets.short_names, ["wd"]);
        assert_eq!(widgets.printer_columns[0].json_path, ".spec.size");
    }

    #[test]
    fn a_crd_without_names_is_rejected_with_the_field() {
        let mut crd = widget_crd();
        crd["spec"]["names"]["plural"] = json!("");
        let err = crd_resources(&crd).unwrap_err();
        assert_eq!(err.to_string(), "spec.names.plural: Required value");
        assert_eq!(err.field, "spec.names.plural");
        let mut crd = widget_crd();
        crd["metadata"]["name"] = json!("wrong");
        assert!(
            crd_resources(&crd)
                .unwrap_err()
                .to_string()
                .starts_with("metadata.name: Invalid value")
        );
    }

    #[test]
    fn status_marks_the_crd_established() {
        let status = crd_status(&widget_crd(), "2024-01-01T00:00:00Z");
        assert_eq!(status["conditions"][1]["type"], "Established");
        assert_eq!(status["storedVersions"], json!(["v1"]));
    }
}
