//! Writes: create, update, the four patch types, delete and deletecollection, with the
//! status and scale subresources, eviction, reviews and token requests: each handler
//! parses the request, calls the registry's generic store
//! ([`crate::registry::store`], where the write pipeline lives), and encodes its answer.
//!
//! One file per verb: [`create`], [`update`], [`patch`] (with server-side apply),
//! [`delete`] (with deletecollection) and [`scale`] (the scale subresource); what they
//! share (the store request of a call, the answer after an update) is here.

mod create;
mod delete;
mod eviction;
mod patch;
mod reviews;
mod scale;
mod token_request;
mod update;

pub(crate) use create::create;
pub(crate) use delete::{delete, delete_collection};
pub(crate) use eviction::evict;
pub(crate) use patch::patch;
pub(crate) use reviews::review;
pub(crate) use scale::scale_of;
pub(crate) use token_request::token_request;
pub(crate) use update::update;

use create::create_object;
use scale::{validate_scale_replicas, with_replicas};

use http::{Response, StatusCode};
use kubeclient_machinery::{GroupResource, Status, StatusCause, StatusDetails, StatusReason};
use serde_json::{Map, Value, json};

use super::Call;
use super::object::{dry_run_value, meta_str, metadata_mut, now, store_key};
use crate::patch::managed_fields;
use crate::patch::managed_fields::ListMerge;
use crate::patch::strategic_merge::{
    ListStrategy, builtin_list_map_keys, builtin_list_strategy, strategic_merge,
};
use crate::registry::kinds::strategy_for;
use crate::registry::store::{
    self, Decoding, DeleteOptions, Deleted, Ownership, StoreResult, WriteRequest, WriteResult,
    conflict, invalid, with_write_context,
};
use crate::registry::version_conversion;
use crate::response::{Body, HandlerResult, fail, json, json_bytes, with_warnings};
use crate::storage::StoredObject;

/// The most JSON patch operations one request may carry.
const MAX_JSON_PATCH_OPERATIONS: usize = 10_000;

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

impl Call {
    fn name(&self) -> &str {
        self.path.name.as_deref().unwrap_or("")
    }

    fn subresource(&self) -> Option<&str> {
        self.path.subresource.as_deref()
    }

    fn key_for(&self, name: &str) -> String {
        store_key(self.path.namespace.as_deref(), name)
    }

    /// Checks (and for built-ins defaults) `apiVersion` and `kind`.
    fn check_type_meta(&self, object: &mut Map<String, Value>) -> HandlerResult<()> {
        store::check_type_meta(&self.resource, object)
    }

    /// Defaults the namespace from the URL and rejects a different one.
    fn check_namespace(&self, object: &mut Map<String, Value>) -> HandlerResult<()> {
        store::check_namespace(&self.resource, self.path.namespace.as_deref(), object)
    }

    /// The request's `fieldValidation`, as the store's field check.
    fn field_check(&self) -> impl Fn(&mut Value, Decoding) -> StoreResult<Vec<String>> + '_ {
        move |object, decoding| self.validate_fields(object, decoding)
    }

    /// The store request of this call, written by `field_manager` with `field_check`
    /// (patches decode as patches, everything else as a body).
    ///
    /// # Errors
    ///
    /// 422 for a `dryRun` other than `All`.
    fn write_request<'a>(
        &'a self,
        field_manager: &'a str,
        field_check: &'a (dyn Fn(&mut Value, Decoding) -> StoreResult<Vec<String>> + 'a),
    ) -> HandlerResult<WriteRequest<'a>> {
        Ok(WriteRequest {
            resource: &self.resource,
            namespace: self.path.namespace.as_deref(),
            name: self.name(),
            subresource: self.subresource(),
            dry_run: self.dry_run()?,
            user: &self.user,
            field_manager,
            decoding: if self.content_type.contains("patch") {
                Decoding::Patch
            } else {
                Decoding::Body
            },
            field_check,
        })
    }
}

/// Runs an update-like write (PUT, PATCH) on an existing object through the store and
/// answers with the result. `compute` runs outside the store lock and again if another
/// writer changed the object meanwhile.
fn write_existing(
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
