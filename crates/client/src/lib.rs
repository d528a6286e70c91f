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
//!   Also client-go's FIFO, Heap, ExpirationCache, MutationCache and UndeltaStore.
//! - [`tools::watch`]: RetryWatcher and the `until` helpers.
//! - [`scale`]: the scale client, for the `scale` subresource of any resource.
//! - [`util`]: an injectable clock, certificates and CSRs (feature `cert`).
//! - [`informers`]: the SharedInformerFactory (typed, dynamic and metadata-only informers).
//! - [`workqueue`]: rate-limited work queues for controllers.
//! - [`controller`]: a controller builder over the shared factory and a work queue, with
//!   an error policy, outcomes, predicates, finalizers and owner-reference helpers.
//! - [`manager`]: controller-runtime's Manager: client, cache, leader election, probes and
//!   controllers started in order and stopped gracefully.
//! - [`leaderelection`]: leader election on a Lease.
//! - [`customresource`] and [`CustomResource`]: typed custom resources and their CRDs.
//! - [`applyconfigurations`]: typed server-side apply (client-go's `applyconfigurations/`).
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
pub mod applyconfigurations;
pub mod cache;
pub mod config;
pub mod controller;
pub mod customresource;
pub mod discovery;
mod error;
pub mod informers;
pub mod leaderelection;
pub mod manager;
pub mod metrics;
pub mod record;
pub mod rest;
pub mod scale;
mod sync;
pub mod tools;
pub mod util;
pub mod webhook;
pub mod workqueue;

pub use api::{
    Api, ApplyOptions, AttachParams, DeleteParams, Deleted, ListParams, LogParams, ObjectList,
    Patch, PatchParams, PostParams, WatchParams,
};
pub use config::Config;
pub use error::{Error, Result, StreamError};
pub use kubeclient_machinery as machinery;
pub use rest::Client;

/// Generates a typed custom resource from its spec struct (kube-rs users know it as
/// `#[derive(CustomResource)]`).
///
/// Put it on the spec struct, with `Clone`, `Debug`, serde's `Serialize` and
/// `Deserialize` and schemars' `JsonSchema` derived too (the status type needs the
/// same). The generated type, named after the kind, has `metadata`, `spec` and (with
/// `status`) `status: Option<Status>`, a `new(name, spec)` constructor, and implements
/// `k8s_openapi::Resource` and `Metadata` (so [`Object`](machinery::Object),
/// [`Api`], and the factory's `informer::<K>()` and `lister::<K>()` work as for
/// built-in types) and [`CustomResourceExt`](customresource::CustomResourceExt)
/// (`crd()`).
///
/// Attributes, in `#[kubeclient(...)]`:
///
/// | attribute | meaning |
/// |---|---|
/// | `group = "example.com"` | API group (required; a DNS subdomain) |
/// | `version = "v1"` | version (required; `v1`, `v2beta1` ...) |
/// | `kind = "Installation"` | kind and name of the generated type (required) |
/// | `namespaced` | namespaced (default: cluster-scoped) |
/// | `plural = "..."`, `singular = "..."` | names (default: lowercase kind, English plural) |
/// | `shortname = "..."`, `category = "..."` | repeatable |
/// | `status = "StatusType"` | the status type, and the status subresource |
/// | `printcolumn(name = "...", type = "integer", json_path = ".spec.x", description = "...", format = "...", priority = 0)` | repeatable (clippy's `duplicated_attributes` flags two columns of the same type: allow it on the struct) |
/// | `scale(spec_replicas_path = "...", status_replicas_path = "...", label_selector_path = "...")` | the scale subresource |
/// | `validation(rule = "self.replicas <= 10", message = "...", message_expression = "...", field_path = ".replicas", reason = "FieldValueInvalid")` | repeatable: a CEL rule of the spec's `x-kubernetes-validations` (`self` is the spec; `oldSelf` makes it a transition rule); only `rule` is required |
///
/// # Examples
///
/// ```
/// use kubeclient::CustomResource;
/// use kubeclient::customresource::CustomResourceExt;
/// use kubeclient::machinery::Object;
///
/// #[derive(CustomResource, Clone, Debug, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
/// #[kubeclient(group = "example.kubeclient.dev", version = "v1", kind = "Installation", namespaced,
///              status = "InstallationStatus", shortname = "inst",
///              printcolumn(name = "Replicas", type = "integer", json_path = ".spec.replicas"),
///              validation(rule = "self.replicas <= 10", message = "at most 10 replicas", field_path = ".replicas"))]
/// #[serde(rename_all = "camelCase")]
/// pub struct InstallationSpec { pub replicas: i32, pub image: String, pub service_port: i32 }
///
/// #[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
/// #[serde(rename_all = "camelCase")]
/// pub struct InstallationStatus { pub observed_generation: Option<i64> }
///
/// let web = Installation::new("web", InstallationSpec { replicas: 2, image: "nginx".into(), service_port: 80 });
/// assert_eq!(web.name(), "web");
/// assert_eq!(web.kind(), "Installation");
/// let crd = Installation::crd();
/// assert_eq!(crd.spec.scope, "Namespaced");
/// assert_eq!(crd.spec.names.short_names, Some(vec!["inst".to_owned()]));
/// let spec = &crd.spec.versions[0].schema.as_ref().unwrap().open_api_v3_schema.as_ref().unwrap().properties.as_ref().unwrap()["spec"];
/// assert_eq!(spec.x_kubernetes_validations.as_ref().unwrap()[0].rule, "self.replicas <= 10");
/// ```
pub use kubeclient_derive::CustomResource;

/// What `#[derive(CustomResource)]`'s generated code refers to; not a public API.
#[doc(hidden)]
pub mod __private {
    pub use k8s_openapi;
    pub use schemars;
    pub use serde;
    pub use serde_json;
}
/// Stops informers, reflectors and controllers (re-exported so no direct `tokio-util`
/// dependency is needed).
pub use tokio_util::sync::CancellationToken;

/// The workspace README's examples, compiled and run as doc tests so they stay true (this
/// crate sees the machinery, the client and, as a dev-dependency, the server).
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeExamples;

/// The Rust examples of the pages under `docs/`, compiled as doc tests like README's.
#[cfg(doctest)]
mod docs_examples {
    #[doc = include_str!("../../../docs/APISERVER.md")]
    struct ApiServer;
    #[doc = include_str!("../../../docs/APPLY.md")]
    struct Apply;
    #[doc = include_str!("../../../docs/CONTROLLERS.md")]
    struct Controllers;
    #[doc = include_str!("../../../docs/STATUS.md")]
    struct Status;
    #[doc = include_str!("../../../docs/STREAMS.md")]
    struct Streams;
}
