//! ServiceAccounts (kube-apiserver's `pkg/registry/core/serviceaccount`): a DELETE
//! answers with the object, and the `default` one every namespace has (created by
//! bootstrap for the initial namespaces and by the service-account controller for the
//! others).

use serde_json::{Value, json};

use crate::registry::printers::{self, Column};
use crate::registry::strategy::{Strategy, Subresource};

/// The ServiceAccount strategy.
pub(crate) struct ServiceAccountStrategy;

impl Strategy for ServiceAccountStrategy {
    fn table_columns(&self) -> Option<&'static [Column]> {
        Some(printers::config::SERVICE_ACCOUNT)
    }

    /// `serviceaccounts/token`: a TokenRequest.
    fn subresources(&self) -> &'static [Subresource] {
        &[Subresource {
            name: "token",
            group: "authentication.k8s.io",
            version: "v1",
            kind: "TokenRequest",
            verbs: &["create"],
        }]
    }

    fn return_deleted_object(&self) -> bool {
        true
    }
}

/// The name of the ServiceAccount every namespace has.
pub(crate) const DEFAULT_NAME: &str = "default";

/// The `default` ServiceAccount of `namespace`, as it is created.
pub(crate) fn default_service_account(namespace: &str) -> Value {
    json!({
        "kind": "ServiceAccount", "apiVersion": "v1",
        "metadata": {"name": DEFAULT_NAME, "namespace": namespace},
    })
}
