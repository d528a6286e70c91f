//! Writes: create, update, the four patch types, delete and deletecollection, with the
//! status and scale subresources, generation, finalizers, managedFields and dry runs
//! (apiserver-semantics §7).

use http::{Response, StatusCode};
use kubeclient_machinery::{GroupResource, Status, StatusCause, StatusDetails, StatusReason};
use serde_json::{Map, Value, json};

use super::Call;
use super::object::{
    dry_run_value, generate_name, meta_str, metadata_mut, now, store_key, validate_name,
};
use super::response::{Body, HandlerResult, fail, json, json_bytes};
use super::validate;
use crate::patch::managed_fields;
use crate::patch::strategic_merge::{ListStrategy, builtin_list_strategy, strategic_merge};
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
    list_key: &'a dyn Fn(&[&str]) -> Option<&'static str>,
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
    }
}

/// The list merge key of a field path, for strategic merge and field ownership.
fn list_key(kind: &str) -> impl Fn(&[&str]) -> Option<&'static str> + '_ {
    move |path| match builtin_list_strategy(kind, path) {
        ListStrategy::MergeByKey(key) => Some(key),
        _ => None,
    }
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
        let strip = |object: &Value| -> Value {
            let mut object = object.as_object().cloned().unwrap_or_default();
            object.remove("metadata");
            object.remove("status");
            Value::Object(object)
        };
        let changed = strip(current) != strip(&Value::Object(new.clone()));
        let generation = old_generation.unwrap_or(1) + i64::from(changed);
        metadata_mut(&mut new).insert("generation".to_owned(), json!(generation));
    } else if let Some(generation) = old_generation {
        metadata_mut(&mut new).insert("generation".to_owned(), json!(generation));
    }
    new
}

/// Whether an object being deleted has lost its last finalizer (and must now go).
fn finalized(object: &Value) -> bool {
    let metadata = object.get("metadata");
    metadata.and_then(|m| m.get("deletionTimestamp")).is_some()
        && metadata
            .and_then(|m| m.get("finalizers"))
            .and_then(Value::as_array)
            .is_none_or(Vec::is_empty)
}

/// The API server's message for a stale resourceVersion.
fn conflict(call: &Call, name: &str) -> Box<Status> {
    fail(Status::conflict(
        &call.group_resource(),
        name,
        "the object has been modified; please apply your changes to the latest version and try again",
    ))
}

/// POST: creates an object (201).
pub(crate) fn create(call: &Call) -> HandlerResult<Response<Body>> {
    if call.subresource().is_some() {
        return Err(fail(Status::failure(
            StatusReason::MethodNotAllowed,
            "the server does not allow this method on the requested resource",
        )));
    }
    let dry_run = call.dry_run()?;
    let object = as_object(call.decode_body()?)?;
    create_object(call, object, dry_run, false)
}

