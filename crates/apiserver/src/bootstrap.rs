//! The objects a new cluster already has when its API server starts: the four system
//! namespaces, the ComponentStatuses, the `default/kubernetes` Service and its Endpoints (pointing at this
//! server), a `default` ServiceAccount in each namespace, and the bootstrap RBAC roles
//! (`cluster-admin`, `admin`, `edit`, `view`) with the `cluster-admin` binding of
//! `system:masters`.
//!
//! The RBAC roles are for clients that look them up or bind to them (Helm charts,
//! operators' installers); the server itself does not authorize by RBAC. `admin`, `edit`
//! and `view` carry a condensed form of their upstream rules (the common resources of
//! core, apps, batch, autoscaling, networking and policy) plus their `aggregationRule`.

use serde_json::{Value, json};

use crate::authentication::UserInfo;
use crate::registry::ALL_VERBS;
use crate::registry::cluster_role_aggregation;
use crate::registry::kinds::service_account::default_service_account;
use crate::registry::store::{GenericStore, Ownership, WriteRequest};

/// The namespaces every cluster starts with.
const INITIAL_NAMESPACES: [&str; 4] = ["default", "kube-system", "kube-public", "kube-node-lease"];

/// The ClusterIP of `default/kubernetes` (the first address of kubeadm's default service
/// range, 10.96.0.0/12).
pub(crate) const KUBERNETES_SERVICE_IP: &str = "10.96.0.1";

/// The field manager bootstrap objects are recorded under, as kube-apiserver's own.
const FIELD_MANAGER: &str = "kube-apiserver";

/// Creates the bootstrap objects through `store`, like any write (defaults, validation,
/// managedFields); `address` is the server's `ip:port`.
pub(crate) fn create(store: &GenericStore<'_>, address: std::net::SocketAddr) {
    let writer = Bootstrap {
        store,
        user: UserInfo {
            username: "system:apiserver".to_owned(),
            uid: String::new(),
            groups: vec!["system:masters".to_owned()],
            ..UserInfo::default()
        },
    };
    for name in INITIAL_NAMESPACES {
        let namespace =
            json!({"kind": "Namespace", "apiVersion": "v1", "metadata": {"name": name}});
        writer.put("namespaces", namespace);
        writer.put("serviceaccounts", default_service_account(name));
    }
    let labels = json!({"component": "apiserver", "provider": "kubernetes"});
    let service = json!({
        "kind": "Service", "apiVersion": "v1",
        "metadata": {"name": "kubernetes", "namespace": "default", "labels": labels},
        "spec": {
            "ports": [{"name": "https", "protocol": "TCP", "port": 443, "targetPort": address.port()}],
            "clusterIP": KUBERNETES_SERVICE_IP, "clusterIPs": [KUBERNETES_SERVICE_IP],
            "type": "ClusterIP", "sessionAffinity": "None",
            "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack",
            "internalTrafficPolicy": "Cluster",
        },
        "status": {"loadBalancer": {}},
    });
    writer.put("services", service);
    let endpoints = json!({
        "kind": "Endpoints", "apiVersion": "v1",
        "metadata": {"name": "kubernetes", "namespace": "default",
                     "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"}},
        "subsets": [{"addresses": [{"ip": address.ip().to_string()}],
                     "ports": [{"name": "https", "port": address.port(), "protocol": "TCP"}]}],
    });
    writer.put("endpoints", endpoints);
    // Written with their aggregated rules in, as the aggregation controller would leave
    // them: a fresh server makes no writes after its bootstrap.
    let mut roles = cluster_roles();
    cluster_role_aggregation::aggregate_all(&mut roles);
    for role in roles {
        writer.put("clusterroles", role);
    }
    for (role, groups) in BOOTSTRAP_BINDINGS {
        writer.put("clusterrolebindings", cluster_role_binding(role, groups));
    }
    // The components kube-apiserver reports on (`kubectl get componentstatuses`): this
    // server is all of them, and healthy while it answers.
    for (name, message) in [
        ("controller-manager", "ok"),
        ("scheduler", "ok"),
        ("etcd-0", "{\"health\":\"true\"}"),
    ] {
        let status = json!({
            "kind": "ComponentStatus", "apiVersion": "v1", "metadata": {"name": name},
            "conditions": [{"type": "Healthy", "status": "True", "message": message}],
        });
        writer.put("componentstatuses", status);
    }
}

