//! The printers of workloads: Deployments, ReplicaSets, StatefulSets, DaemonSets, Jobs
//! and CronJobs.

use super::*;

pub(crate) const DEPLOYMENT: &[Column] = &[
    col("Ready", "string", |o| {
        json!(format!(
            "{}/{}",
            int(o, "/status/readyReplicas"),
            int(o, "/spec/replicas")
        ))
    }),
    col("Up-to-date", "string", |o| {
        json!(int(o, "/status/updatedReplicas"))
    }),
    col("Available", "string", |o| {
        json!(int(o, "/status/availableReplicas"))
    }),
    col("Age", "string", age),
    wide("Containers", "string", containers),
    wide("Images", "string", images),
    wide("Selector", "string", selector),
];

pub(crate) const REPLICA_SET: &[Column] = &[
    col("Desired", "integer", |o| json!(int(o, "/spec/replicas"))),
    col("Current", "integer", |o| json!(int(o, "/status/replicas"))),
    col("Ready", "integer", |o| {
        json!(int(o, "/status/readyReplicas"))
    }),
    col("Age", "string", age),
    wide("Containers", "string", containers),
    wide("Images", "string", images),
    wide("Selector", "string", selector),
];

pub(crate) const STATEFUL_SET: &[Column] = &[
    col("Ready", "string", |o| {
        json!(format!(
            "{}/{}",
            int(o, "/status/readyReplicas"),
            int(o, "/spec/replicas")
        ))
    }),
    col("Age", "string", age),
    wide("Containers", "string", containers),
    wide("Images", "string", images),
];

pub(crate) const DAEMON_SET: &[Column] = &[
    col("Desired", "integer", |o| {
        json!(int(o, "/status/desiredNumberScheduled"))
    }),
    col("Current", "integer", |o| {
        json!(int(o, "/status/currentNumberScheduled"))
    }),
    col("Ready", "integer", |o| json!(int(o, "/status/numberReady"))),
    col("Up-to-date", "integer", |o| {
        json!(int(o, "/status/updatedNumberScheduled"))
    }),
    col("Available", "integer", |o| {
        json!(int(o, "/status/numberAvailable"))
    }),
    col("Node Selector", "string", |o| {
        map_text(field(o, "/spec/template/spec/nodeSelector"))
    }),
    col("Age", "string", age),
    wide("Containers", "string", containers),
    wide("Images", "string", images),
    wide("Selector", "string", selector),
];

pub(crate) const JOB: &[Column] = &[
    col("Completions", "string", job_completions),
    col("Duration", "string", job_duration),
    col("Age", "string", age),
    wide("Containers", "string", containers),
    wide("Images", "string", images),
    wide("Selector", "string", selector),
];

fn job_completions(job: &Value) -> Value {
    let succeeded = int(job, "/status/succeeded");
    let text = match field(job, "/spec/completions").as_i64() {
        Some(completions) => format!("{succeeded}/{completions}"),
        None => match int(job, "/spec/parallelism") {
            parallelism if parallelism > 1 => format!("{succeeded}/1 of {parallelism}"),
            _ => format!("{succeeded}/1"),
        },
    };
    Value::String(text)
}

fn job_duration(job: &Value) -> Value {
    let seconds = |pointer: &str| {
        field(job, pointer)
            .as_str()
            .and_then(|t| t.parse::<Timestamp>().ok())
            .map(|t| t.as_second())
    };
    let Some(start) = seconds("/status/startTime") else {
        return Value::String(String::new());
    };
    let end = seconds("/status/completionTime").unwrap_or_else(|| Timestamp::now().as_second());
    Value::String(human_duration(end.saturating_sub(start)))
}

pub(crate) const CRON_JOB: &[Column] = &[
    col("Schedule", "string", |o| json!(text(o, "/spec/schedule"))),
    col("Suspend", "boolean", |o| {
        json!(field(o, "/spec/suspend").as_bool().unwrap_or(false))
    }),
    col("Active", "integer", |o| {
        json!(items(o, "/status/active").len())
    }),
    col("Last Schedule", "string", |o| {
        match field(o, "/status/lastScheduleTime").as_str() {
            Some(time) => Value::String(human_age(time)),
            None => or_none(""),
        }
    }),
    col("Age", "string", age),
    wide("Containers", "string", |o| {
        template_containers(field(o, "/spec/jobTemplate"), "name")
    }),
    wide("Images", "string", |o| {
        template_containers(field(o, "/spec/jobTemplate"), "image")
    }),
    wide("Selector", "string", |o| {
        or_none(&selector_text(field(o, "/spec/jobTemplate/spec/selector")))
    }),
];

// --- Services and networking --------------------------------------------------------
