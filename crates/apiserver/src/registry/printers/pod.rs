//! The Pod printer: ready containers, status (as kubectl computes it), restarts, age,
//! and with `-o wide` the IP, node and readiness gates.

use super::*;

pub(crate) const POD: &[Column] = &[
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

pub(super) fn pod_ready(pod: &Value) -> Value {
    let ready = items(pod, "/status/containerStatuses")
        .iter()
        .filter(|s| s.get("ready").and_then(Value::as_bool) == Some(true))
        .count();
    json!(format!("{ready}/{}", items(pod, "/spec/containers").len()))
}

pub(super) fn pod_restarts(pod: &Value) -> Value {
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
pub(super) fn pod_status(pod: &Value) -> Value {
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
