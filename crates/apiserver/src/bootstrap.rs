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

use std::convert::Infallible;

use kubeclient_machinery::GroupResource;
use serde_json::{Value, json};

use crate::handlers;
use crate::registry::ALL_VERBS;
use crate::storage::{Store, Write};

/// The namespaces every cluster starts with.
const INITIAL_NAMESPACES: [&str; 4] = ["default", "kube-system", "kube-public", "kube-node-lease"];

/// The ClusterIP of `default/kubernetes` (the first address of kubeadm's default service
/// range, 10.96.0.0/12).
pub(crate) const KUBERNETES_SERVICE_IP: &str = "10.96.0.1";

/// Creates the bootstrap objects; `address` is the server's `ip:port`.
pub(crate) fn create(store: &Store, address: std::net::SocketAddr) {
    let created = handlers::now_rfc3339();
    for name in INITIAL_NAMESPACES {
        let namespace = json!({
            "kind": "Namespace", "apiVersion": "v1",
            "metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name}},
            "spec": {"finalizers": ["kubernetes"]},
            "status": {"phase": "Active"},
        });
        put(store, "", "namespaces", None, namespace, &created);
        put(
            store,
            "",
            "serviceaccounts",
            Some(name),
            default_service_account(name),
            &created,
        );
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
    put(store, "", "services", Some("default"), service, &created);
    let endpoints = json!({
        "kind": "Endpoints", "apiVersion": "v1",
        "metadata": {"name": "kubernetes", "namespace": "default",
                     "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"}},
        "subsets": [{"addresses": [{"ip": address.ip().to_string()}],
                     "ports": [{"name": "https", "port": address.port(), "protocol": "TCP"}]}],
    });
    put(store, "", "endpoints", Some("default"), endpoints, &created);
    for role in cluster_roles() {
        put(
            store,
            "rbac.authorization.k8s.io",
            "clusterroles",
            None,
            role,
            &created,
        );
    }
    let binding = json!({
        "kind": "ClusterRoleBinding", "apiVersion": "rbac.authorization.k8s.io/v1",
        "metadata": {"name": "cluster-admin", "labels": bootstrapping_labels(),
                     "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"}},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:masters"}],
    });
    put(
        store,
        "rbac.authorization.k8s.io",
        "clusterrolebindings",
        None,
        binding,
        &created,
    );
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
        put(store, "", "componentstatuses", None, status, &created);
    }
}

/// The `default` ServiceAccount the service-account controller keeps in `namespace`.
pub(crate) fn default_service_account(namespace: &str) -> Value {
    json!({
        "kind": "ServiceAccount", "apiVersion": "v1",
        "metadata": {"name": "default", "namespace": namespace},
    })
}

/// Stores `object` (completing its uid and creation time) unless the key is taken.
pub(crate) fn put(
    store: &Store,
    group: &str,
    plural: &str,
    namespace: Option<&str>,
    mut object: Value,
    created: &str,
) {
    let Some(name) = object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .map(str::to_owned)
    else {
        return;
    };
    if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        metadata.insert("uid".to_owned(), json!(uuid::Uuid::new_v4().to_string()));
        metadata.insert("creationTimestamp".to_owned(), json!(created));
    }
    let key = handlers::store_key(namespace, &name);
    let _ = store.write(&GroupResource::new(group, plural), &key, |current| {
        Ok::<_, Infallible>(match current {
            Some(_) => Write::Unchanged,
            None => Write::Create(object),
        })
    });
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
    let mut edit = view.clone();
    edit.extend(WORKLOAD_RESOURCES.iter().map(|(group, resources)| {
        let writable: Vec<&str> = resources
            .iter()
            .copied()
            .filter(|r| !r.ends_with("/log") && !r.ends_with("/status") && *r != "namespaces")
            .collect();
        rule(group, &writable, WRITE)
    }));
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
    let mut admin = edit.clone();
    admin.push(rule(
        "rbac.authorization.k8s.io",
        &["roles", "rolebindings"],
        ALL_VERBS,
    ));
    admin.push(rule(
        "authorization.k8s.io",
        &["localsubjectaccessreviews"],
        &["create"],
    ));
    let aggregated = |name: &str, rules: Vec<Value>| {
        json!({
            "kind": "ClusterRole", "apiVersion": "rbac.authorization.k8s.io/v1",
            "metadata": {"name": name, "labels": {
                "kubernetes.io/bootstrapping": "rbac-defaults",
                format!("rbac.authorization.k8s.io/aggregate-to-{}", match name { "admin" => "none", "edit" => "admin", _ => "edit" }): "true",
            }, "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"}},
            "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {
                format!("rbac.authorization.k8s.io/aggregate-to-{name}"): "true"}}]},
            "rules": rules,
        })
    };
    let mut admin_role = aggregated("admin", admin);
    if let Some(labels) = admin_role
        .pointer_mut("/metadata/labels")
        .and_then(Value::as_object_mut)
    {
        labels.remove("rbac.authorization.k8s.io/aggregate-to-none");
    }
    vec![
        json!({
            "kind": "ClusterRole", "apiVersion": "rbac.authorization.k8s.io/v1",
            "metadata": {"name": "cluster-admin", "labels": bootstrapping_labels(),
                         "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"}},
            "rules": [
                {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
                {"nonResourceURLs": ["*"], "verbs": ["*"]},
            ],
        }),
        admin_role,
        aggregated("edit", edit),
        aggregated("view", view),
    ]
}
