//! Writes: create, update, the four patch types, delete and deletecollection, with the
//! status and scale subresources, generation, finalizers, managedFields and dry runs
//! (apiserver-semantics §7).
//!
//! One file per verb: [`create`], [`update`], [`patch`] (with server-side apply),
//! [`delete`] (with deletecollection) and [`scale`] (the scale subresource); what they
//! share (validation of the written object, carrying system fields over, writing an
//! existing object) is here.

mod create;
mod defaults;
mod delete;
mod eviction;
mod immutable;
mod kind_rules;
mod patch;
mod reviews;
mod scale;
pub(crate) mod structural_schema;
mod token_request;
mod update;
mod workloads;

pub(crate) use create::create;
pub(crate) use delete::{
    DeleteOptions, Deleted, after_removal, delete, delete_collection, delete_object, finalized,
    finalizers,
};
pub(crate) use eviction::evict;
pub(crate) use patch::patch;
pub(crate) use reviews::review;
pub(crate) use scale::scale_of;
pub(crate) use token_request::token_request;
pub(crate) use update::update;

use create::create_object;
use scale::with_replicas;

use http::{Response, StatusCode};
use kubeclient_machinery::{GroupResource, Status, StatusCause, StatusDetails, StatusReason};
use serde_json::{Map, Value, json};

use super::Call;
use super::field_validation::Decoding;
use super::object::{
    dry_run_value, generate_name, meta_str, metadata_mut, now, store_key, validate_name,
};
use super::response::{Body, HandlerResult, fail, json, json_bytes, with_warnings};
use super::validate;
use super::version_conversion;
use crate::patch::managed_fields;
use crate::patch::strategic_merge::{
    builtin_list_map_keys, builtin_list_strategy, strategic_merge,
};
use crate::registry::{ResourceDef, Special, crd_resources, crd_status};
use crate::storage::{StoredObject, Write};

/// The most JSON patch operations one request may carry.
const MAX_JSON_PATCH_OPERATIONS: usize = 10_000;

/// Fields the server owns: wiped from create bodies and carried over on updates.
const SYSTEM_FIELDS: [&str; 5] = [
    "uid",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "selfLink",
];

fn invalid(
    resource: &ResourceDef,
    name: &str,
    field: &str,
    reason: &str,
    message: &str,
) -> Box<Status> {
    fail(Status::invalid(
        &resource.group,
        &resource.kind,
        name,
        vec![StatusCause::new(reason, message, field)],
    ))
}

fn as_object(value: Value) -> HandlerResult<Map<String, Value>> {
    match value {
        Value::Object(map) => Ok(map),
        other => Err(fail(Status::bad_request(format!(
            "the request body must be a JSON object, not {}",
            match other {
                Value::Array(_) => "an array",
                Value::String(_) => "a string",
                Value::Number(_) => "a number",
                Value::Bool(_) => "a boolean",
                _ => "null",
            }
        )))),
    }
}

/// The managedFields context of a write by `manager` at `time`.
fn write_context<'a>(
    call: &'a Call,
    manager: &'a str,
    api_version: &'a str,
    time: &'a str,
    list_key: &'a dyn Fn(&[&str]) -> Option<managed_fields::ListKeys>,
    atomic: &'a dyn Fn(&[&str]) -> bool,
) -> managed_fields::WriteContext<'a> {
    let scope = if call.subresource() == Some("status") {
        managed_fields::FieldScope::OnlyStatus
    } else if call.resource.status_subresource {
        managed_fields::FieldScope::ExcludeStatus
    } else {
        managed_fields::FieldScope::All
    };
    managed_fields::WriteContext {
        manager,
        api_version,
        subresource: call.subresource(),
        time,
        scope,
        list_key,
        atomic,
        custom_resource: !call.resource.builtin,
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

/// The key fields of the list at a field path, for field ownership.
fn list_key(kind: &str) -> impl Fn(&[&str]) -> Option<managed_fields::ListKeys> + '_ {
    move |path| builtin_list_map_keys(kind, path)
}

impl Call {
    fn name(&self) -> &str {
        self.path.name.as_deref().unwrap_or("")
    }

    fn key_for(&self, name: &str) -> String {
        store_key(self.path.namespace.as_deref(), name)
    }

