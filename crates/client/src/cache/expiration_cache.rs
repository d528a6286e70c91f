//! [`ExpirationCache`]: a [`Store`] whose entries expire (client-go's
//! `expiration_cache.go`), with [`TtlPolicy`] for a fixed time-to-live (`NewTTLStore`).
//!
//! Every entry is stamped with the clock's time when written. Reading an entry (`get`,
//! `get_by_key`, `list`) asks the [`ExpirationPolicy`] and deletes it if it has expired;
//! nothing expires in the background. The clock is injectable, so tests move time by hand
//! with a [`FakeClock`](crate::util::clock::FakeClock).

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kubeclient_machinery::Object;

use super::error::Result;
use super::store::{KeyFunc, KnownObjects, Store, key_of};
use crate::sync::lock;
use crate::util::clock::{Clock, RealClock};

/// An object with the instant it was written (Go's `TimestampedEntry`).
#[derive(Debug)]
pub struct TimestampedEntry<K> {
    /// The stored object.
    pub obj: Arc<K>,
    /// When it was added, updated or replaced.
    pub timestamp: Instant,
}

/// Decides whether an entry has expired (Go's `ExpirationPolicy`).
pub trait ExpirationPolicy<K>: Send + Sync {
    /// Whether `entry` has expired; an expired entry is deleted when read.
    fn is_expired(&self, entry: &TimestampedEntry<K>) -> bool;
}

/// Entries expire once strictly more than `ttl` has passed since they were written; a
/// zero `ttl` never expires (Go's `TTLPolicy`).
#[derive(Clone)]
#[doc(alias = "TTLPolicy")]
pub struct TtlPolicy {
    ttl: Duration,
    clock: Arc<dyn Clock>,
}

impl TtlPolicy {
    /// A policy with time-to-live `ttl`, measured on `clock`.
    #[must_use]
    pub fn new(ttl: Duration, clock: Arc<dyn Clock>) -> Self {
        TtlPolicy { ttl, clock }
    }
}

impl<K> ExpirationPolicy<K> for TtlPolicy {
    fn is_expired(&self, entry: &TimestampedEntry<K>) -> bool {
        !self.ttl.is_zero() && self.clock.since(entry.timestamp) > self.ttl
    }
}

impl fmt::Debug for TtlPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TtlPolicy")
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

/// A [`Store`] whose entries expire when read (Go's `ExpirationCache`).
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kubeclient_machinery::Object;
/// use kubeclient::cache::{ExpirationCache, KnownObjects, Store};
/// use kubeclient::util::clock::FakeClock;
///
/// let clock = Arc::new(FakeClock::new());
/// let store = ExpirationCache::<ConfigMap>::ttl_with_clock(Duration::from_secs(30), clock.clone());
/// let mut cm = ConfigMap::default();
/// cm.meta_mut().name = Some("a".into());
/// store.add(Arc::new(cm)).unwrap();
///
/// clock.step(Duration::from_secs(30));
/// assert!(store.get_by_key("a").unwrap().is_some()); // exactly the TTL: still there
/// clock.step(Duration::from_secs(1));
/// assert!(store.get_by_key("a").unwrap().is_none()); // expired, and now deleted
/// ```
#[doc(
    alias = "NewTTLStore",
    alias = "NewExpirationStore",
    alias = "TTLStore"
)]
pub struct ExpirationCache<K> {
    key_func: Option<KeyFunc<K>>,
    clock: Arc<dyn Clock>,
    policy: Arc<dyn ExpirationPolicy<K>>,
    /// Reads that expire entries and writes are serialized by this one lock.
    entries: Mutex<HashMap<String, TimestampedEntry<K>>>,
}

impl<K: Object> ExpirationCache<K> {
    /// A store whose entries live `ttl` on the real clock (Go's `NewTTLStore`), keyed by
    /// [`meta_namespace_key`](kubeclient_machinery::meta_namespace_key).
    #[must_use]
    pub fn ttl(ttl: Duration) -> Self {
        ExpirationCache::ttl_with_clock(ttl, Arc::new(RealClock))
    }

