//! The built-in resources: core, apps, batch, coordination, RBAC, networking, policy,
//! autoscaling, storage, scheduling, discovery and apiextensions.

use kubeclient_machinery::selector::builtin_field_selectors;

use super::resource::{FieldSelectors, ResourceDef, ScaleSpec, Special, api_resource};

/// Every verb of a normal resource.
pub(crate) const ALL_VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

/// Flags of one row of the built-in table.
#[derive(Clone, Copy, Default)]
struct Flags {
    namespaced: bool,
    status: bool,
    scale: bool,
    generation: bool,
    all: bool,
}

const NS: Flags = Flags {
    namespaced: true,
    status: false,
    scale: false,
    generation: false,
    all: false,
};
const CLUSTER: Flags = Flags {
    namespaced: false,
    status: false,
    scale: false,
    generation: false,
    all: false,
};

/// (group, version, plural, kind, short names, flags, special)
type Row = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static [&'static str],
    Flags,
    Special,
);

const BUILTINS: &[Row] = &[
    (
        "",
        "v1",
        "namespaces",
        "Namespace",
        &["ns"],
        Flags {
            status: true,
            ..CLUSTER
        },
        Special::Namespace,
    ),
    (
        "",
        "v1",
        "pods",
        "Pod",
        &["po"],
        Flags {
            status: true,
            generation: true,
            all: true,
            ..NS
        },
        Special::None,
    ),
    (
        "",
        "v1",
        "podtemplates",
        "PodTemplate",
        &[],
        NS,
        Special::None,
    ),
    (
        "",
        "v1",
        "services",
        "Service",
        &["svc"],
        Flags {
            status: true,
            all: true,
            ..NS
        },
        Special::None,
    ),
    (
        "",
        "v1",
        "endpoints",
        "Endpoints",
        &["ep"],
        NS,
        Special::None,
    ),
    (
        "",
        "v1",
        "configmaps",
        "ConfigMap",
        &["cm"],
        NS,
        Special::None,
    ),
    ("", "v1", "secrets", "Secret", &[], NS, Special::None),
    (
        "",
        "v1",
        "serviceaccounts",
        "ServiceAccount",
        &["sa"],
        NS,
        Special::None,
    ),
    ("", "v1", "events", "Event", &["ev"], NS, Special::None),
    (
        "",
        "v1",
        "nodes",
        "Node",
        &["no"],
        Flags {
            status: true,
            ..CLUSTER
        },
        Special::None,
    ),
    (
        "",
        "v1",
        "persistentvolumeclaims",
        "PersistentVolumeClaim",
        &["pvc"],
        Flags { status: true, ..NS },
        Special::None,
    ),
    (
        "",
        "v1",
        "persistentvolumes",
        "PersistentVolume",
        &["pv"],
        Flags {
            status: true,
            ..CLUSTER
        },
        Special::None,
    ),
    (
        "",
        "v1",
        "replicationcontrollers",
        "ReplicationController",
        &["rc"],
        Flags {
            status: true,
            scale: true,
            generation: true,
            all: true,
            ..NS
        },
        Special::None,
    ),
    (
        "",
        "v1",
        "resourcequotas",
        "ResourceQuota",
        &["quota"],
        Flags { status: true, ..NS },
        Special::None,
    ),
    (
        "",
        "v1",
        "limitranges",
        "LimitRange",
        &["limits"],
        NS,
        Special::None,
    ),
    (
        "apps",
        "v1",
        "deployments",
        "Deployment",
        &["deploy"],
        Flags {
            status: true,
            scale: true,
            generation: true,
            all: true,
            ..NS
        },
        Special::None,
    ),
    (
        "apps",
        "v1",
        "replicasets",
        "ReplicaSet",
        &["rs"],
        Flags {
            status: true,
            scale: true,
            generation: true,
            all: true,
            ..NS
        },
        Special::None,
    ),
    (
        "apps",
        "v1",
        "statefulsets",
        "StatefulSet",
        &["sts"],
        Flags {
            status: true,
            scale: true,
            generation: true,
            all: true,
            ..NS
        },
        Special::None,
    ),
    (
        "apps",
        "v1",
        "daemonsets",
        "DaemonSet",
        &["ds"],
        Flags {
            status: true,
            generation: true,
            all: true,
            ..NS
        },
        Special::None,
    ),
    (
        "apps",
        "v1",
        "controllerrevisions",
        "ControllerRevision",
        &[],
        NS,
        Special::None,
    ),
    (
        "batch",
        "v1",
        "jobs",
        "Job",
        &[],
        Flags {
            status: true,
            generation: true,
            all: true,
            ..NS
        },
        Special::None,
    ),
    (
        "batch",
        "v1",
        "cronjobs",
        "CronJob",
        &["cj"],
        Flags {
            status: true,
            generation: true,
            all: true,
            ..NS
        },
        Special::None,
    ),
    (
        "coordination.k8s.io",
        "v1",
        "leases",
        "Lease",
        &[],
        NS,
        Special::None,
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "roles",
        "Role",
        &[],
        NS,
        Special::None,
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "rolebindings",
        "RoleBinding",
        &[],
        NS,
        Special::None,
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "clusterroles",
        "ClusterRole",
        &[],
        CLUSTER,
        Special::None,
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "clusterrolebindings",
        "ClusterRoleBinding",
        &[],
        CLUSTER,
        Special::None,
    ),
    (
        "networking.k8s.io",
        "v1",
        "ingresses",
        "Ingress",
        &["ing"],
        Flags {
            status: true,
            generation: true,
            ..NS
        },
        Special::None,
    ),
    (
        "networking.k8s.io",
        "v1",
        "networkpolicies",
        "NetworkPolicy",
        &["netpol"],
        Flags {
            generation: true,
            ..NS
        },
        Special::None,
    ),
    (
        "policy",
        "v1",
        "poddisruptionbudgets",
        "PodDisruptionBudget",
        &["pdb"],
        Flags {
            status: true,
            generation: true,
            ..NS
        },
        Special::None,
    ),
    (
        "autoscaling",
        "v2",
        "horizontalpodautoscalers",
        "HorizontalPodAutoscaler",
        &["hpa"],
        Flags {
            status: true,
            all: true,
            ..NS
        },
        Special::None,
    ),
    (
        "storage.k8s.io",
        "v1",
        "storageclasses",
        "StorageClass",
        &["sc"],
        CLUSTER,
        Special::None,
    ),
    (
        "scheduling.k8s.io",
        "v1",
        "priorityclasses",
        "PriorityClass",
        &["pc"],
        CLUSTER,
        Special::None,
    ),
    (
        "discovery.k8s.io",
        "v1",
        "endpointslices",
        "EndpointSlice",
        &[],
        NS,
        Special::None,
    ),
    (
        "",
        "v1",
        "componentstatuses",
        "ComponentStatus",
        &["cs"],
        CLUSTER,
        Special::ReadOnly,
    ),
    (
        "events.k8s.io",
        "v1",
        "events",
        "Event",
        &["ev"],
        NS,
        Special::None,
    ),
    (
        "certificates.k8s.io",
        "v1",
        "certificatesigningrequests",
        "CertificateSigningRequest",
        &["csr"],
        Flags {
            status: true,
            ..CLUSTER
        },
        Special::None,
    ),
    (
        "apiregistration.k8s.io",
        "v1",
        "apiservices",
        "APIService",
        &[],
        Flags {
            status: true,
            ..CLUSTER
        },
        Special::None,
    ),
    (
        "authorization.k8s.io",
        "v1",
        "selfsubjectaccessreviews",
        "SelfSubjectAccessReview",
        &[],
        CLUSTER,
        Special::Review,
    ),
    (
        "authorization.k8s.io",
        "v1",
        "selfsubjectrulesreviews",
        "SelfSubjectRulesReview",
        &[],
        CLUSTER,
        Special::Review,
    ),
    (
        "authorization.k8s.io",
        "v1",
        "subjectaccessreviews",
        "SubjectAccessReview",
        &[],
        CLUSTER,
        Special::Review,
    ),
    (
        "authorization.k8s.io",
        "v1",
        "localsubjectaccessreviews",
        "LocalSubjectAccessReview",
        &[],
        NS,
        Special::Review,
    ),
    (
        "authentication.k8s.io",
        "v1",
        "selfsubjectreviews",
        "SelfSubjectReview",
        &[],
        CLUSTER,
        Special::Review,
    ),
    // kubectl before 1.28 asks the beta version (same kind, same answer).
    (
        "authentication.k8s.io",
        "v1beta1",
        "selfsubjectreviews",
        "SelfSubjectReview",
        &[],
        CLUSTER,
        Special::Review,
    ),
    (
        "authentication.k8s.io",
        "v1",
        "tokenreviews",
        "TokenReview",
        &[],
        CLUSTER,
        Special::Review,
    ),
    (
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        &["crd", "crds"],
        Flags {
            status: true,
            generation: true,
            ..CLUSTER
        },
        Special::CustomResourceDefinition,
    ),
];

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

