//! [`ResourceDef`]: everything the server knows about one served resource.

use kubeclient_machinery::selector::FieldSpec;
use kubeclient_machinery::{ApiResource, GroupResource, GroupVersion};

/// Behaviour specific to a few built-in kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Special {
    /// No special behaviour.
    None,
    /// Namespaces: `status.phase: Active` on create; deleting one deletes its contents.
    Namespace,
    /// CustomResourceDefinitions: creating one serves a new resource.
    CustomResourceDefinition,
    /// Reviews (access, rules, self-subject, token): create only, answered at once and
    /// never stored.
    Review,
    /// Read only (get and list): ComponentStatuses, which the server keeps itself.
    ReadOnly,
    /// Read only and never stored: metrics-server's `metrics.k8s.io` NodeMetrics and
    /// PodMetrics, computed from the simulated cluster's Nodes and Pods when read
    /// (`registry/metrics.rs`).
    Metrics,
}

/// A printer column of a custom resource (`additionalPrinterColumns`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PrinterColumn {
    /// Column title.
    pub name: String,
    /// OpenAPI type: `string`, `integer`, `number`, `boolean` or `date`.
    pub column_type: String,
    /// Optional format.
    pub format: String,
    /// Description.
    pub description: String,
    /// Priority (0 shown by default, more with `-o wide`).
    pub priority: i64,
    /// A simple JSONPath (`.spec.replicas`).
    pub json_path: String,
}

/// One served resource in one group version: what discovery says of it (its
/// [`ApiResource`], whose fields it dereferences to) and how the server serves it.
#[derive(Clone, Debug)]
pub(crate) struct ResourceDef {
    /// Group, version, kind, plural, singular, scope, verbs, short names, categories.
    pub api: ApiResource,
    /// The kind of its lists.
    pub list_kind: String,
    /// Whether `/status` is a separate subresource (the main resource ignores status).
    pub status_subresource: bool,
    /// Whether `/scale` is served, with the JSON paths of replicas and selector.
    pub scale: Option<ScaleSpec>,
    /// Whether `metadata.generation` is maintained.
    pub tracks_generation: bool,
    /// Built-in types accept strategic merge patches; custom resources do not.
    pub builtin: bool,
    /// The fields field selectors may use.
    pub field_selectors: FieldSelectors,
    /// Extra table columns (custom resources).
    pub printer_columns: Vec<PrinterColumn>,
    /// Kind-specific behaviour.
    pub special: Special,
    /// A custom resource version's `openAPIV3Schema`, which stored objects are validated
    /// against (`registry/apiextensions/validate_schema.rs`); `None` for built-in types.
    pub schema: Option<std::sync::Arc<serde_json::Value>>,
    /// The `pattern`s of `schema`, compiled once when the CRD was accepted.
    pub patterns: std::sync::Arc<super::apiextensions::schema_patterns::CompiledPatterns>,
    /// The `x-kubernetes-validations` rules of `schema`, compiled once when the CRD was
    /// accepted (`registry/apiextensions/cel_rules.rs`).
    pub rules: std::sync::Arc<super::apiextensions::cel_rules::CompiledRules>,
    /// A custom resource's storage version (objects are stored in it and served in
    /// `version`: `registry/apiextensions/version_conversion.rs`); `None` for built-in types.
    pub storage_version: Option<String>,
    /// The storage version's `openAPIV3Schema` (what an object converted to it keeps).
    pub storage_schema: Option<std::sync::Arc<serde_json::Value>>,
    /// A custom resource's conversion webhook (`spec.conversion.strategy: Webhook`);
    /// `None`: versions differ in `apiVersion` only.
    pub conversion_webhook:
        Option<std::sync::Arc<super::apiextensions::conversion_webhook::ConversionWebhook>>,
    /// The `Warning` every answer of a deprecated version carries.
    pub deprecation_warning: Option<String>,
}

/// The fields a resource can be selected by.
#[derive(Clone, Debug)]
pub(crate) enum FieldSelectors {
    /// A built-in table from `kubeclient-machinery`.
    Builtin(&'static [FieldSpec]),
    /// `metadata.name`, `metadata.namespace` and a CRD's `selectableFields` (JSON paths
    /// without the leading dot).
    Custom(Vec<String>),
}

/// Where a `/scale` subresource reads and writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ScaleSpec {
    /// Path of the desired replicas, e.g. `.spec.replicas`.
    pub spec_replicas_path: String,
    /// Path of the observed replicas, e.g. `.status.replicas`.
    pub status_replicas_path: String,
    /// Path of the label selector string, if any.
    pub label_selector_path: Option<String>,
}

impl std::ops::Deref for ResourceDef {
    type Target = ApiResource;

    fn deref(&self) -> &ApiResource {
        &self.api
    }
}

/// The [`ApiResource`] of a served resource (its `apiVersion` derived from group and
/// version).
#[allow(clippy::too_many_arguments)]
pub(crate) fn api_resource(
    group: &str,
    version: &str,
    kind: &str,
    plural: &str,
    singular: String,
    namespaced: bool,
    verbs: Vec<String>,
    short_names: Vec<String>,
    categories: Vec<String>,
) -> ApiResource {
    ApiResource {
        group: group.to_owned(),
        version: version.to_owned(),
        api_version: GroupVersion::new(group, version).to_string(),
        kind: kind.to_owned(),
        plural: plural.to_owned(),
        singular,
        namespaced,
        verbs,
        short_names,
        categories,
    }
}

impl ResourceDef {
    /// The group and resource: the storage identity shared by all versions.
    pub(crate) fn group_resource(&self) -> GroupResource {
        GroupResource::new(&self.group, &self.plural)
    }

    /// `apiVersion` of its objects.
    pub(crate) fn api_version(&self) -> String {
        self.api.api_version.clone()
    }
}

/// What deleting an owner does to its dependents (`metav1.DeletionPropagation`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Propagation {
    /// The owner goes at once; the garbage collector deletes dependents afterwards.
    Background,
    /// The owner stays (finalizer `foregroundDeletion`) until its blocking dependents are
    /// gone.
    Foreground,
    /// The owner stays (finalizer `orphan`) until its dependents no longer reference it.
    Orphan,
}

impl Propagation {
    /// The finalizer that marks an owner deleted with this policy, if any.
    pub(crate) fn finalizer(self) -> Option<&'static str> {
        match self {
            Propagation::Background => None,
            Propagation::Foreground => Some(FOREGROUND_DELETION),
            Propagation::Orphan => Some(ORPHAN),
        }
    }
}

/// The finalizer of an owner deleted in the foreground.
pub(crate) const FOREGROUND_DELETION: &str = "foregroundDeletion";
/// The finalizer of an owner whose dependents are orphaned.
pub(crate) const ORPHAN: &str = "orphan";
