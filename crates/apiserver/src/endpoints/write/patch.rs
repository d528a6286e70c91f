//! PATCH: JSON, merge and strategic merge patches, and server-side apply.

use super::create::create_object;
use super::existing::write_existing;
use super::scale::{validate_scale_replicas, with_replicas};
use super::*;

/// The most JSON patch operations one request may carry.
const MAX_JSON_PATCH_OPERATIONS: usize = 10_000;

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
            validate_scale_replicas(call, &replicas)?;
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
    // The field manager's first check (kube-apiserver's `structuredmerge.go`), missing
    // apiVersion included.
    let patch_version = applied
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let expected_version = call.resource.api_version();
    if patch_version != expected_version {
        return Err(fail(Status::bad_request(format!(
            "Incorrect version specified in apply patch. Specified patch version: {patch_version}, expected: {expected_version}"
        ))));
    }
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
    // Merging would fold items with the same merge key into one: a configuration naming
    // two containers alike is refused as it stands, as the create would be.
    let applied_value = Value::Object(applied.clone());
    let duplicates: Vec<StatusCause> =
        strategy_for(&call.resource).duplicate_merge_keys(&applied_value);
    if !duplicates.is_empty() {
        return Err(fail(Status::invalid(
            &call.resource.group,
            &call.resource.kind,
            &name,
            duplicates,
        )));
    }
    let kind = call.resource.kind.clone();
    let builtin = call.resource.builtin;
    let lists = move |path: &[&str]| match builtin_list_map_keys(&kind, path) {
        Some(keys) => ListMerge::Map(keys),
        None if builtin_list_strategy(&kind, path) == ListStrategy::MergePrimitives => {
            ListMerge::Set
        }
        None => ListMerge::Atomic,
    };
    // Built-in kinds merge as structured-merge-diff does (list-maps on all their keys);
    // custom resources, whose lists are atomic unless their schema says otherwise, by JSON
    // merge.
    let merge = |live: &Value, config: &Value| -> Value {
        if builtin {
            managed_fields::merge_applied(live, config, &lists)
        } else {
            let mut merged = live.clone();
            json_patch::merge(&mut merged, config);
            merged
        }
    };
    let mut applied = Value::Object(applied);
    if builtin {
        // A port's `protocol` keys its list-map; left out, it is the schema's default.
        managed_fields::default_list_keys(&mut applied, &lists);
    }
    let applied = applied;
    let time = crate::object::now();
    let check = call.field_check();
    let request = call.write_request(&manager, &check)?;
    let apply = |live: Option<&Value>| {
        with_write_context(&request, &time, |context| {
            managed_fields::apply(live, &applied, force, context, &merge)
        })
        .map_err(|conflicts| conflict_status(&conflicts))
    };
    if call
        .state
        .generic_store()
        .get(&call.resource, call.path.namespace.as_deref(), &name)
        .is_none()
    {
        let created = apply(None)?;
        match create_object(call, as_object(created)?, Ownership::AlreadyRecorded) {
            // Another apply created it meanwhile: apply to that object instead.
            Err(status) if status.reason == StatusReason::AlreadyExists.as_str() => {}
            other => return other,
        }
    }
    write_existing(call, false, Ownership::AlreadyRecorded, |current| {
        let mut result = as_object(apply(Some(&current.value))?)?;
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
