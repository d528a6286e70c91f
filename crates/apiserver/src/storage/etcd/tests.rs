//! The etcd backend against a real etcd (see [`test_etcd`](super::test_etcd)).

use std::sync::Arc;

use etcd_client::Client;
use kubeclient_machinery::{GroupResource, protobuf};
use serde_json::json;

use super::test_etcd::{TestEtcd, free_ports};
use super::{EtcdBackend, EtcdConfig};
use crate::storage::backend::suite;
use crate::storage::{Backend, BackendError, ChangeKind, ListOptions};

#[tokio::test]
async fn the_etcd_backend_passes_the_backend_suite() {
    let Some(etcd) = TestEtcd::start("the_etcd_backend_passes_the_backend_suite").await else {
        return;
    };
    let mut run = 0;
    suite::run("etcd", || {
        run += 1;
        let prefix = format!("/suite-{run}/registry");
        let etcd = &etcd;
        async move { Arc::new(etcd.backend(&prefix).await) as Arc<dyn Backend> }
    })
    .await;
}

async fn raw(etcd: &TestEtcd, key: &str) -> Option<Vec<u8>> {
    let mut client = Client::connect([etcd.url.as_str()], None)
        .await
        .expect("a raw client");
    let response = client.get(key, None).await.expect("a raw read");
    response.kvs().first().map(|kv| kv.value().to_vec())
}

#[tokio::test]
async fn objects_are_stored_as_kube_apiserver_stores_them() {
    let Some(etcd) = TestEtcd::start("objects_are_stored_as_kube_apiserver_stores_them").await
    else {
        return;
    };
    let backend = etcd.backend("/registry").await;
    let cms = GroupResource::new("", "configmaps");
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "a", "namespace": "default", "resourceVersion": "12"},
        "data": {"k": "v"}});
    let created = backend.create(&cms, "default/a", cm).await.expect("create");
    let value = raw(&etcd, "/registry/configmaps/default/a")
        .await
        .expect("the ConfigMap is under kube-apiserver's key");
    assert!(value.starts_with(protobuf::MAGIC), "built-ins are protobuf");
    let decoded = protobuf::decode(&value).expect("the stored protobuf decodes");
    assert_eq!(decoded["data"], json!({"k": "v"}));
    assert_eq!(
        decoded["metadata"].get("resourceVersion"),
        None,
        "never stored"
    );
    assert_eq!(
        created.value["metadata"]["resourceVersion"],
        json!(created.rv.to_string()),
        "the resourceVersion is the mod revision"
    );

    let services = GroupResource::new("", "services");
    let svc = json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "s", "namespace": "default"}, "spec": {"clusterIP": "10.0.0.9"}});
    backend
        .create(&services, "default/s", svc)
        .await
        .expect("create a Service");
    assert!(
        raw(&etcd, "/registry/services/specs/default/s")
            .await
            .is_some()
    );

    let widgets = GroupResource::new("example.com", "widgets");
    let widget = json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w", "namespace": "default"}, "spec": {"size": 3}});
    backend
        .create(&widgets, "default/w", widget)
        .await
        .expect("create a custom resource");
    let value = raw(&etcd, "/registry/example.com/widgets/default/w")
        .await
        .expect("the custom resource is under its group");
    let stored: serde_json::Value =
        serde_json::from_slice(&value).expect("custom resources are JSON");
    assert_eq!(stored["spec"]["size"], 3);
}

#[tokio::test]
async fn values_that_do_not_decode_are_skipped_in_lists_and_fail_gets() {
    let test = "values_that_do_not_decode_are_skipped_in_lists_and_fail_gets";
    let Some(etcd) = TestEtcd::start(test).await else {
        return;
    };
    let backend = etcd.backend("/registry").await;
    let cms = GroupResource::new("", "configmaps");
    let good = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "good", "namespace": "default"}});
    backend
        .create(&cms, "default/good", good)
        .await
        .expect("create");
    let mut client = Client::connect([etcd.url.as_str()], None)
        .await
        .expect("a raw client");
    client
        .put(
            "/registry/configmaps/default/bad",
            b"k8s\0\x0a\xff\xff".to_vec(),
            None,
        )
        .await
        .expect("a raw write");

    let list = backend
        .list(&cms, ListOptions::default())
        .await
        .expect("the list still works");
    let names: Vec<_> = list.items.iter().map(|o| o.name().to_owned()).collect();
    assert_eq!(names, ["good"]);
    let get = backend.get(&cms, "default/bad").await;
    assert!(matches!(get, Err(BackendError::Decode { .. })), "{get:?}");
}

