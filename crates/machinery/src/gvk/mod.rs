//! Groups, versions, kinds and resources: how the API names types (kinds) and their
//! HTTP collections (resources).
//!
//! The core group is the empty string: its `apiVersion` is just `v1` and its paths start
//! with `/api/v1`; every other group's `apiVersion` is `group/version` under `/apis`.

mod api_resource;
mod group_version;

pub use api_resource::{ApiResource, ScopeNamespaced};
pub use group_version::{
    GroupResource, GroupVersion, GroupVersionKind, GroupVersionResource, ParseGroupVersionError,
};
