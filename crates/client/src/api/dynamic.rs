//! The dynamic client (client-go's `dynamic.Interface`): [`Api<DynamicObject>`] over any
//! resource described by an [`ApiResource`], every verb of the typed client included.
//!
//! # Examples
//!
//! ```no_run
//! # async fn run(client: kubeclient::Client) -> kubeclient::Result<()> {
//! use kubeclient::Api;
//! use kubeclient::machinery::{ApiResource, DynamicObject, GroupVersionKind};
//!
//! let gvk = GroupVersionKind::new("example.com", "v1", "Widget");
//! let widgets: Api<DynamicObject> =
//!     Api::namespaced_with(client, "default", &ApiResource::from_gvk_guessing_plural(&gvk, true));
//! for widget in widgets.list(&Default::default()).await?.items {
//!     println!("{:?}", widget.metadata.name);
//! }
//! # Ok(()) }
//! ```

use kubeclient_machinery::{ApiResource, DynamicObject};

use super::Api;
use crate::rest::Client;

impl Api<DynamicObject> {
    /// The dynamic client across all namespaces (or a cluster-scoped resource).
    #[must_use]
    pub fn all_with(client: Client, resource: &ApiResource) -> Self {
        Api::with_resource(client, None, resource.clone())
    }

    /// The dynamic client in one namespace.
    #[must_use]
    pub fn namespaced_with(client: Client, namespace: &str, resource: &ApiResource) -> Self {
        Api::with_resource(client, Some(namespace.to_owned()), resource.clone())
    }
}
