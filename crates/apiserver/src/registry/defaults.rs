//! Defaulting of the common built-in kinds, as kube-apiserver's defaulters (and the
//! admission plugins every cluster runs: ServiceAccount, DefaultTolerationSeconds,
//! Priority) fill them in before an object is validated and stored: container and pod
//! template fields, workload strategies and limits, Job selectors and labels, Service
//! types, ports, ClusterIP and NodePort allocation, Secret types and `stringData`, and the
//! initial status of Pods and PersistentVolumeClaims. Checked against a real
//! kube-apiserver; fields newer Kubernetes versions default (Service IP families and
//! traffic policies, Job completion mode and pod replacement policy, StatefulSet PVC
//! retention, DaemonSet surge) are filled as those versions do.

use std::collections::HashSet;

use base64::Engine as _;
use kubeclient_machinery::GroupResource;
use serde_json::{Map, Value, json};

use super::structural_schema;
use crate::registry::ResourceDef;
use crate::storage::Store;

/// The ClusterIP range Services get addresses from (kubeadm's default, 10.96.0.0/12;
/// the first address belongs to `default/kubernetes`).
const SERVICE_IP_PREFIX: [u8; 2] = [10, 96];
/// The scheduler Pods wait for unless they name another.
const DEFAULT_SCHEDULER: &str = "default-scheduler";
/// The NodePort range (kube-apiserver's default).
const NODE_PORTS: std::ops::RangeInclusive<i64> = 30000..=32767;

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
    let creating = current.is_none();
    match (resource.group.as_str(), resource.kind.as_str()) {
        ("", "Pod") => {
            if let Some(spec) = child(object, "spec") {
                pod_spec(spec);
                pod_admission(spec);
            }
            if creating {
                if let Some(spec) = child(object, "spec") {
                    schedule(spec);
                }
                let qos = object.get("spec").map_or("BestEffort", qos_class);
                let status = child_or_insert(object, "status");
                set(status, "phase", json!("Pending"));
                set(status, "qosClass", json!(qos));
            }
        }
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
        ("", "Service") => service(store, object, current),
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
fn child<'a>(object: &'a mut Map<String, Value>, key: &str) -> Option<&'a mut Map<String, Value>> {
    object.get_mut(key).and_then(Value::as_object_mut)
}

