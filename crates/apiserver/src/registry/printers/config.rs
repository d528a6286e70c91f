//! The printers of namespaces and configuration objects: Namespaces, ConfigMaps, Secrets,
//! ServiceAccounts, PersistentVolumeClaims, ComponentStatuses, Leases and role bindings.

use super::*;

pub(crate) const NAMESPACE: &[Column] = &[
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

/// Mutating and validating webhook configurations: how many webhooks each holds.
pub(crate) const WEBHOOK_CONFIGURATION: &[Column] = &[
    col("Webhooks", "integer", |o| {
        json!(items(o, "/webhooks").len())
    }),
    col("Age", "string", age),
];

/// Validating admission policies: how many validations, and the `paramKind`
/// (`apiVersion/kind`, `<unset>`).
pub(crate) const VALIDATING_ADMISSION_POLICY: &[Column] = &[
    col("Validations", "integer", |o| {
        json!(items(o, "/spec/validations").len())
    }),
    col("ParamKind", "string", |o| {
        let kind = text(o, "/spec/paramKind/kind");
        if kind.is_empty() {
            json!("<unset>")
        } else {
            json!(format!("{}/{kind}", text(o, "/spec/paramKind/apiVersion")))
        }
    }),
    col("Age", "string", age),
];

/// Their bindings: the policy, and the `paramRef` (`namespace/name`, `*/name`, `<unset>`).
pub(crate) const VALIDATING_ADMISSION_POLICY_BINDING: &[Column] = &[
    col("PolicyName", "string", |o| {
        json!(text(o, "/spec/policyName"))
    }),
    col("ParamRef", "string", |o| {
        if o.pointer("/spec/paramRef").is_none_or(Value::is_null) {
            return json!("<unset>");
        }
        let namespace = text(o, "/spec/paramRef/namespace");
        let namespace = if namespace.is_empty() { "*" } else { namespace };
        json!(format!("{namespace}/{}", text(o, "/spec/paramRef/name")))
    }),
    col("Age", "string", age),
];

pub(crate) const CONFIG_MAP: &[Column] = &[
    col("Data", "string", |o| {
        entry_count(o, &["data", "binaryData"])
    }),
    col("Age", "string", age),
];

pub(crate) const SECRET: &[Column] = &[
    col("Type", "string", |o| json!(text(o, "/type"))),
    col("Data", "string", |o| entry_count(o, &["data"])),
    col("Age", "string", age),
];

pub(crate) const SERVICE_ACCOUNT: &[Column] = &[
    col("Secrets", "string", |o| json!(items(o, "/secrets").len())),
    col("Age", "string", age),
];

pub(crate) const PERSISTENT_VOLUME_CLAIM: &[Column] = &[
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

pub(crate) const COMPONENT_STATUS: &[Column] = &[
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

pub(crate) const LEASE: &[Column] = &[
    col("Holder", "string", |o| {
        or_none(text(o, "/spec/holderIdentity"))
    }),
    col("Age", "string", age),
];

pub(crate) const ROLE_BINDING: &[Column] = &[
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
