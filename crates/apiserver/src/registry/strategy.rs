//! [`Strategy`]: what the generic store does differently for one kind (kube-apiserver's
//! `rest.RESTCreateStrategy`, `RESTUpdateStrategy` and `RESTDeleteStrategy`, one per kind
//! in `pkg/registry/<group>/<kind>/strategy.go`). The impls live in `kinds/`, one file
//! per kind or family; `kinds::strategy_for` says which one a resource has, and a kind with
//! nothing of its own gets the generic behaviour of the trait's defaults.
//!
//! ```text
//! create:  BeginCreate -> defaults -> PrepareForCreate -> field check -> Validate -> managedFields -> storage
//! update:  AllowUnconditionalUpdate -> defaults -> PrepareForUpdate -> immutable fields -> field check
//!          -> managedFields -> Validate(Update) -> storage      (a missing object:
//!          AllowCreateOnUpdate)
//! delete:  DefaultGarbageCollectionPolicy -> the kind's deletion finalizer and marking
//!          -> ReturnDeletedObject
//! ```

use kubeclient_machinery::{Status, StatusCause};
use serde_json::{Map, Value};

use super::printers::Column;
use super::{Propagation, ResourceDef};
use crate::storage::Store;

/// What a strategy's preparation may use: the storage (for allocations) and the resource
/// written, in the version the request speaks.
#[derive(Clone, Copy)]
pub(crate) struct StrategyContext<'a> {
    /// The storage (allocators read what is taken).
    pub(crate) store: &'a Store,
    /// The resource written.
    pub(crate) resource: &'a ResourceDef,
}

/// A subresource discovery lists for a kind besides `status` and `scale` (those follow
/// from the resource): kube-apiserver's storage map entries such as `pods/exec`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Subresource {
    /// Its name (`exec`).
    pub(crate) name: &'static str,
    /// The group and version of what it answers with; both empty for core `v1`.
    pub(crate) group: &'static str,
    /// See `group`.
    pub(crate) version: &'static str,
    /// The kind it answers with (`PodExecOptions`).
    pub(crate) kind: &'static str,
    /// The verbs it serves.
    pub(crate) verbs: &'static [&'static str],
}

/// The rule an object's name follows (kube-apiserver's `ValidateObjectMeta` name
/// functions).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NameRule {
    /// A DNS-1123 subdomain (`NameIsDNSSubdomain`): most kinds.
    Subdomain,
    /// A DNS-1123 label (`NameIsDNSLabel`): Namespaces.
    Label,
    /// A path segment (`ValidatePathSegmentName`): not `.` or `..`, no `/` or `%`; the
    /// RBAC kinds, whose bootstrap names hold colons.
    PathSegment,
}

/// What the generic store asks a kind. Every method has the generic behaviour as its
/// default.
pub(crate) trait Strategy: Sync {
    /// The store's `BeginCreate`: the kind's checks and server fields of a new object
    /// before anything else runs on it (a CustomResourceDefinition must define servable
    /// resources and gets its status).
    ///
    /// # Errors
    ///
    /// The Status the create fails with.
    fn begin_create(
        &self,
        resource: &ResourceDef,
        object: &mut Map<String, Value>,
    ) -> Result<(), Box<Status>> {
        let _ = (resource, object);
        Ok(())
    }

    /// The kind's defaulting (the scheme's defaulters, which kube-apiserver runs on every
    /// decoded object): what the store runs on a created and on an updated object alike,
    /// before `prepare_for_create` / `prepare_for_update`.
    fn defaults(&self, context: StrategyContext<'_>, object: &mut Map<String, Value>) {
        let _ = (context, object);
    }

    /// `PrepareForCreate`: what a new object gets beyond its defaults (allocations, the
    /// initial status).
    fn prepare_for_create(&self, context: StrategyContext<'_>, object: &mut Map<String, Value>) {
        let _ = (context, object);
    }

    /// `PrepareForUpdate`: what an update does beyond the defaults, `current` being the
    /// stored object.
    fn prepare_for_update(
        &self,
        context: StrategyContext<'_>,
        object: &mut Map<String, Value>,
        current: &Value,
    ) {
        let _ = (context, object, current);
    }

    /// `Validate` / `ValidateUpdate`: the kind's rules for `object` (over `old` on
    /// update), as causes of a 422.
    fn validate(&self, object: &Value, old: Option<&Value>, causes: &mut Vec<StatusCause>) {
        let _ = (object, old, causes);
    }

