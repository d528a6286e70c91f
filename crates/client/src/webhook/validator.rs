//! [`CustomValidator`] and [`validate_review`]: a validating webhook (controller-runtime's
//! `admission.CustomValidator` and `WithCustomValidator`).

use std::future::Future;

use serde::de::DeserializeOwned;

use super::defaulter::short_type;
use super::{AdmissionRequest, AdmissionResponse, AdmissionReview, Denial, Operation};

/// Warnings for the user (kubectl prints each as `Warning: ...`) on an allowed request.
pub type Warnings = Vec<String>;

/// Checks a `K` being created, updated or deleted; each check allows by default.
///
/// # Examples
///
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kubeclient::webhook::{CustomValidator, Denial, Warnings};
///
/// /// The `owner` key of a ConfigMap never changes.
/// struct OwnerKept;
/// impl CustomValidator<ConfigMap> for OwnerKept {
///     async fn validate_update(&self, old: &ConfigMap, new: &ConfigMap) -> Result<Warnings, Denial> {
///         let owner = |cm: &ConfigMap| cm.data.as_ref().and_then(|d| d.get("owner")).cloned();
///         if owner(old) != owner(new) {
///             return Err(Denial::invalid("data.owner is immutable"));
///         }
///         Ok(Vec::new())
///     }
/// }
/// ```
pub trait CustomValidator<K>: Send + Sync {
    /// A create of `obj`.
    fn validate_create(&self, obj: &K) -> impl Future<Output = Result<Warnings, Denial>> + Send {
        let _ = obj;
        async { Ok(Vec::new()) }
    }

    /// An update from `old` to `new`.
    fn validate_update(
        &self,
        old: &K,
        new: &K,
    ) -> impl Future<Output = Result<Warnings, Denial>> + Send {
        let _ = (old, new);
        async { Ok(Vec::new()) }
    }

    /// A delete of `obj` (its state before the delete).
    fn validate_delete(&self, obj: &K) -> impl Future<Output = Result<Warnings, Denial>> + Send {
        let _ = obj;
        async { Ok(Vec::new()) }
    }
}

/// Answers a validating webhook's review with `validator`: allowed with its warnings, or
/// refused with its [`Denial`]. A connect is allowed; an object that does not decode as
/// `K` is refused with 400.
pub async fn validate_review<K, V>(validator: &V, review: AdmissionReview) -> AdmissionReview
where
    K: DeserializeOwned + Send + Sync,
    V: CustomValidator<K>,
{
    let response = match &review.request {
        Some(request) => validate_request(validator, request).await,
        None => AdmissionResponse::refused("", 400, "BadRequest", "the review has no request"),
    };
    AdmissionReview::answer(response)
}

async fn validate_request<K, V>(validator: &V, request: &AdmissionRequest) -> AdmissionResponse
where
    K: DeserializeOwned + Send + Sync,
    V: CustomValidator<K>,
{
    let uid = request.uid.as_str();
    // The message of a refusal when the object is missing or does not decode.
    let decode = |value: &Option<serde_json::Value>, which: &str| -> Result<K, String> {
        let value = value
            .as_ref()
            .ok_or_else(|| format!("the request has no {which}"))?;
        serde_json::from_value(value.clone()).map_err(|err| {
            format!(
                "the {which} does not decode as {}: {err}",
                short_type::<K>()
            )
        })
    };
    let outcome = match request.operation {
        Operation::Create => decode(&request.object, "object").map(|obj| (None, obj)),
        Operation::Update => decode(&request.old_object, "oldObject")
            .and_then(|old| Ok((Some(old), decode(&request.object, "object")?))),
        // The object being deleted is the old object (kubernetes#76346).
        Operation::Delete => decode(&request.old_object, "oldObject").map(|obj| (None, obj)),
        Operation::Connect => return AdmissionResponse::allowed(uid),
    };
    let outcome = match (request.operation, outcome) {
        (_, Err(message)) => return AdmissionResponse::refused(uid, 400, "BadRequest", &message),
        (Operation::Update, Ok((Some(old), new))) => validator.validate_update(&old, &new).await,
        (Operation::Delete, Ok((_, obj))) => validator.validate_delete(&obj).await,
        (_, Ok((_, obj))) => validator.validate_create(&obj).await,
    };
    match outcome {
        Ok(warnings) => AdmissionResponse {
            warnings,
            ..AdmissionResponse::allowed(uid)
        },
        Err(denial) => {
            AdmissionResponse::refused(uid, denial.code, &denial.reason, &denial.message)
        }
    }
}
