//! The service-account controller (kube-controller-manager's `serviceaccount`): every
//! active namespace has a ServiceAccount named `default`, re-created if deleted.

use std::collections::HashSet;

use super::graph::Graph;
use crate::bootstrap;
use crate::registry::Special;
use crate::state::State;

/// One pass; whether anything changed.
pub(super) fn sync(state: &State, graph: &Graph) -> bool {
    let with_default: HashSet<&str> = graph
        .nodes
        .iter()
        .filter(|node| {
            node.resource.group.is_empty()
                && node.resource.plural == "serviceaccounts"
                && node.object.name() == "default"
        })
        .map(|node| node.object.namespace())
        .collect();
    let missing: Vec<&str> = graph
        .nodes
        .iter()
        .filter(|node| node.resource.special == Special::Namespace && !node.deleting())
        .map(|node| node.object.name())
        .filter(|name| !with_default.contains(name))
        .collect();
    let created = crate::handlers::now_rfc3339();
    for namespace in &missing {
        bootstrap::put(
            &state.store,
            "",
            "serviceaccounts",
            Some(namespace),
            bootstrap::default_service_account(namespace),
            &created,
        );
    }
    !missing.is_empty()
}
