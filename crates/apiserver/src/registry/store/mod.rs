//! The generic store: the one write path of the server, kube-apiserver's
//! `registry/generic/registry/store.go`. Every write — a request's POST, PUT, PATCH,
//! apply or DELETE, a controller's read-modify-write or deletion, a bootstrap object —
//! goes through [`GenericStore`]: type and namespace checks, server-owned metadata (uid,
//! creation time, generation), defaults, immutability, validation, managedFields, the
//! version conversion to the storage form, the size limit, dry runs, finalizers,
//! graceful deletion and the propagation policy. It knows nothing of HTTP: a
//! [`WriteRequest`] names the resource, namespace, name, options, user and field manager,
//! and the results are values ([`WriteResult`], [`Deleted`]) or a [`Status`] error, which
//! the endpoints encode. After each committed write it calls its [`WriteHook`] (the
//! controllers' wake-up).
//!
//! One file per verb: [`create`], [`update`] (with the compute step PUT, PATCH, apply
//! and controllers share), [`delete`] (with deletecollection) and [`binding`] (a Pod's
//! binding to a node); the request is [`write_request`], the results and errors
//! [`result`] (neither imports the rest of the store, so the checks the store runs can
//! use them); what the verbs share besides is here.

mod admit;
mod binding;
mod create;
mod delete;
mod hook;
mod quota_admission;
pub(crate) mod result;
mod update;
pub(crate) mod write_request;

use std::sync::Arc;

use kubeclient_machinery::{GroupResource, Status, StatusCause, StatusReason};
use serde_json::{Map, Value, json};

use super::admission::WebhookPolicy;
use super::strategy::StrategyContext;
use super::{Registry, ResourceDef, event_versions};
use crate::object::{meta_str, metadata_mut, store_key};
use crate::patch::managed_fields;
use crate::patch::strategic_merge::builtin_list_map_keys;
use crate::storage::{Store, StoredObject};

pub(crate) use binding::bind;
pub(crate) use delete::{DeleteOptions, Deleted};
#[cfg(test)]
pub(crate) use hook::NoHook;
pub(crate) use hook::{Committed, Hooks, WriteHook, tell_applied};
pub(crate) use result::{StoreResult, conflict, fail, invalid};
pub(crate) use update::Ownership;
pub(crate) use write_request::{Decoding, WriteRequest};

/// Fields the server owns: wiped from create bodies and carried over on updates.
const SYSTEM_FIELDS: [&str; 5] = [
    "uid",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "selfLink",
];

/// What the store's verbs ask of a request.
impl WriteRequest<'_> {
    /// Where the resource's objects are stored (`events.k8s.io` Events with core Events).
    fn storage(&self) -> GroupResource {
        event_versions::storage_of(self.resource)
    }

    fn key_for(&self, name: &str) -> String {
        store_key(self.namespace, name)
    }

    /// 404 for the named object.
    fn not_found(&self, name: &str) -> Box<Status> {
        fail(Status::not_found(&self.group_resource(), name))
    }

    /// 409 for a stale resourceVersion.
    fn conflict(&self) -> Box<Status> {
        conflict(&self.group_resource(), self.name)
    }

    /// Checks (and for built-ins defaults) `apiVersion` and `kind`.
    fn check_type_meta(&self, object: &mut Map<String, Value>) -> StoreResult<()> {
        check_type_meta(self.resource, object)
    }

    /// Defaults the namespace from the request and rejects a different one.
    fn check_namespace(&self, object: &mut Map<String, Value>) -> StoreResult<()> {
        check_namespace(self.resource, self.namespace, object)
    }

    /// The managedFields context of this write at `time`.
    fn write_context<'c>(
        &'c self,
        api_version: &'c str,
        time: &'c str,
        list_key: &'c dyn Fn(&[&str]) -> Option<managed_fields::ListKeys>,
        atomic: &'c dyn Fn(&[&str]) -> bool,
    ) -> managed_fields::WriteContext<'c> {
        let scope = if self.subresource == Some("status") {
            managed_fields::FieldScope::OnlyStatus
        } else if self.resource.status_subresource {
            managed_fields::FieldScope::ExcludeStatus
        } else {
            managed_fields::FieldScope::All
        };
        managed_fields::WriteContext {
            manager: self.field_manager,
            api_version,
            subresource: self.subresource,
            time,
            scope,
            list_key,
            atomic,
            custom_resource: !self.resource.builtin,
        }
    }
}

