//! [`Api`]: the typed client (client-go's clientset) for every `k8s-openapi` type, and the
//! dynamic client for [`DynamicObject`](kubeclient_machinery::DynamicObject)s described by an
//! [`ApiResource`] (in `dynamic.rs`). `Api<Pod>` also
//! streams: [`logs`](Api::logs), [`exec`](Api::exec), [`attach`](Api::attach) and
//! [`port_forward`](Api::port_forward).

mod apply;
mod dynamic;
mod logs;
mod object_list;
mod params;
mod port_forward;
mod remote_command;

use std::fmt::Debug;
use std::marker::PhantomData;
use std::sync::Arc;

use http::Method;
use k8s_openapi::api::autoscaling::v1::Scale;
use kubeclient_machinery::gvk::ScopeNamespaced;
use kubeclient_machinery::{ApiResource, Status};
use serde::Serialize;
use serde::de::DeserializeOwned;

pub use apply::ApplyOptions;
pub use logs::{LogParams, MAX_LOG_LINE};
pub use object_list::{Deleted, ObjectList};
pub use params::{
    DeleteParams, ListParams, Patch, PatchParams, PostParams, Preconditions, WatchParams,
};
pub use port_forward::{LocalForwarder, MAX_FORWARDED_PORTS, Portforwarder};
pub use remote_command::{AttachParams, AttachedProcess, ExitStatus, TerminalSizeSender};

use crate::error::{Error, Result};
use crate::rest::watch::WatchStream;
use crate::rest::{Client, ContentType, DecodeOptions, JSON, Request, SharedList, decode};

/// What metadata-only lists ask for (client-go's metadata client, JSON only).
const METADATA_LIST_ACCEPT: &str =
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";
/// What metadata-only watches ask for.
const METADATA_ACCEPT: &str =
    "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";

/// The default page size of [`Api::list_all`] (client-go's pager uses 500).
pub const DEFAULT_PAGE_SIZE: u32 = 500;

/// Typed access to one resource, in one namespace or across all.
///
/// # Examples
///
/// ```no_run
/// # async fn run(client: kubeclient::Client) -> kubeclient::Result<()> {
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kubeclient::{Api, ListParams};
///
/// let configmaps: Api<ConfigMap> = Api::namespaced(client, "default");
/// for cm in configmaps.list(&ListParams::default().labels("app=web")).await?.items {
///     println!("{:?}", cm.metadata.name);
/// }
/// # Ok(()) }
/// ```
#[doc(
    alias = "Clientset",
    alias = "typed client",
    alias = "dynamic.Interface"
)]
pub struct Api<K> {
    client: Client,
    resource: Arc<ApiResource>,
    namespace: Option<String>,
    /// Speak protobuf: a built-in kind through a typed constructor, with
    /// [`ContentType::Protobuf`](crate::rest::ContentType::Protobuf) configured.
    protobuf: bool,
    _kind: PhantomData<fn() -> K>,
}

impl<K> Clone for Api<K> {
    fn clone(&self) -> Self {
        Api {
            client: self.client.clone(),
            resource: self.resource.clone(),
            namespace: self.namespace.clone(),
            protobuf: self.protobuf,
            _kind: PhantomData,
        }
    }
}

impl<K> Debug for Api<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Api")
            .field("resource", &self.resource.gvr())
            .field("namespace", &self.namespace)
            .finish()
    }
}

