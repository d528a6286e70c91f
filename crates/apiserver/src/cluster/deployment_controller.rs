//! kube-controller-manager's Deployment controller (`pkg/controller/deployment`): each
//! Deployment owns ReplicaSets, one per Pod template it had, named and labeled with the
//! template's `pod-template-hash` and numbered by the `deployment.kubernetes.io/revision`
//! annotation. The ReplicaSet of the current template is scaled up and the old ones
//! down, by the `RollingUpdate` strategy's `maxSurge` and `maxUnavailable` (or all old
//! ones first with `Recreate`), with `ScalingReplicaSet` Events; old ReplicaSets scaled
//! to 0 beyond `revisionHistoryLimit` are deleted. A paused Deployment is left as it is.
//! Its status counts the replicas and carries the `Available` and `Progressing`
//! conditions `kubectl rollout status` waits for. Going back to an older template
//! (`kubectl rollout undo`) makes that template's ReplicaSet the newest revision again.

use serde_json::{Map, Value, json};

use super::controller_utils::{controller_ref, meta, owned_by, scaled_value};
use super::writer::{DEPLOYMENTS, EventFor, REPLICA_SETS, Writer};
use crate::object::now;

/// The label (and selector key) that ties a ReplicaSet's Pods to its template.
const POD_TEMPLATE_HASH: &str = "pod-template-hash";

/// The annotation numbering a Deployment's ReplicaSets.
const REVISION: &str = "deployment.kubernetes.io/revision";

const COMPONENT: &str = "deployment-controller";

/// One pass over every Deployment.
pub(super) fn sync(writer: &Writer<'_>, deployments: &[&Value], replica_sets: &[&Value]) {
    for deployment in deployments {
        if deployment.pointer("/metadata/deletionTimestamp").is_some() {
            continue;
        }
        sync_one(writer, deployment, replica_sets);
    }
}

fn int(object: &Value, pointer: &str, default: i64) -> i64 {
    object
        .pointer(pointer)
        .and_then(Value::as_i64)
        .unwrap_or(default)
}

fn revision(replica_set: &Value) -> i64 {
    replica_set
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(REVISION))
        .and_then(Value::as_str)
        .and_then(|r| r.parse().ok())
        .unwrap_or(0)
}

/// The template without the `pod-template-hash` label, to compare with the
/// Deployment's.
fn template_without_hash(replica_set: &Value) -> Value {
    let mut template = replica_set
        .pointer("/spec/template")
        .cloned()
        .unwrap_or(Value::Null);
    if let Some(labels) = template
        .pointer_mut("/metadata/labels")
        .and_then(Value::as_object_mut)
    {
        labels.remove(POD_TEMPLATE_HASH);
    }
    template
}

/// The template's hash (FNV-1a over its JSON, with the collision count), written with
/// the alphabet of `rand.SafeEncodeString` as kube-controller-manager writes it.
pub(super) fn pod_template_hash(template: &Value, collision_count: i64) -> String {
    let mut hash: u32 = 0x811c_9dc5;
    let mut feed = |bytes: &[u8]| {
        for byte in bytes {
            hash ^= u32::from(*byte);
            hash = hash.wrapping_mul(0x0100_0193);
        }
    };
    feed(template.to_string().as_bytes());
    if collision_count > 0 {
        feed(collision_count.to_string().as_bytes());
    }
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    hash.to_string()
        .bytes()
        .map(|digit| char::from(ALPHABET[usize::from(digit) % ALPHABET.len()]))
        .collect()
}

fn event(writer: &Writer<'_>, deployment: &Value, message: String) {
    writer.record_event(
        &EventFor {
            involved: deployment,
            component: COMPONENT,
            action: "",
        },
        "Normal",
        "ScalingReplicaSet",
        &message,
    );
}

