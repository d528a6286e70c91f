//! [`ApiError`]: a failed API request as a Rust error, with client-go's `Is*` helpers.

use std::fmt;
use std::time::Duration;

use super::{CauseType, Status, StatusCause, StatusDetails, StatusReason};

/// How much of a non-Status error body is kept for diagnostics.
const MAX_KEPT_BODY: usize = 4096;

/// An API request that failed: the server's [`Status`] (decoded, or synthesized from the
/// HTTP code when the body was not a Status) plus, in the second case, the raw body.
///
/// The predicates follow client-go's `k8s.io/apimachinery/pkg/api/errors` exactly: a
/// known `reason` decides; an empty or unknown reason falls back to the HTTP code
/// (`is_resource_expired` and `is_already_exists` look at the reason only).
///
/// # Examples
///
/// ```
/// use kubeclient_machinery::ApiError;
///
/// // A proxy answered with plain text: the error is built from the code.
/// let err = ApiError::from_response(404, "GET", b"404 page not found\n", None);
/// assert!(err.is_not_found());
/// assert_eq!(err.to_string(), "the server could not find the requested resource");
///
/// let body = br#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
///     "message":"too old resource version: 1200 (1350)","reason":"Expired","code":410}"#;
/// let err = ApiError::from_response(200, "GET", body, None);
/// assert!(err.is_resource_expired() && err.is_gone_or_expired());
/// ```
#[derive(Clone, Debug, PartialEq)]
#[doc(alias = "StatusError")]
pub struct ApiError {
    /// The Status: as the server sent it, or synthesized from the HTTP code.
    pub status: Status,
    /// The start of the raw body (at most 4 KiB) when it was not a Status.
    pub body: Option<String>,
}

impl ApiError {
    /// Wraps a Status the server sent.
    #[must_use]
    pub fn from_status(status: Status) -> Self {
        ApiError { status, body: None }
    }

    /// The error for a response with HTTP `code` and `body` to a request with `method`
    /// (client-go's `transformResponse` rules).
    ///
    /// A body that decodes as a `Status` is used as is (its `code` filled from the HTTP
    /// code if absent). Any other body (plain text, HTML, JSON of another kind) gives a
    /// Status synthesized from the code as Go's `NewGenericServerResponse` does, with the
    /// body as an `UnexpectedServerResponse` cause; `retry_after_seconds` (from a
    /// `Retry-After` header) is kept in its details.
    #[must_use]
    pub fn from_response(
        code: u16,
        method: &str,
        body: &[u8],
        retry_after_seconds: Option<i32>,
    ) -> Self {
        // A protobuf Status (the answer to a client that prefers protobuf).
        if body.starts_with(crate::protobuf::MAGIC)
            && let Ok(value) = crate::protobuf::decode(body)
            && value.get("kind").and_then(serde_json::Value::as_str) == Some("Status")
            && let Ok(mut status) = serde_json::from_value::<Status>(value)
        {
            if status.code == 0 {
                status.code = code;
            }
            return ApiError::from_status(status);
        }
        if let Ok(mut status) = serde_json::from_slice::<Status>(body)
            && status.kind == "Status"
            && looks_like_status(body)
        {
            if status.code == 0 {
                status.code = code;
            }
            return ApiError::from_status(status);
        }
        let text = String::from_utf8_lossy(body);
        let kept = truncate_on_char_boundary(&text, MAX_KEPT_BODY);
        let mut status = generic_server_response(code, method, kept.trim_end());
        if let (Some(seconds), Some(details)) = (retry_after_seconds, status.details.as_mut()) {
            details.retry_after_seconds = seconds;
        }
        ApiError {
            status,
            body: (!body.is_empty()).then(|| kept.to_owned()),
        }
    }

    /// The HTTP status code (from the Status).
    #[must_use]
    pub fn code(&self) -> u16 {
        self.status.code
    }

