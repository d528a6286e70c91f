//! Kubernetes API machinery for kubeclient: the vocabulary shared by the client and the
//! embedded API server. Like Go's `k8s.io/apimachinery`, this crate does no I/O.
//!
//! Start here:
//! - [`meta`]: the [`Object`] trait (metadata access for every `k8s-openapi` type and for
//!   [`DynamicObject`]), object keys ([`ObjectName`], [`meta_namespace_key`]) and
//!   tombstones ([`DeletedFinalStateUnknown`]).
//! - [`gvk`]: [`GroupVersion`], [`GroupVersionKind`], [`GroupVersionResource`], [`ApiResource`].
//! - [`selector`]: label selectors (the full grammar) and field selectors.
//! - [`status`]: the [`Status`] object and [`ApiError`] with client-go's `Is*` helpers.
//! - [`watch`]: [`WatchEvent`] and a streaming decoder for newline-delimited watch bodies.
//! - [`protobuf`]: Kubernetes' protobuf encoding of the built-in types (envelope, lists,
//!   watch frames, Status), to and from the JSON form.
//! - [`stream_protocol`]: the WebSocket channel protocols of exec, attach and port-forward.
//! - [`list`]: a streaming splitter of list bodies into items, and byte-level edits of one
//!   item (dropping `managedFields`, reading its key and resourceVersion).
//!
//! # Kubernetes version
//!
//! This library does not pick a `k8s-openapi` version feature; the binary that uses it does
//! (kubeclient's own binaries and tests use `v1_37`, the newest `k8s-openapi` 0.29 offers).
//!
//! # Example
//!
//! ```
//! use k8s_openapi::api::core::v1::Pod;
//! use kubeclient_machinery::{meta_namespace_key, LabelSelector, Object};
//!
//! let pod: Pod = serde_json::from_str(
//!     r#"{"metadata":{"name":"web-0","namespace":"prod","labels":{"app":"web"}}}"#,
//! ).unwrap();
//! assert_eq!(meta_namespace_key(&pod), "prod/web-0");
//!
//! let selector: LabelSelector = "app in (web, api), !canary".parse().unwrap();
//! assert!(selector.matches(pod.labels()));
//! assert_eq!(selector.to_string(), "app in (api,web),!canary");
//! ```

mod decode;
mod error_chain;
pub mod gvk;
pub mod list;
pub mod meta;
pub mod protobuf;
pub mod selector;
pub mod status;
pub mod stream_protocol;
pub mod watch;

pub use decode::{ObjectDecodeError, decode_object};
pub use error_chain::ErrorChain;
pub use gvk::{ApiResource, GroupResource, GroupVersion, GroupVersionKind, GroupVersionResource};
pub use meta::{
    DeletedFinalStateUnknown, DeletedObject, DynamicObject, KeyError, Object, ObjectName,
    PartialObjectMetadata, TypeMeta, meta_namespace_key, split_meta_namespace_key,
};
pub use selector::{FieldSelector, LabelSelector, SelectorError};
pub use status::{ApiError, Status, StatusCause, StatusDetails, StatusReason};
pub use watch::{Bookmark, WatchDecodeError, WatchEvent, WatchStreamDecoder};

#[cfg(test)]
mod fuzz_tests;

#[cfg(test)]
/// This crate's directory as cargo tells the running test: a path baked in at build time
/// goes stale when one build directory serves several checkouts.
pub(crate) fn manifest_dir() -> std::path::PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR").map_or_else(
        || env!("CARGO_MANIFEST_DIR").into(),
        std::path::PathBuf::from,
    )
}