impl<K> Api<K>
where
    K: k8s_openapi::Resource,
    K::Scope: ScopeNamespaced,
{
    /// Across all namespaces (or a cluster-scoped resource).
    #[must_use]
    pub fn all(client: Client) -> Self {
        Api::typed(client, None)
    }

    /// In one namespace.
    #[must_use]
    pub fn namespaced(client: Client, namespace: &str) -> Self {
        Api::typed(client, Some(namespace.to_owned()))
    }

    /// In the configuration's default namespace.
    #[must_use]
    pub fn default_namespaced(client: Client) -> Self {
        let namespace = client.default_namespace().to_owned();
        Api::typed(client, Some(namespace))
    }

    /// A typed Api: protobuf when configured and the kind has a protobuf form.
    fn typed(client: Client, namespace: Option<String>) -> Self {
        let protobuf = client.content_type() == ContentType::Protobuf
            && kubeclient_machinery::protobuf::supports(K::API_VERSION, K::KIND);
        let mut api = Api::with_resource(client, namespace, ApiResource::of::<K>());
        api.protobuf = protobuf;
        api
    }
}

impl<K> Api<K> {
    pub(super) fn with_resource(
        client: Client,
        namespace: Option<String>,
        resource: ApiResource,
    ) -> Self {
        let namespace = namespace.filter(|_| resource.namespaced);
        Api {
            client,
            resource: Arc::new(resource),
            namespace,
            protobuf: false,
            _kind: PhantomData,
        }
    }

    /// The resource this reaches.
    #[must_use]
    pub fn resource(&self) -> &ApiResource {
        &self.resource
    }

    /// The namespace, if namespaced.
    #[must_use]
    pub fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }

    /// The client.
    #[must_use]
    pub fn client(&self) -> &Client {
        &self.client
    }

    fn path(&self, name: Option<&str>, subresource: Option<&str>) -> String {
        Request::resource_path(&self.resource, self.namespace.as_deref(), name, subresource)
    }

    fn item(&self, name: &str, subresource: Option<&str>) -> String {
        self.path(Some(name), subresource)
    }

    /// Whether this Api speaks protobuf (see [`ContentType`]).
    #[must_use]
    pub fn uses_protobuf(&self) -> bool {
        self.protobuf
    }

    /// The same resource and namespace, read as another type (JSON only: protobuf is
    /// decided per built-in type).
    pub(crate) fn retyped<T>(&self) -> Api<T> {
        Api {
            client: self.client.clone(),
            resource: self.resource.clone(),
            namespace: self.namespace.clone(),
            protobuf: false,
            _kind: PhantomData,
        }
    }

    /// A read request, asking for protobuf first when this Api speaks it.
    fn read(&self, request: Request) -> Request {
        if self.protobuf {
            request.accept(ContentType::Protobuf.accept())
        } else {
            request
        }
    }

    /// A write request with `object` as its body, in protobuf when this Api speaks it.
    fn with_body<T: Serialize>(&self, request: Request, object: &T) -> Result<Request> {
        if !self.protobuf {
            return Ok(request.body(encode(object)?, JSON));
        }
        let value = serde_json::to_value(object)
            .map_err(|err| Error::InvalidRequest(format!("the body does not serialize: {err}")))?;
        let bytes = kubeclient_machinery::protobuf::encode(&value).map_err(|err| {
            Error::InvalidRequest(format!(
                "the body has no protobuf form: {}",
                kubeclient_machinery::ErrorChain(&err)
            ))
        })?;
        Ok(self
            .read(request)
            .body(bytes, ContentType::Protobuf.body_media_type()))
    }
}

fn query_pairs<'a>(query: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    query.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>> {
    serde_json::to_vec(value)
        .map_err(|err| Error::InvalidRequest(format!("the body does not serialize: {err}")))
}

