//! [`AdmissionReview`]: what the API server sends an admission webhook and what it reads
//! back (admission.k8s.io/v1, `k8s.io/api/admission/v1/types.go`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The envelope of a request and of its answer.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionReview {
    /// `admission.k8s.io/v1`.
    #[serde(default)]
    pub api_version: String,
    /// `AdmissionReview`.
    #[serde(default)]
    pub kind: String,
    /// What the API server asks (absent in an answer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<AdmissionRequest>,
    /// The webhook's answer (absent in a request).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<AdmissionResponse>,
}

impl AdmissionReview {
    /// The review carrying `response`, as the API server expects it back.
    #[must_use]
    pub fn answer(response: AdmissionResponse) -> Self {
        AdmissionReview {
            api_version: "admission.k8s.io/v1".to_owned(),
            kind: "AdmissionReview".to_owned(),
            request: None,
            response: Some(response),
        }
    }
}

/// A group, version and kind.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupVersionKind {
    /// The API group ("" for core).
    #[serde(default)]
    pub group: String,
    /// The version.
    #[serde(default)]
    pub version: String,
    /// The kind.
    #[serde(default)]
    pub kind: String,
}

/// A group, version and resource.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupVersionResource {
    /// The API group ("" for core).
    #[serde(default)]
    pub group: String,
    /// The version.
    #[serde(default)]
    pub version: String,
    /// The resource (plural).
    #[serde(default)]
    pub resource: String,
}

/// The operation being admitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Operation {
    /// A create.
    Create,
    /// An update, patch or apply.
    Update,
    /// A delete.
    Delete,
    /// A connect (exec, attach, port-forward, proxy).
    Connect,
}

/// What is being admitted.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionRequest {
    /// Identifies this request; the answer must carry it back.
    pub uid: String,
    /// The kind of the object as the webhook registered for it.
    #[serde(default)]
    pub kind: GroupVersionKind,
    /// The resource.
    #[serde(default)]
    pub resource: GroupVersionResource,
    /// The subresource, if any (`status`, `scale`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub_resource: Option<String>,
    /// The kind the user sent, when the API server converted it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_kind: Option<GroupVersionKind>,
    /// The resource the user addressed, when the API server converted it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_resource: Option<GroupVersionResource>,
    /// The object's name (may be empty on a create with `generateName`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The object's namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The operation.
    pub operation: Operation,
    /// Who asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_info: Option<serde_json::Value>,
    /// The new object (create, update).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object: Option<serde_json::Value>,
    /// The existing object (update, delete).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_object: Option<serde_json::Value>,
    /// Whether the write will not be persisted (the webhook must then have no side effects).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dry_run: Option<bool>,
    /// The operation's options (`CreateOptions`, `UpdateOptions`, `DeleteOptions`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<serde_json::Value>,
}

/// The `status` of a refused (or annotated) request: shown to the user.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResponseStatus {
    /// The HTTP code.
    #[serde(default)]
    pub code: u16,
    /// The message.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// A machine-readable reason (`Forbidden`, `Invalid`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
}

/// The webhook's answer.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionResponse {
    /// The request's uid.
    pub uid: String,
    /// Whether the request may go on.
    pub allowed: bool,
    /// Why not, or a message.
    #[serde(default, rename = "status", skip_serializing_if = "Option::is_none")]
    pub result: Option<ResponseStatus>,
    /// A JSON patch to apply to the object (a mutating webhook), base64 on the wire.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "base64_bytes"
    )]
    pub patch: Option<Vec<u8>>,
    /// `JSONPatch` when there is a patch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch_type: Option<String>,
    /// Annotations for the audit log.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub audit_annotations: BTreeMap<String, String>,
    /// Warnings the user sees (`Warning:` lines in kubectl).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

impl AdmissionResponse {
    /// Allowed, with nothing to say (controller-runtime's `admission.Allowed("")`).
    #[must_use]
    pub fn allowed(uid: &str) -> Self {
        AdmissionResponse {
            uid: uid.to_owned(),
            allowed: true,
            result: Some(ResponseStatus {
                code: 200,
                ..ResponseStatus::default()
            }),
            ..AdmissionResponse::default()
        }
    }

    /// Refused with `code`, `reason` and `message`.
    #[must_use]
    pub fn refused(uid: &str, code: u16, reason: &str, message: &str) -> Self {
        AdmissionResponse {
            uid: uid.to_owned(),
            allowed: false,
            result: Some(ResponseStatus {
                code,
                message: message.to_owned(),
                reason: reason.to_owned(),
            }),
            ..AdmissionResponse::default()
        }
    }
}

mod base64_bytes {
    use base64::Engine as _;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(
        value: &Option<Vec<u8>>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match value {
            Some(bytes) => {
                serializer.serialize_str(&base64::engine::general_purpose::STANDARD.encode(bytes))
            }
            None => serializer.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<Vec<u8>>, D::Error> {
        match Option::<String>::deserialize(deserializer)? {
            Some(text) => base64::engine::general_purpose::STANDARD
                .decode(text)
                .map(Some)
                .map_err(serde::de::Error::custom),
            None => Ok(None),
        }
    }
}
