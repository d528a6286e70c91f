//! The built-in table printers (kube-apiserver's `pkg/printers/internalversion`): the
//! columns `kubectl get` shows for the common kinds, with the `-o wide` ones at priority 1,
//! and how each cell is computed from an object. Kinds without a printer get the default
//! `Name` / `Created At` table.

use jiff::Timestamp;
use serde_json::{Value, json};

use super::object::label_selector;
use crate::registry::event_versions::events_v1_as_core;

/// One column: its definition and how to compute its cell.
struct Column {
    name: &'static str,
    column_type: &'static str,
    priority: i64,
    cell: fn(&Value) -> Value,
}

const fn col(name: &'static str, column_type: &'static str, cell: fn(&Value) -> Value) -> Column {
    Column {
        name,
        column_type,
        priority: 0,
        cell,
    }
}

const fn wide(name: &'static str, column_type: &'static str, cell: fn(&Value) -> Value) -> Column {
    Column {
        name,
        column_type,
        priority: 1,
        cell,
    }
}

/// The printer columns of a built-in kind (after `Name`, which every table starts with
/// except Events'), or `None` for the default table.
fn columns(group: &str, kind: &str) -> Option<&'static [Column]> {
    Some(match (group, kind) {
        ("", "Pod") => POD,
        ("apps", "Deployment") => DEPLOYMENT,
        ("apps", "ReplicaSet") => REPLICA_SET,
        ("apps", "StatefulSet") => STATEFUL_SET,
        ("apps", "DaemonSet") => DAEMON_SET,
        ("batch", "Job") => JOB,
        ("batch", "CronJob") => CRON_JOB,
        ("", "Service") => SERVICE,
        ("", "Node") => NODE,
        ("", "Namespace") => NAMESPACE,
        ("", "ConfigMap") => CONFIG_MAP,
        ("", "Secret") => SECRET,
        ("", "Event") | ("events.k8s.io", "Event") => EVENT,
        ("", "ServiceAccount") => SERVICE_ACCOUNT,
        ("", "Endpoints") => ENDPOINTS,
        ("", "PersistentVolumeClaim") => PERSISTENT_VOLUME_CLAIM,
        ("coordination.k8s.io", "Lease") => LEASE,
        ("", "ComponentStatus") => COMPONENT_STATUS,
        ("rbac.authorization.k8s.io", "RoleBinding" | "ClusterRoleBinding") => ROLE_BINDING,
        _ => return None,
    })
}

/// The column definitions of a built-in kind's table, `Name` included; `None` for kinds
/// without a printer.
pub(crate) fn column_definitions(group: &str, kind: &str) -> Option<Vec<Value>> {
    let columns = columns(group, kind)?;
    let mut definitions = Vec::with_capacity(columns.len() + 1);
    if kind != "Event" {
        definitions.push(name_column(0));
    }
    for column in columns {
        definitions.push(json!({
            "name": column.name, "type": column.column_type, "format": "",
            "description": column.name, "priority": column.priority,
        }));
    }
    if kind == "Event" {
        definitions.push(name_column(1));
    }
    Some(definitions)
}

/// The `Name` column every table has.
pub(crate) fn name_column(priority: i64) -> Value {
    json!({
        "name": "Name", "type": "string", "format": "name",
        "description": "Name must be unique within a namespace. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names",
        "priority": priority,
    })
}

/// The cells of `object`'s row, in column order; `None` for kinds without a printer.
pub(crate) fn cells(group: &str, kind: &str, object: &Value) -> Option<Vec<Value>> {
    let columns = columns(group, kind)?;
    let converted;
    // An `events.k8s.io/v1` Event prints under its core/v1 field names (the two are one
    // type inside kube-apiserver, printed by one printer).
    let object = if group == "events.k8s.io" {
        converted = events_v1_as_core(object);
        &converted
    } else {
        object
    };
    let name = field(object, "/metadata/name").clone();
    let mut cells = Vec::with_capacity(columns.len() + 1);
    if kind != "Event" {
        cells.push(name.clone());
    }
    cells.extend(columns.iter().map(|column| (column.cell)(object)));
    if kind == "Event" {
        cells.push(name);
    }
    Some(cells)
}

static NULL: Value = Value::Null;

fn field<'a>(object: &'a Value, pointer: &str) -> &'a Value {
    object.pointer(pointer).unwrap_or(&NULL)
}