impl<K> Api<K>
where
    K: DeserializeOwned + Serialize + Send + 'static,
{
    /// Reads one object.
    ///
    /// # Errors
    ///
    /// [`Error::Api`] (404 if it does not exist), transport and decode errors.
    pub async fn get(&self, name: &str) -> Result<K> {
        self.client
            .request_json(self.read(Request::get(self.item(name, None))))
            .await
    }

    /// Reads one object, `None` if it does not exist.
    ///
    /// # Errors
    ///
    /// As [`get`](Self::get), except 404.
    pub async fn get_opt(&self, name: &str) -> Result<Option<K>> {
        match self.get(name).await {
            Ok(object) => Ok(Some(object)),
            Err(err) if err.is_not_found() => Ok(None),
            Err(err) => Err(err),
        }
    }

    /// Reads one page of a list.
    ///
    /// # Errors
    ///
    /// [`Error::Api`] (400 for bad selectors, 410 for an expired continue token ...).
    pub async fn list(&self, params: &ListParams) -> Result<ObjectList<K>> {
        let query = params.query();
        self.client
            .request_json(
                self.read(Request::get(self.path(None, None)).query(&query_pairs(&query))),
            )
            .await
    }

    /// Lists everything, page by page (client-go's pager): pages of `params.limit`
    /// (default 500), the first at `params.resource_version`, the rest by continue token.
    /// If a continue token expires (410 Expired) it falls back to one full list, as
    /// client-go does. The result's metadata is the first page's.
    ///
    /// # Errors
    ///
    /// The first failing page's error.
    pub async fn list_all(&self, params: &ListParams) -> Result<ObjectList<K>> {
        let mut page_params = params.clone();
        page_params.limit = Some(params.limit.unwrap_or(DEFAULT_PAGE_SIZE));
        let mut all = self.list(&page_params).await?;
        let mut token = all.continue_token().map(str::to_owned);
        while let Some(continue_token) = token {
            let next = ListParams {
                continue_token: Some(continue_token),
                resource_version: None,
                resource_version_match: None,
                ..page_params.clone()
            };
            match self.list(&next).await {
                Ok(page) => {
                    token = page.continue_token().map(str::to_owned);
                    all.items.extend(page.items);
                }
                Err(Error::Api(err)) if err.is_resource_expired() => {
                    let full = ListParams {
                        limit: None,
                        continue_token: None,
                        ..params.clone()
                    };
                    return self.list(&full).await;
                }
                Err(err) => return Err(err),
            }
        }
        all.metadata.continue_ = None;
        all.metadata.remaining_item_count = None;
        Ok(all)
    }

    /// Watches changes after `resource_version` (`""`/`"0"`: starting with the current
    /// state). The stream ends when the server ends the watch; ERROR events (e.g. 410)
    /// arrive as [`WatchEvent::Error`](kubeclient_machinery::WatchEvent::Error).
    ///
    /// # Errors
    ///
    /// The error of opening the watch.
    pub async fn watch(
        &self,
        params: &WatchParams,
        resource_version: &str,
    ) -> Result<WatchStream<K>> {
        let query = params.query(resource_version);
        self.client
            .watch(self.read(Request::get(self.path(None, None)).query(&query_pairs(&query))))
            .await
    }

    /// Lists metadata only (`PartialObjectMetadataList`): every object carries its
    /// `metadata` and nothing else, which is all many controllers need.
    ///
    /// # Errors
    ///
    /// As [`list`](Self::list).
    pub async fn list_metadata(&self, params: &ListParams) -> Result<ObjectList<K>> {
        let query = params.query();
        let request = Request::get(self.path(None, None))
            .query(&query_pairs(&query))
            .accept(METADATA_LIST_ACCEPT);
        self.client.request_json(request).await
    }

    /// Watches metadata only (`PartialObjectMetadata` events).
    ///
    /// # Errors
    ///
    /// As [`watch`](Self::watch).
    pub async fn watch_metadata(
        &self,
        params: &WatchParams,
        resource_version: &str,
    ) -> Result<WatchStream<K>> {
        let query = params.query(resource_version);
        let request = Request::get(self.path(None, None))
            .query(&query_pairs(&query))
            .accept(METADATA_ACCEPT);
        self.client.watch(request).await
    }

    /// Reads one page of a list as shared objects, decoding items on worker threads as the
    /// body arrives (the informers' path); items that do not decode are reported in
    /// [`SharedList::skipped`](crate::rest::SharedList) instead of failing the page. With
    /// `metadata_only`, a `PartialObjectMetadataList` (as [`list_metadata`](Self::list_metadata)).
    ///
    /// # Errors
    ///
    /// As [`list`](Self::list).
    pub async fn list_shared(
        &self,
        params: &ListParams,
        metadata_only: bool,
        options: &DecodeOptions<K>,
    ) -> Result<SharedList<K>>
    where
        K: Sync,
    {
        let query = params.query();
        let mut request =
            self.read(Request::get(self.path(None, None)).query(&query_pairs(&query)));
        if metadata_only {
            request = request.accept(METADATA_LIST_ACCEPT);
        }
        self.client.list_shared(request, options).await
    }

    /// As [`watch`](Self::watch) (or [`watch_metadata`](Self::watch_metadata) with
    /// `metadata_only`), dropping each object's `managedFields` before decoding it when
    /// `strip_managed_fields` is set.
    ///
    /// # Errors
    ///
    /// As [`watch`](Self::watch).
    pub async fn watch_with(
        &self,
        params: &WatchParams,
        resource_version: &str,
        metadata_only: bool,
        strip_managed_fields: bool,
    ) -> Result<WatchStream<K>> {
        let query = params.query(resource_version);
        let mut request =
            self.read(Request::get(self.path(None, None)).query(&query_pairs(&query)));
        if metadata_only {
            request = request.accept(METADATA_ACCEPT);
        }
        self.client
            .watch_decoded(request, strip_managed_fields)
            .await
    }

    /// Creates an object.
    ///
    /// # Errors
    ///
    /// [`Error::Api`] (409 AlreadyExists, 422 Invalid ...).
    pub async fn create(&self, params: &PostParams, object: &K) -> Result<K> {
        let query = params.query();
        let request = self.with_body(
            Request::new(Method::POST, self.path(None, None)).query(&query_pairs(&query)),
            object,
        )?;
        self.client.request_json(request).await
    }

    /// Replaces an object (409 Conflict if its resourceVersion is stale).
    ///
    /// # Errors
    ///
    /// [`Error::Api`] (404, 409 ...).
    pub async fn replace(&self, name: &str, params: &PostParams, object: &K) -> Result<K> {
        self.replace_at(name, None, params, object).await
    }

    async fn replace_at<T: Serialize, R: DeserializeOwned + 'static>(
        &self,
        name: &str,
        subresource: Option<&str>,
        params: &PostParams,
        object: &T,
    ) -> Result<R> {
        let query = params.query();
        let request = self.with_body(
            Request::new(Method::PUT, self.item(name, subresource)).query(&query_pairs(&query)),
            object,
        )?;
        self.client.request_json(request).await
    }

    /// Patches an object with any of the four patch types.
    ///
    /// # Errors
    ///
    /// [`Error::Api`] (404; 409 for apply conflicts; 415 for a strategic patch of a custom
    /// resource; 422 ...).
    pub async fn patch<P: Serialize>(
        &self,
        name: &str,
        params: &PatchParams,
        patch: &Patch<P>,
    ) -> Result<K> {
        self.patch_at(name, None, params, patch).await
    }

    async fn patch_at<P: Serialize, R: DeserializeOwned + 'static>(
        &self,
        name: &str,
        subresource: Option<&str>,
        params: &PatchParams,
        patch: &Patch<P>,
    ) -> Result<R> {
        let body = patch
            .to_json()
            .map_err(|err| Error::InvalidRequest(format!("the patch does not serialize: {err}")))?;
        let query = params.query();
        let request = self.read(
            Request::new(Method::PATCH, self.item(name, subresource))
                .query(&query_pairs(&query))
                .body(body, patch.content_type()),
        );
        self.client.request_json(request).await
    }

    /// Deletes an object: the object comes back while finalizers hold it (or for resources
    /// that return deleted objects), a success Status otherwise.
    ///
    /// # Errors
    ///
    /// [`Error::Api`] (404; 409 for failed preconditions).
    pub async fn delete(&self, name: &str, params: &DeleteParams) -> Result<Deleted<K>> {
        let body = params.body().map_err(|err| {
            Error::InvalidRequest(format!("DeleteOptions do not serialize: {err}"))
        })?;
        let request = Request::new(Method::DELETE, self.item(name, None)).body(body, JSON);
        let url = request.path.clone();
        let bytes = self.client.request_bytes(request).await?;
        decode_deleted(&url, &bytes)
    }

    /// Deletes every object matching the list selectors; returns the list of what was
    /// deleted (or a Status).
    ///
    /// # Errors
    ///
    /// [`Error::Api`].
    pub async fn delete_collection(
        &self,
        delete: &DeleteParams,
        list: &ListParams,
    ) -> Result<Deleted<ObjectList<K>>> {
        let body = delete.body().map_err(|err| {
            Error::InvalidRequest(format!("DeleteOptions do not serialize: {err}"))
        })?;
        let query = list.query();
        let request = Request::new(Method::DELETE, self.path(None, None))
            .query(&query_pairs(&query))
            .body(body, JSON);
        let url = request.path.clone();
        let bytes = self.client.request_bytes(request).await?;
        decode_deleted(&url, &bytes)
    }

    /// Reads the `status` subresource.
    ///
    /// # Errors
    ///
    /// [`Error::Api`] (404 if the resource has no status subresource).
    pub async fn get_status(&self, name: &str) -> Result<K> {
        self.client
            .request_json(self.read(Request::get(self.item(name, Some("status")))))
            .await
    }

    /// Replaces the status (only `.status` changes).
    ///
    /// # Errors
    ///
    /// [`Error::Api`].
    pub async fn replace_status(&self, name: &str, params: &PostParams, object: &K) -> Result<K> {
        self.replace_at(name, Some("status"), params, object).await
    }

    /// Patches the status.
    ///
    /// # Errors
    ///
    /// [`Error::Api`].
    pub async fn patch_status<P: Serialize>(
        &self,
        name: &str,
        params: &PatchParams,
        patch: &Patch<P>,
    ) -> Result<K> {
        self.patch_at(name, Some("status"), params, patch).await
    }

    /// Reads the `scale` subresource.
    ///
    /// # Errors
    ///
    /// [`Error::Api`] (404 if the resource cannot scale).
    pub async fn get_scale(&self, name: &str) -> Result<Scale> {
        self.client
            .request_json(self.read(Request::get(self.item(name, Some("scale")))))
            .await
    }

    /// Replaces the scale.
    ///
    /// # Errors
    ///
    /// [`Error::Api`].
    pub async fn replace_scale(
        &self,
        name: &str,
        params: &PostParams,
        scale: &Scale,
    ) -> Result<Scale> {
        self.replace_at(name, Some("scale"), params, scale).await
    }

    /// Patches the scale.
    ///
    /// # Errors
    ///
    /// [`Error::Api`].
    pub async fn patch_scale<P: Serialize>(
        &self,
        name: &str,
        params: &PatchParams,
        patch: &Patch<P>,
    ) -> Result<Scale> {
        self.patch_at(name, Some("scale"), params, patch).await
    }
}

/// A delete answer is a Status when its `kind` says so, else the object.
fn decode_deleted<T: DeserializeOwned>(url: &str, bytes: &[u8]) -> Result<Deleted<T>> {
    #[derive(serde::Deserialize)]
    struct Kind {
        #[serde(default)]
        kind: Option<String>,
    }
    let kind: Kind = decode(url, bytes)?;
    if kind.kind.as_deref() == Some("Status") {
        Ok(Deleted::Status(Box::new(decode::<Status>(url, bytes)?)))
    } else {
        Ok(Deleted::Object(decode(url, bytes)?))
    }
}
