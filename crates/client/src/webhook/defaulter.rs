//! [`CustomDefaulter`] and [`default_review`]: a mutating webhook that fills in defaults
//! (controller-runtime's `admission.CustomDefaulter` and `WithCustomDefaulter`).

use std::future::Future;

use json_patch::PatchOperation;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{AdmissionRequest, AdmissionResponse, AdmissionReview, Denial, Operation};

/// Sets the defaults of a `K` being created or updated.
///
/// # Examples
///
/// ```
/// use k8s_openapi::api::apps::v1::Deployment;
/// use kubeclient::webhook::{CustomDefaulter, Denial};
///
/// struct OneReplica;
/// impl CustomDefaulter<Deployment> for OneReplica {
///     async fn default(&self, deployment: &mut Deployment) -> Result<(), Denial> {
///         deployment.spec.replicas.get_or_insert(1);
///         Ok(())
///     }
/// }
/// ```
pub trait CustomDefaulter<K>: Send + Sync {
    /// Changes `obj` in place; `Err` refuses the request.
    fn default(&self, obj: &mut K) -> impl Future<Output = Result<(), Denial>> + Send;
}

/// Answers a mutating webhook's review with `defaulter`: the changes it made to the object,
/// as a JSON patch. As controller-runtime: a delete is allowed untouched, and fields `K`
/// does not know (a newer API's, or a custom resource's unknown ones) are kept, never
/// patched away.
///
/// An object that does not decode as `K` is refused with 400; a defaulter's [`Denial`] with
/// its code and message.
pub async fn default_review<K, D>(defaulter: &D, review: AdmissionReview) -> AdmissionReview
where
    K: Serialize + DeserializeOwned,
    D: CustomDefaulter<K>,
{
    let response = match &review.request {
        Some(request) => default_request(defaulter, request).await,
        None => AdmissionResponse::refused("", 400, "BadRequest", "the review has no request"),
    };
    AdmissionReview::answer(response)
}

async fn default_request<K, D>(defaulter: &D, request: &AdmissionRequest) -> AdmissionResponse
where
    K: Serialize + DeserializeOwned,
    D: CustomDefaulter<K>,
{
    let uid = request.uid.as_str();
    if request.operation == Operation::Delete {
        return AdmissionResponse::allowed(uid);
    }
    let Some(original) = &request.object else {
        return AdmissionResponse::refused(uid, 400, "BadRequest", "the request has no object");
    };
    let mut obj: K = match serde_json::from_value(original.clone()) {
        Ok(obj) => obj,
        Err(err) => {
            let message = format!("the object does not decode as {}: {err}", short_type::<K>());
            return AdmissionResponse::refused(uid, 400, "BadRequest", &message);
        }
    };
    if let Err(denial) = defaulter.default(&mut obj).await {
        return AdmissionResponse::refused(uid, denial.code, &denial.reason, &denial.message);
    }
    let defaulted = match serde_json::to_value(&obj) {
        Ok(value) => value,
        Err(err) => {
            let message = format!("the defaulted object does not serialize: {err}");
            return AdmissionResponse::refused(uid, 500, "InternalError", &message);
        }
    };
    let operations: Vec<PatchOperation> = json_patch::diff(original, &defaulted)
        .0
        .into_iter()
        .filter(|operation| !matches!(operation, PatchOperation::Remove(_)))
        .collect();
    let mut response = AdmissionResponse::allowed(uid);
    if !operations.is_empty() {
        match serde_json::to_vec(&operations) {
            Ok(patch) => {
                response.patch = Some(patch);
                response.patch_type = Some("JSONPatch".to_owned());
            }
            Err(err) => {
                let message = format!("the patch does not serialize: {err}");
                return AdmissionResponse::refused(uid, 500, "InternalError", &message);
            }
        }
    }
    response
}

/// `K`'s name without its module path, for messages.
pub(super) fn short_type<K>() -> &'static str {
    let name = std::any::type_name::<K>();
    name.rsplit("::").next().unwrap_or(name)
}
