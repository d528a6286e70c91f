//! The informer against a **real kube-apiserver** (any you have; CI runs v1.20 with etcd):
//! sync through the LIST fallback (v1.20 refuses a watch-list with
//! 422), a 410 after a real etcd compaction, relisting in pages from etcd, resuming after a
//! connection broken mid-stream, and an informer served by the real watch cache. The first
//! two also run over protobuf.
//!
//! The tests read only `KUBECLIENT_REALAPI_KUBECONFIG`, the path of a kubeconfig for that
//! server; without it they say so and do nothing. Start kube-apiserver with ConfigMaps
//! uncached (`--watch-cache-sizes=configmaps#0`: their lists and watches go to etcd, as on a
//! server without a watch cache; v1.20's watch cache grows to keep every event of the last
//! 75 s, so it never answers 410 quickly) and an etcd compaction every 5 s
//! (`--etcd-compaction-interval=5s`); Secrets keep the watch cache. `.ci/run` does so, and
//! docs/TESTING.md says how with kind or the v1.20 binaries. Then:
//!
//! ```sh
//! KUBECLIENT_REALAPI_KUBECONFIG=/path/to/kubeconfig cargo test -p kubeclient --test it realapi
//! ```

use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kubeclient::config::{Kubeconfig, KubeconfigOptions};
use kubeclient::rest::ContentType;
use kubeclient::{Api, Client, Config, PostParams};

use crate::reflector_rules::{Injected, Recording, fast_backoff, informer_with, run};
use crate::support::{cache_state, server_state_in, until};
use kubeclient::CancellationToken;
use kubeclient::cache::ReflectorOptions;

/// A client of the real server, or `None` (with a note) when none was started.
pub(crate) async fn real_server() -> Option<Client> {
    real_server_as(ContentType::Json).await
}

/// [`real_server`] speaking `content` for built-in kinds.
async fn real_server_as(content: ContentType) -> Option<Client> {
    real_server_named("KUBECLIENT_REALAPI_KUBECONFIG", content).await
}

/// The real server whose kubeconfig path the environment variable `variable` holds;
/// `None` (the test is skipped, and says so) where it is not set.
pub(crate) async fn real_server_named(variable: &str, content: ContentType) -> Option<Client> {
    let Ok(path) = std::env::var(variable) else {
        eprintln!(
            "skipped: {variable} is not set (export the path of a real kube-apiserver's kubeconfig: see docs/TESTING.md)"
        );
        return None;
    };
    let kubeconfig = Kubeconfig::read_from(&path).expect("the real server's kubeconfig reads");
    let mut config = Config::from_kubeconfig(&kubeconfig, &KubeconfigOptions::default())
        .expect("a usable context");
    config.content_type = content;
    Some(
        Client::new(config)
            .await
            .expect("a client of the real server"),
    )
}

/// A new namespace of its own for one test (tests share the server).
pub(crate) async fn fresh_namespace(client: &Client, test: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let name = format!("kc-{test}-{nanos}");
    let mut namespace = Namespace::default();
    namespace.metadata.name = Some(name.clone());
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &namespace)
        .await
        .expect("the real server creates the namespace");
    name
}

async fn create(api: &Api<ConfigMap>, name: &str) {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.to_owned());
    cm.data = Some([("k".to_owned(), name.to_owned())].into());
    api.create(&PostParams::default(), &cm)
        .await
        .expect("the real server creates the ConfigMap");
}

