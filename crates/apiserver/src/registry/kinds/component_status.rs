//! ComponentStatuses (kube-apiserver's `pkg/registry/core/componentstatus`): read only,
//! kept by the server itself (`Special::ReadOnly`), printed with their health.

use crate::registry::printers::{Column, config::COMPONENT_STATUS};
use crate::registry::strategy::Strategy;

/// The ComponentStatus strategy.
pub(crate) struct ComponentStatusStrategy;

impl Strategy for ComponentStatusStrategy {
    fn table_columns(&self) -> Option<&'static [Column]> {
        Some(COMPONENT_STATUS)
    }
}