fn text<'a>(object: &'a Value, pointer: &str) -> &'a str {
    field(object, pointer).as_str().unwrap_or("")
}

fn int(object: &Value, pointer: &str) -> i64 {
    field(object, pointer).as_i64().unwrap_or(0)
}

fn items<'a>(object: &'a Value, pointer: &str) -> &'a [Value] {
    field(object, pointer).as_array().map_or(&[], Vec::as_slice)
}

fn or_none(text: &str) -> Value {
    Value::String(if text.is_empty() {
        "<none>".to_owned()
    } else {
        text.to_owned()
    })
}

/// How long ago an RFC 3339 time was, as `kubectl get` prints ages (apimachinery's
/// `duration.HumanDuration`): `45s`, `3m20s`, `45m`, `3h20m`, `30h`, `3d5h`, `20d`, `2y10d`.
pub(crate) fn human_age(time: &str) -> String {
    let Ok(then) = time.parse::<Timestamp>() else {
        return "<unknown>".to_owned();
    };
    human_duration(
        Timestamp::now()
            .as_second()
            .saturating_sub(then.as_second()),
    )
}

/// apimachinery's `HumanDuration` of a number of seconds.
pub(crate) fn human_duration(seconds: i64) -> String {
    if seconds < -1 {
        return "<invalid>".to_owned();
    }
    if seconds < 0 {
        return "0s".to_owned();
    }
    if seconds < 120 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        let rest = seconds % 60;
        return if rest == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{rest}s")
        };
    }
    if minutes < 180 {
        return format!("{minutes}m");
    }
    let hours = seconds / 3600;
    if hours < 8 {
        let rest = minutes % 60;
        return if rest == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{rest}m")
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let rest = hours % 24;
        return if rest == 0 {
            format!("{}d", hours / 24)
        } else {
            format!("{}d{rest}h", hours / 24)
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let days = (hours / 24) % 365;
        let years = hours / 24 / 365;
        return if days == 0 {
            format!("{years}y")
        } else {
            format!("{years}y{days}d")
        };
    }
    format!("{}y", hours / 24 / 365)
}

fn age(object: &Value) -> Value {
    Value::String(human_age(text(object, "/metadata/creationTimestamp")))
}

fn age_of(object: &Value, pointer: &str) -> Value {
    match field(object, pointer).as_str() {
        Some(time) => Value::String(human_age(time)),
        None => Value::String("<unknown>".to_owned()),
    }
}

/// Names or images of a pod template's containers, comma-separated.
fn template_containers(object: &Value, what: &str) -> Value {
    let list: Vec<&str> = items(object, "/spec/template/spec/containers")
        .iter()
        .map(|c| c.get(what).and_then(Value::as_str).unwrap_or(""))
        .collect();
    Value::String(list.join(","))
}

fn containers(object: &Value) -> Value {
    template_containers(object, "name")
}

fn images(object: &Value) -> Value {
    template_containers(object, "image")
}

/// A `metav1.LabelSelector` as text (`app=web,tier in (a,b)`), as Go's
/// `metav1.FormatLabelSelector` prints it: `<error>` when it does not convert.
fn selector_text(selector: &Value) -> String {
    label_selector(Some(selector)).map_or_else(|_| "<error>".to_owned(), |s| s.to_string())
}

fn selector(object: &Value) -> Value {
    or_none(&selector_text(field(object, "/spec/selector")))
}

/// A string map as `k=v,...` (sorted), `<none>` when empty.
fn map_text(map: &Value) -> Value {
    let parts: Vec<String> = map
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
        .collect();
    or_none(&parts.join(","))
}

// --- Pods ---------------------------------------------------------------------------

const POD: &[Column] = &[
    col("Ready", "string", pod_ready),
    col("Status", "string", pod_status),
    col("Restarts", "integer", pod_restarts),
    col("Age", "string", age),
    wide("IP", "string", |o| or_none(text(o, "/status/podIP"))),
    wide("Node", "string", |o| or_none(text(o, "/spec/nodeName"))),
    wide("Nominated Node", "string", |o| {
        or_none(text(o, "/status/nominatedNodeName"))
    }),
    wide("Readiness Gates", "string", pod_readiness_gates),
];

fn pod_ready(pod: &Value) -> Value {
    let ready = items(pod, "/status/containerStatuses")
        .iter()
        .filter(|s| s.get("ready").and_then(Value::as_bool) == Some(true))
        .count();
    json!(format!("{ready}/{}", items(pod, "/spec/containers").len()))
}

