//! Admission and conversion webhooks as controller-runtime writes them
//! (`pkg/webhook/admission`, `pkg/webhook/conversion`): a [`CustomDefaulter`] or
//! [`CustomValidator`] per type, the functions that answer the API server's
//! `AdmissionReview` (admission.k8s.io/v1) with them: [`default_review`] (the object's
//! changes as a JSON patch) and [`validate_review`] (allowed or denied, with warnings);
//! a CRD's versions as a hub and [`Convertible`] spokes ([`Conversion`]) answering its
//! `ConversionReview` ([`convert_review`]); the HTTPS [`WebhookServer`] that serves them,
//! and [`inject_ca_bundle`] / [`inject_conversion_ca_bundle`], which write its CA into the
//! webhook configurations and the CRDs.
//!
//! # Examples
//!
//! ```
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kubeclient::webhook::{AdmissionReview, CustomDefaulter, Denial, default_review};
//!
//! struct Labelled;
//! impl CustomDefaulter<ConfigMap> for Labelled {
//!     async fn default(&self, cm: &mut ConfigMap) -> Result<(), Denial> {
//!         cm.metadata.labels.get_or_insert_default().entry("team".into()).or_insert("core".into());
//!         Ok(())
//!     }
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let review: AdmissionReview = serde_json::from_value(serde_json::json!({
//!     "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
//!     "request": {"uid": "7f0b", "operation": "CREATE",
//!                 "kind": {"group": "", "version": "v1", "kind": "ConfigMap"},
//!                 "resource": {"group": "", "version": "v1", "resource": "configmaps"},
//!                 "object": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}},
//! })).unwrap();
//! let answer = default_review(&Labelled, review).await;
//! let response = answer.response.unwrap();
//! assert!(response.allowed);
//! assert_eq!(response.patch_type.as_deref(), Some("JSONPatch"));
//! # });
//! ```

mod admission_review;
mod ca_bundle;
mod conversion;
mod conversion_review;
mod defaulter;
mod server;
mod validator;

pub use admission_review::{
    AdmissionRequest, AdmissionResponse, AdmissionReview, GroupVersionKind, GroupVersionResource,
    Operation, ResponseStatus,
};
pub use ca_bundle::{inject_ca_bundle, inject_conversion_ca_bundle};
pub use conversion::{Conversion, ConversionError, Convertible, convert_review};
pub use conversion_review::{
    ConversionRequest, ConversionResponse, ConversionResult, ConversionReview,
};
pub use defaulter::{CustomDefaulter, default_review};
pub use server::{WebhookServer, WebhookServerBuilder, WebhookServerError};
pub use validator::{CustomValidator, Warnings, validate_review};

/// Why a webhook refuses an object: the message the API server shows the user
/// (`admission webhook "..." denied the request: <message>`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Denial {
    /// What the user reads.
    pub message: String,
    /// The HTTP code of the refusal (403 unless set).
    pub code: u16,
    /// The Status reason (`Forbidden` unless set; `Invalid` for a validation failure).
    pub reason: String,
}

impl Denial {
    /// A 403 Forbidden refusal, as controller-runtime's `admission.Denied`.
    pub fn new(message: impl Into<String>) -> Self {
        Denial {
            message: message.into(),
            code: 403,
            reason: "Forbidden".to_owned(),
        }
    }

    /// A 422 Invalid refusal (an object that breaks the type's rules).
    pub fn invalid(message: impl Into<String>) -> Self {
        Denial {
            message: message.into(),
            code: 422,
            reason: "Invalid".to_owned(),
        }
    }
}

impl From<String> for Denial {
    fn from(message: String) -> Self {
        Denial::new(message)
    }
}

impl From<&str> for Denial {
    fn from(message: &str) -> Self {
        Denial::new(message)
    }
}

#[cfg(test)]
mod tests;
