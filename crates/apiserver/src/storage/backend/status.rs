//! The Status kube-apiserver answers for each [`BackendError`] of a read or write of one
//! object (its `storage/errors.go` interpretations).

use kubeclient_machinery::{ErrorChain, GroupResource, Status};

use super::BackendError;

/// kube-apiserver's reason for a write that lost its compare-and-swap.
const MODIFIED: &str =
    "the object has been modified; please apply your changes to the latest version and try again";

/// kube-apiserver's message for a request whose deadline passed.
const DEADLINE_EXCEEDED: &str =
    "request did not complete within requested timeout - context deadline exceeded";

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
            // kube-apiserver's answer when a request's deadline passes (`finishRequest`).
            BackendError::Timeout(_) => Status::timeout(DEADLINE_EXCEEDED, 0),
            // An error that is no Status: kube-apiserver answers 500 with no reason and
            // the error's own message (`ErrorToAPIStatus`).
            BackendError::Refused { message, .. } => Status {
                status: "Failure".to_owned(),
                message: message.clone(),
                code: 500,
                ..Status::default()
            },
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
        let timeout = BackendError::Timeout(std::time::Duration::from_secs(1)).status(&cms, "a");
        assert_eq!(
            (
                timeout.code,
                timeout.reason.as_str(),
                timeout.message.as_str()
            ),
            (
                504,
                "Timeout",
                "Timeout: request did not complete within requested timeout - context deadline exceeded"
            )
        );
        let refused = BackendError::Refused {
            context: "creating /registry/configmaps/n/a".into(),
            message: "etcdserver: request timed out".into(),
        }
        .status(&cms, "a");
        assert_eq!(
            (
                refused.code,
                refused.reason.as_str(),
                refused.message.as_str()
            ),
            (500, "", "etcdserver: request timed out")
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
