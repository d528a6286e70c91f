//! Defaulting of the common built-in kinds, as kube-apiserver's defaulters (and the
//! admission plugins every cluster runs: ServiceAccount, DefaultTolerationSeconds,
//! Priority) fill them in before an object is validated and stored: container and pod
//! template fields, workload strategies and limits, Job selectors and labels, Service
//! types and ports (`kinds/service.rs`, with ClusterIP and NodePort allocation in
//! `allocators.rs`), Secret types and `stringData`, Pods (`kinds/pod.rs`) and the initial
//! status of PersistentVolumeClaims. Checked against a real
//! kube-apiserver; fields newer Kubernetes versions default (Service IP families and
//! traffic policies, Job completion mode and pod replacement policy, StatefulSet PVC
//! retention, DaemonSet surge) are filled as those versions do.

use base64::Engine as _;
use serde_json::{Map, Value, json};

use super::structural_schema;
use crate::registry::ResourceDef;
use crate::registry::strategy::strategy_for;
use crate::storage::Store;

/// The scheduler Pods wait for unless they name another.
pub(crate) const DEFAULT_SCHEDULER: &str = "default-scheduler";

/// Fills the defaults of `object` (a built-in being created, or updated from `current`).
pub(crate) fn apply(
    store: &Store,
    resource: &ResourceDef,
    object: &mut Map<String, Value>,
    current: Option<&Value>,
) {
    if !resource.builtin {
        if let Some(schema) = resource.schema.as_deref() {
            structural_schema::default_and_prune(schema, object);
        }
        return;
    }
    if let Some(strategy) = strategy_for(resource) {
        match current {
            None => strategy.prepare_for_create(store, object),
            Some(current) => strategy.prepare_for_update(store, object, current),
        }
        return;
    }
    let creating = current.is_none();
    match (resource.group.as_str(), resource.kind.as_str()) {
        ("", "PodTemplate") => template(object.get_mut("template")),
        ("", "ReplicationController") => {
            if let Some(spec) = child(object, "spec") {
                set(spec, "replicas", json!(1));
                template(spec.get_mut("template"));
            }
        }
        ("apps", "Deployment") => {
            if let Some(spec) = child(object, "spec") {
                set(spec, "replicas", json!(1));
                set(
                    spec,
                    "strategy",
                    json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}}),
                );
                if let Some(strategy) = child(spec, "strategy")
                    && strategy.get("type").and_then(Value::as_str) == Some("RollingUpdate")
                {
                    let rolling = child_or_insert(strategy, "rollingUpdate");
                    set(rolling, "maxUnavailable", json!("25%"));
                    set(rolling, "maxSurge", json!("25%"));
                }
                set(spec, "revisionHistoryLimit", json!(10));
                set(spec, "progressDeadlineSeconds", json!(600));
                template(spec.get_mut("template"));
            }
            if creating {
                set(object, "status", json!({}));
            }
        }
        ("apps", "ReplicaSet") => {
            if let Some(spec) = child(object, "spec") {
                set(spec, "replicas", json!(1));
                template(spec.get_mut("template"));
            }
            if creating {
                set(child_or_insert(object, "status"), "replicas", json!(0));
            }
        }
        ("apps", "StatefulSet") => {
            if let Some(spec) = child(object, "spec") {
                set(spec, "replicas", json!(1));
                set(spec, "podManagementPolicy", json!("OrderedReady"));
                set(
                    spec,
                    "updateStrategy",
                    json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}),
                );
                set(spec, "revisionHistoryLimit", json!(10));
                set(
                    spec,
                    "persistentVolumeClaimRetentionPolicy",
                    json!({"whenDeleted": "Retain", "whenScaled": "Retain"}),
                );
                template(spec.get_mut("template"));
            }
            if creating {
                set(child_or_insert(object, "status"), "replicas", json!(0));
            }
        }
        ("apps", "DaemonSet") => {
            if let Some(spec) = child(object, "spec") {
                set(
                    spec,
                    "updateStrategy",
                    json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}),
                );
                set(spec, "revisionHistoryLimit", json!(10));
                template(spec.get_mut("template"));
            }
            if creating {
                let status = child_or_insert(object, "status");
                for field in [
                    "currentNumberScheduled",
                    "numberMisscheduled",
                    "desiredNumberScheduled",
                    "numberReady",
                ] {
                    set(status, field, json!(0));
                }
            }
        }
        ("batch", "Job") => {
            job(object, creating);
            if creating {
                set(object, "status", json!({}));
            }
        }
        ("batch", "CronJob") => {
            if let Some(spec) = child(object, "spec") {
                set(spec, "concurrencyPolicy", json!("Allow"));
                set(spec, "suspend", json!(false));
                set(spec, "successfulJobsHistoryLimit", json!(3));
                set(spec, "failedJobsHistoryLimit", json!(1));
                if let Some(job_spec) = child(spec, "jobTemplate").and_then(|t| child(t, "spec")) {
                    template(job_spec.get_mut("template"));
                }
            }
        }
        ("", "Secret") => secret(object),
        // The fields Go's Event struct always writes.
        ("", "Event") => {
            set(object, "source", json!({}));
            for field in ["firstTimestamp", "lastTimestamp", "eventTime"] {
                set(object, field, Value::Null);
            }
            set(object, "reportingComponent", json!(""));
            set(object, "reportingInstance", json!(""));
        }
        ("events.k8s.io", "Event") => {
            set(object, "deprecatedSource", json!({}));
            for field in ["deprecatedFirstTimestamp", "deprecatedLastTimestamp"] {
                set(object, field, Value::Null);
            }
        }
        ("apiextensions.k8s.io", "CustomResourceDefinition") => {
            if let Some(spec) = child(object, "spec") {
                set(spec, "conversion", json!({"strategy": "None"}));
            }
        }
        ("", "PersistentVolumeClaim") => {
            if let Some(spec) = child(object, "spec") {
                set(spec, "volumeMode", json!("Filesystem"));
            }
            if creating {
                set(child_or_insert(object, "status"), "phase", json!("Pending"));
            }
        }
        _ => {}
    }
}

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
fn template(template: Option<&mut Value>) {
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

fn job(object: &mut Map<String, Value>, creating: bool) {
    let uid = object
        .get("metadata")
        .and_then(|m| m.get("uid"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let name = object
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let Some(spec) = child(object, "spec") else {
        return;
    };
    if spec.get("completions").is_none_or(Value::is_null)
        && spec.get("parallelism").is_none_or(Value::is_null)
    {
        spec.insert("completions".to_owned(), json!(1));
    }
    set(spec, "parallelism", json!(1));
    set(spec, "backoffLimit", json!(6));
    set(spec, "completionMode", json!("NonIndexed"));
    set(spec, "suspend", json!(false));
    if spec.get("podFailurePolicy").is_none_or(Value::is_null) {
        set(spec, "podReplacementPolicy", json!("TerminatingOrFailed"));
    }
    template(spec.get_mut("template"));
    let manual = spec.get("manualSelector").and_then(Value::as_bool) == Some(true);
    if !creating || manual || uid.is_empty() {
        return;
    }
    // The Job controller's selector and labels, made at creation from the uid.
    let labels = json!({
        "batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": name,
        "controller-uid": uid, "job-name": name,
    });
    set(
        spec,
        "selector",
        json!({"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}),
    );
    if let Some(template) = child(spec, "template") {
        let template_labels = child_or_insert(child_or_insert(template, "metadata"), "labels");
        if let Value::Object(labels) = &labels {
            for (key, value) in labels {
                set(template_labels, key, value.clone());
            }
        }
    }
    let metadata = child_or_insert(object, "metadata");
    if metadata.get("labels").is_none_or(Value::is_null) {
        metadata.insert("labels".to_owned(), labels);
    }
}

fn secret(object: &mut Map<String, Value>) {
    set(object, "type", json!("Opaque"));
    let Some(Value::Object(string_data)) = object.remove("stringData") else {
        return;
    };
    let data = child_or_insert(object, "data");
    for (key, value) in string_data {
        let text = value.as_str().unwrap_or("");
        let encoded = base64::engine::general_purpose::STANDARD.encode(text.as_bytes());
        data.insert(key, json!(encoded));
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

    #[test]
    fn secrets_merge_string_data_into_data() {
        let mut secret = json!({"stringData": {"a": "b"}, "data": {"c": "ZA=="}});
        let map = secret.as_object_mut().unwrap();
        super::secret(map);
        assert_eq!(
            secret,
            json!({"type": "Opaque", "data": {"a": "Yg==", "c": "ZA=="}})
        );
    }
}
