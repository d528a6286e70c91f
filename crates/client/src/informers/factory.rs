//! [`SharedInformerFactory`] and the [`FactoryResource`] bound of its typed informers.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kubeclient_machinery::gvk::ScopeNamespaced;
use kubeclient_machinery::{
    ApiResource, DynamicObject, GroupResource, GroupVersionResource, Object, PartialObjectMetadata,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::api::Api;
use crate::cache::{
    ApiListWatch, InformerOptions, Lister, ListerWatcher, ReflectorOptions, SharedIndexInformer,
    TweakListOptions,
};
use crate::rest::Client;

use super::informer_metrics::{CountedListerWatcher, InformerMetricsProvider};

/// Which informer an entry is.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum InformerKey {
    Typed(TypeId),
    Dynamic(GroupVersionResource),
    Metadata(GroupVersionResource),
}

/// What the factory needs from an informer it did not create the type of.
trait Runnable: Send + Sync {
    fn spawn(&self, stop: CancellationToken) -> JoinHandle<()>;
    fn synced(&self) -> bool;
}

impl<K: Object + Send + Sync + 'static> Runnable for SharedIndexInformer<K> {
    fn spawn(&self, stop: CancellationToken) -> JoinHandle<()> {
        let informer = self.clone();
        tokio::spawn(async move { informer.run(stop).await })
    }

    fn synced(&self) -> bool {
        self.has_synced()
    }
}

struct Entry {
    informer: Box<dyn Any + Send + Sync>,
    runnable: Arc<dyn Runnable>,
    started: bool,
}

/// The factory's informers and the tasks running them, shared with the controllers built
/// on the factory so that a controller's `run` can start what nobody started.
///
/// Invariants: an entry is `started` iff its task was pushed to `tasks` (or the factory
/// had been shut down, after which nothing starts); `stop` is the parent of every task's
/// token.
#[derive(Default)]
struct Informers {
    /// Guards the informer of each key and whether it runs.
    entries: Mutex<HashMap<InformerKey, Entry>>,
    /// Guards the tasks of started informers, awaited by `shutdown`.
    tasks: Mutex<Vec<JoinHandle<()>>>,
    stop: CancellationToken,
}

impl Informers {
    fn entries(&self) -> std::sync::MutexGuard<'_, HashMap<InformerKey, Entry>> {
        crate::sync::lock(&self.entries)
    }

    fn start(&self) {
        if self.stop.is_cancelled() {
            return;
        }
        let mut spawned = Vec::new();
        for entry in self.entries().values_mut().filter(|e| !e.started) {
            entry.started = true;
            spawned.push(entry.runnable.spawn(self.stop.child_token()));
        }
        crate::sync::lock(&self.tasks).extend(spawned);
    }

    fn has_synced(&self) -> bool {
        self.entries()
            .values()
            .filter(|e| e.started)
            .all(|e| e.runnable.synced())
    }
}

/// A handle on a factory's informers that outlives borrows of the factory: what a
/// [`Controller`](crate::controller::Controller) keeps to start the informers it needs.
#[derive(Clone)]
pub(crate) struct FactoryHandle(Arc<Informers>);

impl FactoryHandle {
    /// [`SharedInformerFactory::start`].
    pub(crate) fn start(&self) {
        self.0.start();
    }

    /// A token cancelled when the factory shuts down.
    pub(crate) fn stopped(&self) -> CancellationToken {
        self.0.stop.clone()
    }
}

/// A `k8s-openapi` type (or a typed custom resource) the factory makes informers and
/// listers for. Implemented for every type with the bounds below; never implement it by
/// hand.
pub trait FactoryResource:
    k8s_openapi::Resource<Scope: ScopeNamespaced>
    + Object
    + Clone
    + DeserializeOwned
    + Serialize
    + Send
    + Sync
    + 'static
{
}

impl<K> FactoryResource for K where
    K: k8s_openapi::Resource<Scope: ScopeNamespaced>
        + Object
        + Clone
        + DeserializeOwned
        + Serialize
        + Send
        + Sync
        + 'static
{
}

/// Shares one informer per resource (and per representation: typed, dynamic,
/// metadata-only) across a program. Namespace, list tweaks, resync and the managedFields
/// transform are factory-wide.
pub struct SharedInformerFactory {
    client: Client,
    namespace: Option<String>,
    tweak: Option<TweakListOptions>,
    default_resync: Duration,
    custom_resync: HashMap<String, Duration>,
    strip_managed_fields: bool,
    compact_cache: bool,
    use_watch_list: bool,
    metrics: Option<Arc<dyn InformerMetricsProvider>>,
    informers: Arc<Informers>,
}

