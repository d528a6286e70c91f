//! A fresh embedded server per test and a client configured from its kubeconfig.

use kubeclient::config::{Kubeconfig, KubeconfigOptions};
use kubeclient::rest::ContentType;
use kubeclient::{Client, Config};
use kubeclient_apiserver::{ApiServer, ApiServerBuilder};

pub(crate) struct Fixture {
    pub(crate) server: ApiServer,
    pub(crate) client: Client,
}

pub(crate) async fn start() -> Fixture {
    start_with(ApiServer::builder()).await
}

pub(crate) async fn start_with(builder: ApiServerBuilder) -> Fixture {
    start_with_as(builder, ContentType::Json).await
}

/// A fresh server and a client speaking `content` for built-in kinds.
pub(crate) async fn start_as(content: ContentType) -> Fixture {
    start_with_as(ApiServer::builder(), content).await
}

/// Another client of `server`, speaking `content`.
pub(crate) async fn start_with_as_client(server: &ApiServer, content: ContentType) -> Client {
    let mut config = config_of(server);
    config.content_type = content;
    Client::new(config).await.expect("a client")
}

async fn start_with_as(builder: ApiServerBuilder, content: ContentType) -> Fixture {
    let server = builder.start().await.expect("the embedded server starts");
    let mut config = config_of(&server);
    config.content_type = content;
    let client = Client::new(config).await.expect("a client");
    Fixture { server, client }
}

/// The configuration the server's own kubeconfig describes.
pub(crate) fn config_of(server: &ApiServer) -> Config {
    let kubeconfig =
        Kubeconfig::from_yaml(&server.kubeconfig()).expect("the server writes a valid kubeconfig");
    Config::from_kubeconfig(&kubeconfig, &KubeconfigOptions::default()).expect("a usable context")
}

/// A fresh scratch directory.
pub(crate) fn scratch(label: &str) -> std::path::PathBuf {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "kubeclient-client-it-{}-{label}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}

/// How long the informer tests wait for a condition.
pub(crate) const WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// Polls `condition` until it holds; fails the test after [`WAIT`].
pub(crate) async fn until(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while !condition() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting: {what}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}

/// `key -> resourceVersion` of the server's ConfigMaps in `default`.
pub(crate) async fn server_state(client: &Client) -> std::collections::BTreeMap<String, String> {
    server_state_in(client, "default").await
}

/// `key -> resourceVersion` of the server's ConfigMaps in `namespace`.
pub(crate) async fn server_state_in(
    client: &Client,
    namespace: &str,
) -> std::collections::BTreeMap<String, String> {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kubeclient::machinery::{Object, meta_namespace_key};
    kubeclient::Api::<ConfigMap>::namespaced(client.clone(), namespace)
        .list_all(&kubeclient::ListParams::default())
        .await
        .map(|list| {
            list.items
                .iter()
                .map(|cm| (meta_namespace_key(cm), cm.resource_version().to_owned()))
                .collect()
        })
        .unwrap_or_default()
}

/// `key -> resourceVersion` of an informer's cache.
pub(crate) fn cache_state(
    informer: &kubeclient::cache::SharedIndexInformer<k8s_openapi::api::core::v1::ConfigMap>,
) -> std::collections::BTreeMap<String, String> {
    use kubeclient::cache::Store;
    use kubeclient::machinery::{Object, meta_namespace_key};
    informer
        .indexer()
        .list()
        .iter()
        .map(|cm| {
            (
                meta_namespace_key(cm.as_ref()),
                cm.resource_version().to_owned(),
            )
        })
        .collect()
}

/// Writes a ConfigMap straight into the server's storage, bypassing validation (to plant
/// objects a real server would refuse, or to set up many objects fast).
pub(crate) fn store_write(server: &ApiServer, name: &str, object: serde_json::Value) {
    use kubeclient::machinery::GroupResource;
    use kubeclient_apiserver::storage::Write;
    let resource = GroupResource::new("", "configmaps");
    let key = format!("default/{name}");
    let exists = server.store().get(&resource, &key).is_some();
    server
        .store()
        .write(&resource, &key, |_| {
            Ok::<_, ()>(if exists {
                Write::Update(object)
            } else {
                Write::Create(object)
            })
        })
        .expect("the storage takes the write");
}

/// Inserts `count` ConfigMaps `bulk-00000 ...` straight into the server's storage.
pub(crate) fn bulk_create(server: &ApiServer, count: usize) {
    for i in 0..count {
        let name = format!("bulk-{i:05}");
        let object = serde_json::json!({"kind": "ConfigMap", "apiVersion": "v1",
            "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{i}")}, "data": {"i": i.to_string()}});
        store_write(server, &name, object);
    }
}

/// Ends every watch and compacts history: the re-watch gets 410 and the reflector relists
/// at its last resourceVersion.
pub(crate) fn force_relist(server: &ApiServer) {
    server
        .faults()
        .set_delay(std::time::Duration::from_millis(300));
    server.drop_watches();
    server.compact();
    server.faults().set_delay(std::time::Duration::ZERO);
}

/// Informer options named `configmaps` that LIST then WATCH (no watch-list), so tests can
/// fault the watch and relist precisely.
pub(crate) fn list_then_watch_options<K: kubeclient::machinery::Object>()
-> kubeclient::cache::InformerOptions<K> {
    kubeclient::cache::InformerOptions {
        name: "configmaps".to_owned(),
        reflector: kubeclient::cache::ReflectorOptions {
            use_watch_list: false,
            ..kubeclient::cache::ReflectorOptions::default()
        },
        ..kubeclient::cache::InformerOptions::default()
    }
}

/// This crate's directory as cargo tells the running test: a path baked in at build time
/// goes stale when one build directory serves several checkouts.
pub(crate) fn manifest_dir() -> std::path::PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR").map_or_else(
        || env!("CARGO_MANIFEST_DIR").into(),
        std::path::PathBuf::from,
    )
}