/// Checks (and for built-ins defaults) `apiVersion` and `kind`.
pub(crate) fn check_type_meta(
    resource: &ResourceDef,
    object: &mut Map<String, Value>,
) -> StoreResult<()> {
    let expected_version = resource.api_version();
    let field = |name: &str| {
        object
            .get(name)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    let (kind, api_version) = (field("kind"), field("apiVersion"));
    if kind.is_empty() || api_version.is_empty() {
        if !resource.builtin {
            let missing = if kind.is_empty() {
                "Kind"
            } else {
                "APIVersion"
            };
            return Err(fail(Status::bad_request(format!(
                "Object '{missing}' is missing in '{}'",
                Value::Object(object.clone())
            ))));
        }
        object.insert("kind".to_owned(), json!(resource.kind));
        object.insert("apiVersion".to_owned(), json!(expected_version));
        return Ok(());
    }
    if api_version != expected_version {
        return Err(fail(Status::bad_request(format!(
            "the API version in the data ({api_version}) does not match the expected API version ({expected_version})"
        ))));
    }
    if kind != resource.kind && !resource.builtin {
        // A custom resource's kind is validated like a field (apiextensions-apiserver's
        // strategy), naming the kind the data gave.
        let name = crate::object::meta_str(&Value::Object(object.clone()), "name").to_owned();
        return Err(fail(Status::invalid(
            &resource.group,
            &kind,
            &name,
            vec![kubeclient_machinery::StatusCause::new(
                "FieldValueInvalid",
                &format!("Invalid value: {kind:?}: must be {}", resource.kind),
                "kind",
            )],
        )));
    }
    if kind != resource.kind {
        return Err(fail(Status::bad_request(format!(
            "{kind} in version {:?} cannot be handled as a {}: the kind in the data does not match the resource",
            resource.version, resource.kind
        ))));
    }
    Ok(())
}

/// Defaults the namespace of `object` to the request's `namespace` and rejects a
/// different one.
pub(crate) fn check_namespace(
    resource: &ResourceDef,
    namespace: Option<&str>,
    object: &mut Map<String, Value>,
) -> StoreResult<()> {
    let metadata = metadata_mut(object);
    if !resource.namespaced {
        metadata.remove("namespace");
        return Ok(());
    }
    let request_namespace = namespace.unwrap_or("");
    match metadata
        .get("namespace")
        .and_then(Value::as_str)
        .unwrap_or("")
    {
        "" => {
            metadata.insert("namespace".to_owned(), json!(request_namespace));
            Ok(())
        }
        body_namespace if body_namespace == request_namespace => Ok(()),
        body_namespace => Err(fail(Status::bad_request(format!(
            "the namespace of the object ({body_namespace}) does not match the namespace on the request ({request_namespace})"
        )))),
    }
}

/// Runs `body` with the managedFields context of `request` at `time` (the list keys and
/// atomic types of the request's kind).
pub(crate) fn with_write_context<T>(
    request: &WriteRequest<'_>,
    time: &str,
    body: impl FnOnce(&managed_fields::WriteContext<'_>) -> T,
) -> T {
    let api_version = request.resource.api_version();
    let kind = request.resource.kind.as_str();
    let keys = move |path: &[&str]| builtin_list_map_keys(kind, path);
    let atomic = atomic_fields(request.resource, &api_version);
    body(&request.write_context(&api_version, time, &keys, &atomic))
}

/// What a create or update did.
#[derive(Debug)]
pub(crate) struct WriteResult {
    /// What storage holds now (`None` for a dry-run create, or an object that left
    /// storage because its last finalizer went).
    pub(crate) stored: Option<Arc<StoredObject>>,
    /// The object the write computed, in storage form (`None` when the compute step left
    /// the object unchanged).
    pub(crate) computed: Option<Value>,
    /// Whether storage changed.
    pub(crate) changed: bool,
    /// Warnings for the client (unknown fields under `fieldValidation=Warn`).
    pub(crate) warnings: Vec<String>,
}

/// The server's writable state, seen by the generic store: storage, the served resources,
/// the object size limit and the hook told of every committed write.
#[derive(Clone, Copy)]
pub(crate) struct GenericStore<'a> {
    /// The objects.
    pub(crate) storage: &'a Store,
    /// The served resources (CRD writes change them).
    pub(crate) resources: &'a Registry,
    /// The largest encoded object a write may store.
    pub(crate) max_object_bytes: usize,
    /// Told of every committed write.
    pub(crate) hook: &'a dyn WriteHook,
    /// How admission webhooks may be called.
    pub(crate) webhooks: WebhookPolicy,
}

impl std::fmt::Debug for GenericStore<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GenericStore")
            .field("max_object_bytes", &self.max_object_bytes)
            .finish_non_exhaustive()
    }
}

