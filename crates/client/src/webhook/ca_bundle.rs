//! [`inject_ca_bundle`]: writing the webhook server's CA into the `caBundle` of every
//! webhook of the named `MutatingWebhookConfiguration`s and
//! `ValidatingWebhookConfiguration`s, as cert-manager's CA injector (and
//! controller-runtime's envtest, for its test webhooks) does, so that the API server
//! trusts the serving certificate.

use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration, WebhookClientConfig,
};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::api::{Api, PostParams};
use crate::util::retry::{RetryBackoff, retry_on_conflict};
use crate::{Client, Result};

/// Sets `client_config.caBundle` of each config to `bundle`; whether anything changed.
fn set_bundles<'a>(
    configs: impl Iterator<Item = &'a mut WebhookClientConfig>,
    bundle: &[u8],
) -> bool {
    let mut changed = false;
    for config in configs {
        if config.ca_bundle.as_ref().map(|b| b.0.as_slice()) != Some(bundle) {
            config.ca_bundle = Some(ByteString(bundle.to_vec()));
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
    webhooks: fn(&mut K) -> Vec<&mut WebhookClientConfig>,
) -> Result<()>
where
    K: DeserializeOwned + Serialize + Send + 'static,
{
    retry_on_conflict(RetryBackoff::DEFAULT_RETRY, || async {
        let mut configuration = api.get(name).await?;
        if set_bundles(webhooks(&mut configuration).into_iter(), bundle) {
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
                .map(|webhook| &mut webhook.client_config)
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
                .map(|webhook| &mut webhook.client_config)
                .collect()
        })
        .await?;
    }
    Ok(())
}