/// Creates `object`. `ownership_recorded` is set for server-side apply creates, whose
/// object already carries its managedFields.
fn create_object(
    call: &Call,
    mut object: Map<String, Value>,
    dry_run: bool,
    ownership_recorded: bool,
) -> HandlerResult<Response<Body>> {
    let resource = call.resource.clone();
    call.check_type_meta(&mut object)?;
    call.check_namespace(&mut object)?;
    let metadata = metadata_mut(&mut object);
    if metadata
        .get("resourceVersion")
        .and_then(Value::as_str)
        .is_some_and(|rv| !rv.is_empty())
    {
        return Err(fail(Status::internal_error(
            "resourceVersion should not be set on objects to be created",
        )));
    }
    for field in SYSTEM_FIELDS {
        metadata.remove(field);
    }
    metadata.remove("generation");
    let explicit_name = metadata
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let generate_prefix = metadata
        .get("generateName")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    if explicit_name.is_empty() && generate_prefix.is_empty() {
        return Err(invalid(
            &resource,
            "",
            "metadata.name",
            "FieldValueRequired",
            "Required value: name or generateName is required",
        ));
    }
    if !explicit_name.is_empty() {
        validate_name(&resource, &explicit_name)?;
    }
    let time = now();
    metadata.insert("uid".to_owned(), json!(uuid::Uuid::new_v4().to_string()));
    metadata.insert("creationTimestamp".to_owned(), json!(time));
    if resource.tracks_generation {
        metadata.insert("generation".to_owned(), json!(1));
    }
    if resource.status_subresource && !resource.builtin {
        object.remove("status");
    }
    match resource.special {
        Special::Namespace => {
            object.insert("status".to_owned(), json!({"phase": "Active"}));
            object
                .entry("spec")
                .or_insert_with(|| json!({"finalizers": ["kubernetes"]}));
        }
        Special::CustomResourceDefinition => {
            let crd = Value::Object(object.clone());
            crd_resources(&crd).map_err(|message| {
                invalid(
                    &resource,
                    &explicit_name,
                    message.split(':').next().unwrap_or(""),
                    "FieldValueInvalid",
                    &message,
                )
            })?;
            object.insert("status".to_owned(), crd_status(&crd, &time));
        }
        Special::None => {}
    }
    let mut value = Value::Object(object);
    validate::check_object(&resource, &value)?;
    call.check_namespace_exists()?;
    if !ownership_recorded {
        let (manager, api_version) = (call.field_manager(), resource.api_version());
        let keys = list_key(&resource.kind);
        managed_fields::record_update(
            None,
            &mut value,
            &write_context(call, &manager, &api_version, &time, &keys),
        );
    }
    validate::check_size(&resource, &value, call.state.config.limits.max_object_bytes)?;
    for attempt in 0..8 {
        let name = if explicit_name.is_empty() {
            generate_name(&generate_prefix)
        } else {
            explicit_name.clone()
        };
        if explicit_name.is_empty()
            && let Some(metadata) = value.get_mut("metadata").and_then(Value::as_object_mut)
        {
            metadata.insert("name".to_owned(), json!(name));
        }
        let key = call.key_for(&name);
        let outcome = call
            .state
            .store
            .update(&call.group_resource(), &key, |current| {
                if current.is_some() {
                    return Err(fail(Status::already_exists(&call.group_resource(), &name)));
                }
                Ok(if dry_run {
                    Write::Unchanged
                } else {
                    Write::Create(value.clone())
                })
            });
        match outcome {
            Ok(outcome) => {
                if dry_run {
                    return Ok(json(StatusCode::CREATED, &value));
                }
                let Some(created) = outcome.object else {
                    return Err(fail(Status::internal_error("create stored nothing")));
                };
                if resource.special == Special::CustomResourceDefinition {
                    register_crd(call, &created.value);
                }
                return Ok(json_bytes(StatusCode::CREATED, created.bytes.clone()));
            }
            Err(status)
                if status.reason == "AlreadyExists" && explicit_name.is_empty() && attempt < 7 =>
            {
                continue;
            }
            Err(status) => return Err(status),
        }
    }
    Err(fail(Status::already_exists(
        &call.group_resource(),
        &generate_prefix,
    )))
}

fn register_crd(call: &Call, crd: &Value) {
    if let Ok(resources) = crd_resources(crd)
        && let Some(first) = resources.first()
    {
        let (group, plural) = (first.group.clone(), first.plural.clone());
        call.state.registry.register(&group, &plural, resources);
    }
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
    let outcome = call.state.store.update(&call.group_resource(), &call.key_for(&name), |current| {
        let current = current.ok_or_else(|| call.not_found(&name))?;
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
            if require_rv && !call.resource.builtin {
                return Err(invalid(
                    &call.resource,
                    &name,
                    "metadata.resourceVersion",
                    "FieldValueInvalid",
                    "Invalid value: 0x0: must be specified for an update",
                ));
            }
        } else if body_rv != current.rv.to_string() {
            return Err(conflict(call, &name));
        }
        let mut result = Value::Object(carry_over(call, &current.value, desired));
        if ownership == Ownership::RecordUpdate {
            let (time, keys) = (now(), list_key(&kind));
            managed_fields::record_update(
                Some(&current.value),
                &mut result,
                &write_context(call, &manager, &api_version, &time, &keys),
            );
        }
        validate::check_object(&call.resource, &result)?;
        validate::check_size(&call.resource, &result, call.state.config.limits.max_object_bytes)?;
        let write = if finalized(&result) { Write::Delete } else { Write::Update(result.clone()) };
        response_object = Some(result);
        Ok(if dry_run { Write::Unchanged } else { write })
    })?;
    respond_after_update(call, outcome.object.as_deref(), response_object)
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
    match (stored, computed) {
        (Some(stored), _) if !call.dry_run()? => {
            Ok(json_bytes(StatusCode::OK, stored.bytes.clone()))
        }
        (_, Some(computed)) => Ok(json(StatusCode::OK, &computed)),
        (Some(stored), None) => Ok(json_bytes(StatusCode::OK, stored.bytes.clone())),
        (None, None) => Err(fail(Status::internal_error("update produced no object"))),
    }
}

