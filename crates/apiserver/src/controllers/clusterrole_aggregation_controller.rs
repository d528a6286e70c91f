//! The ClusterRole aggregation controller (kube-controller-manager's
//! `clusterrole-aggregation`): a ClusterRole with an `aggregationRule` has as its `rules`
//! the rules of every other ClusterRole its `clusterRoleSelectors` match, those roles
//! taken by name, each rule once, in that order; so `kubectl get clusterrole admin -o
//! yaml` shows what the role grants, as on a real cluster.

use std::collections::BTreeMap;

use serde_json::Value;

use super::graph::{Graph, Node};
use super::writer::Writer;
use crate::object::label_selector;

const GROUP: &str = "rbac.authorization.k8s.io";

/// Whether a write to `group`/`plural` can change an aggregated role.
pub(super) fn concerns(group: &str, plural: &str) -> bool {
    group == GROUP && plural == "clusterroles"
}

/// The rules `role`'s selectors gather from `roles` (by name), or `None` when it has no
/// `aggregationRule`.
fn aggregated(role: &Node, roles: &BTreeMap<&str, &Node>) -> Option<Vec<Value>> {
    let selectors = role
        .object
        .value
        .pointer("/aggregationRule/clusterRoleSelectors")?
        .as_array()?;
    let mut rules: Vec<Value> = Vec::new();
    for selector in selectors {
        // A selector that does not parse selects nothing (kube-controller-manager logs
        // and retries it; the role's validation refuses most).
        let Ok(selector) = label_selector(Some(selector)) else {
            continue;
        };
        for (name, candidate) in roles {
            if *name == role.object.name() {
                continue;
            }
            let labels = candidate.object.value.pointer("/metadata/labels");
            let label = |key: &str| labels.and_then(|l| l.get(key)).and_then(Value::as_str);
            if !selector.matches_with(&label) {
                continue;
            }
            let own = candidate
                .object
                .value
                .get("rules")
                .and_then(Value::as_array);
            for rule in own.into_iter().flatten() {
                if !rules.contains(rule) {
                    rules.push(rule.clone());
                }
            }
        }
    }
    Some(rules)
}

/// One pass; whether anything changed.
pub(super) fn sync(writer: &Writer<'_>, graph: &Graph) -> bool {
    let roles: BTreeMap<&str, &Node> = graph
        .nodes
        .iter()
        .filter(|node| concerns(&node.resource.group, &node.resource.plural))
        .map(|node| (node.object.name(), node))
        .collect();
    let mut changed = false;
    for role in roles.values() {
        let Some(rules) = aggregated(role, &roles) else {
            continue;
        };
        let current = role.object.value.get("rules").and_then(Value::as_array);
        // Go's semantic equality: no rules and an empty list are the same.
        if current.map_or(rules.is_empty(), |current| *current == rules) {
            continue;
        }
        changed |= role.rewrite(writer, |object| {
            object.insert("rules".to_owned(), Value::Array(rules.clone()));
        });
    }
    changed
}
