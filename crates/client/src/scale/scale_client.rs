//! [`ScaleClient`]: get, update and patch the scale of any resource by group and resource
//! (client-go's `scale.ScalesGetter`).

use k8s_openapi::api::autoscaling::v1::Scale;
use kubeclient_machinery::{ApiResource, DynamicObject, GroupResource, GroupVersionKind};
use serde::Serialize;

use super::ScaleKindResolver;
use crate::api::{Api, Patch, PatchParams, PostParams};
use crate::discovery::Discovery;
use crate::rest::Client;

/// Why a scale request failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ScaleError {
    /// Discovery does not know the resource, even after a refresh.
    #[error("the server doesn't have a resource type {0}")]
    UnknownResource(GroupResource),
    /// The resource has no `scale` subresource.
    #[error("could not find scale subresource for {0} in discovery information")]
    NoScaleSubresource(GroupResource),
    /// The scale subresource speaks a kind this client does not convert (only
    /// `autoscaling/v1` `Scale` is supported; older servers' `extensions/v1beta1` and
    /// `apps/v1beta*` scales are not).
    #[error("unsupported scale kind {kind} for {resource}")]
    UnsupportedScaleKind {
        /// The resource.
        resource: GroupResource,
        /// What discovery said its scale subresource speaks.
        kind: GroupVersionKind,
    },
    /// The request failed (404 when the object does not exist, 409 on a stale update).
    #[error(transparent)]
    Client(#[from] crate::Error),
}

/// Reads and writes the `scale` subresource of any scalable resource (Go's
/// `scale.ScalesGetter`/`ScaleInterface`): Deployments, ReplicaSets, StatefulSets,
/// ReplicationControllers and custom resources with a scale subresource.
///
/// # Examples
///
/// ```no_run
/// use kubeclient::machinery::GroupResource;
/// use kubeclient::scale::ScaleClient;
///
/// # async fn run(client: kubeclient::Client) -> Result<(), Box<dyn std::error::Error>> {
/// let scales = ScaleClient::new(client);
/// let deployments = GroupResource::new("apps", "deployments");
/// let mut scale = scales.get("default", &deployments, "web").await?;
/// scale.spec.get_or_insert_default().replicas = Some(5);
/// let scaled = scales.update("default", &deployments, &scale).await?;
/// assert_eq!(scaled.spec.and_then(|s| s.replicas), Some(5));
/// # Ok(()) }
/// ```
#[doc(
    alias = "ScalesGetter",
    alias = "ScaleInterface",
    alias = "NewForConfig"
)]
#[derive(Debug)]
pub struct ScaleClient {
    client: Client,
    discovery: Discovery,
    kinds: ScaleKindResolver,
}

impl ScaleClient {
    /// A scale client discovering resources through `client`.
    #[must_use]
    pub fn new(client: Client) -> Self {
        ScaleClient {
            discovery: Discovery::new(client.clone()),
            kinds: ScaleKindResolver::new(client.clone()),
            client,
        }
    }

    /// The preferred version of `resource`; refreshes discovery once when it is unknown
    /// (a CRD installed since), as client-go's deferred REST mapper does.
    async fn resolve(&self, resource: &GroupResource) -> Result<ApiResource, ScaleError> {
        let find = |mapper: &crate::discovery::RestMapper| {
            let group = mapper.groups().iter().find(|g| g.name == resource.group)?;
            group
                .resources
                .iter()
                .find(|r| r.version == group.preferred_version && r.plural == resource.resource)
                .cloned()
        };
        if let Some(found) = find(&*self.discovery.resources().await?) {
            return Ok(found);
        }
        self.discovery.invalidate().await;
        self.kinds.invalidate().await;
        find(&*self.discovery.resources().await?)
            .ok_or_else(|| ScaleError::UnknownResource(resource.clone()))
    }

    /// The typed client of `resource` in `namespace`, after checking its scale kind.
    async fn api(
        &self,
        namespace: &str,
        resource: &GroupResource,
    ) -> Result<Api<DynamicObject>, ScaleError> {
        let api_resource = self.resolve(resource).await?;
        let kind = self
            .kinds
            .scale_for_resource(&api_resource)
            .await?
            .ok_or_else(|| ScaleError::NoScaleSubresource(resource.clone()))?;
        if (
            kind.group.as_str(),
            kind.version.as_str(),
            kind.kind.as_str(),
        ) != ("autoscaling", "v1", "Scale")
        {
            return Err(ScaleError::UnsupportedScaleKind {
                resource: resource.clone(),
                kind,
            });
        }
        Ok(if api_resource.namespaced {
            Api::namespaced_with(self.client.clone(), namespace, &api_resource)
        } else {
            Api::all_with(self.client.clone(), &api_resource)
        })
    }

    /// The scale of object `name` of `resource` (`namespace` is ignored for
    /// cluster-scoped resources).
    ///
    /// # Errors
    ///
    /// [`ScaleError`].
    pub async fn get(
        &self,
        namespace: &str,
        resource: &GroupResource,
        name: &str,
    ) -> Result<Scale, ScaleError> {
        let api = self.api(namespace, resource).await?;
        Ok(api.get_scale(name).await?)
    }

    /// Writes `scale` (named by its `metadata.name`; its `resourceVersion`, if set, must be
    /// current).
    ///
    /// # Errors
    ///
    /// [`ScaleError`]; a 409 conflict when the resourceVersion is stale.
    pub async fn update(
        &self,
        namespace: &str,
        resource: &GroupResource,
        scale: &Scale,
    ) -> Result<Scale, ScaleError> {
        let api = self.api(namespace, resource).await?;
        let name = scale.metadata.name.as_deref().unwrap_or_default();
        Ok(api
            .replace_scale(name, &PostParams::default(), scale)
            .await?)
    }

    /// Patches the scale of object `name`.
    ///
    /// # Errors
    ///
    /// [`ScaleError`].
    pub async fn patch<P: Serialize>(
        &self,
        namespace: &str,
        resource: &GroupResource,
        name: &str,
        patch: &Patch<P>,
    ) -> Result<Scale, ScaleError> {
        let api = self.api(namespace, resource).await?;
        Ok(api
            .patch_scale(name, &PatchParams::default(), patch)
            .await?)
    }
}