/// PUT: replaces an object (or its status / scale).
pub(crate) fn update(call: &Call) -> HandlerResult<Response<Body>> {
    if call.query.get("force").is_some() {
        return Err(force_forbidden(call));
    }
    let body = as_object(call.decode_body()?)?;
    if call.subresource() == Some("scale") {
        let replicas = body
            .get("spec")
            .and_then(|s| s.get("replicas"))
            .cloned()
            .unwrap_or(json!(0));
        return write_existing(call, false, Ownership::RecordUpdate, |current| {
            Ok(with_replicas(call, &current.value, replicas.clone()))
        });
    }
    write_existing(call, true, Ownership::RecordUpdate, |_| Ok(body.clone()))
}

fn force_forbidden(call: &Call) -> Box<Status> {
    invalid(
        &call.resource,
        call.name(),
        "force",
        "FieldValueForbidden",
        "Forbidden: may not be specified for non-apply patch",
    )
}

/// PATCH: JSON patch, merge patch, strategic merge patch (built-ins) or server-side apply.
pub(crate) fn patch(call: &Call) -> HandlerResult<Response<Body>> {
    let media = call
        .content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_owned();
    if media != "application/apply-patch+yaml" && call.query.get("force").is_some() {
        return Err(force_forbidden(call));
    }
    let accepted = if call.resource.builtin {
        "application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml"
    } else {
        "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
    };
    let unsupported = || {
        fail(Status::failure(
            StatusReason::UnsupportedMediaType,
            format!(
                "the body of the request was in an unknown format - accepted media types include: {accepted}"
            ),
        ))
    };
    let kind = call.resource.kind.clone();
    match media.as_str() {
        "application/json-patch+json" => {
            let operations: json_patch::Patch =
                serde_json::from_slice(&call.body).map_err(|err| {
                    fail(Status::bad_request(format!(
                        "the JSON patch could not be decoded: {err}"
                    )))
                })?;
            if operations.0.len() > MAX_JSON_PATCH_OPERATIONS {
                return Err(fail(Status::failure(
                    StatusReason::RequestEntityTooLarge,
                    format!(
                        "Request entity too large: The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, got {}",
                        operations.0.len()
                    ),
                )));
            }
            write_patched(call, |current| {
                // As the API server: a patch that does not apply is 422 Invalid.
                crate::patch::json::apply(current, &operations)
                    .map_err(|err| fail(Status::failure(StatusReason::Invalid, err.to_string())))
            })
        }
        "application/merge-patch+json" => {
            let patch = call.decode_body()?;
            write_patched(call, |current| {
                let mut document = current.clone();
                json_patch::merge(&mut document, &patch);
                Ok(document)
            })
        }
        "application/strategic-merge-patch+json" if call.resource.builtin => {
            let patch = call.decode_body()?;
            write_patched(call, |current| {
                strategic_merge(current, &patch, &|path: &[&str]| {
                    builtin_list_strategy(&kind, path)
                })
                .map_err(|err| {
                    fail(Status::bad_request(format!(
                        "the strategic merge patch could not be applied: {err}"
                    )))
                })
            })
        }
        "application/apply-patch+yaml" => server_side_apply(call),
        _ => Err(unsupported()),
    }
}

/// A non-apply patch: the patch result, with the scale subresource mapped onto replicas.
fn write_patched(
    call: &Call,
    apply_patch: impl Fn(&Value) -> HandlerResult<Value>,
) -> HandlerResult<Response<Body>> {
    write_existing(call, false, Ownership::RecordUpdate, |current| {
        if call.subresource() == Some("scale") {
            let patched = apply_patch(&scale_of(call, &current.value))?;
            let replicas = patched
                .get("spec")
                .and_then(|s| s.get("replicas"))
                .cloned()
                .unwrap_or(json!(0));
            return Ok(with_replicas(call, &current.value, replicas));
        }
        let mut patched = as_object(apply_patch(&current.value)?)?;
        // A patch that does not name a resourceVersion applies to the current object.
        let patch_names_rv =
            meta_str(&Value::Object(patched.clone()), "resourceVersion") != current.rv.to_string();
        if !patch_names_rv {
            metadata_mut(&mut patched).remove("resourceVersion");
        }
        Ok(patched)
    })
}

