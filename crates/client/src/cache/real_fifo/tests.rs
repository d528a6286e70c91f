//! Scenarios for client-go-semantics.md §6 (RealFIFO, non-atomic) and §17.5–17.7.

use std::sync::atomic::{AtomicUsize, Ordering};

use k8s_openapi::api::core::v1::ConfigMap;

use super::*;
use crate::cache::test_util::{ScriptedKnown, cm, drain, pop};
use crate::cache::{Cache, CacheOptions, DeltaType, Error, KnownObjects, Store, TransformFunc};

fn fifo(known: Arc<ScriptedKnown>) -> RealFIFO<ConfigMap> {
    RealFIFO::new(known, RealFifoOptions::default())
}

/// (key, single delta) of everything queued, in pop order, checking invariants first.
fn popped(fifo: &RealFIFO<ConfigMap>) -> Vec<(String, String)> {
    fifo.check_invariants();
    drain(fifo)
        .into_iter()
        .map(|(key, mut deltas, _)| {
            assert_eq!(deltas.len(), 1, "RealFIFO pops one delta at a time");
            (key, deltas.remove(0))
        })
        .collect()
}

fn e(key: &str, delta: &str) -> (String, String) {
    (key.to_owned(), delta.to_owned())
}

fn counting_transformer(calls: Arc<AtomicUsize>) -> TransformFunc<ConfigMap> {
    Arc::new(move |obj: Arc<ConfigMap>| {
        calls.fetch_add(1, Ordering::SeqCst);
        Ok(obj)
    })
}

#[test]
fn every_write_appends_one_delta_and_pops_in_write_order() {
    let fifo = fifo(ScriptedKnown::with(&[]));
    fifo.add(cm("a", "1")).unwrap();
    fifo.add(cm("b", "1")).unwrap();
    fifo.update(cm("a", "2")).unwrap();
    fifo.update(cm("a", "3")).unwrap();
    assert_eq!(
        popped(&fifo),
        [
            e("a", "Added 1"),
            e("b", "Added 1"),
            e("a", "Updated 2"),
            e("a", "Updated 3")
        ]
    );
}

#[test]
fn consecutive_deletions_are_not_deduplicated() {
    let fifo = fifo(ScriptedKnown::with(&[]));
    fifo.delete(cm("a", "1")).unwrap();
    fifo.delete(cm("a", "2")).unwrap();
    assert_eq!(popped(&fifo), [e("a", "Deleted 1"), e("a", "Deleted 2")]);
}

#[test]
fn delete_of_an_unknown_key_is_always_queued() {
    let fifo = fifo(ScriptedKnown::with(&[]));
    fifo.delete(cm("never-seen", "1")).unwrap();
    assert_eq!(popped(&fifo), [e("never-seen", "Deleted 1")]);
}

#[test]
fn a_failing_key_function_queues_nothing() {
    let key_func: KeyFunc<ConfigMap> = Arc::new(|_: &ConfigMap| Err("no key".into()));
    let fifo = RealFIFO::new(
        ScriptedKnown::with(&[]),
        RealFifoOptions::default().key_func(key_func),
    );
    assert!(matches!(fifo.add(cm("a", "1")), Err(Error::Key(_))));
    assert!(matches!(
        fifo.replace(vec![cm("a", "1")], ""),
        Err(Error::Key(_))
    ));
    assert!(fifo.is_empty());
}

#[test]
fn replace_queues_deletions_before_replaced_items() {
    let fifo = fifo(ScriptedKnown::with(&[cm("gone", "1"), cm("kept", "1")]));
    fifo.replace(vec![cm("kept", "2"), cm("new", "1")], "")
        .unwrap();
    assert_eq!(
        popped(&fifo),
        [
            e("gone", "Tombstone 1"),
            e("kept", "Replaced 2"),
            e("new", "Replaced 1")
        ]
    );
}

