//! [`StatusReason`] and [`CauseType`]: the machine-readable halves of a [`Status`](super::Status).

use std::fmt;

/// Why a request failed: the `reason` field of a [`Status`](super::Status) (Go's
/// `metav1.StatusReason`). Each reason has the HTTP code the API server pairs it with.
///
/// # Examples
///
/// ```
/// use kubeclient_machinery::StatusReason;
/// assert_eq!(StatusReason::parse("NotFound"), Some(StatusReason::NotFound));
/// assert_eq!(StatusReason::NotFound.code(), 404);
/// assert_eq!(StatusReason::parse("SomethingNew"), None);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StatusReason {
    /// 401: the request had no or invalid credentials.
    Unauthorized,
    /// 403: the caller may not do this.
    Forbidden,
    /// 404: the object or resource does not exist.
    NotFound,
    /// 409: create of a name that already exists.
    AlreadyExists,
    /// 409: a write lost an optimistic-concurrency race or a precondition failed.
    Conflict,
    /// 410: the resource is gone (older servers' form of `Expired`).
    Gone,
    /// 422: validation failed; `details.causes` says which fields.
    Invalid,
    /// 500: the operation could not finish in time; retry.
    ServerTimeout,
    /// 500: stored data could not be read (e.g. cannot be decrypted).
    StoreReadError,
    /// 504: the request timed out (also: resourceVersion too large).
    Timeout,
    /// 429: too many requests; honour `retryAfterSeconds`.
    TooManyRequests,
    /// 400: the request was malformed.
    BadRequest,
    /// 405: the verb is not supported on this resource.
    MethodNotAllowed,
    /// 406: no acceptable media type.
    NotAcceptable,
    /// 413: the request body is too large.
    RequestEntityTooLarge,
    /// 415: the request body's media type is not supported.
    UnsupportedMediaType,
    /// 500: a server bug.
    InternalError,
    /// 410: the resourceVersion or continue token is too old; relist.
    Expired,
    /// 503: the server cannot serve now.
    ServiceUnavailable,
}

const ALL_REASONS: [StatusReason; 19] = [
    StatusReason::Unauthorized,
    StatusReason::Forbidden,
    StatusReason::NotFound,
    StatusReason::AlreadyExists,
    StatusReason::Conflict,
    StatusReason::Gone,
    StatusReason::Invalid,
    StatusReason::ServerTimeout,
    StatusReason::StoreReadError,
    StatusReason::Timeout,
    StatusReason::TooManyRequests,
    StatusReason::BadRequest,
    StatusReason::MethodNotAllowed,
    StatusReason::NotAcceptable,
    StatusReason::RequestEntityTooLarge,
    StatusReason::UnsupportedMediaType,
    StatusReason::InternalError,
    StatusReason::Expired,
    StatusReason::ServiceUnavailable,
];

impl StatusReason {
    /// The wire form, e.g. `NotFound`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            StatusReason::Unauthorized => "Unauthorized",
            StatusReason::Forbidden => "Forbidden",
            StatusReason::NotFound => "NotFound",
            StatusReason::AlreadyExists => "AlreadyExists",
            StatusReason::Conflict => "Conflict",
            StatusReason::Gone => "Gone",
            StatusReason::Invalid => "Invalid",
            StatusReason::ServerTimeout => "ServerTimeout",
            StatusReason::StoreReadError => "StorageReadError",
            StatusReason::Timeout => "Timeout",
            StatusReason::TooManyRequests => "TooManyRequests",
            StatusReason::BadRequest => "BadRequest",
            StatusReason::MethodNotAllowed => "MethodNotAllowed",
            StatusReason::NotAcceptable => "NotAcceptable",
            StatusReason::RequestEntityTooLarge => "RequestEntityTooLarge",
            StatusReason::UnsupportedMediaType => "UnsupportedMediaType",
            StatusReason::InternalError => "InternalError",
            StatusReason::Expired => "Expired",
            StatusReason::ServiceUnavailable => "ServiceUnavailable",
        }
    }

    /// The HTTP status code the API server sends with this reason.
    #[must_use]
    pub fn code(self) -> u16 {
        match self {
            StatusReason::Unauthorized => 401,
            StatusReason::Forbidden => 403,
            StatusReason::NotFound => 404,
            StatusReason::AlreadyExists | StatusReason::Conflict => 409,
            StatusReason::Gone | StatusReason::Expired => 410,
            StatusReason::Invalid => 422,
            StatusReason::ServerTimeout
            | StatusReason::StoreReadError
            | StatusReason::InternalError => 500,
            StatusReason::Timeout => 504,
            StatusReason::TooManyRequests => 429,
            StatusReason::BadRequest => 400,
            StatusReason::MethodNotAllowed => 405,
            StatusReason::NotAcceptable => 406,
            StatusReason::RequestEntityTooLarge => 413,
            StatusReason::UnsupportedMediaType => 415,
            StatusReason::ServiceUnavailable => 503,
        }
    }

    /// The known reason with this wire form, or `None` for an empty or unknown reason.
    #[must_use]
    pub fn parse(reason: &str) -> Option<Self> {
        ALL_REASONS
            .into_iter()
            .find(|known| known.as_str() == reason)
    }
}

impl fmt::Display for StatusReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The `reason` of a [`StatusCause`](super::StatusCause) (Go's `metav1.CauseType`), as
/// wire strings.
#[derive(Debug)]
#[non_exhaustive]
pub struct CauseType;

impl CauseType {
    /// A required field was not found.
    pub const FIELD_VALUE_NOT_FOUND: &'static str = "FieldValueNotFound";
    /// A required field was empty.
    pub const FIELD_VALUE_REQUIRED: &'static str = "FieldValueRequired";
    /// A value duplicates another that must be unique.
    pub const FIELD_VALUE_DUPLICATE: &'static str = "FieldValueDuplicate";
    /// A value is invalid.
    pub const FIELD_VALUE_INVALID: &'static str = "FieldValueInvalid";
    /// A value is not one of the supported ones.
    pub const FIELD_VALUE_NOT_SUPPORTED: &'static str = "FieldValueNotSupported";
    /// A field may not be set here.
    pub const FIELD_VALUE_FORBIDDEN: &'static str = "FieldValueForbidden";
    /// A value is too long.
    pub const FIELD_VALUE_TOO_LONG: &'static str = "FieldValueTooLong";
    /// A list has too many items.
    pub const FIELD_VALUE_TOO_MANY: &'static str = "FieldValueTooMany";
    /// An internal error.
    pub const INTERNAL: &'static str = "InternalError";
    /// A value has the wrong type.
    pub const FIELD_VALUE_TYPE_INVALID: &'static str = "FieldValueTypeInvalid";
    /// The server sent something the client did not expect (the raw body is the message).
    pub const UNEXPECTED_SERVER_RESPONSE: &'static str = "UnexpectedServerResponse";
    /// Server-side apply: another field manager owns the field.
    pub const FIELD_MANAGER_CONFLICT: &'static str = "FieldManagerConflict";
    /// The requested resourceVersion is newer than the server has.
    pub const RESOURCE_VERSION_TOO_LARGE: &'static str = "ResourceVersionTooLarge";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reason_round_trips_through_its_wire_form() {
        for reason in ALL_REASONS {
            assert_eq!(StatusReason::parse(reason.as_str()), Some(reason));
        }
        assert_eq!(StatusReason::parse(""), None);
    }
}
