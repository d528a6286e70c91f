//! The embedded server's etcd backend and a **real kube-apiserver** over one etcd: what our
//! backend writes, kube-apiserver serves (same keys, same protobuf, the mod revision as
//! resourceVersion), and what kube-apiserver writes, our backend reads and watches.
//!
//! Needs `KUBECLIENT_REALAPI_KUBECONFIG` (see [`realapi`](crate::realapi)) and
//! `KUBECLIENT_REALAPI_ETCD`, the client URL of that server's etcd; `.ci/run` sets both.
//! Without them the test says so and does nothing.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ConfigMap;
use kubeclient::{Api, PostParams};
use kubeclient_apiserver::storage::{Backend, ChangeKind, EtcdBackend, EtcdConfig};
use kubeclient_machinery::GroupResource;
use serde_json::json;

use crate::realapi::{fresh_namespace, real_server};

fn data(pairs: &[(&str, &str)]) -> Option<BTreeMap<String, String>> {
    Some(
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
    )
}

#[tokio::test]
async fn objects_pass_both_ways_between_our_etcd_backend_and_kube_apiserver() {
    let Ok(etcd_url) = std::env::var("KUBECLIENT_REALAPI_ETCD") else {
        eprintln!(
            "skipped: KUBECLIENT_REALAPI_ETCD is not set (the client URL of the real server's etcd)"
        );
        return;
    };
    let Some(client) = real_server().await else {
        return;
    };
    let namespace = fresh_namespace(&client, "etcd-interop").await;
    let backend = EtcdBackend::connect(EtcdConfig::new([etcd_url]))
        .await
        .expect("our backend reaches the real server's etcd");
    let configmaps = GroupResource::new("", "configmaps");
    let api = Api::<ConfigMap>::namespaced(client, &namespace);

    // Ours -> kube-apiserver.
    let ours = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "ours", "namespace": namespace,
            "uid": "6f1c5b1e-5a55-4a65-9e55-3f0b3c1f1a01",
            "creationTimestamp": "2026-12-02T06:00:00Z"},
        "data": {"written": "by kubeclient"}});
    let written = backend
        .create(&configmaps, &format!("{namespace}/ours"), ours)
        .await
        .expect("our backend writes into kube-apiserver's etcd");
    let served = api
        .get("ours")
        .await
        .expect("kube-apiserver serves what we wrote");
    assert_eq!(served.data, data(&[("written", "by kubeclient")]));
    assert_eq!(
        served.metadata.resource_version,
        Some(written.rv.to_string()),
        "both sides take the mod revision as resourceVersion"
    );
    assert_eq!(
        served.metadata.uid.as_deref(),
        Some("6f1c5b1e-5a55-4a65-9e55-3f0b3c1f1a01")
    );

    // kube-apiserver -> ours, read and watched.
    let mut theirs = ConfigMap::default();
    theirs.metadata.name = Some("theirs".to_owned());
    theirs.data = data(&[("written", "by kube-apiserver")]);
    let created = api
        .create(&PostParams::default(), &theirs)
        .await
        .expect("kube-apiserver creates");
    let key = format!("{namespace}/theirs");
    let read = backend
        .get(&configmaps, &key)
        .await
        .expect("our backend reads it")
        .expect("it is under kube-apiserver's key");
    assert_eq!(read.value["data"], json!({"written": "by kube-apiserver"}));
    assert_eq!(read.value["metadata"]["uid"], json!(created.metadata.uid));
    assert_eq!(Some(read.rv.to_string()), created.metadata.resource_version);

    let mut watch = backend
        .watch(&configmaps, &format!("{namespace}/"), read.rv)
        .await
        .expect("our backend watches kube-apiserver's writes");
    let mut changed = created.clone();
    changed.data = data(&[("written", "again")]);
    let replaced = api
        .replace("theirs", &PostParams::default(), &changed)
        .await
        .expect("kube-apiserver updates");
    let change = tokio::time::timeout(std::time::Duration::from_secs(30), watch.next())
        .await
        .expect("a change within 30 s (a hang guard)")
        .expect("the watch goes on")
        .expect("the change decodes");
    assert_eq!(change.kind, ChangeKind::Updated);
    assert_eq!(change.key, key);
    assert_eq!(
        Some(change.rv.to_string()),
        replaced.metadata.resource_version
    );
    let prev = change.prev.as_ref().expect("etcd's prevKV");
    assert_eq!(prev.value["data"], json!({"written": "by kube-apiserver"}));

    // Our conditional write against kube-apiserver's newer revision loses.
    let stale = backend
        .update(&configmaps, &key, read.value.clone(), read.rv)
        .await;
    assert!(
        matches!(
            stale,
            Err(kubeclient_apiserver::storage::BackendError::Conflict { .. })
        ),
        "{stale:?}"
    );
}
