//! Scenarios for client-go-semantics.md §3 (Store / Indexer = ThreadSafeStore + key function).

use k8s_openapi::api::core::v1::ConfigMap;

use super::*;
use crate::cache::index::NAMESPACE_INDEX;
use crate::cache::test_util::cm;

fn failing_key() -> KeyFunc<ConfigMap> {
    Arc::new(|cm: &ConfigMap| match cm.name() {
        "bad" => Err("no key".into()),
        name => Ok(name.to_owned()),
    })
}

/// Drops the labels, and records the key it saw (keys must come from the original).
fn strip_labels() -> TransformFunc<ConfigMap> {
    Arc::new(|obj: Arc<ConfigMap>| {
        if obj.resource_version() == "fail" {
            return Err("cannot transform".into());
        }
        let mut obj = Arc::unwrap_or_clone(obj);
        obj.meta_mut().labels = None;
        Ok(Arc::new(obj))
    })
}

fn labelled(key: &str) -> Arc<ConfigMap> {
    let mut obj = (*cm(key, "1")).clone();
    obj.meta_mut().labels = Some([("a".to_owned(), "b".to_owned())].into());
    Arc::new(obj)
}

#[test]
fn add_keys_the_object_by_namespace_and_name() {
    let cache = Cache::new(CacheOptions::default().indexers(Indexers::namespace()));
    cache.add(cm("ns/a", "1")).unwrap();
    cache.add(cm("b", "1")).unwrap();
    let mut keys = cache.list_keys();
    keys.sort();
    assert_eq!(keys, ["b", "ns/a"]);
    assert_eq!(cache.index_keys(NAMESPACE_INDEX, "ns").unwrap(), ["ns/a"]);
    assert!(cache.get(&cm("ns/a", "other")).unwrap().is_some());
}

#[test]
fn a_failing_key_function_is_a_key_error_and_stores_nothing() {
    let cache = Cache::new(CacheOptions::default().key_func(failing_key()));
    let err = cache.add(cm("bad", "1")).unwrap_err();
    assert!(matches!(err, Error::Key(_)));
    assert_eq!(err.to_string(), "couldn't create key for object");
    assert!(matches!(cache.delete(&cm("bad", "1")), Err(Error::Key(_))));
    assert!(matches!(cache.get(&cm("bad", "1")), Err(Error::Key(_))));
    assert!(cache.is_empty());
}

#[test]
fn the_transformer_runs_on_add_update_and_replace_after_the_key_is_computed() {
    let cache = Cache::new(CacheOptions::default().transformer(strip_labels()));
    cache.add(labelled("ns/a")).unwrap();
    cache.update(labelled("ns/b")).unwrap();
    assert!(
        cache
            .get_by_key("ns/a")
            .unwrap()
            .unwrap()
            .labels()
            .is_empty()
    );
    assert!(
        cache
            .get_by_key("ns/b")
            .unwrap()
            .unwrap()
            .labels()
            .is_empty()
    );
    cache.replace(vec![labelled("ns/c")], "5").unwrap();
    assert!(
        cache
            .get_by_key("ns/c")
            .unwrap()
            .unwrap()
            .labels()
            .is_empty()
    );
}

#[test]
fn a_failing_transformer_is_a_transform_error_and_stores_nothing() {
    let cache = Cache::new(CacheOptions::default().transformer(strip_labels()));
    let err = cache.add(cm("ns/a", "fail")).unwrap_err();
    assert!(matches!(err, Error::Transform(_)));
    assert!(cache.is_empty());
}

#[test]
fn deleting_a_missing_object_is_not_an_error() {
    let cache = Cache::<ConfigMap>::new(CacheOptions::default());
    cache.delete(&cm("ns/a", "1")).unwrap();
    cache.delete_by_key("ns/a");
}

#[test]
fn get_by_key_never_errors() {
    let cache = Cache::<ConfigMap>::new(CacheOptions::default());
    assert!(cache.get_by_key("a/b/c").unwrap().is_none());
}

#[test]
fn replace_with_a_failing_key_leaves_the_store_untouched() {
    let cache = Cache::new(CacheOptions::default().key_func(failing_key()));
    cache.add(cm("a", "1")).unwrap();
    let err = cache
        .replace(vec![cm("b", "1"), cm("bad", "1")], "2")
        .unwrap_err();
    assert!(matches!(err, Error::Key(_)));
    assert_eq!(cache.list_keys(), ["a"]);
}

#[test]
fn replace_swaps_the_contents_and_records_the_resource_version() {
    let cache = Cache::new(CacheOptions::default().indexers(Indexers::namespace()));
    cache.add(cm("ns/a", "1")).unwrap();
    cache.replace(vec![cm("other/b", "7")], "9").unwrap();
    assert_eq!(cache.list_keys(), ["other/b"]);
    assert_eq!(cache.list_index_func_values(NAMESPACE_INDEX), ["other"]);
    assert_eq!(
        cache.thread_safe_store().last_store_sync_resource_version(),
        "9"
    );
}

#[test]
fn delete_records_the_final_objects_resource_version() {
    let cache = Cache::<ConfigMap>::new(CacheOptions::default());
    cache.add(cm("ns/a", "1")).unwrap();
    cache.delete(&cm("ns/a", "2")).unwrap();
    assert_eq!(
        cache.thread_safe_store().last_store_sync_resource_version(),
        "2"
    );
    assert!(cache.is_empty());
}

#[test]
fn cache_indexer_methods_delegate_to_the_thread_safe_store() {
    let cache = Cache::new(CacheOptions::default().indexers(Indexers::namespace()));
    cache.add(cm("ns/a", "1")).unwrap();
    assert_eq!(cache.by_index(NAMESPACE_INDEX, "ns").unwrap().len(), 1);
    assert_eq!(
        cache
            .index(NAMESPACE_INDEX, &cm("ns/z", "1"))
            .unwrap()
            .len(),
        1
    );
    cache
        .add_indexers(Indexers::new().with("rv", |cm: &ConfigMap| {
            Ok(vec![cm.resource_version().to_owned()])
        }))
        .unwrap();
    assert_eq!(cache.get_indexers().len(), 2);
    assert_eq!(cache.index_keys("rv", "1").unwrap(), ["ns/a"]);
    cache.resync().unwrap();
}
