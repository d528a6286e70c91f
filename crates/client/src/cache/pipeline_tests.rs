//! Property tests of the whole cache core: random watch histories and relists pushed
//! through a queue and a pop loop into an indexer always leave the indexer equal to the
//! source's final state (the "Done when" of issue 5).

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::ConfigMap;
use kubeclient_machinery::Object;
use proptest::prelude::*;

use super::test_util::{apply, cm};
use super::{
    Cache, CacheOptions, DeltaFIFO, DeltaFifoOptions, Indexers, Queue, RealFIFO, RealFifoOptions,
    Store,
};

/// One step of the simulated source (apiserver + reflector).
#[derive(Debug, Clone)]
enum Step {
    /// Create, modify or delete key `k` (whichever a real watch could send).
    Touch(u8, bool),
    /// A change the watch missed (seen only by the next relist).
    Hidden(u8, bool),
    /// Relist: `replace` with the source's current state.
    Relist,
    /// The consumer pops `n` entries.
    Pop(u8),
    /// A periodic resync.
    Resync,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (0u8..5, any::<bool>()).prop_map(|(k, d)| Step::Touch(k, d)),
        1 => (0u8..5, any::<bool>()).prop_map(|(k, d)| Step::Hidden(k, d)),
        1 => Just(Step::Relist),
        2 => (1u8..4).prop_map(Step::Pop),
        1 => Just(Step::Resync),
    ]
}

/// Runs `steps` against `queue` feeding `cache`, then relists and drains; returns the
/// source's final state as key → resource version.
fn run(
    steps: &[Step],
    queue: &dyn Queue<ConfigMap>,
    cache: &Cache<ConfigMap>,
) -> BTreeMap<String, String> {
    let mut source: BTreeMap<String, Arc<ConfigMap>> = BTreeMap::new();
    let mut rv = 0u64;
    let pop_n = |n: u8| {
        for _ in 0..n {
            if queue.is_empty() {
                break;
            }
            queue
                .pop_blocking(&mut |deltas, _| apply(cache, deltas))
                .unwrap();
        }
    };
    for step in steps {
        match step {
            Step::Touch(k, delete) | Step::Hidden(k, delete) => {
                let hidden = matches!(step, Step::Hidden(..));
                let key = format!("k{k}");
                rv += 1;
                let obj = cm(&key, &rv.to_string());
                let existed = source.contains_key(&key);
                if *delete && existed {
                    source.remove(&key);
                    if !hidden {
                        queue.delete(obj).unwrap();
                    }
                } else if !*delete {
                    source.insert(key, obj.clone());
                    if !hidden {
                        if existed {
                            queue.update(obj)
                        } else {
                            queue.add(obj)
                        }
                        .unwrap();
                    }
                }
            }
            Step::Relist => queue
                .replace(source.values().cloned().collect(), "")
                .unwrap(),
            Step::Pop(n) => pop_n(*n),
            Step::Resync => queue.resync().unwrap(),
        }
    }
    queue
        .replace(source.values().cloned().collect(), "")
        .unwrap();
    pop_n(u8::MAX);
    while !queue.is_empty() {
        pop_n(u8::MAX);
    }
    source
        .into_iter()
        .map(|(k, v)| (k, v.resource_version().to_owned()))
        .collect()
}

fn cache_state(cache: &Cache<ConfigMap>) -> BTreeMap<String, String> {
    cache
        .list()
        .into_iter()
        .map(|o| {
            (
                kubeclient_machinery::meta_namespace_key(o.as_ref()),
                o.resource_version().to_owned(),
            )
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn delta_fifo_and_indexer_converge_to_the_last_state_of_every_key(
        steps in prop::collection::vec(step(), 0..60),
        emit_replaced in any::<bool>(),
    ) {
        let cache = Arc::new(Cache::new(CacheOptions::default().indexers(Indexers::namespace())));
        let fifo = DeltaFIFO::new(
            DeltaFifoOptions::default()
                .known_objects(cache.clone())
                .emit_delta_type_replaced(emit_replaced),
        );
        let expected = run(&steps, &fifo, &cache);
        fifo.check_invariants();
        cache.thread_safe_store().check_invariants();
        prop_assert_eq!(cache_state(&cache), expected);
    }

    #[test]
    fn real_fifo_and_indexer_converge_to_the_last_state_of_every_key(
        steps in prop::collection::vec(step(), 0..60),
    ) {
        let cache = Arc::new(Cache::new(CacheOptions::default().indexers(Indexers::namespace())));
        let fifo = RealFIFO::new(cache.clone(), RealFifoOptions::default());
        let expected = run(&steps, &fifo, &cache);
        fifo.check_invariants();
        cache.thread_safe_store().check_invariants();
        prop_assert_eq!(cache_state(&cache), expected);
    }
}
