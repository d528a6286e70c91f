//! The whole server over a real etcd (`ApiServerBuilder::etcd`, `kubeclient serve
//! --etcd-servers`): objects survive a restart, two servers over one etcd have one winner
//! per conflicting write and see each other's writes in their watches, in order, and an
//! unreachable etcd is a clear start error. Each test starts its own etcd
//! ([`TestEtcd`]; skipped, saying so, when no etcd binary is installed).

use std::time::Duration;

use kubeclient_apiserver::storage::{Backend, EtcdConfig};
use kubeclient_apiserver::testing::TestEtcd;
use kubeclient_apiserver::{ApiServer, StartError};
use kubeclient_machinery::{ErrorChain, GroupResource};
use serde_json::{Value, json};

use crate::support::{TestServer, describe, item_names};

const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

async fn server_on(etcd: &TestEtcd) -> TestServer {
    TestServer::start_with(ApiServer::builder().etcd(etcd.config())).await
}

fn configmap(name: &str, value: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": value}})
}

fn rv(reply: &Value) -> u64 {
    reply["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|rv| rv.parse().ok())
        .unwrap_or_else(|| panic!("a numeric resourceVersion: {reply}"))
}

/// Waits until GET `path` on `server` answers 200 with the resourceVersion `at_least`
/// or later (the other server's watch cache follows etcd's watch).
async fn eventually_at(server: &TestServer, path: &str, at_least: u64) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let reply = server.get(path).await;
        if reply.status == 200 && rv(&reply.json()) >= at_least {
            return reply.json();
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "GET {path} reaches revision {at_least} within 10 s; still {}: {}",
            reply.status,
            String::from_utf8_lossy(&reply.body)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn objects_survive_a_restart_of_the_server_on_the_same_etcd() {
    let Some(etcd) = TestEtcd::start("objects_survive_a_restart").await else {
        return;
    };
    let first = server_on(&etcd).await;
    let created = first.post(CONFIGMAPS, &configmap("kept", "1")).await;
    assert_eq!(
        created.status,
        201,
        "{}",
        String::from_utf8_lossy(&created.body)
    );
    let created = created.json();
    // The resourceVersion is etcd's mod revision of kube-apiserver's key.
    let stored = etcd
        .backend("/registry")
        .await
        .get(&GroupResource::new("", "configmaps"), "default/kept")
        .await
        .expect("etcd answers")
        .expect("the ConfigMap is in etcd");
    assert_eq!(stored.rv, rv(&created));
    let namespace = first
        .post("/api/v1/namespaces", &json!({"metadata": {"name": "team"}}))
        .await;
    assert_eq!(namespace.status, 201);
    first.server.shutdown().await;

    let second = server_on(&etcd).await;
    let read = second.get(&format!("{CONFIGMAPS}/kept")).await;
    assert_eq!(read.status, 200, "{}", String::from_utf8_lossy(&read.body));
    let read = read.json();
    assert_eq!(read["data"], json!({"k": "1"}));
    assert_eq!(read["metadata"]["uid"], created["metadata"]["uid"]);
    assert_eq!(rv(&read), rv(&created));
    assert_eq!(second.get("/api/v1/namespaces/team").await.status, 200);
    let again = second.post(CONFIGMAPS, &configmap("kept", "2")).await;
    assert_eq!(again.status, 409, "the name is still taken");
    // Writes after the restart go on from etcd's revision.
    let mut update = read.clone();
    update["data"] = json!({"k": "2"});
    let updated = second.put(&format!("{CONFIGMAPS}/kept"), &update).await;
    assert_eq!(
        updated.status,
        200,
        "{}",
        String::from_utf8_lossy(&updated.body)
    );
    assert!(rv(&updated.json()) > rv(&read));
    let list = second.get(CONFIGMAPS).await.json();
    assert!(rv(&list) >= rv(&updated.json()), "{list}");
}

#[tokio::test]
async fn two_servers_on_one_etcd_give_one_winner_and_a_409() {
    let Some(etcd) = TestEtcd::start("two_servers_one_winner").await else {
        return;
    };
    let (a, b) = (server_on(&etcd).await, server_on(&etcd).await);
    for round in 0..5 {
        let name = format!("contended-{round}");
        let created = a.post(CONFIGMAPS, &configmap(&name, "0")).await;
        assert_eq!(
            created.status,
            201,
            "{}",
            String::from_utf8_lossy(&created.body)
        );
        let created = created.json();
        let path = format!("{CONFIGMAPS}/{name}");
        eventually_at(&b, &path, rv(&created)).await;
        let (mut from_a, mut from_b) = (created.clone(), created.clone());
        from_a["data"] = json!({"k": "a"});
        from_b["data"] = json!({"k": "b"});
        let (on_a, on_b) = tokio::join!(a.put(&path, &from_a), b.put(&path, &from_b));
        let mut codes = [on_a.status, on_b.status];
        codes.sort_unstable();
        assert_eq!(
            codes,
            [200, 409],
            "round {round}: one winner: {} / {}",
            String::from_utf8_lossy(&on_a.body),
            String::from_utf8_lossy(&on_b.body)
        );
        let (winner, value) = if on_a.status == 200 {
            (on_a, "a")
        } else {
            (on_b, "b")
        };
        let winner = winner.json();
        for server in [&a, &b] {
            let seen = eventually_at(server, &path, rv(&winner)).await;
            assert_eq!(seen["data"], json!({"k": value}), "both servers agree");
        }
        // The same race for creates: one name, one winner.
        let fresh = format!("created-{round}");
        let (body_a, body_b) = (configmap(&fresh, "a"), configmap(&fresh, "b"));
        let (on_a, on_b) = tokio::join!(a.post(CONFIGMAPS, &body_a), b.post(CONFIGMAPS, &body_b));
        let mut codes = [on_a.status, on_b.status];
        codes.sort_unstable();
        assert_eq!(codes, [201, 409], "round {round}: one creator");
    }
}

#[tokio::test]
async fn a_watch_on_one_server_sees_the_writes_of_another_in_order() {
    let Some(etcd) = TestEtcd::start("a_watch_sees_the_other_servers_writes").await else {
        return;
    };
    let (a, b) = (server_on(&etcd).await, server_on(&etcd).await);
    let start = rv(&a.get(CONFIGMAPS).await.json());
    let mut watch = a
        .watch(&format!("{CONFIGMAPS}?watch=true&resourceVersion={start}"))
        .await;
    let mut expected = Vec::new();
    for i in 0..10 {
        let name = format!("w{}", i % 3);
        let path = format!("{CONFIGMAPS}/{name}");
        let current = b.get(&path).await;
        let reply = if current.status == 404 {
            b.post(CONFIGMAPS, &configmap(&name, &i.to_string())).await
        } else if i % 4 == 3 {
            b.delete(&path).await
        } else {
            let mut object = current.json();
            object["data"] = json!({"k": i.to_string()});
            b.put(&path, &object).await
        };
        assert!(
            reply.status < 300,
            "{}",
            String::from_utf8_lossy(&reply.body)
        );
        let kind = match (current.status, i % 4) {
            (404, _) => "ADDED",
            (_, 3) => "DELETED",
            _ => "MODIFIED",
        };
        expected.push((kind.to_owned(), name));
    }
    let mut seen = Vec::new();
    let mut last = start;
    while seen.len() < expected.len() {
        let event = watch.next().await.expect("the watch stays open");
        let at = rv(&event["object"]);
        assert!(at > last, "revisions grow: {at} after {last}");
        last = at;
        seen.push(describe(&event));
    }
    assert_eq!(seen, expected);
}

#[tokio::test]
async fn an_unreachable_etcd_is_a_start_error_naming_the_endpoint() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
        listener.local_addr().expect("its address").port()
    };
    let endpoint = format!("http://127.0.0.1:{port}");
    let mut config = EtcdConfig::new([endpoint.clone()]);
    config.connect_timeout = Duration::from_millis(500);
    let started = tokio::time::timeout(
        Duration::from_secs(30),
        ApiServer::builder().etcd(config).start(),
    )
    .await
    .expect("the start gives up without hanging");
    let error = started.expect_err("no etcd, no server");
    assert!(matches!(error, StartError::Storage(_)), "{error:?}");
    let message = ErrorChain(&error).to_string();
    assert!(message.contains(&endpoint), "{message}");
}

