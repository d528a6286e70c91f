//! How the lists of built-in kinds merge: the merge keys and strategies upstream takes
//! from its OpenAPI extensions (`x-kubernetes-patch-merge-key` / `-strategy`).

use super::*;

/// The list strategy for a field of a built-in kind, given the path of field names from
/// the object root to the list, ignoring list indices
/// (e.g. `["spec","template","spec","containers"]`). Unknown fields and kinds replace.
///
/// The table mirrors the `patchStrategy`/`patchMergeKey` struct tags of k8s.io/api as of
/// Kubernetes v1.34 (core/v1 `PodSpec`, `Container`/`EphemeralContainerCommon`,
/// `PodStatus`, `NodeSpec`/`NodeStatus`, `ServiceSpec`, `ObjectMeta`; apps/v1, batch/v1,
/// autoscaling/v2 and policy/v1 status conditions). Notably `tolerations`, `envFrom`,
/// `resizePolicy`, `readinessGates` and container `resources.claims` carry no patch
/// strategy upstream (they are `listType=atomic` or map-typed for server-side apply only),
/// so they are replaced; `Service.spec.ports` merges on `port` alone although its
/// list-map key is `(port, protocol)`.
#[must_use]
pub(crate) fn builtin_list_strategy(kind: &str, path: &[&str]) -> ListStrategy {
    // ObjectMeta is embedded everywhere (object root, pod templates, claim templates), so
    // its two merging lists are recognised by their last two segments.
    match path {
        [.., "metadata", "finalizers"] => return ListStrategy::MergePrimitives,
        [.., "metadata", "ownerReferences"] => return ListStrategy::MergeByKey("uid"),
        _ => {}
    }
    if let Some(pod_spec) = pod_spec_prefix(kind).and_then(|prefix| path.strip_prefix(prefix)) {
        return pod_spec_list_strategy(pod_spec);
    }
    kind_list_strategy(kind, path)
}

/// The fields that key the items of a list of a built-in kind for server-side apply and
/// managedFields (`x-kubernetes-list-map-keys`): the strategic-merge key, except for the
/// ports lists, keyed by port and protocol (`k:{"port":80,"protocol":"TCP"}`). `None`:
/// the list is atomic.
#[must_use]
pub(crate) fn builtin_list_map_keys(kind: &str, path: &[&str]) -> Option<&'static [&'static str]> {
    let in_pod_spec = pod_spec_prefix(kind).and_then(|prefix| path.strip_prefix(prefix));
    if let Some(
        [
            "containers" | "initContainers" | "ephemeralContainers",
            "ports",
        ],
    ) = in_pod_spec
    {
        return Some(&["containerPort", "protocol"]);
    }
    if (kind, path) == ("Service", &["spec", "ports"][..]) {
        return Some(&["port", "protocol"]);
    }
    match builtin_list_strategy(kind, path) {
        ListStrategy::MergeByKey(key) => single_key(key),
        _ => None,
    }
}

/// A merge key as a list of key fields.
fn single_key(key: &str) -> Option<&'static [&'static str]> {
    const KEYS: &[&[&str]] = &[
        &["name"],
        &["uid"],
        &["ip"],
        &["type"],
        &["topologyKey"],
        &["containerPort"],
        &["mountPath"],
        &["devicePath"],
        &["port"],
    ];
    KEYS.iter().copied().find(|keys| keys[0] == key)
}

/// Where a kind keeps its pod spec.
pub(super) fn pod_spec_prefix(kind: &str) -> Option<&'static [&'static str]> {
    match kind {
        "Pod" => Some(&["spec"]),
        "PodTemplate" => Some(&["template", "spec"]),
        "Deployment"
        | "ReplicaSet"
        | "StatefulSet"
        | "DaemonSet"
        | "Job"
        | "ReplicationController" => Some(&["spec", "template", "spec"]),
        "CronJob" => Some(&["spec", "jobTemplate", "spec", "template", "spec"]),
        _ => None,
    }
}

/// List strategies inside a `PodSpec`, given the path relative to it.
pub(super) fn pod_spec_list_strategy(path: &[&str]) -> ListStrategy {
    match path {
        ["containers" | "initContainers" | "ephemeralContainers"] => {
            ListStrategy::MergeByKey("name")
        }
        ["volumes" | "imagePullSecrets" | "resourceClaims" | "schedulingGates"] => {
            ListStrategy::MergeByKey("name")
        }
        ["hostAliases"] => ListStrategy::MergeByKey("ip"),
        ["topologySpreadConstraints"] => ListStrategy::MergeByKey("topologyKey"),
        [
            "containers" | "initContainers" | "ephemeralContainers",
            field,
        ] => match *field {
            "env" => ListStrategy::MergeByKey("name"),
            "ports" => ListStrategy::MergeByKey("containerPort"),
            "volumeMounts" => ListStrategy::MergeByKey("mountPath"),
            "volumeDevices" => ListStrategy::MergeByKey("devicePath"),
            // envFrom, resizePolicy, restartPolicyRules, command, args: atomic upstream.
            _ => ListStrategy::Replace,
        },
        // tolerations, readinessGates, dnsConfig lists: atomic upstream.
        _ => ListStrategy::Replace,
    }
}

/// Kinds whose `status.conditions` merge by `type` upstream.
pub(super) const CONDITIONS_BY_TYPE: &[&str] = &[
    "Pod",
    "Node",
    "Service",
    "Namespace",
    "PersistentVolumeClaim",
    "ReplicationController",
    "Deployment",
    "ReplicaSet",
    "StatefulSet",
    "DaemonSet",
    "Job",
    "HorizontalPodAutoscaler",
    "PodDisruptionBudget",
];

/// List strategies outside pod specs and object metadata.
pub(super) fn kind_list_strategy(kind: &str, path: &[&str]) -> ListStrategy {
    match (kind, path) {
        ("Pod", ["status", "podIPs" | "hostIPs"]) => ListStrategy::MergeByKey("ip"),
        ("Pod", ["status", "resourceClaimStatuses"]) => ListStrategy::MergeByKey("name"),
        ("Node", ["status", "addresses"]) => ListStrategy::MergeByKey("type"),
        ("Node", ["spec", "podCIDRs"]) => ListStrategy::MergePrimitives,
        ("Service", ["spec", "ports"]) => ListStrategy::MergeByKey("port"),
        ("ServiceAccount", ["secrets"]) => ListStrategy::MergeByKey("name"),
        ("ComponentStatus", ["conditions"]) => ListStrategy::MergeByKey("type"),
        (kind, ["status", "conditions"]) if CONDITIONS_BY_TYPE.contains(&kind) => {
            ListStrategy::MergeByKey("type")
        }
        _ => ListStrategy::Replace,
    }
}