/// Sets `replica_set`'s `spec.replicas` (and its `desired-replicas` annotation);
/// whether it changed.
fn scale(
    writer: &Writer<'_>,
    deployment: &Value,
    replica_set: &Value,
    to: i64,
    max_surge: i64,
) -> bool {
    let from = int(replica_set, "/spec/replicas", 0);
    if from == to {
        return false;
    }
    let desired = int(deployment, "/spec/replicas", 1);
    let changed = writer.update(
        REPLICA_SETS,
        Some(meta(replica_set, "namespace")),
        meta(replica_set, "name"),
        meta(replica_set, "uid"),
        false,
        |object| {
            if let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) {
                spec.insert("replicas".to_owned(), json!(to));
            }
            set_annotations(
                object,
                &[
                    (
                        "deployment.kubernetes.io/desired-replicas",
                        desired.to_string(),
                    ),
                    (
                        "deployment.kubernetes.io/max-replicas",
                        (desired + max_surge).to_string(),
                    ),
                ],
            );
            true
        },
    );
    if changed {
        let direction = if to > from { "up" } else { "down" };
        event(
            writer,
            deployment,
            format!(
                "Scaled {direction} replica set {} from {from} to {to}",
                meta(replica_set, "name")
            ),
        );
    }
    changed
}

fn set_annotations(object: &mut Map<String, Value>, pairs: &[(&str, String)]) {
    let metadata = object.entry("metadata").or_insert_with(|| json!({}));
    let Some(metadata) = metadata.as_object_mut() else {
        return;
    };
    let annotations = metadata.entry("annotations").or_insert_with(|| json!({}));
    if let Some(annotations) = annotations.as_object_mut() {
        for (key, value) in pairs {
            annotations.insert((*key).to_owned(), json!(value));
        }
    }
}

/// `maxSurge` and `maxUnavailable` as numbers of Pods (`Recreate`: neither).
fn surge_and_unavailable(deployment: &Value, replicas: i64) -> (i64, i64) {
    if deployment
        .pointer("/spec/strategy/type")
        .and_then(Value::as_str)
        == Some("Recreate")
    {
        return (0, 0);
    }
    let rolling = deployment.pointer("/spec/strategy/rollingUpdate");
    let surge = scaled_value(
        rolling
            .and_then(|r| r.get("maxSurge"))
            .or(Some(&json!("25%"))),
        replicas,
        true,
    );
    let unavailable = scaled_value(
        rolling
            .and_then(|r| r.get("maxUnavailable"))
            .or(Some(&json!("25%"))),
        replicas,
        false,
    );
    if surge == 0 && unavailable == 0 {
        (0, 1)
    } else {
        (surge, unavailable.min(replicas))
    }
}

fn sync_one(writer: &Writer<'_>, deployment: &Value, all_replica_sets: &[&Value]) {
    let mut owned = owned_by(deployment, all_replica_sets);
    owned.sort_by_key(|rs| revision(rs));
    let template = deployment
        .pointer("/spec/template")
        .cloned()
        .unwrap_or(Value::Null);
    let new = owned
        .iter()
        .copied()
        .find(|rs| template_without_hash(rs) == template);
    let old: Vec<&Value> = owned
        .iter()
        .copied()
        .filter(|rs| Some(meta(rs, "uid")) != new.map(|n| meta(n, "uid")))
        .collect();
    let replicas = int(deployment, "/spec/replicas", 1);
    let (max_surge, max_unavailable) = surge_and_unavailable(deployment, replicas);
    let paused = deployment
        .pointer("/spec/paused")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let max_old_revision = old.iter().map(|rs| revision(rs)).max().unwrap_or(0);
    let recreate = deployment
        .pointer("/spec/strategy/type")
        .and_then(Value::as_str)
        == Some("Recreate");
    if paused {
        write_status(
            writer,
            deployment,
            &owned,
            new,
            replicas,
            max_unavailable,
            true,
        );
        return;
    }
    let Some(new) = new else {
        let old_total: i64 = old.iter().map(|rs| int(rs, "/spec/replicas", 0)).sum();
        let initial = if recreate {
            if old_total > 0 { 0 } else { replicas }
        } else if old.is_empty() {
            replicas
        } else {
            (replicas + max_surge - old_total).clamp(0, replicas)
        };
        create_replica_set(
            writer,
            deployment,
            &template,
            max_old_revision + 1,
            initial,
            max_surge,
        );
        return;
    };
    if revision(new) <= max_old_revision {
        // An older template came back (rollout undo): it is the newest revision now.
        writer.update(
            REPLICA_SETS,
            Some(meta(new, "namespace")),
            meta(new, "name"),
            meta(new, "uid"),
            false,
            |object| {
                set_annotations(object, &[(REVISION, (max_old_revision + 1).to_string())]);
                true
            },
        );
        return;
    }
    if recreate {
        let old_running: i64 = old
            .iter()
            .map(|rs| int(rs, "/spec/replicas", 0) + int(rs, "/status/replicas", 0))
            .sum();
        for rs in &old {
            scale(writer, deployment, rs, 0, max_surge);
        }
        if old_running == 0 {
            scale(writer, deployment, new, replicas, max_surge);
        }
    } else if !roll(
        writer,
        deployment,
        new,
        &old,
        &owned,
        replicas,
        max_surge,
        max_unavailable,
    ) {
        clean_up_history(writer, deployment, &old);
    }
    write_status(
        writer,
        deployment,
        &owned,
        Some(new),
        replicas,
        max_unavailable,
        false,
    );
}

