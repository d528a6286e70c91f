//! A fresh embedded server per test and a client configured from its kubeconfig.

use kubeclient::config::{Kubeconfig, KubeconfigOptions};
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
    let server = builder.start().await.expect("the embedded server starts");
    let config = config_of(&server);
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