    /// Checks (and for built-ins defaults) `apiVersion` and `kind`.
    fn check_type_meta(&self, object: &mut Map<String, Value>) -> HandlerResult<()> {
        let expected_version = self.resource.api_version();
        let kind = object
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let api_version = object
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        if kind.is_empty() || api_version.is_empty() {
            if !self.resource.builtin {
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
            object.insert("kind".to_owned(), json!(self.resource.kind));
            object.insert("apiVersion".to_owned(), json!(expected_version));
            return Ok(());
        }
        if api_version != expected_version {
            return Err(fail(Status::bad_request(format!(
                "the API version in the data ({api_version}) does not match the expected API version ({expected_version})"
            ))));
        }
        if kind != self.resource.kind {
            return Err(fail(Status::bad_request(format!(
                "{kind} in version {:?} cannot be handled as a {}: the kind in the data does not match the resource",
                self.resource.version, self.resource.kind
            ))));
        }
        Ok(())
    }

    /// Defaults the namespace from the URL and rejects a different one.
    fn check_namespace(&self, object: &mut Map<String, Value>) -> HandlerResult<()> {
        let metadata = metadata_mut(object);
        if !self.resource.namespaced {
            metadata.remove("namespace");
            return Ok(());
        }
        let url_namespace = self.path.namespace.as_deref().unwrap_or("");
        match metadata
            .get("namespace")
            .and_then(Value::as_str)
            .unwrap_or("")
        {
            "" => {
                metadata.insert("namespace".to_owned(), json!(url_namespace));
                Ok(())
            }
            body_namespace if body_namespace == url_namespace => Ok(()),
            body_namespace => Err(fail(Status::bad_request(format!(
                "the namespace of the object ({body_namespace}) does not match the namespace on the request ({url_namespace})"
            )))),
        }
    }

    /// Namespaced writes need an existing namespace.
    fn check_namespace_exists(&self) -> HandlerResult<()> {
        let Some(namespace) = self.path.namespace.as_deref() else {
            return Ok(());
        };
        match self
            .state
            .store
            .get(&GroupResource::new("", "namespaces"), namespace)
        {
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
            None => Err(fail(Status::not_found(
                &GroupResource::new("", "namespaces"),
                namespace,
            ))),
        }
    }

    fn subresource(&self) -> Option<&str> {
        self.path.subresource.as_deref()
    }
}

/// Copies server-owned metadata from the stored object and applies the status/spec split
/// of the status subresource; bumps `generation` when the spec changed.
fn carry_over(call: &Call, current: &Value, mut new: Map<String, Value>) -> Map<String, Value> {
    let resource = &call.resource;
    let old_metadata = current
        .get("metadata")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    if call.subresource() == Some("status") {
        // Only status changes through /status; everything else stays as stored (custom
        // resources reset even labels and annotations; built-ins too, here).
        let mut result = current.as_object().cloned().unwrap_or_default();
        match new.remove("status") {
            Some(status) => result.insert("status".to_owned(), status),
            None => result.remove("status"),
        };
        if let Some(managed) = new.get("metadata").and_then(|m| m.get("managedFields")) {
            metadata_mut(&mut result).insert("managedFields".to_owned(), managed.clone());
        }
        return result;
    }
    if call.subresource() == Some("approval") {
        // A CertificateSigningRequest's approval changes only `status.conditions`.
        let mut result = current.as_object().cloned().unwrap_or_default();
        let conditions = new
            .get("status")
            .and_then(|status| status.get("conditions"))
            .cloned();
        let status = result.entry("status").or_insert_with(|| json!({}));
        if let Value::Object(status) = status {
            match conditions {
                Some(conditions) => status.insert("conditions".to_owned(), conditions),
                None => status.remove("conditions"),
            };
        }
        return result;
    }
    if call.subresource() == Some("ephemeralcontainers") {
        // Only `spec.ephemeralContainers` changes through /ephemeralcontainers.
        let mut result = current.as_object().cloned().unwrap_or_default();
        let containers = new
            .get("spec")
            .and_then(|spec| spec.get("ephemeralContainers"))
            .cloned();
        if let Some(Value::Object(spec)) = result.get_mut("spec") {
            match containers {
                Some(containers) => spec.insert("ephemeralContainers".to_owned(), containers),
                None => spec.remove("ephemeralContainers"),
            };
        }
        return result;
    }
    if resource.status_subresource {
        match current.get("status") {
            Some(status) => new.insert("status".to_owned(), status.clone()),
            None => new.remove("status"),
        };
    }
    let metadata = metadata_mut(&mut new);
    for field in SYSTEM_FIELDS {
        match old_metadata.get(field) {
            Some(value) => metadata.insert(field.to_owned(), value.clone()),
            None => metadata.remove(field),
        };
    }
    let old_generation = old_metadata.get("generation").and_then(Value::as_i64);
    metadata.remove("generation");
    if resource.tracks_generation {
        let changed = generation_changes(resource, current, &new);
        let generation = old_generation.unwrap_or(1) + i64::from(changed);
        metadata_mut(&mut new).insert("generation".to_owned(), json!(generation));
    } else if let Some(generation) = old_generation {
        metadata_mut(&mut new).insert("generation".to_owned(), json!(generation));
    }
    new
}

/// Whether an update from `current` to `new` bumps `metadata.generation`, as the type's
/// strategy in kube-apiserver decides: a change of anything but `metadata` and `status`
/// (custom resources without a status subresource: anything but `metadata`, their status
/// being part of what they declare); a Deployment's annotations count too (they are copied
/// to its ReplicaSets).
fn generation_changes(resource: &ResourceDef, current: &Value, new: &Map<String, Value>) -> bool {
    let status_counts = !resource.builtin && !resource.status_subresource;
    let content = |object: &Map<String, Value>| -> Map<String, Value> {
        let mut object = object.clone();
        object.remove("metadata");
        if !status_counts {
            object.remove("status");
        }
        object
    };
    let current = current.as_object().cloned().unwrap_or_default();
    if content(&current) != content(new) {
        return true;
    }
    let annotations = |object: &Map<String, Value>| {
        object
            .get("metadata")
            .and_then(|metadata| metadata.get("annotations"))
            .filter(|annotations| annotations.as_object().is_some_and(|a| !a.is_empty()))
            .cloned()
    };
    resource.builtin
        && resource.group == "apps"
        && resource.kind == "Deployment"
        && annotations(&current) != annotations(new)
}

/// The API server's message for a stale resourceVersion.
fn conflict(call: &Call, name: &str) -> Box<Status> {
    fail(Status::conflict(
        &call.group_resource(),
        name,
        "the object has been modified; please apply your changes to the latest version and try again",
    ))
}

/// How an update-like write treats managedFields.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Ownership {
    /// Record the changed fields for the request's field manager (PUT, non-apply PATCH).
    RecordUpdate,
    /// The computed object already carries its managedFields (server-side apply).
    AlreadyRecorded,
}