fn pod_restarts(pod: &Value) -> Value {
    let restarts: i64 = items(pod, "/status/containerStatuses")
        .iter()
        .filter_map(|s| s.get("restartCount").and_then(Value::as_i64))
        .sum();
    json!(restarts)
}

/// The reason of a terminated container: its own, or `Signal:N` / `ExitCode:N`.
fn terminated_reason(terminated: &Value, prefix: &str) -> String {
    let reason = text(terminated, "/reason");
    if !reason.is_empty() {
        return format!("{prefix}{reason}");
    }
    let signal = int(terminated, "/signal");
    if signal != 0 {
        format!("{prefix}Signal:{signal}")
    } else {
        format!("{prefix}ExitCode:{}", int(terminated, "/exitCode"))
    }
}

/// kubectl's pod STATUS: the phase, refined by the status reason, init containers,
/// waiting or terminated containers, and deletion.
fn pod_status(pod: &Value) -> Value {
    let mut reason = text(pod, "/status/phase").to_owned();
    if !text(pod, "/status/reason").is_empty() {
        reason = text(pod, "/status/reason").to_owned();
    }
    let init_total = items(pod, "/spec/initContainers").len();
    let mut initializing = false;
    for (index, status) in items(pod, "/status/initContainerStatuses")
        .iter()
        .enumerate()
    {
        let terminated = field(status, "/state/terminated");
        let waiting = text(status, "/state/waiting/reason");
        if !terminated.is_null() && int(terminated, "/exitCode") == 0 {
            continue;
        }
        reason = if !terminated.is_null() {
            terminated_reason(terminated, "Init:")
        } else if !waiting.is_empty() && waiting != "PodInitializing" {
            format!("Init:{waiting}")
        } else {
            format!("Init:{index}/{init_total}")
        };
        initializing = true;
        break;
    }
    if !initializing {
        let mut has_running = false;
        for status in items(pod, "/status/containerStatuses").iter().rev() {
            let waiting = text(status, "/state/waiting/reason");
            let terminated = field(status, "/state/terminated");
            if !waiting.is_empty() {
                reason = waiting.to_owned();
            } else if !terminated.is_null() {
                reason = terminated_reason(terminated, "");
            } else if !field(status, "/state/running").is_null()
                && status.get("ready").and_then(Value::as_bool) == Some(true)
            {
                has_running = true;
            }
        }
        if reason == "Completed" && has_running {
            let ready = items(pod, "/status/conditions")
                .iter()
                .any(|c| text(c, "/type") == "Ready" && text(c, "/status") == "True");
            reason = if ready { "Running" } else { "NotReady" }.to_owned();
        }
    }
    if !field(pod, "/metadata/deletionTimestamp").is_null() {
        reason = if text(pod, "/status/reason") == "NodeLost" {
            "Unknown".to_owned()
        } else {
            "Terminating".to_owned()
        };
    }
    Value::String(reason)
}

fn pod_readiness_gates(pod: &Value) -> Value {
    let gates = items(pod, "/spec/readinessGates");
    if gates.is_empty() {
        return or_none("");
    }
    let conditions = items(pod, "/status/conditions");
    let met = gates
        .iter()
        .filter(|gate| {
            conditions.iter().any(|c| {
                text(c, "/type") == text(gate, "/conditionType") && text(c, "/status") == "True"
            })
        })
        .count();
    json!(format!("{met}/{}", gates.len()))
}

// --- Workloads ---------------------------------------------------------------------

const DEPLOYMENT: &[Column] = &[
    col("Ready", "string", |o| {
        json!(format!(
            "{}/{}",
            int(o, "/status/readyReplicas"),
            int(o, "/spec/replicas")
        ))
    }),
    col("Up-to-date", "string", |o| {
        json!(int(o, "/status/updatedReplicas"))
    }),
    col("Available", "string", |o| {
        json!(int(o, "/status/availableReplicas"))
    }),
    col("Age", "string", age),
    wide("Containers", "string", containers),
    wide("Images", "string", images),
    wide("Selector", "string", selector),
];

const REPLICA_SET: &[Column] = &[
    col("Desired", "integer", |o| json!(int(o, "/spec/replicas"))),
    col("Current", "integer", |o| json!(int(o, "/status/replicas"))),
    col("Ready", "integer", |o| {
        json!(int(o, "/status/readyReplicas"))
    }),
    col("Age", "string", age),
    wide("Containers", "string", containers),
    wide("Images", "string", images),
    wide("Selector", "string", selector),
];

