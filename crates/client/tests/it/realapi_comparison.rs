//! The embedded server against a **real kube-apiserver** (CI: v1.20; any kube-apiserver
//! whose kubeconfig path is in `KUBECLIENT_REALAPI_KUBECONFIG`), request
//! by request: the same scenarios run in a fresh namespace on both, and the answers (status
//! code, Status reason and message, or the object) must agree once what legitimately
//! differs is normalized away (uids, resourceVersions, times, allocated IPs and ports, and
//! the fields Kubernetes versions after 1.20 add, which the embedded server follows).
//!
//! Runs only where that variable is set (`.ci/run` sets it; see `realapi.rs`); prints the
//! agreement of every scenario. The real server in CI runs without kube-controller-manager,
//! so garbage collection itself is compared by the deletion answers (finalizers, phases),
//! not by what a controller does afterwards.

use http::Method;
use kubeclient::rest::Request;
use kubeclient::{Client, Error};
use serde_json::{Value, json};

use crate::realapi::{fresh_namespace, real_server};
use crate::support::start;

/// One request of a scenario; `{ns}` in the path is the scenario's namespace.
struct Step {
    method: Method,
    path: &'static str,
    content_type: &'static str,
    body: Value,
    /// Whether the answers are compared (set-up steps are not).
    compared: bool,
    /// Fields normalized away elsewhere that this step compares (`generation`,
    /// `managedFields`, whose `time`s are still dropped).
    kept: &'static [&'static str],
}

fn step(method: Method, path: &'static str, body: Value) -> Step {
    Step {
        method,
        path,
        content_type: "application/json",
        body,
        compared: true,
        kept: &[],
    }
}

/// `step` comparing also the given normally-ignored fields.
fn keeping(kept: &'static [&'static str], step: Step) -> Step {
    Step { kept, ..step }
}

fn merge_patch(path: &'static str, body: Value) -> Step {
    Step {
        content_type: "application/merge-patch+json",
        ..step(Method::PATCH, path, body)
    }
}

/// The namespace's `default` ServiceAccount, which Pods need: the real server in CI runs
/// without the controller that makes it (the embedded one has it already).
fn service_account_set_up() -> Step {
    // (kube-apiserver's ServiceAccount admission reads its informer's cache, so the Pod
    // steps after this one may retry: see `answer`.)
    Step {
        compared: false,
        ..step(
            Method::POST,
            "/api/v1/namespaces/{ns}/serviceaccounts",
            json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}}),
        )
    }
}

/// A CustomResourceDefinition `{plural}.{ns}.example.com` of group `{ns}.example.com` (CRDs are
/// cluster-wide: the group carries the scenario's namespace to stay apart between runs),
/// its schema keeping every field.
fn crd_body(plural: &str, kind: &str, status_subresource: bool) -> Value {
    let subresources = if status_subresource {
        json!({"status": {}})
    } else {
        json!({})
    };
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{{ns}}.example.com")},
        "spec": {"group": "{ns}.example.com", "scope": "Namespaced",
            "names": {"plural": plural, "singular": kind.to_lowercase(), "kind": kind, "listKind": format!("{kind}List")},
            "versions": [{"name": "v1", "served": true, "storage": true, "subresources": subresources,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}})
}

/// Creates an object `empty` of `kind` with an empty spec under `path`.
fn empty_spec(path: &'static str, api_version: &str, kind: &str) -> Step {
    step(
        Method::POST,
        path,
        json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": "empty"}, "spec": {}}),
    )
}

/// `object` with the fields of `more` added.
fn with_fields(object: &Value, more: Value) -> Value {
    let mut object = object.clone();
    if let (Some(fields), Value::Object(more)) = (object.as_object_mut(), more) {
        fields.extend(more);
    }
    object
}

/// Creates Pod `p` with `spec`.
fn create_pod(spec: Value) -> Step {
    step(
        Method::POST,
        "/api/v1/namespaces/{ns}/pods",
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}),
    )
}

