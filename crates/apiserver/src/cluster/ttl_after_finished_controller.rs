//! kube-controller-manager's TTL-after-finished controller
//! (`pkg/controller/ttlafterfinished`): a finished Job (`Complete` or `Failed`) with
//! `ttlSecondsAfterFinished` is deleted, with propagation `Background` (the garbage
//! collector removes its Pods), that many seconds (scaled) after it finished: the
//! `lastTransitionTime` of its finishing condition.

use std::time::Duration;

use serde_json::Value;

use super::cluster_options::ClusterOptions;
use super::writer::{JOBS, Writer};

/// When `job` finished: its `Complete` or `Failed` condition's transition time.
fn finished_at(job: &Value) -> Option<jiff::Timestamp> {
    job.pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| (c["type"] == "Complete" || c["type"] == "Failed") && c["status"] == "True")
        .and_then(|c| c["lastTransitionTime"].as_str())
        .and_then(|t| t.parse().ok())
}

/// One pass over every Job; how soon the next Job expires (`Duration::MAX`: none).
pub(super) fn sync(writer: &Writer<'_>, jobs: &[&Value], options: &ClusterOptions) -> Duration {
    let now = jiff::Timestamp::now();
    let mut next = Duration::MAX;
    for job in jobs {
        let Some(ttl) = job
            .pointer("/spec/ttlSecondsAfterFinished")
            .and_then(Value::as_u64)
        else {
            continue;
        };
        if job.pointer("/metadata/deletionTimestamp").is_some() {
            continue;
        }
        let Some(finished) = finished_at(job) else {
            continue;
        };
        let elapsed = Duration::try_from(now.duration_since(finished)).unwrap_or(Duration::ZERO);
        let left = options
            .scaled(Duration::from_secs(ttl))
            .saturating_sub(elapsed);
        if left.is_zero() {
            writer.delete_in_background(JOBS, job);
        } else {
            next = next.min(left);
        }
    }
    next
}
