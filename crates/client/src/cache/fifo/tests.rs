//! Scenarios for the plain FIFO (client-go's `fifo.go` and `fifo_test.go`).

use std::sync::atomic::{AtomicUsize, Ordering};

use k8s_openapi::api::core::v1::ConfigMap;

use super::*;
use crate::cache::KnownObjects;
use crate::cache::test_util::cm;

/// Pops without blocking, recording (name, rv, initial); panics when empty.
fn pop_ok(fifo: &FIFO<ConfigMap>) -> (String, String, bool) {
    let mut seen = None;
    let popped = fifo
        .try_pop(&mut |obj, initial| {
            seen = Some(initial);
            let _ = obj;
            Ok(())
        })
        .expect("processing succeeds")
        .expect("an item is queued");
    fifo.check_invariants();
    (
        popped.name().to_owned(),
        popped.resource_version().to_owned(),
        seen.expect("process ran"),
    )
}

#[test]
fn items_pop_in_the_order_their_keys_were_first_added() {
    let fifo = FIFO::new();
    fifo.add(cm("a", "1")).unwrap();
    fifo.add(cm("b", "1")).unwrap();
    fifo.update(cm("a", "2")).unwrap();
    fifo.check_invariants();
    assert_eq!(fifo.len(), 2);
    assert_eq!(pop_ok(&fifo), ("a".into(), "2".into(), false));
    assert_eq!(pop_ok(&fifo), ("b".into(), "1".into(), false));
    assert!(fifo.try_pop(&mut |_, _| Ok(())).unwrap().is_none());
}

#[test]
fn add_if_not_present_keeps_the_queued_object() {
    let fifo = FIFO::new();
    fifo.add(cm("a", "1")).unwrap();
    fifo.add_if_not_present(cm("a", "2")).unwrap();
    fifo.add_if_not_present(cm("b", "1")).unwrap();
    assert_eq!(pop_ok(&fifo).1, "1");
    assert_eq!(pop_ok(&fifo).0, "b");
}

#[test]
fn a_requeue_error_puts_the_item_back_at_the_end_and_reports_the_cause() {
    let fifo = FIFO::new();
    fifo.add(cm("a", "1")).unwrap();
    fifo.add(cm("b", "1")).unwrap();
    let result = fifo.try_pop(&mut |_, _| Err(ProcessError::Requeue("busy".into())));
    match result {
        Err(PopError::Process {
            key,
            source: ProcessError::Requeue(cause),
        }) => {
            assert_eq!(key, "a");
            assert_eq!(cause.to_string(), "busy");
        }
        other => panic!("expected a requeue error, got {other:?}"),
    }
    fifo.check_invariants();
    assert_eq!(pop_ok(&fifo).0, "b");
    assert_eq!(pop_ok(&fifo).0, "a");
}

#[test]
fn a_requeued_item_yields_to_a_later_add_but_not_to_a_later_add_if_not_present() {
    let fifo = FIFO::new();
    fifo.add(cm("a", "1")).unwrap();
    let err = fifo.try_pop(&mut |_, _| Err(ProcessError::Requeue("again".into())));
    assert!(matches!(err, Err(PopError::Process { .. })));
    fifo.add(cm("a", "2")).unwrap();
    fifo.add_if_not_present(cm("a", "3")).unwrap();
    assert_eq!(fifo.len(), 1);
    assert_eq!(pop_ok(&fifo).1, "2");
    assert!(fifo.try_pop(&mut |_, _| Ok(())).unwrap().is_none());
}

#[test]
fn a_failed_item_is_dropped() {
    let fifo = FIFO::new();
    fifo.add(cm("a", "1")).unwrap();
    let result = fifo.try_pop(&mut |_, _| Err(ProcessError::Failed("bad".into())));
    assert!(matches!(
        result,
        Err(PopError::Process {
            source: ProcessError::Failed(_),
            ..
        })
    ));
    assert!(fifo.try_pop(&mut |_, _| Ok(())).unwrap().is_none());
    assert!(fifo.list().is_empty());
}

#[test]
fn a_deleted_item_is_skipped_by_pop() {
    let fifo = FIFO::new();
    fifo.add(cm("a", "1")).unwrap();
    fifo.add(cm("b", "1")).unwrap();
    fifo.delete(&cm("a", "1")).unwrap();
    assert!(fifo.get_by_key("a").is_none());
    assert_eq!(pop_ok(&fifo).0, "b");
    assert!(fifo.try_pop(&mut |_, _| Ok(())).unwrap().is_none());
}