    /// The group of the internal type validation runs on, which a 422 names
    /// (`events.k8s.io` Events are validated as core Events).
    fn validation_group<'a>(&self, resource: &'a ResourceDef) -> &'a str {
        &resource.group
    }

    /// The fields an update may not change (the immutability half of `ValidateUpdate`),
    /// as causes of a 422.
    fn immutable_causes(&self, current: &Value, desired: &Value, causes: &mut Vec<StatusCause>) {
        let _ = (current, desired, causes);
    }

    /// Items of `object`'s lists that share a merge key (two containers named alike),
    /// as causes of a 422: a server-side apply refuses them before merging, which would
    /// fold them into one.
    fn duplicate_merge_keys(&self, object: &Value) -> Vec<StatusCause> {
        let _ = object;
        Vec::new()
    }

    /// What the kind does once a generated name is known (a Namespace labels itself with
    /// it), `metadata` being the new object's.
    fn name_generated(&self, metadata: &mut Map<String, Value>, name: &str) {
        let _ = (metadata, name);
    }

    /// What the names of its objects must look like: DNS-1123 subdomains for most kinds,
    /// labels for Namespaces, path segments for the RBAC kinds (`system:basic-user`).
    fn name_rule(&self) -> NameRule {
        NameRule::Subdomain
    }

    /// Whether a change of the annotations bumps `metadata.generation` (Deployments copy
    /// theirs to their ReplicaSets).
    fn annotations_bump_generation(&self) -> bool {
        false
    }

    /// `AllowCreateOnUpdate`: whether a PUT of a missing object creates it.
    fn allow_create_on_update(&self) -> bool {
        false
    }

    /// `AllowUnconditionalUpdate`: whether a PUT may leave out
    /// `metadata.resourceVersion`.
    fn allow_unconditional_update(&self) -> bool {
        true
    }

    /// `DefaultGarbageCollectionPolicy`: what happens to dependents when a DELETE of
    /// `version` names no propagation policy.
    fn default_garbage_collection_policy(&self, version: &str) -> Propagation {
        let _ = version;
        Propagation::Background
    }

    /// The finalizer a DELETE with `propagation` adds to an object it only marks (the
    /// propagation policy's, unless the kind has its own deletion).
    fn deletion_finalizer(&self, propagation: Propagation) -> Option<&'static str> {
        propagation.finalizer()
    }

    /// Whether a DELETE always leaves the object marked for a controller to finish
    /// (a Namespace waits to be emptied).
    fn deletes_through_controller(&self) -> bool {
        false
    }

    /// Whether marking the object for deletion bumps its generation (as a graceful
    /// deletion does when the kind tracks one).
    fn deletion_bumps_generation(&self) -> bool {
        true
    }

    /// What the kind adds to an object a DELETE marks (a Namespace's `Terminating`
    /// phase), after `deletionTimestamp` and the finalizer.
    fn prepare_for_deletion(&self, marked: &mut Map<String, Value>) {
        let _ = marked;
    }

    /// Whether a DELETE that removes the object at once shows it deleted gracefully (the
    /// strategy's `CheckGracefulDelete`): the answer carries a `deletionTimestamp` and a
    /// grace period of 0, as kube-apiserver's does for a Pod no kubelet holds.
    fn deletes_gracefully(&self) -> bool {
        false
    }

    /// `ReturnDeletedObject`: whether a DELETE that removes the object at once answers
    /// with the object rather than a `Status`.
    fn return_deleted_object(&self) -> bool {
        false
    }

    /// The columns of its rows in a Table after `Name` (the store's `TableConvertor`,
    /// from `printers/`); `None` for the default `Name` / `Created At` table.
    fn table_columns(&self) -> Option<&'static [Column]> {
        None
    }

    /// The subresources discovery lists for its resource besides `status` and `scale`;
    /// none by default.
    fn subresources(&self) -> &'static [Subresource] {
        &[]
    }

    /// The grace period a DELETE gives `object` (the rest of `CheckGracefulDelete`),
    /// given the request's `gracePeriodSeconds` (`requested`, never negative):
    /// `Some(seconds)` marks it with a `deletionTimestamp` that many seconds ahead and
    /// keeps it until whoever runs it (a kubelet) deletes it again with a grace period of
    /// 0; `None` removes it at once. `store` tells whether anything runs it.
    fn deletion_grace_period(
        &self,
        store: &Store,
        object: &Value,
        requested: Option<i64>,
    ) -> Option<i64> {
        let _ = (store, object, requested);
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

/// A built-in kind with nothing of its own: the trait's defaults.
pub(crate) struct GenericStrategy;

impl Strategy for GenericStrategy {}

/// The `Duplicate value` causes of `strategy`'s validation of `object` (what
/// [`Strategy::duplicate_merge_keys`] gives for kinds whose lists of containers are
/// keyed by name).
pub(crate) fn duplicates(strategy: &dyn Strategy, object: &Value) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    strategy.validate(object, None, &mut causes);
    causes.retain(|cause| cause.reason == "FieldValueDuplicate");
    causes
}
