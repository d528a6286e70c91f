//! [`MutationCache`]: the objects a controller just wrote, laid over an informer's cache
//! until the informer catches up (client-go's `mutation_cache.go`).
//!
//! After a controller updates an object, its informer may take a while to deliver the new
//! version; reading the cache in between returns the old one. Record each write's result
//! with [`MutationCache::mutation`]; reads then return whichever is newer by
//! resourceVersion, the informer's copy or the recorded one. Once the informer's copy is
//! at least as new, the recorded one is dropped. Entries also expire after a TTL and the
//! least recently used are evicted beyond a size bound, so a write the informer never
//! sees (for example a deleted object) cannot linger.
//!
//! Resource versions are compared as unsigned integers, as client-go's
//! `NewIntegerResourceVersionMutationCache` does (etcd's versions are); an empty one is 0.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kubeclient_machinery::{Object, meta_namespace_key};

use super::error::{Error, Result};
use super::index::Indexer;
use super::store::KnownObjects;
use crate::sync::lock;
use crate::util::clock::{Clock, RealClock};

/// Options for [`MutationCache`]; the defaults are client-go's.
pub struct MutationCacheOptions<K> {
    indexer: Option<Arc<dyn Indexer<K>>>,
    ttl: Duration,
    include_adds: bool,
    max_cache_size: usize,
    clock: Arc<dyn Clock>,
}

impl<K> Default for MutationCacheOptions<K> {
    fn default() -> Self {
        MutationCacheOptions {
            indexer: None,
            ttl: Duration::from_secs(5 * 60),
            include_adds: false,
            max_cache_size: 100,
            clock: Arc::new(RealClock),
        }
    }
}

impl<K> MutationCacheOptions<K> {
    /// The indexer [`MutationCache::by_index`] reads (default none).
    #[must_use]
    pub fn indexer(mut self, indexer: Arc<dyn Indexer<K>>) -> Self {
        self.indexer = Some(indexer);
        self
    }

    /// How long a recorded write is kept at most (default 5 minutes; zero keeps the
    /// default, as in client-go).
    #[must_use]
    pub fn ttl(mut self, ttl: Duration) -> Self {
        if !ttl.is_zero() {
            self.ttl = ttl;
        }
        self
    }

    /// Whether recorded objects the informer has not seen at all (creations) are returned
    /// too (default false: only updates of known objects are overlaid).
    #[must_use]
    pub fn include_adds(mut self, include_adds: bool) -> Self {
        self.include_adds = include_adds;
        self
    }

    /// How many recorded writes are kept at most, least recently used evicted first
    /// (default 100; zero keeps the default).
    #[must_use]
    pub fn max_cache_size(mut self, max: usize) -> Self {
        if max != 0 {
            self.max_cache_size = max;
        }
        self
    }

    /// The clock that ages entries (default the real clock).
    #[must_use]
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }
}

/// What the cache remembers for a key.
enum Mutated<K> {
    /// An object written by the controller.
    Object(Arc<K>),
    /// A deletion seen by [`MutationCache::on_delete`]: hides older recorded writes.
    Tombstone { uid: Option<String>, rv: u64 },
}

impl<K: Object> Mutated<K> {
    fn rv(&self) -> Option<u64> {
        match self {
            Mutated::Object(obj) => resource_version(&**obj),
            Mutated::Tombstone { rv, .. } => Some(*rv),
        }
    }
}

struct Entry<K> {
    value: Mutated<K>,
    expires: Instant,
    /// Recency stamp for LRU eviction; larger is more recent.
    used: u64,
}

/// An LRU cache whose entries expire (apimachinery's `LRUExpireCache`).
struct LruExpire<K> {
    entries: HashMap<String, Entry<K>>,
    tick: u64,
}

impl<K> LruExpire<K> {
    fn get(&mut self, key: &str, now: Instant) -> Option<&Mutated<K>> {
        let expired = self.entries.get(key)?.expires < now;
        if expired {
            self.entries.remove(key);
            return None;
        }
        self.tick = self.tick.wrapping_add(1);
        let entry = self.entries.get_mut(key)?;
        entry.used = self.tick;
        Some(&entry.value)
    }

    fn add(&mut self, key: String, value: Mutated<K>, expires: Instant, max: usize) {
        self.tick = self.tick.wrapping_add(1);
        let used = self.tick;
        self.entries.insert(
            key,
            Entry {
                value,
                expires,
                used,
            },
        );
        while self.entries.len() > max {
            let oldest = self
                .entries
                .iter()
                .min_by_key(|(_, entry)| entry.used)
                .map(|(key, _)| key.clone());
            match oldest {
                Some(key) => self.entries.remove(&key),
                None => break,
            };
        }
    }
}

