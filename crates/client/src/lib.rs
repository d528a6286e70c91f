//! kubeclient: client-go's architecture in Rust.
//!
//! Start here:
//! - [`Config`] and [`config`]: kubeconfig files, contexts, in-cluster service accounts,
//!   tokens, client certificates, exec plugins (client-go's `clientcmd`).
//! - [`Client`] and [`rest`]: the HTTP client with TLS, HTTP/2, rate limiting, retries and
//!   Status errors (client-go's `rest`).
//! - [`Api`]: the typed client for every `k8s-openapi` type and, with an
//!   [`ApiResource`](machinery::ApiResource), for [`DynamicObject`](machinery::DynamicObject)s
//!   (client-go's clientset and dynamic client).
//! - [`discovery`]: the server's groups and resources, and a REST mapper.
//!
//! - [`cache`]: Store, Indexer, DeltaFIFO, RealFIFO, Reflector, SharedIndexInformer, Lister.
//! - [`informers`]: the SharedInformerFactory (typed, dynamic and metadata-only informers).
//! - [`workqueue`]: rate-limited work queues for controllers.
//!
//! # Example
//!
//! ```no_run
//! use futures_util::TryStreamExt;
//! use k8s_openapi::api::core::v1::Pod;
//! use kubeclient::{Api, Client, ListParams, WatchParams};
//!
//! # async fn run() -> kubeclient::Result<()> {
//! let client = Client::try_default().await?;
//! let pods: Api<Pod> = Api::default_namespaced(client);
//! let list = pods.list(&ListParams::default()).await?;
//! let mut events = pods.watch(&WatchParams::default(), &list.metadata.resource_version.unwrap_or_default()).await?;
//! while let Some(event) = events.try_next().await? {
//!     println!("{} {:?}", event.type_name(), event.object().map(|p| p.metadata.name.clone()));
//! }
//! # Ok(()) }
//! ```

pub mod api;
pub mod cache;
pub mod config;
pub mod controller;
pub mod discovery;
mod error;
pub mod informers;
pub mod leaderelection;
pub mod rest;
mod sync;
pub mod workqueue;

pub use api::{
    Api, AttachParams, DeleteParams, Deleted, ListParams, LogParams, ObjectList, Patch,
    PatchParams, PostParams, WatchParams,
};
pub use config::Config;
pub use error::{Error, Result, StreamError};
pub use kubeclient_machinery as machinery;
pub use rest::Client;
/// Stops informers, reflectors and controllers (re-exported so no direct `tokio-util`
/// dependency is needed).
pub use tokio_util::sync::CancellationToken;

/// The workspace README's examples, compiled and run as doc tests so they stay true (this
/// crate sees the machinery, the client and, as a dev-dependency, the server).
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeExamples;