impl SharedInformerFactory {
    /// A factory watching all namespaces, without resync.
    #[must_use]
    pub fn new(client: Client) -> Self {
        SharedInformerFactory {
            client,
            namespace: None,
            tweak: None,
            default_resync: Duration::ZERO,
            custom_resync: HashMap::new(),
            strip_managed_fields: false,
            compact_cache: false,
            use_watch_list: true,
            metrics: None,
            informers: Arc::default(),
        }
    }

    /// Only one namespace.
    #[must_use]
    pub fn namespace(mut self, namespace: &str) -> Self {
        self.namespace = Some(namespace.to_owned());
        self
    }

    /// Tweaks every list and watch (selectors).
    #[must_use]
    pub fn tweak_list_options(mut self, tweak: TweakListOptions) -> Self {
        self.tweak = Some(tweak);
        self
    }

    /// The default resync period of informers (zero: none).
    #[must_use]
    pub fn resync(mut self, period: Duration) -> Self {
        self.default_resync = period;
        self
    }

    /// A resync period for one resource (by plural name, e.g. `pods`).
    #[must_use]
    pub fn resync_for(mut self, plural: &str, period: Duration) -> Self {
        self.custom_resync.insert(plural.to_owned(), period);
        self
    }

    /// Drop `metadata.managedFields` before caching (less memory; controllers rarely read it).
    #[must_use]
    pub fn strip_managed_fields(mut self, strip: bool) -> Self {
        self.strip_managed_fields = strip;
        self
    }

    /// Hold every informer's cache compact (default false): each object compressed with a
    /// dictionary trained on its type, a tenth of a decoded object's memory or less,
    /// decoded on every read (lister `get`/`list`, indexes). Handlers still receive decoded
    /// objects; an update's old object is decoded on the handler's task, not on the watch
    /// path. Choose it for large caches read rarely (see docs/BENCHMARKS.md, "Summary").
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn run(client: kubeclient::Client) {
    /// use k8s_openapi::api::core::v1::Pod;
    /// use kubeclient::informers::SharedInformerFactory;
    ///
    /// let factory = SharedInformerFactory::new(client)
    ///     .strip_managed_fields(true)
    ///     .compact_cache(true);
    /// let pods = factory.lister::<Pod>();
    /// factory.start();
    /// factory.wait_for_cache_sync().await;
    /// println!("{} pods", pods.list(&Default::default()).len());
    /// # }
    /// ```
    #[must_use]
    pub fn compact_cache(mut self, compact: bool) -> Self {
        self.compact_cache = compact;
        self
    }

    /// Whether reflectors try the streaming watch-list before LIST (default true).
    #[must_use]
    pub fn watch_list(mut self, enabled: bool) -> Self {
        self.use_watch_list = enabled;
        self
    }

    /// Reports every informer's list and watch counts and last synced resourceVersion
    /// (e.g. to a [`Metrics`](crate::metrics::Metrics) registry).
    #[must_use]
    pub fn metrics_provider(mut self, provider: Arc<dyn InformerMetricsProvider>) -> Self {
        self.metrics = Some(provider);
        self
    }

    fn entries(&self) -> std::sync::MutexGuard<'_, HashMap<InformerKey, Entry>> {
        self.informers.entries()
    }

    /// A handle that starts this factory's informers from wherever it is kept.
    pub(crate) fn handle(&self) -> FactoryHandle {
        FactoryHandle(self.informers.clone())
    }

    fn get_or_create<K>(
        &self,
        key: InformerKey,
        resource: &ApiResource,
        make_lw: impl FnOnce() -> ApiListWatch<K>,
    ) -> SharedIndexInformer<K>
    where
        K: Object + Clone + DeserializeOwned + Serialize + Send + Sync + 'static,
    {
        let mut entries = self.entries();
        if let Some(existing) = entries
            .get(&key)
            .and_then(|e| e.informer.downcast_ref::<SharedIndexInformer<K>>())
        {
            return existing.clone();
        }
        let mut lister_watcher = make_lw().strip_managed_fields(self.strip_managed_fields);
        if let Some(tweak) = &self.tweak {
            lister_watcher = lister_watcher.with_tweak(tweak.clone());
        }
        let mut lister_watcher: Arc<dyn ListerWatcher<K>> = Arc::new(lister_watcher);
        let name = resource.gvr().to_string();
        if let Some(metrics) = &self.metrics {
            lister_watcher = Arc::new(CountedListerWatcher {
                inner: lister_watcher,
                lists: metrics.new_lists_metric(&name),
                watches: metrics.new_watches_metric(&name),
            });
        }
        let mut options = InformerOptions {
            name: name.clone(),
            resync_period: self
                .custom_resync
                .get(&resource.plural)
                .copied()
                .unwrap_or(self.default_resync),
            reflector: ReflectorOptions {
                use_watch_list: self.use_watch_list,
                ..ReflectorOptions::default()
            },
            ..InformerOptions::default()
        };
        if self.compact_cache {
            options = options.compact_cache();
        }
        let informer = SharedIndexInformer::new(lister_watcher, options);
        if let Some(metrics) = &self.metrics {
            let reader = informer.clone();
            metrics.register_last_resource_version(
                &name,
                Arc::new(move || reader.last_sync_resource_version()),
            );
        }
        entries.insert(
            key,
            Entry {
                informer: Box::new(informer.clone()),
                runnable: Arc::new(informer.clone()),
                started: false,
            },
        );
        informer
    }

