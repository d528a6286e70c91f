//! An embedded, in-memory, Kubernetes-compatible API server.
//!
//! It starts in milliseconds, in-process or as `kubeclient serve`, and behaves like the
//! real one where clients can tell: discovery, resourceVersion semantics, watches with
//! bookmarks and 410s, pagination, selectors, the four patch types, finalizers, status
//! subresources, Status errors, Tables for `kubectl get`. `kubectl`, the Python client and
//! kube-rs are tested against it.
//!
//! Start here: [`ApiServer`]. Storage is in [`storage`], the resource table and discovery
//! in [`registry`], request handling in [`handlers`], test faults in [`faults`].
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

pub mod faults;
pub mod handlers;
pub mod patch;
pub mod pod_logs;
pub mod registry;
mod server;
pub mod sessions;
pub mod state;
pub mod storage;
pub mod testing;
mod tls;

pub use faults::{Fault, Faults, MAX_FAULT_COUNT};
pub use pod_logs::PodLogs;
pub use server::{ApiServer, ApiServerBuilder, StartError};
pub use state::Limits;
pub use storage::WatcherLimits;
pub use tls::{CertificatePair, TlsError};
