//! [`ScaleKindResolver`]: which kind a resource's `scale` subresource speaks (client-go's
//! `discoveryScaleResolver` behind a `cachedScaleKindResolver`).

use std::collections::HashMap;

use kubeclient_machinery::{ApiResource, GroupVersionKind};
use serde::Deserialize;

use crate::error::Result;
use crate::rest::{Client, Request};

/// Finds the kind of a resource's `scale` subresource in the server's resource list for
/// the resource's group-version (`<plural>/scale`; its `group` and `version` when given,
/// else the parent's), remembering answers.
///
/// # Examples
///
/// ```no_run
/// use k8s_openapi::api::apps::v1::Deployment;
/// use kubeclient::machinery::ApiResource;
/// use kubeclient::scale::ScaleKindResolver;
///
/// # async fn run(client: kubeclient::Client) -> kubeclient::Result<()> {
/// let resolver = ScaleKindResolver::new(client);
/// let kind = resolver.scale_for_resource(&ApiResource::of::<Deployment>()).await?;
/// assert_eq!(kind.map(|k| k.to_string()).as_deref(), Some("autoscaling/v1, Kind=Scale"));
/// # Ok(()) }
/// ```
#[doc(
    alias = "NewDiscoveryScaleKindResolver",
    alias = "CachedScaleKindResolver"
)]
#[derive(Debug)]
pub struct ScaleKindResolver {
    client: Client,
    /// `group/version/plural` → the scale kind (`None`: no scale subresource).
    cache: tokio::sync::Mutex<HashMap<String, Option<GroupVersionKind>>>,
}

#[derive(Deserialize)]
struct ResourceList {
    #[serde(default)]
    resources: Vec<Entry>,
}

#[derive(Deserialize)]
struct Entry {
    name: String,
    #[serde(default)]
    group: String,
    #[serde(default)]
    version: String,
    #[serde(default)]
    kind: String,
}

impl ScaleKindResolver {
    /// A resolver asking the server through `client`.
    #[must_use]
    pub fn new(client: Client) -> Self {
        ScaleKindResolver {
            client,
            cache: tokio::sync::Mutex::new(HashMap::new()),
        }
    }

    /// The kind of `resource`'s scale subresource; `None` when it has none.
    ///
    /// # Errors
    ///
    /// Request and decode errors of the resource list.
    pub async fn scale_for_resource(
        &self,
        resource: &ApiResource,
    ) -> Result<Option<GroupVersionKind>> {
        let cache_key = format!(
            "{}/{}/{}",
            resource.group, resource.version, resource.plural
        );
        if let Some(known) = self.cache.lock().await.get(&cache_key) {
            return Ok(known.clone());
        }
        let path = resource.group_version().api_prefix();
        let list: ResourceList = self.client.request_json(Request::get(path)).await?;
        let wanted = format!("{}/scale", resource.plural);
        let kind = list
            .resources
            .into_iter()
            .find(|entry| entry.name == wanted)
            .map(|entry| {
                if entry.group.is_empty() || entry.version.is_empty() {
                    GroupVersionKind::new(&resource.group, &resource.version, &entry.kind)
                } else {
                    GroupVersionKind::new(&entry.group, &entry.version, &entry.kind)
                }
            });
        self.cache.lock().await.insert(cache_key, kind.clone());
        Ok(kind)
    }

    /// Forgets every answer (after CRDs changed).
    pub async fn invalidate(&self) {
        self.cache.lock().await.clear();
    }
}
