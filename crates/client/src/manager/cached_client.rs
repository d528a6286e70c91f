//! [`CachedClient`]: reads from the shared informers, writes to the server
//! (controller-runtime's default client: `client.New` with the manager's cache as reader),
//! with field indexes (`IndexField` + `MatchingFields`).
//!
//! A read of a type not cached yet makes its informer, starts it and waits for its first
//! list (controller-runtime starts informers lazily the same way), unless the client was
//! told to [fail instead](CachedClient::fail_on_uncached). Reads see the cache, which may
//! be behind the server: write with the object's `resourceVersion` and retry conflicts.

use std::sync::Arc;
use std::time::Duration;

use kubeclient_machinery::selector::{FieldOperator, FieldSelector, FieldTerm, LabelSelector};

use crate::api::Api;
use crate::cache::{BoxError, Indexer, Indexers, KnownObjects, SharedIndexInformer, Store};
use crate::informers::{FactoryResource, SharedInformerFactory};
use crate::rest::Client;

/// How often a lazy read checks whether the new informer has synced.
const SYNC_POLL: Duration = Duration::from_millis(20);

/// The index name of a field registered with [`CachedClient::index_field`].
fn field_index(field: &str) -> String {
    format!("field:{field}")
}

/// Why a cached read failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CachedClientError {
    /// The type has no informer yet and the client was told not to start one; read it
    /// once through an informer, or drop `fail_on_uncached`.
    #[error("{kind} is not cached and this client does not start informers on reads")]
    NotCached {
        /// The kind.
        kind: &'static str,
    },
    /// The informer stopped (the factory was shut down) before its first list.
    #[error("the {kind} informer stopped before its cache synced")]
    Stopped {
        /// The kind.
        kind: &'static str,
    },
    /// A field selector names a field that is neither `metadata.name`,
    /// `metadata.namespace` nor registered with `index_field`.
    #[error("field {field:?} of {kind} is not indexed; register it with index_field first")]
    FieldNotIndexed {
        /// The kind.
        kind: &'static str,
        /// The field.
        field: String,
    },
    /// The cache refused an index (a name registered twice with different functions
    /// cannot happen here; an index function failed on a cached object).
    #[error("the {kind} cache refused the read or the index")]
    Cache {
        /// The kind.
        kind: &'static str,
        /// The cache's error.
        #[source]
        source: crate::cache::Error,
    },
}

/// What a [`CachedClient::list`] selects: a namespace (all when `None`), labels and
/// fields (`=`/`!=` on `metadata.name`, `metadata.namespace` and indexed fields).
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct CachedListOptions {
    /// Only this namespace.
    pub namespace: Option<String>,
    /// Labels to match.
    pub labels: LabelSelector,
    /// Fields to match.
    pub fields: FieldSelector,
}

impl CachedListOptions {
    /// Only `namespace`.
    #[must_use]
    pub fn namespace(mut self, namespace: &str) -> Self {
        self.namespace = Some(namespace.to_owned());
        self
    }

    /// Objects whose labels match `selector`.
    #[must_use]
    pub fn labels(mut self, selector: LabelSelector) -> Self {
        self.labels = selector;
        self
    }

    /// Objects whose fields match `selector`.
    #[must_use]
    pub fn fields(mut self, selector: FieldSelector) -> Self {
        self.fields = selector;
        self
    }

    /// Objects whose indexed `field` has `value` (controller-runtime's `MatchingFields`).
    #[must_use]
    pub fn matching_field(mut self, field: &str, value: &str) -> Self {
        let mut terms = self.fields.terms().to_vec();
        terms.push(FieldTerm {
            field: field.to_owned(),
            operator: FieldOperator::Equals,
            value: value.to_owned(),
        });
        self.fields = FieldSelector::from_terms(terms);
        self
    }
}

/// Reads from the shared informers of a factory, writes through [`Api`].
///
/// # Examples
///
/// ```no_run
/// # async fn run(client: kubeclient::Client) -> Result<(), Box<dyn std::error::Error>> {
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::Pod;
/// use kubeclient::informers::SharedInformerFactory;
/// use kubeclient::manager::{CachedClient, CachedListOptions};
///
/// let factory = Arc::new(SharedInformerFactory::new(client.clone()));
/// let cached = CachedClient::new(client, factory);
/// cached.index_field::<Pod>("spec.nodeName", |pod| {
///     pod.spec.as_ref().and_then(|s| s.node_name.clone()).into_iter().collect()
/// })?;
/// let on_node = cached.list::<Pod>(&CachedListOptions::default().matching_field("spec.nodeName", "node-1")).await?;
/// println!("{} pods on node-1", on_node.len());
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct CachedClient {
    client: Client,
    factory: Arc<SharedInformerFactory>,
    fail_on_uncached: bool,
}

impl CachedClient {
    /// Reads from `factory`'s informers, writes with `client`.
    #[must_use]
    pub fn new(client: Client, factory: Arc<SharedInformerFactory>) -> Self {
        CachedClient {
            client,
            factory,
            fail_on_uncached: false,
        }
    }

    /// Refuse reads of types the factory has no informer of yet (default false: start
    /// one and wait for its first list).
    #[must_use]
    pub fn fail_on_uncached(mut self, fail: bool) -> Self {
        self.fail_on_uncached = fail;
        self
    }

