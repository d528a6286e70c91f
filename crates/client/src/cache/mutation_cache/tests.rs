//! Scenarios for the mutation cache (client-go's `mutation_cache_test.go`), on a plain
//! [`Cache`] standing in for the informer's indexer and a fake clock. The informer-driven
//! scenario is in the integration tests (`tests/it/toolbox.rs`).

use k8s_openapi::api::core::v1::ConfigMap;

use super::*;
use crate::cache::test_util::cm;
use crate::cache::{Cache, CacheOptions, Indexers, Store};
use crate::util::clock::FakeClock;

fn with_uid(obj: Arc<ConfigMap>, uid: &str) -> Arc<ConfigMap> {
    let mut obj = (*obj).clone();
    obj.meta_mut().uid = Some(uid.to_owned());
    Arc::new(obj)
}

fn setup(
    include_adds: bool,
) -> (
    Arc<Cache<ConfigMap>>,
    Arc<FakeClock>,
    MutationCache<ConfigMap>,
) {
    let backing = Arc::new(Cache::new(
        CacheOptions::default().indexers(Indexers::namespace()),
    ));
    let clock = Arc::new(FakeClock::new());
    let options = MutationCacheOptions::default()
        .indexer(backing.clone())
        .include_adds(include_adds)
        .ttl(Duration::from_secs(60))
        .clock(clock.clone());
    let cache = MutationCache::new(backing.clone(), options);
    (backing, clock, cache)
}

fn rv_of(cache: &MutationCache<ConfigMap>, key: &str) -> Option<String> {
    let obj = cache.get_by_key(key).unwrap()?;
    Some(obj.resource_version().to_owned())
}

#[test]
fn a_newer_write_is_read_until_the_informer_catches_up() {
    let (backing, _, cache) = setup(false);
    backing.add(cm("ns/a", "5")).unwrap();
    cache.mutation(cm("ns/a", "7"));
    assert_eq!(rv_of(&cache, "ns/a").as_deref(), Some("7"));
    backing.update(cm("ns/a", "6")).unwrap();
    assert_eq!(
        rv_of(&cache, "ns/a").as_deref(),
        Some("7"),
        "the informer is still behind"
    );
    backing.update(cm("ns/a", "7")).unwrap();
    assert_eq!(rv_of(&cache, "ns/a").as_deref(), Some("7"));
    assert!(cache.is_empty(), "caught up: the overlay is dropped");
    backing.update(cm("ns/a", "8")).unwrap();
    assert_eq!(rv_of(&cache, "ns/a").as_deref(), Some("8"));
}

#[test]
fn an_older_write_than_the_informers_copy_is_ignored() {
    let (backing, _, cache) = setup(false);
    backing.add(cm("ns/a", "9")).unwrap();
    cache.mutation(cm("ns/a", "7"));
    assert_eq!(rv_of(&cache, "ns/a").as_deref(), Some("9"));
    assert!(cache.is_empty());
}

#[test]
fn an_older_write_than_the_recorded_one_is_not_recorded() {
    let (backing, _, cache) = setup(false);
    backing.add(cm("ns/a", "1")).unwrap();
    cache.mutation(cm("ns/a", "7"));
    cache.mutation(cm("ns/a", "6"));
    assert_eq!(rv_of(&cache, "ns/a").as_deref(), Some("7"));
}

#[test]
fn creations_are_returned_only_with_include_adds() {
    let (_, _, without) = setup(false);
    without.mutation(cm("ns/new", "3"));
    assert_eq!(rv_of(&without, "ns/new"), None);

    let (_, _, with) = setup(true);
    with.mutation(cm("ns/new", "3"));
    assert_eq!(rv_of(&with, "ns/new").as_deref(), Some("3"));
    let in_ns = with.by_index("namespace", "ns").unwrap();
    assert_eq!(in_ns.len(), 1);
    assert!(with.by_index("namespace", "other").unwrap().is_empty());
}

#[test]
fn by_index_overlays_the_indexed_objects() {
    let (backing, _, cache) = setup(false);
    backing.add(cm("ns/a", "1")).unwrap();
    backing.add(cm("ns/b", "1")).unwrap();
    cache.mutation(cm("ns/b", "4"));
    let mut rvs: Vec<String> = cache
        .by_index("namespace", "ns")
        .unwrap()
        .iter()
        .map(|obj| format!("{}={}", obj.name(), obj.resource_version()))
        .collect();
    rvs.sort();
    assert_eq!(rvs, ["a=1", "b=4"]);
}

#[test]
fn by_index_without_an_indexer_is_an_error() {
    let backing = Arc::new(Cache::<ConfigMap>::new(CacheOptions::default()));
    let cache = MutationCache::new(backing, MutationCacheOptions::default());
    assert!(matches!(
        cache.by_index("namespace", "ns"),
        Err(Error::NoIndexer)
    ));
}

#[test]
fn a_recorded_write_expires_after_its_ttl() {
    let (backing, clock, cache) = setup(false);
    backing.add(cm("ns/a", "5")).unwrap();
    cache.mutation(cm("ns/a", "7"));
    clock.step(Duration::from_secs(60));
    assert_eq!(rv_of(&cache, "ns/a").as_deref(), Some("7"));
    clock.step(Duration::from_secs(1));
    assert_eq!(rv_of(&cache, "ns/a").as_deref(), Some("5"));
}

#[test]
fn the_least_recently_used_write_is_evicted_beyond_the_size_bound() {
    let backing = Arc::new(Cache::new(CacheOptions::default()));
    for name in ["ns/a", "ns/b", "ns/c"] {
        backing.add(cm(name, "1")).unwrap();
    }
    let cache = MutationCache::new(backing, MutationCacheOptions::default().max_cache_size(2));
    cache.mutation(cm("ns/a", "2"));
    cache.mutation(cm("ns/b", "2"));
    assert_eq!(rv_of(&cache, "ns/a").as_deref(), Some("2")); // a is now more recent than b
    cache.mutation(cm("ns/c", "2"));
    assert_eq!(cache.len(), 2);
    assert_eq!(rv_of(&cache, "ns/b").as_deref(), Some("1"), "b was evicted");
    assert_eq!(rv_of(&cache, "ns/a").as_deref(), Some("2"));
}

#[test]
fn the_informer_delivering_the_write_drops_it() {
    let (backing, _, cache) = setup(false);
    backing.add(cm("ns/a", "5")).unwrap();
    cache.mutation(cm("ns/a", "7"));
    cache.on_add_or_update(&cm("ns/a", "6"));
    assert_eq!(cache.len(), 1);
    cache.on_add_or_update(&cm("ns/a", "7"));
    assert!(cache.is_empty());
}

#[test]
fn a_deletion_hides_late_writes_of_the_same_object_but_not_a_recreation() {
    let (_, _, cache) = setup(true);
    cache.mutation(with_uid(cm("ns/a", "7"), "u1"));
    cache.on_delete(&with_uid(cm("ns/a", "8"), "u1"));
    assert_eq!(rv_of(&cache, "ns/a"), None, "a tombstone is never returned");
    cache.mutation(with_uid(cm("ns/a", "7"), "u1"));
    assert_eq!(rv_of(&cache, "ns/a"), None, "an older write stays hidden");
    cache.mutation(with_uid(cm("ns/a", "9"), "u1"));
    assert_eq!(
        rv_of(&cache, "ns/a"),
        None,
        "a write of the deleted object stays hidden"
    );
    cache.mutation(with_uid(cm("ns/a", "9"), "u2"));
    assert_eq!(
        rv_of(&cache, "ns/a").as_deref(),
        Some("9"),
        "a re-created object shows"
    );
}
