//! The Installation's webhooks, served by a manager's webhook server: a defaulting webhook
//! (an empty image becomes [`DEFAULT_IMAGE`]), a validating webhook (ports and replicas in
//! range) and the v1alpha1 <-> v1 conversion; and their registration: the CRD with both
//! versions and `conversion.strategy: Webhook`, the two webhook configurations, and the
//! server's CA written into all three.

use std::time::Duration;

use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kubeclient::customresource::{CustomResourceExt, install_crd, merge_crds};
use kubeclient::webhook::{
    Conversion, CustomDefaulter, CustomValidator, Denial, Warnings, WebhookServer,
    WebhookServerBuilder, inject_ca_bundle, inject_conversion_ca_bundle,
};
use kubeclient::{Api, Client, Patch, PatchParams};
use serde_json::{Value, json};

use crate::BoxError;
use crate::installation::{Installation, v1alpha1};

/// The image of an Installation that names none.
pub(crate) const DEFAULT_IMAGE: &str = "nginx:1.27";
/// The webhooks' names, as the API server quotes them in refusals.
pub(crate) const DEFAULTING_WEBHOOK: &str = "default.installations.example.kubeclient.dev";
/// The validating webhook's name.
pub(crate) const VALIDATING_WEBHOOK: &str = "validate.installations.example.kubeclient.dev";
/// The most replicas an Installation may ask for.
pub(crate) const MAX_REPLICAS: i32 = 10;

const FIELD_MANAGER: &str = "sample-controller-webhooks";

/// Fills in what an Installation may leave out.
struct Defaults;

impl CustomDefaulter<Installation> for Defaults {
    async fn default(&self, installation: &mut Installation) -> Result<(), Denial> {
        if installation.spec.image.is_empty() {
            installation.spec.image = DEFAULT_IMAGE.to_owned();
        }
        Ok(())
    }
}

/// What an Installation must respect.
struct Rules;

impl Rules {
    fn check(installation: &Installation) -> Result<Warnings, Denial> {
        let spec = &installation.spec;
        let mut problems = Vec::new();
        if !(1..=65535).contains(&spec.service_port) {
            problems.push(format!(
                "spec.servicePort: Invalid value: {}: must be between 1 and 65535",
                spec.service_port
            ));
        }
        if !(0..=MAX_REPLICAS).contains(&spec.replicas) {
            problems.push(format!(
                "spec.replicas: Invalid value: {}: must be between 0 and {MAX_REPLICAS}",
                spec.replicas
            ));
        }
        if problems.is_empty() {
            Ok(Vec::new())
        } else {
            Err(Denial::invalid(problems.join(", ")))
        }
    }
}

impl CustomValidator<Installation> for Rules {
    async fn validate_create(&self, installation: &Installation) -> Result<Warnings, Denial> {
        Rules::check(installation)
    }

    async fn validate_update(
        &self,
        _old: &Installation,
        installation: &Installation,
    ) -> Result<Warnings, Denial> {
        Rules::check(installation)
    }
}

/// The webhook server's routes: defaulting, validation and conversion, with a
/// self-signed certificate for 127.0.0.1 in a directory of this run's.
pub(crate) fn server() -> WebhookServerBuilder {
    let cert_dir =
        std::env::temp_dir().join(format!("sample-controller-webhooks-{}", std::process::id()));
    WebhookServer::builder()
        .address(([127, 0, 0, 1], 0).into())
        .cert_dir(cert_dir)
        .self_signed(&["sample-controller-webhooks.default.svc"])
        .defaulter("/default-installation", Defaults)
        .validator("/validate-installation", Rules)
        .conversion(
            "/convert",
            Conversion::<Installation>::hub().spoke::<v1alpha1::Installation>(),
        )
}

/// The CRD serving v1 (stored) and v1alpha1, converted by the webhook at `base`.
fn crd(base: &str) -> Result<CustomResourceDefinition, BoxError> {
    let mut crd = merge_crds(
        vec![Installation::crd(), v1alpha1::Installation::crd()],
        "v1",
    )?;
    crd.spec.conversion = Some(serde_json::from_value(json!({
        "strategy": "Webhook",
        "webhook": {
            "conversionReviewVersions": ["v1"],
            "clientConfig": {"url": format!("{base}/convert")},
        },
    }))?);
    Ok(crd)
}

/// One webhook of a configuration: Installations' creates and updates go to `path`, in
/// v1 (`matchPolicy: Equivalent`, the default, has the API server convert v1alpha1 writes
/// to v1 for it first).
fn webhook(name: &str, base: &str, path: &str) -> Value {
    json!({
        "name": name,
        "clientConfig": {"url": format!("{base}{path}")},
        "rules": [{"apiGroups": ["example.kubeclient.dev"], "apiVersions": ["v1"],
                   "operations": ["CREATE", "UPDATE"], "resources": ["installations"]}],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "failurePolicy": "Fail",
        "timeoutSeconds": 5,
    })
}

/// Installs the two-version CRD and the webhook configurations, pointing at `server`,
/// then writes the server's CA into them (as cert-manager's CA injector would).
pub(crate) async fn register(client: &Client, server: &WebhookServer) -> Result<(), BoxError> {
    let ca_bundle = server
        .ca_bundle()
        .ok_or("the webhook server has no CA (self_signed writes one)")?;
    let base = format!("https://{}", server.local_addr());
    install_crd(client, &crd(&base)?, Duration::from_secs(30)).await?;
    inject_conversion_ca_bundle(client, ca_bundle, &Installation::crd_name()).await?;
    let apply = PatchParams::apply(FIELD_MANAGER).force();
    let name = "installations.example.kubeclient.dev";
    Api::<MutatingWebhookConfiguration>::all(client.clone())
        .patch(
            name,
            &apply,
            &Patch::Apply(json!({
                "apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
                "metadata": {"name": name},
                "webhooks": [webhook(DEFAULTING_WEBHOOK, &base, "/default-installation")],
            })),
        )
        .await?;
    Api::<ValidatingWebhookConfiguration>::all(client.clone())
        .patch(
            name,
            &apply,
            &Patch::Apply(json!({
                "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
                "metadata": {"name": name},
                "webhooks": [webhook(VALIDATING_WEBHOOK, &base, "/validate-installation")],
            })),
        )
        .await?;
    inject_ca_bundle(client, ca_bundle, &[name], &[name]).await?;
    Ok(())
}