/// One step of a rolling update (`rolloutRolling`): the new ReplicaSet scaled up within
/// the surge (the step ends there), else the old ones scaled down as far as availability
/// allows, unavailable replicas first. Whether anything was scaled.
#[allow(clippy::too_many_arguments)]
fn roll(
    writer: &Writer<'_>,
    deployment: &Value,
    new: &Value,
    old: &[&Value],
    owned: &[&Value],
    replicas: i64,
    max_surge: i64,
    max_unavailable: i64,
) -> bool {
    let new_replicas = int(new, "/spec/replicas", 0);
    let total: i64 = owned.iter().map(|rs| int(rs, "/spec/replicas", 0)).sum();
    if new_replicas > replicas {
        return scale(writer, deployment, new, replicas, max_surge);
    }
    if new_replicas < replicas && total < replicas + max_surge {
        let to = (new_replicas + replicas + max_surge - total).min(replicas);
        if scale(writer, deployment, new, to, max_surge) {
            return true;
        }
    }
    let min_available = replicas - max_unavailable;
    let new_unavailable = (new_replicas - int(new, "/status/availableReplicas", 0)).max(0);
    let mut unhealthy_budget = total - min_available - new_unavailable;
    if unhealthy_budget <= 0 {
        return false;
    }
    let mut targets: Vec<i64> = old.iter().map(|rs| int(rs, "/spec/replicas", 0)).collect();
    // Unavailable old replicas go first (`cleanupUnhealthyReplicas`) ...
    for (rs, target) in old.iter().zip(targets.iter_mut()) {
        let unhealthy = (*target - int(rs, "/status/availableReplicas", 0)).max(0);
        let down = unhealthy.min(unhealthy_budget);
        *target -= down;
        unhealthy_budget -= down;
    }
    // ... then available ones, down to the minimum availability.
    let available: i64 = owned
        .iter()
        .map(|rs| int(rs, "/status/availableReplicas", 0))
        .sum();
    let mut budget = available - min_available;
    for target in &mut targets {
        let down = (*target).min(budget.max(0));
        *target -= down;
        budget -= down;
    }
    let mut scaled = false;
    for (rs, target) in old.iter().zip(targets) {
        scaled |= scale(writer, deployment, rs, target, max_surge);
    }
    scaled
}

