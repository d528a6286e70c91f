//! The [`Status`] object: how the API server reports errors (and some successes).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta;
use serde::{Deserialize, Serialize};

use super::{CauseType, StatusReason};
use crate::gvk::GroupResource;

/// A `Status` object (`kind: Status`, `apiVersion: v1`), field for field as the API server
/// writes it: `kind, apiVersion, metadata, status, message, reason, details, code`, with
/// empty optional fields omitted. See `apiserver-semantics.md` §6.
///
/// Decoding tolerates any subset of fields (a success Status from a delete has no `code`;
/// `details` may be absent or `{}`).
///
/// The constructors build the API server's standard errors with its exact message
/// templates.
///
/// # Examples
///
/// ```
/// use kubeclient_machinery::{GroupResource, Status};
///
/// let status = Status::not_found(&GroupResource::new("", "configmaps"), "app-config");
/// assert_eq!(
///     serde_json::to_string(&status).unwrap(),
///     r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"configmaps \"app-config\" not found","reason":"NotFound","details":{"name":"app-config","kind":"configmaps"},"code":404}"#,
/// );
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    /// Always `Status` when written; whatever was received when read.
    #[serde(default = "status_kind")]
    pub kind: String,
    /// Always `v1` when written; whatever was received when read.
    #[serde(default = "status_api_version")]
    pub api_version: String,
    /// List metadata: empty, except `continue` on an expired continue token (§4.2).
    #[serde(default)]
    pub metadata: ListMeta,
    /// `Success` or `Failure`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub status: String,
    /// A human-readable description.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// The machine-readable reason (see [`StatusReason`]); empty when unknown.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// Extended data: the object named, causes, retry delay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<StatusDetails>,
    /// The HTTP status code; 0 when absent (success Statuses of deletes).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub code: u16,
}

/// `details` of a [`Status`]. Every field is optional on the wire.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusDetails {
    /// The name of the object concerned.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The group of the resource; empty for the core group.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group: String,
    /// Usually the **resource** (`configmaps`); the Kind for `Invalid`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// The object's UID (success Statuses of deletes).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// What went wrong, field by field.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub causes: Vec<StatusCause>,
    /// Seconds the client should wait before retrying; 0 when not given.
    #[serde(default, skip_serializing_if = "is_zero_i32")]
    pub retry_after_seconds: i32,
}

/// One cause in [`StatusDetails::causes`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusCause {
    /// The cause type (see [`CauseType`]), e.g. `FieldValueInvalid`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// A human-readable description.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// The field path, e.g. `spec.replicas`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub field: String,
}

/// An empty Status that still names its kind and apiVersion.
impl Default for Status {
    fn default() -> Self {
        Status {
            kind: status_kind(),
            api_version: status_api_version(),
            metadata: ListMeta::default(),
            status: String::new(),
            message: String::new(),
            reason: String::new(),
            details: None,
            code: 0,
        }
    }
}

fn status_kind() -> String {
    "Status".to_owned()
}

fn status_api_version() -> String {
    "v1".to_owned()
}

fn is_zero(code: &u16) -> bool {
    *code == 0
}

fn is_zero_i32(seconds: &i32) -> bool {
    *seconds == 0
}

impl StatusCause {
    /// A cause with a type, a message and a field path.
    #[must_use]
    pub fn new(reason: &str, message: &str, field: &str) -> Self {
        StatusCause {
            reason: reason.to_owned(),
            message: message.to_owned(),
            field: field.to_owned(),
        }
    }
}

impl Status {
    /// A `Failure` Status with a reason, its code and a message.
    #[must_use]
    pub fn failure(reason: StatusReason, message: impl Into<String>) -> Self {
        Status {
            status: "Failure".to_owned(),
            message: message.into(),
            reason: reason.as_str().to_owned(),
            code: reason.code(),
            ..Status::default()
        }
    }

    /// A `Success` Status (what deleting a plain resource returns), without a `code`.
    #[must_use]
    pub fn success(details: Option<StatusDetails>) -> Self {
        Status {
            status: "Success".to_owned(),
            details,
            ..Status::default()
        }
    }

    /// This Status with `details` set.
    #[must_use]
    pub fn with_details(mut self, details: StatusDetails) -> Self {
        self.details = Some(details);
        self
    }

