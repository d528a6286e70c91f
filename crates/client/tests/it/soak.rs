//! The soak: seeded random schedules of writes and faults against the embedded server, with
//! handlers that are fast, slow, added late and removed, then checks at quiescence that
//! every cache equals the server, every handler saw a consistent story, and every
//! registration reported `has_synced` only after handling its initial adds. Odd seeds run
//! with a compact cache, even seeds with shared objects.
//!
//! CI runs a few seeds. The full run, and the replay of one failing seed:
//!
//! ```text
//! KUBECLIENT_SOAK_SEEDS=1000 cargo test --release -p kubeclient --test it soak -- --nocapture
//! KUBECLIENT_SOAK_SEEDS=1 KUBECLIENT_SOAK_FIRST_SEED=417 cargo test -p kubeclient --test it soak -- --nocapture
//! ```

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kubeclient::cache::{
    ApiListWatch, Backoff, EventHandlerRegistration, InformerOptions, ReflectorOptions,
    ResourceEventHandler, SharedIndexInformer,
};
use kubeclient::machinery::{DeletedObject, Object, meta_namespace_key};
use kubeclient::{Api, CancellationToken, Client, DeleteParams, Patch, PatchParams};
use kubeclient_apiserver::{ApiServer, Fault};
use serde_json::json;

use crate::support::{cache_state, config_of, server_state};

const WAIT: Duration = Duration::from_secs(60);

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// One handler's view: the resourceVersion it last saw per key, and what broke the story.
#[derive(Default)]
struct View {
    seen: Mutex<HashMap<String, String>>,
    violations: Mutex<Vec<String>>,
    initial_adds: AtomicUsize,
    /// Initial adds handled when the registration first said it had synced.
    initial_adds_at_sync: Mutex<Option<usize>>,
    delay_us: u64,
}

struct Recorder(Arc<View>);

impl Recorder {
    fn pause(&self) {
        if self.0.delay_us > 0 {
            std::thread::sleep(Duration::from_micros(fastrand::u64(0..=self.0.delay_us)));
        }
    }

    fn violation(&self, text: String) {
        self.0.violations.lock().unwrap().push(text);
    }
}

impl ResourceEventHandler<ConfigMap> for Recorder {
    fn on_add(&self, obj: &Arc<ConfigMap>, initial: bool) {
        self.pause();
        let key = meta_namespace_key(obj.as_ref());
        if initial {
            self.0.initial_adds.fetch_add(1, Ordering::SeqCst);
        }
        let previous = self
            .0
            .seen
            .lock()
            .unwrap()
            .insert(key.clone(), obj.resource_version().to_owned());
        if previous.is_some() {
            self.violation(format!("add of {key}, which it already had"));
        }
    }

    fn on_update(&self, old: &Arc<ConfigMap>, new: &Arc<ConfigMap>) {
        self.pause();
        let key = meta_namespace_key(new.as_ref());
        let mut seen = self.0.seen.lock().unwrap();
        match seen.get(&key) {
            None => self.violation(format!("update of {key} before its add")),
            Some(last) if last != old.resource_version() => self.violation(format!(
                "update of {key}: old version {} but it last saw {last}",
                old.resource_version()
            )),
            Some(_) => {}
        }
        seen.insert(key, new.resource_version().to_owned());
    }

    fn on_delete(&self, obj: &DeletedObject<ConfigMap>) {
        self.pause();
        let key = obj.key();
        if self.0.seen.lock().unwrap().remove(&key).is_none() {
            self.violation(format!("delete of {key}, which it did not have"));
        }
    }
}

/// Watches a registration's `has_synced` and notes how many initial adds were handled
/// when it first turned true.
fn watch_sync(registration: EventHandlerRegistration, view: Arc<View>, stop: CancellationToken) {
    tokio::spawn(async move {
        while !stop.is_cancelled() {
            if registration.has_synced() {
                let handled = view.initial_adds.load(Ordering::SeqCst);
                *view.initial_adds_at_sync.lock().unwrap() = Some(handled);
                return;
            }
            tokio::time::sleep(Duration::from_micros(300)).await;
        }
    });
}

