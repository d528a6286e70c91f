//! [`ConversionReview`]: what the API server sends a CRD's conversion webhook and what it
//! reads back (apiextensions.k8s.io/v1, `k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1/types.go`;
//! v1beta1 has the same shape).

use serde::{Deserialize, Serialize};

/// The envelope of a conversion request and of its answer.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConversionReview {
    /// `apiextensions.k8s.io/v1` (or `v1beta1`; the answer carries the request's).
    #[serde(default)]
    pub api_version: String,
    /// `ConversionReview`.
    #[serde(default)]
    pub kind: String,
    /// What the API server asks (absent in an answer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<ConversionRequest>,
    /// The webhook's answer (absent in a request).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<ConversionResponse>,
}

/// The objects to convert and the version they must end in.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConversionRequest {
    /// Identifies this request; the answer must carry it back.
    pub uid: String,
    /// The `apiVersion` every converted object must have (`example.com/v1`).
    #[serde(rename = "desiredAPIVersion")]
    pub desired_api_version: String,
    /// The objects, each in its own version.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub objects: Vec<serde_json::Value>,
}

/// The outcome of a conversion (`metav1.Status`, of which the API server reads `status`
/// and `message`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConversionResult {
    /// `Success` or `Failure`.
    #[serde(default)]
    pub status: String,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

/// The webhook's answer: every object converted, in the request's order, or a failure.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConversionResponse {
    /// The request's uid.
    pub uid: String,
    /// The converted objects (empty on failure).
    #[serde(default, deserialize_with = "null_as_empty")]
    pub converted_objects: Vec<serde_json::Value>,
    /// `Success`, or `Failure` with a message.
    #[serde(default)]
    pub result: ConversionResult,
}

/// A list Go wrote as `null` (a nil slice: kube-apiserver v1.20 sends its request with
/// `"response": {"convertedObjects": null, ...}`) is an empty one.
fn null_as_empty<'de, D>(deserializer: D) -> Result<Vec<serde_json::Value>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    Ok(Option::<Vec<serde_json::Value>>::deserialize(deserializer)?.unwrap_or_default())
}

impl ConversionReview {
    /// The review answering a request of `api_version` with `response`.
    #[must_use]
    pub fn answer(api_version: &str, response: ConversionResponse) -> Self {
        ConversionReview {
            api_version: api_version.to_owned(),
            kind: "ConversionReview".to_owned(),
            request: None,
            response: Some(response),
        }
    }
}

impl ConversionResponse {
    /// Every object converted.
    #[must_use]
    pub fn success(uid: &str, converted_objects: Vec<serde_json::Value>) -> Self {
        ConversionResponse {
            uid: uid.to_owned(),
            converted_objects,
            result: ConversionResult {
                status: "Success".to_owned(),
                message: String::new(),
            },
        }
    }

    /// Nothing converted, because of `message`.
    #[must_use]
    pub fn failure(uid: &str, message: &str) -> Self {
        ConversionResponse {
            uid: uid.to_owned(),
            converted_objects: Vec::new(),
            result: ConversionResult {
                status: "Failure".to_owned(),
                message: message.to_owned(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ConversionReview;

    #[test]
    fn a_review_as_kube_apiserver_v1_20_sends_it_decodes() {
        // Go's nil slices travel as null, and v1.20 sends an empty response along.
        let review: ConversionReview = serde_json::from_str(
            r#"{"kind":"ConversionReview","apiVersion":"apiextensions.k8s.io/v1",
                "request":{"uid":"u","desiredAPIVersion":"example.com/v1","objects":null},
                "response":{"uid":"","convertedObjects":null,"result":{"metadata":{}}}}"#,
        )
        .unwrap();
        assert_eq!(review.request.unwrap().objects.len(), 0);
        assert_eq!(review.response.unwrap().converted_objects.len(), 0);
    }
}
