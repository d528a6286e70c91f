//! Object keys (`namespace/name` or `name`) and deletion tombstones, exactly as client-go's
//! `tools/cache` defines them (`MetaNamespaceKeyFunc`, `SplitMetaNamespaceKey`,
//! `DeletedFinalStateUnknown`).

use std::fmt;
use std::sync::Arc;

use super::Object;

/// The key of an object in a store: `namespace/name` for namespaced objects, `name` for
/// cluster-scoped ones (Go's `MetaNamespaceKeyFunc`).
///
/// # Examples
///
/// ```
/// use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
/// use kubeclient_machinery::{meta_namespace_key, Object};
///
/// let mut cm = ConfigMap::default();
/// cm.meta_mut().name = Some("app".into());
/// cm.meta_mut().namespace = Some("prod".into());
/// assert_eq!(meta_namespace_key(&cm), "prod/app");
///
/// let mut ns = Namespace::default();
/// ns.meta_mut().name = Some("prod".into());
/// assert_eq!(meta_namespace_key(&ns), "prod");
/// ```
#[must_use]
pub fn meta_namespace_key<K: Object + ?Sized>(obj: &K) -> String {
    match obj.namespace() {
        Some(ns) => {
            let name = obj.name();
            let mut key = String::with_capacity(ns.len() + 1 + name.len());
            key.push_str(ns);
            key.push('/');
            key.push_str(name);
            key
        }
        None => obj.name().to_owned(),
    }
}

/// Splits a key made by [`meta_namespace_key`] into `(namespace, name)` (Go's
/// `SplitMetaNamespaceKey`): no `/` means a cluster-scoped name, one `/` separates namespace
/// and name, more is an error.
///
/// The edge cases follow client-go: `""` gives `("", "")`, `"/x"` gives `("", "x")` and
/// `"a/"` gives `("a", "")`.
///
/// # Errors
///
/// [`KeyError`] when the key has more than one `/`.
///
/// # Examples
///
/// ```
/// use kubeclient_machinery::split_meta_namespace_key;
/// assert_eq!(split_meta_namespace_key("prod/app").unwrap(), ("prod", "app"));
/// assert_eq!(split_meta_namespace_key("node-1").unwrap(), ("", "node-1"));
/// assert!(split_meta_namespace_key("a/b/c").is_err());
/// ```
pub fn split_meta_namespace_key(key: &str) -> Result<(&str, &str), KeyError> {
    let mut parts = key.splitn(3, '/');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(name), None, _) => Ok(("", name)),
        (Some(namespace), Some(name), None) => Ok((namespace, name)),
        _ => Err(KeyError::UnexpectedFormat(key.to_owned())),
    }
}

/// An error from splitting or computing an object key.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// The key has more than one `/`. Keys are `namespace/name` or `name`; check where the
    /// key was built.
    #[error("unexpected key format: {0:?}")]
    UnexpectedFormat(String),
}

/// A namespace and a name: the parsed form of an object key (Go's `cache.ObjectName`).
///
/// Displays as the key (`namespace/name`, or `name` when the namespace is empty).
///
/// # Examples
///
/// ```
/// use kubeclient_machinery::ObjectName;
/// let name = ObjectName::parse("prod/app").unwrap();
/// assert_eq!(name.namespace, "prod");
/// assert_eq!(name.to_string(), "prod/app");
/// assert_eq!(ObjectName::new("", "node-1").to_string(), "node-1");
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectName {
    /// The namespace; empty for cluster-scoped objects.
    pub namespace: String,
    /// The name.
    pub name: String,
}

impl ObjectName {
    /// A name in a namespace (`""` for cluster-scoped).
    #[must_use]
    pub fn new(namespace: &str, name: &str) -> Self {
        ObjectName {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        }
    }

    /// The name of an object.
    #[must_use]
    pub fn of<K: Object + ?Sized>(obj: &K) -> Self {
        ObjectName::new(obj.namespace().unwrap_or(""), obj.name())
    }

    /// Parses a key with [`split_meta_namespace_key`]'s rules.
    ///
    /// # Errors
    ///
    /// [`KeyError`] when the key has more than one `/`.
    pub fn parse(key: &str) -> Result<Self, KeyError> {
        let (namespace, name) = split_meta_namespace_key(key)?;
        Ok(ObjectName::new(namespace, name))
    }
}

impl fmt::Display for ObjectName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.namespace.is_empty() {
            f.write_str(&self.name)
        } else {
            write!(f, "{}/{}", self.namespace, self.name)
        }
    }
}

/// A deletion that was inferred, not observed (a "tombstone").
///
/// When a relist finds that an object the cache knew is gone, the delete event itself was
/// missed; the informer then delivers this instead of the final object. [`obj`](Self::obj)
/// is the last state the cache knew, which may be stale, or `None` when nothing was known.
#[derive(Debug, PartialEq)]
pub struct DeletedFinalStateUnknown<K> {
    /// The key of the deleted object.
    pub key: String,
    /// The last known state of the object, if any.
    pub obj: Option<Arc<K>>,
}

// Manual impl: cloning shares the `Arc`, so `K` itself need not be `Clone`.
impl<K> Clone for DeletedFinalStateUnknown<K> {
    fn clone(&self) -> Self {
        DeletedFinalStateUnknown {
            key: self.key.clone(),
            obj: self.obj.clone(),
        }
    }
}

