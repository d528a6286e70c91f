//! [`ListerWatcher`]: what a reflector lists and watches, with list-option tweaks applied
//! to every request (client-go's `ListWatch` / `NewFilteredListWatchFromClient`).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use kubeclient_machinery::PartialObjectMetadata;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::api::{Api, ListParams, ObjectList, WatchParams};
use crate::error::Result;
use crate::rest::watch::WatchStream;
use crate::rest::{DecodeOptions, SharedList};

/// A boxed future, for the object-safe [`ListerWatcher`].
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Lists and watches one resource.
pub trait ListerWatcher<K>: Send + Sync + 'static {
    /// One page of the list.
    fn list<'a>(&'a self, params: &'a ListParams) -> BoxFuture<'a, Result<ObjectList<K>>>;

    /// One page of the list as shared objects, decoded as `options` says; items that do
    /// not decode are reported in [`SharedList::skipped`]. The default calls
    /// [`list`](Self::list) and ignores `options`; [`ApiListWatch`] decodes as the body
    /// arrives, on worker threads.
    fn list_shared<'a>(
        &'a self,
        params: &'a ListParams,
        options: &'a DecodeOptions<K>,
    ) -> BoxFuture<'a, Result<SharedList<K>>>
    where
        K: Send,
    {
        let _ = options;
        Box::pin(async move {
            let page = self.list(params).await?;
            Ok(SharedList {
                metadata: page.metadata,
                items: page.items.into_iter().map(Arc::new).collect(),
                skipped: Vec::new(),
            })
        })
    }

    /// A watch from `resource_version`.
    fn watch<'a>(
        &'a self,
        params: &'a WatchParams,
        resource_version: &'a str,
    ) -> BoxFuture<'a, Result<WatchStream<K>>>;

    /// What is listed, for logs (`apps/v1, Resource=deployments in prod`).
    fn describe(&self) -> String;
}

/// Changes the options of every list and watch (label/field selectors, ...).
pub type TweakListOptions = Arc<dyn Fn(&mut ListParams, &mut WatchParams) + Send + Sync>;

/// How an [`ApiListWatch`] asks for objects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListWatchMode {
    /// Whole objects.
    Full,
    /// Metadata only (`PartialObjectMetadata`), for metadata informers.
    MetadataOnly,
}

/// A [`ListerWatcher`] over an [`Api`] (typed or dynamic), applying a tweak to every
/// request.
///
/// # Examples
///
/// ```no_run
/// # fn run(client: kubeclient::Client) {
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::Pod;
/// use kubeclient::cache::ApiListWatch;
///
/// let lw = ApiListWatch::new(kubeclient::Api::<Pod>::all(client))
///     .with_tweak(Arc::new(|list, watch| {
///         list.label_selector = Some("app=web".into());
///         watch.label_selector = Some("app=web".into());
///     }));
/// # let _ = lw; }
/// ```
#[doc(alias = "ListWatch", alias = "NewListWatchFromClient")]
pub struct ApiListWatch<K> {
    api: Api<K>,
    tweak: Option<TweakListOptions>,
    mode: ListWatchMode,
    strip_managed_fields: bool,
}

impl<K> ApiListWatch<K> {
    /// Lists and watches through `api`.
    #[must_use]
    pub fn new(api: Api<K>) -> Self {
        ApiListWatch {
            api,
            tweak: None,
            mode: ListWatchMode::Full,
            strip_managed_fields: false,
        }
    }

    /// Drops `metadata.managedFields` from every listed or watched object's bytes before
    /// decoding it: faster than decoding them, and the cache never holds them.
    #[must_use]
    pub fn strip_managed_fields(mut self, strip: bool) -> Self {
        self.strip_managed_fields = strip;
        self
    }

    /// With a tweak applied to every list and watch.
    #[must_use]
    pub fn with_tweak(mut self, tweak: TweakListOptions) -> Self {
        self.tweak = Some(tweak);
        self
    }

    fn tweaked(&self, list: &ListParams, watch: &WatchParams) -> (ListParams, WatchParams) {
        let (mut list, mut watch) = (list.clone(), watch.clone());
        if let Some(tweak) = &self.tweak {
            tweak(&mut list, &mut watch);
        }
        (list, watch)
    }
}

impl ApiListWatch<PartialObjectMetadata> {
    /// Metadata only, for the resource and namespace of `api` (typed or dynamic): lists
    /// `PartialObjectMetadataList`s and watches `PartialObjectMetadata`. Every object is
    /// decoded as [`PartialObjectMetadata`], so only metadata is kept even from a server
    /// that ignores `as=PartialObjectMetadata` and sends whole objects.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn run(client: kubeclient::Client) {
    /// use std::sync::Arc;
    /// use k8s_openapi::api::core::v1::Pod;
    /// use kubeclient::cache::{ApiListWatch, InformerOptions, SharedIndexInformer};
    /// use kubeclient::machinery::PartialObjectMetadata;
    ///
    /// let lw = ApiListWatch::metadata_only(kubeclient::Api::<Pod>::all(client));
    /// let informer: SharedIndexInformer<PartialObjectMetadata> =
    ///     SharedIndexInformer::new(Arc::new(lw), InformerOptions::default());
    /// # let _ = informer; }
    /// ```
    #[must_use]
    pub fn metadata_only<K>(api: Api<K>) -> Self {
        ApiListWatch {
            api: api.retyped(),
            tweak: None,
            mode: ListWatchMode::MetadataOnly,
            strip_managed_fields: false,
        }
    }
}

impl<K> ListerWatcher<K> for ApiListWatch<K>
where
    K: DeserializeOwned + Serialize + Send + Sync + 'static,
{
    fn list<'a>(&'a self, params: &'a ListParams) -> BoxFuture<'a, Result<ObjectList<K>>> {
        Box::pin(async move {
            let (params, _) = self.tweaked(params, &WatchParams::default());
            match self.mode {
                ListWatchMode::Full => self.api.list(&params).await,
                ListWatchMode::MetadataOnly => self.api.list_metadata(&params).await,
            }
        })
    }

    fn watch<'a>(
        &'a self,
        params: &'a WatchParams,
        resource_version: &'a str,
    ) -> BoxFuture<'a, Result<WatchStream<K>>> {
        Box::pin(async move {
            let (_, params) = self.tweaked(&ListParams::default(), params);
            let metadata_only = self.mode == ListWatchMode::MetadataOnly;
            self.api
                .watch_with(
                    &params,
                    resource_version,
                    metadata_only,
                    self.strip_managed_fields,
                )
                .await
        })
    }

    fn list_shared<'a>(
        &'a self,
        params: &'a ListParams,
        options: &'a DecodeOptions<K>,
    ) -> BoxFuture<'a, Result<SharedList<K>>> {
        Box::pin(async move {
            let (params, _) = self.tweaked(params, &WatchParams::default());
            let mut options = options.clone();
            options.strip_managed_fields |= self.strip_managed_fields;
            let metadata_only = self.mode == ListWatchMode::MetadataOnly;
            self.api.list_shared(&params, metadata_only, &options).await
        })
    }

    fn describe(&self) -> String {
        let resource = self.api.resource().gvr();
        match self.api.namespace() {
            Some(namespace) => format!("{resource} in {namespace}"),
            None => resource.to_string(),
        }
    }
}