#[tokio::test]
async fn a_delete_that_loses_a_race_decides_again_instead_of_a_409() {
    let Some(etcd) = TestEtcd::start("a_delete_that_loses_a_race").await else {
        return;
    };
    let (a, b) = (server_on(&etcd).await, server_on(&etcd).await);
    for round in 0..10 {
        let name = format!("raced-{round}");
        let path = format!("{CONFIGMAPS}/{name}");
        let mut object = configmap(&name, "0");
        // A finalizer keeps the object after the DELETE: the update on B and the
        // marking on A both change it, so one of them must decide again.
        object["metadata"]["finalizers"] = json!(["example.com/hold"]);
        let created = a.post(CONFIGMAPS, &object).await;
        assert_eq!(
            created.status,
            201,
            "{}",
            String::from_utf8_lossy(&created.body)
        );
        let created = created.json();
        eventually_at(&b, &path, rv(&created)).await;
        // B writes first; A deletes at once, usually before its cache saw B's write.
        let mut changed = created.clone();
        changed["data"] = json!({"k": "b"});
        let updated = b.put(&path, &changed).await;
        assert_eq!(
            updated.status,
            200,
            "{}",
            String::from_utf8_lossy(&updated.body)
        );
        let deleted = a.delete(&path).await;
        assert_eq!(
            deleted.status,
            200,
            "round {round}: the DELETE decides again on B's write: {}",
            String::from_utf8_lossy(&deleted.body)
        );
        let marked = deleted.json();
        assert!(
            marked["metadata"]["deletionTimestamp"].is_string(),
            "{marked}"
        );
        assert_eq!(marked["data"], json!({"k": "b"}), "B's write is kept");
        // Release the object.
        let mut released = marked.clone();
        released["metadata"]["finalizers"] = json!([]);
        let released = a.put(&path, &released).await;
        assert_eq!(
            released.status,
            200,
            "{}",
            String::from_utf8_lossy(&released.body)
        );
    }
}

