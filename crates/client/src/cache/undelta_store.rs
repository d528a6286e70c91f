//! [`UndeltaStore`]: a [`Store`] that pushes its whole state after every change (client-go's
//! `undelta_store.go`), for consumers that want snapshots rather than deltas.

use std::fmt;
use std::sync::Arc;

use kubeclient_machinery::Object;

use super::error::Result;
use super::store::{Cache, CacheOptions, KnownObjects, Store};

/// Receives the store's full contents after a change (Go's `PushFunc`).
pub type PushFunc<K> = Arc<dyn Fn(Vec<Arc<K>>) + Send + Sync>;

/// A [`Store`] that calls a [`PushFunc`] with every object after each successful `add`,
/// `update`, `delete` and `replace` (Go's `UndeltaStore`). `resync` pushes nothing.
///
/// As in client-go, the push runs after the write with no lock held, so concurrent writers
/// may push snapshots out of order; each snapshot is a consistent state of the store.
///
/// # Examples
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kubeclient_machinery::Object;
/// use kubeclient::cache::{Store, UndeltaStore};
///
/// let sizes = Arc::new(Mutex::new(Vec::new()));
/// let seen = sizes.clone();
/// let store = UndeltaStore::<ConfigMap>::new(Arc::new(move |all| seen.lock().unwrap().push(all.len())));
/// let mut cm = ConfigMap::default();
/// cm.meta_mut().name = Some("a".into());
/// store.add(Arc::new(cm.clone())).unwrap();
/// store.delete(&cm).unwrap();
/// assert_eq!(*sizes.lock().unwrap(), [1, 0]);
/// ```
#[doc(alias = "NewUndeltaStore")]
pub struct UndeltaStore<K: Object> {
    store: Cache<K>,
    push: PushFunc<K>,
}

impl<K: Object> UndeltaStore<K> {
    /// An empty store keyed by
    /// [`meta_namespace_key`](kubeclient_machinery::meta_namespace_key).
    #[must_use]
    pub fn new(push: PushFunc<K>) -> Self {
        UndeltaStore::with_options(push, CacheOptions::default())
    }

    /// An empty store over a [`Cache`] built with `options`.
    #[must_use]
    pub fn with_options(push: PushFunc<K>, options: CacheOptions<K>) -> Self {
        UndeltaStore {
            store: Cache::new(options),
            push,
        }
    }

    fn pushed(&self, written: Result<()>) -> Result<()> {
        written?;
        (self.push)(self.store.list());
        Ok(())
    }
}

impl<K: Object> KnownObjects<K> for UndeltaStore<K> {
    fn list_keys(&self) -> Vec<String> {
        self.store.list_keys()
    }

    fn get_by_key(&self, key: &str) -> Result<Option<Arc<K>>> {
        self.store.get_by_key(key)
    }
}

impl<K: Object> Store<K> for UndeltaStore<K> {
    fn add(&self, obj: Arc<K>) -> Result<()> {
        self.pushed(self.store.add(obj))
    }

    fn update(&self, obj: Arc<K>) -> Result<()> {
        self.pushed(self.store.update(obj))
    }

    fn delete(&self, obj: &K) -> Result<()> {
        self.pushed(self.store.delete(obj))
    }

    fn delete_by_key(&self, key: &str) {
        self.store.delete_by_key(key);
        (self.push)(self.store.list());
    }

    fn get(&self, obj: &K) -> Result<Option<Arc<K>>> {
        self.store.get(obj)
    }

    fn list(&self) -> Vec<Arc<K>> {
        self.store.list()
    }

    fn replace(&self, list: Vec<Arc<K>>, resource_version: &str) -> Result<()> {
        self.pushed(self.store.replace(list, resource_version))
    }

    fn resync(&self) -> Result<()> {
        self.store.resync()
    }
}

impl<K: Object> fmt::Debug for UndeltaStore<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UndeltaStore")
            .field("store", &self.store)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::sync::Mutex;

    use k8s_openapi::api::core::v1::ConfigMap;

    use super::*;
    use crate::cache::test_util::cm;

    /// Every pushed snapshot, each as a set of `name=rv`.
    type Pushes = Arc<Mutex<Vec<BTreeSet<String>>>>;

    /// A store recording each pushed snapshot.
    fn recording() -> (UndeltaStore<ConfigMap>, Pushes) {
        let pushes = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&pushes);
        let push: PushFunc<ConfigMap> = Arc::new(move |all| {
            let snapshot = all
                .iter()
                .map(|obj| format!("{}={}", obj.name(), obj.resource_version()))
                .collect();
            crate::sync::lock(&seen).push(snapshot);
        });
        (UndeltaStore::new(push), pushes)
    }

    fn set(items: &[&str]) -> BTreeSet<String> {
        items.iter().map(|item| (*item).to_owned()).collect()
    }

    #[test]
    fn every_write_pushes_the_full_state() {
        let (store, pushes) = recording();
        store.add(cm("a", "1")).unwrap();
        store.add(cm("b", "1")).unwrap();
        store.update(cm("a", "2")).unwrap();
        store.delete(&cm("b", "1")).unwrap();
        store.replace(vec![cm("c", "1")], "9").unwrap();
        store.delete_by_key("c");
        let pushes = crate::sync::lock(&pushes).clone();
        assert_eq!(
            pushes,
            [
                set(&["a=1"]),
                set(&["a=1", "b=1"]),
                set(&["a=2", "b=1"]),
                set(&["a=2"]),
                set(&["c=1"]),
                set(&[]),
            ]
        );
    }

    #[test]
    fn a_failed_write_or_a_resync_pushes_nothing() {
        let pushes = Arc::new(Mutex::new(0));
        let count = Arc::clone(&pushes);
        let push: PushFunc<ConfigMap> = Arc::new(move |_| *crate::sync::lock(&count) += 1);
        let key_func: crate::cache::KeyFunc<ConfigMap> = Arc::new(|_| Err("no key".into()));
        let store = UndeltaStore::with_options(push, CacheOptions::default().key_func(key_func));
        assert!(store.add(cm("a", "1")).is_err());
        store.resync().unwrap();
        assert_eq!(*crate::sync::lock(&pushes), 0);
    }
}