/// The informer's objects overlaid with this controller's recent writes (Go's
/// `MutationCache`, integer resource versions).
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kubeclient_machinery::Object;
/// use kubeclient::cache::{Cache, CacheOptions, MutationCache, MutationCacheOptions, Store};
///
/// fn cm(rv: &str) -> Arc<ConfigMap> {
///     let mut cm = ConfigMap::default();
///     cm.meta_mut().name = Some("a".into());
///     cm.meta_mut().resource_version = Some(rv.into());
///     Arc::new(cm)
/// }
///
/// let informer_cache = Arc::new(Cache::new(CacheOptions::default()));
/// informer_cache.add(cm("5")).unwrap();
/// let mutations = MutationCache::new(informer_cache.clone(), MutationCacheOptions::default());
///
/// mutations.mutation(cm("6")); // what our update returned
/// let read = mutations.get_by_key("a").unwrap().unwrap();
/// assert_eq!(read.resource_version(), "6"); // newer than the informer's copy
///
/// informer_cache.update(cm("6")).unwrap(); // the informer catches up
/// assert_eq!(mutations.get_by_key("a").unwrap().unwrap().resource_version(), "6");
/// assert_eq!(mutations.len(), 0); // the overlay is gone
/// ```
#[doc(alias = "NewIntegerResourceVersionMutationCache")]
pub struct MutationCache<K> {
    backing: Arc<dyn KnownObjects<K>>,
    indexer: Option<Arc<dyn Indexer<K>>>,
    ttl: Duration,
    include_adds: bool,
    max_cache_size: usize,
    clock: Arc<dyn Clock>,
    /// Held across a whole read or write, as client-go's lock is.
    mutations: Mutex<LruExpire<K>>,
}

/// The integer resourceVersion of `obj` (empty is 0); `None` when it is not an integer.
fn resource_version<K: Object>(obj: &K) -> Option<u64> {
    let rv = obj.resource_version();
    if rv.is_empty() {
        return Some(0);
    }
    rv.parse().ok()
}

impl<K: Object> MutationCache<K> {
    /// A mutation cache over `backing`, normally the informer's indexer.
    #[must_use]
    pub fn new(backing: Arc<dyn KnownObjects<K>>, options: MutationCacheOptions<K>) -> Self {
        MutationCache {
            backing,
            indexer: options.indexer,
            ttl: options.ttl,
            include_adds: options.include_adds,
            max_cache_size: options.max_cache_size,
            clock: options.clock,
            mutations: Mutex::new(LruExpire {
                entries: HashMap::new(),
                tick: 0,
            }),
        }
    }

    fn expiry(&self) -> Instant {
        let now = self.clock.now();
        now.checked_add(self.ttl).unwrap_or(now)
    }

    /// The newer of `backing` and the recorded write under `key`; a recorded write that is
    /// not newer (or whose version is not an integer) is dropped.
    fn newer(&self, mutations: &mut LruExpire<K>, key: &str, backing: Arc<K>) -> Arc<K> {
        let now = self.clock.now();
        let Some(Mutated::Object(mutated)) = mutations.get(key, now) else {
            return backing;
        };
        match (resource_version(&*backing), resource_version(&**mutated)) {
            (Some(backing_rv), Some(mutated_rv)) if backing_rv < mutated_rv => Arc::clone(mutated),
            _ => {
                mutations.entries.remove(key);
                backing
            }
        }
    }

    /// The object under `key`: the informer's, unless a recorded write is newer. With
    /// `include_adds`, a recorded write of an object the informer has not seen.
    ///
    /// # Errors
    ///
    /// Whatever the backing cache's lookup fails with.
    pub fn get_by_key(&self, key: &str) -> Result<Option<Arc<K>>> {
        let mut mutations = lock(&self.mutations);
        if let Some(backing) = self.backing.get_by_key(key)? {
            return Ok(Some(self.newer(&mut mutations, key, backing)));
        }
        if !self.include_adds {
            return Ok(None);
        }
        match mutations.get(key, self.clock.now()) {
            Some(Mutated::Object(obj)) => Ok(Some(Arc::clone(obj))),
            Some(Mutated::Tombstone { .. }) | None => Ok(None),
        }
    }