fn create_replica_set(
    writer: &Writer<'_>,
    deployment: &Value,
    template: &Value,
    revision: i64,
    replicas: i64,
    max_surge: i64,
) {
    let collisions = int(deployment, "/status/collisionCount", 0);
    let hash = pod_template_hash(template, collisions);
    let name = format!("{}-{hash}", meta(deployment, "name"));
    let mut template = template.clone();
    if let Some(labels) = template
        .pointer_mut("/metadata/labels")
        .and_then(Value::as_object_mut)
    {
        labels.insert(POD_TEMPLATE_HASH.to_owned(), json!(hash));
    }
    let mut selector = deployment
        .pointer("/spec/selector")
        .cloned()
        .unwrap_or_else(|| json!({}));
    if let Some(selector) = selector.as_object_mut() {
        let labels = selector.entry("matchLabels").or_insert_with(|| json!({}));
        if let Some(labels) = labels.as_object_mut() {
            labels.insert(POD_TEMPLATE_HASH.to_owned(), json!(hash));
        }
    }
    let desired = int(deployment, "/spec/replicas", 1);
    let mut spec = json!({"replicas": replicas, "selector": selector, "template": template});
    if let Some(min_ready) = deployment.pointer("/spec/minReadySeconds") {
        spec["minReadySeconds"] = min_ready.clone();
    }
    let replica_set = json!({
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {
            "name": name, "namespace": meta(deployment, "namespace"),
            "labels": template.pointer("/metadata/labels").cloned().unwrap_or_else(|| json!({})),
            "annotations": {
                REVISION: revision.to_string(),
                "deployment.kubernetes.io/desired-replicas": desired.to_string(),
                "deployment.kubernetes.io/max-replicas": (desired + max_surge).to_string(),
            },
            "ownerReferences": [controller_ref(deployment)],
        },
        "spec": spec,
    });
    if writer.create(
        REPLICA_SETS,
        Some(meta(deployment, "namespace")),
        replica_set,
    ) {
        event(
            writer,
            deployment,
            format!("Scaled up replica set {name} from 0 to {replicas}"),
        );
        return;
    }
    // The name is taken by a ReplicaSet of another template: count a collision, so the
    // next pass hashes differently.
    writer.update(
        DEPLOYMENTS,
        Some(meta(deployment, "namespace")),
        meta(deployment, "name"),
        meta(deployment, "uid"),
        true,
        |object| {
            let status = object.entry("status").or_insert_with(|| json!({}));
            match status.as_object_mut() {
                Some(status) => {
                    status.insert("collisionCount".to_owned(), json!(collisions + 1));
                    true
                }
                None => false,
            }
        },
    );
}

/// Deletes the oldest ReplicaSets scaled to 0 beyond `revisionHistoryLimit`.
fn clean_up_history(writer: &Writer<'_>, deployment: &Value, old: &[&Value]) {
    let limit = usize::try_from(int(deployment, "/spec/revisionHistoryLimit", 10)).unwrap_or(0);
    let idle: Vec<&&Value> = old
        .iter()
        .filter(|rs| int(rs, "/spec/replicas", 0) == 0 && int(rs, "/status/replicas", 0) == 0)
        .collect();
    if idle.len() <= limit {
        return;
    }
    for rs in &idle[..idle.len() - limit] {
        writer.delete(
            REPLICA_SETS,
            Some(meta(rs, "namespace")),
            meta(rs, "name"),
            meta(rs, "uid"),
            None,
        );
    }
}

