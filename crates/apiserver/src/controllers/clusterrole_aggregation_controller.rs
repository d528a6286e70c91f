//! The ClusterRole aggregation controller (kube-controller-manager's
//! `clusterrole-aggregation`): keeps each aggregated ClusterRole's `rules` what its
//! selectors gather (`registry/cluster_role_aggregation.rs`), so `kubectl get clusterrole
//! admin -o yaml` shows what the role grants, as on a real cluster.

use std::collections::BTreeMap;

use serde_json::Value;

use super::graph::{Graph, Node};
use super::writer::Writer;
use crate::registry::cluster_role_aggregation::{aggregated_rules, holds};

const GROUP: &str = "rbac.authorization.k8s.io";

/// Whether a write to `group`/`plural` can change an aggregated role.
pub(super) fn concerns(group: &str, plural: &str) -> bool {
    group == GROUP && plural == "clusterroles"
}

/// One pass; whether anything changed.
pub(super) fn sync(writer: &Writer<'_>, graph: &Graph) -> bool {
    let roles: Vec<&Node> = graph
        .nodes
        .iter()
        .filter(|node| concerns(&node.resource.group, &node.resource.plural))
        .collect();
    let by_name: BTreeMap<&str, &Value> = roles
        .iter()
        .map(|node| (node.object.name(), &node.object.value))
        .collect();
    let mut changed = false;
    for role in roles {
        let Some(rules) = aggregated_rules(role.object.name(), &role.object.value, &by_name) else {
            continue;
        };
        if holds(&role.object.value, &rules) {
            continue;
        }
        changed |= role.rewrite(writer, |object| {
            object.insert("rules".to_owned(), Value::Array(rules.clone()));
        });
    }
    changed
}
