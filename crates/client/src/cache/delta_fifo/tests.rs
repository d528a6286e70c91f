//! Scenarios for client-go-semantics.md §4 (queue contract) and §5 (DeltaFIFO), and
//! checklist items 3–7 of §17.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;

use super::*;
use crate::cache::test_util::{ScriptedKnown, cm, drain, pop, summary};
use crate::cache::{DeltaType, Error, TransformFunc};

fn fifo() -> DeltaFIFO<ConfigMap> {
    DeltaFIFO::new(DeltaFifoOptions::default())
}

fn fifo_known(known: Arc<ScriptedKnown>) -> DeltaFIFO<ConfigMap> {
    DeltaFIFO::new(DeltaFifoOptions::default().known_objects(known))
}

/// (key, deltas) of everything queued, in pop order, checking invariants first.
fn popped(fifo: &DeltaFIFO<ConfigMap>) -> Vec<(String, Vec<String>)> {
    fifo.check_invariants();
    drain(fifo).into_iter().map(|(k, d, _)| (k, d)).collect()
}

fn entry(key: &str, deltas: &[&str]) -> (String, Vec<String>) {
    (
        key.to_owned(),
        deltas.iter().map(|d| (*d).to_owned()).collect(),
    )
}

/// Sets every object's labels to `{t: "1"}` and counts its calls.
fn marking_transformer(calls: Arc<AtomicUsize>) -> TransformFunc<ConfigMap> {
    Arc::new(move |obj: Arc<ConfigMap>| {
        calls.fetch_add(1, Ordering::SeqCst);
        if obj.resource_version() == "fail" {
            return Err("cannot transform".into());
        }
        let mut obj = Arc::unwrap_or_clone(obj);
        obj.meta_mut().labels = Some([("t".to_owned(), "1".to_owned())].into());
        obj.meta_mut().name = Some("renamed".to_owned());
        Ok(Arc::new(obj))
    })
}

// --- Add / Update and per-key ordering (§5.3, §17.4) ---

#[test]
fn add_then_update_pops_both_deltas_oldest_first() {
    let fifo = fifo();
    fifo.add(cm("ns/a", "1")).unwrap();
    fifo.update(cm("ns/a", "2")).unwrap();
    let (deltas, _) = pop(&fifo);
    assert_eq!(summary(&deltas), ["Added 1", "Updated 2"]);
    assert_eq!(
        deltas.oldest().map(Delta::delta_type),
        Some(DeltaType::Added)
    );
    assert_eq!(
        deltas.newest().map(Delta::delta_type),
        Some(DeltaType::Updated)
    );
}

#[test]
fn consecutive_updates_are_not_coalesced() {
    let fifo = fifo();
    fifo.update(cm("a", "1")).unwrap();
    fifo.update(cm("a", "2")).unwrap();
    assert_eq!(popped(&fifo), [entry("a", &["Updated 1", "Updated 2"])]);
}

#[test]
fn a_key_keeps_its_queue_position_while_it_gains_deltas() {
    let fifo = fifo();
    fifo.add(cm("a", "1")).unwrap();
    fifo.add(cm("b", "1")).unwrap();
    fifo.update(cm("a", "2")).unwrap();
    assert_eq!(
        popped(&fifo),
        [
            entry("a", &["Added 1", "Updated 2"]),
            entry("b", &["Added 1"])
        ]
    );
}

#[test]
fn a_popped_key_goes_to_the_back_when_it_changes_again() {
    let fifo = fifo();
    fifo.add(cm("a", "1")).unwrap();
    fifo.add(cm("b", "1")).unwrap();
    pop(&fifo);
    fifo.update(cm("a", "2")).unwrap();
    assert_eq!(
        popped(&fifo),
        [entry("b", &["Added 1"]), entry("a", &["Updated 2"])]
    );
}

#[test]
fn a_failing_key_function_queues_nothing() {
    let key_func: KeyFunc<ConfigMap> = Arc::new(|cm: &ConfigMap| match cm.name() {
        "bad" => Err("no key".into()),
        name => Ok(name.to_owned()),
    });
    let fifo = DeltaFIFO::new(DeltaFifoOptions::default().key_func(key_func));
    assert!(matches!(fifo.add(cm("bad", "1")), Err(Error::Key(_))));
    assert!(matches!(fifo.delete(cm("bad", "1")), Err(Error::Key(_))));
    let replaced = fifo.replace(vec![cm("good", "1"), cm("bad", "1")], "");
    assert!(matches!(replaced, Err(Error::Key(_))));
    assert!(fifo.is_empty());
}

