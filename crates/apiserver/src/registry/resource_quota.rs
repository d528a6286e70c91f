//! ResourceQuota usage (`pkg/quota/v1/evaluator/core`): what an object uses of each
//! resource a quota names, and what a namespace's stored objects use in total. Shared by
//! kube-apiserver's quota admission (the store's create) and kube-controller-manager's
//! resource quota controller (the simulated cluster).
//!
//! Object counts (`pods`, `services`, `configmaps`, `secrets`, `persistentvolumeclaims`,
//! `replicationcontrollers`, `resourcequotas`, `services.loadbalancers`,
//! `services.nodeports`, `count/<resource>[.<group>]`), the compute resources of
//! non-terminal Pods (`requests.cpu`, `requests.memory`, `limits.cpu`, `limits.memory`;
//! bare `cpu`/`memory` are requests) and `requests.storage` of claims. A quota with
//! scopes (`spec.scopes`, `spec.scopeSelector`) counts only the Pods they select
//! (`Terminating`, `NotTerminating`, `BestEffort`, `NotBestEffort`, `PriorityClass`) and
//! nothing else, as the generic evaluators match no scope.

use std::collections::BTreeMap;
use std::sync::Arc;

use kubeclient_machinery::GroupResource;
use serde_json::{Map, Value};

use crate::quantity;
use crate::storage::{Store, StoredObject};

/// An amount of a resource, exact to the milli-unit, with the notation it is written in
/// (binary `Ki`/`Mi`/... or decimal), as a `resource.Quantity` keeps its format.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Amount {
    milli: i128,
    binary: bool,
}

impl Amount {
    /// A count.
    fn count(n: usize) -> Self {
        Amount {
            milli: i128::try_from(n).unwrap_or(i128::MAX / 2) * 1000,
            binary: false,
        }
    }

    /// A quantity in JSON (`"500m"`, `"1Gi"`, a bare number), if it is one.
    pub(crate) fn from_json(value: &Value) -> Option<Self> {
        let number = quantity::from_json(value)?;
        let binary = value.as_str().is_some_and(|t| t.trim_end().ends_with('i'));
        // Bounded: at most about 1.7e35 milli-units survive the conversion.
        let milli = (number * 1000.0).round();
        (milli.abs() < 1e35).then_some(Amount {
            milli: milli as i128,
            binary,
        })
    }

    /// The sum, in the notation of `self` (as `Quantity.Add` keeps the receiver's).
    fn plus(self, other: Amount) -> Self {
        Amount {
            milli: self.milli.saturating_add(other.milli),
            binary: self.binary,
        }
    }

    fn is_zero(self) -> bool {
        self.milli == 0
    }
}

impl std::fmt::Display for Amount {
    /// The canonical text `resource.Quantity` writes: `750m`, `2`, `192Mi`, `1k`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.milli % 1000 != 0 {
            return write!(f, "{}m", self.milli);
        }
        let units = self.milli / 1000;
        if units == 0 {
            return f.write_str("0");
        }
        let (base, suffixes): (i128, &[&str]) = if self.binary {
            (1024, &["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"])
        } else {
            (1000, &["k", "M", "G", "T", "P", "E"])
        };
        let (mut value, mut suffix) = (units, "");
        for next in suffixes {
            if value % base != 0 {
                break;
            }
            value /= base;
            suffix = next;
        }
        write!(f, "{value}{suffix}")
    }
}

/// The resource (group, plural) whose objects a quota's resource name counts, if any.
pub(crate) fn counted_resource(name: &str) -> Option<(String, String)> {
    let core = |plural: &str| Some((String::new(), plural.to_owned()));
    match name {
        "pods" | "requests.cpu" | "requests.memory" | "limits.cpu" | "limits.memory" | "cpu"
        | "memory" => core("pods"),
        "services" | "services.loadbalancers" | "services.nodeports" => core("services"),
        "persistentvolumeclaims" | "requests.storage" => core("persistentvolumeclaims"),
        "configmaps" | "secrets" | "replicationcontrollers" | "resourcequotas" => core(name),
        _ => {
            let resource = name.strip_prefix("count/")?;
            let (plural, group) = resource.split_once('.').unwrap_or((resource, ""));
            (!plural.is_empty()).then(|| (group.to_owned(), plural.to_owned()))
        }
    }
}

