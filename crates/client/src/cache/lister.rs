//! [`Lister`]: reads an informer's cache (client-go's listers).

use std::sync::Arc;

use kubeclient_machinery::{ApiError, GroupResource, LabelSelector, Object, Status};

use crate::error::Result;

use super::{Cache, Indexer, KnownObjects, NAMESPACE_INDEX, Store};

/// Reads objects from an informer's cache: no request reaches the server. Objects are
/// shared and read-only.
///
/// # Examples
///
/// ```no_run
/// # fn run(informer: kubeclient::cache::SharedIndexInformer<k8s_openapi::api::core::v1::Pod>) {
/// use kubeclient::cache::Lister;
/// use kubeclient::machinery::{GroupResource, LabelSelector};
///
/// let pods = Lister::new(informer.indexer(), GroupResource::new("", "pod"));
/// let web: LabelSelector = "app=web".parse().unwrap();
/// for pod in pods.by_namespace("prod").list(&web) {
///     println!("{:?}", pod.metadata.name);
/// }
/// # }
/// ```
#[doc(alias = "GenericLister")]
pub struct Lister<K: Object> {
    indexer: Arc<Cache<K>>,
    resource: GroupResource,
}

impl<K: Object> Clone for Lister<K> {
    fn clone(&self) -> Self {
        Lister {
            indexer: self.indexer.clone(),
            resource: self.resource.clone(),
        }
    }
}

impl<K: Object> Lister<K> {
    /// A lister over `indexer`; `resource` names NotFound errors (client-go's typed
    /// listers use the singular, e.g. `pod "x" not found`).
    #[must_use]
    pub fn new(indexer: Arc<Cache<K>>, resource: GroupResource) -> Self {
        Lister { indexer, resource }
    }

    /// Every object whose labels match (everything for an empty selector).
    #[must_use]
    pub fn list(&self, selector: &LabelSelector) -> Vec<Arc<K>> {
        let all = self.indexer.list();
        if selector.is_empty() {
            return all;
        }
        all.into_iter()
            .filter(|obj| selector.matches(obj.labels()))
            .collect()
    }

    /// A cluster-scoped object by name.
    ///
    /// # Errors
    ///
    /// A NotFound API error like the server's (`Error::is_not_found`).
    pub fn get(&self, name: &str) -> Result<Arc<K>> {
        self.get_by_key(name, name)
    }

    fn get_by_key(&self, key: &str, name: &str) -> Result<Arc<K>> {
        self.indexer
            .get_by_key(key)
            .ok()
            .flatten()
            .ok_or_else(|| ApiError::from_status(Status::not_found(&self.resource, name)).into())
    }

    /// The objects of one namespace.
    #[must_use]
    pub fn by_namespace(&self, namespace: &str) -> NamespaceLister<'_, K> {
        NamespaceLister {
            lister: self,
            namespace: namespace.to_owned(),
        }
    }

    /// The objects under `value` in the index `index_name`.
    ///
    /// # Errors
    ///
    /// The cache's error for an unknown index.
    pub fn by_index(
        &self,
        index_name: &str,
        value: &str,
    ) -> std::result::Result<Vec<Arc<K>>, super::Error> {
        self.indexer.by_index(index_name, value)
    }
}

/// A [`Lister`] limited to one namespace.
#[doc(alias = "GenericNamespaceLister")]
pub struct NamespaceLister<'a, K: Object> {
    lister: &'a Lister<K>,
    namespace: String,
}

impl<K: Object> NamespaceLister<'_, K> {
    /// The objects of the namespace whose labels match, through the `namespace` index
    /// (or a scan if the index is missing).
    #[must_use]
    pub fn list(&self, selector: &LabelSelector) -> Vec<Arc<K>> {
        let in_namespace = match self
            .lister
            .indexer
            .by_index(NAMESPACE_INDEX, &self.namespace)
        {
            Ok(objects) => objects,
            Err(_) => self
                .lister
                .indexer
                .list()
                .into_iter()
                .filter(|obj| obj.namespace() == Some(self.namespace.as_str()))
                .collect(),
        };
        if selector.is_empty() {
            return in_namespace;
        }
        in_namespace
            .into_iter()
            .filter(|obj| selector.matches(obj.labels()))
            .collect()
    }

    /// One object by name.
    ///
    /// # Errors
    ///
    /// A NotFound API error naming the bare name.
    pub fn get(&self, name: &str) -> Result<Arc<K>> {
        self.lister
            .get_by_key(&format!("{}/{name}", self.namespace), name)
    }
}
