//! The message of an unschedulable Pod (kube-scheduler's `FitError.Error()` with the
//! post-filter's diagnosis): how many nodes failed for each reason, sorted as upstream
//! sorts its histogram (by the `"<count> <reason>"` strings), then what preemption
//! found. The `PodScheduled=False` condition and the `FailedScheduling` Event carry it.

use std::collections::BTreeMap;

use super::filters::Rejection;

/// The message when the cluster has no nodes at all.
pub(super) const NO_NODES: &str = "no nodes available to schedule pods";

/// What preemption says of a node where evicting lower-priority Pods could help but
/// none are there (this scheduler never preempts).
const NO_VICTIMS: &str = "No preemption victims found for incoming pod";

/// What preemption says of a node no eviction would make fit.
const NOT_HELPFUL: &str = "Preemption is not helpful for scheduling";

/// The message for a Pod every one of whose `rejections` (one per node) kept it off.
pub(super) fn message(rejections: &[Rejection]) -> String {
    if rejections.is_empty() {
        return NO_NODES.to_owned();
    }
    let total = rejections.len();
    let mut reasons: BTreeMap<&str, usize> = BTreeMap::new();
    let mut preemption: BTreeMap<&str, usize> = BTreeMap::new();
    for rejection in rejections {
        for reason in &rejection.reasons {
            *reasons.entry(reason.as_str()).or_default() += 1;
        }
        let verdict = if rejection.resolvable {
            NO_VICTIMS
        } else {
            NOT_HELPFUL
        };
        *preemption.entry(verdict).or_default() += 1;
    }
    format!(
        "0/{total} nodes are available: {}. no new claims to deallocate, preemption: 0/{total} nodes are available: {}.",
        histogram(&reasons),
        histogram(&preemption)
    )
}

fn histogram(counts: &BTreeMap<&str, usize>) -> String {
    let mut lines: Vec<String> = counts
        .iter()
        .map(|(reason, count)| format!("{count} {reason}"))
        .collect();
    lines.sort();
    lines.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_counts_reasons_per_node_as_kube_scheduler() {
        let taint = Rejection {
            reasons: vec!["node(s) had untolerated taint(s)".to_owned()],
            resolvable: false,
        };
        let cpu = Rejection {
            reasons: vec!["Insufficient cpu".to_owned()],
            resolvable: true,
        };
        assert_eq!(
            message(&[taint, cpu.clone(), cpu]),
            "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu. \
             no new claims to deallocate, preemption: 0/3 nodes are available: \
             1 Preemption is not helpful for scheduling, 2 No preemption victims found for incoming pod."
        );
        assert_eq!(message(&[]), NO_NODES);
    }
}
