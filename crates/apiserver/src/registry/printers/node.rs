//! The Node printer: status, roles, age, version, and with `-o wide` addresses and
//! system info.

use super::*;

pub(crate) const NODE: &[Column] = &[
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
