//! Kinds whose strategy is only the generic store's switches (kube-apiserver's
//! `pkg/registry/core/{endpoint,limitrange,resourcequota}`, `coordination/lease`,
//! `rbac/*`): a PUT of a missing Endpoints, LimitRange, Lease or RBAC object creates it;
//! a Lease's PUT needs a resourceVersion; a ResourceQuota's DELETE answers with the
//! object; Endpoints, Leases and the RBAC bindings have table columns.

use crate::registry::printers::{self, Column};
use crate::registry::strategy::{NameRule, Strategy};

/// A strategy of switches only.
pub(crate) struct SimpleStrategy {
    /// `AllowCreateOnUpdate`.
    create_on_update: bool,
    /// `AllowUnconditionalUpdate`.
    unconditional_update: bool,
    /// `ReturnDeletedObject`.
    return_deleted: bool,
    /// The table's columns.
    columns: Option<&'static [Column]>,
    /// The rule names follow.
    names: NameRule,
}

/// The generic store's own switches.
const GENERIC: SimpleStrategy = SimpleStrategy {
    create_on_update: false,
    unconditional_update: true,
    return_deleted: false,
    columns: None,
    names: NameRule::Subdomain,
};

/// core/v1 Endpoints.
pub(crate) static ENDPOINTS: SimpleStrategy = SimpleStrategy {
    create_on_update: true,
    columns: Some(printers::service::ENDPOINTS),
    ..GENERIC
};
/// `discovery.k8s.io/v1` EndpointSlices.
pub(crate) static ENDPOINT_SLICE: SimpleStrategy = SimpleStrategy {
    columns: Some(printers::service::ENDPOINT_SLICE),
    ..GENERIC
};
/// core/v1 LimitRanges.
pub(crate) static LIMIT_RANGE: SimpleStrategy = SimpleStrategy {
    create_on_update: true,
    ..GENERIC
};
/// core/v1 ResourceQuotas.
pub(crate) static RESOURCE_QUOTA: SimpleStrategy = SimpleStrategy {
    return_deleted: true,
    ..GENERIC
};
/// `coordination.k8s.io` Leases: leader election's PUTs are always conditional.
pub(crate) static LEASE: SimpleStrategy = SimpleStrategy {
    create_on_update: true,
    unconditional_update: false,
    columns: Some(printers::config::LEASE),
    ..GENERIC
};
/// Roles and ClusterRoles.
pub(crate) static RBAC_ROLE: SimpleStrategy = SimpleStrategy {
    create_on_update: true,
    names: NameRule::PathSegment,
    ..GENERIC
};
/// RoleBindings and ClusterRoleBindings.
pub(crate) static RBAC_BINDING: SimpleStrategy = SimpleStrategy {
    create_on_update: true,
    names: NameRule::PathSegment,
    columns: Some(printers::config::ROLE_BINDING),
    ..GENERIC
};

impl Strategy for SimpleStrategy {
    fn allow_create_on_update(&self) -> bool {
        self.create_on_update
    }

    fn allow_unconditional_update(&self) -> bool {
        self.unconditional_update
    }

    fn return_deleted_object(&self) -> bool {
        self.return_deleted
    }

    fn table_columns(&self) -> Option<&'static [Column]> {
        self.columns
    }

    fn name_rule(&self) -> NameRule {
        self.names
    }
}