/// Waits until the informer's cache equals the server's ConfigMaps in `namespace`.
async fn converged(
    client: &Client,
    namespace: &str,
    informer: &kubeclient::cache::SharedIndexInformer<ConfigMap>,
) {
    let deadline = tokio::time::Instant::now() + crate::support::WAIT;
    loop {
        let server = server_state_in(client, namespace).await;
        if cache_state(informer) == server {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the cache never converged: {} cached, {} on the server",
            cache_state(informer).len(),
            server.len()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_server_an_informer_falls_back_to_list_syncs_and_follows_every_write() {
    real_server_an_informer_falls_back_to_list_syncs_and_follows_every_write_as(ContentType::Json)
        .await;
}

/// The same over protobuf: the real server's protobuf lists, watch frames and 410 ERROR
/// event.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_server_an_informer_falls_back_to_list_syncs_and_follows_every_write_over_protobuf() {
    real_server_an_informer_falls_back_to_list_syncs_and_follows_every_write_as(
        ContentType::Protobuf,
    )
    .await;
}

async fn real_server_an_informer_falls_back_to_list_syncs_and_follows_every_write_as(
    content: ContentType,
) {
    let Some(client) = real_server_as(content).await else {
        return;
    };
    let namespace = fresh_namespace(&client, "sync").await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), &namespace);
    assert_eq!(api.uses_protobuf(), content == ContentType::Protobuf);
    for i in 0..25 {
        create(&api, &format!("before-{i:02}")).await;
    }
    let lw = Recording::new(api.clone(), false);
    let informer = informer_with(&lw, fast_backoff());
    let stop = run(&informer);
    until("the informer syncs", || informer.has_synced()).await;
    assert_eq!(
        lw.list_count(),
        1,
        "v1.20 refuses the watch-list: one LIST instead"
    );
    converged(&client, &namespace, &informer).await;
    for i in 0..10 {
        create(&api, &format!("after-{i:02}")).await;
    }
    api.delete("before-00", &Default::default()).await.unwrap();
    converged(&client, &namespace, &informer).await;
    assert_eq!(lw.list_count(), 1, "followed by the watch, no relist");
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_server_a_watch_from_a_compacted_resource_version_gets_410_and_relists_in_pages() {
    real_server_a_watch_from_a_compacted_resource_version_gets_410_and_relists_in_pages_as(
        ContentType::Json,
    )
    .await;
}

/// The same over protobuf: the real server's protobuf lists, watch frames and 410 ERROR
/// event.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_server_a_watch_from_a_compacted_resource_version_gets_410_and_relists_in_pages_over_protobuf()
 {
    real_server_a_watch_from_a_compacted_resource_version_gets_410_and_relists_in_pages_as(
        ContentType::Protobuf,
    )
    .await;
}

async fn real_server_a_watch_from_a_compacted_resource_version_gets_410_and_relists_in_pages_as(
    content: ContentType,
) {
    let Some(client) = real_server_as(content).await else {
        return;
    };
    let namespace = fresh_namespace(&client, "gone").await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), &namespace);
    assert_eq!(api.uses_protobuf(), content == ContentType::Protobuf);
    for i in 0..20 {
        create(&api, &format!("cm-{i:02}")).await;
    }
    let lw = Recording::new(api.clone(), false);
    let options = ReflectorOptions {
        use_watch_list: false,
        page_size: Some(7),
        ..fast_backoff()
    };
    let informer = informer_with(&lw, options);
    // The first watch breaks; the re-watch opens only after etcd compacted past its
    // resourceVersion (compaction every 5 s), so the server answers 410 and the
    // reflector relists.
    lw.inject(&[
        Injected::BreakAfter(Duration::from_millis(1500)),
        Injected::OpenAfter(Duration::from_secs(12)),
    ]);
    let stop = run(&informer);
    until("the informer syncs", || informer.has_synced()).await;
    until("the late re-watch is waiting", || lw.watch_count() >= 2).await;
    for i in 0..10 {
        create(&api, &format!("while-away-{i:02}")).await;
    }
    until("a relist after the 410", || lw.list_count() >= 2).await;
    converged(&client, &namespace, &informer).await;
    let lists = lw.lists.lock().unwrap().clone();
    assert!(
        lists.iter().any(|l| l.continue_token.is_some()),
        "the relist walked pages of 7 with continue tokens: {lists:?}"
    );
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_server_a_connection_broken_mid_stream_resumes_from_the_last_resource_version() {
    let Some(client) = real_server().await else {
        return;
    };
    let namespace = fresh_namespace(&client, "resume").await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), &namespace);
    for i in 0..5 {
        create(&api, &format!("cm-{i:02}")).await;
    }
    let lw = Recording::new(api.clone(), false);
    let informer = informer_with(
        &lw,
        ReflectorOptions {
            use_watch_list: false,
            ..fast_backoff()
        },
    );
    lw.inject(&[Injected::BreakAfter(Duration::from_millis(1500))]);
    let stop = run(&informer);
    until("the informer syncs", || informer.has_synced()).await;
    create(&api, "during").await;
    until("the broken watch and the next one", || {
        lw.watch_count() >= 2
    })
    .await;
    create(&api, "after").await;
    converged(&client, &namespace, &informer).await;
    assert_eq!(lw.list_count(), 1, "re-watched, never relisted");
    let rvs = lw.watch_rvs.lock().unwrap().clone();
    assert!(
        rvs.iter().all(|rv| !rv.is_empty() && rv != "0"),
        "every watch resumes from a resourceVersion: {rvs:?}"
    );
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_server_an_informer_served_by_the_watch_cache_syncs_and_follows_writes() {
    use k8s_openapi::api::core::v1::Secret;
    use kubeclient::cache::{ApiListWatch, InformerOptions, SharedIndexInformer, Store};
    use kubeclient::machinery::{Object, meta_namespace_key};
    use std::collections::BTreeMap;
    use std::sync::Arc;

    let Some(client) = real_server().await else {
        return;
    };
    let namespace = fresh_namespace(&client, "cached").await;
    let api: Api<Secret> = Api::namespaced(client.clone(), &namespace);
    let secret = |name: &str| {
        let mut secret = Secret::default();
        secret.metadata.name = Some(name.to_owned());
        secret.string_data = Some([("k".to_owned(), name.to_owned())].into());
        secret
    };
    for i in 0..10 {
        api.create(&PostParams::default(), &secret(&format!("s-{i}")))
            .await
            .unwrap();
    }
    let informer = SharedIndexInformer::new(
        Arc::new(ApiListWatch::new(api.clone())),
        InformerOptions {
            reflector: fast_backoff(),
            ..InformerOptions::default()
        },
    );
    let stop = CancellationToken::new();
    let (running, token) = (informer.clone(), stop.clone());
    tokio::spawn(async move { running.run(token).await });
    until("the informer syncs", || informer.has_synced()).await;
    api.create(&PostParams::default(), &secret("late"))
        .await
        .unwrap();
    api.delete("s-0", &Default::default()).await.unwrap();
    let deadline = tokio::time::Instant::now() + crate::support::WAIT;
    loop {
        let server: BTreeMap<String, String> = api
            .list_all(&Default::default())
            .await
            .unwrap()
            .items
            .iter()
            .map(|s| (meta_namespace_key(s), s.resource_version().to_owned()))
            .collect();
        let cached: BTreeMap<String, String> = informer
            .indexer()
            .list()
            .iter()
            .map(|s| {
                (
                    meta_namespace_key(s.as_ref()),
                    s.resource_version().to_owned(),
                )
            })
            .collect();
        if cached == server {
            assert_eq!(cached.len(), 10);
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "never converged");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    stop.cancel();
}

/// `(field, reason, message)` of a refused create, sorted.
fn causes_of(err: &kubeclient::Error) -> Vec<(String, String, String)> {
    let status = &err.api().expect("a Status from the server").status;
    assert_eq!(status.code, 422, "{status:?}");
    let mut causes: Vec<(String, String, String)> = status
        .details
        .as_ref()
        .map(|d| {
            d.causes
                .iter()
                .map(|c| (c.field.clone(), c.reason.clone(), c.message.clone()))
                .collect()
        })
        .unwrap_or_default();
    causes.sort();
    causes
}

#[tokio::test]
async fn a_real_kube_apiserver_accepts_the_derived_crd_and_refuses_the_same_fields_as_ours() {
    use crate::custom_resource::{Installation, InstallationSpec};
    use kubeclient::customresource::{CustomResourceExt, install_crd};
    use kubeclient::machinery::DynamicObject;

    let Some(real) = real_server().await else {
        return;
    };
    let namespace = fresh_namespace(&real, "crd").await;
    install_crd(&real, &Installation::crd(), Duration::from_secs(60))
        .await
        .expect("kube-apiserver v1.20 accepts the generated CRD (a structural schema)");
    let embedded = crate::support::start().await;
    install_crd(
        &embedded.client,
        &Installation::crd(),
        Duration::from_secs(30),
    )
    .await
    .expect("the embedded server accepts it too");

    let valid = Installation::new(
        "web",
        InstallationSpec {
            replicas: 2,
            image: "nginx".into(),
            service_port: 80,
        },
    );
    let mut invalid = DynamicObject::new("example.kubeclient.dev/v1", "Installation", "bad");
    invalid.data.insert(
        "spec".to_owned(),
        serde_json::json!({"replicas": "three", "servicePort": 80}),
    );
    let mut answers = Vec::new();
    for (client, ns) in [(&real, namespace.as_str()), (&embedded.client, "default")] {
        // A real server may answer 404 for a moment after the CRD is Established, while
        // its handler for the new resource starts.
        let api = Api::<Installation>::namespaced(client.clone(), ns);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            match api.create(&PostParams::default(), &valid).await {
                Ok(_) => break,
                Err(err)
                    if err.api().is_some_and(|e| e.is_not_found())
                        && tokio::time::Instant::now() < deadline =>
                {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(err) => panic!("a valid Installation is stored: {err}"),
            }
        }
        let err = Api::<DynamicObject>::namespaced_with(
            client.clone(),
            ns,
            &Installation::api_resource(),
        )
        .create(&PostParams::default(), &invalid)
        .await
        .expect_err("an invalid Installation is refused");
        answers.push(causes_of(&err));
    }
    assert_eq!(
        answers[0], answers[1],
        "the real server's causes, then ours"
    );
}

#[tokio::test]
async fn leader_election_and_events_work_against_a_real_kube_apiserver() {
    use k8s_openapi::api::coordination::v1::Lease;
    use k8s_openapi::api::core::v1::Event;
    use kubeclient::ListParams;
    use kubeclient::leaderelection::{
        LeaderCallbacks, LeaderElectionConfig, LeaderElector, LeaseLock,
    };
    use kubeclient::record::{EventBroadcaster, EventSource, EventType};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    let Some(real) = real_server().await else {
        return;
    };
    let namespace = fresh_namespace(&real, "lease").await;
    let leading = Arc::new(AtomicBool::new(false));
    let flag = leading.clone();
    let elector = LeaderElector::new(
        LeaseLock::new(real.clone(), &namespace, "election", "real-a"),
        LeaderElectionConfig::default()
            .lease_duration(Duration::from_secs(2))
            .renew_deadline(Duration::from_secs(1))
            .retry_period(Duration::from_millis(200))
            .release_on_cancel(true),
        LeaderCallbacks::new().on_started_leading(move |lost| {
            let flag = flag.clone();
            async move {
                flag.store(true, Ordering::SeqCst);
                lost.cancelled().await;
            }
        }),
    )
    .expect("valid");
    let stop = CancellationToken::new();
    let election = tokio::spawn({
        let stop = stop.clone();
        async move { elector.run(stop).await }
    });
    until("leading on the real server", || {
        leading.load(Ordering::SeqCst)
    })
    .await;
    let leases: Api<Lease> = Api::namespaced(real.clone(), &namespace);
    let holder = |lease: Lease| {
        lease
            .spec
            .and_then(|s| s.holder_identity)
            .unwrap_or_default()
    };
    assert_eq!(
        holder(leases.get("election").await.expect("the Lease")),
        "real-a"
    );
    stop.cancel();
    election.await.expect("stopped");
    assert_eq!(
        holder(leases.get("election").await.expect("the Lease")),
        "",
        "released"
    );

    let cm: ConfigMap =
        serde_json::from_value(serde_json::json!({"metadata": {"name": "evented"}}))
            .expect("a ConfigMap");
    let cm = Api::<ConfigMap>::namespaced(real.clone(), &namespace)
        .create(&PostParams::default(), &cm)
        .await
        .expect("created");
    let broadcaster = EventBroadcaster::new();
    broadcaster.start_recording_to_sink(real.clone());
    let recorder = broadcaster.new_recorder(EventSource::new("realapi-test"));
    for _ in 0..3 {
        recorder.event(&cm, EventType::Normal, "Synced", "synced");
    }
    broadcaster.shutdown().await;
    let events = Api::<Event>::namespaced(real.clone(), &namespace)
        .list(&ListParams::default())
        .await
        .expect("listed");
    let counts: Vec<Option<i32>> = events.items.iter().map(|e| e.count).collect();
    assert_eq!(
        counts,
        [Some(3)],
        "one Event, patched to count 3 by the real server"
    );
}

/// Objects written through protobuf bodies are what the real server stores (read back as
/// JSON), and its protobuf answers decode into the same structs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_server_typed_writes_and_reads_over_protobuf() {
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::{Secret, Service};
    let (Some(pb), Some(json)) = (
        real_server_as(ContentType::Protobuf).await,
        real_server().await,
    ) else {
        return;
    };
    let namespace = fresh_namespace(&json, "pb-writes").await;
    let deployment: Deployment = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "web"}},
            "strategy": {"rollingUpdate": {"maxSurge": "50%", "maxUnavailable": 1}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {
                "automountServiceAccountToken": false,
                "containers": [{"name": "c", "image": "nginx:1.27",
                    "ports": [{"containerPort": 80}],
                    "resources": {"limits": {"cpu": "500m", "memory": "128Mi"}},
                    "readinessProbe": {"httpGet": {"path": "/", "port": "http"}}}],
                "volumes": [{"name": "cfg", "configMap": {"name": "cfg", "defaultMode": 420}}]}}}}))
    .unwrap();
    let pb_deployments: Api<Deployment> = Api::namespaced(pb.clone(), &namespace);
    assert!(pb_deployments.uses_protobuf());
    let created = pb_deployments
        .create(&PostParams::default(), &deployment)
        .await
        .expect("the real server accepts a protobuf Deployment");
    let stored = Api::<Deployment>::namespaced(json.clone(), &namespace)
        .get("web")
        .await
        .unwrap();
    assert_eq!(
        created, stored,
        "the protobuf answer decodes as the JSON one"
    );
    assert_eq!(stored.spec.replicas, Some(0));
    let spec = stored.spec.template.spec.unwrap();
    assert_eq!(spec.automount_service_account_token, Some(false));
    assert_eq!(
        spec.volumes.unwrap()[0]
            .config_map
            .as_ref()
            .unwrap()
            .default_mode,
        Some(420)
    );

    let secret: Secret = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "s"}, "data": {"bin": "AAEC/w=="}, "type": "Opaque"}))
    .unwrap();
    Api::<Secret>::namespaced(pb.clone(), &namespace)
        .create(&PostParams::default(), &secret)
        .await
        .expect("the real server accepts a protobuf Secret");
    let stored = Api::<Secret>::namespaced(json.clone(), &namespace)
        .get("s")
        .await
        .unwrap();
    assert_eq!(stored.data.unwrap()["bin"].0, vec![0, 1, 2, 255]);

    let service: Service = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "web"},
        "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "targetPort": "http"}]}}))
    .unwrap();
    let created = Api::<Service>::namespaced(pb.clone(), &namespace)
        .create(&PostParams::default(), &service)
        .await
        .expect("the real server accepts a protobuf Service");
    let stored = Api::<Service>::namespaced(json, &namespace)
        .get("web")
        .await
        .unwrap();
    assert_eq!(created, stored);
}
