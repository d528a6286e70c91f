//! [`Manager`]: one place that owns a program's client, shared cache, leader election,
//! metrics and health probes, and the controllers; starts them in order and shuts them
//! down gracefully (controller-runtime's `pkg/manager`).
//!
//! [`Manager::start`] runs, in controller-runtime's order:
//! 1. the `/metrics`, `/healthz` and `/readyz` server and the webhook server (bound by
//!    [`ManagerBuilder::build`]);
//! 2. the shared informers, until their caches sync (`/readyz` turns 200);
//! 3. the [`Runnable`]s that run on every replica;
//! 4. leader election (when configured), then the runnables that need it (controllers)
//!    while this replica leads.
//!
//! [`Manager::cached_client`] reads from the manager's informers (started lazily per type,
//! with field indexes) and writes to the server, as controller-runtime's default client.
//!
//! On stop, every runnable is cancelled and awaited for at most the graceful shutdown
//! timeout (default 30 s), the Lease is released (when configured), then the informers,
//! the probe server and the webhook server stop. A lost leadership, or a runnable that fails, stops the manager
//! the same way and is reported as its error.
//!
//! # Examples
//!
//! ```no_run
//! use std::sync::Arc;
//! use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
//! use kubeclient::controller::{Action, ReconcileRequest, retry_with_backoff};
//! use kubeclient::manager::Manager;
//! use kubeclient::{CancellationToken, Config};
//!
//! async fn reconcile(request: ReconcileRequest<Deployment>, _: Arc<()>) -> Result<Action, kubeclient::Error> {
//!     println!("reconcile {}", request.key);
//!     Ok(Action::done())
//! }
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let manager = Manager::builder(Config::infer().await?)
//!     .leader_election("kube-system", "deployments-controller")
//!     .probe_address("0.0.0.0:8080".parse()?)
//!     .build()
//!     .await?;
//! let controller = manager.controller::<Deployment>("deployments").owns::<ReplicaSet>().build()?;
//! manager.add(controller.into_runnable(reconcile, retry_with_backoff, Arc::new(())));
//! manager.start(CancellationToken::new()).await?;
//! # Ok(()) }
//! ```

mod builder;
mod cached_client;
mod controller_manager;
mod error;
mod runnable;

pub use builder::{DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT, ManagerBuilder};
pub use cached_client::{CachedClient, CachedClientError, CachedListOptions};
pub use controller_manager::Manager;
pub use error::ManagerError;
pub use runnable::{BoxError, Runnable};
