//! [`SharedInformerFactory`]: one shared informer per resource for a whole program
//! (client-go's `informers`, `dynamicinformer` and `metadatainformer` factories in one).
//!
//! # Examples
//!
//! ```no_run
//! # async fn run(client: kubeclient::Client) {
//! use std::time::Duration;
//! use k8s_openapi::api::core::v1::Pod;
//! use kubeclient::cache::ResourceEventHandlerFuncs;
//! use kubeclient::informers::SharedInformerFactory;
//! use kubeclient::machinery::Object;
//!
//! let factory = SharedInformerFactory::new(client).resync(Duration::from_secs(600));
//! let pods = factory.informer::<Pod>();
//! pods.add_event_handler(ResourceEventHandlerFuncs::new().on_add(|pod: &std::sync::Arc<Pod>, _| println!("{}", pod.name()))).unwrap();
//! factory.start();
//! factory.wait_for_cache_sync().await;
//! let lister = factory.lister::<Pod>();
//! # let _ = lister;
//! factory.shutdown().await;
//! # }
//! ```

mod factory;
mod informer_metrics;

pub(crate) use factory::FactoryHandle;
pub use factory::{FactoryResource, SharedInformerFactory};
pub use informer_metrics::InformerMetricsProvider;