const STATEFUL_SET: &[Column] = &[
    col("Ready", "string", |o| {
        json!(format!(
            "{}/{}",
            int(o, "/status/readyReplicas"),
            int(o, "/spec/replicas")
        ))
    }),
    col("Age", "string", age),
    wide("Containers", "string", containers),
    wide("Images", "string", images),
];

const DAEMON_SET: &[Column] = &[
    col("Desired", "integer", |o| {
        json!(int(o, "/status/desiredNumberScheduled"))
    }),
    col("Current", "integer", |o| {
        json!(int(o, "/status/currentNumberScheduled"))
    }),
    col("Ready", "integer", |o| json!(int(o, "/status/numberReady"))),
    col("Up-to-date", "integer", |o| {
        json!(int(o, "/status/updatedNumberScheduled"))
    }),
    col("Available", "integer", |o| {
        json!(int(o, "/status/numberAvailable"))
    }),
    col("Node Selector", "string", |o| {
        map_text(field(o, "/spec/template/spec/nodeSelector"))
    }),
    col("Age", "string", age),
    wide("Containers", "string", containers),
    wide("Images", "string", images),
    wide("Selector", "string", selector),
];

const JOB: &[Column] = &[
    col("Completions", "string", job_completions),
    col("Duration", "string", job_duration),
    col("Age", "string", age),
    wide("Containers", "string", containers),
    wide("Images", "string", images),
    wide("Selector", "string", selector),
];

fn job_completions(job: &Value) -> Value {
    let succeeded = int(job, "/status/succeeded");
    let text = match field(job, "/spec/completions").as_i64() {
        Some(completions) => format!("{succeeded}/{completions}"),
        None => match int(job, "/spec/parallelism") {
            parallelism if parallelism > 1 => format!("{succeeded}/1 of {parallelism}"),
            _ => format!("{succeeded}/1"),
        },
    };
    Value::String(text)
}

fn job_duration(job: &Value) -> Value {
    let seconds = |pointer: &str| {
        field(job, pointer)
            .as_str()
            .and_then(|t| t.parse::<Timestamp>().ok())
            .map(|t| t.as_second())
    };
    let Some(start) = seconds("/status/startTime") else {
        return Value::String(String::new());
    };
    let end = seconds("/status/completionTime").unwrap_or_else(|| Timestamp::now().as_second());
    Value::String(human_duration(end.saturating_sub(start)))
}

const CRON_JOB: &[Column] = &[
    col("Schedule", "string", |o| json!(text(o, "/spec/schedule"))),
    col("Suspend", "boolean", |o| {
        json!(field(o, "/spec/suspend").as_bool().unwrap_or(false))
    }),
    col("Active", "integer", |o| {
        json!(items(o, "/status/active").len())
    }),
    col("Last Schedule", "string", |o| {
        match field(o, "/status/lastScheduleTime").as_str() {
            Some(time) => Value::String(human_age(time)),
            None => or_none(""),
        }
    }),
    col("Age", "string", age),
    wide("Containers", "string", |o| {
        template_containers(field(o, "/spec/jobTemplate"), "name")
    }),
    wide("Images", "string", |o| {
        template_containers(field(o, "/spec/jobTemplate"), "image")
    }),
    wide("Selector", "string", |o| {
        or_none(&selector_text(field(o, "/spec/jobTemplate/spec/selector")))
    }),
];

// --- Services and networking --------------------------------------------------------

const SERVICE: &[Column] = &[
    col("Type", "string", |o| json!(service_type(o))),
    col("Cluster-IP", "string", |o| {
        or_none(text(o, "/spec/clusterIP"))
    }),
    col("External-IP", "string", service_external_ip),
    col("Port(s)", "string", service_ports),
    col("Age", "string", age),
    wide("Selector", "string", |o| {
        map_text(field(o, "/spec/selector"))
    }),
];

fn service_type(service: &Value) -> &str {
    match text(service, "/spec/type") {
        "" => "ClusterIP",
        other => other,
    }
}

