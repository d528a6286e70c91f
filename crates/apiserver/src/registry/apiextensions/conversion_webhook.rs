//! [`ConversionWebhook`]: the conversion webhook a CRD names
//! (`spec.conversion.strategy: Webhook`), kept with the resources it serves; the calls
//! are `webhook_converter.rs`.

use std::sync::Arc;

use serde_json::Value;

use crate::webhook_client::{Endpoint, ca_bundle_of};

/// The `ConversionReview` versions this server speaks.
pub(crate) const REVIEW_VERSIONS: [&str; 2] = ["v1", "v1beta1"];

/// A CRD's conversion webhook: `spec.conversion.webhook` of a CRD whose strategy is
/// `Webhook`, read leniently (the CRD's validation ran when it was written).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ConversionWebhook {
    /// Where it is called; `None` when `clientConfig` names neither a URL nor a service.
    pub(crate) endpoint: Option<Endpoint>,
    /// `clientConfig.caBundle`, decoded (PEM).
    pub(crate) ca_bundle: Vec<u8>,
    /// `conversionReviewVersions`, in the CRD's order.
    pub(crate) review_versions: Vec<String>,
}

impl ConversionWebhook {
    /// The conversion webhook of `crd`, if its strategy is `Webhook`.
    pub(crate) fn of_crd(crd: &Value) -> Option<Arc<ConversionWebhook>> {
        let conversion = crd.pointer("/spec/conversion")?;
        if conversion.get("strategy").and_then(Value::as_str) != Some("Webhook") {
            return None;
        }
        let webhook = conversion.get("webhook").unwrap_or(&Value::Null);
        let client = webhook.get("clientConfig").unwrap_or(&Value::Null);
        Some(Arc::new(ConversionWebhook {
            endpoint: Endpoint::of_client_config(client),
            ca_bundle: ca_bundle_of(client),
            review_versions: crate::object::string_list(webhook.get("conversionReviewVersions")),
        }))
    }

    /// The review version sent: the first of `conversionReviewVersions` this server
    /// speaks, as upstream picks it.
    pub(crate) fn review_version(&self) -> Option<&'static str> {
        self.review_versions
            .iter()
            .find_map(|version| REVIEW_VERSIONS.into_iter().find(|v| v == version))
    }
}
