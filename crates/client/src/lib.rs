//! kubeclient: client-go's architecture in Rust.
//!
//! **Status: skeleton.** Only the shared vocabulary exists so far, re-exported from
//! [`kubeclient_machinery`] as [`machinery`]. The REST client, clientset, dynamic client,
//! discovery, cache (Store, Indexer, DeltaFIFO, Reflector, SharedIndexInformer), informer
//! factories and work queues are tracked as open issues; see the workspace README for
//! the status table.

pub use kubeclient_machinery as machinery;
