//! [`CustomResourceExt`] and [`build_crd`]: the CustomResourceDefinition of a typed custom
//! resource.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kubeclient_machinery::ApiResource;
use kubeclient_machinery::gvk::ScopeNamespaced;
use serde_json::{Value, json};

/// A typed custom resource: implemented by `#[derive(CustomResource)]`
/// ([`CustomResource`](crate::CustomResource)).
///
/// # Examples
///
/// ```
/// use kubeclient::customresource::CustomResourceExt;
/// use kubeclient::CustomResource;
///
/// #[derive(CustomResource, Clone, Debug, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
/// #[kubeclient(group = "example.kubeclient.dev", version = "v1", kind = "Widget", namespaced)]
/// struct WidgetSpec { size: i32 }
///
/// assert_eq!(Widget::crd_name(), "widgets.example.kubeclient.dev");
/// let crd = Widget::crd();
/// assert_eq!(crd.spec.names.kind, "Widget");
/// ```
pub trait CustomResourceExt: k8s_openapi::Resource<Scope: ScopeNamespaced> {
    /// The CustomResourceDefinition, one served and stored version, with a structural
    /// schema from the Rust types, the status and scale subresources when declared, and
    /// the printer columns, short names and categories of the attributes.
    fn crd() -> CustomResourceDefinition;

    /// The CRD's name: `plural.group`.
    fn crd_name() -> String {
        format!("{}.{}", Self::URL_PATH_SEGMENT, Self::GROUP)
    }

    /// The resource, for the dynamic client and discovery-free informers.
    fn api_resource() -> ApiResource
    where
        Self: Sized,
    {
        ApiResource::of::<Self>()
    }
}

/// A printer column of [`CrdDescription`] (`additionalPrinterColumns`).
#[derive(Clone, Copy, Debug)]
#[doc(hidden)]
pub struct PrinterColumnDescription {
    pub name: &'static str,
    pub type_: &'static str,
    pub json_path: &'static str,
    pub description: Option<&'static str>,
    pub format: Option<&'static str>,
    pub priority: i32,
}

/// The scale subresource of [`CrdDescription`].
#[derive(Clone, Copy, Debug)]
#[doc(hidden)]
pub struct ScaleDescription {
    pub spec_replicas_path: &'static str,
    pub status_replicas_path: &'static str,
    pub label_selector_path: Option<&'static str>,
}

/// A CEL validation rule of [`CrdDescription`] (`x-kubernetes-validations` of the spec).
#[derive(Clone, Copy, Debug)]
#[doc(hidden)]
pub struct ValidationRuleDescription {
    pub rule: &'static str,
    pub message: Option<&'static str>,
    pub message_expression: Option<&'static str>,
    pub field_path: Option<&'static str>,
    pub reason: Option<&'static str>,
}

/// What the derive's attributes say (the derive's generated code fills it).
#[derive(Clone, Copy, Debug)]
#[doc(hidden)]
pub struct CrdDescription {
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
    pub plural: &'static str,
    pub singular: &'static str,
    pub namespaced: bool,
    pub short_names: &'static [&'static str],
    pub categories: &'static [&'static str],
    pub printer_columns: &'static [PrinterColumnDescription],
    pub scale: Option<ScaleDescription>,
    pub status: bool,
    pub validations: &'static [ValidationRuleDescription],
}

/// `schema` with the rules as its `x-kubernetes-validations` (after any it has).
fn with_validations(mut schema: Value, rules: &[ValidationRuleDescription]) -> Value {
    if rules.is_empty() {
        return schema;
    }
    let Some(fields) = schema.as_object_mut() else {
        return schema;
    };
    let list = fields
        .entry("x-kubernetes-validations")
        .or_insert_with(|| Value::Array(Vec::new()));
    if let Some(list) = list.as_array_mut() {
        for rule in rules {
            let mut entry = json!({"rule": rule.rule});
            let optional = [
                ("message", rule.message),
                ("messageExpression", rule.message_expression),
                ("fieldPath", rule.field_path),
                ("reason", rule.reason),
            ];
            for (key, value) in optional {
                if let Some(value) = value {
                    entry[key] = json!(value);
                }
            }
            list.push(entry);
        }
    }
    schema
}

/// Builds the CRD from the derive's description and the spec's (and status') structural
/// schemas. A schema that does not fit `JSONSchemaProps` (which would be a bug in the
/// structural rewrite) is replaced by one that keeps unknown fields, and logged.
#[doc(hidden)]
pub fn build_crd(
    description: &CrdDescription,
    spec: Value,
    status: Option<Value>,
) -> CustomResourceDefinition {
    let d = description;
    let mut properties = serde_json::Map::new();
    properties.insert("apiVersion".to_owned(), json!({"type": "string"}));
    properties.insert("kind".to_owned(), json!({"type": "string"}));
    properties.insert("metadata".to_owned(), json!({"type": "object"}));
    properties.insert("spec".to_owned(), with_validations(spec, d.validations));
    if let Some(status) = status {
        properties.insert("status".to_owned(), status);
    }
    let schema = json!({"type": "object", "properties": properties, "required": ["spec"]});
    let columns: Vec<Value> = d
        .printer_columns
        .iter()
        .map(|c| {
            let mut column = json!({"name": c.name, "type": c.type_, "jsonPath": c.json_path, "priority": c.priority});
            if let Some(description) = c.description {
                column["description"] = json!(description);
            }
            if let Some(format) = c.format {
                column["format"] = json!(format);
            }
            column
        })
        .collect();
    let mut subresources = serde_json::Map::new();
    if d.status {
        subresources.insert("status".to_owned(), json!({}));
    }
    if let Some(scale) = d.scale {
        let mut value = json!({"specReplicasPath": scale.spec_replicas_path, "statusReplicasPath": scale.status_replicas_path});
        if let Some(selector) = scale.label_selector_path {
            value["labelSelectorPath"] = json!(selector);
        }
        subresources.insert("scale".to_owned(), value);
    }
    let mut names = json!({"plural": d.plural, "singular": d.singular, "kind": d.kind, "listKind": format!("{}List", d.kind)});
    if !d.short_names.is_empty() {
        names["shortNames"] = json!(d.short_names);
    }
    if !d.categories.is_empty() {
        names["categories"] = json!(d.categories);
    }
    let version = |schema: Value| {
        let mut version = json!({"name": d.version, "served": true, "storage": true,
            "schema": {"openAPIV3Schema": schema}});
        if !subresources.is_empty() {
            version["subresources"] = Value::Object(subresources.clone());
        }
        if !columns.is_empty() {
            version["additionalPrinterColumns"] = json!(columns);
        }
        version
    };
    let crd = |schema: Value| {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": format!("{}.{}", d.plural, d.group)},
            "spec": {"group": d.group, "names": names,
                     "scope": if d.namespaced { "Namespaced" } else { "Cluster" },
                     "versions": [version(schema)]}
        })
    };
    match serde_json::from_value(crd(schema)) {
        Ok(crd) => crd,
        Err(err) => {
            tracing::error!(kind = d.kind, error = %err, "the generated schema does not fit JSONSchemaProps; using one that keeps unknown fields");
            let fallback = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
            serde_json::from_value(crd(fallback)).unwrap_or_default()
        }
    }
}
