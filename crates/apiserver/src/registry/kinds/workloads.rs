//! The workloads that keep Pods running (kube-apiserver's `pkg/registry/apps/{deployment,
//! replicaset,statefulset,daemonset}` and `core/replicationcontroller`): their defaults
//! (replicas, update strategies, history limits, pod template defaults, the initial
//! status), their validation in kube-apiserver's order (selector, template labels, pod
//! template, restart policy `Always`), an immutable `spec.selector` (and a StatefulSet's
//! fixed spec fields), a Deployment's annotations that bump its generation, and the
//! ReplicationController's orphaning default. One strategy for the family, told apart
//! by [`Workload`].

use kubeclient_machinery::{LabelSelector, StatusCause};
use serde_json::{Map, Value, json};

use crate::object::label_selector;
use crate::registry::Propagation;
use crate::registry::defaults::{child, child_or_insert, set, template};
use crate::registry::printers::{self, Column};
use crate::registry::strategy::{Strategy, StrategyContext, duplicates};
use crate::registry::workloads::{
    empty_selector, go_label_selector, invalid_selector, pod_template, replicated_template,
    required, required_selector, restart_policy_always, selector_is_empty, selector_or_invalid,
    selector_requirements, template_labels_match,
};

/// A kind of the workloads family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Workload {
    /// `apps/v1` Deployment.
    Deployment,
    /// `apps/v1` ReplicaSet.
    ReplicaSet,
    /// `apps/v1` StatefulSet.
    StatefulSet,
    /// `apps/v1` DaemonSet.
    DaemonSet,
    /// core/v1 ReplicationController.
    ReplicationController,
}

/// The strategy of one workload kind.
pub(crate) struct WorkloadStrategy(Workload);

/// Deployments.
pub(crate) static DEPLOYMENT: WorkloadStrategy = WorkloadStrategy(Workload::Deployment);
/// ReplicaSets.
pub(crate) static REPLICA_SET: WorkloadStrategy = WorkloadStrategy(Workload::ReplicaSet);
/// StatefulSets.
pub(crate) static STATEFUL_SET: WorkloadStrategy = WorkloadStrategy(Workload::StatefulSet);
/// DaemonSets.
pub(crate) static DAEMON_SET: WorkloadStrategy = WorkloadStrategy(Workload::DaemonSet);
/// ReplicationControllers.
pub(crate) static REPLICATION_CONTROLLER: WorkloadStrategy =
    WorkloadStrategy(Workload::ReplicationController);

impl Workload {
    /// The kind's name, as messages print it.
    fn kind(self) -> &'static str {
        match self {
            Workload::Deployment => "Deployment",
            Workload::ReplicaSet => "ReplicaSet",
            Workload::StatefulSet => "StatefulSet",
            Workload::DaemonSet => "DaemonSet",
            Workload::ReplicationController => "ReplicationController",
        }
    }
}

impl Strategy for WorkloadStrategy {
    fn table_columns(&self) -> Option<&'static [Column]> {
        match self.0 {
            Workload::Deployment => Some(printers::workloads::DEPLOYMENT),
            Workload::ReplicaSet => Some(printers::workloads::REPLICA_SET),
            Workload::StatefulSet => Some(printers::workloads::STATEFUL_SET),
            Workload::DaemonSet => Some(printers::workloads::DAEMON_SET),
            Workload::ReplicationController => None,
        }
    }

    fn prepare_for_create(&self, _: StrategyContext<'_>, object: &mut Map<String, Value>) {
        defaults(self.0, object, true);
    }

    fn prepare_for_update(
        &self,
        _: StrategyContext<'_>,
        object: &mut Map<String, Value>,
        _: &Value,
    ) {
        defaults(self.0, object, false);
    }

    fn validate(&self, object: &Value, _: Option<&Value>, causes: &mut Vec<StatusCause>) {
        validate(self.0, object, causes);
    }

    fn immutable_causes(&self, current: &Value, desired: &Value, causes: &mut Vec<StatusCause>) {
        if self.0 == Workload::ReplicationController {
            return;
        }
        if let (Some(before), Some(after)) = (
            current.pointer("/spec/selector"),
            desired.pointer("/spec/selector"),
        ) && before != after
        {
            causes.push(StatusCause::new(
                "FieldValueInvalid",
                &format!(
                    "Invalid value: {}: field is immutable",
                    go_label_selector(after)
                ),
                "spec.selector",
            ));
        }
        if self.0 == Workload::StatefulSet && stateful_set_spec_changed(current, desired) {
            causes.push(StatusCause::new(
                "FieldValueForbidden",
                "Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
                "spec",
            ));
        }
    }

    fn duplicate_merge_keys(&self, object: &Value) -> Vec<StatusCause> {
        duplicates(self, object)
    }

    fn annotations_bump_generation(&self) -> bool {
        self.0 == Workload::Deployment
    }

    fn default_garbage_collection_policy(&self, version: &str) -> Propagation {
        // core/v1 ReplicationControllers orphan their Pods, for compatibility.
        if self.0 == Workload::ReplicationController && version == "v1" {
            Propagation::Orphan
        } else {
            Propagation::Background
        }
    }
}