#[tokio::test]
async fn lists_older_than_the_watch_cache_are_read_from_etcd_until_compacted() {
    let Some(etcd) = TestEtcd::start("lists_older_than_the_watch_cache").await else {
        return;
    };
    let first = server_on(&etcd).await;
    for name in ["a", "b", "c"] {
        let created = first.post(CONFIGMAPS, &configmap(name, "old")).await;
        assert_eq!(created.status, 201);
    }
    // A paginated list on the first server, continued on the next one.
    let page = first.get(&format!("{CONFIGMAPS}?limit=1")).await.json();
    let token = page["metadata"]["continue"]
        .as_str()
        .expect("a continue token")
        .to_owned();
    let old = rv(&page);
    for name in ["a", "b", "c"] {
        let path = format!("{CONFIGMAPS}/{name}");
        let mut object = first.get(&path).await.json();
        object["data"] = json!({"k": "new"});
        assert_eq!(first.put(&path, &object).await.status, 200);
    }
    first.server.shutdown().await;

    // The new server's watch cache starts at etcd's current revision.
    let second = server_on(&etcd).await;
    let exact = second
        .get(&format!(
            "{CONFIGMAPS}?resourceVersion={old}&resourceVersionMatch=Exact"
        ))
        .await;
    assert_eq!(
        exact.status,
        200,
        "{}",
        String::from_utf8_lossy(&exact.body)
    );
    let exact = exact.json();
    assert_eq!(rv(&exact), old);
    let data: Vec<&Value> = exact["items"]
        .as_array()
        .map(|items| items.iter().map(|item| &item["data"]["k"]).collect())
        .unwrap_or_default();
    assert_eq!(data, [&json!("old"); 3], "{exact}");
    let rest = second
        .get(&format!("{CONFIGMAPS}?limit=5&continue={token}"))
        .await;
    assert_eq!(rest.status, 200, "{}", String::from_utf8_lossy(&rest.body));
    let rest = rest.json();
    assert_eq!(rv(&rest), old);
    let names = item_names(&rest);
    assert_eq!(names, ["b", "c"], "{rest}");

    // Once etcd compacted that revision, it is 410 as from kube-apiserver.
    etcd.backend("/registry")
        .await
        .compact()
        .await
        .expect("etcd compacts");
    let gone = second
        .get(&format!(
            "{CONFIGMAPS}?resourceVersion={old}&resourceVersionMatch=Exact"
        ))
        .await;
    assert_eq!(gone.status, 410, "{}", String::from_utf8_lossy(&gone.body));
    assert_eq!(gone.json()["reason"], "Expired");
}

