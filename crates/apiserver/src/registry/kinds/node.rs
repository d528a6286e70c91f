//! Nodes (kube-apiserver's `pkg/registry/core/node`): the generic store's behaviour, and
//! their table (status, roles, age, version; internal and external IPs, OS image,
//! kernel and container runtime with `-o wide`).

use crate::registry::printers::{Column, node::NODE};
use crate::registry::strategy::Strategy;

/// The Node strategy.
pub(crate) struct NodeStrategy;

impl Strategy for NodeStrategy {
    fn table_columns(&self) -> Option<&'static [Column]> {
        Some(NODE)
    }
}