/// Whether a Pod counts against quota (`QuotaV1Pod`): not `Succeeded` or `Failed`, and
/// not past its deletion's grace period.
fn pod_counts(pod: &Value) -> bool {
    let phase = pod.pointer("/status/phase").and_then(Value::as_str);
    if matches!(phase, Some("Succeeded" | "Failed")) {
        return false;
    }
    let deleted = pod
        .pointer("/metadata/deletionTimestamp")
        .and_then(Value::as_str)
        .and_then(|t| t.parse::<jiff::Timestamp>().ok());
    let grace = pod
        .pointer("/metadata/deletionGracePeriodSeconds")
        .and_then(Value::as_i64);
    match (deleted, grace) {
        (Some(deleted), Some(grace)) => deleted
            .checked_add(jiff::SignedDuration::from_secs(grace))
            .is_ok_and(|end| jiff::Timestamp::now() <= end),
        _ => true,
    }
}

/// A Pod's `kind` (`requests` or `limits`) of `resource`: the sum over its containers, at
/// least the largest of an init container, plus its overhead; `None` when nothing names it.
fn pod_resource(pod: &Value, kind: &str, resource: &str) -> Option<Amount> {
    let of = |container: &Value| {
        container
            .get("resources")
            .and_then(|r| r.get(kind))
            .and_then(|r| r.get(resource))
            .and_then(Amount::from_json)
    };
    let list = |field: &str| {
        pod.pointer(&format!("/spec/{field}"))
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default()
    };
    let sum = list("containers")
        .iter()
        .filter_map(of)
        .reduce(Amount::plus);
    let init = list("initContainers")
        .iter()
        .filter_map(of)
        .reduce(|a, b| if b.milli > a.milli { b } else { a });
    let total = match (sum, init) {
        (Some(sum), Some(init)) if init.milli > sum.milli => Some(init),
        (None, init) => init,
        (sum, _) => sum,
    }?;
    let overhead = pod
        .pointer(&format!("/spec/overhead/{resource}"))
        .and_then(Amount::from_json);
    Some(overhead.map_or(total, |o| total.plus(o)))
}

/// What `object` (of `group`/`plural`) uses of the quota resource `name`: `None` when it
/// uses none of it (another resource, or a terminal Pod).
pub(crate) fn object_usage(
    name: &str,
    group: &str,
    plural: &str,
    object: &Value,
) -> Option<Amount> {
    let (counted_group, counted_plural) = counted_resource(name)?;
    if counted_group != group || counted_plural != plural {
        return None;
    }
    // `count/pods` counts every stored Pod; the rest only those not at their end.
    if group.is_empty() && plural == "pods" && !name.starts_with("count/") && !pod_counts(object) {
        return None;
    }
    let spec = |field: &str| object.pointer(&format!("/spec/{field}"));
    match name {
        "requests.cpu" | "cpu" => pod_resource(object, "requests", "cpu"),
        "requests.memory" | "memory" => pod_resource(object, "requests", "memory"),
        "limits.cpu" => pod_resource(object, "limits", "cpu"),
        "limits.memory" => pod_resource(object, "limits", "memory"),
        "requests.storage" => spec("resources/requests/storage").and_then(Amount::from_json),
        "services.loadbalancers" => Some(Amount::count(usize::from(
            spec("type").and_then(Value::as_str) == Some("LoadBalancer"),
        ))),
        "services.nodeports" => {
            let ports = spec("ports")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or_default();
            let count = match spec("type").and_then(Value::as_str) {
                Some("NodePort") => ports.len(),
                Some("LoadBalancer")
                    if spec("allocateLoadBalancerNodePorts") == Some(&Value::Bool(false)) =>
                {
                    ports
                        .iter()
                        .filter(|p| p.get("nodePort").and_then(Value::as_i64).unwrap_or(0) != 0)
                        .count()
                }
                Some("LoadBalancer") => ports.len(),
                _ => 0,
            };
            Some(Amount::count(count))
        }
        _ => Some(Amount::count(1)),
    }
}

/// A quota's scopes as `(scope, operator, values)`: `spec.scopes` (operator `Exists`)
/// and the expressions of `spec.scopeSelector`.
fn scopes(quota: &Value) -> Vec<(&str, &str, Vec<&str>)> {
    let plain = quota
        .pointer("/spec/scopes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(|scope| (scope, "Exists", Vec::new()));
    let selected = quota
        .pointer("/spec/scopeSelector/matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|expression| {
            let text = |field: &str| expression.get(field).and_then(Value::as_str).unwrap_or("");
            let values = expression
                .get("values")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            (text("scopeName"), text("operator"), values)
        });
    plain.chain(selected).collect()
}