/// The defaults of a workload; a new one also gets its initial status.
fn defaults(workload: Workload, object: &mut Map<String, Value>, creating: bool) {
    if workload == Workload::ReplicationController {
        replication_controller_selector(object);
    }
    if let Some(spec) = child(object, "spec") {
        match workload {
            Workload::Deployment => {
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
            }
            Workload::ReplicaSet | Workload::ReplicationController => {
                set(spec, "replicas", json!(1));
            }
            Workload::StatefulSet => {
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
            }
            Workload::DaemonSet => {
                set(
                    spec,
                    "updateStrategy",
                    json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}),
                );
                set(spec, "revisionHistoryLimit", json!(10));
            }
        }
        template(spec.get_mut("template"));
    }
    if !creating {
        return;
    }
    match workload {
        Workload::Deployment => set(object, "status", json!({})),
        Workload::ReplicaSet | Workload::StatefulSet => {
            set(child_or_insert(object, "status"), "replicas", json!(0));
        }
        Workload::DaemonSet => {
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
        Workload::ReplicationController => {}
    }
}

/// A ReplicationController without a selector selects its template's labels, and
/// without labels is labelled with them (`SetDefaults_ReplicationController`).
fn replication_controller_selector(object: &mut Map<String, Value>) {
    let labels = object
        .get("spec")
        .and_then(|s| s.pointer("/template/metadata/labels"))
        .filter(|l| l.as_object().is_some_and(|l| !l.is_empty()))
        .cloned();
    let Some(labels) = labels else {
        return;
    };
    if let Some(spec) = child(object, "spec")
        && spec
            .get("selector")
            .and_then(Value::as_object)
            .is_none_or(|s| s.is_empty())
    {
        spec.insert("selector".to_owned(), labels.clone());
    }
    let metadata = child_or_insert(object, "metadata");
    if metadata
        .get("labels")
        .and_then(Value::as_object)
        .is_none_or(|l| l.is_empty())
    {
        metadata.insert("labels".to_owned(), labels);
    }
}

/// A workload's causes, in kube-apiserver's order.
fn validate(workload: Workload, object: &Value, causes: &mut Vec<StatusCause>) {
    let spec = object.get("spec").unwrap_or(&Value::Null);
    let kind = workload.kind();
    match workload {
        Workload::Deployment | Workload::ReplicaSet => {
            // (kube-apiserver names Deployments in a ReplicaSet's empty-selector message too.)
            let selector = required_selector(spec, "deployment", causes);
            if let Some(selector) = selector_or_invalid(spec, selector, causes) {
                replicated_template(spec, &selector, kind, causes);
            }
        }
        Workload::StatefulSet => {
            match required_selector(spec, "statefulset", causes) {
                Ok(selector) => {
                    // StatefulSets check only the labels of their template (kube-apiserver
                    // leaves its pod spec to the Pods).
                    if !selector.is_empty() {
                        template_labels_match(spec, &selector, causes);
                    }
                }
                Err(()) => causes.push(invalid_selector(spec, "")),
            }
            restart_policy_always(spec, kind, causes);
        }
        Workload::DaemonSet => {
            let selector = spec.get("selector").filter(|s| !s.is_null());
            if let Some(selector) = selector {
                selector_requirements(selector, causes);
            }
            // A DaemonSet's selector must match its template even when absent.
            if let Ok(parsed) = label_selector(selector) {
                template_labels_match(spec, &parsed, causes);
            }
            if selector.is_some_and(selector_is_empty) {
                causes.push(empty_selector(spec, "daemonset"));
            }
            pod_template(spec.get("template"), "spec.template", causes);
            restart_policy_always(spec, kind, causes);
        }
        Workload::ReplicationController => {
            let selector = spec
                .get("selector")
                .and_then(Value::as_object)
                .filter(|s| !s.is_empty());
            if selector.is_none() {
                causes.push(required("spec.selector"));
            }
            match spec.get("template").filter(|t| !t.is_null()) {
                None => causes.push(required("spec.template")),
                Some(_) => {
                    if let Some(selector) = selector {
                        let labels = selector
                            .iter()
                            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_owned()))
                            .collect();
                        template_labels_match(spec, &LabelSelector::from_set(&labels), causes);
                    }
                    pod_template(spec.get("template"), "spec.template", causes);
                    restart_policy_always(spec, kind, causes);
                }
            }
        }
    }
}

/// Whether a StatefulSet update changes a spec field other than the ones that may change.
fn stateful_set_spec_changed(current: &Value, desired: &Value) -> bool {
    const MUTABLE: [&str; 6] = [
        "replicas",
        "ordinals",
        "template",
        "updateStrategy",
        "persistentVolumeClaimRetentionPolicy",
        "minReadySeconds",
    ];
    let fixed = |object: &Value| -> Map<String, Value> {
        object
            .get("spec")
            .and_then(Value::as_object)
            .map(|spec| {
                spec.iter()
                    .filter(|(key, _)| !MUTABLE.contains(&key.as_str()))
                    .map(|(key, value)| (key.clone(), value.clone()))
                    .collect()
            })
            .unwrap_or_default()
    };
    fixed(current) != fixed(desired)
}
