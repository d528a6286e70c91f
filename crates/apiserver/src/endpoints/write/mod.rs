//! Writes: create, update, the four patch types, delete and deletecollection, with the
//! status and scale subresources, eviction, binding, reviews and token requests: each handler
//! parses the request, calls the registry's generic store
//! ([`crate::registry::store`], where the write pipeline lives), and encodes its answer.
//!
//! One file per verb: [`create`], [`update`], [`patch`] (with server-side apply),
//! [`delete`] (with deletecollection) and [`scale`] (the scale subresource); what they
//! share: the store request of a call (here) and the write to an existing object with
//! its answer ([`existing`]).

mod binding;
mod create;
mod delete;
mod eviction;
mod existing;
mod patch;
mod reviews;
mod scale;
mod token_request;
mod update;

pub(crate) use binding::bind_pod;
pub(crate) use create::create;
pub(crate) use delete::{delete, delete_collection};
pub(crate) use eviction::evict;
pub(crate) use patch::patch;
pub(crate) use reviews::review;
pub(crate) use scale::scale_of;
pub(crate) use token_request::token_request;
pub(crate) use update::update;

use http::{Response, StatusCode};
use kubeclient_machinery::{GroupResource, Status, StatusCause, StatusDetails, StatusReason};
use serde_json::{Map, Value, json};

use super::call::Call;
use super::object::{dry_run_value, meta_str, metadata_mut, now, store_key};
use crate::authorization::{RbacWrite, check_rbac_write};
use crate::patch::managed_fields;
use crate::patch::managed_fields::ListMerge;
use crate::patch::strategic_merge::{
    ListStrategy, builtin_list_map_keys, builtin_list_strategy, strategic_merge,
};
use crate::registry::apiextensions::version_conversion;
use crate::registry::kinds::strategy_for;
use crate::registry::store::{
    self, Decoding, DeleteOptions, Deleted, Ownership, StoreResult, WriteRequest, WriteResult,
    conflict, invalid, with_write_context,
};
use crate::response::{Body, HandlerResult, fail, json, json_bytes, with_warnings};
use crate::storage::StoredObject;

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

    /// The request's own checks of the decoded object, as the store's field check: its
    /// `fieldValidation`, then (for Roles and role bindings under RBAC) the escalation and
    /// bind checks, which see the object a patch makes too.
    fn field_check(&self) -> impl Fn(&mut Value, Decoding) -> StoreResult<Vec<String>> + '_ {
        move |object, decoding| {
            let warnings = self.validate_fields(object, decoding)?;
            if self.resource.group == "rbac.authorization.k8s.io" && self.subresource().is_none() {
                let write = RbacWrite {
                    resource: &self.resource.plural,
                    namespace: self.path.namespace.as_deref().unwrap_or(""),
                    object,
                };
                check_rbac_write(
                    self.state.config.authorization_mode,
                    &self.state.store,
                    &self.user,
                    &write,
                )?;
            }
            Ok(warnings)
        }
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
            admit: true,
        })
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