// --- Deletion dedup (§5.3 step 4, §17.4) ---

#[test]
fn replace_after_delete_emits_one_deleted_final_state_unknown() {
    let known = ScriptedKnown::with(&[cm("a", "1")]);
    let fifo = fifo_known(known);
    fifo.replace(vec![], "").unwrap();
    fifo.replace(vec![], "").unwrap();
    assert_eq!(popped(&fifo), [entry("a", &["Tombstone 1"])]);
}

#[test]
fn a_real_deletion_absorbs_a_following_tombstone() {
    let fifo = fifo();
    fifo.add(cm("a", "1")).unwrap();
    fifo.delete(cm("a", "2")).unwrap();
    fifo.replace(vec![], "").unwrap();
    assert_eq!(popped(&fifo), [entry("a", &["Added 1", "Deleted 2"])]);
}

#[test]
fn a_real_deletion_after_a_tombstone_replaces_it() {
    let fifo = fifo_known(ScriptedKnown::with(&[cm("a", "1")]));
    fifo.replace(vec![], "").unwrap();
    fifo.delete(cm("a", "2")).unwrap();
    assert_eq!(popped(&fifo), [entry("a", &["Deleted 2"])]);
}

#[test]
fn two_real_deletions_keep_the_older_one() {
    let fifo = fifo();
    fifo.add(cm("a", "1")).unwrap();
    fifo.delete(cm("a", "2")).unwrap();
    fifo.delete(cm("a", "3")).unwrap();
    assert_eq!(popped(&fifo), [entry("a", &["Added 1", "Deleted 2"])]);
}

// --- Delete (§5.4, §17.5) ---

#[test]
fn delete_of_an_unqueued_key_is_dropped_without_known_objects() {
    let fifo = fifo();
    fifo.delete(cm("a", "1")).unwrap();
    assert!(fifo.is_empty());
    assert!(
        fifo.has_synced(),
        "a dropped delete still populates the queue"
    );
}

#[test]
fn delete_of_a_key_neither_queued_nor_known_is_dropped() {
    let fifo = fifo_known(ScriptedKnown::with(&[cm("other", "1")]));
    fifo.delete(cm("a", "1")).unwrap();
    assert!(fifo.is_empty());
}

#[test]
fn delete_of_a_known_key_is_queued() {
    let fifo = fifo_known(ScriptedKnown::with(&[cm("a", "1")]));
    fifo.delete(cm("a", "2")).unwrap();
    assert_eq!(popped(&fifo), [entry("a", &["Deleted 2"])]);
}

#[test]
fn delete_is_queued_when_the_known_lookup_fails() {
    let known = ScriptedKnown::with(&[]);
    known.fail("a");
    let fifo = fifo_known(known);
    fifo.delete(cm("a", "1")).unwrap();
    assert_eq!(popped(&fifo), [entry("a", &["Deleted 1"])]);
}

#[test]
fn delete_of_a_queued_key_is_queued_without_known_objects() {
    let fifo = fifo();
    fifo.add(cm("a", "1")).unwrap();
    fifo.delete(cm("a", "1")).unwrap();
    assert_eq!(popped(&fifo), [entry("a", &["Added 1", "Deleted 1"])]);
}

// --- Replace (§5.5, §17.3, §17.6) ---

#[test]
fn replace_emits_sync_by_default() {
    let fifo = fifo();
    fifo.replace(vec![cm("a", "1")], "99").unwrap();
    assert_eq!(popped(&fifo), [entry("a", &["Sync 1"])]);
}

#[test]
fn replace_emits_replaced_when_configured() {
    let fifo = DeltaFIFO::new(DeltaFifoOptions::default().emit_delta_type_replaced(true));
    fifo.replace(vec![cm("a", "1")], "99").unwrap();
    assert_eq!(popped(&fifo), [entry("a", &["Replaced 1"])]);
}

#[test]
fn delete_then_recreate_survives_a_replace() {
    // kubernetes issue 83810: a trailing Deleted must not swallow the relisted object.
    let fifo = fifo();
    fifo.add(cm("a", "1")).unwrap();
    fifo.delete(cm("a", "1")).unwrap();
    fifo.replace(vec![cm("a", "2")], "").unwrap();
    assert_eq!(
        popped(&fifo),
        [entry("a", &["Added 1", "Deleted 1", "Sync 2"])]
    );
}

