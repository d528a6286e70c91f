//! The service-account controller (kube-controller-manager's `serviceaccount`): every
//! active namespace has a ServiceAccount named `default`, re-created if deleted.

use std::collections::HashSet;

use serde_json::Value;

use super::graph::Graph;
use super::writer::Writer;
use crate::registry::Special;
use crate::registry::kinds::service_account::{DEFAULT_NAME, default_service_account};
use crate::registry::store::Ownership;

/// One pass; whether anything changed.
pub(super) fn sync(writer: &Writer<'_>, graph: &Graph) -> bool {
    let with_default: HashSet<&str> = graph
        .nodes
        .iter()
        .filter(|node| {
            node.resource.group.is_empty()
                && node.resource.plural == "serviceaccounts"
                && node.object.name() == DEFAULT_NAME
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
    let Some(service_accounts) = writer.store.resources.lookup("", "v1", "serviceaccounts") else {
        return false;
    };
    let mut changed = false;
    for namespace in missing {
        let request = writer.request(&service_accounts, Some(namespace), DEFAULT_NAME);
        let Value::Object(account) = default_service_account(namespace) else {
            continue;
        };
        match writer
            .store
            .create(&request, account, Ownership::RecordUpdate)
        {
            Ok(_) => changed = true,
            Err(status) => {
                tracing::debug!(%namespace, status = %status.message, "no default ServiceAccount created");
            }
        }
    }
    changed
}
