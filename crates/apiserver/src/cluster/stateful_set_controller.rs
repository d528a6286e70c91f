//! kube-controller-manager's StatefulSet controller (`pkg/controller/statefulset`): Pods
//! `<set>-0` ... `<set>-<replicas-1>` with stable names, `hostname` (the Pod's name) and
//! `subdomain` (`spec.serviceName`), labels `statefulset.kubernetes.io/pod-name`,
//! `apps.kubernetes.io/pod-index` and `controller-revision-hash` (`<set>-<template
//! hash>`), and a PersistentVolumeClaim `<claim>-<pod>` per `volumeClaimTemplates` entry
//! mounted as that volume (claims stay when Pods go, as the default retention policy
//! keeps them). Under `OrderedReady` (the default) Pods start one at a time in ordinal
//! order, each once the one before is Running and Ready, and go highest ordinal first,
//! one at a time; under `Parallel` all at once. Failed Pods are replaced. A new template
//! rolls out under `RollingUpdate` from the highest ordinal down to the partition, one
//! Pod at a time while all are ready (`OnDelete`: when Pods are deleted). The status
//! counts replicas, ready, available, current and updated ones with `currentRevision`
//! and `updateRevision`, as `kubectl rollout status sts/...` reads them, and each template
//! is recorded as a ControllerRevision ([`controller_history`]) for `kubectl rollout
//! history|undo sts/...`.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use super::controller_history::{self, Revision};
use super::controller_utils::{controller_ref, is_available, is_ready, meta, owned_by};
use super::deployment_controller::pod_template_hash;
use super::writer::{EventFor, PERSISTENT_VOLUME_CLAIMS, PODS, STATEFUL_SETS, Writer};

const COMPONENT: &str = "statefulset-controller";
const REVISION_HASH: &str = "controller-revision-hash";
const POD_NAME_LABEL: &str = "statefulset.kubernetes.io/pod-name";
const POD_INDEX_LABEL: &str = "apps.kubernetes.io/pod-index";
/// The hash label of a StatefulSet's ControllerRevisions.
const HISTORY_HASH: &str = "controller.kubernetes.io/hash";

/// One pass over every StatefulSet.
pub(super) fn sync(
    writer: &Writer<'_>,
    sets: &[&Value],
    pods: &[&Value],
    claims: &[&Value],
    revisions: &[&Value],
) {
    for set in sets {
        if set.pointer("/metadata/deletionTimestamp").is_some() {
            continue;
        }
        sync_one(writer, set, pods, claims, revisions);
    }
}

fn int(set: &Value, pointer: &str, default: i64) -> i64 {
    set.pointer(pointer)
        .and_then(Value::as_i64)
        .unwrap_or(default)
}

/// The ordinal of `pod` in `set` (its name is `<set>-<ordinal>`).
fn ordinal(set: &Value, pod: &Value) -> Option<i64> {
    meta(pod, "name")
        .strip_prefix(meta(set, "name"))?
        .strip_prefix('-')?
        .parse::<i64>()
        .ok()
        .filter(|n| *n >= 0)
}

