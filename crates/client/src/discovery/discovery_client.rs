//! [`Discovery`]: client-go's `DiscoveryClient`, with its cache.

use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::version::Info;
use kubeclient_machinery::ApiResource;
use serde::Deserialize;

use super::{AGGREGATED_ACCEPT, ApiGroup, RestMapper, aggregated};
use crate::error::Result;
use crate::rest::{Client, Request, decode};

/// Discovers and caches what the server serves.
///
/// # Examples
///
/// ```no_run
/// # async fn run(client: kubeclient::Client) -> kubeclient::Result<()> {
/// let discovery = kubeclient::discovery::Discovery::new(client);
/// let resources = discovery.resources().await?;
/// let deployments = resources.resolve("deploy").expect("served");
/// assert_eq!(deployments.plural, "deployments");
/// # Ok(()) }
/// ```
#[doc(alias = "DiscoveryClient")]
#[derive(Debug)]
pub struct Discovery {
    client: Client,
    cache: tokio::sync::Mutex<Option<Arc<RestMapper>>>,
}

impl Discovery {
    /// Discovery through a client.
    #[must_use]
    pub fn new(client: Client) -> Self {
        Discovery {
            client,
            cache: tokio::sync::Mutex::new(None),
        }
    }

    /// `GET /version`.
    ///
    /// # Errors
    ///
    /// Request and decode errors.
    pub async fn server_version(&self) -> Result<Info> {
        self.client.request_json(Request::get("/version")).await
    }

    /// Every group and resource, from the cache when present.
    ///
    /// # Errors
    ///
    /// Request and decode errors.
    pub async fn resources(&self) -> Result<Arc<RestMapper>> {
        let mut cache = self.cache.lock().await;
        if let Some(resources) = cache.as_ref() {
            return Ok(resources.clone());
        }
        let resources = Arc::new(RestMapper::new(self.fetch_groups().await?));
        *cache = Some(resources.clone());
        Ok(resources)
    }

    /// Forgets the cache (e.g. after creating a CRD); the next call reads the server again.
    pub async fn invalidate(&self) {
        *self.cache.lock().await = None;
    }

    async fn fetch_groups(&self) -> Result<Vec<ApiGroup>> {
        let mut groups = Vec::new();
        for root in ["/api", "/apis"] {
            let (content_type, body) = self
                .client
                .request_with_content_type(Request::get(root).accept(AGGREGATED_ACCEPT))
                .await?;
            let url = format!("{}{root}", self.client.base_url());
            if content_type
                .as_deref()
                .is_some_and(aggregated::is_aggregated_content_type)
            {
                groups.extend(aggregated::parse(&url, &body)?);
            } else if root == "/api" {
                groups.push(self.legacy_core(&url, &body).await?);
            } else {
                groups.extend(self.legacy_groups(&url, &body).await?);
            }
        }
        Ok(groups)
    }

    async fn legacy_core(&self, url: &str, body: &[u8]) -> Result<ApiGroup> {
        #[derive(Deserialize)]
        struct Versions {
            #[serde(default)]
            versions: Vec<String>,
        }
        let versions: Versions = decode(url, body)?;
        let mut group = ApiGroup {
            name: String::new(),
            preferred_version: versions.versions.first().cloned().unwrap_or_default(),
            versions: versions.versions,
            resources: Vec::new(),
        };
        for version in group.versions.clone() {
            group
                .resources
                .extend(self.legacy_resources("", &version).await?);
        }
        Ok(group)
    }

    async fn legacy_groups(&self, url: &str, body: &[u8]) -> Result<Vec<ApiGroup>> {
        #[derive(Deserialize)]
        struct GroupList {
            #[serde(default)]
            groups: Vec<Group>,
        }
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Group {
            name: String,
            #[serde(default)]
            versions: Vec<GroupVersion>,
            #[serde(default)]
            preferred_version: Option<GroupVersion>,
        }
        #[derive(Deserialize)]
        struct GroupVersion {
            version: String,
        }
        let list: GroupList = decode(url, body)?;
        let mut groups = Vec::new();
        for group in list.groups {
            let versions: Vec<String> = group.versions.into_iter().map(|v| v.version).collect();
            let preferred = group
                .preferred_version
                .map(|v| v.version)
                .or_else(|| versions.first().cloned())
                .unwrap_or_default();
            let mut resources = Vec::new();
            for version in &versions {
                resources.extend(self.legacy_resources(&group.name, version).await?);
            }
            groups.push(ApiGroup {
                name: group.name,
                versions,
                preferred_version: preferred,
                resources,
            });
        }
        Ok(groups)
    }

    async fn legacy_resources(&self, group: &str, version: &str) -> Result<Vec<ApiResource>> {
        #[derive(Deserialize)]
        struct ResourceList {
            #[serde(default)]
            resources: Vec<Entry>,
        }
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Entry {
            name: String,
            #[serde(default)]
            singular_name: String,
            #[serde(default)]
            namespaced: bool,
            #[serde(default)]
            kind: String,
            #[serde(default)]
            verbs: Vec<String>,
            #[serde(default)]
            short_names: Vec<String>,
            #[serde(default)]
            categories: Vec<String>,
        }
        let path = if group.is_empty() {
            format!("/api/{version}")
        } else {
            format!("/apis/{group}/{version}")
        };
        let list: ResourceList = self.client.request_json(Request::get(path)).await?;
        let gv = kubeclient_machinery::GroupVersion::new(group, version);
        Ok(list
            .resources
            .into_iter()
            .filter(|entry| !entry.name.contains('/'))
            .map(|entry| ApiResource {
                group: group.to_owned(),
                version: version.to_owned(),
                api_version: gv.to_string(),
                singular: if entry.singular_name.is_empty() {
                    entry.kind.to_ascii_lowercase()
                } else {
                    entry.singular_name
                },
                kind: entry.kind,
                plural: entry.name,
                namespaced: entry.namespaced,
                verbs: entry.verbs,
                short_names: entry.short_names,
                categories: entry.categories,
            })
            .collect())
    }
}