fn write_status(
    writer: &Writer<'_>,
    deployment: &Value,
    owned: &[&Value],
    new: Option<&Value>,
    replicas: i64,
    max_unavailable: i64,
    paused: bool,
) {
    let sum = |pointer: &str| -> i64 { owned.iter().map(|rs| int(rs, pointer, 0)).sum() };
    let spec_total = sum("/spec/replicas");
    let actual = sum("/status/replicas");
    let ready = sum("/status/readyReplicas");
    let available = sum("/status/availableReplicas");
    let updated = new.map_or(0, |rs| int(rs, "/status/replicas", 0));
    let time = now();
    let mut status = deployment
        .get("status")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut counts = vec![
        (
            "observedGeneration",
            int(deployment, "/metadata/generation", 1),
        ),
        ("replicas", actual),
        ("updatedReplicas", updated),
        ("readyReplicas", ready),
        ("availableReplicas", available),
        ("unavailableReplicas", (spec_total - available).max(0)),
    ];
    // Zero counts are left out, as the Go client's `omitempty` does.
    counts.retain(|(key, value)| *key == "observedGeneration" || *value != 0);
    for key in [
        "replicas",
        "updatedReplicas",
        "readyReplicas",
        "availableReplicas",
        "unavailableReplicas",
    ] {
        status.remove(key);
    }
    for (key, value) in counts {
        status.insert(key.to_owned(), json!(value));
    }
    let available_condition = if available >= replicas - max_unavailable {
        (
            "True",
            "MinimumReplicasAvailable",
            "Deployment has minimum availability.".to_owned(),
        )
    } else {
        (
            "False",
            "MinimumReplicasUnavailable",
            "Deployment does not have minimum availability.".to_owned(),
        )
    };
    set_deployment_condition(&mut status, "Available", available_condition, &time);
    let new_name = new.map(|rs| meta(rs, "name")).unwrap_or("");
    let progressing = if paused {
        (
            "Unknown",
            "DeploymentPaused",
            "Deployment is paused".to_owned(),
        )
    } else if updated == replicas && available == replicas && actual == replicas && new.is_some() {
        (
            "True",
            "NewReplicaSetAvailable",
            format!("ReplicaSet \"{new_name}\" has successfully progressed."),
        )
    } else if new.is_some_and(|rs| {
        int(rs, "/status/replicas", 0) == 0 && int(rs, "/spec/replicas", 0) > 0 && actual == 0
    }) {
        (
            "True",
            "NewReplicaSetCreated",
            format!("Created new replica set \"{new_name}\""),
        )
    } else {
        (
            "True",
            "ReplicaSetUpdated",
            format!("ReplicaSet \"{new_name}\" is progressing."),
        )
    };
    set_deployment_condition(&mut status, "Progressing", progressing, &time);
    let status = Value::Object(status);
    let new_revision = new.map(|rs| revision(rs).to_string());
    let current_revision = deployment
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(REVISION))
        .and_then(Value::as_str)
        .map(str::to_owned);
    if let Some(revision) = new_revision.filter(|r| Some(r) != current_revision.as_ref()) {
        writer.update(
            DEPLOYMENTS,
            Some(meta(deployment, "namespace")),
            meta(deployment, "name"),
            meta(deployment, "uid"),
            false,
            |object| {
                set_annotations(object, &[(REVISION, revision.clone())]);
                true
            },
        );
        // The status follows on the next pass, over the annotated object.
        return;
    }
    if deployment.get("status") == Some(&status) {
        return;
    }
    writer.update(
        DEPLOYMENTS,
        Some(meta(deployment, "namespace")),
        meta(deployment, "name"),
        meta(deployment, "uid"),
        true,
        |object| {
            object.insert("status".to_owned(), status.clone());
            true
        },
    );
}

/// Sets a Deployment condition: `lastUpdateTime` changes with its reason or message,
/// `lastTransitionTime` with its status.
fn set_deployment_condition(
    status: &mut Map<String, Value>,
    kind: &str,
    (value, reason, message): (&str, &str, String),
    time: &str,
) {
    let conditions = status
        .entry("conditions")
        .or_insert_with(|| Value::Array(Vec::new()));
    let Value::Array(conditions) = conditions else {
        return;
    };
    let existing = conditions.iter_mut().find(|c| c["type"] == kind);
    let mut condition = json!({
        "type": kind, "status": value, "reason": reason, "message": message,
        "lastUpdateTime": time, "lastTransitionTime": time,
    });
    match existing {
        Some(existing) => {
            if existing["status"] == value {
                condition["lastTransitionTime"] = existing["lastTransitionTime"].clone();
                if existing["reason"] == reason && existing["message"] == message.as_str() {
                    condition["lastUpdateTime"] = existing["lastUpdateTime"].clone();
                }
            }
            *existing = condition;
        }
        None => conditions.push(condition),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_hashes_are_stable_and_safe_encoded() {
        let template = json!({"metadata": {"labels": {"app": "web"}}, "spec": {"containers": []}});
        let hash = pod_template_hash(&template, 0);
        assert_eq!(hash, pod_template_hash(&template, 0));
        assert_ne!(hash, pod_template_hash(&template, 1));
        assert!(
            hash.chars()
                .all(|c| "bcdfghjklmnpqrstvwxz2456789".contains(c)),
            "{hash}"
        );
        assert!(!hash.is_empty() && hash.len() <= 10);
    }
}