impl GenericStore<'_> {
    /// What a strategy's preparation of an object of `resource` may use.
    fn strategy_context<'r>(&'r self, resource: &'r ResourceDef) -> StrategyContext<'r> {
        StrategyContext {
            store: self.storage,
            resource,
        }
    }

    /// Tells the hook of a committed write.
    fn committed(&self, request: &WriteRequest<'_>, write: Committed<'_>) {
        tracing::trace!(
            user = %request.user.username,
            resource = %request.resource.plural,
            namespace = request.namespace.unwrap_or(""),
            name = request.name,
            "write committed"
        );
        self.hook.committed(request.resource, write);
    }

    /// Namespaced creates need an existing namespace that is not being deleted.
    fn check_namespace_exists(&self, namespace: Option<&str>) -> StoreResult<()> {
        let Some(namespace) = namespace else {
            return Ok(());
        };
        let namespaces = GroupResource::new("", "namespaces");
        match self.storage.get(&namespaces, namespace) {
            Some(ns)
                if ns
                    .value
                    .get("metadata")
                    .and_then(|m| m.get("deletionTimestamp"))
                    .is_some() =>
            {
                Err(fail(Status::failure(
                    StatusReason::Forbidden,
                    format!(
                        "unable to create new content in namespace {namespace} because it is being terminated"
                    ),
                )))
            }
            Some(_) => Ok(()),
            None => Err(fail(Status::not_found(&namespaces, namespace))),
        }
    }

    /// The stored object of a resource, if any.
    pub(crate) fn get(
        &self,
        resource: &ResourceDef,
        namespace: Option<&str>,
        name: &str,
    ) -> Option<Arc<StoredObject>> {
        self.storage.get(
            &event_versions::storage_of(resource),
            &store_key(namespace, name),
        )
    }
}

/// The Go types upstream marks `+structType=atomic`: owned whole by whoever sets them.
const ATOMIC_TYPES: [&str; 13] = [
    "k8s.io.apimachinery.pkg.apis.meta.v1.LabelSelector",
    "k8s.io.apimachinery.pkg.apis.meta.v1.OwnerReference",
    "k8s.io.api.core.v1.ObjectReference",
    "k8s.io.api.core.v1.LocalObjectReference",
    "k8s.io.api.core.v1.TypedLocalObjectReference",
    "k8s.io.api.core.v1.TypedObjectReference",
    "k8s.io.api.core.v1.ConfigMapKeySelector",
    "k8s.io.api.core.v1.SecretKeySelector",
    "k8s.io.api.core.v1.ObjectFieldSelector",
    "k8s.io.api.core.v1.ResourceFieldSelector",
    "k8s.io.api.core.v1.NodeSelector",
    "k8s.io.api.core.v1.NodeSelectorTerm",
    "k8s.io.api.core.v1.TopologySelectorTerm",
];

/// Whether the object at a field path of a built-in kind is of an atomic type, for field
/// ownership (custom resources: never).
fn atomic_fields<'a>(
    resource: &'a ResourceDef,
    api_version: &'a str,
) -> impl Fn(&[&str]) -> bool + 'a {
    move |path| {
        resource.builtin
            && kubeclient_machinery::protobuf::go_type_at(api_version, &resource.kind, path)
                .is_some_and(|name| ATOMIC_TYPES.contains(&name))
    }
}

/// Runs the kind's `Validate` (`ValidateUpdate` over `old`) on `object`; `update_causes`
/// (the immutable fields an update changed) follow its own in the answer.
///
/// # Errors
///
/// 422 Invalid listing every broken rule.
pub(crate) fn validate_object(
    resource: &ResourceDef,
    object: &Value,
    old: Option<&Value>,
    update_causes: Vec<StatusCause>,
) -> StoreResult<()> {
    let strategy = super::kinds::strategy_for(resource);
    let mut causes = Vec::new();
    strategy.validate(object, old, &mut causes);
    causes.extend(update_causes);
    if causes.is_empty() {
        return Ok(());
    }
    Err(fail(Status::invalid(
        strategy.validation_group(resource),
        &resource.kind,
        meta_str(object, "name"),
        causes,
    )))
}
