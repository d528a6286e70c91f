//! The status a kubelet reports for a Pod it runs (`pkg/kubelet/status` and
//! `kubelet_pods.go`'s `generateAPIPodStatus`): phase, addresses, start time, the
//! conditions and the container statuses. Conditions keep their `lastTransitionTime`
//! while their status stays.

use serde_json::{Map, Value, json};

use super::{ContainerRun, ContainerState, PodRun, Termination};
use crate::registry::kinds::pod_binding::set_condition;

/// The status of `run`, over the Pod's stored status (`pod`).
pub(super) fn status(run: &PodRun, pod: &Value) -> Value {
    let mut object = Map::new();
    let mut status = pod
        .get("status")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let phase = run.phase();
    status.insert("phase".to_owned(), json!(phase));
    status.insert("hostIP".to_owned(), json!(run.host_ip));
    status.insert("hostIPs".to_owned(), json!([{"ip": run.host_ip}]));
    if !run.ip.is_empty() {
        status.insert("podIP".to_owned(), json!(run.ip));
        status.insert("podIPs".to_owned(), json!([{"ip": run.ip}]));
    }
    status.insert("startTime".to_owned(), json!(run.start_time));
    if !run.init_containers.is_empty() {
        let statuses: Vec<Value> = run
            .init_containers
            .iter()
            .map(|c| container_status(c, true))
            .collect();
        status.insert("initContainerStatuses".to_owned(), json!(statuses));
    }
    let statuses: Vec<Value> = run
        .containers
        .iter()
        .map(|c| container_status(c, false))
        .collect();
    status.insert("containerStatuses".to_owned(), json!(statuses));
    object.insert("status".to_owned(), Value::Object(status));
    let time = crate::object::now();
    let condition = |kind: &str, ok: bool, reason: Option<&str>, message: Option<String>| {
        let mut condition = json!({
            "type": kind, "status": if ok { "True" } else { "False" },
            "lastProbeTime": null, "lastTransitionTime": time,
        });
        if let Some(reason) = reason {
            condition["reason"] = json!(reason);
        }
        if let Some(message) = message {
            condition["message"] = json!(message);
        }
        condition
    };
    let finished = matches!(phase, "Succeeded" | "Failed");
    set_condition(
        &mut object,
        condition("PodReadyToStartContainers", !finished, None, None),
    );
    let incomplete: Vec<&str> = run
        .init_containers
        .iter()
        .filter(|c| c.exit_code() != Some(0))
        .map(|c| c.name.as_str())
        .collect();
    set_condition(
        &mut object,
        if incomplete.is_empty() {
            condition("Initialized", true, None, None)
        } else {
            condition(
                "Initialized",
                false,
                Some("ContainersNotInitialized"),
                Some(format!(
                    "containers with incomplete status: [{}]",
                    incomplete.join(" ")
                )),
            )
        },
    );
    let unready: Vec<&str> = run
        .containers
        .iter()
        .filter(|c| !c.ready())
        .map(|c| c.name.as_str())
        .collect();
    for kind in ["Ready", "ContainersReady"] {
        let value = if finished {
            condition(kind, false, Some("PodCompleted"), None)
        } else if unready.is_empty() && phase == "Running" {
            condition(kind, true, None, None)
        } else {
            condition(
                kind,
                false,
                Some("ContainersNotReady"),
                Some(format!(
                    "containers with unready status: [{}]",
                    unready.join(" ")
                )),
            )
        };
        set_condition(&mut object, value);
    }
    set_condition(&mut object, condition("PodScheduled", true, None, None));
    let mut status = object.remove("status").unwrap_or(Value::Null);
    if let Some(Value::Array(conditions)) = status.get_mut("conditions") {
        conditions.sort_by_key(|c| condition_order(c["type"].as_str().unwrap_or("")));
    }
    status
}

/// kubelet's order of the conditions.
fn condition_order(kind: &str) -> usize {
    [
        "PodReadyToStartContainers",
        "Initialized",
        "Ready",
        "ContainersReady",
        "PodScheduled",
    ]
    .iter()
    .position(|k| *k == kind)
    .unwrap_or(usize::MAX)
}

fn container_status(container: &ContainerRun, init: bool) -> Value {
    let ready = if init {
        container.exit_code() == Some(0)
    } else {
        container.ready()
    };
    // kubelet reports nothing new of a container until its postStart hook returned.
    let creating = ContainerState::Waiting {
        reason: "ContainerCreating".to_owned(),
        message: String::new(),
    };
    let hooked = container.post_start.is_some();
    let shown = if hooked { &creating } else { &container.state };
    let mut status = json!({
        "name": container.name,
        "image": container.image,
        "imageID": format!("{}@sha256:{:0>64}", container.image, ""),
        "ready": ready,
        "restartCount": container.restart_count,
        "started": if init { container.running() } else { container.started() },
        "state": state(shown),
        "lastState": container.last_termination.as_ref().map_or_else(|| json!({}), |t| json!({"terminated": termination(t)})),
    });
    if !container.container_id.is_empty() && !hooked {
        status["containerID"] = json!(container.container_id);
    }
    status
}

fn state(state: &ContainerState) -> Value {
    match state {
        ContainerState::Waiting { reason, message } => {
            let mut waiting = json!({"reason": reason});
            if !message.is_empty() {
                waiting["message"] = json!(message);
            }
            json!({"waiting": waiting})
        }
        ContainerState::Running { started_at } => json!({"running": {"startedAt": started_at}}),
        ContainerState::Terminated(t) => json!({"terminated": termination(t)}),
    }
}

fn termination(t: &Termination) -> Value {
    json!({
        "exitCode": t.exit_code, "reason": t.reason, "startedAt": t.started_at,
        "finishedAt": t.finished_at, "containerID": t.container_id,
    })
}
