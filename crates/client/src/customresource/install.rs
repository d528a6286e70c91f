//! [`install_crd`]: create or update a CRD and wait until the server serves it.

use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

use crate::api::{Api, PostParams};
use crate::rest::Client;

/// Why [`install_crd`] failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CrdError {
    /// Creating, reading or replacing the CRD failed (the server refused it: check the
    /// cause for the field).
    #[error("installing CustomResourceDefinition {name} failed")]
    Request {
        /// The CRD's name.
        name: String,
        /// The client error.
        #[source]
        source: crate::Error,
    },
    /// The CRD was stored but never reported `Established` (names conflict with another
    /// resource?).
    #[error(
        "CustomResourceDefinition {name} was not established within {seconds} s (check its status conditions, e.g. NamesAccepted)"
    )]
    NotEstablished {
        /// The CRD's name.
        name: String,
        /// How long we waited.
        seconds: u64,
    },
}

/// Creates `crd`, or replaces the spec of the one already there, then waits (up to
/// `timeout`) until its `Established` condition is true.
///
/// # Examples
///
/// ```no_run
/// use std::time::Duration;
/// use kubeclient::customresource::{CustomResourceExt, install_crd};
/// # #[derive(kubeclient::CustomResource, Clone, Debug, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
/// # #[kubeclient(group = "example.kubeclient.dev", version = "v1", kind = "Widget", namespaced)]
/// # struct WidgetSpec { size: i32 }
/// # async fn run(client: kubeclient::Client) -> Result<(), kubeclient::customresource::CrdError> {
/// install_crd(&client, &Widget::crd(), Duration::from_secs(30)).await?;
/// # Ok(()) }
/// ```
///
/// # Errors
///
/// [`CrdError`].
///
/// # Cancel safety
///
/// Cancel safe (the CRD may or may not have been written).
pub async fn install_crd(
    client: &Client,
    crd: &CustomResourceDefinition,
    timeout: Duration,
) -> Result<CustomResourceDefinition, CrdError> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let name = crd.metadata.name.clone().unwrap_or_default();
    let failed = |source| CrdError::Request {
        name: name.clone(),
        source,
    };
    match api.create(&PostParams::default(), crd).await {
        Ok(_) => {}
        Err(err) if err.api().is_some_and(|e| e.is_already_exists()) => {
            let mut current = api.get(&name).await.map_err(failed)?;
            current.spec = crd.spec.clone();
            api.replace(&name, &PostParams::default(), &current)
                .await
                .map_err(failed)?;
        }
        Err(err) => return Err(failed(err)),
    }
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let current = api.get(&name).await.map_err(failed)?;
        let established = current
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|conditions| {
                conditions
                    .iter()
                    .any(|c| c.type_ == "Established" && c.status == "True")
            });
        if established {
            return Ok(current);
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(CrdError::NotEstablished {
                name,
                seconds: timeout.as_secs(),
            });
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