fn service_external_ip(service: &Value) -> Value {
    let external: Vec<&str> = items(service, "/spec/externalIPs")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    match service_type(service) {
        "LoadBalancer" => {
            let ingress: Vec<&str> = items(service, "/status/loadBalancer/ingress")
                .iter()
                .map(|i| {
                    let ip = text(i, "/ip");
                    if ip.is_empty() {
                        text(i, "/hostname")
                    } else {
                        ip
                    }
                })
                .filter(|s| !s.is_empty())
                .collect();
            let all: Vec<&str> = external.iter().copied().chain(ingress).collect();
            if all.is_empty() {
                json!("<pending>")
            } else {
                json!(all.join(","))
            }
        }
        "ExternalName" => json!(text(service, "/spec/externalName")),
        _ => or_none(&external.join(",")),
    }
}

fn service_ports(service: &Value) -> Value {
    let ports: Vec<String> = items(service, "/spec/ports")
        .iter()
        .map(|port| {
            let protocol = match text(port, "/protocol") {
                "" => "TCP",
                other => other,
            };
            match field(port, "/nodePort").as_i64() {
                Some(node_port) if node_port != 0 => {
                    format!("{}:{node_port}/{protocol}", int(port, "/port"))
                }
                _ => format!("{}/{protocol}", int(port, "/port")),
            }
        })
        .collect();
    or_none(&ports.join(","))
}

const ENDPOINTS: &[Column] = &[
    col("Endpoints", "string", endpoints_text),
    col("Age", "string", age),
];

fn endpoints_text(endpoints: &Value) -> Value {
    let mut all = Vec::new();
    for subset in items(endpoints, "/subsets") {
        let ports = items(subset, "/ports");
        for address in items(subset, "/addresses") {
            let ip = text(address, "/ip");
            if ports.is_empty() {
                all.push(ip.to_owned());
            }
            for port in ports {
                all.push(format!("{ip}:{}", int(port, "/port")));
            }
        }
    }
    let shown = all.iter().take(3).cloned().collect::<Vec<_>>().join(",");
    if all.len() > 3 {
        json!(format!("{shown} + {} more...", all.len() - 3))
    } else {
        or_none(&shown)
    }
}

// --- Cluster and configuration ------------------------------------------------------

const NODE: &[Column] = &[
    col("Status", "string", node_status),
    col("Roles", "string", node_roles),
    col("Age", "string", age),
    col("Version", "string", |o| {
        json!(text(o, "/status/nodeInfo/kubeletVersion"))
    }),
    wide("Internal-IP", "string", |o| node_address(o, "InternalIP")),
    wide("External-IP", "string", |o| node_address(o, "ExternalIP")),
    wide("OS-Image", "string", |o| node_info(o, "osImage")),
    wide("Kernel-Version", "string", |o| {
        node_info(o, "kernelVersion")
    }),
    wide("Container-Runtime", "string", |o| {
        node_info(o, "containerRuntimeVersion")
    }),
];

fn node_status(node: &Value) -> Value {
    let ready = items(node, "/status/conditions")
        .iter()
        .find(|c| text(c, "/type") == "Ready")
        .map(|c| text(c, "/status"));
    let mut status = match ready {
        Some("True") => "Ready",
        Some("False") => "NotReady",
        _ => "Unknown",
    }
    .to_owned();
    if field(node, "/spec/unschedulable").as_bool() == Some(true) {
        status.push_str(",SchedulingDisabled");
    }
    Value::String(status)
}

fn node_roles(node: &Value) -> Value {
    let mut roles: Vec<String> = Vec::new();
    for (key, value) in field(node, "/metadata/labels")
        .as_object()
        .into_iter()
        .flatten()
    {
        if let Some(role) = key.strip_prefix("node-role.kubernetes.io/") {
            if !role.is_empty() {
                roles.push(role.to_owned());
            }
        } else if key == "kubernetes.io/role" {
            roles.push(value.as_str().unwrap_or("").to_owned());
        }
    }
    roles.sort();
    roles.dedup();
    or_none(&roles.join(","))
}

fn node_address(node: &Value, kind: &str) -> Value {
    let address = items(node, "/status/addresses")
        .iter()
        .find(|a| text(a, "/type") == kind)
        .map_or("", |a| text(a, "/address"));
    or_none(address)
}

fn node_info(node: &Value, what: &str) -> Value {
    match field(node, "/status/nodeInfo")
        .get(what)
        .and_then(Value::as_str)
    {
        Some(value) if !value.is_empty() => json!(value),
        _ => json!("<unknown>"),
    }
}

const NAMESPACE: &[Column] = &[
    col("Status", "string", |o| json!(text(o, "/status/phase"))),
    col("Age", "string", age),
];