    /// The reason string (possibly empty or unknown).
    #[must_use]
    pub fn reason(&self) -> &str {
        &self.status.reason
    }

    /// `reason == r`, or an empty/unknown reason with code `code` (client-go's common rule).
    fn reason_or_unknown_with_code(&self, reason: StatusReason, code: u16) -> bool {
        match self.status.known_reason() {
            Some(known) => known == reason,
            None => self.status.code == code,
        }
    }

    fn reason_is(&self, reason: StatusReason) -> bool {
        self.status.reason == reason.as_str()
    }

    /// 404 NotFound.
    #[must_use]
    pub fn is_not_found(&self) -> bool {
        self.reason_or_unknown_with_code(StatusReason::NotFound, 404)
    }

    /// 409 AlreadyExists (reason only: a generic 409 to a POST is synthesized with it).
    #[must_use]
    pub fn is_already_exists(&self) -> bool {
        self.reason_is(StatusReason::AlreadyExists)
    }

    /// 409 Conflict: a stale resourceVersion, failed precondition or apply conflict.
    #[must_use]
    pub fn is_conflict(&self) -> bool {
        self.reason_or_unknown_with_code(StatusReason::Conflict, 409)
    }

    /// 422 Invalid.
    #[must_use]
    pub fn is_invalid(&self) -> bool {
        self.reason_or_unknown_with_code(StatusReason::Invalid, 422)
    }

    /// 410 Gone (or an unknown reason with 410).
    #[must_use]
    pub fn is_gone(&self) -> bool {
        self.reason_or_unknown_with_code(StatusReason::Gone, 410)
    }

    /// Reason `Expired` only: a too-old resourceVersion or continue token.
    #[must_use]
    pub fn is_resource_expired(&self) -> bool {
        self.reason_is(StatusReason::Expired)
    }

    /// `is_resource_expired() || is_gone()`: what makes a reflector relist.
    #[must_use]
    pub fn is_gone_or_expired(&self) -> bool {
        self.is_resource_expired() || self.is_gone()
    }

    /// 429 TooManyRequests (reason, or code 429 whatever the reason).
    #[must_use]
    pub fn is_too_many_requests(&self) -> bool {
        self.reason_is(StatusReason::TooManyRequests) || self.status.code == 429
    }

    /// 413 RequestEntityTooLarge (reason, or code 413 whatever the reason).
    #[must_use]
    pub fn is_request_entity_too_large(&self) -> bool {
        self.reason_is(StatusReason::RequestEntityTooLarge) || self.status.code == 413
    }

    /// Reason `ServerTimeout` only.
    #[must_use]
    pub fn is_server_timeout(&self) -> bool {
        self.reason_is(StatusReason::ServerTimeout)
    }

    /// 504 Timeout.
    #[must_use]
    pub fn is_timeout(&self) -> bool {
        self.reason_or_unknown_with_code(StatusReason::Timeout, 504)
    }

    /// 500 InternalError.
    #[must_use]
    pub fn is_internal_error(&self) -> bool {
        self.reason_or_unknown_with_code(StatusReason::InternalError, 500)
    }

    /// 400 BadRequest.
    #[must_use]
    pub fn is_bad_request(&self) -> bool {
        self.reason_or_unknown_with_code(StatusReason::BadRequest, 400)
    }

    /// 401 Unauthorized.
    #[must_use]
    pub fn is_unauthorized(&self) -> bool {
        self.reason_or_unknown_with_code(StatusReason::Unauthorized, 401)
    }

    /// 403 Forbidden.
    #[must_use]
    pub fn is_forbidden(&self) -> bool {
        self.reason_or_unknown_with_code(StatusReason::Forbidden, 403)
    }

    /// 405 MethodNotAllowed.
    #[must_use]
    pub fn is_method_not_supported(&self) -> bool {
        self.reason_or_unknown_with_code(StatusReason::MethodNotAllowed, 405)
    }