#[test]
fn tombstone_carries_the_newest_queued_object() {
    let fifo = fifo_known(ScriptedKnown::with(&[cm("a", "0")]));
    fifo.update(cm("a", "1")).unwrap();
    fifo.update(cm("a", "2")).unwrap();
    fifo.replace(vec![], "").unwrap();
    assert_eq!(
        popped(&fifo),
        [entry("a", &["Updated 1", "Updated 2", "Tombstone 2"])]
    );
}

#[test]
fn replace_infers_deletions_only_in_the_queue_without_known_objects() {
    let fifo = fifo();
    fifo.add(cm("a", "1")).unwrap();
    fifo.add(cm("b", "1")).unwrap();
    fifo.replace(vec![cm("b", "2")], "").unwrap();
    assert_eq!(
        popped(&fifo),
        [
            entry("a", &["Added 1", "Tombstone 1"]),
            entry("b", &["Added 1", "Sync 2"])
        ]
    );
}

#[test]
fn replace_infers_deletions_for_known_keys_carrying_the_known_object() {
    let fifo = fifo_known(ScriptedKnown::with(&[cm("a", "1"), cm("b", "1")]));
    fifo.replace(vec![cm("b", "2")], "").unwrap();
    assert_eq!(
        popped(&fifo),
        [entry("b", &["Sync 2"]), entry("a", &["Tombstone 1"])]
    );
}

#[test]
fn replace_emits_updates_before_deletions() {
    let fifo = fifo_known(ScriptedKnown::with(&[cm("gone", "1")]));
    fifo.replace(vec![cm("x", "1"), cm("y", "1")], "").unwrap();
    let keys: Vec<String> = popped(&fifo).into_iter().map(|(k, _)| k).collect();
    assert_eq!(keys, ["x", "y", "gone"]);
}

#[test]
fn a_failed_known_lookup_during_replace_yields_a_tombstone_without_object() {
    let known = ScriptedKnown::with(&[]);
    known.fail("x");
    let fifo = fifo_known(known);
    fifo.replace(vec![], "").unwrap();
    assert_eq!(popped(&fifo), [entry("x", &["Tombstone -"])]);
}

#[test]
fn duplicate_keys_in_a_replace_queue_several_deltas_but_count_once() {
    let fifo = fifo();
    fifo.replace(vec![cm("a", "1"), cm("a", "2")], "").unwrap();
    let (deltas, initial) = pop(&fifo);
    assert_eq!(summary(&deltas), ["Sync 1", "Sync 2"]);
    assert!(initial);
    assert!(fifo.has_synced());
}

// --- Initial population (§4, §17.7) ---

#[test]
fn not_synced_before_any_write() {
    assert!(!fifo().has_synced());
}

#[test]
fn has_synced_waits_for_every_item_of_the_first_replace_and_its_deletions() {
    let fifo = fifo_known(ScriptedKnown::with(&[cm("gone", "1")]));
    fifo.replace(vec![cm("a", "1"), cm("b", "1")], "").unwrap();
    fifo.add(cm("later", "1")).unwrap();
    let got = drain(&fifo);
    let initial: Vec<(&str, bool)> = got.iter().map(|(k, _, i)| (k.as_str(), *i)).collect();
    assert_eq!(
        initial,
        [("a", true), ("b", true), ("gone", true), ("later", false)]
    );
    assert!(fifo.has_synced());
}

#[test]
fn has_synced_flips_only_after_the_last_initial_item_is_processed() {
    let fifo = fifo();
    fifo.replace(vec![cm("a", "1")], "").unwrap();
    let mut synced_during_process = None;
    fifo.try_pop(&mut |_, initial| {
        assert!(initial);
        // The queue lock is held here; has_synced would deadlock, so peek via a flag.
        synced_during_process = Some(initial);
    })
    .unwrap();
    assert_eq!(synced_during_process, Some(true));
    assert!(fifo.has_synced());
}

#[test]
fn an_add_before_the_first_replace_makes_the_queue_synced_immediately() {
    let fifo = fifo();
    fifo.add(cm("a", "1")).unwrap();
    assert!(fifo.has_synced());
    fifo.replace(vec![cm("b", "1")], "").unwrap();
    assert!(drain(&fifo).iter().all(|(_, _, initial)| !initial));
}

#[test]
fn an_empty_first_replace_syncs_immediately() {
    let fifo = fifo();
    fifo.replace(vec![], "").unwrap();
    assert!(fifo.has_synced());
}

