//! kube-controller-manager's DaemonSet controller (`pkg/controller/daemon`): one Pod of
//! each DaemonSet on every node that should run it (its `nodeSelector`, required node
//! affinity and tolerations against the node's `NoSchedule`/`NoExecute` taints, with the
//! tolerations the controller adds to every daemon Pod: not-ready, unreachable, the
//! pressures, unschedulable). The Pod targets its node through a required node affinity
//! on `metadata.name` (`ReplaceDaemonSetPodNodeNameNodeAffinity`) and the scheduler binds
//! it; it carries `controller-revision-hash` (the template's hash) and
//! `pod-template-generation`. Failed Pods are replaced, extra ones and those on nodes that
//! should not run it deleted; a new template rolls out node by node by `RollingUpdate`'s
//! `maxUnavailable` (old Pods deleted, new ones created), or waits for Pods to be deleted
//! under `OnDelete`. The status counts desired, current, misscheduled, ready, available,
//! updated and unavailable nodes, as `kubectl rollout status ds/...` reads them. Each
//! template is recorded as a ControllerRevision ([`controller_history`]) for `kubectl
//! rollout history|undo ds/...`.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value, json};

use super::controller_history::{self, Revision};
use super::controller_utils::{
    create_pod_from_template, is_available, is_ready, meta, owned_by, scaled_value,
};
use super::deployment_controller::pod_template_hash;
use super::node::{NodeInfo, NodeSet};
use super::scheduler::fits_node;
use super::writer::{DAEMON_SETS, EventFor, PODS, Writer};

const COMPONENT: &str = "daemonset-controller";
const REVISION_HASH: &str = "controller-revision-hash";
const TEMPLATE_GENERATION: &str = "pod-template-generation";

/// The tolerations every daemon Pod gets (`AddOrUpdateDaemonPodTolerations`).
fn daemon_tolerations() -> Vec<Value> {
    let exists = |key: &str, effect: &str| json!({"key": format!("node.kubernetes.io/{key}"), "operator": "Exists", "effect": effect});
    vec![
        exists("not-ready", "NoExecute"),
        exists("unreachable", "NoExecute"),
        exists("disk-pressure", "NoSchedule"),
        exists("memory-pressure", "NoSchedule"),
        exists("pid-pressure", "NoSchedule"),
        exists("unschedulable", "NoSchedule"),
    ]
}

/// One pass over every DaemonSet.
pub(super) fn sync(
    writer: &Writer<'_>,
    daemon_sets: &[&Value],
    pods: &[&Value],
    nodes: &NodeSet,
    revisions: &[&Value],
) {
    for daemon_set in daemon_sets {
        if daemon_set.pointer("/metadata/deletionTimestamp").is_some() {
            continue;
        }
        sync_one(writer, daemon_set, pods, nodes, revisions);
    }
}