#[test]
fn replace_tombstone_carries_the_last_queued_object() {
    let fifo = fifo(ScriptedKnown::with(&[cm("a", "0")]));
    fifo.update(cm("a", "1")).unwrap();
    fifo.update(cm("a", "2")).unwrap();
    fifo.replace(vec![], "").unwrap();
    assert_eq!(
        popped(&fifo),
        [
            e("a", "Updated 1"),
            e("a", "Updated 2"),
            e("a", "Tombstone 2")
        ]
    );
}

#[test]
fn replace_skips_a_queued_key_whose_last_delta_is_a_deletion() {
    let fifo = fifo(ScriptedKnown::with(&[cm("a", "1")]));
    fifo.delete(cm("a", "2")).unwrap();
    fifo.replace(vec![], "").unwrap();
    assert_eq!(popped(&fifo), [e("a", "Deleted 2")]);
}

#[test]
fn replace_tombstones_queued_keys_in_order_of_first_appearance() {
    let fifo = fifo(ScriptedKnown::with(&[]));
    fifo.add(cm("b", "1")).unwrap();
    fifo.add(cm("a", "1")).unwrap();
    fifo.update(cm("b", "2")).unwrap();
    fifo.replace(vec![], "").unwrap();
    let tail: Vec<(String, String)> = popped(&fifo).into_iter().skip(3).collect();
    assert_eq!(tail, [e("b", "Tombstone 2"), e("a", "Tombstone 1")]);
}

#[test]
fn a_failed_known_lookup_during_replace_yields_a_tombstone_without_object() {
    let known = ScriptedKnown::with(&[]);
    known.fail("x");
    let fifo = fifo(known);
    fifo.replace(vec![], "").unwrap();
    assert_eq!(popped(&fifo), [e("x", "Tombstone -")]);
}

#[test]
fn delete_then_recreate_survives_a_replace() {
    let fifo = fifo(ScriptedKnown::with(&[]));
    fifo.add(cm("a", "1")).unwrap();
    fifo.delete(cm("a", "1")).unwrap();
    fifo.replace(vec![cm("a", "2")], "").unwrap();
    assert_eq!(
        popped(&fifo),
        [e("a", "Added 1"), e("a", "Deleted 1"), e("a", "Replaced 2")]
    );
}

#[test]
fn initial_population_is_the_whole_queue_after_the_first_replace() {
    let fifo = fifo(ScriptedKnown::with(&[cm("gone", "1")]));
    fifo.replace(vec![cm("a", "1")], "").unwrap();
    fifo.add(cm("later", "1")).unwrap();
    let initial: Vec<bool> = drain(&fifo).into_iter().map(|(_, _, i)| i).collect();
    assert_eq!(initial, [true, true, false]);
    assert!(fifo.has_synced());
}

#[test]
fn has_synced_flips_after_the_last_initial_item_is_processed() {
    let fifo = fifo(ScriptedKnown::with(&[]));
    fifo.replace(vec![cm("a", "1")], "").unwrap();
    assert!(!fifo.has_synced());
    let (_, initial) = pop(&fifo);
    assert!(initial);
    assert!(fifo.has_synced());
}

#[test]
fn an_add_before_the_first_replace_makes_the_queue_synced_immediately() {
    let fifo = fifo(ScriptedKnown::with(&[]));
    fifo.add(cm("a", "1")).unwrap();
    assert!(fifo.has_synced());
}

#[test]
fn resync_queues_sync_for_known_keys_absent_from_the_queue() {
    let fifo = fifo(ScriptedKnown::with(&[cm("a", "1"), cm("b", "1")]));
    fifo.update(cm("a", "2")).unwrap();
    fifo.resync().unwrap();
    assert_eq!(popped(&fifo), [e("a", "Updated 2"), e("b", "Sync 1")]);
}

#[test]
fn resync_skips_known_keys_whose_lookup_fails() {
    let known = ScriptedKnown::with(&[cm("a", "1")]);
    known.fail("x");
    let fifo = fifo(known);
    fifo.resync().unwrap();
    assert_eq!(popped(&fifo), [e("a", "Sync 1")]);
}