/// Server-side apply (`application/apply-patch+yaml`), creating the object if needed.
fn server_side_apply(call: &Call) -> HandlerResult<Response<Body>> {
    let Some(manager) = call.query.non_empty("fieldManager").map(str::to_owned) else {
        return Err(invalid(
            &call.resource,
            call.name(),
            "fieldManager",
            "FieldValueRequired",
            "Required value: is required for apply patch",
        ));
    };
    let force = call.query.flag("force");
    let mut applied = as_object(call.decode_body()?)?;
    if applied
        .get("metadata")
        .and_then(|m| m.get("managedFields"))
        .is_some()
    {
        return Err(fail(Status::bad_request(
            "metadata.managedFields must be nil",
        )));
    }
    call.check_type_meta(&mut applied)?;
    call.check_namespace(&mut applied)?;
    let name = call.name().to_owned();
    let applied_name = meta_str(&Value::Object(applied.clone()), "name").to_owned();
    if applied_name.is_empty() {
        metadata_mut(&mut applied).insert("name".to_owned(), json!(name));
    } else if applied_name != name {
        return Err(fail(Status::bad_request(format!(
            "the name of the object ({applied_name}) does not match the name on the URL ({name})"
        ))));
    }
    let kind = call.resource.kind.clone();
    let api_version = call.resource.api_version();
    let builtin = call.resource.builtin;
    let merge = move |live: &Value, config: &Value| -> Value {
        if builtin {
            strategic_merge(live, config, &|path: &[&str]| {
                builtin_list_strategy(&kind, path)
            })
            .unwrap_or_else(|_| {
                let mut merged = live.clone();
                json_patch::merge(&mut merged, config);
                merged
            })
        } else {
            let mut merged = live.clone();
            json_patch::merge(&mut merged, config);
            merged
        }
    };
    let applied = Value::Object(applied);
    let key_kind = call.resource.kind.clone();
    let time = now();
    let keys = list_key(&key_kind);
    let context = write_context(call, &manager, &api_version, &time, &keys);
    if call
        .state
        .store
        .get(&call.group_resource(), &call.key_for(&name))
        .is_none()
    {
        let created = managed_fields::apply(None, &applied, force, &context, &merge)
            .map_err(|conflicts| conflict_status(&conflicts))?;
        match create_object(call, as_object(created)?, call.dry_run()?, true) {
            // Another apply created it meanwhile: apply to that object instead.
            Err(status) if status.reason == StatusReason::AlreadyExists.as_str() => {}
            other => return other,
        }
    }
    write_existing(call, false, Ownership::AlreadyRecorded, |current| {
        let result = managed_fields::apply(Some(&current.value), &applied, force, &context, &merge)
            .map_err(|conflicts| conflict_status(&conflicts))?;
        let mut result = as_object(result)?;
        let applied_rv = meta_str(&applied, "resourceVersion");
        if applied_rv.is_empty() {
            metadata_mut(&mut result).remove("resourceVersion");
        }
        Ok(result)
    })
}

fn conflict_status(conflicts: &managed_fields::ApplyConflicts) -> Box<Status> {
    let mut status = Status::failure(StatusReason::Conflict, conflicts.message());
    status.details = Some(StatusDetails {
        causes: conflicts
            .causes()
            .into_iter()
            .map(|(reason, message, field)| StatusCause::new(&reason, &message, &field))
            .collect(),
        ..StatusDetails::default()
    });
    fail(status)
}

/// Delete options from the body (if any) or the query.
struct DeleteOptions {
    dry_run: bool,
    precondition_uid: Option<String>,
    precondition_rv: Option<String>,
}

