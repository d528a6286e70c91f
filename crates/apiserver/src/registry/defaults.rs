//! The defaulting pieces the kinds' strategies share (kube-apiserver's
//! `pkg/apis/core/v1/defaults.go`): setting a field Go leaves zero, pod templates, pod
//! specs and containers (restart and DNS policy, grace period, scheduler, ports'
//! protocol, termination message, image pull policy). Each kind's own defaults are in its
//! strategy (`kinds/`); what every cluster's admission plugins add to Pods is in
//! `kinds/pod.rs`. Checked against a real kube-apiserver; fields newer Kubernetes
//! versions default (Service IP families and traffic policies, Job completion mode and
//! pod replacement policy, StatefulSet PVC retention, DaemonSet surge) are filled as
//! those versions do.

use serde_json::{Map, Value, json};

/// The scheduler Pods wait for unless they name another.
pub(crate) const DEFAULT_SCHEDULER: &str = "default-scheduler";

/// The object map at `key`, if there is one.
pub(crate) fn child<'a>(
    object: &'a mut Map<String, Value>,
    key: &str,
) -> Option<&'a mut Map<String, Value>> {
    object.get_mut(key).and_then(Value::as_object_mut)
}

/// The object map at `key`, created (or replacing a non-object) when needed.
pub(crate) fn child_or_insert<'a>(
    object: &'a mut Map<String, Value>,
    key: &str,
) -> &'a mut Map<String, Value> {
    let entry = object.entry(key).or_insert_with(|| json!({}));
    if !entry.is_object() {
        *entry = json!({});
    }
    match entry {
        Value::Object(map) => map,
        _ => unreachable!("just made an object"),
    }
}

/// Sets `key` unless it holds a value (null counts as absent, as in Go).
pub(crate) fn set(object: &mut Map<String, Value>, key: &str, value: Value) {
    if object.get(key).is_none_or(Value::is_null) {
        object.insert(key.to_owned(), value);
    }
}

/// A pod template's defaults (`spec.template`).
pub(crate) fn template(template: Option<&mut Value>) {
    if let Some(spec) = template
        .and_then(Value::as_object_mut)
        .and_then(|t| child(t, "spec"))
    {
        pod_spec(spec);
    }
}

/// The defaults of a pod spec and its containers.
pub(crate) fn pod_spec(spec: &mut Map<String, Value>) {
    for list in ["initContainers", "containers"] {
        if let Some(Value::Array(containers)) = spec.get_mut(list) {
            for container in containers.iter_mut().filter_map(Value::as_object_mut) {
                self::container(container);
            }
        }
    }
    set(spec, "restartPolicy", json!("Always"));
    set(spec, "terminationGracePeriodSeconds", json!(30));
    set(spec, "dnsPolicy", json!("ClusterFirst"));
    set(spec, "securityContext", json!({}));
    set(spec, "schedulerName", json!(DEFAULT_SCHEDULER));
}

fn container(container: &mut Map<String, Value>) {
    if let Some(Value::Array(ports)) = container.get_mut("ports") {
        for port in ports.iter_mut().filter_map(Value::as_object_mut) {
            set(port, "protocol", json!("TCP"));
        }
    }
    set(container, "resources", json!({}));
    set(
        container,
        "terminationMessagePath",
        json!("/dev/termination-log"),
    );
    set(container, "terminationMessagePolicy", json!("File"));
    let image = container.get("image").and_then(Value::as_str).unwrap_or("");
    let policy = image_pull_policy(image);
    set(container, "imagePullPolicy", json!(policy));
}

/// `Always` for an image without a tag or tagged `latest`, else `IfNotPresent`.
fn image_pull_policy(image: &str) -> &'static str {
    if image.contains('@') {
        return "IfNotPresent";
    }
    let last = image.rsplit('/').next().unwrap_or(image);
    match last.split_once(':') {
        Some((_, "latest")) | None => "Always",
        Some(_) => "IfNotPresent",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_pull_policy_follows_the_tag() {
        assert_eq!(image_pull_policy("nginx"), "Always");
        assert_eq!(image_pull_policy("nginx:latest"), "Always");
        assert_eq!(image_pull_policy("nginx:1.25"), "IfNotPresent");
        assert_eq!(image_pull_policy("registry:5000/team/app"), "Always");
        assert_eq!(
            image_pull_policy("registry:5000/team/app:v2"),
            "IfNotPresent"
        );
        assert_eq!(image_pull_policy("app@sha256:abc"), "IfNotPresent");
    }
}
