//! Object metadata: the [`Object`] trait, [`DynamicObject`], [`PartialObjectMetadata`],
//! object keys and tombstones.
//!
//! Generic code throughout kubeclient (stores, informers, listers) is written once over
//! [`Object`] and serves both the `k8s-openapi` types and [`DynamicObject`].

mod dynamic_object;
mod key;
mod object;
mod partial_object_metadata;

pub use dynamic_object::{DynamicObject, TypeMeta};
pub use key::{
    DeletedFinalStateUnknown, DeletedObject, KeyError, ObjectName, meta_namespace_key,
    split_meta_namespace_key,
};
pub use object::Object;
pub use partial_object_metadata::PartialObjectMetadata;
