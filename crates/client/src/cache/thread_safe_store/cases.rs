// Scenarios for client-go-semantics.md §2 (ThreadSafeStore) and its index maintenance rules,
// included once per representation by tests.rs (`repr()` is that module's representation).

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use proptest::prelude::*;

use super::super::*;
use crate::cache::index::NAMESPACE_INDEX;
use crate::cache::test_util::{cm, pod};

const BY_NODE: &str = "by-node";
const BY_LABEL: &str = "by-label";

fn by_node(pod: &Pod) -> std::result::Result<Vec<String>, crate::cache::BoxError> {
    Ok(pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.clone())
        .into_iter()
        .collect())
}

fn pods() -> ThreadSafeStore<Pod, SharedOrCompact<Pod>> {
    ThreadSafeStore::with_representation(Indexers::namespace().with(BY_NODE, by_node), repr())
}

/// Indexes a ConfigMap under every label value (multi-valued index).
fn labels_store() -> ThreadSafeStore<ConfigMap, SharedOrCompact<ConfigMap>> {
    ThreadSafeStore::with_representation(Indexers::new().with(BY_LABEL, |cm: &ConfigMap| {
        Ok(cm.labels().values().cloned().collect())
    }), repr())
}

fn labelled(key: &str, values: &[&str]) -> Arc<ConfigMap> {
    let mut obj = (*cm(key, "1")).clone();
    obj.meta_mut().labels = Some(
        values
            .iter()
            .enumerate()
            .map(|(i, v)| (format!("l{i}"), (*v).to_owned()))
            .collect(),
    );
    Arc::new(obj)
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

fn names<K: Object>(objs: Vec<Arc<K>>) -> Vec<String> {
    sorted(objs.iter().map(|o| o.name().to_owned()).collect())
}

#[test]
fn add_stores_the_object_and_indexes_it() {
    let store = pods();
    store.add("ns/a", pod("ns", "a", Some("n1"))).unwrap();
    assert_eq!(store.get("ns/a").unwrap().name(), "a");
    assert_eq!(store.index_keys(BY_NODE, "n1").unwrap(), ["ns/a"]);
    assert_eq!(store.index_keys(NAMESPACE_INDEX, "ns").unwrap(), ["ns/a"]);
    store.check_invariants();
}

#[test]
fn add_of_an_existing_key_overwrites_like_update() {
    let store = pods();
    store.add("ns/a", pod("ns", "a", Some("n1"))).unwrap();
    store.add("ns/a", pod("ns", "a", Some("n2"))).unwrap();
    assert_eq!(store.len(), 1);
    assert!(store.index_keys(BY_NODE, "n1").unwrap().is_empty());
    assert_eq!(store.index_keys(BY_NODE, "n2").unwrap(), ["ns/a"]);
    store.check_invariants();
}

#[test]
fn update_moving_an_object_to_another_value_removes_the_emptied_value() {
    let store = pods();
    store.add("ns/a", pod("ns", "a", Some("n1"))).unwrap();
    store.update("ns/a", pod("ns", "a", Some("n2"))).unwrap();
    assert_eq!(store.list_index_func_values(BY_NODE), ["n2"]);
    store.check_invariants();
}

#[test]
fn update_with_the_same_single_value_keeps_the_index_unchanged() {
    let store = pods();
    store.add("ns/a", pod("ns", "a", Some("n1"))).unwrap();
    store.add("ns/b", pod("ns", "b", Some("n1"))).unwrap();
    store.update("ns/a", pod("ns", "a", Some("n1"))).unwrap();
    assert_eq!(store.index_keys(BY_NODE, "n1").unwrap(), ["ns/a", "ns/b"]);
    store.check_invariants();
}

#[test]
fn update_with_overlapping_multi_values_leaves_the_key_in_exactly_the_new_sets() {
    let store = labels_store();
    store.add("a", labelled("a", &["x", "y"])).unwrap();
    store.update("a", labelled("a", &["y", "z"])).unwrap();
    assert_eq!(sorted(store.list_index_func_values(BY_LABEL)), ["y", "z"]);
    assert_eq!(store.index_keys(BY_LABEL, "y").unwrap(), ["a"]);
    assert!(store.index_keys(BY_LABEL, "x").unwrap().is_empty());
    store.check_invariants();
}

#[test]
fn object_with_zero_index_values_is_stored_but_not_indexed() {
    let store = pods();
    store.add("ns/a", pod("ns", "a", None)).unwrap();
    assert_eq!(store.len(), 1);
    assert!(store.list_index_func_values(BY_NODE).is_empty());
    store.check_invariants();
}

#[test]
fn delete_removes_the_key_from_every_index_and_drops_empty_values() {
    let store = pods();
    store.add("ns/a", pod("ns", "a", Some("n1"))).unwrap();
    store.add("other/b", pod("other", "b", Some("n2"))).unwrap();
    store.delete("ns/a");
    assert!(store.get("ns/a").is_none());
    assert_eq!(store.list_index_func_values(BY_NODE), ["n2"]);
    assert_eq!(store.list_index_func_values(NAMESPACE_INDEX), ["other"]);
    store.check_invariants();
}

#[test]
fn delete_of_a_missing_key_is_a_silent_no_op() {
    let store = pods();
    store.delete("ns/missing");
    assert!(store.is_empty());
}

#[test]
fn get_list_and_list_keys_return_what_was_stored() {
    let store = pods();
    store.add("ns/a", pod("ns", "a", None)).unwrap();
    store.add("ns/b", pod("ns", "b", None)).unwrap();
    assert!(store.get("ns/c").is_none());
    assert_eq!(names(store.list()), ["a", "b"]);
    assert_eq!(sorted(store.list_keys()), ["ns/a", "ns/b"]);
}

#[test]
fn replace_swaps_the_contents_and_rebuilds_every_index() {
    let store = pods();
    store.add("ns/old", pod("ns", "old", Some("n1"))).unwrap();
    store
        .replace(
            vec![
                ("x/a".into(), pod("x", "a", Some("n2"))),
                ("x/b".into(), pod("x", "b", Some("n2"))),
            ],
            "42",
        )
        .unwrap();
    assert_eq!(sorted(store.list_keys()), ["x/a", "x/b"]);
    assert_eq!(store.list_index_func_values(BY_NODE), ["n2"]);
    assert_eq!(store.list_index_func_values(NAMESPACE_INDEX), ["x"]);
    assert_eq!(store.last_store_sync_resource_version(), "42");
    store.check_invariants();
}

#[test]
fn index_returns_the_union_of_objects_sharing_any_value_without_duplicates() {
    let store = labels_store();
    store.add("a", labelled("a", &["x", "y"])).unwrap();
    store.add("b", labelled("b", &["y"])).unwrap();
    store.add("c", labelled("c", &["z"])).unwrap();
    let got = store.index(BY_LABEL, &labelled("q", &["x", "y"])).unwrap();
    assert_eq!(names(got), ["a", "b"]);
    let single = store.index(BY_LABEL, &labelled("q", &["z"])).unwrap();
    assert_eq!(names(single), ["c"]);
}

#[test]
fn index_with_an_unknown_name_is_an_error() {
    let store = pods();
    let err = store.index("nope", &pod("ns", "a", None)).unwrap_err();
    assert!(matches!(err, Error::IndexNotFound(ref n) if n == "nope"));
    assert_eq!(err.to_string(), "index with name nope does not exist");
}

#[test]
fn index_returns_the_index_function_error_for_the_query_object() {
    let store = ThreadSafeStore::with_representation(
        Indexers::<ConfigMap>::new().with("fails", |_: &ConfigMap| Err("boom".into())), repr());
    let err = store.index("fails", &cm("a", "1")).unwrap_err();
    assert!(matches!(err, Error::IndexQuery { .. }));
}

#[test]
fn index_keys_are_sorted_and_an_unknown_value_is_empty() {
    let store = pods();
    for name in ["c", "a", "b"] {
        store
            .add(&format!("ns/{name}"), pod("ns", name, Some("n1")))
            .unwrap();
    }
    assert_eq!(
        store.index_keys(BY_NODE, "n1").unwrap(),
        ["ns/a", "ns/b", "ns/c"]
    );
    assert!(store.index_keys(BY_NODE, "n9").unwrap().is_empty());
    assert!(matches!(
        store.index_keys("nope", "n1"),
        Err(Error::IndexNotFound(_))
    ));
}

#[test]
fn by_index_errors_on_an_unknown_index_and_is_empty_for_an_unknown_value() {
    let store = pods();
    store.add("ns/a", pod("ns", "a", Some("n1"))).unwrap();
    assert_eq!(names(store.by_index(BY_NODE, "n1").unwrap()), ["a"]);
    assert!(store.by_index(BY_NODE, "n9").unwrap().is_empty());
    assert!(matches!(
        store.by_index("nope", "n1"),
        Err(Error::IndexNotFound(_))
    ));
}

#[test]
fn list_index_func_values_of_an_unknown_index_is_empty_without_error() {
    let store = pods();
    store.add("ns/a", pod("ns", "a", Some("n1"))).unwrap();
    assert!(store.list_index_func_values("nope").is_empty());
}

#[test]
fn get_indexers_lists_the_registered_functions() {
    let store = pods();
    let indexers = store.get_indexers();
    assert_eq!(
        indexers.names().collect::<Vec<_>>(),
        [BY_NODE, NAMESPACE_INDEX]
    );
}

#[test]
fn add_indexers_with_a_conflicting_name_adds_nothing() {
    let store = pods();
    let err = store
        .add_indexers(
            Indexers::new()
                .with("fresh", by_node)
                .with(BY_NODE, by_node),
        )
        .unwrap_err();
    assert!(matches!(err, Error::IndexerConflict(ref names) if names == &[BY_NODE]));
    assert_eq!(err.to_string(), r#"indexer conflict: ["by-node"]"#);
    assert_eq!(store.get_indexers().len(), 2);
}

#[test]
fn add_indexers_indexes_existing_items_for_the_new_indexers() {
    let store = ThreadSafeStore::with_representation(Indexers::<Pod>::namespace(), repr());
    store.add("ns/a", pod("ns", "a", Some("n1"))).unwrap();
    store
        .add_indexers(Indexers::new().with(BY_NODE, by_node))
        .unwrap();
    assert_eq!(store.index_keys(BY_NODE, "n1").unwrap(), ["ns/a"]);
    store.add("ns/b", pod("ns", "b", Some("n1"))).unwrap();
    assert_eq!(store.index_keys(BY_NODE, "n1").unwrap(), ["ns/a", "ns/b"]);
    store.check_invariants();
}

#[test]
fn add_indexers_whose_function_fails_on_an_existing_item_adds_nothing() {
    let store = ThreadSafeStore::with_representation(Indexers::<ConfigMap>::namespace(), repr());
    store.add("a", cm("a", "1")).unwrap();
    let err = store
        .add_indexers(Indexers::new().with("fails", |_: &ConfigMap| Err("boom".into())))
        .unwrap_err();
    assert!(matches!(err, Error::IndexWrite { .. }));
    assert_eq!(store.get_indexers().len(), 1);
}

#[test]
fn index_function_failing_on_a_write_is_reported_and_leaves_the_store_unchanged() {
    let store = ThreadSafeStore::with_representation(Indexers::<ConfigMap>::namespace().with(
        "rv",
        |cm: &ConfigMap| match cm.resource_version() {
            "bad" => Err("cannot index".into()),
            rv => Ok(vec![rv.to_owned()]),
        },
    ), repr());
    store.add("a", cm("a", "1")).unwrap();
    let err = store.update("a", cm("a", "bad")).unwrap_err();
    assert!(
        matches!(err, Error::IndexWrite { ref index, ref key, .. } if index == "rv" && key == "a")
    );
    assert_eq!(store.get("a").unwrap().resource_version(), "1");
    assert_eq!(store.index_keys("rv", "1").unwrap(), ["a"]);
    assert!(store.add("b", cm("b", "bad")).is_err());
    assert!(store.get("b").is_none());
    let replaced = store.replace(vec![("c".into(), cm("c", "bad"))], "9");
    assert!(replaced.is_err());
    assert_eq!(store.list_keys(), ["a"]);
    store.check_invariants();
}

#[test]
fn namespace_index_puts_cluster_scoped_objects_under_the_empty_value() {
    let store = ThreadSafeStore::with_representation(Indexers::<ConfigMap>::namespace(), repr());
    store.add("global", cm("global", "1")).unwrap();
    assert_eq!(store.index_keys(NAMESPACE_INDEX, "").unwrap(), ["global"]);
}

#[test]
fn resync_is_a_no_op() {
    let store = pods();
    store.add("ns/a", pod("ns", "a", None)).unwrap();
    store.resync().unwrap();
    assert_eq!(store.len(), 1);
}

#[test]
fn store_resource_version_is_last_write_wins_and_plain_delete_leaves_it() {
    let store = ThreadSafeStore::with_representation(Indexers::<ConfigMap>::new(), repr());
    assert_eq!(store.last_store_sync_resource_version(), "");
    store.add("a", cm("a", "20")).unwrap();
    store.add("b", cm("b", "10")).unwrap();
    assert_eq!(store.last_store_sync_resource_version(), "10");
    store.delete("a");
    assert_eq!(store.last_store_sync_resource_version(), "10");
    store.delete_with_object("b", Some(&cm("b", "30")));
    assert_eq!(store.last_store_sync_resource_version(), "30");
    store.bookmark("35");
    assert_eq!(store.last_store_sync_resource_version(), "35");
}

#[test]
fn a_custom_representation_is_invisible_to_readers() {
    /// Holds each ConfigMap as its JSON bytes.
    struct Json;
    impl Representation<ConfigMap> for Json {
        type Stored = Box<[u8]>;
        fn to_stored(&self, obj: Arc<ConfigMap>) -> Box<[u8]> {
            serde_json::to_vec(&*obj).unwrap().into()
        }
        fn to_object(&self, stored: &Box<[u8]>) -> Option<Arc<ConfigMap>> {
            serde_json::from_slice(stored).ok().map(Arc::new)
        }
    }
    let store = ThreadSafeStore::with_representation(Indexers::namespace(), Json);
    store.add("ns/a", cm("ns/a", "1")).unwrap();
    store.update("ns/a", cm("ns/a", "2")).unwrap();
    assert_eq!(*store.get("ns/a").unwrap(), *cm("ns/a", "2"));
    assert_eq!(store.index_keys(NAMESPACE_INDEX, "ns").unwrap(), ["ns/a"]);
    store.delete("ns/a");
    assert!(store.list_index_func_values(NAMESPACE_INDEX).is_empty());
    store.check_invariants();
}

#[derive(Debug, Clone)]
enum Op {
    Upsert(u8, Vec<u8>),
    Delete(u8),
    Replace(Vec<(u8, Vec<u8>)>),
}

fn op() -> impl Strategy<Value = Op> {
    let values = prop::collection::vec(0u8..4, 0..3);
    prop_oneof![
        (0u8..6, values.clone()).prop_map(|(k, v)| Op::Upsert(k, v)),
        (0u8..6).prop_map(Op::Delete),
        prop::collection::vec((0u8..6, values), 0..4).prop_map(Op::Replace),
    ]
}

proptest! {
    /// Any sequence of writes keeps every index equal to a recomputation from the items.
    #[test]
    fn indexes_always_match_the_stored_objects(ops in prop::collection::vec(op(), 1..40)) {
        let store = labels_store();
        let obj = |k: u8, v: &[u8]| {
            let vals: Vec<String> = v.iter().map(|x| format!("v{x}")).collect();
            let refs: Vec<&str> = vals.iter().map(String::as_str).collect();
            labelled(&format!("k{k}"), &refs)
        };
        for op in ops {
            match op {
                Op::Upsert(k, v) => store.update(&format!("k{k}"), obj(k, &v)).unwrap(),
                Op::Delete(k) => store.delete(&format!("k{k}")),
                Op::Replace(items) => store
                    .replace(items.iter().map(|(k, v)| (format!("k{k}"), obj(*k, v))).collect(), "")
                    .unwrap(),
            }
            store.check_invariants();
        }
        let values: BTreeSet<String> = store.list_index_func_values(BY_LABEL).into_iter().collect();
        for value in values {
            prop_assert!(!store.index_keys(BY_LABEL, &value).unwrap().is_empty());
        }
    }
}
