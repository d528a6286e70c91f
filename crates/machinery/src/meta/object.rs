//! The [`Object`] trait: uniform metadata access for every Kubernetes object.

use std::borrow::Cow;
use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};

/// The empty map returned by [`Object::labels`] and [`Object::annotations`] when the
/// object has none, so callers never deal with `Option<&BTreeMap>`.
static EMPTY_MAP: BTreeMap<String, String> = BTreeMap::new();

/// A Kubernetes object: something with `apiVersion`, `kind` and an `ObjectMeta`.
///
/// Implemented for every `k8s-openapi` resource type (anything implementing
/// `k8s_openapi::Metadata<Ty = ObjectMeta>`) and for [`DynamicObject`](super::DynamicObject).
/// The accessors mirror Go's `metav1.Object` and return borrowed data; absent optional
/// fields read as empty (`""`, an empty map, an empty slice), the way Go's zero values do.
///
/// The accessor for the metadata itself is named `meta` (not `metadata`) so that it never
/// clashes with `k8s_openapi::Metadata::metadata` when both traits are in scope.
///
/// # Examples
///
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kubeclient_machinery::Object;
///
/// let mut cm = ConfigMap::default();
/// cm.meta_mut().name = Some("app-config".into());
/// assert_eq!(cm.name(), "app-config");
/// assert_eq!(cm.namespace(), None);
/// assert_eq!(cm.kind(), "ConfigMap");
/// assert!(cm.labels().is_empty());
/// ```
pub trait Object: Send + Sync + 'static {
    /// The object's metadata.
    fn meta(&self) -> &ObjectMeta;

    /// The object's metadata, mutably.
    fn meta_mut(&mut self) -> &mut ObjectMeta;

    /// `apiVersion`: `v1` for the core group, `group/version` otherwise. For a
    /// [`DynamicObject`](super::DynamicObject) this is whatever the object carries (possibly empty).
    fn api_version(&self) -> Cow<'_, str>;

    /// `kind`, e.g. `Pod`. For a [`DynamicObject`](super::DynamicObject) this is whatever the
    /// object carries (possibly empty).
    fn kind(&self) -> Cow<'_, str>;

    /// `metadata.name`, or `""` when unset (e.g. an object with only `generateName`).
    fn name(&self) -> &str {
        self.meta().name.as_deref().unwrap_or("")
    }

    /// `metadata.namespace`, or `None` when unset or empty (cluster-scoped objects).
    fn namespace(&self) -> Option<&str> {
        self.meta().namespace.as_deref().filter(|ns| !ns.is_empty())
    }

    /// `metadata.uid`, or `""` when unset.
    fn uid(&self) -> &str {
        self.meta().uid.as_deref().unwrap_or("")
    }

    /// `metadata.resourceVersion`, or `""` when unset. Resource versions are opaque: compare
    /// them only for equality (or with the length-then-lexical rule, within one resource).
    fn resource_version(&self) -> &str {
        self.meta().resource_version.as_deref().unwrap_or("")
    }

    /// `metadata.generation`, or `0` when unset.
    fn generation(&self) -> i64 {
        self.meta().generation.unwrap_or(0)
    }

    /// `metadata.labels`, or an empty map.
    fn labels(&self) -> &BTreeMap<String, String> {
        self.meta().labels.as_ref().unwrap_or(&EMPTY_MAP)
    }

    /// `metadata.annotations`, or an empty map.
    fn annotations(&self) -> &BTreeMap<String, String> {
        self.meta().annotations.as_ref().unwrap_or(&EMPTY_MAP)
    }

    /// `metadata.creationTimestamp`, if set.
    fn creation_timestamp(&self) -> Option<&Time> {
        self.meta().creation_timestamp.as_ref()
    }

    /// `metadata.deletionTimestamp`: set once a deletion has begun (finalizers or grace).
    fn deletion_timestamp(&self) -> Option<&Time> {
        self.meta().deletion_timestamp.as_ref()
    }

    /// `metadata.ownerReferences`, or an empty slice.
    fn owner_references(&self) -> &[OwnerReference] {
        self.meta().owner_references.as_deref().unwrap_or(&[])
    }

    /// `metadata.finalizers`, or an empty slice.
    fn finalizers(&self) -> &[String] {
        self.meta().finalizers.as_deref().unwrap_or(&[])
    }

    /// The owner reference with `controller: true`, if any (Go's `metav1.GetControllerOf`).
    fn controller_of(&self) -> Option<&OwnerReference> {
        self.owner_references()
            .iter()
            .find(|owner| owner.controller == Some(true))
    }
}

impl<K> Object for K
where
    K: k8s_openapi::Metadata<Ty = ObjectMeta> + Send + Sync + 'static,
{
    fn meta(&self) -> &ObjectMeta {
        k8s_openapi::Metadata::metadata(self)
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        k8s_openapi::Metadata::metadata_mut(self)
    }

    fn api_version(&self) -> Cow<'_, str> {
        Cow::Borrowed(K::API_VERSION)
    }

    fn kind(&self) -> Cow<'_, str> {
        Cow::Borrowed(K::KIND)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::{Namespace, Pod};

    #[test]
    fn typed_objects_read_metadata_through_the_trait() {
        let pod: Pod = serde_json::from_str(
            r#"{"metadata":{"name":"web-0","namespace":"prod","uid":"u1","resourceVersion":"42",
                "generation":3,"labels":{"app":"web"},"annotations":{"a":"b"},
                "deletionTimestamp":"2024-05-01T10:00:00Z","finalizers":["f"],
                "ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web","uid":"rs1","controller":true}]}}"#,
        )
        .unwrap();
        assert_eq!(pod.name(), "web-0");
        assert_eq!(pod.namespace(), Some("prod"));
        assert_eq!(pod.uid(), "u1");
        assert_eq!(pod.resource_version(), "42");
        assert_eq!(pod.generation(), 3);
        assert_eq!(pod.labels()["app"], "web");
        assert_eq!(pod.annotations()["a"], "b");
        assert!(pod.deletion_timestamp().is_some());
        assert_eq!(pod.finalizers(), ["f".to_string()]);
        assert_eq!(pod.controller_of().map(|o| o.name.as_str()), Some("web"));
        assert_eq!(pod.api_version(), "v1");
        assert_eq!(pod.kind(), "Pod");
    }

    #[test]
    fn absent_fields_read_as_empty_values() {
        let ns = Namespace::default();
        assert_eq!(ns.name(), "");
        assert_eq!(ns.namespace(), None);
        assert_eq!(ns.resource_version(), "");
        assert_eq!(ns.generation(), 0);
        assert!(ns.labels().is_empty());
        assert!(ns.owner_references().is_empty());
        assert!(ns.controller_of().is_none());
        let deploy = Deployment::default();
        assert_eq!(deploy.api_version(), "apps/v1");
    }

    #[test]
    fn empty_namespace_string_counts_as_cluster_scoped() {
        let mut pod = Pod::default();
        pod.meta_mut().namespace = Some(String::new());
        assert_eq!(pod.namespace(), None);
    }
}
