//! What a registry operation answers: its value, or the [`Status`] the API answers with,
//! and the errors the store and the checks it runs build. This file imports nothing of
//! the store, so the checks the store runs (`validate`, `immutable`, the custom resource
//! schemas) can return its errors without importing the store that runs them.

use kubeclient_machinery::{GroupResource, Status, StatusCause};
use serde_json::Value;

use crate::registry::ResourceDef;

/// The result of a registry operation: the value, or the Status the API answers with.
pub(crate) type StoreResult<T> = Result<T, Box<Status>>;

/// A [`Status`] as a registry error.
pub(crate) fn fail(status: Status) -> Box<Status> {
    Box::new(status)
}

/// 409 for a stale resourceVersion, with the API server's message.
pub(crate) fn conflict(resource: &GroupResource, name: &str) -> Box<Status> {
    fail(Status::conflict(
        resource,
        name,
        "the object has been modified; please apply your changes to the latest version and try again",
    ))
}

/// 422 Invalid with one cause.
pub(crate) fn invalid(
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

/// 422 Invalid for `object` with `causes` (kube-apiserver's message naming the object).
pub(crate) fn invalid_object(
    resource: &ResourceDef,
    object: &Value,
    causes: Vec<StatusCause>,
) -> Box<Status> {
    let name = object
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("");
    fail(Status::invalid(
        &resource.group,
        &resource.kind,
        name,
        causes,
    ))
}