/// Registers a recording handler that sleeps up to `delay_us` per notification, and
/// watches its `has_synced`.
fn register(
    informer: &SharedIndexInformer<ConfigMap>,
    delay_us: u64,
    stop: &CancellationToken,
) -> Result<(Arc<View>, EventHandlerRegistration), String> {
    let view = Arc::new(View {
        delay_us,
        ..View::default()
    });
    let registration = informer
        .add_event_handler(Recorder(view.clone()))
        .map_err(|err| err.to_string())?;
    watch_sync(registration.clone(), view.clone(), stop.clone());
    Ok((view, registration))
}

/// What one seed did.
#[derive(Default)]
struct Tally {
    writes: usize,
    faults: BTreeMap<&'static str, usize>,
}

async fn soak_one(seed: u64) -> Result<Tally, String> {
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut server = ApiServer::builder()
        .history_window(40)
        .start()
        .await
        .map_err(|err| err.to_string())?;
    let address = server.address();
    let client = Client::new(config_of(&server))
        .await
        .map_err(|err| err.to_string())?;
    let api = Api::<ConfigMap>::namespaced(client.clone(), "default");
    let mut tally = Tally::default();
    let apply = |name: String, step: usize| {
        let api = api.clone();
        async move {
            let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"step": step.to_string()}});
            api.patch(
                &name,
                &PatchParams::apply("soak").force(),
                &Patch::Apply(body),
            )
            .await
        }
    };
    for i in 0..rng.usize(0..40) {
        let _ = apply(format!("cm-{i}"), 0).await;
    }
    let options = InformerOptions {
        name: format!("soak-{seed}"),
        reflector: ReflectorOptions {
            use_watch_list: rng.bool(),
            backoff: Backoff::new(
                Duration::from_millis(10),
                Duration::from_millis(200),
                Duration::from_secs(60),
            ),
            ..ReflectorOptions::default()
        },
        ..InformerOptions::default()
    };
    // Odd seeds hold the cache compact, even seeds shared: both pass the same checks.
    let options = if seed % 2 == 1 {
        options.compact_cache()
    } else {
        options
    };
    let informer = SharedIndexInformer::new(Arc::new(ApiListWatch::new(api.clone())), options);
    let stop = CancellationToken::new();
    let mut views: Vec<(Arc<View>, EventHandlerRegistration)> = Vec::new();
    for delay_us in [0, rng.u64(0..400)] {
        views.push(register(&informer, delay_us, &stop)?);
    }
    let task = {
        let (informer, stop) = (informer.clone(), stop.clone());
        tokio::spawn(async move { informer.run(stop).await })
    };
    let restarted = Arc::new(AtomicBool::new(false));
    let steps = rng.usize(60..160);
    for step in 0..steps {
        let name = format!("cm-{}", rng.u8(0..50));
        match rng.u8(0..20) {
            0..=9 => {
                tally.writes += 1;
                let _ = apply(name, step).await;
            }
            10..=11 => {
                tally.writes += 1;
                let _ = api.delete(&name, &DeleteParams::default()).await;
            }
            12 => {
                // A burst of concurrent writes.
                let burst = (0..rng.usize(5..30))
                    .map(|i| apply(format!("cm-{}", (i * 7 + step) % 50), step));
                tally.writes += futures_util::future::join_all(burst).await.len();
            }
            13 => {
                *tally.faults.entry("watch drop").or_default() += 1;
                server.drop_watches();
            }
            14 => {
                *tally.faults.entry("compaction (410)").or_default() += 1;
                server.compact();
            }
            15 => {
                *tally.faults.entry("429 storm").or_default() += 1;
                server.faults().fail_next(
                    rng.usize(1..6),
                    Fault::TooManyRequests {
                        retry_after_seconds: 0,
                    },
                );
            }
            16 => {
                *tally.faults.entry("500").or_default() += 1;
                server.faults().fail_next(1, Fault::InternalError);
            }
            17 => {
                *tally.faults.entry("malformed event").or_default() += 1;
                server.faults().malformed_watch_events(1);
            }
            18 if !restarted.swap(true, Ordering::SeqCst) => {
                // A restart: the new server is empty, or has data at new resourceVersions.
                // Its resourceVersions go on past the old ones, as etcd's revisions do (a
                // server numbering from 1 again would look to a resuming watch like the
                // old history, which neither client-go nor any client can detect).
                let with_data = rng.bool();
                *tally
                    .faults
                    .entry(if with_data {
                        "restart with data"
                    } else {
                        "restart empty"
                    })
                    .or_default() += 1;
                let last_revision = server.store().revision();
                server.shutdown().await;
                server = ApiServer::builder()
                    .initial_revision(last_revision + 1000)
                    .history_window(40)
                    .listen(address)
                    .start()
                    .await
                    .map_err(|err| format!("restart: {err}"))?;
                if with_data {
                    for i in 0..rng.usize(1..30) {
                        let _ = apply(format!("cm-{i}"), step).await;
                    }
                }
            }
            18 => {}
            _ => {
                // Handlers come and go while events flow.
                if rng.bool() || views.len() < 3 {
                    *tally.faults.entry("handler added").or_default() += 1;
                    views.push(register(&informer, rng.u64(0..200), &stop)?);
                } else {
                    *tally.faults.entry("handler removed").or_default() += 1;
                    let (_, registration) = views.remove(rng.usize(2..views.len()));
                    informer.remove_event_handler(&registration);
                }
            }
        }
    }
    server.faults().clear();
    let deadline = tokio::time::Instant::now() + WAIT;
    let server_view = loop {
        let (expected, cached) = (server_state(&client).await, cache_state(&informer));
        if expected == cached && informer.has_synced() {
            break expected;
        }
        if tokio::time::Instant::now() > deadline {
            return Err(format!(
                "the cache did not converge: {} objects on the server, {} cached",
                expected.len(),
                cached.len()
            ));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    // Every remaining handler catches up with the cache, with a consistent story.
    for (index, (view, registration)) in views.iter().enumerate() {
        loop {
            let seen: BTreeMap<String, String> =
                view.seen.lock().unwrap().clone().into_iter().collect();
            if seen == server_view {
                break;
            }
            if tokio::time::Instant::now() > deadline {
                return Err(format!(
                    "handler {index} did not catch up: it has {} objects",
                    seen.len()
                ));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let violations = view.violations.lock().unwrap().clone();
        if !violations.is_empty() {
            return Err(format!("handler {index}: {violations:?}"));
        }
        if !registration.has_synced() {
            return Err(format!("handler {index} never reported has_synced"));
        }
        let at_sync = *view.initial_adds_at_sync.lock().unwrap();
        let total = view.initial_adds.load(Ordering::SeqCst);
        if at_sync.is_some_and(|handled| handled < total) {
            return Err(format!(
                "handler {index} reported has_synced after {at_sync:?} of {total} initial adds"
            ));
        }
    }
    stop.cancel();
    let _ = tokio::time::timeout(WAIT, task).await;
    server.shutdown().await;
    Ok(tally)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn soak_random_schedules_of_writes_and_faults_converge() {
    let seeds = env_number("KUBECLIENT_SOAK_SEEDS", 3);
    let first = env_number("KUBECLIENT_SOAK_FIRST_SEED", 1);
    let started = std::time::Instant::now();
    let mut failures = Vec::new();
    let mut writes = 0;
    let mut faults: BTreeMap<&'static str, usize> = BTreeMap::new();
    for seed in first..first + seeds {
        match soak_one(seed).await {
            Ok(tally) => {
                writes += tally.writes;
                for (fault, count) in tally.faults {
                    *faults.entry(fault).or_default() += count;
                }
            }
            Err(err) => {
                eprintln!("soak seed {seed} FAILED: {err}");
                failures.push(seed);
            }
        }
        let done = seed - first + 1;
        if done.is_multiple_of(25) {
            eprintln!(
                "soak: {done}/{seeds} seeds, {} failed, {:.0} s",
                failures.len(),
                started.elapsed().as_secs_f64()
            );
        }
    }
    eprintln!(
        "soak: {seeds} seeds from {first} in {:.1} s, {writes} writes, faults {faults:?}, failed seeds {failures:?}",
        started.elapsed().as_secs_f64()
    );
    assert!(
        failures.is_empty(),
        "failed seeds (replay with KUBECLIENT_SOAK_FIRST_SEED): {failures:?}"
    );
}