/// The node a daemon Pod is for: where it is bound, else the one its node affinity names.
fn target_node(pod: &Value) -> &str {
    let bound = meta_spec(pod, "nodeName");
    if !bound.is_empty() {
        return bound;
    }
    pod.pointer("/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|term| term["matchFields"].as_array())
        .flatten()
        .find(|field| field["key"] == "metadata.name")
        .and_then(|field| field.pointer("/values/0"))
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn meta_spec<'a>(pod: &'a Value, field: &str) -> &'a str {
    pod.pointer(&format!("/spec/{field}"))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// The Pod template as it runs on `node`: the revision labels, the controller's
/// tolerations, and the affinity to that node alone.
fn template_for(daemon_set: &Value, hash: &str, node: Option<&str>) -> Value {
    let mut template = daemon_set
        .pointer("/spec/template")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let generation = daemon_set
        .pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    if let Some(labels) =
        object_at(&mut template, "metadata").and_then(|m| object_field(m, "labels"))
    {
        labels.insert(REVISION_HASH.to_owned(), json!(hash));
        labels.insert(
            TEMPLATE_GENERATION.to_owned(),
            json!(generation.to_string()),
        );
    }
    if let Some(spec) = object_at(&mut template, "spec") {
        let tolerations = spec
            .entry("tolerations")
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(tolerations) = tolerations {
            for toleration in daemon_tolerations() {
                if !tolerations.contains(&toleration) {
                    tolerations.push(toleration);
                }
            }
        }
        if let Some(node) = node {
            let term = json!({"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]});
            let affinity = object_field(spec, "affinity").map(|a| {
                a.entry("nodeAffinity")
                    .or_insert_with(|| Value::Object(Map::new()))
            });
            if let Some(Value::Object(node_affinity)) = affinity {
                node_affinity.insert(
                    "requiredDuringSchedulingIgnoredDuringExecution".to_owned(),
                    json!({"nodeSelectorTerms": [term]}),
                );
            }
        }
    }
    template
}

fn object_at<'a>(value: &'a mut Value, field: &str) -> Option<&'a mut Map<String, Value>> {
    value
        .as_object_mut()
        .and_then(|map| object_field(map, field))
}

fn object_field<'a>(
    map: &'a mut Map<String, Value>,
    field: &str,
) -> Option<&'a mut Map<String, Value>> {
    let entry = map
        .entry(field)
        .or_insert_with(|| Value::Object(Map::new()));
    if !entry.is_object() {
        *entry = Value::Object(Map::new());
    }
    entry.as_object_mut()
}

/// Whether `node` should run `daemon_set`'s Pod (`NodeShouldRunDaemonPod`).
fn should_run(daemon_set: &Value, hash: &str, node: &NodeInfo) -> bool {
    let pod = json!({"spec": template_for(daemon_set, hash, None)["spec"].clone()});
    fits_node(&pod, node)
}

