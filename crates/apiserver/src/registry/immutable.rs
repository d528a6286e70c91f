//! Fields an update may not change, with kube-apiserver's messages: `metadata.uid` for
//! every kind (a PUT naming another uid fails its precondition with 409, a patch changing
//! it is 422), then the kind's own, from its [`Strategy`](super::strategy::Strategy)
//! (`immutable_causes`: a workload's selector, an immutable ConfigMap's data, a Service's
//! cluster IPs ...).

use kubeclient_machinery::{Status, StatusCause};
use serde_json::{Map, Value};

use super::kinds::strategy_for;
use super::store::result::{StoreResult, fail};
use super::store::write_request::{Decoding, WriteRequest};
use crate::object::{meta_str, store_key};

/// Checks `desired` (the object a write asks for, before server fields are carried
/// over) against `current`: the causes of a 422 for every immutable field changed (they
/// follow the object's own validation errors in the answer, as in kube-apiserver).
///
/// # Errors
///
/// 409 for a PUT with another uid.
pub(crate) fn check(
    request: &WriteRequest<'_>,
    current: &Value,
    desired: &Map<String, Value>,
    decoding: Decoding,
) -> StoreResult<Vec<StatusCause>> {
    if request.subresource.is_some() {
        return Ok(Vec::new());
    }
    let current_uid = meta_str(current, "uid");
    let desired_value = Value::Object(desired.clone());
    let asked_uid = meta_str(&desired_value, "uid");
    let mut causes = Vec::new();
    if !asked_uid.is_empty() && asked_uid != current_uid {
        if decoding == Decoding::Body {
            return Err(fail(Status::conflict(
                &request.group_resource(),
                request.name,
                &format!(
                    "StorageError: invalid object, Code: 4, Key: /registry/{}/{}, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: {asked_uid}, UID in object meta: {current_uid}",
                    request.group_resource(),
                    store_key(request.namespace, request.name)
                ),
            )));
        }
        causes.push(StatusCause::new(
            "FieldValueInvalid",
            &format!("Invalid value: {asked_uid:?}: field is immutable"),
            "metadata.uid",
        ));
    }
    strategy_for(request.resource).immutable_causes(current, &desired_value, &mut causes);
    Ok(causes)
}
