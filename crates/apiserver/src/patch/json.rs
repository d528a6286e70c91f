//! RFC 6902 JSON patches, applied without ever panicking.
//!
//! The `json-patch` crate undoes the applied operations when a later one fails, and its undo
//! path can hit an `unreachable!` (for example a `move` of `/data/k` onto `/data` followed by
//! a failing `test`): a request could abort its connection with no answer. The server
//! always patches a copy of the stored object, so nothing needs undoing: the copy is
//! applied with `patch_unsafe` (no undo) and thrown away on failure, and the call is still
//! wrapped in `catch_unwind` so a future panic in the dependency becomes an error, not a
//! dropped connection.

use std::panic::{AssertUnwindSafe, catch_unwind};

use json_patch::{PatchErrorKind, PatchOperation};
use serde_json::Value;

/// Why a JSON patch could not be applied, in the words of the API server's JSON patch
/// library (`evanphx/json-patch`) where it has some.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum JsonPatchError {
    /// A `test` operation found a different value.
    #[error("testing value {path} failed")]
    TestFailed {
        /// The tested path.
        path: String,
    },
    /// A `test` operation named a path the document does not have.
    #[error("test operation does not apply: doc is missing path: {path}")]
    TestPathMissing {
        /// The tested path.
        path: String,
    },
    /// Any other operation failed (a missing path, a move into itself ...).
    #[error("{0}")]
    Failed(String),
    /// The patch library panicked; the document is unchanged.
    #[error("the JSON patch could not be applied (internal error in the patch library)")]
    Panicked,
}

/// Applies `operations` to a copy of `document` and returns it; `document` is never
/// changed.
///
/// # Errors
///
/// [`JsonPatchError`] for the first operation that fails.
pub(crate) fn apply(
    document: &Value,
    operations: &[PatchOperation],
) -> Result<Value, JsonPatchError> {
    let mut patched = document.clone();
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        json_patch::patch_unsafe(&mut patched, operations)
    }));
    match outcome {
        Ok(Ok(())) => Ok(patched),
        Ok(Err(err)) => {
            let test_path = operations.get(err.operation).and_then(|op| match op {
                PatchOperation::Test(test) => Some(test.path.to_string()),
                _ => None,
            });
            Err(match (&err.kind, test_path) {
                (PatchErrorKind::TestFailed, Some(path)) => JsonPatchError::TestFailed { path },
                (PatchErrorKind::InvalidPointer, Some(path)) => {
                    JsonPatchError::TestPathMissing { path }
                }
                _ => JsonPatchError::Failed(err.to_string()),
            })
        }
        Err(_) => {
            tracing::warn!("the json-patch library panicked; answered the request with 422");
            Err(JsonPatchError::Panicked)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ops(value: Value) -> Vec<PatchOperation> {
        serde_json::from_value::<json_patch::Patch>(value)
            .unwrap()
            .0
    }

    #[test]
    fn move_onto_parent_then_failing_test_does_not_panic() {
        let document = json!({"data": {"k": "v"}});
        let patch = ops(json!([
            {"op": "move", "from": "/data/k", "path": "/data"},
            {"op": "test", "path": "/nope", "value": 1}
        ]));
        assert_eq!(
            apply(&document, &patch),
            Err(JsonPatchError::TestPathMissing {
                path: "/nope".into()
            })
        );
        assert_eq!(
            document,
            json!({"data": {"k": "v"}}),
            "the input is untouched"
        );
    }

    #[test]
    fn failed_test_op_is_reported_as_a_failed_test_not_an_invalid_path() {
        let document = json!({"data": {"k": "v"}});
        let err = apply(
            &document,
            &ops(json!([{"op": "test", "path": "/data/k", "value": "x"}])),
        )
        .unwrap_err();
        assert_eq!(err.to_string(), "testing value /data/k failed");
        let patched = apply(
            &document,
            &ops(json!([{"op": "test", "path": "/data/k", "value": "v"},
            {"op": "add", "path": "/data/j", "value": "w"}])),
        )
        .unwrap();
        assert_eq!(patched, json!({"data": {"k": "v", "j": "w"}}));
    }
}
