//! kube-controller-manager's Job controller (`pkg/controller/job`), its core: a Job
//! keeps up to `parallelism` Pods running until `completions` of them succeeded
//! (`Indexed`: one success per completion index, each Pod carrying its index), counts
//! failed Pods against `backoffLimit` (replacing them after the back-off delay of
//! [`job_backoff`](super::job_backoff)), applies its `podFailurePolicy`, fails past its
//! `activeDeadlineSeconds` (scaled), and ends with the conditions kube-controller-manager
//! writes since 1.31: `SuccessCriteriaMet` then `Complete`, or `FailureTarget` then
//! `Failed` (`BackoffLimitExceeded`, `PodFailurePolicy`, `DeadlineExceeded` or
//! `FailedIndexes`, its active Pods deleted). A suspended Job runs no Pods. Its status
//! counts `active`, `ready`, `succeeded` and `failed` Pods, with `startTime`,
//! `completionTime` and, for indexed Jobs, `completedIndexes` and `failedIndexes`.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::{Map, Value, json};

use super::cluster_options::ClusterOptions;
use super::controller_utils::{create_pod_from_template, is_active, is_ready, meta, owned_by};
use super::job_backoff;
use super::pod_failure_policy::{self, Action};
use super::writer::{EventFor, JOBS, PODS, Writer};
use crate::object::now;

const COMPONENT: &str = "job-controller";

/// The annotation and label naming an indexed Job's Pod's completion index.
const COMPLETION_INDEX: &str = "batch.kubernetes.io/job-completion-index";

/// The most Pods one Job creates in one pass.
const BURST: i64 = 500;

/// One pass over every Job; how soon the next is needed (`Duration::MAX`: no hurry).
pub(super) fn sync(
    writer: &Writer<'_>,
    jobs: &[&Value],
    pods: &[&Value],
    options: &ClusterOptions,
) -> Duration {
    let mut next = Duration::MAX;
    for job in jobs {
        if job.pointer("/metadata/deletionTimestamp").is_some() || finished(job) {
            continue;
        }
        next = next.min(sync_one(writer, job, pods, options));
    }
    next
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

/// The Pods of a Job, sorted by what they count for.
struct JobPods<'a> {
    active: Vec<&'a Value>,
    succeeded: Vec<&'a Value>,
    /// Failed Pods that count (not ignored by the pod failure policy).
    failed: Vec<&'a Value>,
    /// The first `FailJob` match of the pod failure policy, its message.
    fail_job: Option<String>,
    /// Indexes failed by a `FailIndex` rule.
    failed_indexes: BTreeSet<i64>,
}

