//! [`InformerMetricsProvider`]: what a factory's informers report (client-go's reflector
//! metrics: `reflector_lists_total`, `reflector_watches_total`,
//! `reflector_last_resource_version`), and the lister-watcher wrapper that counts.

use std::sync::Arc;

use crate::api::{ListParams, ObjectList, WatchParams};
use crate::cache::{BoxFuture, ListerWatcher};
use crate::error::Result;
use crate::rest::watch::WatchStream;
use crate::rest::{DecodeOptions, SharedList};
use crate::workqueue::CounterMetric;

/// Creates the metrics of one informer, named by its resource (`apps/v1, Resource=deployments`).
/// [`Metrics`](crate::metrics::Metrics) implements it.
///
/// # Examples
///
/// ```no_run
/// use std::sync::Arc;
/// use kubeclient::informers::SharedInformerFactory;
/// use kubeclient::metrics::Metrics;
/// # fn run(client: kubeclient::Client) {
/// let metrics = Arc::new(Metrics::new());
/// let factory = SharedInformerFactory::new(client).metrics_provider(metrics.clone());
/// # drop(factory);
/// # }
/// ```
pub trait InformerMetricsProvider: Send + Sync {
    /// Counts list requests (one per page).
    fn new_lists_metric(&self, name: &str) -> Arc<dyn CounterMetric>;
    /// Counts watch requests (watch-lists included).
    fn new_watches_metric(&self, name: &str) -> Arc<dyn CounterMetric>;
    /// Registers a reader of the informer's last synced resourceVersion, read on each
    /// scrape.
    fn register_last_resource_version(
        &self,
        name: &str,
        read: Arc<dyn Fn() -> String + Send + Sync>,
    );
}

/// Counts the lists and watches of the lister-watcher it wraps.
pub(super) struct CountedListerWatcher<K> {
    pub(super) inner: Arc<dyn ListerWatcher<K>>,
    pub(super) lists: Arc<dyn CounterMetric>,
    pub(super) watches: Arc<dyn CounterMetric>,
}

impl<K: Send + 'static> ListerWatcher<K> for CountedListerWatcher<K> {
    fn list<'a>(&'a self, params: &'a ListParams) -> BoxFuture<'a, Result<ObjectList<K>>> {
        self.lists.inc();
        self.inner.list(params)
    }

    fn list_shared<'a>(
        &'a self,
        params: &'a ListParams,
        options: &'a DecodeOptions<K>,
    ) -> BoxFuture<'a, Result<SharedList<K>>>
    where
        K: Send,
    {
        self.lists.inc();
        self.inner.list_shared(params, options)
    }

    fn watch<'a>(
        &'a self,
        params: &'a WatchParams,
        resource_version: &'a str,
    ) -> BoxFuture<'a, Result<WatchStream<K>>> {
        self.watches.inc();
        self.inner.watch(params, resource_version)
    }

    fn describe(&self) -> String {
        self.inner.describe()
    }
}
