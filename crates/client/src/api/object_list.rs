//! [`ObjectList`]: a page of a list; [`Deleted`]: what a delete returns.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta;
use kubeclient_machinery::Status;
use serde::{Deserialize, Deserializer};

/// A page of a list: its metadata (resourceVersion, continue) and items. `items: null`
/// decodes as empty.
#[derive(Clone, Debug, Deserialize)]
#[serde(bound(deserialize = "K: Deserialize<'de>"))]
pub struct ObjectList<K> {
    /// `resourceVersion`, `continue`, `remainingItemCount`.
    #[serde(default)]
    pub metadata: ListMeta,
    /// The objects.
    #[serde(default = "Vec::new", deserialize_with = "null_as_empty")]
    pub items: Vec<K>,
}

fn null_as_empty<'de, D, K>(deserializer: D) -> Result<Vec<K>, D::Error>
where
    D: Deserializer<'de>,
    K: Deserialize<'de>,
{
    Ok(Option::<Vec<K>>::deserialize(deserializer)?.unwrap_or_default())
}

impl<K> ObjectList<K> {
    /// The continue token, if there are more pages.
    #[must_use]
    pub fn continue_token(&self) -> Option<&str> {
        self.metadata.continue_.as_deref().filter(|t| !t.is_empty())
    }
}

/// What a delete answered: the object (it has finalizers, or the resource returns deleted
/// objects) or a success Status.
#[derive(Clone, Debug)]
pub enum Deleted<K> {
    /// The object, deleted or being deleted.
    Object(K),
    /// A `Status` with `status: Success` (boxed: it is large and rare next to objects).
    Status(Box<Status>),
}