/// Runs an update-like write (PUT, PATCH) on an existing object. `compute` runs outside
/// the store lock and again if another writer changed the object meanwhile
/// ([`Store::update`](crate::storage::Store::update)).
fn write_existing(
    call: &Call,
    require_rv: bool,
    ownership: Ownership,
    mut compute: impl FnMut(&StoredObject) -> HandlerResult<Map<String, Value>>,
) -> HandlerResult<Response<Body>> {
    let dry_run = call.dry_run()?;
    let name = call.name().to_owned();
    let manager = call.field_manager();
    let api_version = call.resource.api_version();
    let kind = call.resource.kind.clone();
    let mut response_object: Option<Value> = None;
    let mut warnings = Vec::new();
    let decoding = if call.content_type.contains("patch") {
        Decoding::Patch
    } else {
        Decoding::Body
    };
    let outcome = call.state.store.update(&call.storage(), &call.key_for(&name), |current| {
        let current = current.ok_or_else(|| call.not_found(&name))?;
        // Patches and updates apply to the object as the request's version serves it.
        let converted = version_conversion::served_object(&call.resource, current);
        let current = converted.as_ref().unwrap_or(current);
        let mut desired = compute(current)?;
        call.check_type_meta(&mut desired)?;
        call.check_namespace(&mut desired)?;
        let body_name = meta_str(&Value::Object(desired.clone()), "name").to_owned();
        if body_name.is_empty() {
            metadata_mut(&mut desired).insert("name".to_owned(), json!(name));
        } else if body_name != name {
            return Err(fail(Status::bad_request(format!(
                "the name of the object ({body_name}) does not match the name on the URL ({name})"
            ))));
        }
        let body_rv = metadata_mut(&mut desired)
            .get("resourceVersion")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        if body_rv.is_empty() {
            if require_rv && !call.resource.allows_unconditional_update() {
                // This one error names the resource, not the kind (`leases.coordination.k8s.io`).
                return Err(fail(Status::invalid(
                    &call.resource.group,
                    &call.resource.plural,
                    &name,
                    vec![StatusCause::new(
                        "FieldValueInvalid",
                        "Invalid value: 0x0: must be specified for an update",
                        "metadata.resourceVersion",
                    )],
                )));
            }
        } else if body_rv != current.rv.to_string() {
            return Err(conflict(call, &name));
        }
        defaults::apply(&call.state, &call.resource, &mut desired, Some(&current.value));
        let immutable_causes = immutable::check(call, &current.value, &desired, decoding)?;
        let mut result = Value::Object(carry_over(call, &current.value, desired));
        warnings = call.validate_fields(&mut result, decoding)?;
        if ownership == Ownership::RecordUpdate {
            let (time, keys) = (now(), list_key(&kind));
            let atomic = atomic_fields(&call.resource, &api_version);
            managed_fields::record_update(
                Some(&current.value),
                &mut result,
                &write_context(call, &manager, &api_version, &time, &keys, &atomic),
            );
        }
        validate::check_object(&call.resource, &result)?;
        kind_rules::check(&call.resource, &result, Some(&current.value), immutable_causes)?;
        version_conversion::to_storage_version(&call.resource, &mut result);
        validate::check_size(&call.resource, &result, call.state.config.limits.max_object_bytes)?;
        let write = if finalized(&result) { Write::Delete } else { Write::Update(result.clone()) };
        if dry_run {
            // Nothing is written, so the answer keeps the live resourceVersion, as the
            // real server's does (`kubectl diff` compares against it).
            if let Some(metadata) = result.get_mut("metadata").and_then(Value::as_object_mut) {
                metadata.insert("resourceVersion".to_owned(), json!(current.rv.to_string()));
            }
        }
        response_object = Some(result);
        Ok(if dry_run { Write::Unchanged } else { write })
    })?;
    if !dry_run && let Some(result) = &response_object {
        if finalized(result) {
            after_removal(&call.state, &call.resource, result);
        } else if call.resource.special == Special::CustomResourceDefinition
            && let Some(stored) = &outcome.object
        {
            create::register_crd(call, &stored.value);
        }
        call.state.controllers.wake_for(result);
    }
    respond_after_update(call, outcome.object.as_deref(), response_object)
        .map(|response| with_warnings(response, &warnings))
}

fn respond_after_update(
    call: &Call,
    stored: Option<&StoredObject>,
    computed: Option<Value>,
) -> HandlerResult<Response<Body>> {
    if call.subresource() == Some("scale") {
        let object = stored
            .map(|s| s.value.clone())
            .or(computed)
            .unwrap_or(Value::Null);
        return Ok(json(StatusCode::OK, &scale_of(call, &object)));
    }
    let resource = &call.resource;
    match (stored, computed) {
        (Some(stored), _) if !call.dry_run()? => Ok(json_bytes(
            StatusCode::OK,
            version_conversion::served_bytes(resource, stored),
        )),
        (_, Some(computed)) => Ok(json(
            StatusCode::OK,
            &*version_conversion::served_value(resource, &computed),
        )),
        (Some(stored), None) => Ok(json_bytes(
            StatusCode::OK,
            version_conversion::served_bytes(resource, stored),
        )),
        (None, None) => Err(fail(Status::internal_error("update produced no object"))),
    }
}

/// 422: `force` is only for server-side apply.
fn force_forbidden(call: &Call) -> Box<Status> {
    invalid(
        &call.resource,
        call.name(),
        "force",
        "FieldValueForbidden",
        "Forbidden: may not be specified for non-apply patch",
    )
}
