//! The shared state of a running server.

use std::sync::Arc;
use std::time::Duration;

use crate::authentication::TokenRegistry;
use crate::faults::Faults;
use crate::registry::Registry;
use crate::registry::admission::WebhookPolicy;
use crate::registry::store::{GenericStore, WriteHook};
use crate::sessions::Sessions;
use crate::storage::{Store, WatcherLimits};

/// The server's resource limits, each with kube-apiserver's value where it has one. Set
/// them through [`ApiServerBuilder`](crate::ApiServerBuilder) (`kubeclient serve` flags).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// The largest request body, for every verb and content type (patches included, as
    /// upstream). Default 3 MiB, kube-apiserver's `MaxRequestBodyBytes`. Larger bodies get
    /// 413, and a request announcing one in `Content-Length` gets it before its body is
    /// read (so `Expect: 100-continue` is answered 413, not 100).
    pub max_request_body_bytes: usize,
    /// The largest encoded object a write may store, managedFields included (a patch can
    /// grow an object past the body limit, and the managedFields of a map with many keys
    /// are about as large as the map). Default 8 MiB.
    pub max_object_bytes: usize,
    /// How long a client may take to send a request's headers, and to finish the TLS
    /// handshake; also how long an idle keep-alive connection stays open. Default 32 s
    /// (kube-apiserver's `ReadHeaderTimeout`).
    pub header_read_timeout: Duration,
    /// How far a watcher may fall behind before its watch is ended.
    pub watcher: WatcherLimits,
    /// The most encoded bytes of objects kept in one resource's change history.
    /// Default 64 MiB (besides the count window); decoded objects take several times more.
    pub history_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_request_body_bytes: 3 * 1024 * 1024,
            max_object_bytes: 8 * 1024 * 1024,
            header_read_timeout: Duration::from_secs(32),
            watcher: WatcherLimits::default(),
            history_bytes: Store::DEFAULT_HISTORY_BYTES,
        }
    }
}

/// Settings fixed at start.
#[derive(Clone, Debug)]
pub(crate) struct Config {
    /// A bearer token every request (but health and version) must carry, if set.
    pub token: Option<String>,
    /// `host:port` clients reach the server at (for `/api` discovery).
    pub server_address: String,
    /// How often watches with `allowWatchBookmarks` get a bookmark.
    pub bookmark_interval: Duration,
    /// The minor version `/version` reports (`1.<minor>`).
    pub kubernetes_minor_version: u32,
    /// Whether the `/_kubeclient/` fault admin paths are served.
    pub admin_enabled: bool,
    /// Resource limits.
    pub limits: Limits,
    /// The `iss` of the ServiceAccount tokens the server issues
    /// (`--service-account-issuer`).
    pub service_account_issuer: String,
    /// The audiences the API accepts ServiceAccount tokens for, and gives TokenRequests
    /// that name none (`--api-audiences`; default: the issuer).
    pub api_audiences: Vec<String>,
    /// Who may do what (`--authorization-mode`).
    pub authorization_mode: crate::authorization::AuthorizationMode,
    /// How admission webhooks may be called.
    pub webhooks: WebhookPolicy,
}

/// Everything a request handler reads or changes.
pub(crate) struct State {
    /// The objects (in memory, or the watch cache of a backend).
    pub store: Arc<Store>,
    /// The served resources.
    pub registry: Registry,
    /// Injected faults.
    pub faults: Faults,
    /// Settings.
    pub config: Config,
    /// Pod logs and the streaming sessions' shutdown signal.
    pub sessions: Sessions,
    /// Told of every committed write (the server's controllers, woken by writes).
    pub write_hook: Arc<dyn WriteHook>,
    /// The ServiceAccount tokens issued by `TokenRequest`.
    pub tokens: TokenRegistry,
}

impl std::fmt::Debug for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("State")
            .field("store", &self.store)
            .field("registry", &self.registry)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl State {
    /// The generic store every write goes through, over this server's storage,
    /// resources, object size limit and write hook.
    pub(crate) fn generic_store(&self) -> GenericStore<'_> {
        GenericStore {
            storage: &self.store,
            resources: &self.registry,
            max_object_bytes: self.config.limits.max_object_bytes,
            hook: &*self.write_hook,
            webhooks: self.config.webhooks,
        }
    }
}