fn revision(pod: &Value) -> &str {
    pod.pointer("/metadata/labels")
        .and_then(|l| l.get(REVISION_HASH))
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn is_running_and_ready(pod: &Value) -> bool {
    pod.pointer("/status/phase").and_then(Value::as_str) == Some("Running") && is_ready(pod)
}

fn sync_one(
    writer: &Writer<'_>,
    set: &Value,
    pods: &[&Value],
    claims: &[&Value],
    revisions: &[&Value],
) {
    let name = meta(set, "name");
    let namespace = meta(set, "namespace");
    let replicas = int(set, "/spec/replicas", 1).max(0);
    let parallel = set
        .pointer("/spec/podManagementPolicy")
        .and_then(Value::as_str)
        == Some("Parallel");
    let template = set
        .pointer("/spec/template")
        .cloned()
        .unwrap_or(Value::Null);
    let hash = pod_template_hash(&template, int(set, "/status/collisionCount", 0));
    let update_revision = format!("{name}-{hash}");
    let event = |kind: &str, reason: &str, message: String| {
        writer.record_event(
            &EventFor {
                involved: set,
                component: COMPONENT,
                action: "",
            },
            kind,
            reason,
            &message,
        );
    };
    let delete = |pod: &Value| {
        let deleted = writer.delete(
            PODS,
            Some(namespace),
            meta(pod, "name"),
            meta(pod, "uid"),
            None,
        );
        if deleted {
            event(
                "Normal",
                "SuccessfulDelete",
                format!(
                    "delete Pod {} in StatefulSet {name} successful",
                    meta(pod, "name")
                ),
            );
        }
        deleted
    };
    let owned = owned_by(set, pods);
    let mut live: BTreeSet<String> = owned.iter().map(|p| revision(p).to_owned()).collect();
    if let Some(current) = set
        .pointer("/status/currentRevision")
        .and_then(Value::as_str)
    {
        live.insert(current.to_owned());
    }
    controller_history::record(
        writer,
        &Revision {
            owner: set,
            name: &update_revision,
            hash_label: (HISTORY_HASH, &hash),
        },
        revisions,
        &live,
    );
    let mut slots: Vec<Option<&Value>> = vec![None; usize::try_from(replicas).unwrap_or(0)];
    let mut condemned: Vec<(i64, &Value)> = Vec::new();
    for pod in &owned {
        match ordinal(set, pod) {
            Some(n) if n < replicas => {
                if let Some(slot) = usize::try_from(n).ok().and_then(|i| slots.get_mut(i)) {
                    *slot = Some(pod);
                }
            }
            Some(n) => condemned.push((n, pod)),
            None => condemned.push((i64::MAX, pod)),
        }
    }
    // Bring up the ordinals in turn (all at once when Parallel).
    let mut busy = false;
    for (index, slot) in slots.iter().enumerate() {
        match slot {
            None => {
                create(writer, set, index, &update_revision, claims);
                event(
                    "Normal",
                    "SuccessfulCreate",
                    format!("create Pod {name}-{index} in StatefulSet {name} successful"),
                );
                busy = true;
            }
            Some(pod) if pod.pointer("/metadata/deletionTimestamp").is_some() => busy = true,
            Some(pod) if pod.pointer("/status/phase").and_then(Value::as_str) == Some("Failed") => {
                delete(pod);
                busy = true;
            }
            Some(pod) if !is_running_and_ready(pod) => busy = true,
            Some(_) => continue,
        }
        if !parallel {
            break;
        }
    }
    // Scale down: highest ordinal first (one at a time unless Parallel, and only while
    // the rest is healthy).
    condemned.sort_by_key(|(n, _)| std::cmp::Reverse(*n));
    if !busy || parallel {
        for (_, pod) in &condemned {
            if pod.pointer("/metadata/deletionTimestamp").is_some() {
                if !parallel {
                    break;
                }
                continue;
            }
            delete(pod);
            busy = true;
            if !parallel {
                break;
            }
        }
    }
    // Roll out a new template from the top down to the partition, one Pod at a time.
    let rolling = set
        .pointer("/spec/updateStrategy/type")
        .and_then(Value::as_str)
        != Some("OnDelete");
    let partition = int(set, "/spec/updateStrategy/rollingUpdate/partition", 0).max(0);
    if rolling && !busy && condemned.is_empty() {
        for (index, slot) in slots.iter().enumerate().rev() {
            if i64::try_from(index).unwrap_or(i64::MAX) < partition {
                break;
            }
            if let Some(pod) = slot
                && revision(pod) != update_revision
            {
                delete(pod);
                break;
            }
        }
    }
    write_status(writer, set, &owned, &update_revision);
}

/// Creates Pod `<set>-<index>` (and its missing claims) from the template.
fn create(writer: &Writer<'_>, set: &Value, index: usize, revision: &str, claims: &[&Value]) {
    let set_name = meta(set, "name");
    let namespace = meta(set, "namespace");
    let pod_name = format!("{set_name}-{index}");
    let template = set
        .pointer("/spec/template")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let mut labels = template
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    labels.insert(REVISION_HASH.to_owned(), json!(revision));
    labels.insert(POD_NAME_LABEL.to_owned(), json!(pod_name));
    labels.insert(POD_INDEX_LABEL.to_owned(), json!(index.to_string()));
    let mut metadata = Map::new();
    metadata.insert("name".to_owned(), json!(pod_name));
    metadata.insert("namespace".to_owned(), json!(namespace));
    metadata.insert("labels".to_owned(), Value::Object(labels));
    if let Some(annotations) = template.pointer("/metadata/annotations") {
        metadata.insert("annotations".to_owned(), annotations.clone());
    }
    metadata.insert("ownerReferences".to_owned(), json!([controller_ref(set)]));
    let mut spec = template
        .get("spec")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    spec.insert("hostname".to_owned(), json!(pod_name));
    if let Some(service) = set
        .pointer("/spec/serviceName")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
    {
        spec.insert("subdomain".to_owned(), json!(service));
    }
    for claim in set
        .pointer("/spec/volumeClaimTemplates")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let claim_name = format!("{}-{pod_name}", meta(claim, "name"));
        let volume = json!({"name": meta(claim, "name"), "persistentVolumeClaim": {"claimName": claim_name}});
        let volumes = spec
            .entry("volumes")
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(volumes) = volumes {
            volumes.retain(|v| v["name"] != meta(claim, "name"));
            volumes.push(volume);
        }
        let exists = claims
            .iter()
            .any(|c| meta(c, "namespace") == namespace && meta(c, "name") == claim_name);
        if !exists {
            let mut object = json!({
                "apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "metadata": {"name": claim_name, "namespace": namespace},
                "spec": claim.get("spec").cloned().unwrap_or_else(|| json!({})),
            });
            if let Some(selector) = set.pointer("/spec/selector/matchLabels") {
                object["metadata"]["labels"] = selector.clone();
            }
            writer.create(PERSISTENT_VOLUME_CLAIMS, Some(namespace), object);
        }
    }
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec});
    writer.create(PODS, Some(namespace), pod);
}

