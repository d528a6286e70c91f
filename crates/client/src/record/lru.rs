//! A small least-recently-used map (the correlator's caches are bounded, as client-go's
//! `groupcache/lru`).

use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;

/// At most `capacity` entries; inserting past it evicts the least recently used.
///
/// Invariant: `order` holds exactly one tick per entry of `entries`, the entry's last use.
pub(super) struct Lru<K, V> {
    capacity: usize,
    tick: u64,
    entries: HashMap<K, (V, u64)>,
    order: BTreeMap<u64, K>,
}

impl<K: Clone + Eq + Hash, V> Lru<K, V> {
    pub(super) fn new(capacity: usize) -> Self {
        Lru {
            capacity: capacity.max(1),
            tick: 0,
            entries: HashMap::new(),
            order: BTreeMap::new(),
        }
    }

    fn next_tick(&mut self) -> u64 {
        self.tick = self.tick.wrapping_add(1);
        self.tick
    }

    /// The entry, marked as used.
    pub(super) fn get_mut(&mut self, key: &K) -> Option<&mut V> {
        let tick = self.next_tick();
        let (_, last) = self.entries.get(key)?;
        self.order.remove(last);
        self.order.insert(tick, key.clone());
        self.entries.get_mut(key).map(|(value, last)| {
            *last = tick;
            value
        })
    }

    /// Inserts or replaces `key`, evicting the least recently used entry when full.
    pub(super) fn insert(&mut self, key: K, value: V) {
        let tick = self.next_tick();
        if let Some((_, last)) = self.entries.remove(&key) {
            self.order.remove(&last);
        }
        while self.entries.len() >= self.capacity {
            let Some((_, oldest)) = self.order.pop_first() else {
                break;
            };
            self.entries.remove(&oldest);
        }
        self.order.insert(tick, key.clone());
        self.entries.insert(key, (value, tick));
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_least_recently_used_entry_is_evicted_first() {
        let mut lru = Lru::new(2);
        lru.insert("a", 1);
        lru.insert("b", 2);
        assert_eq!(lru.get_mut(&"a"), Some(&mut 1));
        lru.insert("c", 3);
        assert_eq!(lru.len(), 2);
        assert!(lru.get_mut(&"b").is_none(), "b was the least recently used");
        assert!(lru.get_mut(&"a").is_some() && lru.get_mut(&"c").is_some());
    }
}