#[test]
fn replace_swaps_the_contents_and_the_first_one_is_the_initial_population() {
    let fifo = FIFO::new();
    assert!(!fifo.has_synced());
    fifo.replace(vec![cm("a", "1"), cm("b", "1")], "10")
        .unwrap();
    assert!(!fifo.has_synced());
    assert_eq!(pop_ok(&fifo), ("a".into(), "1".into(), true));
    assert!(!fifo.has_synced());
    assert_eq!(pop_ok(&fifo), ("b".into(), "1".into(), true));
    assert!(fifo.has_synced());

    fifo.add(cm("x", "1")).unwrap();
    fifo.replace(vec![cm("c", "1")], "11").unwrap();
    assert_eq!(fifo.list_keys(), ["c"]);
    assert_eq!(pop_ok(&fifo), ("c".into(), "1".into(), false));
}

#[test]
fn a_write_before_the_first_replace_means_synced_at_once() {
    let fifo = FIFO::new();
    fifo.add(cm("a", "1")).unwrap();
    assert!(fifo.has_synced());
    fifo.replace(vec![cm("b", "1")], "1").unwrap();
    assert!(fifo.has_synced());
}

#[test]
fn an_empty_first_replace_is_synced() {
    let fifo = FIFO::<ConfigMap>::new();
    fifo.replace(Vec::new(), "1").unwrap();
    assert!(fifo.has_synced());
}

#[test]
fn resync_queues_stored_keys_that_are_not_queued() {
    let fifo = FIFO::new();
    fifo.add(cm("a", "1")).unwrap();
    fifo.add(cm("b", "1")).unwrap();
    // Requeue-less pop of "a" removes it; store "a" again without queueing by requeue.
    assert_eq!(pop_ok(&fifo).0, "a");
    fifo.resync();
    assert_eq!(fifo.len(), 1, "nothing stored is unqueued");
    fifo.add(cm("a", "2")).unwrap();
    fifo.resync();
    assert_eq!(fifo.len(), 2);
    fifo.check_invariants();
}

#[test]
fn get_and_list_see_the_newest_object() {
    let fifo = FIFO::new();
    fifo.add(cm("ns/a", "1")).unwrap();
    fifo.update(cm("ns/a", "2")).unwrap();
    let got = fifo.get(&cm("ns/a", "0")).unwrap().unwrap();
    assert_eq!(got.resource_version(), "2");
    assert_eq!(fifo.list().len(), 1);
    assert_eq!(KnownObjects::list_keys(&fifo), ["ns/a"]);
}

#[test]
fn a_failing_key_function_queues_nothing() {
    let key_func: KeyFunc<ConfigMap> = Arc::new(|_| Err("no key".into()));
    let fifo = FIFO::with_key_func(key_func);
    assert!(matches!(fifo.add(cm("a", "1")), Err(Error::Key(_))));
    assert!(matches!(
        fifo.replace(vec![cm("a", "1")], "1"),
        Err(Error::Key(_))
    ));
    assert!(fifo.is_empty());
    assert!(!fifo.has_synced());
}

#[tokio::test]
async fn close_lets_consumers_drain_then_stops_them() {
    let fifo = FIFO::new();
    fifo.add(cm("a", "1")).unwrap();
    fifo.close();
    assert!(fifo.is_closed());
    let popped = fifo.pop(&mut |_, _| Ok(())).await.unwrap();
    assert_eq!(popped.name(), "a");
    let closed = fifo.pop(&mut |_, _| Ok(())).await;
    assert!(matches!(closed, Err(PopError::Closed(Error::Closed(_)))));
}

#[tokio::test]
async fn a_waiting_pop_wakes_on_add() {
    let fifo = Arc::new(FIFO::<ConfigMap>::new());
    let calls = Arc::new(AtomicUsize::new(0));
    let consumer = {
        let fifo = Arc::clone(&fifo);
        let calls = Arc::clone(&calls);
        tokio::spawn(async move {
            fifo.pop(&mut |_, _| {
                calls.fetch_add(1, Ordering::SeqCst);
                Ok(())
            })
            .await
            .map(|obj| obj.name().to_owned())
        })
    };
    tokio::task::yield_now().await;
    fifo.add(cm("a", "1")).unwrap();
    let popped = tokio::time::timeout(std::time::Duration::from_secs(10), consumer)
        .await
        .expect("the consumer wakes")
        .expect("the task does not panic")
        .expect("the pop succeeds");
    assert_eq!(popped, "a");
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}