impl<'a> JobPods<'a> {
    fn sort(job: &Value, pods: &[&'a Value]) -> Self {
        let owned = owned_by(job, pods);
        let mut sorted = JobPods {
            active: owned.iter().copied().filter(|p| is_active(p)).collect(),
            succeeded: owned
                .iter()
                .copied()
                .filter(|p| phase(p) == "Succeeded")
                .collect(),
            failed: Vec::new(),
            fail_job: None,
            failed_indexes: BTreeSet::new(),
        };
        let mut failed: Vec<&Value> = owned.into_iter().filter(|p| phase(p) == "Failed").collect();
        failed.sort_by_key(|p| job_backoff::finish_time(p));
        for pod in failed {
            match pod_failure_policy::action(job, pod) {
                Action::Ignore => continue,
                Action::FailJob(message) => {
                    sorted.fail_job.get_or_insert(message);
                }
                Action::FailIndex => sorted.failed_indexes.extend(index_of(pod)),
                Action::Count => {}
            }
            sorted.failed.push(pod);
        }
        sorted
    }
}

/// Syncs one Job; how soon it needs another pass (a back-off or a deadline ending).
fn sync_one(
    writer: &Writer<'_>,
    job: &Value,
    pods: &[&Value],
    options: &ClusterOptions,
) -> Duration {
    let now = jiff::Timestamp::now();
    let mut next = Duration::MAX;
    let sorted = JobPods::sort(job, pods);
    let active = &sorted.active;
    let failed = i64::try_from(sorted.failed.len()).unwrap_or(i64::MAX);
    let indexed = job.pointer("/spec/completionMode").and_then(Value::as_str) == Some("Indexed");
    let parallelism = int(job, "/spec/parallelism", 1);
    let completions = job.pointer("/spec/completions").and_then(Value::as_i64);
    let backoff_limit = int(job, "/spec/backoffLimit", 6);
    let suspended = job.pointer("/spec/suspend").and_then(Value::as_bool) == Some(true);
    let completed_indexes: BTreeSet<i64> = sorted
        .succeeded
        .iter()
        .filter_map(|p| index_of(p))
        .collect();
    let failed_indexes = &sorted.failed_indexes;
    let succeeded_count = if indexed {
        i64::try_from(completed_indexes.len()).unwrap_or(i64::MAX)
    } else {
        i64::try_from(sorted.succeeded.len()).unwrap_or(i64::MAX)
    };
    let active_count = i64::try_from(active.len()).unwrap_or(i64::MAX);
    let complete = match completions {
        Some(completions) => succeeded_count >= completions,
        // Without completions, the first success ends the Job once nothing runs.
        None => succeeded_count > 0 && active_count == 0,
    };
    let indexes_settled = indexed
        && !failed_indexes.is_empty()
        && active_count == 0
        && completions.is_some_and(|c| {
            i64::try_from(completed_indexes.union(failed_indexes).count()).unwrap_or(0) >= c
        });
    let failure = if let Some(message) = &sorted.fail_job {
        Some(("PodFailurePolicy", message.clone()))
    } else if failed > backoff_limit && failed_indexes.is_empty() {
        Some((
            "BackoffLimitExceeded",
            "Job has reached the specified backoff limit".to_owned(),
        ))
    } else if let Some(left) = deadline_left(job, options, now, suspended) {
        if left.is_zero() {
            Some((
                "DeadlineExceeded",
                "Job was active longer than specified deadline".to_owned(),
            ))
        } else {
            next = next.min(left);
            None
        }
    } else {
        None
    };
    let failure = failure.or_else(|| {
        indexes_settled.then(|| ("FailedIndexes", "Job has failed indexes".to_owned()))
    });
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
    let delete_active = || {
        for pod in active {
            writer.delete(
                PODS,
                Some(meta(pod, "namespace")),
                meta(pod, "name"),
                meta(pod, "uid"),
                None,
            );
        }
    };
    if let Some((reason, message)) = &failure {
        delete_active();
        event("Warning", reason, message.clone());
    } else if !complete && !suspended {
        let wanted = match completions {
            Some(completions) => parallelism.min(
                completions - succeeded_count - i64::try_from(failed_indexes.len()).unwrap_or(0),
            ),
            None => parallelism,
        }
        .max(0);
        let missing = (wanted - active_count).clamp(0, BURST);
        let wait = if missing > 0 {
            job_backoff::remaining(&sorted.failed, &sorted.succeeded, options, now)
        } else {
            Duration::ZERO
        };
        if wait.is_zero() {
            create_pods(writer, job, &sorted, missing, &completed_indexes, &event);
        } else {
            next = next.min(wait);
        }
    } else if suspended {
        delete_active();
    }
    if complete && failure.is_none() {
        event("Normal", "Completed", "Job completed".to_owned());
    }
    let ready = active.iter().filter(|p| is_ready(p)).count();
    write_status(
        writer,
        job,
        Counts {
            active: if failure.is_some() || complete {
                0
            } else {
                active_count
            },
            ready: i64::try_from(ready).unwrap_or(0),
            succeeded: succeeded_count,
            failed,
            completed_indexes: indexed.then_some(&completed_indexes),
            failed_indexes: indexed.then_some(failed_indexes),
            outcome: if let Some((reason, message)) = failure {
                Some(Outcome::Failed { reason, message })
            } else if complete {
                Some(Outcome::Complete)
            } else {
                None
            },
            suspended,
        },
    );
    next
}

/// How long the Job may still run by its `activeDeadlineSeconds` (scaled), counted from
/// its `startTime`; `None` without a deadline or while suspended.
fn deadline_left(
    job: &Value,
    options: &ClusterOptions,
    now: jiff::Timestamp,
    suspended: bool,
) -> Option<Duration> {
    let seconds = job
        .pointer("/spec/activeDeadlineSeconds")
        .and_then(Value::as_u64)?;
    if suspended {
        return None;
    }
    let started: jiff::Timestamp = job
        .pointer("/status/startTime")
        .and_then(Value::as_str)
        .and_then(|t| t.parse().ok())
        .unwrap_or(now);
    let elapsed = Duration::try_from(now.duration_since(started)).unwrap_or(Duration::ZERO);
    Some(
        options
            .scaled(Duration::from_secs(seconds))
            .saturating_sub(elapsed),
    )
}

/// Creates up to `missing` Pods (indexed Jobs: for the indexes neither done, failed nor
/// running).
fn create_pods(
    writer: &Writer<'_>,
    job: &Value,
    sorted: &JobPods<'_>,
    missing: i64,
    completed_indexes: &BTreeSet<i64>,
    event: &dyn Fn(&str, &str, String),
) {
    let indexed = job.pointer("/spec/completionMode").and_then(Value::as_str) == Some("Indexed");
    let completions = job.pointer("/spec/completions").and_then(Value::as_i64);
    let prefix = format!("{}-", meta(job, "name"));
    let busy: BTreeSet<i64> = sorted.active.iter().filter_map(|p| index_of(p)).collect();
    let mut free_indexes = (0..completions.unwrap_or(0)).filter(|i| {
        !completed_indexes.contains(i) && !busy.contains(i) && !sorted.failed_indexes.contains(i)
    });
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

#[derive(Clone, PartialEq, Eq)]
enum Outcome {
    Complete,
    /// `FailureTarget` then `Failed`, with this reason and message.
    Failed {
        reason: &'static str,
        message: String,
    },
}

struct Counts<'a> {
    active: i64,
    ready: i64,
    succeeded: i64,
    failed: i64,
    completed_indexes: Option<&'a BTreeSet<i64>>,
    failed_indexes: Option<&'a BTreeSet<i64>>,
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
    if let Some(indexes) = counts.failed_indexes.filter(|i| !i.is_empty()) {
        status.insert("failedIndexes".to_owned(), json!(index_ranges(indexes)));
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
        Some(Outcome::Failed { reason, message }) => {
            status.insert(
                "conditions".to_owned(),
                json!([
                    condition("FailureTarget", reason, &message),
                    condition("Failed", reason, &message),
                ]),
            );
        }
        None => {}
    }
    writer.replace_status(JOBS, job, Value::Object(status));
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