    /// 404: `configmaps "x" not found`.
    #[must_use]
    pub fn not_found(resource: &GroupResource, name: &str) -> Self {
        Status::failure(
            StatusReason::NotFound,
            format!("{resource} {name:?} not found"),
        )
        .with_details(named_details(resource, name))
    }

    /// 409: `deployments.apps "web" already exists`.
    #[must_use]
    pub fn already_exists(resource: &GroupResource, name: &str) -> Self {
        Status::failure(
            StatusReason::AlreadyExists,
            format!("{resource} {name:?} already exists"),
        )
        .with_details(named_details(resource, name))
    }

    /// 403, as kube-apiserver's `NewForbidden`: `pods "web" is forbidden: {why}`, `pods is
    /// forbidden: {why}` without a name, and `forbidden: {why}` for a non-resource path
    /// (an empty resource).
    ///
    /// ```
    /// use kubeclient_machinery::{GroupResource, Status};
    ///
    /// let status = Status::forbidden(&GroupResource::new("", "secrets"), "", "User \"bob\" cannot list ...");
    /// assert_eq!(status.message, "secrets is forbidden: User \"bob\" cannot list ...");
    /// assert_eq!(status.code, 403);
    /// ```
    #[must_use]
    pub fn forbidden(resource: &GroupResource, name: &str, why: &str) -> Self {
        let message = if resource.group.is_empty() && resource.resource.is_empty() {
            format!("forbidden: {why}")
        } else if name.is_empty() {
            format!("{resource} is forbidden: {why}")
        } else {
            format!("{resource} {name:?} is forbidden: {why}")
        };
        Status::failure(StatusReason::Forbidden, message)
            .with_details(named_details(resource, name))
    }

    /// 409: `Operation cannot be fulfilled on configmaps "x": {why}`.
    #[must_use]
    pub fn conflict(resource: &GroupResource, name: &str, why: &str) -> Self {
        Status::failure(
            StatusReason::Conflict,
            format!("Operation cannot be fulfilled on {resource} {name:?}: {why}"),
        )
        .with_details(named_details(resource, name))
    }

    /// 422: `Deployment.apps "web" is invalid: spec.replicas: Invalid value: ...`. Each
    /// cause's `message` is the error body (`Invalid value: -1: must be ...`) and its
    /// `field` the path; one cause is printed alone, several in `[a, b]`.
    /// `details.kind` is the Kind, not the resource.
    #[must_use]
    pub fn invalid(group: &str, kind: &str, name: &str, causes: Vec<StatusCause>) -> Self {
        let qualified_kind = if group.is_empty() {
            kind.to_owned()
        } else {
            format!("{kind}.{group}")
        };
        let errors: Vec<String> = causes
            .iter()
            .map(|cause| format!("{}: {}", cause.field, cause.message))
            .collect();
        let message = match errors.as_slice() {
            [] => format!("{qualified_kind} {name:?} is invalid"),
            [one] => format!("{qualified_kind} {name:?} is invalid: {one}"),
            many => format!(
                "{qualified_kind} {name:?} is invalid: [{}]",
                many.join(", ")
            ),
        };
        Status::failure(StatusReason::Invalid, message).with_details(StatusDetails {
            name: name.to_owned(),
            group: group.to_owned(),
            kind: kind.to_owned(),
            causes,
            ..StatusDetails::default()
        })
    }

    /// 400 with a free-text message.
    #[must_use]
    pub fn bad_request(message: impl Into<String>) -> Self {
        Status::failure(StatusReason::BadRequest, message)
    }

    /// 410 `Expired`: a resourceVersion or continue token is too old.
    #[must_use]
    pub fn expired(message: impl Into<String>) -> Self {
        Status::failure(StatusReason::Expired, message)
    }

    /// 410 `Gone` (the form servers older than 1.18 sent).
    #[must_use]
    pub fn gone(message: impl Into<String>) -> Self {
        Status::failure(StatusReason::Gone, message)
    }

    /// 429 with `retryAfterSeconds`.
    #[must_use]
    pub fn too_many_requests(message: impl Into<String>, retry_after_seconds: i32) -> Self {
        Status::failure(StatusReason::TooManyRequests, message).with_details(StatusDetails {
            retry_after_seconds,
            ..StatusDetails::default()
        })
    }