    /// The client the writes go through.
    #[must_use]
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// An [`Api`] for writes to `namespace` (`None`: all namespaces, or cluster-scoped).
    #[must_use]
    pub fn api<K: FactoryResource>(&self, namespace: Option<&str>) -> Api<K> {
        match namespace {
            Some(namespace) => Api::namespaced(self.client.clone(), namespace),
            None => Api::all(self.client.clone()),
        }
    }

    /// Indexes `K` by `field` (the values `extract` returns), so that lists can select
    /// on it (controller-runtime's `IndexField`). Makes the informer of `K` (it starts on
    /// the next read or factory start); objects already cached are indexed at once.
    ///
    /// # Errors
    ///
    /// [`CachedClientError::Cache`] when `field` was indexed already.
    pub fn index_field<K: FactoryResource>(
        &self,
        field: &str,
        extract: impl Fn(&K) -> Vec<String> + Send + Sync + 'static,
    ) -> Result<(), CachedClientError> {
        let indexers = Indexers::new().with(field_index(field), move |obj: &K| {
            Ok::<_, BoxError>(extract(obj))
        });
        self.factory
            .informer::<K>()
            .indexer()
            .add_indexers(indexers)
            .map_err(|source| CachedClientError::Cache {
                kind: K::KIND,
                source,
            })
    }

    /// The cached `namespace/name` (`name` alone for cluster-scoped objects), `None` when
    /// the cache has no such object.
    ///
    /// # Errors
    ///
    /// [`CachedClientError::NotCached`], [`CachedClientError::Stopped`].
    ///
    /// # Cancel safety
    ///
    /// Cancel safe.
    pub async fn get_opt<K: FactoryResource>(
        &self,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Option<Arc<K>>, CachedClientError> {
        let informer = self.informer::<K>().await?;
        let key = match namespace {
            Some(namespace) if !namespace.is_empty() => format!("{namespace}/{name}"),
            _ => name.to_owned(),
        };
        informer
            .indexer()
            .get_by_key(&key)
            .map_err(|source| CachedClientError::Cache {
                kind: K::KIND,
                source,
            })
    }

    /// The cached objects `options` selects, in no particular order.
    ///
    /// # Errors
    ///
    /// [`CachedClientError::NotCached`], [`CachedClientError::Stopped`],
    /// [`CachedClientError::FieldNotIndexed`].
    ///
    /// # Cancel safety
    ///
    /// Cancel safe.
    pub async fn list<K: FactoryResource>(
        &self,
        options: &CachedListOptions,
    ) -> Result<Vec<Arc<K>>, CachedClientError> {
        let informer = self.informer::<K>().await?;
        let indexer = informer.indexer();
        let indexers = indexer.get_indexers();
        for term in options.fields.terms() {
            let known = matches!(term.field.as_str(), "metadata.name" | "metadata.namespace")
                || indexers.get(&field_index(&term.field)).is_some();
            if !known {
                return Err(CachedClientError::FieldNotIndexed {
                    kind: K::KIND,
                    field: term.field.clone(),
                });
            }
        }
        // Start from the narrowest index an `=` term offers, then check every term.
        let pinned = options.fields.terms().iter().find(|t| {
            t.operator == FieldOperator::Equals && indexers.get(&field_index(&t.field)).is_some()
        });
        let candidates = match pinned {
            Some(term) => indexer.by_index(&field_index(&term.field), &term.value),
            None => match &options.namespace {
                Some(namespace) => indexer.by_index(crate::cache::NAMESPACE_INDEX, namespace),
                None => Ok(indexer.list()),
            },
        }
        .map_err(|source| CachedClientError::Cache {
            kind: K::KIND,
            source,
        })?;
        let mut selected = Vec::new();
        for obj in candidates {
            let in_namespace = options
                .namespace
                .as_deref()
                .is_none_or(|ns| obj.namespace().unwrap_or("") == ns);
            if !in_namespace || !options.labels.matches(obj.labels()) {
                continue;
            }
            let mut fields_match = true;
            for term in options.fields.terms() {
                let values = match term.field.as_str() {
                    "metadata.name" => vec![obj.name().to_owned()],
                    "metadata.namespace" => vec![obj.namespace().unwrap_or("").to_owned()],
                    field => match indexers.get(&field_index(field)) {
                        Some(index) => index(obj.as_ref()).unwrap_or_default(),
                        None => Vec::new(),
                    },
                };
                let has = values.contains(&term.value);
                fields_match &= match term.operator {
                    FieldOperator::Equals => has,
                    FieldOperator::NotEquals => !has,
                };
            }
            if fields_match {
                selected.push(obj);
            }
        }
        Ok(selected)
    }

    /// The informer of `K`, started and synced.
    async fn informer<K: FactoryResource>(
        &self,
    ) -> Result<SharedIndexInformer<K>, CachedClientError> {
        if self.fail_on_uncached && !self.factory.has_informer::<K>() {
            return Err(CachedClientError::NotCached { kind: K::KIND });
        }
        let informer = self.factory.informer::<K>();
        if !informer.is_started() {
            self.factory.start();
        }
        while !informer.has_synced() {
            if informer.is_stopped() {
                return Err(CachedClientError::Stopped { kind: K::KIND });
            }
            tokio::time::sleep(SYNC_POLL).await;
        }
        Ok(informer)
    }
}

impl std::fmt::Debug for CachedClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CachedClient")
            .field("fail_on_uncached", &self.fail_on_uncached)
            .finish_non_exhaustive()
    }
}
