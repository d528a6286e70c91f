//! The shared state of a running server.

use std::time::Duration;

use crate::faults::Faults;
use crate::registry::Registry;
use crate::storage::Store;

/// Settings fixed at start.
#[derive(Clone, Debug)]
pub struct Config {
    /// A bearer token every request (but health and version) must carry, if set.
    pub token: Option<String>,
    /// `host:port` clients reach the server at (for `/api` discovery).
    pub server_address: String,
    /// How often watches with `allowWatchBookmarks` get a bookmark.
    pub bookmark_interval: Duration,
    /// Whether the `/_kubeclient/` fault admin paths are served.
    pub admin_enabled: bool,
}

/// Everything a request handler reads or changes.
#[derive(Debug)]
pub struct State {
    /// The objects.
    pub store: Store,
    /// The served resources.
    pub registry: Registry,
    /// Injected faults.
    pub faults: Faults,
    /// Settings.
    pub config: Config,
}