    /// Whether the factory has made the typed informer of `K` (without making it).
    #[must_use]
    pub fn has_informer<K: FactoryResource>(&self) -> bool {
        self.entries()
            .contains_key(&InformerKey::Typed(TypeId::of::<K>()))
    }

    /// The shared informer of a `k8s-openapi` type (the same instance on every call).
    pub fn informer<K: FactoryResource>(&self) -> SharedIndexInformer<K> {
        let resource = ApiResource::of::<K>();
        self.get_or_create(InformerKey::Typed(TypeId::of::<K>()), &resource, || {
            let api = match &self.namespace {
                Some(namespace) => Api::<K>::namespaced(self.client.clone(), namespace),
                None => Api::<K>::all(self.client.clone()),
            };
            ApiListWatch::new(api)
        })
    }

    /// A lister over the shared informer of a type.
    pub fn lister<K: FactoryResource>(&self) -> Lister<K> {
        let resource = ApiResource::of::<K>();
        Lister::new(
            self.informer::<K>().indexer(),
            GroupResource::new(&resource.group, &resource.singular),
        )
    }

    fn dynamic_api(&self, resource: &ApiResource) -> Api<DynamicObject> {
        match &self.namespace {
            Some(namespace) => Api::namespaced_with(self.client.clone(), namespace, resource),
            None => Api::all_with(self.client.clone(), resource),
        }
    }

    /// The shared dynamic informer of a resource (client-go's `dynamicinformer`).
    pub fn dynamic_informer(&self, resource: &ApiResource) -> SharedIndexInformer<DynamicObject> {
        self.get_or_create(InformerKey::Dynamic(resource.gvr()), resource, || {
            ApiListWatch::new(self.dynamic_api(resource))
        })
    }

    /// The shared metadata-only informer of a resource (client-go's `metadatainformer`):
    /// it caches [`PartialObjectMetadata`], only metadata, even when the server ignores
    /// `as=PartialObjectMetadata` and sends whole objects.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn run(client: kubeclient::Client) {
    /// use k8s_openapi::api::core::v1::Pod;
    /// use kubeclient::cache::Store;
    /// use kubeclient::informers::SharedInformerFactory;
    /// use kubeclient::machinery::{ApiResource, Object};
    ///
    /// let factory = SharedInformerFactory::new(client);
    /// let pods = factory.metadata_informer(&ApiResource::of::<Pod>());
    /// factory.start();
    /// factory.wait_for_cache_sync().await;
    /// for pod in pods.indexer().list() {
    ///     println!("{} {:?}", pod.name(), pod.labels());
    /// }
    /// # }
    /// ```
    pub fn metadata_informer(
        &self,
        resource: &ApiResource,
    ) -> SharedIndexInformer<PartialObjectMetadata> {
        self.get_or_create(InformerKey::Metadata(resource.gvr()), resource, || {
            ApiListWatch::metadata_only(self.dynamic_api(resource))
        })
    }

    /// Starts every informer not started yet (non-blocking). Informers created later need
    /// another call. Does nothing after [`shutdown`](Self::shutdown).
    pub fn start(&self) {
        self.informers.start();
    }

    /// Whether every started informer has synced (what a readiness probe asks).
    #[must_use]
    pub fn has_synced(&self) -> bool {
        self.informers.has_synced()
    }

    /// Waits until every started informer has synced; `false` if the factory shuts down first.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe.
    pub async fn wait_for_cache_sync(&self) -> bool {
        loop {
            if self.informers.has_synced() {
                return true;
            }
            if self.informers.stop.is_cancelled() {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Stops every informer and waits for them to finish. Later `start` calls do nothing.
    pub async fn shutdown(&self) {
        self.informers.stop.cancel();
        let tasks: Vec<JoinHandle<()>> =
            std::mem::take(&mut *crate::sync::lock(&self.informers.tasks));
        for task in tasks {
            let _ = task.await;
        }
    }
}