fn entry_count(object: &Value, fields: &[&str]) -> Value {
    let count: usize = fields
        .iter()
        .filter_map(|f| object.get(*f).and_then(Value::as_object))
        .map(serde_json::Map::len)
        .sum();
    json!(count)
}

const CONFIG_MAP: &[Column] = &[
    col("Data", "string", |o| {
        entry_count(o, &["data", "binaryData"])
    }),
    col("Age", "string", age),
];

const SECRET: &[Column] = &[
    col("Type", "string", |o| json!(text(o, "/type"))),
    col("Data", "string", |o| entry_count(o, &["data"])),
    col("Age", "string", age),
];

const SERVICE_ACCOUNT: &[Column] = &[
    col("Secrets", "string", |o| json!(items(o, "/secrets").len())),
    col("Age", "string", age),
];

const PERSISTENT_VOLUME_CLAIM: &[Column] = &[
    col("Status", "string", |o| json!(text(o, "/status/phase"))),
    col("Volume", "string", |o| json!(text(o, "/spec/volumeName"))),
    col("Capacity", "string", |o| {
        json!(text(o, "/status/capacity/storage"))
    }),
    col("Access Modes", "string", |o| {
        let modes: Vec<&str> = items(o, "/status/accessModes")
            .iter()
            .filter_map(Value::as_str)
            .map(|mode| match mode {
                "ReadWriteOnce" => "RWO",
                "ReadOnlyMany" => "ROX",
                "ReadWriteMany" => "RWX",
                "ReadWriteOncePod" => "RWOP",
                other => other,
            })
            .collect();
        json!(modes.join(","))
    }),
    col("StorageClass", "string", |o| {
        json!(text(o, "/spec/storageClassName"))
    }),
    col("Age", "string", age),
    wide("VolumeMode", "string", |o| {
        match text(o, "/spec/volumeMode") {
            "" => json!("<unset>"),
            mode => json!(mode),
        }
    }),
];

const COMPONENT_STATUS: &[Column] = &[
    col("Status", "string", |o| {
        let healthy = items(o, "/conditions")
            .iter()
            .any(|c| text(c, "/type") == "Healthy" && text(c, "/status") == "True");
        json!(if healthy { "Healthy" } else { "Unhealthy" })
    }),
    col("Message", "string", |o| {
        json!(component_condition(o, "/message"))
    }),
    col("Error", "string", |o| {
        json!(component_condition(o, "/error"))
    }),
];

/// A field of a ComponentStatus's `Healthy` condition.
fn component_condition<'a>(status: &'a Value, pointer: &str) -> &'a str {
    items(status, "/conditions")
        .iter()
        .find(|c| text(c, "/type") == "Healthy")
        .map_or("", |c| text(c, pointer))
}

const LEASE: &[Column] = &[
    col("Holder", "string", |o| {
        or_none(text(o, "/spec/holderIdentity"))
    }),
    col("Age", "string", age),
];

const ROLE_BINDING: &[Column] = &[
    col("Role", "string", |o| {
        json!(format!(
            "{}/{}",
            text(o, "/roleRef/kind"),
            text(o, "/roleRef/name")
        ))
    }),
    col("Age", "string", age),
    wide("Users", "string", |o| subjects(o, "User")),
    wide("Groups", "string", |o| subjects(o, "Group")),
    wide("ServiceAccounts", "string", |o| {
        subjects(o, "ServiceAccount")
    }),
];

fn subjects(binding: &Value, kind: &str) -> Value {
    let names: Vec<String> = items(binding, "/subjects")
        .iter()
        .filter(|s| text(s, "/kind") == kind)
        .map(|s| match (kind, text(s, "/namespace")) {
            ("ServiceAccount", namespace) => format!("{namespace}/{}", text(s, "/name")),
            _ => text(s, "/name").to_owned(),
        })
        .collect();
    json!(names.join(", "))
}

// --- Events -------------------------------------------------------------------------

const EVENT: &[Column] = &[
    col("Last Seen", "string", event_last_seen),
    col("Type", "string", |o| json!(text(o, "/type"))),
    col("Reason", "string", |o| json!(text(o, "/reason"))),
    col("Object", "string", |o| {
        json!(format!(
            "{}/{}",
            text(o, "/involvedObject/kind").to_ascii_lowercase(),
            text(o, "/involvedObject/name")
        ))
    }),
    wide("Subobject", "string", |o| {
        json!(text(o, "/involvedObject/fieldPath"))
    }),
    wide("Source", "string", event_source),
    col("Message", "string", |o| json!(text(o, "/message").trim())),
    wide("First Seen", "string", |o| event_time(o, "/firstTimestamp")),
    wide("Count", "string", |o| json!(int(o, "/count").max(1))),
];