    /// 500: `Internal error occurred: {error}`, with the error as a cause.
    #[must_use]
    pub fn internal_error(error: &str) -> Self {
        Status::failure(
            StatusReason::InternalError,
            format!("Internal error occurred: {error}"),
        )
        .with_details(StatusDetails {
            causes: vec![StatusCause::new("", error, "")],
            ..StatusDetails::default()
        })
    }

    /// 504: `Timeout: {message}` with `retryAfterSeconds`.
    #[must_use]
    pub fn timeout(message: &str, retry_after_seconds: i32) -> Self {
        Status::failure(StatusReason::Timeout, format!("Timeout: {message}")).with_details(
            StatusDetails {
                retry_after_seconds,
                ..StatusDetails::default()
            },
        )
    }

    /// 504 for a resourceVersion newer than the server has, with the
    /// `ResourceVersionTooLarge` cause reflectors look for.
    #[must_use]
    pub fn resource_version_too_large(requested: &str, current: &str) -> Self {
        let mut status = Status::timeout(
            &format!("Too large resource version: {requested}, current: {current}"),
            1,
        );
        if let Some(details) = status.details.as_mut() {
            details.causes.push(StatusCause::new(
                CauseType::RESOURCE_VERSION_TOO_LARGE,
                "Too large resource version",
                "",
            ));
        }
        status
    }

    /// 405: `{verb} is not supported on resources of kind "{resource}"`.
    #[must_use]
    pub fn method_not_supported(resource: &GroupResource, verb: &str) -> Self {
        Status::failure(
            StatusReason::MethodNotAllowed,
            format!(
                "{verb} is not supported on resources of kind {:?}",
                resource.to_string()
            ),
        )
        .with_details(StatusDetails {
            group: resource.group.clone(),
            kind: resource.resource.clone(),
            ..StatusDetails::default()
        })
    }

    /// The known reason, or `None` if the reason is empty or unknown to this library.
    #[must_use]
    pub fn known_reason(&self) -> Option<StatusReason> {
        StatusReason::parse(&self.reason)
    }

    /// Whether `details.causes` has a cause of this type (Go's `HasStatusCause`).
    #[must_use]
    pub fn has_cause(&self, cause_type: &str) -> bool {
        self.details.as_ref().is_some_and(|details| {
            details
                .causes
                .iter()
                .any(|cause| cause.reason == cause_type)
        })
    }
}