#[test]
fn has_synced_latches_across_later_replaces() {
    let fifo = fifo();
    fifo.replace(vec![cm("a", "1")], "").unwrap();
    pop(&fifo);
    fifo.replace(vec![cm("a", "2"), cm("b", "1")], "").unwrap();
    assert!(fifo.has_synced());
    assert!(drain(&fifo).iter().all(|(_, _, initial)| !initial));
}

// --- Resync (§5.6, §17.3) ---

#[test]
fn resync_without_known_objects_is_a_no_op() {
    let fifo = fifo();
    fifo.resync().unwrap();
    assert!(fifo.is_empty());
}

#[test]
fn resync_queues_a_sync_for_each_known_object() {
    let fifo = fifo_known(ScriptedKnown::with(&[cm("a", "1"), cm("b", "1")]));
    fifo.resync().unwrap();
    assert_eq!(
        popped(&fifo),
        [entry("a", &["Sync 1"]), entry("b", &["Sync 1"])]
    );
}

#[test]
fn resync_skips_a_key_with_pending_deltas() {
    let fifo = fifo_known(ScriptedKnown::with(&[cm("a", "1"), cm("b", "1")]));
    fifo.update(cm("a", "2")).unwrap();
    fifo.resync().unwrap();
    assert_eq!(
        popped(&fifo),
        [entry("a", &["Updated 2"]), entry("b", &["Sync 1"])]
    );
}

#[test]
fn resync_skips_known_keys_whose_lookup_fails() {
    let known = ScriptedKnown::with(&[cm("a", "1")]);
    known.fail("x");
    let fifo = fifo_known(known);
    fifo.resync().unwrap();
    assert_eq!(popped(&fifo), [entry("a", &["Sync 1"])]);
}

// --- Transformer (§5.3 step 2) ---

#[test]
fn the_transformer_applies_to_writes_and_relisted_items_even_when_emitted_as_sync() {
    let calls = Arc::new(AtomicUsize::new(0));
    let fifo =
        DeltaFIFO::new(DeltaFifoOptions::default().transformer(marking_transformer(calls.clone())));
    fifo.add(cm("a", "1")).unwrap();
    fifo.update(cm("a", "2")).unwrap();
    fifo.delete(cm("a", "3")).unwrap();
    fifo.replace(vec![cm("b", "1")], "").unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 4);
    let mut all = Vec::new();
    while !fifo.is_empty() {
        all.extend(pop(&fifo).0.into_vec());
    }
    assert!(all.iter().all(|d| d.object().unwrap().name() == "renamed"));
}

#[test]
fn keys_are_computed_on_the_untransformed_object() {
    let calls = Arc::new(AtomicUsize::new(0));
    let fifo = DeltaFIFO::new(DeltaFifoOptions::default().transformer(marking_transformer(calls)));
    fifo.add(cm("ns/a", "1")).unwrap();
    // Queued under "ns/a" (not "ns/renamed"), so this deletion finds the key queued.
    fifo.delete(cm("ns/a", "2")).unwrap();
    assert_eq!(fifo.len(), 1);
    assert_eq!(summary(&pop(&fifo).0), ["Added 1", "Deleted 2"]);
}

#[test]
fn tombstones_and_resync_items_are_never_transformed() {
    let calls = Arc::new(AtomicUsize::new(0));
    let fifo = DeltaFIFO::new(
        DeltaFifoOptions::default()
            .known_objects(ScriptedKnown::with(&[cm("a", "1"), cm("b", "1")]))
            .transformer(marking_transformer(calls.clone())),
    );
    fifo.replace(vec![cm("b", "2")], "").unwrap(); // transforms b only
    pop(&fifo);
    pop(&fifo);
    fifo.resync().unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[test]
fn a_failing_transformer_queues_nothing() {
    let calls = Arc::new(AtomicUsize::new(0));
    let fifo = DeltaFIFO::new(DeltaFifoOptions::default().transformer(marking_transformer(calls)));
    assert!(matches!(
        fifo.add(cm("a", "fail")),
        Err(Error::Transform(_))
    ));
    let replaced = fifo.replace(vec![cm("b", "1"), cm("c", "fail")], "");
    assert!(matches!(replaced, Err(Error::Transform(_))));
    assert!(fifo.is_empty());
}

// --- Pop and close (§4, §5.7) ---

#[test]
fn pop_on_a_closed_empty_queue_reports_closed() {
    let fifo = fifo();
    fifo.close();
    assert!(fifo.is_closed());
    let err = fifo.pop_blocking(&mut |_, _| {}).unwrap_err();
    assert_eq!(err.to_string(), "DeltaFIFO: manipulating with closed queue");
}

#[test]
fn a_closed_queue_still_hands_out_remaining_items_and_accepts_writes() {
    let fifo = fifo();
    fifo.add(cm("a", "1")).unwrap();
    fifo.close();
    fifo.add(cm("b", "1")).unwrap();
    assert_eq!(popped(&fifo).len(), 2);
    assert!(matches!(
        fifo.try_pop(&mut |_, _| {}),
        Err(Error::Closed(_))
    ));
}

#[test]
fn try_pop_on_an_open_empty_queue_returns_false() {
    assert!(
        !fifo()
            .try_pop(&mut |_, _| panic!("nothing to pop"))
            .unwrap()
    );
}

#[test]
fn pop_blocking_waits_for_an_item_from_another_thread() {
    let fifo = Arc::new(fifo());
    let consumer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            let mut got = Vec::new();
            fifo.pop_blocking(&mut |deltas, _| got = summary(&deltas))
                .unwrap();
            got
        })
    };
    fifo.add(cm("a", "1")).unwrap();
    assert_eq!(consumer.join().unwrap(), ["Added 1"]);
}