/// Creates Deployment `d` selecting `a=b` with `template`.
fn create_deployment(template: &Value) -> Step {
    step(
        Method::POST,
        "/apis/apps/v1/namespaces/{ns}/deployments",
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": template}}),
    )
}

/// What an answer is compared by.
async fn answer(client: &Client, namespace: &str, step: &Step) -> Value {
    let path = step.path.replace("{ns}", namespace);
    let mut request = Request::new(step.method.clone(), path);
    if !step.body.is_null() {
        let body = step.body.to_string().replace("{ns}", namespace);
        request = request.body(body, step.content_type);
    }
    if step.path.contains("as=Table") {
        request.accept = Some("application/json;as=Table;v=v1;g=meta.k8s.io".to_owned());
    }
    let mut outcome = client.request_bytes(request.clone()).await;
    for _ in 0..50 {
        // The ServiceAccount admission of kube-apiserver may not see a just-created
        // ServiceAccount yet: retry as a client would.
        match &outcome {
            Err(Error::Api(error))
                if error.code() == 403
                    && error.status.message.contains("looking up service account")
                    // A just-created CRD's resource is served a moment later.
                    || error.code() == 404
                        && error.status.message == "the server could not find the requested resource" =>
            {
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                outcome = client.request_bytes(request.clone()).await;
            }
            _ => break,
        }
    }
    match outcome {
        Ok(bytes) => {
            let value: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
            normalize(value, namespace, step.kept)
        }
        Err(Error::Api(error)) => json!({
            "code": error.code(),
            "reason": error.reason(),
            "message": error.status.message.replace(namespace, "{ns}"),
        }),
        Err(other) => json!({"transport": other.to_string()}),
    }
}

/// Removes what legitimately differs between two servers (and between Kubernetes 1.20 and
/// the newer behaviour the embedded server follows).
pub(crate) fn normalize(mut value: Value, namespace: &str, kept: &[&str]) -> Value {
    fn walk(value: &mut Value, namespace: &str, key: &str, kept: &[&str]) {
        match value {
            Value::Object(map) => {
                if key == "managedFields" {
                    map.remove("time");
                }
                for noisy in [
                    "uid",
                    "resourceVersion",
                    "creationTimestamp",
                    "managedFields",
                    "selfLink",
                    "deletionTimestamp",
                    "clusterIP",
                    "clusterIPs",
                    "nodePort",
                    "token",
                    "expirationTimestamp",
                    "ipFamilies",
                    "ipFamilyPolicy",
                    "internalTrafficPolicy",
                    "allocateLoadBalancerNodePorts",
                    "completionMode",
                    "suspend",
                    "podReplacementPolicy",
                    "persistentVolumeClaimRetentionPolicy",
                    "volumes",
                    "volumeMounts",
                    "maxSurge",
                    "controller-uid",
                    // Jobs track a generation only after 1.20; table column descriptions
                    // are documentation.
                    "generation",
                    "description",
                    "lastTransitionTime",
                    // The real server in CI runs no scheduler; the embedded one binds Pods.
                    "nodeName",
                ] {
                    if !kept.contains(&noisy) {
                        map.remove(noisy);
                    }
                    // The same fields in managedFields' fieldsV1.
                    map.remove(&format!("f:{noisy}"));
                }
                map.retain(|k, _| {
                    !k.starts_with("batch.kubernetes.io/") && k != "kubernetes.io/metadata.name"
                });
                for (child_key, child) in map.iter_mut() {
                    walk(child, namespace, child_key, kept);
                }
            }
            Value::Array(items) => {
                for item in items {
                    walk(item, namespace, key, kept);
                }
            }
            Value::String(text) if key == "cells" || text.contains(namespace) => {
                *text = text.replace(namespace, "{ns}");
            }
            _ => {}
        }
    }
    walk(&mut value, namespace, "", kept);
    // Table cells: ages and times differ by when the test ran.
    if let Some(rows) = value.get_mut("rows").and_then(Value::as_array_mut) {
        for row in rows {
            row.as_object_mut().map(|r| r.remove("object"));
            if let Some(cells) = row.get_mut("cells").and_then(Value::as_array_mut) {
                for cell in cells.iter_mut() {
                    if cell.as_str().is_some_and(|t| {
                        t.ends_with('s') && t.trim_end_matches('s').parse::<u64>().is_ok()
                    }) {
                        *cell = json!("<age>");
                    }
                }
            }
        }
    }
    value
}