    /// The objects whose index `index_name` has `value`, each overlaid as
    /// [`get_by_key`](Self::get_by_key) does; with `include_adds`, plus recorded writes of
    /// unseen objects that match (an index function failing on one skips it).
    ///
    /// # Errors
    ///
    /// [`Error::NoIndexer`] without an indexer; the indexer's errors.
    pub fn by_index(&self, index_name: &str, value: &str) -> Result<Vec<Arc<K>>> {
        let indexer = self.indexer.as_ref().ok_or(Error::NoIndexer)?;
        let mut mutations = lock(&self.mutations);
        let keys = indexer.index_keys(index_name, value)?;
        let mut seen = HashSet::with_capacity(keys.len());
        let mut items = Vec::with_capacity(keys.len());
        for key in keys {
            if let Some(obj) = indexer.get_by_key(&key)? {
                items.push(self.newer(&mut mutations, &key, obj));
            }
            seen.insert(key);
        }
        if self.include_adds {
            let indexers = indexer.get_indexers();
            let Some(index_func) = indexers.get(index_name) else {
                return Ok(items);
            };
            let now = self.clock.now();
            let unseen: Vec<String> = mutations
                .entries
                .keys()
                .filter(|key| !seen.contains(*key))
                .cloned()
                .collect();
            for key in unseen {
                let Some(Mutated::Object(obj)) = mutations.get(&key, now) else {
                    continue;
                };
                match index_func(obj) {
                    Ok(values) if values.iter().any(|v| v == value) => items.push(Arc::clone(obj)),
                    Ok(_) => {}
                    Err(err) => {
                        tracing::debug!(key, error = %err, "index function failed on a mutation cache entry");
                    }
                }
            }
        }
        Ok(items)
    }

    /// Records `obj`, typically what a create or update returned. An older version than
    /// the one recorded is ignored, and so is one hidden by a deletion of the same object.
    pub fn mutation(&self, obj: Arc<K>) {
        let key = meta_namespace_key(&*obj);
        let mut mutations = lock(&self.mutations);
        if let Some(existing) = mutations.get(&key, self.clock.now()) {
            let (new_rv, old_rv) = (resource_version(&*obj), existing.rv());
            if let (Some(new_rv), Some(old_rv)) = (new_rv, old_rv) {
                if new_rv < old_rv {
                    return;
                }
                if let Mutated::Tombstone { uid, .. } = existing {
                    let same_object = uid.is_some() && uid.as_deref() == obj.meta().uid.as_deref();
                    if new_rv == old_rv || same_object {
                        return;
                    }
                }
            }
        }
        mutations.add(
            key,
            Mutated::Object(obj),
            self.expiry(),
            self.max_cache_size,
        );
    }

    /// Tells the cache the informer delivered `obj` (an add or update): a recorded write
    /// that is not newer is dropped.
    pub fn on_add_or_update(&self, obj: &K) {
        let key = meta_namespace_key(obj);
        let mut mutations = lock(&self.mutations);
        let Some(existing) = mutations.get(&key, self.clock.now()) else {
            return;
        };
        if let (Some(seen), Some(recorded)) = (resource_version(obj), existing.rv())
            && seen >= recorded
        {
            mutations.entries.remove(&key);
        }
    }

    /// Tells the cache the informer delivered the deletion of `obj`: a recorded write of
    /// it is replaced by a tombstone that hides older writes of the same object, unless the
    /// recorded write is of a newer object (a re-creation).
    pub fn on_delete(&self, obj: &K) {
        let key = meta_namespace_key(obj);
        let uid = obj.meta().uid.clone();
        let rv = resource_version(obj).unwrap_or(0);
        let mut mutations = lock(&self.mutations);
        if let Some(existing) = mutations.get(&key, self.clock.now()) {
            let same_uid = match existing {
                Mutated::Object(recorded) => uid.is_some() && recorded.meta().uid == uid,
                Mutated::Tombstone { uid: recorded, .. } => uid.is_some() && *recorded == uid,
            };
            let not_newer = existing.rv().is_none_or(|recorded| rv >= recorded);
            if !(not_newer || same_uid) {
                return;
            }
        }
        let tombstone = Mutated::Tombstone { uid, rv };
        mutations.add(key, tombstone, self.expiry(), self.max_cache_size);
    }

    /// How many writes and tombstones are recorded (expired ones included until read).
    #[must_use]
    pub fn len(&self) -> usize {
        lock(&self.mutations).entries.len()
    }

    /// Whether nothing is recorded.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<K> fmt::Debug for MutationCache<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MutationCache")
            .field("ttl", &self.ttl)
            .field("include_adds", &self.include_adds)
            .field("len", &lock(&self.mutations).entries.len())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests;
