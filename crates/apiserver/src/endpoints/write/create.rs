//! POST: creating an object.

use super::*;

/// POST: creates an object (201).
pub(crate) fn create(call: &Call) -> HandlerResult<Response<Body>> {
    if call.subresource().is_some() {
        return Err(fail(Status::failure(
            StatusReason::MethodNotAllowed,
            "the server does not allow this method on the requested resource",
        )));
    }
    if !call.resource.builtin && definition_terminating(call) {
        let resource = &call.resource;
        return Err(fail(
            Status::failure(
                StatusReason::MethodNotAllowed,
                "create not allowed while custom resource definition is terminating",
            )
            .with_details(StatusDetails {
                group: resource.group.clone(),
                kind: resource.plural.clone(),
                ..StatusDetails::default()
            }),
        ));
    }
    let object = as_object(call.decode_body()?)?;
    create_object(call, object, Ownership::RecordUpdate)
}

/// Whether the CustomResourceDefinition of the custom resource `call` writes is being
/// deleted.
fn definition_terminating(call: &Call) -> bool {
    let crds = GroupResource::new("apiextensions.k8s.io", "customresourcedefinitions");
    let name = format!("{}.{}", call.resource.plural, call.resource.group);
    call.state
        .store
        .get(&crds, &name)
        .is_some_and(|crd| crd.value.pointer("/metadata/deletionTimestamp").is_some())
}

/// Creates `object` through the store and answers 201 with it. `ownership` is
/// [`Ownership::AlreadyRecorded`] for server-side apply creates, whose object already
/// carries its managedFields.
pub(super) fn create_object(
    call: &Call,
    object: Map<String, Value>,
    ownership: Ownership,
) -> HandlerResult<Response<Body>> {
    let manager = call.field_manager();
    let check = call.field_check();
    let request = WriteRequest {
        decoding: Decoding::Body,
        ..call.write_request(&manager, &check)?
    };
    let WriteResult {
        stored,
        computed,
        warnings,
        ..
    } = call
        .state
        .generic_store()
        .create(&request, object, ownership)?;
    let response = match (stored, computed) {
        (Some(created), _) => json_bytes(
            StatusCode::CREATED,
            version_conversion::served_bytes(&call.resource, &created, call.state.config.webhooks)?,
        ),
        (None, Some(value)) => json(
            StatusCode::CREATED,
            &*version_conversion::served_value(&call.resource, &value, call.state.config.webhooks)?,
        ),
        (None, None) => return Err(fail(Status::internal_error("create stored nothing"))),
    };
    Ok(with_warnings(response, &warnings))
}
