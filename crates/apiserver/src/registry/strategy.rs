//! [`Strategy`]: what the generic store does differently for one kind (kube-apiserver's
//! `rest.RESTCreateStrategy`, `RESTUpdateStrategy` and `RESTDeleteStrategy`, one per kind
//! in `pkg/registry/<group>/<kind>/strategy.go`). The impls live in `kinds/`, one file
//! per kind; a kind without one gets the defaults below, which apply the rules still kept
//! in the tables by aspect (`defaults.rs`, `kind_rules.rs`, `immutable.rs`) until they
//! move into `kinds/` too.

use kubeclient_machinery::StatusCause;
use serde_json::{Map, Value};

use super::ResourceDef;
use super::kinds::pod::PodStrategy;
use super::kinds::service::ServiceStrategy;
use crate::storage::Store;

/// What the generic store asks a kind. Every method has the generic behaviour as its
/// default.
pub(crate) trait Strategy: Sync {
    /// `PrepareForCreate` with the kind's defaulting: fills in what a new object leaves
    /// out (`store` for allocations).
    fn prepare_for_create(&self, store: &Store, object: &mut Map<String, Value>) {
        let _ = (store, object);
    }

    /// `PrepareForUpdate` with the kind's defaulting, `current` being the stored object.
    fn prepare_for_update(&self, store: &Store, object: &mut Map<String, Value>, current: &Value) {
        let _ = (store, object, current);
    }

    /// `Validate` / `ValidateUpdate`: the kind's rules for `object` (over `old` on
    /// update), as causes of a 422.
    fn validate(&self, object: &Value, old: Option<&Value>, causes: &mut Vec<StatusCause>) {
        let _ = (object, old, causes);
    }

    /// The fields an update may not change (the immutability half of `ValidateUpdate`),
    /// as causes of a 422.
    fn immutable_causes(&self, current: &Value, desired: &Value, causes: &mut Vec<StatusCause>) {
        let _ = (current, desired, causes);
    }

    /// Whether a DELETE that removes the object at once shows it deleted gracefully (the
    /// strategy's `CheckGracefulDelete`): the answer carries a `deletionTimestamp` and a
    /// grace period of 0, as kube-apiserver's does for a Pod no kubelet holds.
    fn deletes_gracefully(&self) -> bool {
        false
    }

    /// The grace period a DELETE gives `object` (the rest of `CheckGracefulDelete`):
    /// `Some(seconds)` marks it with a `deletionTimestamp` that many seconds ahead and
    /// keeps it until whoever runs it (a kubelet) deletes it again with a grace period of
    /// 0; `None` removes it at once. `store` tells whether anything runs it.
    fn deletion_grace_period(&self, store: &Store, object: &Value) -> Option<i64> {
        let _ = (store, object);
        None
    }

    /// Whether a create allocates fields (addresses, ports, a node) after the field
    /// manager ran: they belong to no manager unless the request set them.
    fn allocates(&self) -> bool {
        false
    }

    /// `object` as created without the allocated fields `requested` (the request's
    /// object) did not set: what the creating manager owns.
    fn without_allocated(&self, requested: &Map<String, Value>, object: &Value) -> Value {
        let _ = requested;
        object.clone()
    }
}

/// The strategy of a built-in kind that has its own (`None`: the generic rules).
pub(crate) fn strategy_for(resource: &ResourceDef) -> Option<&'static dyn Strategy> {
    if !resource.builtin {
        return None;
    }
    match (resource.group.as_str(), resource.kind.as_str()) {
        ("", "Pod") => Some(&PodStrategy),
        ("", "Service") => Some(&ServiceStrategy),
        _ => None,
    }
}
