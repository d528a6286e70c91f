//! [`Webhook`]: one entry of a stored `MutatingWebhookConfiguration` or
//! `ValidatingWebhookConfiguration`, read leniently (the configuration's validation ran
//! when it was written) with kube-apiserver's defaults, and the configurations' order
//! (by configuration name, then as listed).

use std::time::Duration;

use kubeclient_machinery::GroupResource;
use serde_json::Value;

use super::match_resources::MatchResources;
use crate::object::string_list;
use crate::storage::Store;
use crate::webhook_client::{Endpoint, ca_bundle_of};

/// The admission registration group.
pub(crate) const GROUP: &str = "admissionregistration.k8s.io";

/// kube-apiserver's default `timeoutSeconds`.
const DEFAULT_TIMEOUT_SECONDS: u64 = 10;

/// One webhook of a configuration.
#[derive(Clone, Debug)]
pub(crate) struct Webhook {
    /// The configuration it belongs to.
    pub(crate) configuration: String,
    /// `name`.
    pub(crate) name: String,
    /// Where it is called; `None` when the configuration names neither.
    pub(crate) endpoint: Option<Endpoint>,
    /// `clientConfig.caBundle`, decoded (PEM).
    pub(crate) ca_bundle: Vec<u8>,
    /// `rules`, `matchPolicy` and the selectors.
    pub(crate) matching: MatchResources,
    /// `failurePolicy: Ignore` (the default is Fail).
    pub(crate) ignore_failures: bool,
    /// `sideEffects`.
    pub(crate) side_effects: String,
    /// `timeoutSeconds` (default 10).
    pub(crate) timeout: Duration,
    /// `admissionReviewVersions`.
    pub(crate) review_versions: Vec<String>,
    /// `reinvocationPolicy: IfNeeded` (mutating webhooks; the default is Never).
    pub(crate) reinvoke_if_needed: bool,
}

impl Webhook {
    /// Whether it may be called for a dry run (`sideEffects` None or NoneOnDryRun).
    pub(crate) fn dry_run_safe(&self) -> bool {
        matches!(self.side_effects.as_str(), "None" | "NoneOnDryRun")
    }
}

fn text<'a>(value: &'a Value, field: &str) -> &'a str {
    value.get(field).and_then(Value::as_str).unwrap_or("")
}

/// The webhooks of one configuration object.
fn webhooks_of(configuration: &Value) -> Vec<Webhook> {
    let configuration_name = configuration
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let Some(items) = configuration.get("webhooks").and_then(Value::as_array) else {
        return Vec::new();
    };
    items
        .iter()
        .map(|hook| {
            let client = hook.get("clientConfig").cloned().unwrap_or(Value::Null);
            Webhook {
                configuration: configuration_name.clone(),
                name: text(hook, "name").to_owned(),
                endpoint: Endpoint::of_client_config(&client),
                ca_bundle: ca_bundle_of(&client),
                matching: MatchResources::of_webhook(hook),
                ignore_failures: text(hook, "failurePolicy") == "Ignore",
                side_effects: text(hook, "sideEffects").to_owned(),
                timeout: Duration::from_secs(
                    hook.get("timeoutSeconds")
                        .and_then(Value::as_u64)
                        .unwrap_or(DEFAULT_TIMEOUT_SECONDS)
                        .clamp(1, 30),
                ),
                review_versions: string_list(hook.get("admissionReviewVersions")),
                reinvoke_if_needed: text(hook, "reinvocationPolicy") == "IfNeeded",
            }
        })
        .collect()
}

/// The webhooks of every stored configuration of `plural` (`mutatingwebhookconfigurations`
/// or `validatingwebhookconfigurations`), in kube-apiserver's order: configurations by
/// name, webhooks as listed.
pub(crate) fn webhooks(store: &Store, plural: &str) -> Vec<Webhook> {
    let resource = GroupResource::new(GROUP, plural);
    let mut configurations = store.snapshot(&resource, "").objects;
    if configurations.is_empty() {
        return Vec::new();
    }
    configurations.sort_by(|a, b| a.name().cmp(b.name()));
    configurations
        .iter()
        .flat_map(|configuration| webhooks_of(&configuration.value))
        .collect()
}