/// Whether a Pod is `BestEffort` (QoS): no container, init containers included, requests
/// or limits any resource.
fn best_effort(pod: &Value) -> bool {
    ["containers", "initContainers"]
        .into_iter()
        .filter_map(|field| {
            pod.pointer(&format!("/spec/{field}"))
                .and_then(Value::as_array)
        })
        .flatten()
        .all(|container| {
            ["requests", "limits"].into_iter().all(|kind| {
                container
                    .get("resources")
                    .and_then(|r| r.get(kind))
                    .and_then(Value::as_object)
                    .is_none_or(|list| list.is_empty())
            })
        })
}

/// Whether a Pod has a deadline (`activeDeadlineSeconds` at least 0): the `Terminating`
/// scope's.
fn terminating(pod: &Value) -> bool {
    pod.pointer("/spec/activeDeadlineSeconds")
        .and_then(Value::as_i64)
        .is_some_and(|deadline| deadline >= 0)
}

/// Whether `quota` counts `object` (of `group`/`plural`) at all: every quota counts an
/// object of a resource it names, but a scoped one only Pods its scopes all select
/// (`podMatchesScopeFunc`; an unknown scope selects nothing).
pub(crate) fn quota_selects(quota: &Value, group: &str, plural: &str, object: &Value) -> bool {
    let scopes = scopes(quota);
    if scopes.is_empty() {
        return true;
    }
    if !group.is_empty() || plural != "pods" {
        return false;
    }
    let priority_class = object
        .pointer("/spec/priorityClassName")
        .and_then(Value::as_str)
        .unwrap_or("");
    scopes.iter().all(|(scope, operator, values)| match *scope {
        "Terminating" => terminating(object),
        "NotTerminating" => !terminating(object),
        "BestEffort" => best_effort(object),
        "NotBestEffort" => !best_effort(object),
        "PriorityClass" => match *operator {
            "In" => values.contains(&priority_class),
            "NotIn" => !values.contains(&priority_class),
            "Exists" => !priority_class.is_empty(),
            "DoesNotExist" => priority_class.is_empty(),
            _ => false,
        },
        _ => false,
    })
}

/// What the stored objects of `namespace` that `quota` selects use of each resource in
/// `names` (zero for one nothing uses or no evaluator knows).
pub(crate) fn namespace_usage<'n>(
    storage: &Store,
    namespace: &str,
    quota: &Value,
    names: impl IntoIterator<Item = &'n str>,
) -> BTreeMap<String, Amount> {
    let prefix = format!("{namespace}/");
    let mut snapshots: BTreeMap<(String, String), Vec<Arc<StoredObject>>> = BTreeMap::new();
    let mut used = BTreeMap::new();
    for name in names {
        let mut total = None;
        if let Some((group, plural)) = counted_resource(name) {
            let objects = snapshots
                .entry((group.clone(), plural.clone()))
                .or_insert_with(|| {
                    storage
                        .snapshot(&GroupResource::new(&group, &plural), &prefix)
                        .objects
                });
            for object in objects.iter().map(|o| &o.value) {
                if !quota_selects(quota, &group, &plural, object) {
                    continue;
                }
                if let Some(amount) = object_usage(name, &group, &plural, object) {
                    total = Some(total.map_or(amount, |t: Amount| t.plus(amount)));
                }
            }
        }
        used.insert(name.to_owned(), total.unwrap_or(Amount::count(0)));
    }
    used
}

/// A quota's `spec.hard`, each quantity parsed (ones that are not quantities left out).
pub(crate) fn hard_limits(quota: &Value) -> BTreeMap<String, Amount> {
    quota
        .pointer("/spec/hard")
        .and_then(Value::as_object)
        .map(|hard| {
            hard.iter()
                .filter_map(|(name, value)| Some((name.clone(), Amount::from_json(value)?)))
                .collect()
        })
        .unwrap_or_default()
}