/// The built-in resource table.
pub(crate) fn builtin_resources() -> Vec<ResourceDef> {
    BUILTINS
        .iter()
        .map(
            |&(group, version, plural, kind, short_names, flags, special)| ResourceDef {
                api: api_resource(
                    group,
                    version,
                    kind,
                    plural,
                    kind.to_ascii_lowercase(),
                    flags.namespaced,
                    match special {
                        Special::Review => strings(&["create"]),
                        Special::ReadOnly => strings(&["get", "list"]),
                        _ => strings(ALL_VERBS),
                    },
                    strings(short_names),
                    if flags.all {
                        vec!["all".to_owned()]
                    } else {
                        Vec::new()
                    },
                ),
                list_kind: format!("{kind}List"),
                status_subresource: flags.status,
                scale: flags.scale.then(|| ScaleSpec {
                    spec_replicas_path: ".spec.replicas".to_owned(),
                    status_replicas_path: ".status.replicas".to_owned(),
                    label_selector_path: Some(".status.selector".to_owned()),
                }),
                tracks_generation: flags.generation,
                builtin: true,
                field_selectors: FieldSelectors::Builtin(builtin_field_selectors(group, kind)),
                printer_columns: Vec::new(),
                storage_version: None,
                storage_schema: None,
                deprecation_warning: None,
                special,
                schema: None,
                patterns: Default::default(),
            },
        )
        .collect()
}