#[test]
fn the_transformer_applies_to_writes_and_replace_items_but_not_tombstones_or_resync() {
    let calls = Arc::new(AtomicUsize::new(0));
    let fifo = RealFIFO::new(
        ScriptedKnown::with(&[cm("gone", "1"), cm("k", "1")]),
        RealFifoOptions::default().transformer(counting_transformer(calls.clone())),
    );
    fifo.add(cm("a", "1")).unwrap();
    fifo.update(cm("a", "2")).unwrap();
    fifo.delete(cm("a", "3")).unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    fifo.replace(vec![cm("k", "2")], "").unwrap(); // 1 transform, tombstone for "gone" not
    assert_eq!(calls.load(Ordering::SeqCst), 4);
    drain(&fifo);
    fifo.resync().unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 4);
}

#[test]
fn a_closed_queue_hands_out_what_is_left_then_reports_closed() {
    let fifo = fifo(ScriptedKnown::with(&[]));
    fifo.add(cm("a", "1")).unwrap();
    fifo.close();
    assert_eq!(popped(&fifo), [e("a", "Added 1")]);
    let err = fifo.pop_blocking(&mut |_, _| {}).unwrap_err();
    assert_eq!(err.to_string(), "RealFIFO: manipulating with closed queue");
}

#[test]
fn an_informer_can_run_on_either_queue_through_the_trait() {
    let cache = Arc::new(Cache::<ConfigMap>::new(CacheOptions::default()));
    let queues: Vec<Box<dyn Queue<ConfigMap>>> = vec![
        Box::new(RealFIFO::new(cache.clone(), RealFifoOptions::default())),
        Box::new(crate::cache::DeltaFIFO::new(
            crate::cache::DeltaFifoOptions::default()
                .known_objects(cache.clone())
                .emit_delta_type_replaced(true),
        )),
    ];
    for queue in queues {
        queue.add(cm("a", "1")).unwrap();
        queue.replace(vec![cm("b", "1")], "").unwrap();
        while !queue.is_empty() {
            queue
                .pop_blocking(&mut |deltas, _| crate::cache::test_util::apply(&*cache, deltas))
                .unwrap();
        }
        assert_eq!(cache.list_keys(), ["b"]);
        cache.replace(vec![], "").unwrap();
    }
}

#[test]
fn key_of_gives_a_tombstones_own_key_and_the_key_functions_otherwise() {
    let key_func: crate::cache::KeyFunc<ConfigMap> = Arc::new(|cm: &ConfigMap| {
        Ok(format!(
            "k:{}",
            cm.metadata.name.as_deref().unwrap_or_default()
        ))
    });
    let fifo = RealFIFO::new(
        ScriptedKnown::with(&[cm("ns/gone", "1")]),
        RealFifoOptions::default().key_func(key_func),
    );
    assert_eq!(fifo.key_of(&cm("ns/x", "1")).unwrap(), "k:x");
    fifo.replace(vec![cm("ns/x", "2")], "2").unwrap();
    let mut keys = Vec::new();
    while fifo
        .try_pop(&mut |deltas, _| keys.push(fifo.key_of_deltas(&deltas).unwrap()))
        .unwrap()
    {}
    assert_eq!(
        keys,
        ["ns/gone", "k:x"],
        "the tombstone keeps the known key"
    );
}

// --- Atomic mode (client-go's AtomicFIFO) ---

fn atomic(known: Arc<ScriptedKnown>) -> RealFIFO<ConfigMap> {
    RealFIFO::new(known, RealFifoOptions::default().atomic_events(true))
}

/// Pops the head and returns its only delta.
fn pop_one(fifo: &RealFIFO<ConfigMap>) -> (Delta<ConfigMap>, bool) {
    let (deltas, initial) = pop(fifo);
    let mut deltas = deltas.into_vec();
    assert_eq!(deltas.len(), 1);
    (deltas.remove(0), initial)
}

