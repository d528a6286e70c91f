//! kube-controller-manager's Job controller (`pkg/controller/job`), its core: a Job
//! keeps up to `parallelism` Pods running until `completions` of them succeeded
//! (`Indexed`: one success per completion index, each Pod carrying its index), counts
//! failed Pods against `backoffLimit`, and ends with the conditions kube-controller-manager
//! writes since 1.31: `SuccessCriteriaMet` then `Complete`, or `FailureTarget` then
//! `Failed` (`BackoffLimitExceeded`, its active Pods deleted). A suspended Job runs no
//! Pods. Its status counts `active`, `ready`, `succeeded` and `failed` Pods, with
//! `startTime`, `completionTime` and, for indexed Jobs, `completedIndexes`.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use super::controller_utils::{create_pod_from_template, is_active, is_ready, meta, owned_by};
use super::writer::{EventFor, JOBS, PODS, Writer};
use crate::object::now;

const COMPONENT: &str = "job-controller";

/// The annotation and label naming an indexed Job's Pod's completion index.
const COMPLETION_INDEX: &str = "batch.kubernetes.io/job-completion-index";

/// The most Pods one Job creates in one pass.
const BURST: i64 = 500;

/// One pass over every Job.
pub(super) fn sync(writer: &Writer<'_>, jobs: &[&Value], pods: &[&Value]) {
    for job in jobs {
        if job.pointer("/metadata/deletionTimestamp").is_some() || finished(job) {
            continue;
        }
        sync_one(writer, job, pods);
    }
}

fn int(object: &Value, pointer: &str, default: i64) -> i64 {
    object
        .pointer(pointer)
        .and_then(Value::as_i64)
        .unwrap_or(default)
}

fn has_condition(job: &Value, kind: &str) -> bool {
    job.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|c| c.iter().any(|c| c["type"] == kind && c["status"] == "True"))
}

fn finished(job: &Value) -> bool {
    has_condition(job, "Complete") || has_condition(job, "Failed")
}

fn phase(pod: &Value) -> &str {
    pod.pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn index_of(pod: &Value) -> Option<i64> {
    pod.pointer("/metadata/annotations")
        .and_then(|a| a.get(COMPLETION_INDEX))
        .and_then(Value::as_str)
        .and_then(|i| i.parse().ok())
}

fn sync_one(writer: &Writer<'_>, job: &Value, pods: &[&Value]) {
    let owned = owned_by(job, pods);
    let active: Vec<&Value> = owned.iter().copied().filter(|p| is_active(p)).collect();
    let succeeded: Vec<&Value> = owned
        .iter()
        .copied()
        .filter(|p| phase(p) == "Succeeded")
        .collect();
    let failed =
        i64::try_from(owned.iter().filter(|p| phase(p) == "Failed").count()).unwrap_or(i64::MAX);
    let indexed = job.pointer("/spec/completionMode").and_then(Value::as_str) == Some("Indexed");
    let parallelism = int(job, "/spec/parallelism", 1);
    let completions = job.pointer("/spec/completions").and_then(Value::as_i64);
    let backoff_limit = int(job, "/spec/backoffLimit", 6);
    let suspended = job.pointer("/spec/suspend").and_then(Value::as_bool) == Some(true);
    let completed_indexes: BTreeSet<i64> = succeeded.iter().filter_map(|p| index_of(p)).collect();
    let succeeded_count = if indexed {
        i64::try_from(completed_indexes.len()).unwrap_or(i64::MAX)
    } else {
        i64::try_from(succeeded.len()).unwrap_or(i64::MAX)
    };
    let active_count = i64::try_from(active.len()).unwrap_or(i64::MAX);
    let complete = match completions {
        Some(completions) => succeeded_count >= completions,
        // Without completions, the first success ends the Job once nothing runs.
        None => succeeded_count > 0 && active_count == 0,
    };
    let failing = failed > backoff_limit;
    let event = |kind: &str, reason: &str, message: String| {
        writer.record_event(
            &EventFor {
                involved: job,
                component: COMPONENT,
                action: "",
            },
            kind,
            reason,
            &message,
        );
    };
    if failing {
        for pod in &active {
            writer.delete(
                PODS,
                Some(meta(pod, "namespace")),
                meta(pod, "name"),
                meta(pod, "uid"),
                None,
            );
        }
        event(
            "Warning",
            "BackoffLimitExceeded",
            "Job has reached the specified backoff limit".to_owned(),
        );
    } else if !complete && !suspended {
        let wanted = match completions {
            Some(completions) => parallelism.min(completions - succeeded_count),
            None => parallelism,
        }
        .max(0);
        let missing = (wanted - active_count).clamp(0, BURST);
        let prefix = format!("{}-", meta(job, "name"));
        let busy: BTreeSet<i64> = active.iter().filter_map(|p| index_of(p)).collect();
        let mut free_indexes = (0..completions.unwrap_or(0))
            .filter(|i| !completed_indexes.contains(i) && !busy.contains(i));
        for _ in 0..missing {
            let created = if indexed {
                let Some(index) = free_indexes.next() else {
                    break;
                };
                create_indexed_pod(writer, job, index)
            } else {
                create_pod_from_template(writer, job, &prefix)
            };
            match created {
                Some(pod) => event(
                    "Normal",
                    "SuccessfulCreate",
                    format!("Created pod: {}", meta(&pod, "name")),
                ),
                None => break,
            }
        }
    } else if suspended {
        for pod in &active {
            writer.delete(
                PODS,
                Some(meta(pod, "namespace")),
                meta(pod, "name"),
                meta(pod, "uid"),
                None,
            );
        }
    }
    if complete && !failing {
        event("Normal", "Completed", "Job completed".to_owned());
    }
    let ready = active.iter().filter(|p| is_ready(p)).count();
    write_status(
        writer,
        job,
        Counts {
            active: if failing || complete { 0 } else { active_count },
            ready: i64::try_from(ready).unwrap_or(0),
            succeeded: succeeded_count,
            failed,
            completed_indexes: indexed.then_some(&completed_indexes),
            outcome: if failing {
                Some(Outcome::Failed)
            } else if complete {
                Some(Outcome::Complete)
            } else {
                None
            },
            suspended,
        },
    );
}

fn create_indexed_pod(writer: &Writer<'_>, job: &Value, index: i64) -> Option<Value> {
    let mut indexed = job.clone();
    if let Some(template) = indexed.pointer_mut("/spec/template") {
        let metadata = template
            .as_object_mut()
            .map(|t| t.entry("metadata").or_insert_with(|| json!({})));
        if let Some(Value::Object(metadata)) = metadata {
            for field in ["annotations", "labels"] {
                let map = metadata.entry(field).or_insert_with(|| json!({}));
                if let Some(map) = map.as_object_mut() {
                    map.insert(COMPLETION_INDEX.to_owned(), json!(index.to_string()));
                }
            }
        }
        if let Some(Value::Array(containers)) = template.pointer_mut("/spec/containers") {
            for container in containers {
                let env = container
                    .as_object_mut()
                    .map(|c| c.entry("env").or_insert_with(|| json!([])));
                if let Some(Value::Array(env)) = env {
                    env.push(json!({"name": "JOB_COMPLETION_INDEX", "value": index.to_string()}));
                }
            }
        }
    }
    let prefix = format!("{}-{index}-", meta(job, "name"));
    create_pod_from_template(writer, &indexed, &prefix)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Complete,
    Failed,
}

struct Counts<'a> {
    active: i64,
    ready: i64,
    succeeded: i64,
    failed: i64,
    completed_indexes: Option<&'a BTreeSet<i64>>,
    outcome: Option<Outcome>,
    suspended: bool,
}