/// `name=value` pairs, by name, joined with `,` (the admission plugin's `prettyPrint`).
pub(crate) fn pretty(amounts: &BTreeMap<String, Amount>) -> String {
    amounts
        .iter()
        .map(|(name, amount)| format!("{name}={amount}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// Amounts as a ResourceList in JSON.
pub(crate) fn to_json(amounts: &BTreeMap<String, Amount>) -> Value {
    Value::Object(
        amounts
            .iter()
            .map(|(name, amount)| (name.clone(), Value::String(amount.to_string())))
            .collect::<Map<String, Value>>(),
    )
}

/// Whether every amount is zero.
pub(crate) fn all_zero(amounts: &BTreeMap<String, Amount>) -> bool {
    amounts.values().all(|a| a.is_zero())
}

/// Whether `a + b` exceeds `limit`.
pub(crate) fn exceeds(a: Amount, b: Amount, limit: Amount) -> bool {
    a.plus(b).milli > limit.milli
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text(value: &str) -> String {
        Amount::from_json(&json!(value))
            .map(|a| a.to_string())
            .unwrap_or_default()
    }

    #[test]
    fn amounts_print_as_quantities_do() {
        assert_eq!(text("500m"), "500m");
        assert_eq!(text("1000m"), "1");
        assert_eq!(text("1536Mi"), "1536Mi");
        assert_eq!(text("1024Mi"), "1Gi");
        assert_eq!(text("2000"), "2k");
        assert_eq!(text("0"), "0");
        let sum = Amount::from_json(&json!("128Mi"))
            .zip(Amount::from_json(&json!("64Mi")))
            .map(|(a, b)| a.plus(b).to_string());
        assert_eq!(sum.as_deref(), Some("192Mi"));
    }

    #[test]
    fn quota_names_count_their_resources() {
        assert_eq!(
            counted_resource("count/deployments.apps"),
            Some(("apps".to_owned(), "deployments".to_owned()))
        );
        assert_eq!(
            counted_resource("requests.cpu"),
            Some((String::new(), "pods".to_owned()))
        );
        assert_eq!(counted_resource("count/"), None);
        let pod = json!({"spec": {"containers": [
            {"name": "a", "resources": {"requests": {"cpu": "250m"}}},
            {"name": "b", "resources": {"requests": {"cpu": "500m"}}}
        ], "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "1"}}}]}});
        let cpu = object_usage("requests.cpu", "", "pods", &pod).map(|a| a.to_string());
        assert_eq!(cpu.as_deref(), Some("1"));
        let done = json!({"status": {"phase": "Succeeded"}});
        assert_eq!(object_usage("pods", "", "pods", &done), None);
        let stored = object_usage("count/pods", "", "pods", &done).map(|a| a.to_string());
        assert_eq!(stored.as_deref(), Some("1"));
    }

    #[test]
    fn scoped_quotas_select_only_their_pods() {
        let best_effort = json!({"spec": {"containers": [{"name": "a"}]}});
        let burstable = json!({"spec": {"priorityClassName": "high", "activeDeadlineSeconds": 5,
            "containers": [{"name": "a", "resources": {"requests": {"cpu": "1"}}}]}});
        let quota = |spec: Value| json!({"spec": spec});
        let plain = quota(json!({"hard": {"pods": "1"}}));
        assert!(quota_selects(&plain, "", "configmaps", &json!({})));
        let scoped = quota(json!({"scopes": ["BestEffort"]}));
        assert!(quota_selects(&scoped, "", "pods", &best_effort));
        assert!(!quota_selects(&scoped, "", "pods", &burstable));
        assert!(!quota_selects(&scoped, "", "configmaps", &json!({})));
        let terminating = quota(json!({"scopes": ["Terminating", "NotBestEffort"]}));
        assert!(quota_selects(&terminating, "", "pods", &burstable));
        assert!(!quota_selects(&terminating, "", "pods", &best_effort));
        let priority = |operator: &str| {
            quota(json!({"scopeSelector": {"matchExpressions": [
                {"scopeName": "PriorityClass", "operator": operator, "values": ["high"]}]}}))
        };
        assert!(quota_selects(&priority("In"), "", "pods", &burstable));
        assert!(!quota_selects(&priority("In"), "", "pods", &best_effort));
        assert!(quota_selects(&priority("NotIn"), "", "pods", &best_effort));
        assert!(quota_selects(&priority("Exists"), "", "pods", &burstable));
        assert!(quota_selects(
            &priority("DoesNotExist"),
            "",
            "pods",
            &best_effort
        ));
    }
}