#[test]
fn an_atomic_replace_is_one_replaced_all_with_the_whole_list_and_no_inferred_deletions() {
    let calls = Arc::new(AtomicUsize::new(0));
    let known = ScriptedKnown::with(&[cm("gone", "1"), cm("kept", "1")]);
    let fifo = RealFIFO::new(
        known,
        RealFifoOptions::default()
            .atomic_events(true)
            .transformer(counting_transformer(calls.clone())),
    );
    fifo.add(cm("queued", "1")).unwrap();
    fifo.replace(vec![cm("kept", "2"), cm("new", "1")], "42")
        .unwrap();
    fifo.check_invariants();
    assert_eq!(
        fifo.len(),
        2,
        "the add, then one entry for the whole relist"
    );
    assert_eq!(
        calls.load(Ordering::SeqCst),
        3,
        "the add and both listed items"
    );

    assert!(matches!(pop_one(&fifo).0, Delta::Added(_)));
    let (delta, _) = pop_one(&fifo);
    assert_eq!(delta.delta_type(), DeltaType::ReplacedAll);
    assert!(delta.object().is_none());
    let Delta::ReplacedAll(info) = delta else {
        panic!("expected ReplacedAll");
    };
    assert_eq!(info.resource_version, "42");
    let listed: Vec<(String, String)> = info
        .objects
        .iter()
        .map(|obj| (obj.name().to_owned(), obj.resource_version().to_owned()))
        .collect();
    assert_eq!(listed, [e("kept", "2"), e("new", "1")]);
}

#[test]
fn a_first_atomic_replace_is_synced_once_popped() {
    let fifo = atomic(ScriptedKnown::with(&[]));
    fifo.replace(vec![cm("a", "1"), cm("b", "1")], "7").unwrap();
    assert!(!fifo.has_synced());
    let (_, initial) = pop_one(&fifo);
    assert!(initial, "the relist is the initial list");
    assert!(fifo.has_synced());
}

#[test]
fn an_atomic_replace_with_a_failing_key_queues_nothing() {
    let fifo = RealFIFO::new(
        ScriptedKnown::with(&[]),
        RealFifoOptions::default()
            .atomic_events(true)
            .key_func(Arc::new(|_: &ConfigMap| Err("no key".into()))),
    );
    assert!(matches!(
        fifo.replace(vec![cm("a", "1")], "1"),
        Err(Error::Key(_))
    ));
    assert!(fifo.is_empty());
    assert!(!fifo.has_synced());
}

#[test]
fn an_atomic_resync_is_one_sync_all() {
    let fifo = atomic(ScriptedKnown::with(&[cm("a", "1"), cm("b", "1")]));
    fifo.resync().unwrap();
    fifo.check_invariants();
    assert_eq!(fifo.len(), 1);
    assert_eq!(pop_one(&fifo).0.delta_type(), DeltaType::SyncAll);
}

#[test]
fn a_consumer_applying_replaced_all_ends_with_exactly_the_list() {
    let cache = Arc::new(Cache::<ConfigMap>::new(CacheOptions::default()));
    cache.add(cm("gone", "1")).unwrap();
    cache.add(cm("kept", "1")).unwrap();
    let fifo = RealFIFO::new(
        cache.clone(),
        RealFifoOptions::default().atomic_events(true),
    );
    fifo.replace(vec![cm("kept", "2"), cm("new", "1")], "9")
        .unwrap();
    fifo.try_pop(&mut |deltas, _| crate::cache::test_util::apply(&*cache, deltas))
        .unwrap();
    let mut keys = cache.list_keys();
    keys.sort();
    assert_eq!(keys, ["kept", "new"]);
    assert_eq!(
        cache.thread_safe_store().last_store_sync_resource_version(),
        "9"
    );
}

/// A relist in parts, as the reflector delivers one.
fn replace_in_parts(fifo: &RealFIFO<ConfigMap>, parts: Vec<Vec<Arc<ConfigMap>>>) {
    let incremental = fifo.incremental_replace().expect("non-atomic: in parts");
    incremental.begin();
    for part in parts {
        incremental.part(part).unwrap();
    }
    incremental.finish("").unwrap();
}