#[test]
fn pop_blocking_unblocks_when_the_queue_is_closed() {
    let fifo = Arc::new(fifo());
    let consumer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || fifo.pop_blocking(&mut |_, _| {}).is_err())
    };
    fifo.close();
    assert!(consumer.join().unwrap());
}

#[tokio::test]
async fn async_pop_waits_for_an_item_without_holding_the_lock() {
    let fifo = Arc::new(fifo());
    let consumer = {
        let fifo = fifo.clone();
        tokio::spawn(async move {
            let mut got = Vec::new();
            fifo.pop(&mut |deltas, _| got = summary(&deltas))
                .await
                .unwrap();
            got
        })
    };
    tokio::task::yield_now().await;
    fifo.add(cm("a", "1")).unwrap(); // would deadlock if the waiter held the lock
    let got = tokio::time::timeout(Duration::from_secs(10), consumer)
        .await
        .expect("async pop never woke: lost wake-up?")
        .unwrap();
    assert_eq!(got, ["Added 1"]);
}

#[tokio::test]
async fn async_pop_returns_closed_once_closed_and_empty() {
    let fifo = Arc::new(fifo());
    let consumer = {
        let fifo = fifo.clone();
        tokio::spawn(async move { fifo.pop(&mut |_, _| {}).await })
    };
    tokio::task::yield_now().await;
    fifo.close();
    let result = tokio::time::timeout(Duration::from_secs(10), consumer)
        .await
        .expect("async pop ignored close")
        .unwrap();
    assert!(matches!(result, Err(Error::Closed(_))));
}

#[tokio::test]
async fn a_cancelled_async_pop_loses_no_item() {
    let fifo = fifo();
    {
        let mut process = |_: Deltas<ConfigMap>, _: bool| panic!("must not run");
        let pending = tokio::time::timeout(Duration::from_millis(1), fifo.pop(&mut process));
        assert!(pending.await.is_err(), "nothing to pop yet");
    }
    fifo.add(cm("a", "1")).unwrap();
    assert_eq!(popped(&fifo), [entry("a", &["Added 1"])]);
}

#[test]
fn process_runs_under_the_lock_so_the_cache_update_is_atomic_with_the_pop() {
    // While `process` runs, a concurrent replace must wait: it would otherwise see the key
    // neither queued nor known and miss a deletion.
    let known = ScriptedKnown::with(&[]);
    let fifo = Arc::new(fifo_known(known.clone()));
    fifo.add(cm("a", "1")).unwrap();
    let (started_tx, started_rx) = std::sync::mpsc::channel();
    let replacer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            started_rx.recv().unwrap();
            fifo.replace(vec![], "").unwrap();
        })
    };
    fifo.try_pop(&mut |deltas, _| {
        started_tx.send(()).unwrap();
        for _ in 0..1000 {
            std::thread::yield_now(); // give the replacer a chance to race (no sleeping)
        }
        let obj = deltas.newest().and_then(Delta::object).cloned().unwrap();
        known.objects.lock().unwrap().insert("a".into(), obj);
    })
    .unwrap();
    replacer.join().unwrap();
    assert_eq!(popped(&fifo), [entry("a", &["Tombstone 1"])]);
}
