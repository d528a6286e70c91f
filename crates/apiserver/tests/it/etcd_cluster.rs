//! The server over a three-member etcd cluster on loopback ports ([`TestEtcdCluster`],
//! every member's client URL given, as `--etcd-servers` takes them): with one member
//! stopped, writes and watches go on (after the survivors elected a leader, when it
//! led); with two, a write fails within a bounded time with the Status kube-apiserver
//! answers (504 `Timeout` when the request's deadline passed, 500 with etcd's own error
//! otherwise), never a hang; once a member returns, writes succeed again and a watch
//! opened before the outage goes on.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use kubeclient_apiserver::ApiServer;
use kubeclient_apiserver::testing::TestEtcdCluster;
use serde_json::{Value, json};

use crate::support::{Reply, TestServer, WatchReader, describe, item_names};

const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

fn configmap(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}})
}

fn rv(object: &Value) -> u64 {
    object["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|rv| rv.parse().ok())
        .unwrap_or_else(|| panic!("a numeric resourceVersion: {object}"))
}

/// POST `body` to `path`, or `None` when no complete answer came within `limit`.
async fn post_within(
    server: &TestServer,
    path: &str,
    body: &Value,
    limit: Duration,
) -> Option<Reply> {
    let request = hyper::Request::builder()
        .method("POST")
        .uri(format!("{}{path}", server.server.url()))
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body.to_string())))
        .expect("a valid request");
    let answer = async {
        let response = server.client.request(request).await.ok()?;
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let body = response.into_body().collect().await.ok()?.to_bytes();
        Some(Reply {
            status,
            headers,
            body,
        })
    };
    tokio::time::timeout(limit, answer).await.ok().flatten()
}

/// Reads events until one names `name` (events of other objects may come first); panics
/// when revisions go back or the watch is quiet for `limit`.
async fn until_event_of(watch: &mut WatchReader, name: &str, last: &mut u64, limit: Duration) {
    loop {
        let event = watch
            .next_within(limit)
            .await
            .unwrap_or_else(|()| panic!("an event of {name} within {limit:?}"))
            .unwrap_or_else(|| panic!("the watch stays open until {name}"));
        assert_ne!(event["type"], "ERROR", "{event}");
        let at = rv(&event["object"]);
        assert!(at > *last, "revisions grow: {at} after {last}");
        *last = at;
        if describe(&event).1 == name {
            assert_eq!(event["type"], "ADDED", "{event}");
            return;
        }
    }
}

/// Creates ConfigMaps named `prefix-N` until one is created (each failure a 500 or 504
/// Status: the cluster has no leader yet), then reads `watch` up to its event; panics
/// after 90 s.
async fn created_eventually(
    server: &TestServer,
    prefix: &str,
    watch: &mut WatchReader,
    last: &mut u64,
) {
    let patience = Duration::from_secs(30);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(90);
    for attempt in 0.. {
        let name = format!("{prefix}-{attempt}");
        match post_within(server, CONFIGMAPS, &configmap(&name), patience).await {
            Some(reply) if reply.status == 201 => {
                until_event_of(watch, &name, last, patience).await;
                return;
            }
            Some(reply) => assert!(
                matches!(reply.status, 500 | 504) && reply.json()["kind"] == "Status",
                "while the cluster elects a leader: {} {}",
                reply.status,
                String::from_utf8_lossy(&reply.body)
            ),
            None => {}
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{prefix}: writes succeed within 90 s"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn three_members_survive_one_loss_fail_in_time_without_quorum_and_recover() {
    const TEST: &str = "three_members";
    let Some(mut etcd) = TestEtcdCluster::start(TEST, 3).await else {
        return;
    };
    let server = TestServer::start_with(ApiServer::builder().etcd(etcd.config())).await;
    let start = rv(&server.get(CONFIGMAPS).await.json());
    let mut watch = server
        .watch(&format!("{CONFIGMAPS}?watch=true&resourceVersion={start}"))
        .await;
    let mut last = start;
    let patience = Duration::from_secs(30);

    // One member down (the first endpoint, whichever member leads): a quorum is left.
    // When it led, the first writes may fail while the others elect a leader (etcd's
    // `request timed out, possibly due to previous leader failure`, a 500 from
    // kube-apiserver too); then every write succeeds.
    etcd.stop(0);
    created_eventually(&server, "elected", &mut watch, &mut last).await;
    for i in 0..5 {
        let name = format!("one-down-{i}");
        let reply = post_within(&server, CONFIGMAPS, &configmap(&name), patience)
            .await
            .unwrap_or_else(|| panic!("{name}: an answer within {patience:?}"));
        assert_eq!(
            reply.status,
            201,
            "{name}: {}",
            String::from_utf8_lossy(&reply.body)
        );
        until_event_of(&mut watch, &name, &mut last, patience).await;
    }

    // Two down: no quorum. The write fails with a Status, in bounded time.
    etcd.stop(1);
    let began = std::time::Instant::now();
    let bound = Duration::from_secs(60);
    let reply = post_within(&server, CONFIGMAPS, &configmap("no-quorum"), bound)
        .await
        .unwrap_or_else(|| panic!("a write without quorum answers within {bound:?}"));
    let took = began.elapsed();
    let status = reply.json();
    assert!(
        matches!(reply.status, 500 | 504),
        "a write without quorum: {} {status}",
        reply.status
    );
    assert_eq!(status["kind"], "Status", "{status}");
    assert_eq!(status["status"], "Failure", "{status}");
    assert_eq!(status["code"], reply.status, "{status}");
    if reply.status == 504 {
        assert_eq!(status["reason"], "Timeout", "{status}");
    }
    assert!(
        status["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{status}"
    );
    eprintln!(
        "{TEST}: without quorum a write answered {} after {took:?}: {status}",
        reply.status
    );

    // A member returns: writes succeed again (once the cluster elected a leader), and
    // the watch opened before the outage goes on.
    etcd.resume(TEST, 1);
    created_eventually(&server, "recovered", &mut watch, &mut last).await;
    // Reads of the written objects are the cluster's.
    let list = server.get(CONFIGMAPS).await.json();
    let names = item_names(&list);
    for i in 0..5 {
        assert!(
            names.contains(&format!("one-down-{i}").as_str()),
            "{names:?}"
        );
    }
}