/// The scenarios, by name; each answer of each step is compared.
fn scenarios() -> Vec<(&'static str, Vec<Step>)> {
    let container = json!([{"name": "c", "image": "nginx:1", "ports": [{"containerPort": 80}]}]);
    let template = json!({"metadata": {"labels": {"a": "b"}}, "spec": {"containers": container}});
    let event_v1 = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "v1"},
        "eventTime": "2026-01-01T00:00:00.123456Z", "reportingController": "example.com/c",
        "reportingInstance": "c-1", "action": "Reconcile", "reason": "Done", "type": "Warning",
        "regarding": {"kind": "Pod", "name": "p", "namespace": "{ns}"}, "note": "n",
        "series": {"count": 2, "lastObservedTime": "2026-01-01T00:02:00.000000Z"}});
    vec![
        (
            "pod defaults",
            vec![
                service_account_set_up(),
                create_pod(json!({"automountServiceAccountToken": false, "containers": container})),
            ],
        ),
        (
            "deployment defaults and immutable selector",
            vec![
                create_deployment(&template),
                merge_patch(
                    "/apis/apps/v1/namespaces/{ns}/deployments/d",
                    json!({"spec": {"selector": {"matchLabels": {"x": "y"}}}}),
                ),
            ],
        ),
        (
            "replicaset and statefulset defaults",
            vec![
                step(
                    Method::POST,
                    "/apis/apps/v1/namespaces/{ns}/replicasets",
                    json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "r"},
                    "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": template}}),
                ),
                step(
                    Method::POST,
                    "/apis/apps/v1/namespaces/{ns}/statefulsets",
                    json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "s"},
                    "spec": {"serviceName": "s", "selector": {"matchLabels": {"a": "b"}}, "template": template}}),
                ),
            ],
        ),
        (
            "services: defaults, duplicate port names, immutable cluster IP",
            vec![
                step(
                    Method::POST,
                    "/api/v1/namespaces/{ns}/services",
                    json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {"type": "NodePort", "selector": {"a": "b"}, "ports": [{"port": 80, "targetPort": 8080}]}}),
                ),
                step(
                    Method::POST,
                    "/api/v1/namespaces/{ns}/services",
                    json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "dup"}, "spec": {"ports": [{"name": "http", "port": 80}, {"name": "http", "port": 81}]}}),
                ),
                step(
                    Method::POST,
                    "/api/v1/namespaces/{ns}/services",
                    json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "headless"}, "spec": {"clusterIP": "None", "ports": [{"port": 80}]}}),
                ),
            ],
        ),
        (
            "secrets: stringData, type, immutable",
            vec![
                step(
                    Method::POST,
                    "/api/v1/namespaces/{ns}/secrets",
                    json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "stringData": {"a": "b"}, "immutable": true}),
                ),
                merge_patch(
                    "/api/v1/namespaces/{ns}/secrets/s",
                    json!({"data": {"a": "Yw=="}}),
                ),
                merge_patch(
                    "/api/v1/namespaces/{ns}/secrets/s",
                    json!({"type": "example.com/other"}),
                ),
            ],
        ),
        (
            "immutable configmaps and uids",
            vec![
                step(
                    Method::POST,
                    "/api/v1/namespaces/{ns}/configmaps",
                    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "b"}, "immutable": true}),
                ),
                merge_patch(
                    "/api/v1/namespaces/{ns}/configmaps/c",
                    json!({"data": {"a": "c"}}),
                ),
                merge_patch(
                    "/api/v1/namespaces/{ns}/configmaps/c",
                    json!({"immutable": false}),
                ),
                merge_patch(
                    "/api/v1/namespaces/{ns}/configmaps/c",
                    json!({"metadata": {"labels": {"x": "y"}}}),
                ),
            ],
        ),
        (
            "put creates where the real server does",
            vec![
                step(
                    Method::PUT,
                    "/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/l",
                    json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"}, "spec": {"holderIdentity": "a"}}),
                ),
                step(
                    Method::PUT,
                    "/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/l",
                    json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"}, "spec": {"holderIdentity": "b"}}),
                ),
                step(
                    Method::PUT,
                    "/api/v1/namespaces/{ns}/endpoints/e",
                    json!({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "e"}}),
                ),
                step(
                    Method::PUT,
                    "/api/v1/namespaces/{ns}/configmaps/missing",
                    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "missing"}}),
                ),
            ],
        ),
        (
            "events in both APIs",
            vec![
                step(
                    Method::POST,
                    "/api/v1/namespaces/{ns}/events",
                    json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e"}, "involvedObject": {"kind": "Pod", "name": "p"}, "reason": "R", "message": "m"}),
                ),
                step(
                    Method::POST,
                    "/apis/events.k8s.io/v1/namespaces/{ns}/events",
                    json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "bad"}, "note": "hi"}),
                ),
            ],
        ),
        (
            "deletion answers",
            vec![
                service_account_set_up(),
                create_pod(json!({"automountServiceAccountToken": false, "containers": container})),
                step(
                    Method::DELETE,
                    "/api/v1/namespaces/{ns}/pods/p",
                    Value::Null,
                ),
                step(
                    Method::POST,
                    "/api/v1/namespaces/{ns}/configmaps",
                    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}),
                ),
                step(
                    Method::DELETE,
                    "/api/v1/namespaces/{ns}/configmaps/c",
                    Value::Null,
                ),
                step(
                    Method::POST,
                    "/api/v1/namespaces/{ns}/serviceaccounts",
                    json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "sa"}}),
                ),
                step(
                    Method::DELETE,
                    "/api/v1/namespaces/{ns}/serviceaccounts/sa",
                    Value::Null,
                ),
                step(
                    Method::POST,
                    "/apis/batch/v1/namespaces/{ns}/jobs",
                    json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}, "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": container}}}}),
                ),
                step(
                    Method::DELETE,
                    "/apis/batch/v1/namespaces/{ns}/jobs/j",
                    Value::Null,
                ),
                step(
                    Method::POST,
                    "/api/v1/namespaces/{ns}/configmaps",
                    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owner"}}),
                ),
                step(
                    Method::DELETE,
                    "/api/v1/namespaces/{ns}/configmaps/owner",
                    json!({"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Foreground"}),
                ),
                step(
                    Method::DELETE,
                    "/api/v1/namespaces/{ns}/configmaps/x",
                    json!({"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background", "orphanDependents": true}),
                ),
            ],
        ),
        (
            "tables of built-in kinds",
            vec![
                step(
                    Method::POST,
                    "/api/v1/namespaces/{ns}/configmaps",
                    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}}),
                ),
                step(
                    Method::GET,
                    "/api/v1/namespaces/{ns}/configmaps?as=Table",
                    Value::Null,
                ),
                step(
                    Method::POST,
                    "/api/v1/namespaces/{ns}/secrets",
                    json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": {"a": "Yg=="}}),
                ),
                step(
                    Method::GET,
                    "/api/v1/namespaces/{ns}/secrets?as=Table",
                    Value::Null,
                ),
                // The selector column prints requirements sorted by key, as Go's selectors.
                step(
                    Method::POST,
                    "/apis/apps/v1/namespaces/{ns}/deployments",
                    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                        "spec": {"selector": {"matchLabels": {"z": "1", "a": "b"},
                            "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["db", "cache"]}, {"key": "env", "operator": "Exists"}]},
                        "template": {"metadata": {"labels": {"a": "b", "z": "1", "env": "x"}}, "spec": {"containers": container}}}}),
                ),
                step(
                    Method::GET,
                    "/apis/apps/v1/namespaces/{ns}/deployments?as=Table",
                    Value::Null,
                ),
            ],
        ),
        (
            "generation bumps",
            vec![
                keeping(&["generation"], create_deployment(&template)),
                keeping(
                    &["generation"],
                    merge_patch(
                        "/apis/apps/v1/namespaces/{ns}/deployments/d",
                        json!({"metadata": {"labels": {"x": "y"}}}),
                    ),
                ),
                keeping(
                    &["generation"],
                    merge_patch(
                        "/apis/apps/v1/namespaces/{ns}/deployments/d",
                        json!({"metadata": {"annotations": {"x": "y"}}}),
                    ),
                ),
                keeping(
                    &["generation"],
                    merge_patch(
                        "/apis/apps/v1/namespaces/{ns}/deployments/d/status",
                        json!({"status": {"replicas": 2}}),
                    ),
                ),
                keeping(
                    &["generation"],
                    merge_patch(
                        "/apis/apps/v1/namespaces/{ns}/deployments/d",
                        json!({"spec": {"paused": true}, "metadata": {"finalizers": ["example.com/f"]}}),
                    ),
                ),
                keeping(
                    &["generation"],
                    step(
                        Method::DELETE,
                        "/apis/apps/v1/namespaces/{ns}/deployments/d",
                        Value::Null,
                    ),
                ),
                keeping(
                    &["generation"],
                    merge_patch(
                        "/apis/apps/v1/namespaces/{ns}/deployments/d",
                        json!({"metadata": {"finalizers": null}}),
                    ),
                ),
                // (Not compared: kube-apiserver answers before its controller has
                // accepted the names; the embedded server's answer is established.)
                Step {
                    compared: false,
                    ..step(
                        Method::POST,
                        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                        crd_body("plains", "Plain", false),
                    )
                },
                keeping(
                    &["generation"],
                    step(
                        Method::POST,
                        "/apis/{ns}.example.com/v1/namespaces/{ns}/plains",
                        json!({"apiVersion": "{ns}.example.com/v1", "kind": "Plain", "metadata": {"name": "p"}, "spec": {"a": 1}}),
                    ),
                ),
                keeping(
                    &["generation"],
                    merge_patch(
                        "/apis/{ns}.example.com/v1/namespaces/{ns}/plains/p",
                        json!({"status": {"s": 1}}),
                    ),
                ),
                keeping(
                    &["generation"],
                    merge_patch(
                        "/apis/{ns}.example.com/v1/namespaces/{ns}/plains/p",
                        json!({"metadata": {"labels": {"x": "y"}}}),
                    ),
                ),
                step(
                    Method::DELETE,
                    "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/plains.{ns}.example.com",
                    Value::Null,
                ),
            ],
        ),
        (
            "workloads with empty or inconsistent specs",
            vec![
                empty_spec(
                    "/apis/apps/v1/namespaces/{ns}/deployments",
                    "apps/v1",
                    "Deployment",
                ),
                step(
                    Method::POST,
                    "/apis/apps/v1/namespaces/{ns}/deployments",
                    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "e"},
                    "spec": {"selector": {}, "template": {"spec": {"restartPolicy": "Never", "activeDeadlineSeconds": 3, "containers": container}}}}),
                ),
                step(
                    Method::POST,
                    "/apis/apps/v1/namespaces/{ns}/replicasets",
                    json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "e"},
                    "spec": {"selector": {"matchExpressions": [{"key": "a", "operator": "Bad"}, {"key": "b", "operator": "In"}]},
                        "template": {"spec": {"containers": [{"name": "", "image": ""}]}}}}),
                ),
                empty_spec(
                    "/apis/apps/v1/namespaces/{ns}/statefulsets",
                    "apps/v1",
                    "StatefulSet",
                ),
                empty_spec(
                    "/apis/apps/v1/namespaces/{ns}/daemonsets",
                    "apps/v1",
                    "DaemonSet",
                ),
                empty_spec(
                    "/api/v1/namespaces/{ns}/replicationcontrollers",
                    "v1",
                    "ReplicationController",
                ),
                step(
                    Method::POST,
                    "/apis/batch/v1/namespaces/{ns}/jobs",
                    json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "e"},
                    "spec": {"template": {"spec": {"containers": container}}}}),
                ),
            ],
        ),
        (
            "watch from a resourceVersion not reached yet",
            vec![
                // The stream starts and waits for later changes (none come): an empty body
                // when timeoutSeconds ends it.
                step(
                    Method::GET,
                    "/api/v1/namespaces/{ns}/configmaps?watch=1&resourceVersion=999999999&timeoutSeconds=2",
                    Value::Null,
                ),
            ],
        ),
        (
            "managedFields: defaults owned, allocations not, ports keyed by port and protocol",
            vec![
                keeping(
                    &["managedFields"],
                    step(
                        Method::POST,
                        "/api/v1/namespaces/{ns}/services?fieldManager=a",
                        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
                        "spec": {"type": "NodePort", "selector": {"a": "b"},
                            "ports": [{"name": "a", "port": 80, "targetPort": 8080}, {"name": "b", "port": 81, "protocol": "UDP"}]}}),
                    ),
                ),
                keeping(
                    &["managedFields"],
                    Step {
                        content_type: "application/apply-patch+yaml",
                        ..step(
                            Method::PATCH,
                            "/api/v1/namespaces/{ns}/services/s?fieldManager=b",
                            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
                            "spec": {"ports": [{"name": "a", "port": 80, "protocol": "TCP", "targetPort": 9090}]}}),
                        )
                    },
                ),
                keeping(
                    &["managedFields"],
                    step(
                        Method::POST,
                        "/api/v1/namespaces/{ns}/configmaps?fieldManager=a",
                        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "labels": {"x": "y"}}, "data": {"k": "v"}}),
                    ),
                ),
            ],
        ),
        (
            "streams of an unscheduled pod",
            vec![
                service_account_set_up(),
                create_pod(
                    json!({"schedulerName": "elsewhere", "automountServiceAccountToken": false, "containers": container}),
                ),
                step(
                    Method::GET,
                    "/api/v1/namespaces/{ns}/pods/p/exec?command=ls&stdout=true",
                    Value::Null,
                ),
                step(
                    Method::POST,
                    "/api/v1/namespaces/{ns}/pods/p/attach?stdout=true",
                    Value::Null,
                ),
                step(
                    Method::GET,
                    "/api/v1/namespaces/{ns}/pods/p/portforward?ports=80",
                    Value::Null,
                ),
                step(
                    Method::GET,
                    "/api/v1/namespaces/{ns}/pods/p/log",
                    Value::Null,
                ),
            ],
        ),
        (
            "crd deletion through its cleanup finalizer",
            vec![
                Step {
                    compared: false,
                    ..step(
                        Method::POST,
                        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                        crd_body("things", "Thing", true),
                    )
                },
                step(
                    Method::POST,
                    "/apis/{ns}.example.com/v1/namespaces/{ns}/things",
                    json!({"apiVersion": "{ns}.example.com/v1", "kind": "Thing",
                        "metadata": {"name": "held", "finalizers": ["example.com/hold"]}}),
                ),
                // Marked, not removed: the answer carries the finalizer and `Terminating`.
                step(
                    Method::DELETE,
                    "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/things.{ns}.example.com",
                    Value::Null,
                ),
                step(
                    Method::POST,
                    "/apis/{ns}.example.com/v1/namespaces/{ns}/things",
                    json!({"apiVersion": "{ns}.example.com/v1", "kind": "Thing", "metadata": {"name": "late"}}),
                ),
                // (What follows depends on when the real server's finalizer controller runs.)
                Step {
                    compared: false,
                    ..merge_patch(
                        "/apis/{ns}.example.com/v1/namespaces/{ns}/things/held",
                        json!({"metadata": {"finalizers": null}}),
                    )
                },
            ],
        ),
        (
            "one storage for both event APIs",
            vec![
                step(
                    Method::POST,
                    "/api/v1/namespaces/{ns}/events",
                    json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "core"},
                        "involvedObject": {"kind": "Pod", "name": "p", "namespace": "{ns}"},
                        "reason": "Started", "message": "m", "type": "Normal", "count": 2,
                        "source": {"component": "kubelet", "host": "h"}, "firstTimestamp": "2026-01-01T00:00:00Z",
                        "related": {"kind": "Node", "name": "n"}, "action": "A", "reportingComponent": "rc", "reportingInstance": "ri"}),
                ),
                step(
                    Method::GET,
                    "/apis/events.k8s.io/v1/namespaces/{ns}/events/core",
                    Value::Null,
                ),
                // The deprecated fields are refused through events.k8s.io.
                step(
                    Method::POST,
                    "/apis/events.k8s.io/v1/namespaces/{ns}/events",
                    with_fields(
                        &event_v1,
                        json!({"deprecatedCount": 3, "deprecatedSource": {"component": "x"}}),
                    ),
                ),
                step(
                    Method::POST,
                    "/apis/events.k8s.io/v1/namespaces/{ns}/events",
                    event_v1,
                ),
                step(
                    Method::GET,
                    "/api/v1/namespaces/{ns}/events/v1",
                    Value::Null,
                ),
                merge_patch(
                    "/apis/events.k8s.io/v1/namespaces/{ns}/events/core",
                    json!({"note": "changed"}),
                ),
                step(
                    Method::GET,
                    "/api/v1/namespaces/{ns}/events/core",
                    Value::Null,
                ),
                step(
                    Method::DELETE,
                    "/apis/events.k8s.io/v1/namespaces/{ns}/events/v1",
                    Value::Null,
                ),
                step(
                    Method::GET,
                    "/api/v1/namespaces/{ns}/events/v1",
                    Value::Null,
                ),
            ],
        ),
        (
            "access review",
            vec![
                step(
                    Method::POST,
                    "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
                    json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview", "spec": {"resourceAttributes": {"verb": "get", "resource": "pods"}}}),
                ),
                step(
                    Method::POST,
                    "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
                    json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview", "spec": {}}),
                ),
            ],
        ),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_embedded_server_answers_as_a_real_kube_apiserver() {
    let Some(real) = real_server().await else {
        return;
    };
    let ours = start().await;
    let mut disagreements = Vec::new();
    let (mut agreed, mut total) = (0usize, 0usize);
    for (name, steps) in scenarios() {
        let real_namespace = fresh_namespace(&real, "cmp").await;
        let our_namespace = fresh_namespace(&ours.client, "cmp").await;
        let mut scenario_agreed = 0;
        let compared = steps.iter().filter(|s| s.compared).count();
        for (index, step) in steps.iter().enumerate() {
            let theirs = answer(&real, &real_namespace, step).await;
            let mine = answer(&ours.client, &our_namespace, step).await;
            if !step.compared {
                continue;
            }
            total += 1;
            if theirs == mine {
                agreed += 1;
                scenario_agreed += 1;
            } else {
                disagreements.push(format!(
                    "{name}, step {index} ({} {}):\n  real: {theirs}\n  ours: {mine}",
                    step.method, step.path
                ));
            }
        }
        eprintln!("{name}: {scenario_agreed}/{compared} answers agree");
    }
    eprintln!("agreement: {agreed}/{total} answers");
    assert!(
        disagreements.is_empty(),
        "{} of {total} answers differ:\n{}",
        disagreements.len(),
        disagreements.join("\n")
    );
}