fn sync_one(
    writer: &Writer<'_>,
    daemon_set: &Value,
    pods: &[&Value],
    nodes: &NodeSet,
    revisions: &[&Value],
) {
    let template = daemon_set
        .pointer("/spec/template")
        .cloned()
        .unwrap_or(Value::Null);
    let collisions = daemon_set
        .pointer("/status/collisionCount")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let hash = pod_template_hash(&template, collisions);
    let min_ready = daemon_set
        .pointer("/spec/minReadySeconds")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let owned = owned_by(daemon_set, pods);
    let name = meta(daemon_set, "name");
    let live: BTreeSet<String> = owned
        .iter()
        .filter_map(|p| {
            p.pointer(&format!("/metadata/labels/{REVISION_HASH}"))
                .and_then(Value::as_str)
        })
        .map(|h| format!("{name}-{h}"))
        .collect();
    controller_history::record(
        writer,
        &Revision {
            owner: daemon_set,
            name: &format!("{name}-{hash}"),
            hash_label: (REVISION_HASH, &hash),
        },
        revisions,
        &live,
    );
    let mut by_node: BTreeMap<&str, Vec<&Value>> = BTreeMap::new();
    for pod in &owned {
        by_node.entry(target_node(pod)).or_default().push(pod);
    }
    let event = |kind: &str, reason: &str, message: String| {
        writer.record_event(
            &EventFor {
                involved: daemon_set,
                component: COMPONENT,
                action: "",
            },
            kind,
            reason,
            &message,
        );
    };
    let delete = |pod: &Value| {
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
    };
    let on_delete = daemon_set
        .pointer("/spec/updateStrategy/type")
        .and_then(Value::as_str)
        == Some("OnDelete");
    let mut counts = Counts::default();
    let mut outdated: Vec<&Value> = Vec::new();
    let eligible: Vec<&NodeInfo> = nodes
        .nodes
        .iter()
        .filter(|n| should_run(daemon_set, &hash, n))
        .collect();
    for node in &eligible {
        counts.desired += 1;
        let on_node = by_node.remove(node.name.as_str()).unwrap_or_default();
        let terminating = on_node
            .iter()
            .any(|p| p.pointer("/metadata/deletionTimestamp").is_some());
        let mut running: Vec<&Value> = Vec::new();
        for pod in on_node
            .iter()
            .filter(|p| p.pointer("/metadata/deletionTimestamp").is_none())
        {
            if pod.pointer("/status/phase").and_then(Value::as_str) == Some("Failed") {
                delete(pod);
            } else {
                running.push(pod);
            }
        }
        if running.is_empty() {
            if !terminating {
                let mut targeted = (*daemon_set).clone();
                if let Some(spec) = targeted.get_mut("spec").and_then(Value::as_object_mut) {
                    spec.insert(
                        "template".to_owned(),
                        template_for(daemon_set, &hash, Some(&node.name)),
                    );
                }
                let prefix = format!("{}-", meta(daemon_set, "name"));
                match create_pod_from_template(writer, &targeted, &prefix) {
                    Some(pod) => event(
                        "Normal",
                        "SuccessfulCreate",
                        format!("Created pod: {}", meta(&pod, "name")),
                    ),
                    None => event(
                        "Warning",
                        "FailedCreate",
                        "Error creating: the Pod was refused".to_owned(),
                    ),
                }
            }
            counts.unavailable += 1;
            continue;
        }
        counts.current += 1;
        // The oldest stays; any other is one too many.
        running.sort_by_key(|p| {
            (
                meta(p, "creationTimestamp").to_owned(),
                meta(p, "name").to_owned(),
            )
        });
        for extra in &running[1..] {
            delete(extra);
        }
        let pod = running[0];
        let current = pod
            .pointer(&format!("/metadata/labels/{REVISION_HASH}"))
            .and_then(Value::as_str)
            == Some(hash.as_str());
        if current {
            counts.updated += 1;
        } else {
            outdated.push(pod);
        }
        if is_ready(pod) {
            counts.ready += 1;
        }
        if is_available(pod, min_ready) {
            counts.available += 1;
        } else {
            counts.unavailable += 1;
        }
    }
    // Pods on nodes that should not run them (or on no node known) go.
    for pods in by_node.values() {
        for pod in pods
            .iter()
            .filter(|p| p.pointer("/metadata/deletionTimestamp").is_none())
        {
            counts.misscheduled += 1;
            delete(pod);
        }
    }
    if !on_delete {
        let max_unavailable = scaled_value(
            daemon_set
                .pointer("/spec/updateStrategy/rollingUpdate/maxUnavailable")
                .or(Some(&json!(1))),
            i64::try_from(counts.desired).unwrap_or(i64::MAX),
            true,
        )
        .max(1);
        let mut unavailable = i64::try_from(counts.unavailable).unwrap_or(i64::MAX);
        for pod in outdated {
            if !is_available(pod, min_ready) {
                delete(pod);
            } else if unavailable < max_unavailable {
                delete(pod);
                unavailable += 1;
            }
        }
    }
    write_status(writer, daemon_set, &counts);
}

/// What the status counts, per node.
#[derive(Default)]
struct Counts {
    desired: usize,
    current: usize,
    misscheduled: usize,
    ready: usize,
    available: usize,
    updated: usize,
    unavailable: usize,
}

fn write_status(writer: &Writer<'_>, daemon_set: &Value, counts: &Counts) {
    let mut status = json!({
        "desiredNumberScheduled": counts.desired,
        "currentNumberScheduled": counts.current,
        "numberMisscheduled": counts.misscheduled,
        "numberReady": counts.ready,
        "numberAvailable": counts.available,
        "updatedNumberScheduled": counts.updated,
        "numberUnavailable": counts.unavailable,
        "observedGeneration": daemon_set.pointer("/metadata/generation").cloned().unwrap_or(json!(1)),
    });
    // The four required counts stay; zero optional ones are left out (`omitempty`).
    if let Some(map) = status.as_object_mut() {
        map.retain(|key, value| {
            matches!(
                key.as_str(),
                "desiredNumberScheduled"
                    | "currentNumberScheduled"
                    | "numberMisscheduled"
                    | "numberReady"
            ) || value != &json!(0)
        });
        if let Some(collisions) = daemon_set.pointer("/status/collisionCount") {
            map.insert("collisionCount".to_owned(), collisions.clone());
        }
    }
    writer.replace_status(DAEMON_SETS, daemon_set, status);
}