#[tokio::test]
async fn another_servers_delete_wakes_this_servers_garbage_collector() {
    let Some(etcd) = TestEtcd::start("another_servers_delete_wakes_the_gc").await else {
        return;
    };
    // Only A runs the garbage collector; nothing else wakes it (no simulated nodes,
    // whose Leases have owners).
    let a = TestServer::start_with(ApiServer::builder().etcd(etcd.config()).nodes(0)).await;
    let b = TestServer::start_with(
        ApiServer::builder()
            .etcd(etcd.config())
            .nodes(0)
            .garbage_collector(false),
    )
    .await;
    let owner = b.post(CONFIGMAPS, &configmap("owner", "1")).await;
    assert_eq!(
        owner.status,
        201,
        "{}",
        String::from_utf8_lossy(&owner.body)
    );
    let uid = owner.json()["metadata"]["uid"].clone();
    let mut child = configmap("child", "1");
    child["metadata"]["ownerReferences"] =
        json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": uid}]);
    let child = b.post(CONFIGMAPS, &child).await;
    assert_eq!(
        child.status,
        201,
        "{}",
        String::from_utf8_lossy(&child.body)
    );
    let child_path = format!("{CONFIGMAPS}/child");
    eventually_at(&a, &child_path, rv(&child.json())).await;

    // The owner goes through B (background propagation: it is removed at once).
    let deleted = b.delete(&format!("{CONFIGMAPS}/owner")).await;
    assert_eq!(
        deleted.status,
        200,
        "{}",
        String::from_utf8_lossy(&deleted.body)
    );
    // A's garbage collector, woken by B's delete through etcd's watch, removes the
    // dependent; both servers see it gone.
    for server in [&a, &b] {
        crate::support::eventually_status(server, &child_path, 404).await;
    }
}

#[tokio::test]
async fn a_crd_created_through_one_server_is_served_by_the_other() {
    let Some(etcd) = TestEtcd::start("a_crd_created_through_one_server").await else {
        return;
    };
    let (a, b) = (server_on(&etcd).await, server_on(&etcd).await);
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com"},
        "spec": {
            "group": "example.com", "scope": "Namespaced",
            "names": {"plural": "gadgets", "kind": "Gadget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object",
                    "x-kubernetes-preserve-unknown-fields": true}}}]
        }
    });
    b.create_crd(&crd).await;
    let gadgets = "/apis/example.com/v1/namespaces/default/gadgets";
    crate::support::eventually_status(&a, gadgets, 200).await;
    let gadget = json!({"apiVersion": "example.com/v1", "kind": "Gadget",
        "metadata": {"name": "g1"}, "size": 3});
    let created = a.post(gadgets, &gadget).await;
    assert_eq!(
        created.status,
        201,
        "{}",
        String::from_utf8_lossy(&created.body)
    );
    let on_b = eventually_at(&b, &format!("{gadgets}/g1"), rv(&created.json())).await;
    assert_eq!(on_b["size"], 3);
    // Removed through B, it stops being served by A.
    let crd_path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.example.com";
    assert_eq!(b.delete(crd_path).await.status, 200);
    crate::support::eventually_status(&b, crd_path, 404).await;
    crate::support::eventually_status(&a, gadgets, 404).await;
}
