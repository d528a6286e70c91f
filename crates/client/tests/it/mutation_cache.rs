//! The mutation cache over a running informer: a controller's write is read back at once,
//! before the informer has seen it, and the overlay disappears once the informer catches up.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::ConfigMap;
use kubeclient::cache::{
    ApiListWatch, BoxFuture, KnownObjects, ListerWatcher, MutationCache, MutationCacheOptions,
    SharedIndexInformer,
};
use kubeclient::machinery::Object;
use kubeclient::rest::watch::WatchStream;
use kubeclient::{Api, ListParams, ObjectList, Patch, PatchParams, PostParams, WatchParams};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::support::{WAIT, list_then_watch_options, start, until};

/// Lists at once but holds every watch until the gate opens, so the test decides when
/// the informer may catch up.
struct GatedWatch {
    inner: ApiListWatch<ConfigMap>,
    gate: tokio::sync::watch::Receiver<bool>,
}

impl ListerWatcher<ConfigMap> for GatedWatch {
    fn list<'a>(
        &'a self,
        params: &'a ListParams,
    ) -> BoxFuture<'a, kubeclient::Result<ObjectList<ConfigMap>>> {
        self.inner.list(params)
    }

    fn watch<'a>(
        &'a self,
        params: &'a WatchParams,
        rv: &'a str,
    ) -> BoxFuture<'a, kubeclient::Result<WatchStream<ConfigMap>>> {
        let mut gate = self.gate.clone();
        Box::pin(async move {
            // A closed gate sender means the test ended; let the watch proceed.
            let _ = gate.wait_for(|open| *open).await;
            self.inner.watch(params, rv).await
        })
    }

    fn describe(&self) -> String {
        self.inner.describe()
    }
}

#[tokio::test]
async fn a_write_is_read_back_before_the_informer_sees_it_and_the_overlay_goes_once_it_does() {
    let fixture = start().await;
    let api = Api::<ConfigMap>::namespaced(fixture.client.clone(), "default");
    let mut cm = ConfigMap::default();
    cm.meta_mut().name = Some("settings".into());
    cm.data = Some(BTreeMap::from([("mode".to_owned(), "old".to_owned())]));
    let created = api.create(&PostParams::default(), &cm).await.unwrap();

    let (open, gate) = tokio::sync::watch::channel(false);
    let lister_watcher = GatedWatch {
        inner: ApiListWatch::new(api.clone()),
        gate,
    };
    let informer = SharedIndexInformer::new(Arc::new(lister_watcher), list_then_watch_options());
    let stop = CancellationToken::new();
    let task = tokio::spawn({
        let (informer, stop) = (informer.clone(), stop.clone());
        async move { informer.run(stop).await }
    });
    assert!(informer.wait_for_cache_sync(&stop).await);

    let indexer = informer.indexer();
    let mutations = MutationCache::new(
        indexer.clone(),
        MutationCacheOptions::default().indexer(indexer.clone()),
    );
    let patch = json!({"data": {"mode": "new"}});
    let updated = api
        .patch("settings", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    assert_ne!(updated.resource_version(), created.resource_version());
    mutations.mutation(Arc::new(updated.clone()));

    // The informer is held before its watch: its cache still has the old version.
    let cached = indexer.get_by_key("default/settings").unwrap().unwrap();
    assert_eq!(cached.resource_version(), created.resource_version());
    let read = mutations.get_by_key("default/settings").unwrap().unwrap();
    assert_eq!(read.resource_version(), updated.resource_version());
    assert_eq!(
        read.data
            .as_ref()
            .and_then(|d| d.get("mode"))
            .map(String::as_str),
        Some("new")
    );
    let by_namespace = mutations.by_index("namespace", "default").unwrap();
    assert_eq!(by_namespace.len(), 1);
    assert_eq!(
        by_namespace[0].resource_version(),
        updated.resource_version()
    );
    assert_eq!(mutations.len(), 1);

    open.send_replace(true);
    let want = updated.resource_version().to_owned();
    until("the informer sees the update", || {
        indexer
            .get_by_key("default/settings")
            .ok()
            .flatten()
            .is_some_and(|obj| obj.resource_version() == want)
    })
    .await;
    let read = mutations.get_by_key("default/settings").unwrap().unwrap();
    assert_eq!(read.resource_version(), want);
    assert!(
        mutations.is_empty(),
        "the informer caught up: the overlay is gone"
    );

    stop.cancel();
    tokio::time::timeout(WAIT, task).await.unwrap().unwrap();
}
