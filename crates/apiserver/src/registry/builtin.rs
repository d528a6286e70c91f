//! The built-in resources: core, apps, batch, coordination, RBAC, networking, policy,
//! autoscaling, storage, scheduling, discovery, admissionregistration and apiextensions.

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

/// One built-in resource: its names, and which of the generic store's features it uses.
#[derive(Clone, Copy)]
struct Builtin {
    group: &'static str,
    version: &'static str,
    plural: &'static str,
    kind: &'static str,
    namespaced: bool,
    short_names: &'static [&'static str],
    /// Serves a `status` subresource.
    status: bool,
    /// Serves a `scale` subresource at `.spec.replicas` / `.status.replicas`.
    scale: bool,
    /// `metadata.generation` moves when the spec changes.
    generation: bool,
    /// Listed by `kubectl get all` (the `all` category).
    in_all: bool,
    special: Special,
}

impl Builtin {
    const fn namespaced(
        group: &'static str,
        version: &'static str,
        plural: &'static str,
        kind: &'static str,
    ) -> Self {
        Self {
            group,
            version,
            plural,
            kind,
            namespaced: true,
            short_names: &[],
            status: false,
            scale: false,
            generation: false,
            in_all: false,
            special: Special::None,
        }
    }

    const fn cluster(
        group: &'static str,
        version: &'static str,
        plural: &'static str,
        kind: &'static str,
    ) -> Self {
        Self {
            namespaced: false,
            ..Self::namespaced(group, version, plural, kind)
        }
    }

    const fn short_names(self, short_names: &'static [&'static str]) -> Self {
        Self {
            short_names,
            ..self
        }
    }

    const fn status(self) -> Self {
        Self {
            status: true,
            ..self
        }
    }

    const fn scale(self) -> Self {
        Self {
            scale: true,
            ..self
        }
    }

    const fn generation(self) -> Self {
        Self {
            generation: true,
            ..self
        }
    }

    const fn in_all(self) -> Self {
        Self {
            in_all: true,
            ..self
        }
    }

    const fn special(self, special: Special) -> Self {
        Self { special, ..self }
    }

    fn verbs(&self) -> Vec<String> {
        match self.special {
            Special::Review => strings(&["create"]),
            Special::ReadOnly | Special::Metrics => strings(&["get", "list"]),
            _ => strings(ALL_VERBS),
        }
    }

    fn resource_def(&self) -> ResourceDef {
        let categories = if self.in_all {
            vec!["all".to_owned()]
        } else {
            Vec::new()
        };
        ResourceDef {
            api: api_resource(
                self.group,
                self.version,
                self.kind,
                self.plural,
                self.kind.to_ascii_lowercase(),
                self.namespaced,
                self.verbs(),
                strings(self.short_names),
                categories,
            ),
            list_kind: format!("{}List", self.kind),
            status_subresource: self.status,
            scale: self.scale.then(|| ScaleSpec {
                spec_replicas_path: ".spec.replicas".to_owned(),
                status_replicas_path: ".status.replicas".to_owned(),
                label_selector_path: Some(".status.selector".to_owned()),
            }),
            tracks_generation: self.generation,
            builtin: true,
            field_selectors: FieldSelectors::Builtin(builtin_field_selectors(
                self.group, self.kind,
            )),
            printer_columns: Vec::new(),
            storage_version: None,
            storage_schema: None,
            conversion_webhook: None,
            deprecation_warning: None,
            special: self.special,
            schema: None,
            patterns: Default::default(),
            rules: Default::default(),
        }
    }
}

/// metrics-server's resources, `metrics.k8s.io/v1beta1` NodeMetrics and PodMetrics, as
/// a server running the simulated cluster serves them (an aggregated API in a real
/// cluster: JSON only, get and list, no field selectors but name and namespace).
pub(crate) fn metrics_resources() -> Vec<ResourceDef> {
    [
        Builtin::cluster("metrics.k8s.io", "v1beta1", "nodes", "NodeMetrics"),
        Builtin::namespaced("metrics.k8s.io", "v1beta1", "pods", "PodMetrics"),
    ]
    .into_iter()
    .map(|builtin| {
        let mut resource = builtin.special(Special::Metrics).resource_def();
        resource.builtin = false;
        resource.field_selectors = FieldSelectors::Custom(Vec::new());
        resource
    })
    .collect()
}