    /// 406 NotAcceptable.
    #[must_use]
    pub fn is_not_acceptable(&self) -> bool {
        self.reason_or_unknown_with_code(StatusReason::NotAcceptable, 406)
    }

    /// 415 UnsupportedMediaType.
    #[must_use]
    pub fn is_unsupported_media_type(&self) -> bool {
        self.reason_or_unknown_with_code(StatusReason::UnsupportedMediaType, 415)
    }

    /// 503 ServiceUnavailable.
    #[must_use]
    pub fn is_service_unavailable(&self) -> bool {
        self.reason_or_unknown_with_code(StatusReason::ServiceUnavailable, 503)
    }

    /// The body was not a Status (the server, or something in front of it, sent text).
    #[must_use]
    pub fn is_unexpected_server_error(&self) -> bool {
        self.status.has_cause(CauseType::UNEXPECTED_SERVER_RESPONSE)
    }

    /// A resourceVersion newer than the server has: the cause `ResourceVersionTooLarge`,
    /// or (older servers) the message `Too large resource version`. A reflector relists
    /// from `""` on this.
    #[must_use]
    pub fn is_too_large_resource_version(&self) -> bool {
        const MESSAGE: &str = "Too large resource version";
        // 1.17.0-1.18.5 said so in a cause's message, older servers in the Status message.
        let said_in_a_cause = || {
            self.status
                .details
                .as_ref()
                .is_some_and(|details| details.causes.iter().any(|cause| cause.message == MESSAGE))
        };
        self.status.has_cause(CauseType::RESOURCE_VERSION_TOO_LARGE)
            || (self.is_timeout() && (said_in_a_cause() || self.status.message.contains(MESSAGE)))
    }

    /// How long the server asked the client to wait, if it did (Go's
    /// `SuggestsClientDelay`): `retryAfterSeconds` when positive, and for `ServerTimeout`
    /// always (possibly zero).
    #[must_use]
    pub fn retry_after(&self) -> Option<Duration> {
        let details = self.status.details.as_ref()?;
        let seconds = details.retry_after_seconds;
        if self.is_server_timeout() || seconds > 0 {
            Some(Duration::from_secs(u64::try_from(seconds).unwrap_or(0)))
        } else {
            None
        }
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.status.message.is_empty() {
            write!(f, "the server responded with status {}", self.status.code)?;
            if !self.status.reason.is_empty() {
                write!(f, " ({})", self.status.reason)?;
            }
            Ok(())
        } else {
            f.write_str(&self.status.message)
        }
    }
}

impl std::error::Error for ApiError {}

impl From<Status> for ApiError {
    fn from(status: Status) -> Self {
        ApiError::from_status(status)
    }
}

/// A Status body must be a JSON object naming `kind: Status`; `from_slice::<Status>` alone
/// would accept any object because every field has a default.
fn looks_like_status(body: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Kind<'a> {
        #[serde(borrow)]
        kind: Option<&'a str>,
    }
    serde_json::from_slice::<Kind<'_>>(body).is_ok_and(|k| k.kind == Some("Status"))
}