/// `1,3-5`: the completed indexes as kube-controller-manager writes them.
fn index_ranges(indexes: &BTreeSet<i64>) -> String {
    let mut ranges: Vec<(i64, i64)> = Vec::new();
    for &index in indexes {
        match ranges.last_mut() {
            Some((_, end)) if *end + 1 == index => *end = index,
            _ => ranges.push((index, index)),
        }
    }
    ranges
        .iter()
        .map(|(start, end)| {
            if start == end {
                start.to_string()
            } else {
                format!("{start}-{end}")
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

fn write_status(writer: &Writer<'_>, job: &Value, counts: Counts<'_>) {
    let time = now();
    let mut status: Map<String, Value> = job
        .get("status")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    if !counts.suspended {
        status.entry("startTime").or_insert_with(|| json!(time));
    }
    for (key, value) in [
        ("active", counts.active),
        ("ready", counts.ready),
        ("succeeded", counts.succeeded),
        ("failed", counts.failed),
    ] {
        if value == 0 && key != "ready" {
            status.remove(key);
        } else {
            status.insert(key.to_owned(), json!(value));
        }
    }
    status.insert("uncountedTerminatedPods".to_owned(), json!({}));
    if let Some(indexes) = counts.completed_indexes.filter(|i| !i.is_empty()) {
        status.insert("completedIndexes".to_owned(), json!(index_ranges(indexes)));
    }
    let condition = |kind: &str, reason: &str, message: &str| {
        json!({
            "type": kind, "status": "True", "reason": reason, "message": message,
            "lastProbeTime": time, "lastTransitionTime": time,
        })
    };
    match counts.outcome {
        Some(Outcome::Complete) => {
            status.insert("completionTime".to_owned(), json!(time));
            status.insert(
                "conditions".to_owned(),
                json!([
                    condition(
                        "SuccessCriteriaMet",
                        "CompletionsReached",
                        "Reached expected number of succeeded pods"
                    ),
                    condition(
                        "Complete",
                        "CompletionsReached",
                        "Reached expected number of succeeded pods"
                    ),
                ]),
            );
        }
        Some(Outcome::Failed) => {
            status.insert(
                "conditions".to_owned(),
                json!([
                    condition(
                        "FailureTarget",
                        "BackoffLimitExceeded",
                        "Job has reached the specified backoff limit"
                    ),
                    condition(
                        "Failed",
                        "BackoffLimitExceeded",
                        "Job has reached the specified backoff limit"
                    ),
                ]),
            );
        }
        None => {}
    }
    let status = Value::Object(status);
    if job.get("status") == Some(&status) {
        return;
    }
    writer.update(
        JOBS,
        Some(meta(job, "namespace")),
        meta(job, "name"),
        meta(job, "uid"),
        true,
        |object| {
            object.insert("status".to_owned(), status.clone());
            true
        },
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completed_indexes_are_written_as_ranges() {
        let indexes: BTreeSet<i64> = [0, 1, 2, 4, 6, 7].into_iter().collect();
        assert_eq!(index_ranges(&indexes), "0-2,4,6-7");
        assert_eq!(index_ranges(&BTreeSet::new()), "");
    }
}