const BUILTINS: &[Builtin] = &[
    Builtin::cluster("", "v1", "namespaces", "Namespace")
        .short_names(&["ns"])
        .status()
        .special(Special::Namespace),
    Builtin::namespaced("", "v1", "pods", "Pod")
        .short_names(&["po"])
        .status()
        .generation()
        .in_all(),
    Builtin::namespaced("", "v1", "podtemplates", "PodTemplate"),
    Builtin::namespaced("", "v1", "services", "Service")
        .short_names(&["svc"])
        .status()
        .in_all(),
    Builtin::namespaced("", "v1", "endpoints", "Endpoints").short_names(&["ep"]),
    Builtin::namespaced("", "v1", "configmaps", "ConfigMap").short_names(&["cm"]),
    Builtin::namespaced("", "v1", "secrets", "Secret"),
    Builtin::namespaced("", "v1", "serviceaccounts", "ServiceAccount").short_names(&["sa"]),
    Builtin::namespaced("", "v1", "events", "Event").short_names(&["ev"]),
    Builtin::cluster("", "v1", "nodes", "Node")
        .short_names(&["no"])
        .status(),
    Builtin::namespaced("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim")
        .short_names(&["pvc"])
        .status(),
    Builtin::cluster("", "v1", "persistentvolumes", "PersistentVolume")
        .short_names(&["pv"])
        .status(),
    Builtin::namespaced("", "v1", "replicationcontrollers", "ReplicationController")
        .short_names(&["rc"])
        .status()
        .scale()
        .generation()
        .in_all(),
    Builtin::namespaced("", "v1", "resourcequotas", "ResourceQuota")
        .short_names(&["quota"])
        .status(),
    Builtin::namespaced("", "v1", "limitranges", "LimitRange").short_names(&["limits"]),
    Builtin::namespaced("apps", "v1", "deployments", "Deployment")
        .short_names(&["deploy"])
        .status()
        .scale()
        .generation()
        .in_all(),
    Builtin::namespaced("apps", "v1", "replicasets", "ReplicaSet")
        .short_names(&["rs"])
        .status()
        .scale()
        .generation()
        .in_all(),
    Builtin::namespaced("apps", "v1", "statefulsets", "StatefulSet")
        .short_names(&["sts"])
        .status()
        .scale()
        .generation()
        .in_all(),
    Builtin::namespaced("apps", "v1", "daemonsets", "DaemonSet")
        .short_names(&["ds"])
        .status()
        .generation()
        .in_all(),
    Builtin::namespaced("apps", "v1", "controllerrevisions", "ControllerRevision"),
    Builtin::namespaced("batch", "v1", "jobs", "Job")
        .status()
        .generation()
        .in_all(),
    Builtin::namespaced("batch", "v1", "cronjobs", "CronJob")
        .short_names(&["cj"])
        .status()
        .generation()
        .in_all(),
    Builtin::namespaced("coordination.k8s.io", "v1", "leases", "Lease"),
    Builtin::namespaced("rbac.authorization.k8s.io", "v1", "roles", "Role"),
    Builtin::namespaced(
        "rbac.authorization.k8s.io",
        "v1",
        "rolebindings",
        "RoleBinding",
    ),
    Builtin::cluster(
        "rbac.authorization.k8s.io",
        "v1",
        "clusterroles",
        "ClusterRole",
    ),
    Builtin::cluster(
        "rbac.authorization.k8s.io",
        "v1",
        "clusterrolebindings",
        "ClusterRoleBinding",
    ),
    Builtin::namespaced("networking.k8s.io", "v1", "ingresses", "Ingress")
        .short_names(&["ing"])
        .status()
        .generation(),
    Builtin::namespaced(
        "networking.k8s.io",
        "v1",
        "networkpolicies",
        "NetworkPolicy",
    )
    .short_names(&["netpol"])
    .generation(),
    Builtin::namespaced(
        "policy",
        "v1",
        "poddisruptionbudgets",
        "PodDisruptionBudget",
    )
    .short_names(&["pdb"])
    .status()
    .generation(),
    Builtin::namespaced(
        "autoscaling",
        "v2",
        "horizontalpodautoscalers",
        "HorizontalPodAutoscaler",
    )
    .short_names(&["hpa"])
    .status()
    .in_all(),
    Builtin::cluster("storage.k8s.io", "v1", "storageclasses", "StorageClass").short_names(&["sc"]),
    Builtin::cluster(
        "scheduling.k8s.io",
        "v1",
        "priorityclasses",
        "PriorityClass",
    )
    .short_names(&["pc"]),
    Builtin::namespaced("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice"),
    Builtin::cluster("", "v1", "componentstatuses", "ComponentStatus")
        .short_names(&["cs"])
        .special(Special::ReadOnly),
    Builtin::namespaced("events.k8s.io", "v1", "events", "Event").short_names(&["ev"]),
    Builtin::cluster(
        "certificates.k8s.io",
        "v1",
        "certificatesigningrequests",
        "CertificateSigningRequest",
    )
    .short_names(&["csr"])
    .status(),
    Builtin::cluster("apiregistration.k8s.io", "v1", "apiservices", "APIService").status(),
    Builtin::cluster(
        "authorization.k8s.io",
        "v1",
        "selfsubjectaccessreviews",
        "SelfSubjectAccessReview",
    )
    .special(Special::Review),
    Builtin::cluster(
        "authorization.k8s.io",
        "v1",
        "selfsubjectrulesreviews",
        "SelfSubjectRulesReview",
    )
    .special(Special::Review),
    Builtin::cluster(
        "authorization.k8s.io",
        "v1",
        "subjectaccessreviews",
        "SubjectAccessReview",
    )
    .special(Special::Review),
    Builtin::namespaced(
        "authorization.k8s.io",
        "v1",
        "localsubjectaccessreviews",
        "LocalSubjectAccessReview",
    )
    .special(Special::Review),
    Builtin::cluster(
        "authentication.k8s.io",
        "v1",
        "selfsubjectreviews",
        "SelfSubjectReview",
    )
    .special(Special::Review),
    // kubectl before 1.28 asks the beta version (same kind, same answer).
    Builtin::cluster(
        "authentication.k8s.io",
        "v1beta1",
        "selfsubjectreviews",
        "SelfSubjectReview",
    )
    .special(Special::Review),
    Builtin::cluster("authentication.k8s.io", "v1", "tokenreviews", "TokenReview")
        .special(Special::Review),
    Builtin::cluster(
        "admissionregistration.k8s.io",
        "v1",
        "mutatingwebhookconfigurations",
        "MutatingWebhookConfiguration",
    )
    .generation(),
    Builtin::cluster(
        "admissionregistration.k8s.io",
        "v1",
        "validatingwebhookconfigurations",
        "ValidatingWebhookConfiguration",
    )
    .generation(),
    Builtin::cluster(
        "admissionregistration.k8s.io",
        "v1",
        "validatingadmissionpolicies",
        "ValidatingAdmissionPolicy",
    )
    .status()
    .generation(),
    Builtin::cluster(
        "admissionregistration.k8s.io",
        "v1",
        "validatingadmissionpolicybindings",
        "ValidatingAdmissionPolicyBinding",
    )
    .generation(),
    Builtin::cluster(
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
    )
    .short_names(&["crd", "crds"])
    .status()
    .generation()
    .special(Special::CustomResourceDefinition),
];

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

/// The built-in resource table.
pub(crate) fn builtin_resources() -> Vec<ResourceDef> {
    BUILTINS.iter().map(Builtin::resource_def).collect()
}
