//! The Job controller's delay before it replaces a failed Pod
//! (`pkg/controller/job/backoff_utils.go`): 10 s after the first failure since the last
//! success, doubling with each further one up to 10 minutes (`DefaultJobPodFailureBackOff`,
//! `MaxJobPodFailureBackOff`), counted from the last failed Pod's finish time and scaled
//! by the cluster's time scale.

use std::time::Duration;

use serde_json::Value;

use super::cluster_options::ClusterOptions;
use super::controller_utils::meta;

/// The delay after the first failure.
const BASE: Duration = Duration::from_secs(10);
/// The longest delay.
const MAX: Duration = Duration::from_secs(600);

fn timestamp(text: Option<&str>) -> Option<jiff::Timestamp> {
    text.and_then(|t| t.parse().ok())
}

/// When `pod` finished: its containers' latest `finishedAt`, else its creation.
pub(super) fn finish_time(pod: &Value) -> Option<jiff::Timestamp> {
    ["initContainerStatuses", "containerStatuses"]
        .iter()
        .filter_map(|field| pod.pointer(&format!("/status/{field}"))?.as_array())
        .flatten()
        .filter_map(|status| timestamp(status.pointer("/state/terminated/finishedAt")?.as_str()))
        .max()
        .or_else(|| timestamp(Some(meta(pod, "creationTimestamp"))))
}

/// The unscaled delay after `failures` failures in a row.
fn delay(failures: usize) -> Duration {
    let mut delay = BASE;
    for _ in 1..failures {
        delay = delay.saturating_mul(2);
        if delay >= MAX {
            return MAX;
        }
    }
    delay
}

/// How long the Job must still wait before it creates Pods, given its failed Pods (those
/// its pod failure policy counts) and succeeded ones, at `now`.
pub(super) fn remaining(
    failed: &[&Value],
    succeeded: &[&Value],
    options: &ClusterOptions,
    now: jiff::Timestamp,
) -> Duration {
    let last_success = succeeded.iter().filter_map(|p| finish_time(p)).max();
    let failures: Vec<jiff::Timestamp> = failed
        .iter()
        .filter_map(|p| finish_time(p))
        .filter(|at| last_success.is_none_or(|success| *at > success))
        .collect();
    let Some(last_failure) = failures.iter().max() else {
        return Duration::ZERO;
    };
    let wait = options.scaled(delay(failures.len()));
    let elapsed = now.duration_since(*last_failure);
    let elapsed = Duration::try_from(elapsed).unwrap_or(Duration::ZERO);
    wait.saturating_sub(elapsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_delay_doubles_up_to_ten_minutes() {
        assert_eq!(delay(1), Duration::from_secs(10));
        assert_eq!(delay(2), Duration::from_secs(20));
        assert_eq!(delay(4), Duration::from_secs(80));
        assert_eq!(delay(7), Duration::from_secs(600));
        assert_eq!(delay(usize::MAX), Duration::from_secs(600));
    }
}
