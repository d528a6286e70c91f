//! Update: the read-modify-write every change of an existing object runs (PUT, the four
//! patch types, server-side apply, the scale and status subresources, the controllers'
//! rewrites), with a compute step that turns the stored object into the desired one.

use super::validate_object;
use super::*;
use crate::object::{finalized, meta_str, now};
use crate::registry::apiextensions::version_conversion;
use crate::registry::kinds::pod_binding::BINDING_SUBRESOURCE;
use crate::registry::kinds::strategy_for;
use crate::registry::{Special, immutable, validate};
use crate::storage::Write;

/// How an update treats managedFields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ownership {
    /// Record the changed fields for the request's field manager (create, PUT, non-apply
    /// PATCH, a controller's write).
    RecordUpdate,
    /// The computed object already carries its managedFields (server-side apply).
    AlreadyRecorded,
}

impl GenericStore<'_> {
    /// Updates the existing object `request` names. `compute` turns the stored object (as
    /// the request's version serves it) into the desired one, or `None` to leave it as it
    /// is; it runs outside the storage lock, and again if another writer changed the
    /// object meanwhile ([`Store::update`]). With `require_rv` a body without a
    /// resourceVersion is refused unless the resource allows unconditional updates (PUT).
    /// A result marked for deletion with a grace period of 0 that has no finalizers left
    /// leaves storage (see [`removed_by_update`]).
    ///
    /// # Errors
    ///
    /// What `compute` returns, 404 for a missing object, 409 for a stale
    /// resourceVersion, 400/422 for an object the checks refuse.
    pub(crate) fn update(
        &self,
        request: &WriteRequest<'_>,
        require_rv: bool,
        ownership: Ownership,
        mut compute: impl FnMut(&StoredObject) -> StoreResult<Option<Map<String, Value>>>,
    ) -> StoreResult<WriteResult> {
        let resource = request.resource;
        let strategy = strategy_for(resource);
        let name = request.name;
        let mut response_object: Option<Value> = None;
        let mut removed = false;
        let mut warnings = Vec::new();
        let mut admission_warnings = Vec::new();
        let outcome = self
            .storage
            .update(&request.storage(), &request.key_for(name), |current| {
                response_object = None;
                removed = false;
                admission_warnings.clear();
                let current = current.ok_or_else(|| request.not_found(name))?;
                // Patches and updates apply to the object as the request's version serves it.
                let converted = version_conversion::served_object(resource, current, self.webhooks)?;
                let current = converted.as_ref().unwrap_or(current);
                let Some(mut desired) = compute(current)? else {
                    return Ok(Write::Unchanged);
                };
                if request.admit {
                    // The webhooks see the decoded object with its defaults, as
                    // kube-apiserver's do.
                    strategy.defaults(self.strategy_context(resource), &mut desired);
                    let (admitted, found) = self.admit_update(request, desired, &current.value)?;
                    desired = admitted;
                    admission_warnings = found;
                }
                request.check_type_meta(&mut desired)?;
                request.check_namespace(&mut desired)?;
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
                    if require_rv && !strategy.allow_unconditional_update() {
                        // This one error names the resource, not the kind
                        // (`leases.coordination.k8s.io`).
                        return Err(fail(Status::invalid(
                            &resource.group,
                            &resource.plural,
                            name,
                            vec![StatusCause::new(
                                "FieldValueInvalid",
                                "Invalid value: 0x0: must be specified for an update",
                                "metadata.resourceVersion",
                            )],
                        )));
                    }
                } else if body_rv != current.rv.to_string() {
                    return Err(request.conflict());
                }
                let context = self.strategy_context(resource);
                strategy.defaults(context, &mut desired);
                strategy.prepare_for_update(context, &mut desired, &current.value);
                let immutable_causes =
                    immutable::check(request, &current.value, &desired, request.decoding)?;
                let mut result = Value::Object(carry_over(request, &current.value, desired));
                warnings = (request.field_check)(&mut result, request.decoding)?;
                if ownership == Ownership::RecordUpdate {
                    with_write_context(request, &now(), |context| {
                        managed_fields::record_update(Some(&current.value), &mut result, context);
                    });
                }
                validate::check_object(resource, &result, Some(&current.value))?;
                validate_object(resource, &result, Some(&current.value), immutable_causes)?;
                if request.admit {
                    admission_warnings.extend(self.validate_write(request, &result, Some(&current.value))?);
                }
                version_conversion::to_storage_version(resource, &mut result, self.webhooks)?;
                validate::check_size(resource, &result, self.max_object_bytes)?;
                removed = removed_by_update(&current.value, &result);
                let write = if removed {
                    Write::Delete
                } else {
                    Write::Update(result.clone())
                };
                if request.dry_run {
                    // Nothing is written, so the answer keeps the live resourceVersion, as
                    // the real server's does (`kubectl diff` compares against it).
                    if let Some(metadata) = result.get_mut("metadata").and_then(Value::as_object_mut) {
                        metadata.insert("resourceVersion".to_owned(), json!(current.rv.to_string()));
                    }
                }
                response_object = Some(result);
                Ok(if request.dry_run { Write::Unchanged } else { write })
            })?;
        warnings.extend(admission_warnings);
        let changed = outcome.change.is_some();
        if !request.dry_run
            && let Some(result) = &response_object
        {
            if removed {
                self.after_removal(resource, result);
            } else if resource.special == Special::CustomResourceDefinition
                && let Some(stored) = &outcome.object
            {
                self.resources.serve_crd(&stored.value);
            }
            self.committed(request, Committed::Updated(result));
        }
        Ok(WriteResult {
            stored: outcome.object,
            computed: response_object,
            changed,
            warnings,
        })
    }
}

/// Copies server-owned metadata from the stored object and applies the status/spec split
/// of the status subresource; bumps `generation` when the spec changed.
fn carry_over(
    request: &WriteRequest<'_>,
    current: &Value,
    mut new: Map<String, Value>,
) -> Map<String, Value> {
    let resource = request.resource;
    let old_metadata = current
        .get("metadata")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    if request.subresource == Some("status") {
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
    if request.subresource == Some("approval") {
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
    if request.subresource == Some(BINDING_SUBRESOURCE) {
        // A Pod's binding sets `spec.nodeName` and its `PodScheduled` condition only.
        let mut result = current.as_object().cloned().unwrap_or_default();
        let node = new
            .get("spec")
            .and_then(|spec| spec.get("nodeName"))
            .cloned();
        if let (Some(Value::Object(spec)), Some(node)) = (result.get_mut("spec"), node) {
            spec.insert("nodeName".to_owned(), node);
        }
        if let Some(status) = new.remove("status") {
            result.insert("status".to_owned(), status);
        }
        return result;
    }
    if request.subresource == Some("ephemeralcontainers") {
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
/// being part of what they declare); the annotations too when the strategy says so
/// (a Deployment copies them to its ReplicaSets).
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
    strategy_for(resource).annotations_bump_generation()
        && annotations(&current) != annotations(new)
}

/// Whether an update removes the object (kube-apiserver's `shouldDeleteDuringUpdate`):
/// the update leaves it marked for deletion without finalizers, and its grace period was
/// already 0 (objects deleted while they had finalizers; Pods the kubelet finished
/// deleting). A Pod in its grace period stays, whatever its status updates say.
fn removed_by_update(current: &Value, result: &Value) -> bool {
    finalized(result)
        && current
            .pointer("/metadata/deletionGracePeriodSeconds")
            .and_then(Value::as_i64)
            == Some(0)
}
