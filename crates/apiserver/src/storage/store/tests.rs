//! Storage scenarios: revisions, no-op writes, history window, compaction, exact-revision
//! lists, watches, concurrent writers.

use std::sync::Arc;

use serde_json::json;

use super::*;

fn configmaps() -> GroupResource {
    GroupResource::new("", "configmaps")
}

fn cm(name: &str, data: &str) -> Value {
    json!({"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": name, "namespace": "ns"}, "data": {"k": data}})
}

fn create(store: &Store, name: &str, data: &str) -> u64 {
    let outcome = store
        .write(&configmaps(), &format!("ns/{name}"), |_| {
            Ok::<_, ()>(Write::Create(cm(name, data)))
        })
        .unwrap();
    outcome.object.unwrap().rv
}

fn update(store: &Store, name: &str, data: &str) -> Option<u64> {
    let outcome = store
        .write(&configmaps(), &format!("ns/{name}"), |_| {
            Ok::<_, ()>(Write::Update(cm(name, data)))
        })
        .unwrap();
    outcome.change.map(|c| c.rv)
}

fn delete(store: &Store, name: &str) -> u64 {
    store
        .write(&configmaps(), &format!("ns/{name}"), |_| {
            Ok::<_, ()>(Write::Delete)
        })
        .unwrap()
        .change
        .unwrap()
        .rv
}

fn everything(_: &StoredObject) -> bool {
    true
}

fn names(items: &[Arc<StoredObject>]) -> Vec<String> {
    items.iter().map(|o| o.name().to_owned()).collect()
}

#[test]
fn every_write_bumps_one_global_revision_and_stamps_the_object() {
    let store = Store::new(100);
    assert_eq!(create(&store, "a", "1"), 1);
    let rv = store
        .write(&GroupResource::new("", "secrets"), "ns/s", |_| {
            Ok::<_, ()>(Write::Create(json!({"metadata": {"name": "s"}})))
        })
        .unwrap()
        .object
        .unwrap()
        .rv;
    assert_eq!(rv, 2, "the revision is shared across resources");
    assert_eq!(update(&store, "a", "2"), Some(3));
    assert_eq!(delete(&store, "a"), 4);
    assert_eq!(store.revision(), 4);
    let stored = store
        .get(&GroupResource::new("", "secrets"), "ns/s")
        .unwrap();
    assert_eq!(stored.value["metadata"]["resourceVersion"], "2");
    assert_eq!(
        serde_json::from_slice::<Value>(&stored.bytes).unwrap(),
        stored.value
    );
}

#[test]
fn a_no_op_update_keeps_the_revision_and_records_nothing() {
    let store = Store::new(100);
    create(&store, "a", "1");
    assert_eq!(update(&store, "a", "1"), None);
    assert_eq!(store.revision(), 1);
    assert_eq!(store.get(&configmaps(), "ns/a").unwrap().rv, 1);
}

#[test]
fn a_failed_decision_writes_nothing() {
    let store = Store::new(100);
    let result = store.write(&configmaps(), "ns/a", |_| Err::<Write, _>("conflict"));
    assert_eq!(result.unwrap_err(), "conflict");
    assert_eq!(store.revision(), 0);
    assert!(store.get(&configmaps(), "ns/a").is_none());
}

#[test]
fn watch_from_a_revision_gets_exactly_the_later_changes() {
    let store = Store::new(100);
    let first = create(&store, "a", "1");
    update(&store, "a", "2");
    create(&store, "b", "1");
    let subscription = store
        .watch(&configmaps(), "", WatchFrom::After(first))
        .unwrap();
    let revisions: Vec<u64> = subscription.backlog.iter().map(|c| c.rv).collect();
    assert_eq!(revisions, [2, 3]);
    assert!(subscription.initial.is_empty());
}

#[test]
fn live_changes_reach_registered_watchers_in_order() {
    let store = Store::new(100);
    let mut subscription = store
        .watch(&configmaps(), "ns/", WatchFrom::Now { initial: false })
        .unwrap();
    create(&store, "a", "1");
    delete(&store, "a");
    let first = subscription.changes.try_recv().unwrap();
    let second = subscription.changes.try_recv().unwrap();
    assert_eq!((first.rv, first.kind), (1, ChangeKind::Created));
    assert_eq!((second.rv, second.kind), (2, ChangeKind::Deleted));
    assert!(second.new.is_none());
    // The DELETED object is the last state, with the deletion's revision.
    let deleted = second.prev_at_rv().unwrap();
    assert_eq!(deleted.value["metadata"]["resourceVersion"], "2");
    assert_eq!(deleted.value["data"]["k"], "1");
    assert!(
        second
            .deleted_line()
            .unwrap()
            .starts_with(b"{\"type\":\"DELETED\",\"object\":{")
    );
}

#[test]
fn history_older_than_the_window_is_expired() {
    let store = Store::new(3);
    for i in 0..5 {
        create(&store, &format!("cm-{i}"), "x");
    }
    // History holds revisions 3, 4, 5: a watch after 2 still sees all of them.
    assert_eq!(
        store
            .watch(&configmaps(), "", WatchFrom::After(2))
            .unwrap()
            .backlog
            .len(),
        3
    );
    assert_eq!(
        store
            .watch(&configmaps(), "", WatchFrom::After(1))
            .unwrap_err(),
        StorageError::Expired {
            requested: 1,
            oldest: 2
        }
    );
}

