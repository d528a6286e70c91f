//! The `AdmissionReview` a webhook is sent (kube-apiserver's `CreateAdmissionObjects`),
//! and what its answer must be (`VerifyAdmissionResponse`): the same uid, the review's
//! apiVersion and kind, a patch only with its type and only from a mutating webhook.

use base64::Engine;
use serde::Deserialize;
use serde_json::{Value, json};

use super::attributes::Attributes;
use super::webhook::Webhook;
use crate::registry::ResourceDef;

/// The review versions this server speaks, in its order of preference.
const VERSIONS: [&str; 2] = ["v1", "v1beta1"];

/// The review version to send `webhook`: the first of its `admissionReviewVersions`
/// this server speaks.
///
/// # Errors
///
/// The reason when it speaks none of them.
pub(crate) fn review_version(webhook: &Webhook) -> Result<&'static str, String> {
    webhook
        .review_versions
        .iter()
        .find_map(|version| VERSIONS.iter().find(|v| **v == version.as_str()).copied())
        .ok_or_else(|| {
            format!(
                "webhook does not accept known AdmissionReview versions {:?}",
                webhook.review_versions
            )
        })
}

/// The review sent for `attributes` (in the version the webhook is sent) of a write to
/// `requested`, with request `uid`, as review `version`.
pub(crate) fn request(
    attributes: &Attributes<'_>,
    requested: &ResourceDef,
    uid: &str,
    version: &str,
) -> Value {
    let (group, kind_version, kind) = attributes.kind();
    let request_kind = if attributes.subresource == "scale" {
        json!({"group": group, "version": kind_version, "kind": kind})
    } else {
        json!({"group": requested.group, "version": requested.version, "kind": requested.kind})
    };
    let resource = attributes.resource;
    let user = attributes.user;
    let mut request = json!({
        "uid": uid,
        "kind": {"group": group, "version": kind_version, "kind": kind},
        "resource": {"group": resource.group, "version": resource.version, "resource": resource.plural},
        "requestKind": request_kind,
        "requestResource": {"group": requested.group, "version": requested.version, "resource": requested.plural},
        "operation": attributes.operation.as_str(),
        "userInfo": user.to_json(),
        "object": attributes.object.clone().unwrap_or(Value::Null),
        "oldObject": attributes.old_object.clone().unwrap_or(Value::Null),
        "dryRun": attributes.dry_run,
        "options": attributes.typed_options(),
    });
    if let Value::Object(map) = &mut request {
        if !attributes.subresource.is_empty() {
            map.insert("subResource".to_owned(), json!(attributes.subresource));
            map.insert(
                "requestSubResource".to_owned(),
                json!(attributes.subresource),
            );
        }
        if !attributes.name.is_empty() {
            map.insert("name".to_owned(), json!(attributes.name));
        }
        if !attributes.namespace.is_empty() {
            map.insert("namespace".to_owned(), json!(attributes.namespace));
        }
    }
    json!({
        "apiVersion": format!("admission.k8s.io/{version}"),
        "kind": "AdmissionReview",
        "request": request,
    })
}

/// A webhook's answer, as far as admission reads it.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Answer {
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    response: Option<AnswerResponse>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct AnswerResponse {
    #[serde(default)]
    uid: String,
    #[serde(default)]
    allowed: bool,
    #[serde(default)]
    status: Option<Value>,
    #[serde(default)]
    patch: Option<String>,
    #[serde(default)]
    patch_type: Option<String>,
    #[serde(default)]
    warnings: Option<Vec<String>>,
}

/// A verified answer.
#[derive(Debug)]
pub(crate) struct Verdict {
    /// `allowed`.
    pub(crate) allowed: bool,
    /// `status` (the refusal's Status), if any.
    pub(crate) status: Option<Value>,
    /// The JSON patch, decoded from base64 (mutating webhooks only).
    pub(crate) patch: Option<Vec<u8>>,
    /// `warnings`.
    pub(crate) warnings: Vec<String>,
}

/// Checks the answer `body` to a review of `version` with request `uid`.
///
/// # Errors
///
/// What is wrong with it, in kube-apiserver's words (the caller prefixes them with
/// `received invalid webhook response: `, or the decoding failure's own).
pub(crate) fn verify(
    body: &[u8],
    uid: &str,
    version: &str,
    mutating: bool,
) -> Result<Verdict, AnswerError> {
    let answer: Answer = serde_json::from_slice(body).map_err(|err| {
        AnswerError::Undecodable(format!(
            "couldn't get version/kind; json parse error: {err}"
        ))
    })?;
    if answer.kind != "AdmissionReview" {
        // Go's decoder refuses another kind before the answer is looked at.
        let from_version = answer.api_version.rsplit('/').next().unwrap_or("");
        return Err(AnswerError::Undecodable(format!(
            "converting ({from_version}.{}) to ({version}.AdmissionReview): unknown conversion",
            answer.kind
        )));
    }
    let response = answer
        .response
        .ok_or_else(|| AnswerError::Invalid("webhook response was absent".to_owned()))?;
    if response.uid != uid {
        return Err(AnswerError::Invalid(format!(
            "expected response.uid={uid:?}, got {:?}",
            response.uid
        )));
    }
    let expected = format!("admission.k8s.io/{version}");
    if answer.api_version != expected || answer.kind != "AdmissionReview" {
        let got_group_version = answer.api_version.as_str();
        return Err(AnswerError::Invalid(format!(
            "expected webhook response of {expected}, Kind=AdmissionReview, got {got_group_version}, Kind={}",
            answer.kind
        )));
    }
    let patch = match response.patch.as_deref() {
        None | Some("") => None,
        Some(encoded) => Some(
            base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .map_err(|err| AnswerError::Undecodable(format!("illegal base64 data: {err}")))?,
        ),
    };
    let patch_type = response.patch_type.unwrap_or_default();
    if patch.is_some() && patch_type.is_empty() {
        return Err(AnswerError::Invalid(
            "webhook returned response.patch but not response.patchType".to_owned(),
        ));
    }
    if patch.is_none() && !patch_type.is_empty() {
        return Err(AnswerError::Invalid(
            "webhook returned response.patchType but not response.patch".to_owned(),
        ));
    }
    if patch.is_some() && !mutating {
        return Err(AnswerError::Invalid(
            "validating webhook may not return response.patch".to_owned(),
        ));
    }
    if patch.is_some() && patch_type != "JSONPatch" {
        return Err(AnswerError::Invalid(format!(
            "webhook returned invalid response.patchType of {patch_type:?}"
        )));
    }
    Ok(Verdict {
        allowed: response.allowed,
        status: response.status,
        patch,
        warnings: response.warnings.unwrap_or_default(),
    })
}

/// Why an answer is unusable.
#[derive(Debug, thiserror::Error)]
pub(crate) enum AnswerError {
    /// It is not an AdmissionReview at all.
    #[error("{0}")]
    Undecodable(String),
    /// It is one, but not a valid answer to this review.
    #[error("{0}")]
    Invalid(String),
}
