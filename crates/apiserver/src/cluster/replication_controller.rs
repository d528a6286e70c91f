//! kube-controller-manager's ReplicationController controller
//! (`pkg/controller/replication`): the ReplicaSet controller's code over core/v1
//! ReplicationControllers, whose `spec.selector` is a plain map of labels the Pods must
//! all carry; Events come from `replication-controller`.

use serde_json::Value;

use super::replica_set_controller::Replicated;
use super::writer::REPLICATION_CONTROLLERS;

/// core/v1 ReplicationControllers, with equality selectors.
pub(super) const REPLICATION_CONTROLLER: Replicated = Replicated {
    kind: REPLICATION_CONTROLLERS,
    component: "replication-controller",
    selects: equality_selector_matches,
};

/// Whether `pod` carries every label of `controller`'s `spec.selector` (an empty one
/// selects nothing).
fn equality_selector_matches(controller: &Value, pod: &Value) -> bool {
    let Some(selector) = controller
        .pointer("/spec/selector")
        .and_then(Value::as_object)
        .filter(|s| !s.is_empty())
    else {
        return false;
    };
    selector
        .iter()
        .all(|(key, value)| pod.pointer("/metadata/labels").and_then(|l| l.get(key)) == Some(value))
}