fn delete_options(call: &Call) -> HandlerResult<DeleteOptions> {
    let body: Value = if call.body.iter().all(u8::is_ascii_whitespace) {
        Value::Null
    } else {
        serde_json::from_slice(&call.body).map_err(|err| {
            fail(Status::bad_request(format!(
                "the DeleteOptions body could not be decoded: {err}"
            )))
        })?
    };
    let dry_run = match body.get("dryRun").and_then(Value::as_array) {
        Some(values) => {
            let mut dry = false;
            for value in values {
                dry |= dry_run_value(value.as_str())?;
            }
            dry
        }
        None => call.dry_run()?,
    };
    if let Some(policy) = body
        .get("propagationPolicy")
        .and_then(Value::as_str)
        .or(call.query.get("propagationPolicy"))
        && !matches!(policy, "Foreground" | "Background" | "Orphan")
    {
        return Err(fail(Status::invalid(
            "meta.k8s.io",
            "DeleteOptions",
            "",
            vec![StatusCause::new(
                "FieldValueNotSupported",
                &format!(
                    "Unsupported value: {policy:?}: supported values: \"Foreground\", \"Background\", \"Orphan\""
                ),
                "propagationPolicy",
            )],
        )));
    }
    let preconditions = body.get("preconditions");
    let precondition = |field: &str| {
        preconditions
            .and_then(|p| p.get(field))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    Ok(DeleteOptions {
        dry_run,
        precondition_uid: precondition("uid"),
        precondition_rv: precondition("resourceVersion"),
    })
}

/// What a delete did.
enum Deleted {
    /// The object left storage; this was its last state.
    Removed(Value),
    /// The object has finalizers: it stays, marked for deletion.
    Marked(Value),
}

fn delete_one(call: &Call, name: &str, options: &DeleteOptions) -> HandlerResult<Deleted> {
    let mut result: Option<Deleted> = None;
    let group_resource = call.group_resource();
    call.state.store.write(&group_resource, &call.key_for(name), |current| {
        let current = current.ok_or_else(|| call.not_found(name))?;
        let uid = meta_str(&current.value, "uid");
        if let Some(expected) = &options.precondition_uid
            && expected != uid
        {
            return Err(fail(Status::conflict(
                &group_resource,
                name,
                &format!("Precondition failed: UID in precondition: {expected}, UID in object meta: {uid}"),
            )));
        }
        if let Some(expected) = &options.precondition_rv
            && *expected != current.rv.to_string()
        {
            return Err(fail(Status::conflict(
                &group_resource,
                name,
                &format!("Precondition failed: ResourceVersion in precondition: {expected}, ResourceVersion in object meta: {}", current.rv),
            )));
        }
        let has_finalizers = current
            .value
            .get("metadata")
            .and_then(|m| m.get("finalizers"))
            .and_then(Value::as_array)
            .is_some_and(|f| !f.is_empty());
        if !has_finalizers {
            result = Some(Deleted::Removed(current.value.clone()));
            return Ok(if options.dry_run { Write::Unchanged } else { Write::Delete });
        }
        let mut marked = current.value.as_object().cloned().unwrap_or_default();
        let metadata = metadata_mut(&mut marked);
        if metadata.contains_key("deletionTimestamp") {
            result = Some(Deleted::Marked(current.value.clone()));
            return Ok(Write::Unchanged);
        }
        metadata.insert("deletionTimestamp".to_owned(), json!(now()));
        metadata.insert("deletionGracePeriodSeconds".to_owned(), json!(0));
        if call.resource.tracks_generation {
            let generation = metadata.get("generation").and_then(Value::as_i64).unwrap_or(1);
            metadata.insert("generation".to_owned(), json!(generation + 1));
        }
        let marked = Value::Object(marked);
        result = Some(Deleted::Marked(marked.clone()));
        Ok(if options.dry_run { Write::Unchanged } else { Write::Update(marked) })
    })?;
    let deleted = result.ok_or_else(|| fail(Status::internal_error("delete decided nothing")))?;
    if let Deleted::Removed(object) = &deleted
        && !options.dry_run
    {
        after_removal(call, name, object);
    }
    Ok(deleted)
}

/// Side effects of removing a namespace (its contents go) or a CRD (its resource stops
/// being served and its objects go).
fn after_removal(call: &Call, name: &str, object: &Value) {
    match call.resource.special {
        Special::Namespace => {
            let prefix = format!("{name}/");
            for resource in call.state.registry.all().iter().filter(|r| r.namespaced) {
                let group_resource = resource.group_resource();
                for stored in call.state.store.snapshot(&group_resource, &prefix).objects {
                    let key = store_key(Some(name), stored.name());
                    let _ = call
                        .state
                        .store
                        .write(&group_resource, &key, |_| Ok::<_, ()>(Write::Delete));
                }
            }
        }
        Special::CustomResourceDefinition => {
            if let Ok(resources) = crd_resources(object)
                && let Some(first) = resources.first()
            {
                let group_resource = first.group_resource();
                call.state.registry.unregister(&first.group, &first.plural);
                for stored in call.state.store.snapshot(&group_resource, "").objects {
                    let key = store_key(Some(stored.namespace()), stored.name());
                    let _ = call
                        .state
                        .store
                        .write(&group_resource, &key, |_| Ok::<_, ()>(Write::Delete));
                }
                call.state.store.drop_watchers_of(&group_resource);
            }
        }
        Special::None => {}
    }
}

/// DELETE of one object.
pub(crate) fn delete(call: &Call) -> HandlerResult<Response<Body>> {
    if call.subresource().is_some() {
        return Err(fail(Status::failure(
            StatusReason::MethodNotAllowed,
            "the server does not allow this method on the requested resource",
        )));
    }
    let options = delete_options(call)?;
    let name = call.name().to_owned();
    match delete_one(call, &name, &options)? {
        Deleted::Marked(object) => Ok(json(StatusCode::OK, &object)),
        Deleted::Removed(object) if !call.resource.builtin => Ok(json(StatusCode::OK, &object)),
        Deleted::Removed(object) => {
            let group_resource = call.group_resource();
            Ok(json(
                StatusCode::OK,
                &Status::success(Some(StatusDetails {
                    name,
                    group: group_resource.group,
                    kind: group_resource.resource,
                    uid: meta_str(&object, "uid").to_owned(),
                    ..StatusDetails::default()
                })),
            ))
        }
    }
}

/// DELETE of a collection: every object matching the selectors; answers with the list of
/// the objects as they were before.
pub(crate) fn delete_collection(call: &Call) -> HandlerResult<Response<Body>> {
    let options = delete_options(call)?;
    let filter = call.selector_filter()?;
    let prefix = call.namespace_prefix();
    let snapshot = call.state.store.snapshot(&call.group_resource(), &prefix);
    let mut items = Vec::new();
    for object in snapshot.objects.iter().filter(|o| filter.matches(o)) {
        match delete_one(call, object.name(), &options) {
            Ok(_) => items.push(object.value.clone()),
            Err(status) if status.code == 404 => {}
            Err(status) => return Err(status),
        }
    }
    Ok(json(
        StatusCode::OK,
        &json!({
            "kind": call.resource.list_kind,
            "apiVersion": call.resource.api_version(),
            "metadata": {"resourceVersion": call.state.store.revision().to_string()},
            "items": items,
        }),
    ))
}

fn value_at<'a>(object: &'a Value, path: &str) -> Option<&'a Value> {
    path.trim_start_matches('.')
        .split('.')
        .try_fold(object, |value, segment| value.get(segment))
}