/// Bootstrap's writer: the store, as kube-apiserver's own user.
struct Bootstrap<'a> {
    store: &'a GenericStore<'a>,
    user: UserInfo,
}

impl Bootstrap<'_> {
    /// Creates `object`, one of `plural` in the version its `apiVersion` names (in the
    /// namespace it names), unless its name is taken.
    fn put(&self, plural: &str, object: Value) {
        let api_version = object
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("");
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        let Some(resource) = self.store.resources.lookup(group, version, plural) else {
            tracing::warn!(%api_version, %plural, "bootstrap names a resource the server does not serve");
            return;
        };
        let Value::Object(object) = object else {
            return;
        };
        let namespace = object
            .get("metadata")
            .and_then(|m| m.get("namespace"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let request = WriteRequest::new(
            &resource,
            namespace.as_deref(),
            "",
            &self.user,
            FIELD_MANAGER,
        );
        match self.store.create(&request, object, Ownership::RecordUpdate) {
            Ok(_) => {}
            Err(status) if status.code == 409 => {}
            Err(status) => {
                tracing::warn!(%plural, status = %status.message, "a bootstrap object was refused");
            }
        }
    }
}

/// kube-apiserver's bootstrap ClusterRoleBindings (`bootstrappolicy.ClusterRoleBindings`)
/// of the roles this server has: each to its ClusterRole of the same name, for groups.
const BOOTSTRAP_BINDINGS: &[(&str, &[&str])] = &[
    ("cluster-admin", &["system:masters"]),
    ("system:basic-user", &["system:authenticated"]),
    ("system:discovery", &["system:authenticated"]),
    (
        "system:public-info-viewer",
        &["system:authenticated", "system:unauthenticated"],
    ),
    (
        "system:service-account-issuer-discovery",
        &["system:serviceaccounts"],
    ),
];

fn cluster_role_binding(role: &str, groups: &[&str]) -> Value {
    let subjects: Vec<Value> = groups
        .iter()
        .map(|group| json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": group}))
        .collect();
    json!({
        "kind": "ClusterRoleBinding", "apiVersion": "rbac.authorization.k8s.io/v1",
        "metadata": {"name": role, "labels": bootstrapping_labels(),
                     "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"}},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": subjects,
    })
}

/// A bootstrap ClusterRole with `rules`.
fn bootstrap_cluster_role(name: &str, rules: Value) -> Value {
    json!({
        "kind": "ClusterRole", "apiVersion": "rbac.authorization.k8s.io/v1",
        "metadata": {"name": name, "labels": bootstrapping_labels(),
                     "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"}},
        "rules": rules,
    })
}

fn bootstrapping_labels() -> Value {
    json!({"kubernetes.io/bootstrapping": "rbac-defaults"})
}

/// Read verbs, and the verbs that change objects.
const READ: &[&str] = &["get", "list", "watch"];
const WRITE: &[&str] = &["create", "delete", "deletecollection", "patch", "update"];

/// The resources `view`, `edit` and `admin` cover, by group.
const WORKLOAD_RESOURCES: &[(&str, &[&str])] = &[
    (
        "",
        &[
            "configmaps",
            "endpoints",
            "persistentvolumeclaims",
            "pods",
            "pods/log",
            "pods/status",
            "replicationcontrollers",
            "replicationcontrollers/scale",
            "serviceaccounts",
            "services",
            "services/status",
            "events",
            "limitranges",
            "resourcequotas",
            "namespaces",
        ],
    ),
    (
        "apps",
        &[
            "daemonsets",
            "deployments",
            "deployments/scale",
            "replicasets",
            "replicasets/scale",
            "statefulsets",
            "statefulsets/scale",
            "controllerrevisions",
        ],
    ),
    ("autoscaling", &["horizontalpodautoscalers"]),
    ("batch", &["cronjobs", "jobs"]),
    ("networking.k8s.io", &["ingresses", "networkpolicies"]),
    ("policy", &["poddisruptionbudgets"]),
    ("discovery.k8s.io", &["endpointslices"]),
];