#[test]
fn compaction_expires_every_earlier_revision() {
    let store = Store::new(100);
    create(&store, "a", "1");
    create(&store, "b", "1");
    store.compact();
    assert!(matches!(
        store.watch(&configmaps(), "", WatchFrom::After(1)),
        Err(StorageError::Expired {
            requested: 1,
            oldest: 2
        })
    ));
    assert!(store.watch(&configmaps(), "", WatchFrom::After(2)).is_ok());
    // Other resources are compacted too (the revision is global).
    assert!(
        store
            .watch(&GroupResource::new("", "secrets"), "", WatchFrom::After(1))
            .is_err()
    );
}

#[test]
fn lists_at_an_older_revision_see_that_revision() {
    let store = Store::new(100);
    create(&store, "a", "1");
    create(&store, "b", "1");
    let snapshot = store.revision();
    update(&store, "a", "2");
    delete(&store, "b");
    create(&store, "c", "1");
    let page = store
        .list(
            &configmaps(),
            &ListRequest {
                at: Some(snapshot),
                prefix: "ns/",
                start_after: None,
                limit: 0,
                filter: &everything,
            },
        )
        .unwrap();
    assert_eq!(names(&page.items), ["a", "b"]);
    assert_eq!(page.items[0].value["data"]["k"], "1");
    assert_eq!(page.revision, snapshot);
    let latest = store
        .list(
            &configmaps(),
            &ListRequest {
                at: None,
                prefix: "ns/",
                start_after: None,
                limit: 0,
                filter: &everything,
            },
        )
        .unwrap();
    assert_eq!(names(&latest.items), ["a", "c"]);
    assert!(matches!(
        store.list(
            &configmaps(),
            &ListRequest {
                at: Some(99),
                prefix: "",
                start_after: None,
                limit: 0,
                filter: &everything
            }
        ),
        Err(StorageError::TooLarge {
            requested: 99,
            current: 5
        })
    ));
}

#[test]
fn pages_continue_after_the_last_key_with_a_remaining_count() {
    let store = Store::new(100);
    for name in ["a", "b", "c", "d", "e"] {
        create(&store, name, "x");
    }
    let request = |start_after| ListRequest {
        at: None,
        prefix: "ns/",
        start_after,
        limit: 2,
        filter: &everything,
    };
    let first = store.list(&configmaps(), &request(None)).unwrap();
    assert_eq!(names(&first.items), ["a", "b"]);
    assert_eq!(first.continue_after.as_deref(), Some("ns/b"));
    assert_eq!(first.remaining, 3);
    let last_key = first.continue_after.unwrap();
    let second = store
        .list(&configmaps(), &request(Some(&last_key)))
        .unwrap();
    assert_eq!(names(&second.items), ["c", "d"]);
    let last_key = second.continue_after.unwrap();
    let third = store
        .list(&configmaps(), &request(Some(&last_key)))
        .unwrap();
    assert_eq!(names(&third.items), ["e"]);
    assert!(third.continue_after.is_none());
}

#[test]
fn prefixes_keep_namespaces_apart() {
    let store = Store::new(100);
    for key in ["ns/a", "ns2/b", "nsx/c"] {
        store
            .write(&configmaps(), key, |_| {
                Ok::<_, ()>(Write::Create(json!({"metadata": {"name": key}})))
            })
            .unwrap();
    }
    assert_eq!(store.snapshot(&configmaps(), "ns/").objects.len(), 1);
    assert_eq!(store.snapshot(&configmaps(), "").objects.len(), 3);
}

#[test]
fn concurrent_writers_get_distinct_increasing_revisions() {
    let store = Arc::new(Store::new(10_000));
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let store = store.clone();
            std::thread::spawn(move || {
                let mut seen = Vec::new();
                for i in 0..250 {
                    let key = format!("ns/t{t}-{i}");
                    let outcome = store
                        .write(&configmaps(), &key, |_| {
                            Ok::<_, ()>(Write::Create(json!({"metadata": {"name": key}})))
                        })
                        .unwrap();
                    seen.push(outcome.object.unwrap().rv);
                }
                seen
            })
        })
        .collect();
    let mut all = Vec::new();
    for thread in threads {
        let seen = thread.join().unwrap();
        assert!(
            seen.windows(2).all(|w| w[0] < w[1]),
            "each writer sees increasing revisions"
        );
        all.extend(seen);
    }
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), 1000, "revisions are distinct");
    assert_eq!(all, (1..=1000).collect::<Vec<u64>>());
}

#[tokio::test]
async fn waiting_for_a_revision_wakes_on_the_write() {
    let store = Arc::new(Store::new(10));
    let waiter = {
        let store = store.clone();
        tokio::spawn(async move { store.wait_for_revision(1, Duration::from_secs(5)).await })
    };
    tokio::task::yield_now().await;
    create(&store, "a", "1");
    assert!(waiter.await.unwrap());
    assert!(!store.wait_for_revision(5, Duration::from_millis(10)).await);
}

#[test]
fn a_store_started_after_a_revision_numbers_past_it_and_refuses_older_watches() {
    let store = Store::new(100).starting_after(1000);
    assert_eq!(store.revision(), 1000);
    assert_eq!(create(&store, "a", "1"), 1001);
    assert!(matches!(
        store.watch(&configmaps(), "", WatchFrom::After(24)),
        Err(StorageError::Expired { .. })
    ));
    assert!(
        store
            .watch(&configmaps(), "", WatchFrom::After(1000))
            .is_ok()
    );
}