    /// A store whose entries live `ttl`, stamped and measured on `clock`.
    #[must_use]
    pub fn ttl_with_clock(ttl: Duration, clock: Arc<dyn Clock>) -> Self {
        let policy = Arc::new(TtlPolicy::new(ttl, Arc::clone(&clock)));
        ExpirationCache::new(None, policy, clock)
    }

    /// A store with any expiration policy, stamping entries with `clock` (Go's
    /// `NewExpirationStore`); `key_func` `None` is
    /// [`meta_namespace_key`](kubeclient_machinery::meta_namespace_key).
    #[must_use]
    pub fn new(
        key_func: Option<KeyFunc<K>>,
        policy: Arc<dyn ExpirationPolicy<K>>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        ExpirationCache {
            key_func,
            clock,
            policy,
            entries: Mutex::new(HashMap::new()),
        }
    }

    /// The object under `key` unless it has expired; an expired one is deleted.
    fn get_or_expire(
        &self,
        entries: &mut HashMap<String, TimestampedEntry<K>>,
        key: &str,
    ) -> Option<Arc<K>> {
        let entry = entries.get(key)?;
        if self.policy.is_expired(entry) {
            entries.remove(key);
            return None;
        }
        Some(Arc::clone(&entry.obj))
    }
}

impl<K: Object> KnownObjects<K> for ExpirationCache<K> {
    /// Every key, expired or not (as client-go: listing keys does not expire entries).
    fn list_keys(&self) -> Vec<String> {
        lock(&self.entries).keys().cloned().collect()
    }

    fn get_by_key(&self, key: &str) -> Result<Option<Arc<K>>> {
        Ok(self.get_or_expire(&mut lock(&self.entries), key))
    }
}

impl<K: Object> Store<K> for ExpirationCache<K> {
    fn add(&self, obj: Arc<K>) -> Result<()> {
        let key = key_of(self.key_func.as_ref(), &obj)?;
        let timestamp = self.clock.now();
        lock(&self.entries).insert(key, TimestampedEntry { obj, timestamp });
        Ok(())
    }

    fn update(&self, obj: Arc<K>) -> Result<()> {
        self.add(obj)
    }

    fn delete(&self, obj: &K) -> Result<()> {
        let key = key_of(self.key_func.as_ref(), obj)?;
        self.delete_by_key(&key);
        Ok(())
    }

    fn delete_by_key(&self, key: &str) {
        lock(&self.entries).remove(key);
    }

    fn get(&self, obj: &K) -> Result<Option<Arc<K>>> {
        let key = key_of(self.key_func.as_ref(), obj)?;
        self.get_by_key(&key)
    }

    /// Every unexpired object; expired ones are deleted.
    fn list(&self) -> Vec<Arc<K>> {
        let mut entries = lock(&self.entries);
        let keys: Vec<String> = entries.keys().cloned().collect();
        keys.iter()
            .filter_map(|key| self.get_or_expire(&mut entries, key))
            .collect()
    }

    /// Replaces every entry, all stamped with the same current instant.
    fn replace(&self, list: Vec<Arc<K>>, resource_version: &str) -> Result<()> {
        let _ = resource_version;
        let timestamp = self.clock.now();
        let items = list
            .into_iter()
            .map(|obj| {
                Ok((
                    key_of(self.key_func.as_ref(), &obj)?,
                    TimestampedEntry { obj, timestamp },
                ))
            })
            .collect::<Result<HashMap<_, _>>>()?;
        *lock(&self.entries) = items;
        Ok(())
    }

    fn resync(&self) -> Result<()> {
        Ok(())
    }
}

impl<K> fmt::Debug for ExpirationCache<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExpirationCache")
            .field("len", &lock(&self.entries).len())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests;
