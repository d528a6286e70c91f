//! A write to an existing object (PUT, PATCH, apply, the scale subresource): the store's
//! update with the handler's compute step, then the answer (the scale subresource answers
//! with a Scale).

use super::scale::scale_of;
use super::*;

/// Runs an update-like write (PUT, PATCH) on an existing object through the store and
/// answers with the result. `compute` runs outside the store lock and again if another
/// writer changed the object meanwhile.
pub(super) fn write_existing(
    call: &Call,
    require_rv: bool,
    ownership: Ownership,
    mut compute: impl FnMut(&StoredObject) -> HandlerResult<Map<String, Value>>,
) -> HandlerResult<Response<Body>> {
    let manager = call.field_manager();
    let check = call.field_check();
    let request = call.write_request(&manager, &check)?;
    let result = call
        .state
        .generic_store()
        .update(&request, require_rv, ownership, |current| {
            compute(current).map(Some)
        })?;
    respond_after_update(call, result)
}

fn respond_after_update(call: &Call, result: WriteResult) -> HandlerResult<Response<Body>> {
    let WriteResult {
        stored,
        computed,
        warnings,
        ..
    } = result;
    respond_with(call, stored.as_deref(), computed)
        .map(|response| with_warnings(response, &warnings))
}

fn respond_with(
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
            version_conversion::served_bytes(resource, stored, call.state.config.webhooks)?,
        )),
        (_, Some(computed)) => Ok(json(
            StatusCode::OK,
            &*version_conversion::served_value(resource, &computed, call.state.config.webhooks)?,
        )),
        (Some(stored), None) => Ok(json_bytes(
            StatusCode::OK,
            version_conversion::served_bytes(resource, stored, call.state.config.webhooks)?,
        )),
        (None, None) => Err(fail(Status::internal_error("update produced no object"))),
    }
}
