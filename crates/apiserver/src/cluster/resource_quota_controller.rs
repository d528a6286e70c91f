//! kube-controller-manager's resource quota controller (`pkg/controller/resourcequota`):
//! each ResourceQuota's `status.hard` is its `spec.hard`, and `status.used` what the
//! objects of its namespace use of each resource it names (zero for one nothing uses),
//! counted as the quota admission plugin counts.

use serde_json::{Value, json};

use super::writer::{RESOURCE_QUOTAS, Writer};
use crate::registry::resource_quota::{hard_limits, namespace_usage, to_json};

/// One pass over every ResourceQuota.
pub(super) fn sync(writer: &Writer<'_>, quotas: &[&Value]) {
    for quota in quotas {
        if quota.pointer("/metadata/deletionTimestamp").is_some() {
            continue;
        }
        let namespace = quota
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or("");
        let hard = hard_limits(quota);
        let used = namespace_usage(
            writer.store.storage,
            namespace,
            quota,
            hard.keys().map(String::as_str),
        );
        let status = json!({"hard": to_json(&hard), "used": to_json(&used)});
        writer.replace_status(RESOURCE_QUOTAS, quota, status);
    }
}
