//! Fake-clock scenarios for the expiring store (client-go's `expiration_cache_test.go`).

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::ConfigMap;

use super::*;
use crate::cache::test_util::cm;
use crate::util::clock::FakeClock;

const TTL: Duration = Duration::from_secs(60);

fn store() -> (Arc<FakeClock>, ExpirationCache<ConfigMap>) {
    let clock = Arc::new(FakeClock::new());
    let store = ExpirationCache::ttl_with_clock(TTL, clock.clone());
    (clock, store)
}

fn names(objs: &[Arc<ConfigMap>]) -> BTreeSet<String> {
    objs.iter().map(|obj| obj.name().to_owned()).collect()
}

#[test]
fn an_entry_lives_exactly_its_ttl_and_is_deleted_when_read_after() {
    let (clock, store) = store();
    store.add(cm("a", "1")).unwrap();
    clock.step(TTL);
    assert!(store.get(&cm("a", "")).unwrap().is_some());
    clock.step(Duration::from_nanos(1));
    assert!(store.get(&cm("a", "")).unwrap().is_none());
    assert!(
        store.list_keys().is_empty(),
        "the expired entry was deleted by the read"
    );
}

#[test]
fn list_returns_only_live_entries_and_deletes_the_expired() {
    let (clock, store) = store();
    store.add(cm("old", "1")).unwrap();
    clock.step(Duration::from_secs(40));
    store.add(cm("new", "1")).unwrap();
    clock.step(Duration::from_secs(30));
    // "old" is 70s old, "new" 30s.
    assert_eq!(store.list_keys().len(), 2, "listing keys expires nothing");
    assert_eq!(names(&store.list()), BTreeSet::from(["new".to_owned()]));
    assert_eq!(store.list_keys(), ["new"]);
}

#[test]
fn an_update_restarts_the_ttl() {
    let (clock, store) = store();
    store.add(cm("a", "1")).unwrap();
    clock.step(Duration::from_secs(50));
    store.update(cm("a", "2")).unwrap();
    clock.step(Duration::from_secs(50));
    let got = store.get_by_key("a").unwrap().unwrap();
    assert_eq!(got.resource_version(), "2");
}

#[test]
fn replace_stamps_every_entry_now_and_drops_the_rest() {
    let (clock, store) = store();
    store.add(cm("gone", "1")).unwrap();
    clock.step(Duration::from_secs(59));
    store
        .replace(vec![cm("a", "1"), cm("b", "1")], "7")
        .unwrap();
    clock.step(Duration::from_secs(59));
    assert_eq!(
        names(&store.list()),
        BTreeSet::from(["a".to_owned(), "b".to_owned()])
    );
    clock.step(Duration::from_secs(2));
    assert!(store.list().is_empty());
}

#[test]
fn a_zero_ttl_never_expires() {
    let clock = Arc::new(FakeClock::new());
    let store = ExpirationCache::ttl_with_clock(Duration::ZERO, clock.clone());
    store.add(cm("a", "1")).unwrap();
    clock.step(Duration::from_secs(1_000_000));
    assert!(store.get_by_key("a").unwrap().is_some());
}

#[test]
fn a_custom_policy_decides_expiry() {
    struct ExpireOddVersions;
    impl ExpirationPolicy<ConfigMap> for ExpireOddVersions {
        fn is_expired(&self, entry: &TimestampedEntry<ConfigMap>) -> bool {
            entry
                .obj
                .resource_version()
                .parse::<u64>()
                .is_ok_and(|rv| rv % 2 == 1)
        }
    }
    let store = ExpirationCache::new(
        None,
        Arc::new(ExpireOddVersions),
        Arc::new(FakeClock::new()),
    );
    store.add(cm("odd", "1")).unwrap();
    store.add(cm("even", "2")).unwrap();
    assert_eq!(names(&store.list()), BTreeSet::from(["even".to_owned()]));
    store.delete(&cm("even", "")).unwrap();
    assert!(store.list().is_empty());
}