/// The object map at `key`, created (or replacing a non-object) when needed.
fn child_or_insert<'a>(
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
fn set(object: &mut Map<String, Value>, key: &str, value: Value) {
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
fn pod_spec(spec: &mut Map<String, Value>) {
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

/// What the admission plugins of every cluster add to a Pod (not to templates).
fn pod_admission(spec: &mut Map<String, Value>) {
    set(spec, "serviceAccountName", json!("default"));
    let account = spec
        .get("serviceAccountName")
        .cloned()
        .unwrap_or(Value::Null);
    set(spec, "serviceAccount", account);
    set(spec, "priority", json!(0));
    set(spec, "enableServiceLinks", json!(true));
    set(spec, "preemptionPolicy", json!("PreemptLowerPriority"));
    let tolerations = spec
        .entry("tolerations")
        .or_insert_with(|| Value::Array(Vec::new()));
    if let Value::Array(tolerations) = tolerations {
        for key in [
            "node.kubernetes.io/not-ready",
            "node.kubernetes.io/unreachable",
        ] {
            let present = tolerations.iter().any(|t| {
                t.get("key").and_then(Value::as_str) == Some(key)
                    || (t.get("operator").and_then(Value::as_str) == Some("Exists")
                        && t.get("key").is_none())
            });
            if !present {
                tolerations.push(json!({"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}));
            }
        }
    }
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

/// The quality-of-service class of a pod spec: Guaranteed when every container has equal
/// CPU and memory requests and limits, BestEffort when none sets any, else Burstable.
fn qos_class(spec: &Value) -> &'static str {
    let containers: Vec<&Value> = ["initContainers", "containers"]
        .iter()
        .filter_map(|list| spec.get(*list).and_then(Value::as_array))
        .flatten()
        .collect();
    let quantity = |container: &Value, kind: &str, resource: &str| {
        container
            .pointer(&format!("/resources/{kind}/{resource}"))
            .filter(|v| !v.is_null())
            .cloned()
    };
    let mut any = false;
    let mut guaranteed = !containers.is_empty();
    for container in &containers {
        for resource in ["cpu", "memory"] {
            let request = quantity(container, "requests", resource);
            let limit = quantity(container, "limits", resource);
            any |= request.is_some() || limit.is_some();
            // A limit without a request makes the request equal to it.
            let effective_request = request.or_else(|| limit.clone());
            guaranteed &= limit.is_some() && effective_request == limit;
        }
    }
    match (any, guaranteed) {
        (false, _) => "BestEffort",
        (true, true) => "Guaranteed",
        (true, false) => "Burstable",
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

fn service(store: &Store, object: &mut Map<String, Value>, current: Option<&Value>) {
    let Some(spec) = child(object, "spec") else {
        return;
    };
    set(spec, "type", json!("ClusterIP"));
    let service_type = spec
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("ClusterIP")
        .to_owned();
    if service_type == "ExternalName" {
        set(spec, "sessionAffinity", json!("None"));
        return;
    }
    set(spec, "sessionAffinity", json!("None"));
    if let Some(Value::Array(ports)) = spec.get_mut("ports") {
        for port in ports.iter_mut().filter_map(Value::as_object_mut) {
            set(port, "protocol", json!("TCP"));
            let number = port.get("port").cloned().unwrap_or(Value::Null);
            set(port, "targetPort", number);
        }
    }
    // An update keeps what was allocated (the strategy's patchAllocatedValues).
    let old_spec = current.and_then(|c| c.get("spec"));
    if let Some(old) = old_spec {
        for field in ["clusterIP", "clusterIPs"] {
            if let Some(value) = old.get(field) {
                set(spec, field, value.clone());
            }
        }
    }
    let external = service_type == "NodePort" || service_type == "LoadBalancer";
    if external {
        set(spec, "externalTrafficPolicy", json!("Cluster"));
        if service_type == "LoadBalancer" {
            set(spec, "allocateLoadBalancerNodePorts", json!(true));
        }
        let old_ports: Vec<Value> = old_spec
            .and_then(|s| s.get("ports"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let mut used = used_node_ports(store);
        if let Some(Value::Array(ports)) = spec.get_mut("ports") {
            for port in ports.iter_mut().filter_map(Value::as_object_mut) {
                if port
                    .get("nodePort")
                    .and_then(Value::as_i64)
                    .is_some_and(|p| p != 0)
                {
                    continue;
                }
                let kept = old_ports.iter().find_map(|old| {
                    (old.get("port") == port.get("port")
                        && old.get("protocol") == port.get("protocol"))
                    .then(|| old.get("nodePort").cloned())
                    .flatten()
                });
                let node_port = kept.or_else(|| allocate_node_port(&mut used).map(|p| json!(p)));
                if let Some(node_port) = node_port {
                    port.insert("nodePort".to_owned(), node_port);
                }
            }
        }
    }
    if spec
        .get("clusterIP")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
        && let Some(ip) = allocate_cluster_ip(store)
    {
        spec.insert("clusterIP".to_owned(), json!(ip));
    }
    let cluster_ip = spec.get("clusterIP").cloned().unwrap_or(Value::Null);
    set(spec, "clusterIPs", json!([cluster_ip]));
    set(spec, "ipFamilies", json!(["IPv4"]));
    set(spec, "ipFamilyPolicy", json!("SingleStack"));
    set(spec, "internalTrafficPolicy", json!("Cluster"));
    set(child_or_insert(object, "status"), "loadBalancer", json!({}));
}

/// The node the embedded server's scheduler binds Pods to (it has no kubelet: the
/// streams of a bound Pod are served by the server itself).
pub(crate) const NODE_NAME: &str = "kubeclient-node";

/// Binds a Pod being created to [`NODE_NAME`], as kube-scheduler would, unless it names a
/// node already, waits for another scheduler or has scheduling gates: those stay
/// unscheduled (their exec, attach and port-forward answer 400, their log is empty).
fn schedule(spec: &mut Map<String, Value>) {
    let named = spec
        .get("nodeName")
        .and_then(Value::as_str)
        .is_some_and(|node| !node.is_empty());
    let default_scheduler =
        spec.get("schedulerName").and_then(Value::as_str) == Some(DEFAULT_SCHEDULER);
    let gated = spec
        .get("schedulingGates")
        .and_then(Value::as_array)
        .is_some_and(|gates| !gates.is_empty());
    if !named && default_scheduler && !gated {
        spec.insert("nodeName".to_owned(), json!(NODE_NAME));
    }
}

/// Whether creating a `resource` allocates fields (a Service's addresses and node ports,
/// a Pod's node), which kube-apiserver's registry (or kube-scheduler) fills after the field
/// manager ran: they belong to no manager unless the request set them.
pub(crate) fn allocates(resource: &ResourceDef) -> bool {
    resource.builtin
        && resource.group.is_empty()
        && matches!(resource.kind.as_str(), "Service" | "Pod")
}

/// `object` (a Service or Pod as created) without the allocated fields `requested` (the
/// request's object) did not set: what the creating manager owns.
pub(crate) fn without_allocated(requested: &Map<String, Value>, object: &Value) -> Value {
    let mut owned = object.clone();
    let requested_spec = requested.get("spec");
    if object.get("kind").and_then(Value::as_str) == Some("Pod") {
        let requested_node = requested_spec
            .and_then(|spec| spec.get("nodeName"))
            .and_then(Value::as_str)
            .is_some_and(|node| !node.is_empty());
        if let (false, Some(spec)) = (
            requested_node,
            owned.get_mut("spec").and_then(Value::as_object_mut),
        ) {
            spec.remove("nodeName");
        }
        return owned;
    }
    let requested_has = |field: &str| {
        requested_spec
            .and_then(|spec| spec.get(field))
            .is_some_and(|value| !value.is_null() && value != "")
    };
    let Some(spec) = owned.get_mut("spec").and_then(Value::as_object_mut) else {
        return owned;
    };
    for field in [
        "clusterIP",
        "clusterIPs",
        "ipFamilies",
        "ipFamilyPolicy",
        "healthCheckNodePort",
    ] {
        if !requested_has(field) {
            spec.remove(field);
        }
    }
    let requested_ports = requested_spec
        .and_then(|spec| spec.get("ports"))
        .and_then(Value::as_array);
    if let Some(Value::Array(ports)) = spec.get_mut("ports") {
        for (index, port) in ports.iter_mut().enumerate() {
            let requested_node_port = requested_ports
                .and_then(|ports| ports.get(index))
                .and_then(|port| port.get("nodePort"))
                .and_then(Value::as_i64)
                .is_some_and(|node_port| node_port != 0);
            if !requested_node_port && let Some(port) = port.as_object_mut() {
                port.remove("nodePort");
            }
        }
    }
    owned
}

/// Every ClusterIP and NodePort in use, read from the stored Services.
fn stored_services(store: &Store) -> Vec<std::sync::Arc<crate::storage::StoredObject>> {
    store
        .snapshot(&GroupResource::new("", "services"), "")
        .objects
}

fn used_node_ports(store: &Store) -> HashSet<i64> {
    stored_services(store)
        .iter()
        .filter_map(|s| {
            s.value
                .pointer("/spec/ports")
                .and_then(Value::as_array)
                .cloned()
        })
        .flatten()
        .filter_map(|p| p.get("nodePort").and_then(Value::as_i64))
        .collect()
}

fn allocate_node_port(used: &mut HashSet<i64>) -> Option<i64> {
    let span = NODE_PORTS.end() - NODE_PORTS.start() + 1;
    let start = fastrand::i64(0..span);
    (0..span)
        .map(|offset| NODE_PORTS.start() + (start + offset) % span)
        .find(|port| used.insert(*port))
}

/// A free address of 10.96.0.0/16 (the low part of the /12 service range).
fn allocate_cluster_ip(store: &Store) -> Option<String> {
    let used: HashSet<String> = stored_services(store)
        .iter()
        .filter_map(|s| {
            s.value
                .pointer("/spec/clusterIP")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .collect();
    let [a, b] = SERVICE_IP_PREFIX;
    let start = fastrand::u32(2..65_534);
    (0..65_532u32)
        .map(|offset| 2 + (start - 2 + offset) % 65_532)
        .map(|host| format!("{a}.{b}.{}.{}", host / 256, host % 256))
        .find(|ip| !used.contains(ip))
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
    fn qos_classes() {
        assert_eq!(
            qos_class(&json!({"containers": [{"name": "a"}]})),
            "BestEffort"
        );
        let guaranteed =
            json!({"containers": [{"resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]});
        assert_eq!(qos_class(&guaranteed), "Guaranteed");
        let burstable = json!({"containers": [{"resources": {"requests": {"cpu": "1"}}}]});
        assert_eq!(qos_class(&burstable), "Burstable");
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
