//! A Job's `podFailurePolicy` (`pkg/controller/job/pod_failure_policy.go`): the first
//! rule a failed Pod matches, by a container's non-zero exit code (`onExitCodes`, `In` or
//! `NotIn`, optionally for one container) or a Pod condition (`onPodConditions`), decides
//! what its failure does: `FailJob`, `Ignore` (not counted, replaced), `FailIndex` or
//! `Count` (the default, as without a policy).

use serde_json::Value;

use super::controller_utils::meta;

/// What a failed Pod's failure does to its Job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Action {
    /// The Job fails at once; the message says which rule matched.
    FailJob(String),
    /// The failure is not counted.
    Ignore,
    /// The Pod's completion index fails (indexed Jobs).
    FailIndex,
    /// The failure counts against `backoffLimit`.
    Count,
}

/// What the failure of `pod` does under `job`'s pod failure policy.
pub(super) fn action(job: &Value, pod: &Value) -> Action {
    let rules = job
        .pointer("/spec/podFailurePolicy/rules")
        .and_then(Value::as_array);
    for (index, rule) in rules.into_iter().flatten().enumerate() {
        let kind = rule["action"].as_str().unwrap_or("");
        let matched = if let Some(requirement) = rule.get("onExitCodes") {
            exit_code_match(requirement, pod).map(|(container, code)| {
                format!(
                    "Container {container} for pod {}/{} failed with exit code {code} matching {kind} rule at index {index}",
                    meta(pod, "namespace"),
                    meta(pod, "name"),
                )
            })
        } else if let Some(patterns) = rule.get("onPodConditions").and_then(Value::as_array) {
            condition_match(patterns, pod).map(|condition| {
                format!(
                    "Pod {}/{} has condition {condition} matching {kind} rule at index {index}",
                    meta(pod, "namespace"),
                    meta(pod, "name"),
                )
            })
        } else {
            None
        };
        let Some(message) = matched else {
            continue;
        };
        return match kind {
            "FailJob" => Action::FailJob(message),
            "Ignore" => Action::Ignore,
            "FailIndex" => Action::FailIndex,
            _ => Action::Count,
        };
    }
    Action::Count
}

/// The container and exit code a rule's `onExitCodes` matches (containers first, then
/// init containers; exit code 0 never matches).
fn exit_code_match<'a>(requirement: &Value, pod: &'a Value) -> Option<(&'a str, i64)> {
    let only = requirement["containerName"].as_str();
    let values: Vec<i64> = requirement["values"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_i64)
        .collect();
    let within = match requirement["operator"].as_str() {
        Some("In") => true,
        Some("NotIn") => false,
        _ => return None,
    };
    ["containerStatuses", "initContainerStatuses"]
        .iter()
        .filter_map(|field| pod.pointer(&format!("/status/{field}"))?.as_array())
        .flatten()
        .find_map(|status| {
            let name = status["name"].as_str().unwrap_or("");
            let code = status.pointer("/state/terminated/exitCode")?.as_i64()?;
            (code != 0 && only.is_none_or(|o| o == name) && values.contains(&code) == within)
                .then_some((name, code))
        })
}

/// The Pod condition type one of `patterns` matches (`status` defaults to `True`).
fn condition_match<'a>(patterns: &[Value], pod: &'a Value) -> Option<&'a str> {
    let conditions = pod.pointer("/status/conditions")?.as_array()?;
    patterns.iter().find_map(|pattern| {
        let status = pattern["status"].as_str().unwrap_or("True");
        conditions
            .iter()
            .find(|c| c["type"] == pattern["type"] && c["status"] == status)
            .and_then(|c| c["type"].as_str())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn failed_pod(code: i64) -> Value {
        json!({
            "metadata": {"name": "p", "namespace": "ns"},
            "status": {"phase": "Failed", "containerStatuses": [
                {"name": "main", "state": {"terminated": {"exitCode": code}}}
            ], "conditions": [{"type": "DisruptionTarget", "status": "True"}]},
        })
    }

    #[test]
    fn the_first_matching_rule_decides() {
        let job = json!({"spec": {"podFailurePolicy": {"rules": [
            {"action": "Ignore", "onPodConditions": [{"type": "Other"}]},
            {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}},
            {"action": "Ignore", "onExitCodes": {"operator": "NotIn", "values": [42]}},
        ]}}});
        assert_eq!(
            action(&job, &failed_pod(42)),
            Action::FailJob(
                "Container main for pod ns/p failed with exit code 42 matching FailJob rule at index 1"
                    .to_owned()
            )
        );
        assert_eq!(action(&job, &failed_pod(1)), Action::Ignore);
        assert_eq!(action(&json!({}), &failed_pod(1)), Action::Count);
        let by_condition = json!({"spec": {"podFailurePolicy": {"rules": [
            {"action": "FailJob", "onPodConditions": [{"type": "DisruptionTarget"}]},
        ]}}});
        assert_eq!(
            action(&by_condition, &failed_pod(1)),
            Action::FailJob(
                "Pod ns/p has condition DisruptionTarget matching FailJob rule at index 0"
                    .to_owned()
            )
        );
    }
}