fn rule(group: &str, resources: &[&str], verbs: &[&str]) -> Value {
    json!({"apiGroups": [group], "resources": resources, "verbs": verbs})
}

fn cluster_roles() -> Vec<Value> {
    let view: Vec<Value> = WORKLOAD_RESOURCES
        .iter()
        .map(|(group, resources)| rule(group, resources, READ))
        .collect();
    // As kube-apiserver's bootstrap policy: `admin`, `edit` and `view` hold no rules of
    // their own; each aggregates the `system:aggregate-to-*` role of its name, and `view`
    // feeds `edit`, `edit` feeds `admin` (by their labels). The aggregation controller
    // writes the gathered rules into them.
    let mut edit: Vec<Value> = WORKLOAD_RESOURCES
        .iter()
        .map(|(group, resources)| {
            let writable: Vec<&str> = resources
                .iter()
                .copied()
                .filter(|r| !r.ends_with("/log") && !r.ends_with("/status") && *r != "namespaces")
                .collect();
            rule(group, &writable, WRITE)
        })
        .collect();
    edit.push(rule("", &["secrets"], ALL_VERBS));
    edit.push(rule(
        "",
        &[
            "pods/exec",
            "pods/attach",
            "pods/portforward",
            "pods/eviction",
        ],
        &["create", "get"],
    ));
    let admin = vec![
        rule(
            "rbac.authorization.k8s.io",
            &["roles", "rolebindings"],
            ALL_VERBS,
        ),
        rule(
            "authorization.k8s.io",
            &["localsubjectaccessreviews"],
            &["create"],
        ),
    ];
    let label = |to: &str| format!("rbac.authorization.k8s.io/aggregate-to-{to}");
    let aggregated = |name: &str, feeds: Option<&str>| {
        let mut labels = bootstrapping_labels();
        if let Some(feeds) = feeds {
            labels[label(feeds)] = json!("true");
        }
        json!({
            "kind": "ClusterRole", "apiVersion": "rbac.authorization.k8s.io/v1",
            "metadata": {"name": name, "labels": labels,
                         "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"}},
            "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {label(name): "true"}}]},
        })
    };
    let part = |name: &str, rules: Vec<Value>| {
        let mut role = bootstrap_cluster_role(&format!("system:aggregate-to-{name}"), json!(rules));
        if let Some(labels) = role
            .pointer_mut("/metadata/labels")
            .and_then(Value::as_object_mut)
        {
            labels.insert(label(name), json!("true"));
        }
        role
    };
    vec![
        bootstrap_cluster_role(
            "cluster-admin",
            json!([
                {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
                {"nonResourceURLs": ["*"], "verbs": ["*"]},
            ]),
        ),
        aggregated("admin", None),
        aggregated("edit", Some("admin")),
        aggregated("view", Some("edit")),
        part("admin", admin),
        part("edit", edit),
        part("view", view),
        bootstrap_cluster_role(
            "system:basic-user",
            // `kubectl auth whoami` too, since SelfSubjectReview went GA (1.28).
            json!([{"apiGroups": ["authorization.k8s.io"],
                    "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                    "verbs": ["create"]},
                   {"apiGroups": ["authentication.k8s.io"],
                    "resources": ["selfsubjectreviews"], "verbs": ["create"]}]),
        ),
        bootstrap_cluster_role(
            "system:discovery",
            json!([{"nonResourceURLs": ["/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez",
                                        "/openapi", "/openapi/*", "/readyz", "/version", "/version/"],
                    "verbs": ["get"]}]),
        ),
        bootstrap_cluster_role(
            "system:public-info-viewer",
            json!([{"nonResourceURLs": ["/healthz", "/livez", "/readyz", "/version", "/version/"],
                    "verbs": ["get"]}]),
        ),
        bootstrap_cluster_role(
            "system:service-account-issuer-discovery",
            json!([{"nonResourceURLs": ["/.well-known/openid-configuration", "/openid/v1/jwks"],
                    "verbs": ["get"]}]),
        ),
    ]
}
