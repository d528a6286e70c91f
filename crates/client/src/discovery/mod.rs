//! Discovery (client-go's `discovery` package): the server's version, API groups and
//! resources, cached, and a REST mapper from kinds and names to resources.
//!
//! Aggregated discovery (`apidiscovery.k8s.io/v2`) is asked for first and used only when
//! the response's Content-Type says it is that (never by what was asked for); otherwise
//! the legacy documents are read.

mod aggregated;
mod discovery_client;
mod rest_mapper;

use kubeclient_machinery::ApiResource;

pub use discovery_client::Discovery;
pub use rest_mapper::RestMapper;

/// The Accept header asking for aggregated discovery with a legacy fallback.
const AGGREGATED_ACCEPT: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";

/// One API group: its versions (preferred first) and their resources.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ApiGroup {
    /// The group name; empty for the core group.
    pub name: String,
    /// Versions in order of preference.
    pub versions: Vec<String>,
    /// The preferred version.
    pub preferred_version: String,
    /// Resources per version (main resources only, no subresources).
    pub resources: Vec<ApiResource>,
}