fn write_status(writer: &Writer<'_>, set: &Value, owned: &[&Value], update_revision: &str) {
    let min_ready = int(set, "/spec/minReadySeconds", 0);
    let replicas = int(set, "/spec/replicas", 1).max(0);
    let active: Vec<&&Value> = owned
        .iter()
        .filter(|p| p.pointer("/metadata/deletionTimestamp").is_none())
        .collect();
    let updated = active
        .iter()
        .filter(|p| revision(p) == update_revision)
        .count();
    let ready = active.iter().filter(|p| is_ready(p)).count();
    let available = active.iter().filter(|p| is_available(p, min_ready)).count();
    let all_updated = i64::try_from(updated).unwrap_or(0) == replicas
        && i64::try_from(active.len()).unwrap_or(0) == replicas;
    let previous = set
        .pointer("/status/currentRevision")
        .and_then(Value::as_str)
        .filter(|r| !r.is_empty())
        .unwrap_or(update_revision);
    let current_revision = if all_updated {
        update_revision
    } else {
        previous
    };
    let current = active
        .iter()
        .filter(|p| revision(p) == current_revision)
        .count();
    let mut status = json!({
        "replicas": active.len(),
        "readyReplicas": ready,
        "currentReplicas": current,
        "updatedReplicas": updated,
        "availableReplicas": available,
        "currentRevision": current_revision,
        "updateRevision": update_revision,
        "collisionCount": int(set, "/status/collisionCount", 0),
        "observedGeneration": set.pointer("/metadata/generation").cloned().unwrap_or(json!(1)),
    });
    if let Some(map) = status.as_object_mut() {
        map.retain(|key, value| {
            matches!(
                key.as_str(),
                "replicas" | "availableReplicas" | "collisionCount"
            ) || value != &json!(0)
        });
    }
    writer.replace_status(STATEFUL_SETS, set, status);
}