fn event_time(event: &Value, pointer: &str) -> Value {
    match field(event, pointer).as_str() {
        Some(time) => json!(human_age(time)),
        None => age_of(event, "/eventTime"),
    }
}

fn event_last_seen(event: &Value) -> Value {
    match field(event, "/series/lastObservedTime").as_str() {
        Some(time) => json!(human_age(time)),
        None => event_time(event, "/lastTimestamp"),
    }
}

fn event_source(event: &Value) -> Value {
    let component = match text(event, "/source/component") {
        "" => text(event, "/reportingComponent"),
        component => component,
    };
    let host = text(event, "/source/host");
    if host.is_empty() {
        json!(component)
    } else {
        json!(format!("{component}, {host}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_durations_follow_apimachinery() {
        for (seconds, text) in [
            (-5, "<invalid>"),
            (-1, "0s"),
            (45, "45s"),
            (119, "119s"),
            (200, "3m20s"),
            (180, "3m"),
            (45 * 60, "45m"),
            (3 * 3600 + 20 * 60, "3h20m"),
            (30 * 3600, "30h"),
            (3 * 86_400 + 5 * 3600, "3d5h"),
            (20 * 86_400, "20d"),
            (800 * 86_400, "2y70d"),
            (3000 * 86_400, "8y"),
        ] {
            assert_eq!(human_duration(seconds), text, "{seconds} s");
        }
    }

    #[test]
    fn pod_status_reads_containers_init_containers_and_deletion() {
        let running = json!({"status": {"phase": "Running", "containerStatuses": [
            {"ready": true, "restartCount": 2, "state": {"running": {}}},
            {"ready": false, "restartCount": 1, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]},
            "spec": {"containers": [{"name": "a"}, {"name": "b"}]}});
        assert_eq!(pod_status(&running), "CrashLoopBackOff");
        assert_eq!(pod_ready(&running), "1/2");
        assert_eq!(pod_restarts(&running), 3);
        let init = json!({"status": {"phase": "Pending", "initContainerStatuses": [
            {"state": {"terminated": {"exitCode": 0}}}, {"state": {"running": {}}}]},
            "spec": {"initContainers": [{}, {}]}});
        assert_eq!(pod_status(&init), "Init:1/2");
        let deleting = json!({"metadata": {"deletionTimestamp": "2024-01-01T00:00:00Z"},
            "status": {"phase": "Running"}});
        assert_eq!(pod_status(&deleting), "Terminating");
    }

    #[test]
    fn services_print_type_ports_and_external_addresses() {
        let service = json!({"spec": {"type": "NodePort", "clusterIP": "10.96.0.7",
            "ports": [{"port": 80, "nodePort": 30080, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}],
            "selector": {"app": "web"}}});
        let cells = cells("", "Service", &service).unwrap();
        assert_eq!(cells[1], "NodePort");
        assert_eq!(cells[2], "10.96.0.7");
        assert_eq!(cells[3], "<none>");
        assert_eq!(cells[4], "80:30080/TCP,53/UDP");
        assert_eq!(cells[6], "app=web");
        let lb = json!({"spec": {"type": "LoadBalancer"}});
        assert_eq!(service_external_ip(&lb), "<pending>");
    }

    #[test]
    fn every_printer_has_one_cell_per_column() {
        for (group, kind) in [
            ("", "Pod"),
            ("apps", "Deployment"),
            ("", "Event"),
            ("batch", "CronJob"),
            ("", "ComponentStatus"),
        ] {
            let definitions = column_definitions(group, kind).unwrap();
            let cells = cells(group, kind, &json!({})).unwrap();
            assert_eq!(definitions.len(), cells.len(), "{kind}");
        }
    }

    #[test]
    fn component_statuses_print_their_health() {
        let status = json!({"metadata": {"name": "etcd-0"},
            "conditions": [{"type": "Healthy", "status": "True", "message": "ok"}]});
        assert_eq!(
            cells("", "ComponentStatus", &status).unwrap(),
            [json!("etcd-0"), json!("Healthy"), json!("ok"), json!("")]
        );
    }
}
