//! kube-controller-manager's ReplicaSet controller (`pkg/controller/replicaset`): each
//! ReplicaSet keeps `spec.replicas` active Pods from its template, adopting orphans its
//! selector matches, creating the missing ones (`SuccessfulCreate` Events) and deleting
//! the surplus (not yet scheduled, then pending, then not ready, then the newest first:
//! `SuccessfulDelete`); its status counts replicas, fully labeled, ready and available
//! ones and the generation it observed. The ReplicationController controller is the same
//! code over another [`Replicated`] kind, as upstream's is.

use serde_json::{Value, json};

use super::controller_utils::{
    controller_ref, controller_uid, create_pod_from_template, is_active, is_available, is_ready,
    meta, owned_by, selector_matches,
};
use super::writer::{EventFor, Kind, PODS, REPLICA_SETS, Writer};

/// The most Pods one ReplicaSet creates in one pass (upstream's `BurstReplicas`).
const BURST_REPLICAS: usize = 500;

/// A kind this controller keeps the replicas of: ReplicaSets, or ReplicationControllers.
pub(super) struct Replicated {
    /// The resource, whose status is written.
    pub(super) kind: Kind,
    /// The component its Events come from.
    pub(super) component: &'static str,
    /// Whether the owner's `spec.selector` selects the Pod.
    pub(super) selects: fn(&Value, &Value) -> bool,
}

/// apps/v1 ReplicaSets, with label selectors.
pub(super) const REPLICA_SET: Replicated = Replicated {
    kind: REPLICA_SETS,
    component: "replicaset-controller",
    selects: selector_matches,
};

/// One pass over every owner of kind `replicated` (ReplicaSets, ReplicationControllers).
pub(super) fn sync(
    writer: &Writer<'_>,
    replicated: &Replicated,
    replica_sets: &[&Value],
    pods: &[&Value],
) {
    for replica_set in replica_sets {
        if replica_set.pointer("/metadata/deletionTimestamp").is_some() {
            continue;
        }
        sync_one(writer, replicated, replica_set, pods);
    }
}

fn sync_one(writer: &Writer<'_>, replicated: &Replicated, replica_set: &Value, pods: &[&Value]) {
    adopt_orphans(writer, replicated, replica_set, pods);
    let owned = owned_by(replica_set, pods);
    let mut active: Vec<&Value> = owned.iter().copied().filter(|p| is_active(p)).collect();
    let desired = replica_set
        .pointer("/spec/replicas")
        .and_then(Value::as_u64)
        .unwrap_or(1);
    let desired = usize::try_from(desired).unwrap_or(usize::MAX);
    let event = |kind: &str, reason: &str, message: String| {
        writer.record_event(
            &EventFor {
                involved: replica_set,
                component: replicated.component,
                action: "",
            },
            kind,
            reason,
            &message,
        );
    };
    if active.len() < desired {
        let missing = (desired - active.len()).min(BURST_REPLICAS);
        let prefix = format!("{}-", meta(replica_set, "name"));
        for _ in 0..missing {
            match create_pod_from_template(writer, replica_set, &prefix) {
                Some(pod) => event(
                    "Normal",
                    "SuccessfulCreate",
                    format!("Created pod: {}", meta(&pod, "name")),
                ),
                None => {
                    event(
                        "Warning",
                        "FailedCreate",
                        "Error creating: the Pod was refused".to_owned(),
                    );
                    break;
                }
            }
        }
    } else if active.len() > desired {
        active.sort_by_key(|pod| deletion_rank(pod));
        for pod in &active[..active.len() - desired] {
            if writer.delete(
                PODS,
                Some(meta(pod, "namespace")),
                meta(pod, "name"),
                meta(pod, "uid"),
                None,
            ) {
                event(
                    "Normal",
                    "SuccessfulDelete",
                    format!("Deleted pod: {}", meta(pod, "name")),
                );
            }
        }
    }
    write_status(writer, replicated, replica_set, &owned);
}

/// Orphan Pods the selector matches become the ReplicaSet's (`ClaimPods`).
fn adopt_orphans(
    writer: &Writer<'_>,
    replicated: &Replicated,
    replica_set: &Value,
    pods: &[&Value],
) {
    let namespace = meta(replica_set, "namespace");
    let reference = controller_ref(replica_set);
    for pod in pods.iter().filter(|pod| {
        meta(pod, "namespace") == namespace
            && controller_uid(pod).is_none()
            && is_active(pod)
            && (replicated.selects)(replica_set, pod)
    }) {
        writer.update(
            PODS,
            Some(namespace),
            meta(pod, "name"),
            meta(pod, "uid"),
            false,
            |object| {
                let metadata = object.entry("metadata").or_insert_with(|| json!({}));
                let Some(metadata) = metadata.as_object_mut() else {
                    return false;
                };
                let references = metadata
                    .entry("ownerReferences")
                    .or_insert_with(|| Value::Array(Vec::new()));
                match references {
                    Value::Array(references) => {
                        references.push(reference.clone());
                        true
                    }
                    _ => false,
                }
            },
        );
    }
}

/// Which Pods go first when there are too many (`ActivePodsWithRanks`, simplified):
/// unscheduled, then pending, then not ready, then the most recently created.
fn deletion_rank(pod: &Value) -> (bool, u8, bool, std::cmp::Reverse<String>) {
    let scheduled = pod
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .is_some_and(|n| !n.is_empty());
    let phase = match pod.pointer("/status/phase").and_then(Value::as_str) {
        Some("Pending") => 0,
        Some("Running") => 2,
        _ => 1,
    };
    (
        scheduled,
        phase,
        is_ready(pod),
        std::cmp::Reverse(meta(pod, "creationTimestamp").to_owned()),
    )
}

fn write_status(
    writer: &Writer<'_>,
    replicated: &Replicated,
    replica_set: &Value,
    owned: &[&Value],
) {
    let active: Vec<&Value> = owned.iter().copied().filter(|p| is_active(p)).collect();
    let min_ready = replica_set
        .pointer("/spec/minReadySeconds")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let template_labels = replica_set.pointer("/spec/template/metadata/labels");
    let fully_labeled = active
        .iter()
        .filter(|pod| {
            template_labels
                .and_then(Value::as_object)
                .is_none_or(|labels| {
                    labels.iter().all(|(k, v)| {
                        pod.pointer("/metadata/labels").and_then(|l| l.get(k)) == Some(v)
                    })
                })
        })
        .count();
    let ready = active.iter().filter(|p| is_ready(p)).count();
    let available = active.iter().filter(|p| is_available(p, min_ready)).count();
    let mut status = json!({
        "replicas": active.len(),
        "fullyLabeledReplicas": fully_labeled,
        "readyReplicas": ready,
        "availableReplicas": available,
        "observedGeneration": replica_set.pointer("/metadata/generation").cloned().unwrap_or(json!(1)),
    });
    // Zero counts are left out, as the Go client's `omitempty` does.
    if let Some(map) = status.as_object_mut() {
        map.retain(|key, value| key == "replicas" || value != &json!(0));
    }
    writer.replace_status(replicated.kind, replica_set, status);
}
