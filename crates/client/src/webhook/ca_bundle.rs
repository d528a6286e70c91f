//! [`inject_ca_bundle`]: writing the webhook server's CA into the `caBundle` of every
//! webhook of the named `MutatingWebhookConfiguration`s and
//! `ValidatingWebhookConfiguration`s, and [`inject_conversion_ca_bundle`]: into a CRD's
//! conversion webhook, as cert-manager's CA injector (and controller-runtime's envtest,
//! for its test webhooks) does, so that the API server trusts the serving certificate.

use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::api::{Api, PostParams};
use crate::util::retry::{RetryBackoff, retry_on_conflict};
use crate::{Client, Result};

/// Sets each `caBundle` to `bundle`; whether anything changed.
fn set_bundles<'a>(slots: impl Iterator<Item = &'a mut Option<ByteString>>, bundle: &[u8]) -> bool {
    let mut changed = false;
    for slot in slots {
        if slot.as_ref().map(|b| b.0.as_slice()) != Some(bundle) {
            *slot = Some(ByteString(bundle.to_vec()));
            changed = true;
        }
    }
    changed
}

/// Reads the configuration `name`, sets the bundle in its webhooks and writes it back
/// when that changed it, again on a conflict.
async fn inject<K>(
    api: &Api<K>,
    name: &str,
    bundle: &[u8],
    bundles: fn(&mut K) -> Vec<&mut Option<ByteString>>,
) -> Result<()>
where
    K: DeserializeOwned + Serialize + Send + 'static,
{
    retry_on_conflict(RetryBackoff::DEFAULT_RETRY, || async {
        let mut configuration = api.get(name).await?;
        if set_bundles(bundles(&mut configuration).into_iter(), bundle) {
            api.replace(name, &PostParams::default(), &configuration)
                .await?;
        }
        Ok(())
    })
    .await
}

/// Writes `ca_bundle` (PEM, such as [`WebhookServer::ca_bundle`](super::WebhookServer::ca_bundle))
/// into `clientConfig.caBundle` of every webhook of the `MutatingWebhookConfiguration`s
/// named in `mutating` and the `ValidatingWebhookConfiguration`s named in `validating`.
/// Each configuration is read and written back only when a bundle differs, again on a
/// conflict (client-go's `RetryOnConflict` with its `DefaultRetry`).
///
/// # Errors
///
/// The first configuration that cannot be read (404 for one that does not exist) or
/// written.
///
/// # Examples
///
/// ```no_run
/// # async fn run(client: kubeclient::Client) -> Result<(), Box<dyn std::error::Error>> {
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kubeclient::webhook::{CustomValidator, WebhookServer, inject_ca_bundle};
///
/// struct AnyConfigMap;
/// impl CustomValidator<ConfigMap> for AnyConfigMap {}
///
/// let server = WebhookServer::builder()
///     .self_signed(&["webhook.my-ns.svc"])
///     .validator("/validate-configmaps", AnyConfigMap)
///     .start()
///     .await?;
/// let ca = server.ca_bundle().ok_or("no CA in the certificate directory")?;
/// inject_ca_bundle(&client, ca, &[], &["configmap-policy"]).await?;
/// # Ok(()) }
/// ```
#[doc(alias = "caBundle")]
#[doc(alias = "cainjector")]
pub async fn inject_ca_bundle(
    client: &Client,
    ca_bundle: &str,
    mutating: &[&str],
    validating: &[&str],
) -> Result<()> {
    let bundle = ca_bundle.as_bytes();
    let api = Api::<MutatingWebhookConfiguration>::all(client.clone());
    for name in mutating {
        inject(&api, name, bundle, |configuration| {
            configuration
                .webhooks
                .iter_mut()
                .flatten()
                .map(|webhook| &mut webhook.client_config.ca_bundle)
                .collect()
        })
        .await?;
    }
    let api = Api::<ValidatingWebhookConfiguration>::all(client.clone());
    for name in validating {
        inject(&api, name, bundle, |configuration| {
            configuration
                .webhooks
                .iter_mut()
                .flatten()
                .map(|webhook| &mut webhook.client_config.ca_bundle)
                .collect()
        })
        .await?;
    }
    Ok(())
}

/// Writes `ca_bundle` (PEM, such as [`WebhookServer::ca_bundle`](super::WebhookServer::ca_bundle))
/// into `spec.conversion.webhook.clientConfig.caBundle` of the CustomResourceDefinition
/// `crd_name` (cert-manager's `cert-manager.io/inject-ca-from` on a CRD). The CRD is read
/// and written back only when its bundle differs, again on a conflict.
///
/// # Errors
///
/// When the CRD cannot be read (404 when it does not exist) or written, and
/// [`Error::InvalidRequest`](crate::Error::InvalidRequest) when its conversion is not a
/// webhook with a `clientConfig`.
///
/// # Examples
///
/// ```no_run
/// # async fn run(client: kubeclient::Client, server: kubeclient::webhook::WebhookServer) -> Result<(), Box<dyn std::error::Error>> {
/// use kubeclient::webhook::inject_conversion_ca_bundle;
///
/// let ca = server.ca_bundle().ok_or("no CA in the certificate directory")?;
/// inject_conversion_ca_bundle(&client, ca, "widgets.example.com").await?;
/// # Ok(()) }
/// ```
#[doc(alias = "caBundle")]
pub async fn inject_conversion_ca_bundle(
    client: &Client,
    ca_bundle: &str,
    crd_name: &str,
) -> Result<()> {
    let api = Api::<CustomResourceDefinition>::all(client.clone());
    let crd = api.get(crd_name).await?;
    let has_webhook = crd
        .spec
        .conversion
        .as_ref()
        .and_then(|conversion| conversion.webhook.as_ref())
        .is_some_and(|webhook| webhook.client_config.is_some());
    if !has_webhook {
        return Err(crate::Error::InvalidRequest(format!(
            "the CustomResourceDefinition {crd_name} has no conversion webhook clientConfig to write a caBundle into: set spec.conversion.strategy Webhook and spec.conversion.webhook.clientConfig first"
        )));
    }
    inject(&api, crd_name, ca_bundle.as_bytes(), |crd| {
        crd.spec
            .conversion
            .as_mut()
            .and_then(|conversion| conversion.webhook.as_mut())
            .and_then(|webhook| webhook.client_config.as_mut())
            .map(|config| &mut config.ca_bundle)
            .into_iter()
            .collect()
    })
    .await
}