#[test]
fn a_replace_in_parts_queues_the_items_as_they_come_and_the_deletions_last() {
    let fifo = fifo(ScriptedKnown::with(&[cm("gone", "1"), cm("kept", "1")]));
    replace_in_parts(
        &fifo,
        vec![vec![cm("kept", "2")], vec![], vec![cm("new", "1")]],
    );
    assert_eq!(
        popped(&fifo),
        [
            e("kept", "Replaced 2"),
            e("new", "Replaced 1"),
            e("gone", "Tombstone 1")
        ]
    );
}

#[test]
fn a_replace_in_parts_tombstones_queued_keys_no_part_listed() {
    let fifo = fifo(ScriptedKnown::with(&[]));
    fifo.add(cm("queued", "1")).unwrap();
    fifo.delete(cm("deleted", "1")).unwrap();
    replace_in_parts(&fifo, vec![vec![cm("listed", "1")]]);
    assert_eq!(
        popped(&fifo),
        [
            e("queued", "Added 1"),
            e("deleted", "Deleted 1"),
            e("listed", "Replaced 1"),
            e("queued", "Tombstone 1")
        ]
    );
}

#[test]
fn the_first_replace_in_parts_is_the_initial_population_until_it_finishes_and_drains() {
    let fifo = fifo(ScriptedKnown::with(&[]));
    let incremental = fifo.incremental_replace().unwrap();
    incremental.begin();
    incremental.part(vec![cm("a", "1"), cm("b", "1")]).unwrap();
    // Popped before the list has ended: initial, and not synced.
    let (_, initial) = pop(&fifo);
    assert!(initial);
    assert!(!fifo.has_synced());
    incremental.part(vec![cm("c", "1")]).unwrap();
    incremental.finish("").unwrap();
    assert!(!fifo.has_synced(), "b and c are still queued");
    let initial: Vec<bool> = drain(&fifo).into_iter().map(|(_, _, i)| i).collect();
    assert_eq!(initial, [true, true]);
    assert!(fifo.has_synced());
    // A later relist in parts is not initial.
    replace_in_parts(&fifo, vec![vec![cm("a", "2")]]);
    assert!(fifo.has_synced());
    assert!(drain(&fifo).iter().all(|(_, _, initial)| !initial));
}

#[test]
fn an_empty_first_replace_in_parts_syncs_at_once_when_it_finishes() {
    let fifo = fifo(ScriptedKnown::with(&[]));
    let incremental = fifo.incremental_replace().unwrap();
    incremental.begin();
    assert!(!fifo.has_synced());
    incremental.finish("").unwrap();
    assert!(fifo.has_synced());
}

#[test]
fn a_replace_in_parts_never_finished_queues_no_deletion_and_the_next_one_does() {
    let fifo = fifo(ScriptedKnown::with(&[cm("gone", "1")]));
    let incremental = fifo.incremental_replace().unwrap();
    incremental.begin();
    incremental.part(vec![cm("a", "1")]).unwrap();
    // The list failed here; the reflector lists again.
    replace_in_parts(&fifo, vec![vec![cm("a", "1")]]);
    assert_eq!(
        popped(&fifo),
        [
            e("a", "Replaced 1"),
            e("a", "Replaced 1"),
            e("gone", "Tombstone 1")
        ]
    );
}

#[test]
fn a_part_with_an_item_without_a_key_queues_nothing_of_that_part() {
    let key_func: KeyFunc<ConfigMap> = Arc::new(|obj: &ConfigMap| {
        obj.metadata
            .name
            .clone()
            .filter(|name| name != "bad")
            .ok_or_else(|| "no key".into())
    });
    let fifo = RealFIFO::new(
        ScriptedKnown::with(&[]),
        RealFifoOptions::default().key_func(key_func),
    );
    let incremental = fifo.incremental_replace().unwrap();
    incremental.begin();
    assert!(matches!(
        incremental.part(vec![cm("a", "1"), cm("bad", "1")]),
        Err(Error::Key(_))
    ));
    assert!(fifo.is_empty());
}

#[test]
fn an_atomic_queue_takes_no_replace_in_parts() {
    let fifo = RealFIFO::<ConfigMap>::new(
        ScriptedKnown::with(&[]),
        RealFifoOptions::default().atomic_events(true),
    );
    assert!(fifo.incremental_replace().is_none());
}