/// What a delete notification carries: the object's final state when the deletion was
/// observed, or a [`DeletedFinalStateUnknown`] tombstone when it was inferred by a relist
/// (Go's typed `DeletedObject[T]`).
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use kubeclient_machinery::{DeletedFinalStateUnknown, DeletedObject, DynamicObject};
///
/// let tombstone: DeletedObject<DynamicObject> =
///     DeletedObject::FinalStateUnknown(DeletedFinalStateUnknown { key: "ns/a/b".into(), obj: None });
/// assert_eq!(tombstone.key(), "ns/a/b");
/// assert!(tombstone.object().is_none());
/// // Tombstone names split on the first `/` only, never failing.
/// assert_eq!(tombstone.object_name().name, "a/b");
/// ```
#[derive(Debug, PartialEq)]
pub enum DeletedObject<K> {
    /// The deletion was observed: this is the object's final state.
    Final(Arc<K>),
    /// The deletion was inferred during a relist.
    FinalStateUnknown(DeletedFinalStateUnknown<K>),
}

impl<K> Clone for DeletedObject<K> {
    fn clone(&self) -> Self {
        match self {
            DeletedObject::Final(obj) => DeletedObject::Final(Arc::clone(obj)),
            DeletedObject::FinalStateUnknown(tombstone) => {
                DeletedObject::FinalStateUnknown(tombstone.clone())
            }
        }
    }
}

impl<K: Object> DeletedObject<K> {
    /// The key: the tombstone's key, or the object's `namespace/name`
    /// (Go's `DeletionHandlingMetaNamespaceKeyFunc`).
    #[must_use]
    pub fn key(&self) -> String {
        match self {
            DeletedObject::Final(obj) => meta_namespace_key(obj.as_ref()),
            DeletedObject::FinalStateUnknown(tombstone) => tombstone.key.clone(),
        }
    }

    /// The best known state: the final object, or the tombstone's last known state.
    #[must_use]
    pub fn object(&self) -> Option<&Arc<K>> {
        match self {
            DeletedObject::Final(obj) => Some(obj),
            DeletedObject::FinalStateUnknown(tombstone) => tombstone.obj.as_ref(),
        }
    }

    /// The namespace and name. A tombstone key is split on its first `/` only, so this
    /// never fails (extra slashes stay in the name), as in client-go.
    #[must_use]
    pub fn object_name(&self) -> ObjectName {
        match self {
            DeletedObject::Final(obj) => ObjectName::of(obj.as_ref()),
            DeletedObject::FinalStateUnknown(tombstone) => match tombstone.key.split_once('/') {
                Some((namespace, name)) => ObjectName::new(namespace, name),
                None => ObjectName::new("", &tombstone.key),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DynamicObject;

    #[test]
    fn split_handles_client_go_edge_cases() {
        type Case<'a> = (&'a str, &'a str, Result<(&'a str, &'a str), ()>);
        let cases: &[Case<'_>] = &[
            (
                "empty key is an empty cluster-scoped name",
                "",
                Ok(("", "")),
            ),
            ("plain name", "node-1", Ok(("", "node-1"))),
            ("namespace and name", "prod/app", Ok(("prod", "app"))),
            ("leading slash gives empty namespace", "/x", Ok(("", "x"))),
            ("trailing slash gives empty name", "a/", Ok(("a", ""))),
            ("lone slash", "/", Ok(("", ""))),
            ("three parts are rejected", "a/b/c", Err(())),
            ("two slashes are rejected", "//", Err(())),
        ];
        for (name, key, want) in cases {
            let got = split_meta_namespace_key(key).map_err(|_| ());
            assert_eq!(&got, want, "{name}: {key:?}");
        }
    }

    #[test]
    fn split_error_quotes_the_key() {
        let err = split_meta_namespace_key("a/b/c").unwrap_err();
        assert_eq!(err.to_string(), r#"unexpected key format: "a/b/c""#);
    }

    #[test]
    fn key_of_object_round_trips_through_object_name() {
        let mut obj = DynamicObject::new("v1", "ConfigMap", "app");
        obj.metadata.namespace = Some("prod".into());
        let key = meta_namespace_key(&obj);
        assert_eq!(key, "prod/app");
        assert_eq!(ObjectName::parse(&key).unwrap(), ObjectName::of(&obj));
        assert_eq!(ObjectName::of(&obj).to_string(), key);
    }

    #[test]
    fn round_trip_of_leading_slash_key_loses_the_slash_like_client_go() {
        assert_eq!(ObjectName::parse("/x").unwrap().to_string(), "x");
    }

    #[test]
    fn deleted_object_key_prefers_the_tombstone_key() {
        let obj = Arc::new(DynamicObject::new("v1", "ConfigMap", "app"));
        let tombstone = DeletedObject::FinalStateUnknown(DeletedFinalStateUnknown {
            key: "old-ns/app".into(),
            obj: Some(obj.clone()),
        });
        assert_eq!(tombstone.key(), "old-ns/app");
        assert_eq!(tombstone.object().map(|o| o.name()), Some("app"));
        assert_eq!(DeletedObject::Final(obj).key(), "app");
    }
}
