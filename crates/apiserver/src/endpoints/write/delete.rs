//! DELETE of one object and deletecollection: the DeleteOptions of the request, the
//! store's delete (finalizers, preconditions, propagation), and the answer.

use super::*;
use crate::registry::Propagation;

/// The DeleteOptions of a request, from its body (if any) or its query, and whether it
/// is a dry run.
fn delete_options(call: &Call) -> HandlerResult<(DeleteOptions, bool)> {
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
    let policy = body
        .get("propagationPolicy")
        .and_then(Value::as_str)
        .or(call.query.get("propagationPolicy"));
    let orphan_dependents = match body.get("orphanDependents") {
        Some(value) => value.as_bool(),
        None => call.query.get("orphanDependents").map(|v| v == "true"),
    };
    let propagation = match (policy, orphan_dependents) {
        (Some(policy), Some(_)) => {
            return Err(invalid_delete_options(
                "propagationPolicy",
                &format!(
                    "Invalid value: {policy:?}: orphanDependents and deletionPropagation cannot be both set"
                ),
            ));
        }
        (Some("Foreground"), None) => Some(Propagation::Foreground),
        (Some("Background"), None) => Some(Propagation::Background),
        (Some("Orphan"), None) => Some(Propagation::Orphan),
        (Some(policy), None) => {
            return Err(invalid_delete_options(
                "propagationPolicy",
                &format!(
                    "Unsupported value: {policy:?}: supported values: \"Foreground\", \"Background\", \"Orphan\""
                ),
            ));
        }
        (None, Some(true)) => Some(Propagation::Orphan),
        (None, Some(false)) => Some(Propagation::Background),
        (None, None) => None,
    };
    let preconditions = body.get("preconditions");
    let precondition = |field: &str| {
        preconditions
            .and_then(|p| p.get(field))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let grace_period_seconds = match body.get("gracePeriodSeconds") {
        Some(Value::Null) | None => call.query.int64("gracePeriodSeconds")?,
        Some(value) => Some(value.as_i64().ok_or_else(|| {
            fail(Status::bad_request(format!(
                "the DeleteOptions body could not be decoded: gracePeriodSeconds {value} is not an integer"
            )))
        })?),
    };
    let options = DeleteOptions {
        precondition_uid: precondition("uid"),
        precondition_rv: precondition("resourceVersion"),
        propagation,
        grace_period_seconds,
    };
    Ok((options, dry_run))
}

fn invalid_delete_options(field: &str, message: &str) -> Box<Status> {
    let reason = if message.starts_with("Unsupported") {
        "FieldValueNotSupported"
    } else {
        "FieldValueInvalid"
    };
    fail(Status::invalid(
        "meta.k8s.io",
        "DeleteOptions",
        "",
        vec![StatusCause::new(reason, message, field)],
    ))
}

/// DELETE of one object.
pub(crate) fn delete(call: &Call) -> HandlerResult<Response<Body>> {
    if call.subresource().is_some() {
        return Err(fail(Status::failure(
            StatusReason::MethodNotAllowed,
            "the server does not allow this method on the requested resource",
        )));
    }
    let (options, dry_run) = delete_options(call)?;
    let name = call.name().to_owned();
    let manager = call.field_manager();
    let check = call.field_check();
    let request = WriteRequest {
        dry_run,
        ..call.write_request(&manager, &check)?
    };
    match call.state.generic_store().delete(&request, &options)? {
        Deleted::Marked(object) => Ok(json(
            StatusCode::OK,
            &*version_conversion::served_value(
                &call.resource,
                &object,
                call.state.config.webhooks,
            )?,
        )),
        Deleted::Removed(object) if strategy_for(&call.resource).return_deleted_object() => {
            Ok(json(
                StatusCode::OK,
                &*version_conversion::served_value(
                    &call.resource,
                    &object,
                    call.state.config.webhooks,
                )?,
            ))
        }
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
    let (options, dry_run) = delete_options(call)?;
    let filter = call.selector_filter()?;
    let manager = call.field_manager();
    let check = call.field_check();
    let request = WriteRequest {
        dry_run,
        ..call.write_request(&manager, &check)?
    };
    let deleted = call.state.generic_store().delete_collection(
        &request,
        |object| filter.matches(object),
        &options,
    )?;
    let deleted = deleted.iter().map(|object| object.value.clone()).collect();
    let mut items =
        version_conversion::served_items(&call.resource, deleted, call.state.config.webhooks)?;
    // As in a list, items of built-in kinds carry no kind or apiVersion.
    if call.resource.builtin {
        for item in items.iter_mut().filter_map(Value::as_object_mut) {
            item.remove("kind");
            item.remove("apiVersion");
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