fn truncate_on_char_boundary(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Go's `NewGenericServerResponse`: a Status for a response whose body said nothing usable.
fn generic_server_response(code: u16, method: &str, server_message: &str) -> Status {
    let (reason, message): (Option<StatusReason>, String) = match code {
        409 if method == "POST" => (Some(StatusReason::AlreadyExists), "the server reported a conflict".into()),
        409 => (Some(StatusReason::Conflict), "the server reported a conflict".into()),
        404 => (Some(StatusReason::NotFound), "the server could not find the requested resource".into()),
        400 => (Some(StatusReason::BadRequest), "the server rejected our request for an unknown reason".into()),
        401 => (
            Some(StatusReason::Unauthorized),
            "the server has asked for the client to provide credentials".into(),
        ),
        403 => (Some(StatusReason::Forbidden), server_message.to_owned()),
        406 => {
            let message = if server_message.is_empty() || server_message == "unknown" {
                "the server was unable to respond with a content type that the client supports".to_owned()
            } else {
                server_message.to_owned()
            };
            (Some(StatusReason::NotAcceptable), message)
        }
        415 => (Some(StatusReason::UnsupportedMediaType), server_message.to_owned()),
        405 => (
            Some(StatusReason::MethodNotAllowed),
            "the server does not allow this method on the requested resource".into(),
        ),
        422 => (
            Some(StatusReason::Invalid),
            "the server rejected our request due to an error in our request".into(),
        ),
        503 => (
            Some(StatusReason::ServiceUnavailable),
            "the server is currently unable to handle the request".into(),
        ),
        504 => (
            Some(StatusReason::Timeout),
            "the server was unable to return a response in the time allotted, but may still be processing the request".into(),
        ),
        429 => (
            Some(StatusReason::TooManyRequests),
            "the server has received too many requests and has asked us to try again later".into(),
        ),
        500.. => (
            Some(StatusReason::InternalError),
            format!("an error on the server ({server_message:?}) has prevented the request from succeeding"),
        ),
        _ => (
            None,
            format!("the server responded with the status code {code} but did not return more information"),
        ),
    };
    let details = StatusDetails {
        causes: vec![StatusCause::new(
            CauseType::UNEXPECTED_SERVER_RESPONSE,
            server_message,
            "",
        )],
        ..StatusDetails::default()
    };
    Status {
        status: "Failure".to_owned(),
        message,
        reason: reason.map(|r| r.as_str().to_owned()).unwrap_or_default(),
        details: Some(details),
        code,
        ..Status::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_protobuf_status_body_is_read_as_a_status() {
        let status = serde_json::json!({"apiVersion": "v1", "kind": "Status", "status": "Failure",
            "message": "configmaps \"x\" not found", "reason": "NotFound", "code": 404});
        let body = crate::protobuf::encode(&status).unwrap();
        let err = ApiError::from_response(404, "GET", &body, None);
        assert!(err.is_not_found());
        assert_eq!(err.status.message, "configmaps \"x\" not found");
    }

    fn status_error(reason: &str, code: u16) -> ApiError {
        ApiError::from_status(Status {
            reason: reason.to_owned(),
            code,
            ..Status::default()
        })
    }

    #[test]
    fn known_reason_decides_over_the_code() {
        let err = status_error("NotFound", 500);
        assert!(err.is_not_found());
        assert!(!err.is_internal_error());
        // A known reason with a mismatching code does not count as the code's reason.
        assert!(!status_error("Conflict", 404).is_not_found());
    }

    #[test]
    fn unknown_or_empty_reason_falls_back_to_the_code() {
        assert!(status_error("", 404).is_not_found());
        assert!(status_error("SomethingNew", 409).is_conflict());
        assert!(status_error("", 410).is_gone());
        assert!(!status_error("", 410).is_resource_expired());
        assert!(status_error("", 500).is_internal_error());
    }

    #[test]
    fn expired_and_already_exists_look_only_at_the_reason() {
        assert!(status_error("Expired", 410).is_resource_expired());
        assert!(status_error("Expired", 410).is_gone_or_expired());
        assert!(!status_error("Expired", 410).is_gone());
        assert!(!status_error("", 409).is_already_exists());
    }

    #[test]
    fn too_many_requests_checks_the_code_whatever_the_reason() {
        assert!(status_error("Forbidden", 429).is_too_many_requests());
        assert!(status_error("TooManyRequests", 0).is_too_many_requests());
        assert!(status_error("BadRequest", 413).is_request_entity_too_large());
    }

    #[test]
    fn plain_text_bodies_become_generic_statuses() {
        let err = ApiError::from_response(
            429,
            "GET",
            b"Too many requests, please try again later.\n",
            Some(3),
        );
        assert!(err.is_too_many_requests());
        assert_eq!(err.reason(), "TooManyRequests");
        assert_eq!(err.retry_after(), Some(Duration::from_secs(3)));
        assert!(err.is_unexpected_server_error());
        assert_eq!(
            err.body.as_deref(),
            Some("Too many requests, please try again later.\n")
        );

        let conflict_on_post = ApiError::from_response(409, "POST", b"", None);
        assert!(conflict_on_post.is_already_exists());
        assert!(!conflict_on_post.is_conflict());
        assert!(ApiError::from_response(409, "PUT", b"", None).is_conflict());

        let html = ApiError::from_response(502, "GET", b"<html>bad gateway</html>", None);
        assert!(html.is_internal_error());
        assert_eq!(
            html.to_string(),
            r#"an error on the server ("<html>bad gateway</html>") has prevented the request from succeeding"#
        );
        let teapot = ApiError::from_response(418, "GET", b"", None);
        assert_eq!(teapot.reason(), "");
        assert_eq!(
            teapot.to_string(),
            "the server responded with the status code 418 but did not return more information"
        );
    }

    #[test]
    fn json_that_is_not_a_status_is_treated_as_text() {
        let err = ApiError::from_response(404, "GET", br#"{"kind":"Pod"}"#, None);
        assert!(err.is_not_found());
        assert!(err.is_unexpected_server_error());
        let err = ApiError::from_response(500, "GET", br#"{"message":"x"}"#, None);
        assert!(err.is_unexpected_server_error());
    }

    #[test]
    fn a_status_body_without_code_takes_the_http_code() {
        let err = ApiError::from_response(
            422,
            "POST",
            br#"{"kind":"Status","status":"Failure","message":"bad","reason":"Invalid"}"#,
            None,
        );
        assert_eq!(err.code(), 422);
        assert!(err.is_invalid());
        assert!(err.body.is_none());
        assert_eq!(err.to_string(), "bad");
    }

    #[test]
    fn retry_after_follows_suggests_client_delay() {
        let mut status = Status::failure(StatusReason::ServerTimeout, "slow");
        assert_eq!(ApiError::from(status.clone()).retry_after(), None);
        status.details = Some(StatusDetails::default());
        assert_eq!(ApiError::from(status).retry_after(), Some(Duration::ZERO));
        let throttled = Status::too_many_requests("slow down", 2);
        assert_eq!(
            ApiError::from(throttled).retry_after(),
            Some(Duration::from_secs(2))
        );
        assert_eq!(ApiError::from(Status::bad_request("x")).retry_after(), None);
    }

    #[test]
    fn too_large_resource_version_is_recognised_by_cause_or_message() {
        assert!(
            ApiError::from(Status::resource_version_too_large("9", "4"))
                .is_too_large_resource_version()
        );
        let old_server = Status::failure(
            StatusReason::Timeout,
            "Timeout: Too large resource version: 9, current: 4",
        );
        assert!(ApiError::from(old_server).is_too_large_resource_version());
        assert!(
            !ApiError::from(Status::timeout("request did not complete", 0))
                .is_too_large_resource_version()
        );
        // Kubernetes 1.17.0-1.18.5: a Timeout whose cause's message says so.
        let mut v1_18 = Status::timeout("Timeout: request did not complete", 1);
        v1_18
            .details
            .get_or_insert_with(Default::default)
            .causes
            .push(crate::StatusCause {
                reason: "ResourceVersionTooLarge_not_set".to_owned(),
                message: "Too large resource version".to_owned(),
                field: String::new(),
            });
        assert!(ApiError::from(v1_18).is_too_large_resource_version());
    }

    #[test]
    fn huge_bodies_are_truncated_on_a_char_boundary() {
        let body = "é".repeat(5000);
        let err = ApiError::from_response(500, "GET", body.as_bytes(), None);
        let kept = err.body.unwrap();
        assert!(kept.len() <= MAX_KEPT_BODY);
        assert!(kept.chars().all(|c| c == 'é'));
    }
}
