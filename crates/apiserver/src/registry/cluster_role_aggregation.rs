//! ClusterRole aggregation (kube-controller-manager's `clusterrole-aggregation`): a
//! ClusterRole with an `aggregationRule` has as its `rules` the rules of every other
//! ClusterRole its `clusterRoleSelectors` match, those roles taken by name, each rule
//! once, in that order. The controller keeps stored roles so; the bootstrap writes its
//! aggregated roles already filled in, so a fresh server makes no writes of its own.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::object::label_selector;

/// The rules `role` (named `name`) gathers from `roles` (by name), or `None` when it has
/// no `aggregationRule`.
pub(crate) fn aggregated_rules(
    name: &str,
    role: &Value,
    roles: &BTreeMap<&str, &Value>,
) -> Option<Vec<Value>> {
    let selectors = role
        .pointer("/aggregationRule/clusterRoleSelectors")?
        .as_array()?;
    let mut rules: Vec<Value> = Vec::new();
    for selector in selectors {
        // A selector that does not parse selects nothing (kube-controller-manager logs
        // and retries it; the role's validation refuses most).
        let Ok(selector) = label_selector(Some(selector)) else {
            continue;
        };
        for (candidate_name, candidate) in roles {
            if *candidate_name == name {
                continue;
            }
            let labels = candidate.pointer("/metadata/labels");
            let label = |key: &str| labels.and_then(|l| l.get(key)).and_then(Value::as_str);
            if !selector.matches_with(&label) {
                continue;
            }
            let own = candidate.get("rules").and_then(Value::as_array);
            for rule in own.into_iter().flatten() {
                if !rules.contains(rule) {
                    rules.push(rule.clone());
                }
            }
        }
    }
    Some(rules)
}

/// Whether `rules` are already what `role` holds (Go's semantic equality: no rules and
/// an empty list are the same).
pub(crate) fn holds(role: &Value, rules: &[Value]) -> bool {
    role.get("rules")
        .and_then(Value::as_array)
        .map_or(rules.is_empty(), |current| current == rules)
}

/// Fills in the rules of the aggregated roles among `roles` (ClusterRole objects), as
/// the controller would after as many passes as chains need (`view` feeds `edit`, which
/// feeds `admin`).
pub(crate) fn aggregate_all(roles: &mut [Value]) {
    for _ in 0..roles.len() {
        let mut changes = Vec::new();
        {
            let by_name: BTreeMap<&str, &Value> = roles
                .iter()
                .map(|role| {
                    let name = role
                        .pointer("/metadata/name")
                        .and_then(Value::as_str)
                        .unwrap_or("");
                    (name, role)
                })
                .collect();
            for (index, role) in roles.iter().enumerate() {
                let name = role
                    .pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                if let Some(rules) = aggregated_rules(name, role, &by_name)
                    && !holds(role, &rules)
                {
                    changes.push((index, rules));
                }
            }
        }
        if changes.is_empty() {
            return;
        }
        for (index, rules) in changes {
            if let Some(fields) = roles.get_mut(index).and_then(Value::as_object_mut) {
                fields.insert("rules".to_owned(), Value::Array(rules));
            }
        }
    }
}