fn named_details(resource: &GroupResource, name: &str) -> StatusDetails {
    StatusDetails {
        name: name.to_owned(),
        group: resource.group.clone(),
        kind: resource.resource.clone(),
        ..StatusDetails::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Real server bodies from `apiserver-semantics.md` §4, §6 and §7.5: each decodes and
    /// re-encodes to exactly the same text (field order included).
    const SERVER_BODIES: &[&str] = &[
        r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"configmaps \"app-config\" not found","reason":"NotFound","details":{"name":"app-config","kind":"configmaps"},"code":404}"#,
        r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"deployments.apps \"web\" already exists","reason":"AlreadyExists","details":{"name":"web","group":"apps","kind":"deployments"},"code":409}"#,
        r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Operation cannot be fulfilled on configmaps \"app-config\": the object has been modified; please apply your changes to the latest version and try again","reason":"Conflict","details":{"name":"app-config","kind":"configmaps"},"code":409}"#,
        r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Deployment.apps \"web\" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0","reason":"Invalid","details":{"name":"web","group":"apps","kind":"Deployment","causes":[{"reason":"FieldValueInvalid","message":"Invalid value: -1: must be greater than or equal to 0","field":"spec.replicas"}]},"code":422}"#,
        r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the namespace of the object (prod) does not match the namespace on the request (dev)","reason":"BadRequest","code":400}"#,
        r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pods is forbidden: User \"alice\" cannot list resource \"pods\" in API group \"\" in the namespace \"default\"","reason":"Forbidden","details":{"kind":"pods"},"code":403}"#,
        r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}"#,
        r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Internal error occurred: etcdserver: request timed out","reason":"InternalError","details":{"causes":[{"message":"etcdserver: request timed out"}]},"code":500}"#,
        r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"The resourceVersion for the provided list is too old.","reason":"Expired","code":410}"#,
        r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Timeout: Too large resource version: 90210, current: 48213","reason":"Timeout","details":{"causes":[{"reason":"ResourceVersionTooLarge","message":"Too large resource version"}],"retryAfterSeconds":1},"code":504}"#,
        r#"{"kind":"Status","apiVersion":"v1","metadata":{"continue":"eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6LTEsInN0YXJ0IjoiZGVmYXVsdC93ZWItN2Y5Y1x1MDAwMCJ9"},"status":"Failure","message":"The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.","reason":"Expired","code":410}"#,
        r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","details":{"name":"app-config","kind":"configmaps","uid":"6f0e5c0e-9d1c-4f3e-9a57-2f7c3b1f0a11"}}"#,
        r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"forbidden: User \"system:anonymous\" cannot get path \"/api\"","reason":"Forbidden","details":{},"code":403}"#,
        r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Apply failed with 1 conflict: conflict with \"kubectl-client-side-apply\" using v1: .data.mode","reason":"Conflict","details":{"causes":[{"reason":"FieldManagerConflict","message":"conflict with \"kubectl-client-side-apply\" using v1","field":".data.mode"}]},"code":409}"#,
    ];

    #[test]
    fn real_server_bodies_round_trip_byte_for_byte() {
        for body in SERVER_BODIES {
            let status: Status = serde_json::from_str(body).unwrap();
            assert_eq!(&serde_json::to_string(&status).unwrap(), body);
        }
    }

    #[test]
    fn constructors_reproduce_the_server_bodies() {
        let cm = GroupResource::new("", "configmaps");
        let deploy = GroupResource::new("apps", "deployments");
        let built = [
            Status::not_found(&cm, "app-config"),
            Status::already_exists(&deploy, "web"),
            Status::conflict(
                &cm,
                "app-config",
                "the object has been modified; please apply your changes to the latest version and try again",
            ),
            Status::invalid(
                "apps",
                "Deployment",
                "web",
                vec![StatusCause::new(
                    CauseType::FIELD_VALUE_INVALID,
                    "Invalid value: -1: must be greater than or equal to 0",
                    "spec.replicas",
                )],
            ),
            Status::bad_request(
                "the namespace of the object (prod) does not match the namespace on the request (dev)",
            ),
        ];
        for (status, body) in built.iter().zip(SERVER_BODIES) {
            assert_eq!(&serde_json::to_string(status).unwrap(), body);
        }
        assert_eq!(
            serde_json::to_string(&Status::internal_error("etcdserver: request timed out"))
                .unwrap(),
            SERVER_BODIES[7]
        );
        assert_eq!(
            serde_json::to_string(&Status::resource_version_too_large("90210", "48213")).unwrap(),
            SERVER_BODIES[9]
        );
    }

    #[test]
    fn several_invalid_causes_are_bracketed() {
        let status = Status::invalid(
            "",
            "ConfigMap",
            "x",
            vec![
                StatusCause::new(CauseType::FIELD_VALUE_REQUIRED, "Required value", "data"),
                StatusCause::new(
                    CauseType::FIELD_VALUE_INVALID,
                    "Invalid value: \"\"",
                    "metadata.name",
                ),
            ],
        );
        assert_eq!(
            status.message,
            r#"ConfigMap "x" is invalid: [data: Required value, metadata.name: Invalid value: ""]"#
        );
        assert_eq!(status.details.unwrap().kind, "ConfigMap");
    }

    #[test]
    fn a_status_with_only_some_fields_decodes() {
        let status: Status = serde_json::from_str(r#"{"code":500}"#).unwrap();
        assert_eq!(status.code, 500);
        assert_eq!(status.kind, "Status");
        assert!(status.details.is_none());
        let status: Status = serde_json::from_str(r#"{"kind":"Status","details":{}}"#).unwrap();
        assert_eq!(status.details, Some(StatusDetails::default()));
    }

    #[test]
    fn has_cause_looks_at_cause_types() {
        let status = Status::resource_version_too_large("5", "4");
        assert!(status.has_cause(CauseType::RESOURCE_VERSION_TOO_LARGE));
        assert!(!status.has_cause(CauseType::FIELD_MANAGER_CONFLICT));
        assert!(!Status::bad_request("x").has_cause(CauseType::RESOURCE_VERSION_TOO_LARGE));
    }
}
