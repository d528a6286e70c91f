//! An embedded, in-memory, Kubernetes-compatible API server.
//!
//! It starts in milliseconds, in-process or as `kubeclient serve`, and behaves like the
//! real one where clients can tell: discovery, resourceVersion semantics, watches with
//! bookmarks and 410s, pagination, selectors, the four patch types, finalizers, status
//! subresources, Status errors, Tables for `kubectl get`. `kubectl`, the Python client and
//! kube-rs are tested against it.
//!
//! Start here: [`ApiServer`]. Storage is in [`storage`], test faults in [`faults`], helpers
//! for tests that drive real clients in [`testing`]. The resource table and discovery
//! (`registry`), request handling (`endpoints`), the Pod streams (`streams`), patches (`patch`) and shared state are
//! private: the server is used over HTTP.
//!
//! # Example
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let server = kubeclient_apiserver::ApiServer::start().await?;
//! assert!(server.url().starts_with("http://127.0.0.1:"));
//! assert!(server.kubeconfig().contains(server.url()));
//! server.shutdown().await;
//! # Ok(()) }
//! ```

mod authentication;
mod authorization;
mod bootstrap;
mod cluster;
mod container_runtime;
mod controllers;
mod cron_schedule;
mod endpoints;
pub mod faults;
mod object;
mod patch;
pub mod pod_logs;
mod port_forward_allowlist;
mod quantity;
mod query;
mod registry;
mod response;
mod server;
pub mod sessions;
mod state;
pub mod storage;
mod streams;
mod sync;
pub mod testing;
mod tls;
mod webhook_client;
mod yaml_body;

#[cfg(test)]
mod fuzz_tests;

pub use authentication::DEFAULT_SERVICE_ACCOUNT_ISSUER;
pub use authorization::{AuthorizationMode, UnknownAuthorizationMode};
pub use cluster::{CLOSED_PORTS_ANNOTATION, MAX_NODES, SimulatedCluster, Stages, StagesError};
pub use faults::{Fault, Faults, MAX_FAULT_COUNT, RequestCounts};
pub use pod_logs::PodLogs;
pub use registry::apiextensions::local_validation::validate_custom_resource;
pub use server::{ApiServer, ApiServerBuilder, DEFAULT_KUBERNETES_MINOR_VERSION, StartError};
pub use state::Limits;
pub use storage::WatcherLimits;
pub use tls::{CertificatePair, TlsError};