/// The object with `replicas` written at the resource's spec replicas path.
fn with_replicas(call: &Call, object: &Value, replicas: Value) -> Map<String, Value> {
    let mut result = object.clone();
    let path = call
        .resource
        .scale
        .as_ref()
        .map_or(".spec.replicas", |s| s.spec_replicas_path.as_str())
        .trim_start_matches('.')
        .to_owned();
    let mut target = &mut result;
    let segments: Vec<&str> = path.split('.').collect();
    if let Some((last, parents)) = segments.split_last() {
        for segment in parents {
            if !target.get(*segment).is_some_and(Value::is_object) {
                target[*segment] = json!({});
            }
            target = &mut target[*segment];
        }
        target[*last] = replicas;
    }
    result.as_object().cloned().unwrap_or_default()
}

/// The `autoscaling/v1` Scale of an object.
pub(crate) fn scale_of(call: &Call, object: &Value) -> Value {
    let Some(scale) = &call.resource.scale else {
        return Value::Null;
    };
    let metadata = object.get("metadata");
    let pick = |field: &str| {
        metadata
            .and_then(|m| m.get(field))
            .cloned()
            .unwrap_or(Value::Null)
    };
    let mut status = json!({"replicas": value_at(object, &scale.status_replicas_path).cloned().unwrap_or(json!(0))});
    if let Some(selector) = scale
        .label_selector_path
        .as_deref()
        .and_then(|p| value_at(object, p))
    {
        status["selector"] = selector.clone();
    }
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            "name": pick("name"), "namespace": pick("namespace"), "uid": pick("uid"),
            "resourceVersion": pick("resourceVersion"), "creationTimestamp": pick("creationTimestamp"),
        },
        "spec": {"replicas": value_at(object, &scale.spec_replicas_path).cloned().unwrap_or(json!(0))},
        "status": status,
    })
}