#[tokio::test]
async fn two_servers_on_one_etcd_share_writes_watches_and_conflicts() {
    let test = "two_servers_on_one_etcd_share_writes_watches_and_conflicts";
    let Some(etcd) = TestEtcd::start(test).await else {
        return;
    };
    let (a, b) = (
        etcd.backend("/registry").await,
        etcd.backend("/registry").await,
    );
    let cms = GroupResource::new("", "configmaps");
    let start = a.revision().await.expect("revision");
    let mut watch = a.watch(&cms, "", start).await.expect("watch on A");
    let cm = |v: &str| {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "x", "namespace": "default"}, "data": {"v": v}})
    };
    let created = b
        .create(&cms, "default/x", cm("0"))
        .await
        .expect("create on B");
    let (left, right) = tokio::join!(
        a.update(&cms, "default/x", cm("a"), created.rv),
        b.update(&cms, "default/x", cm("b"), created.rv),
    );
    let winners = [&left, &right].iter().filter(|r| r.is_ok()).count();
    assert_eq!(
        winners, 1,
        "exactly one conflicting write wins: {left:?} {right:?}"
    );
    let loser = if left.is_ok() { &right } else { &left };
    assert!(
        matches!(loser, Err(BackendError::Conflict { .. })),
        "{loser:?}"
    );
    let winner = left.as_ref().or(right.as_ref()).expect("a winner");

    let first = watch.next().await.expect("an event").expect("a change");
    assert_eq!((first.kind, first.rv), (ChangeKind::Created, created.rv));
    let second = watch.next().await.expect("an event").expect("a change");
    assert_eq!((second.kind, second.rv), (ChangeKind::Updated, winner.rv));
    let on_a = a.get(&cms, "default/x").await.expect("get on A");
    assert_eq!(on_a.map(|o| o.rv), Some(winner.rv));
}

#[tokio::test]
async fn an_unreachable_etcd_is_an_error_naming_the_endpoint() {
    let [port, _] = free_ports();
    let url = format!("http://127.0.0.1:{port}");
    let mut config = EtcdConfig::new([url.clone()]);
    config.connect_timeout = std::time::Duration::from_secs(2);
    let error = EtcdBackend::connect(config)
        .await
        .expect_err("nothing listens there");
    assert!(
        matches!(error, BackendError::Unavailable { .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains(&url), "{error}");
}

#[tokio::test]
async fn client_certificates_reach_an_etcd_that_requires_them() {
    let test = "client_certificates_reach_an_etcd_that_requires_them";
    let Some(etcd) = TestEtcd::start_tls(test).await else {
        return;
    };
    let backend = etcd.backend("/registry").await;
    let cms = GroupResource::new("", "configmaps");
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "tls", "namespace": "default"}});
    let created = backend
        .create(&cms, "default/tls", cm)
        .await
        .expect("a write over TLS");
    let read = backend.get(&cms, "default/tls").await.expect("a read");
    assert_eq!(read.map(|o| o.rv), Some(created.rv));

    let files = etcd.client_files().expect("a TLS member");
    let mut anonymous = EtcdConfig::new([etcd.url.clone()]);
    anonymous.ca_file = Some(files.ca.clone());
    anonymous.connect_timeout = std::time::Duration::from_secs(2);
    let refused = EtcdBackend::connect(anonymous).await;
    assert!(
        matches!(&refused, Err(BackendError::Unavailable { .. })),
        "a client without a certificate is refused: {refused:?}"
    );

    let mut half = etcd.config();
    half.key_file = None;
    let half = EtcdBackend::connect(half).await;
    assert!(
        matches!(&half, Err(BackendError::Config { .. })),
        "{half:?}"
    );
    let mut missing = etcd.config();
    missing.ca_file = Some(files.ca.with_file_name("absent.pem"));
    let missing = EtcdBackend::connect(missing).await;
    let message = missing.expect_err("an absent CA file").to_string();
    assert!(message.contains("--etcd-cafile"), "{message}");
}

#[tokio::test]
async fn a_stopped_etcd_ends_watches_and_fails_requests_instead_of_hanging() {
    let test = "a_stopped_etcd_ends_watches_and_fails_requests_instead_of_hanging";
    let Some(etcd) = TestEtcd::start(test).await else {
        return;
    };
    let mut config = etcd.config();
    config.request_timeout = std::time::Duration::from_secs(5);
    let backend = EtcdBackend::connect(config).await.expect("connect");
    let cms = GroupResource::new("", "configmaps");
    let now = backend.revision().await.expect("revision");
    let mut watch = backend.watch(&cms, "", now).await.expect("watch");
    drop(etcd);

    // A hang guard, not a timing check: the watch must end (or report why) by itself.
    let ended = tokio::time::timeout(std::time::Duration::from_secs(60), watch.next())
        .await
        .expect("the watch of a stopped etcd ends instead of hanging");
    assert!(
        !matches!(ended, Some(Ok(_))),
        "no change comes from a stopped etcd: {ended:?}"
    );
    let get = backend.get(&cms, "default/a").await;
    assert!(
        matches!(
            get,
            Err(BackendError::Unavailable { .. } | BackendError::Timeout(_))
        ),
        "{get:?}"
    );
    let status = get.expect_err("a failure").status(&cms, "a");
    assert!(matches!(status.code, 500 | 504), "{status:?}");
}
