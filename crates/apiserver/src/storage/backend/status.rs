//! The Status kube-apiserver answers for each [`BackendError`] of a read or write of one
//! object (its `storage/errors.go` interpretations).

use kubeclient_machinery::{ErrorChain, GroupResource, Status};

use super::BackendError;

/// kube-apiserver's reason for a write that lost its compare-and-swap.
const MODIFIED: &str =
    "the object has been modified; please apply your changes to the latest version and try again";

impl BackendError {
    /// The Status for this error of a request on the object `name` of `resource`: 404,
    /// 409 (exists, or modified meanwhile), 410, 504 (a revision too large, a backend too
    /// slow) or 500 (a value that does not decode, a backend that fails), with the
    /// backend's own error kept as the 500's cause.
    ///
    /// ```
    /// use kubeclient_apiserver::storage::BackendError;
    /// use kubeclient_machinery::GroupResource;
    ///
    /// let error = BackendError::Conflict { key: "ns/a".into(), expected: 4, found: 7 };
    /// let status = error.status(&GroupResource::new("", "configmaps"), "a");
    /// assert_eq!(status.code, 409);
    /// ```
    pub fn status(&self, resource: &GroupResource, name: &str) -> Status {
        match self {
            BackendError::NotFound { .. } => Status::not_found(resource, name),
            BackendError::AlreadyExists { .. } => Status::already_exists(resource, name),
            BackendError::Conflict { .. } => Status::conflict(resource, name, MODIFIED),
            BackendError::Expired { .. } => Status::expired(self.to_string()),
            BackendError::TooLarge { requested, current } => {
                Status::resource_version_too_large(&requested.to_string(), &current.to_string())
            }
            BackendError::Timeout(_) => Status::timeout(&self.to_string(), 2),
            other => Status::internal_error(&ErrorChain(other).to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_error_is_the_status_kube_apiserver_answers() {
        let cms = GroupResource::new("", "configmaps");
        let code = |error: BackendError| error.status(&cms, "a").code;
        assert_eq!(code(BackendError::NotFound { key: "n/a".into() }), 404);
        assert_eq!(code(BackendError::AlreadyExists { key: "n/a".into() }), 409);
        let conflict = BackendError::Conflict {
            key: "n/a".into(),
            expected: 1,
            found: 2,
        }
        .status(&cms, "a");
        assert_eq!(conflict.code, 409);
        assert!(conflict.message.contains("the object has been modified"));
        let expired = BackendError::Expired {
            requested: 3,
            oldest: Some(9),
        }
        .status(&cms, "a");
        assert_eq!(
            (expired.code, expired.message.as_str()),
            (410, "too old resource version: 3 (9)")
        );
        let too_large = BackendError::TooLarge {
            requested: 9,
            current: 3,
        };
        assert_eq!(code(too_large), 504);
        assert_eq!(
            code(BackendError::Timeout(std::time::Duration::from_secs(1))),
            504
        );
        let decode = BackendError::Decode {
            key: "/registry/configmaps/n/a".into(),
            source: "bad protobuf".into(),
        }
        .status(&cms, "a");
        assert_eq!(decode.code, 500);
        assert!(
            decode.message.contains("bad protobuf"),
            "{}",
            decode.message
        );
    }
}
