//! Scenarios for the keyed priority queue (client-go's `heap.go` and `heap_test.go`).

use k8s_openapi::api::core::v1::ConfigMap;

use super::*;
use crate::cache::test_util::cm;

/// Ordered by resourceVersion as a number, smallest first.
fn by_rv() -> Heap<ConfigMap> {
    let rv = |cm: &ConfigMap| cm.resource_version().parse::<u64>().unwrap_or(u64::MAX);
    Heap::new(Arc::new(move |a, b| rv(a) < rv(b)))
}

fn drain(heap: &Heap<ConfigMap>) -> Vec<String> {
    let mut popped = Vec::new();
    while let Some(obj) = heap.try_pop().unwrap() {
        heap.check_invariants();
        popped.push(format!("{}={}", obj.name(), obj.resource_version()));
    }
    popped
}

#[test]
fn pop_hands_out_the_smallest_first() {
    let heap = by_rv();
    for (name, rv) in [
        ("e", "5"),
        ("b", "2"),
        ("d", "4"),
        ("a", "1"),
        ("c", "3"),
        ("f", "0"),
    ] {
        heap.add(cm(name, rv)).unwrap();
        heap.check_invariants();
    }
    assert_eq!(drain(&heap), ["f=0", "a=1", "b=2", "c=3", "d=4", "e=5"]);
}

#[test]
fn updating_an_object_moves_it_to_its_new_place() {
    let heap = by_rv();
    heap.bulk_add(vec![cm("a", "1"), cm("b", "2"), cm("c", "3"), cm("d", "4")])
        .unwrap();
    heap.update(cm("a", "9")).unwrap();
    heap.update(cm("d", "0")).unwrap();
    heap.check_invariants();
    assert_eq!(heap.len(), 4);
    assert_eq!(drain(&heap), ["d=0", "b=2", "c=3", "a=9"]);
}

#[test]
fn add_if_not_present_leaves_an_existing_object() {
    let heap = by_rv();
    heap.add(cm("a", "5")).unwrap();
    heap.add_if_not_present(cm("a", "1")).unwrap();
    heap.add_if_not_present(cm("b", "3")).unwrap();
    assert_eq!(drain(&heap), ["b=3", "a=5"]);
}

#[test]
fn delete_removes_from_the_middle_and_reports_a_missing_key() {
    let heap = by_rv();
    for (name, rv) in [("a", "1"), ("b", "2"), ("c", "3"), ("d", "4"), ("e", "5")] {
        heap.add(cm(name, rv)).unwrap();
    }
    heap.delete(&cm("b", "")).unwrap();
    heap.delete(&cm("e", "")).unwrap();
    heap.check_invariants();
    assert!(matches!(heap.delete(&cm("b", "")), Err(Error::NotFound(key)) if key == "b"));
    assert_eq!(
        heap.get_by_key("c")
            .map(|o| o.resource_version().to_owned()),
        Some("3".into())
    );
    assert!(heap.get(&cm("b", "")).unwrap().is_none());
    let mut keys = heap.list_keys();
    keys.sort();
    assert_eq!(keys, ["a", "c", "d"]);
    assert_eq!(drain(&heap), ["a=1", "c=3", "d=4"]);
}

#[test]
fn a_closed_heap_refuses_writes_and_drains() {
    let heap = by_rv();
    heap.add(cm("a", "1")).unwrap();
    heap.close();
    assert!(heap.is_closed());
    assert!(matches!(heap.add(cm("b", "2")), Err(Error::Closed(_))));
    assert!(matches!(
        heap.bulk_add(vec![cm("b", "2")]),
        Err(Error::Closed(_))
    ));
    assert!(matches!(
        heap.add_if_not_present(cm("b", "2")),
        Err(Error::Closed(_))
    ));
    assert_eq!(heap.pop_blocking().unwrap().name(), "a");
    assert!(matches!(heap.try_pop(), Err(Error::Closed(_))));
}

#[test]
fn bulk_add_with_a_failing_key_adds_nothing() {
    let key_func: KeyFunc<ConfigMap> = Arc::new(|cm| {
        if cm.name() == "bad" {
            Err("bad key".into())
        } else {
            Ok(cm.name().to_owned())
        }
    });
    let heap = Heap::with_key_func(key_func, Arc::new(|a, b| a.name() < b.name()));
    let result = heap.bulk_add(vec![cm("a", "1"), cm("bad", "1")]);
    assert!(matches!(result, Err(Error::Key(_))));
    assert!(heap.is_empty());
}

#[tokio::test]
async fn a_waiting_pop_wakes_on_add_and_on_close() {
    let heap = Arc::new(by_rv());
    let waiter = {
        let heap = Arc::clone(&heap);
        tokio::spawn(async move { heap.pop().await.map(|obj| obj.name().to_owned()) })
    };
    tokio::task::yield_now().await;
    heap.add(cm("a", "1")).unwrap();
    let deadline = std::time::Duration::from_secs(10);
    let popped = tokio::time::timeout(deadline, waiter)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(popped.unwrap(), "a");

    let waiter = {
        let heap = Arc::clone(&heap);
        tokio::spawn(async move { heap.pop().await.map(|obj| obj.name().to_owned()) })
    };
    tokio::task::yield_now().await;
    heap.close();
    let closed = tokio::time::timeout(deadline, waiter)
        .await
        .unwrap()
        .unwrap();
    assert!(matches!(closed, Err(Error::Closed(_))));
}

proptest::proptest! {
    #[test]
    fn any_sequence_of_writes_pops_in_order(ops in proptest::collection::vec((0u8..8, 0u64..50, 0u8..3), 0..60)) {
        let heap = by_rv();
        let mut model: HashMap<String, u64> = HashMap::new();
        for (name, rv, op) in ops {
            let name = format!("k{name}");
            match op {
                0 => { heap.add(cm(&name, &rv.to_string())).unwrap(); model.insert(name, rv); }
                1 => {
                    heap.add_if_not_present(cm(&name, &rv.to_string())).unwrap();
                    model.entry(name).or_insert(rv);
                }
                _ => { let _ = heap.delete(&cm(&name, "")); model.remove(&name); }
            }
            heap.check_invariants();
        }
        let mut expected: Vec<u64> = model.values().copied().collect();
        expected.sort_unstable();
        let popped: Vec<u64> = std::iter::from_fn(|| heap.try_pop().unwrap())
            .map(|obj| obj.resource_version().parse().unwrap())
            .collect();
        proptest::prop_assert_eq!(popped, expected);
    }
}
