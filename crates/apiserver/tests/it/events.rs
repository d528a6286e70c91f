//! core/v1 and events.k8s.io/v1 Events: one stored resource served through both APIs.

use serde_json::json;

use crate::support::TestServer;

/// core/v1 and events.k8s.io/v1 Events are one stored resource: written through one API,
/// an Event is read, listed, watched, patched and deleted through the other, its fields
/// mapped as kube-apiserver maps them; events.k8s.io refuses the deprecated fields.
#[tokio::test]
async fn both_event_apis_share_one_storage_and_convert_fields() {
    let t = TestServer::start().await;
    let core_events = "/api/v1/namespaces/default/events";
    let events_v1 = "/apis/events.k8s.io/v1/namespaces/default/events";
    let mut watch = t.watch(&format!("{events_v1}?watch=1")).await;
    let core = json!({"metadata": {"name": "started"}, "involvedObject": {"kind": "Pod", "name": "p"},
        "reason": "Started", "message": "container started", "type": "Normal", "count": 2,
        "source": {"component": "kubelet", "host": "node-1"}, "reportingComponent": "kubelet"});
    assert_eq!(t.post(core_events, &core).await.status, 201);
    let event = watch.next().await.expect("an event");
    assert_eq!(event["type"], "ADDED");
    let seen = &event["object"];
    assert_eq!(seen["apiVersion"], "events.k8s.io/v1");
    assert_eq!(
        (
            seen["note"].as_str(),
            seen["regarding"]["name"].as_str(),
            seen["reportingController"].as_str(),
            seen["deprecatedSource"]["host"].as_str(),
            seen["deprecatedCount"].as_i64(),
        ),
        (
            Some("container started"),
            Some("p"),
            Some("kubelet"),
            Some("node-1"),
            Some(2)
        ),
        "{seen}"
    );
    assert!(seen.get("message").is_none() && seen.get("involvedObject").is_none());
    // Listed through events.k8s.io, its item carries no kind or apiVersion (built-in list
    // items never do), and the list names them once.
    let listed = t.get(events_v1).await.json();
    assert_eq!(
        (listed["kind"].as_str(), listed["apiVersion"].as_str()),
        (Some("EventList"), Some("events.k8s.io/v1"))
    );
    let item = &listed["items"][0];
    assert_eq!(item["note"], "container started");
    assert!(
        item.get("kind").is_none() && item.get("apiVersion").is_none(),
        "{item}"
    );
    let patched = t
        .patch(
            &format!("{events_v1}/started"),
            "application/merge-patch+json",
            r#"{"note":"changed"}"#,
        )
        .await;
    assert_eq!(patched.status, 200);
    assert_eq!(
        t.get(&format!("{core_events}/started")).await.json()["message"],
        "changed"
    );
    let deprecated = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "new"},
        "eventTime": "2026-01-01T00:00:00.000000Z", "reportingController": "c", "reportingInstance": "c-1",
        "action": "A", "reason": "R", "type": "Warning", "regarding": {"kind": "Pod", "name": "p"},
        "note": "n", "deprecatedCount": 1, "deprecatedSource": {"component": "x"}});
    let refused = t.post(events_v1, &deprecated).await;
    assert_eq!(
        refused.json()["message"],
        r#"Event "new" is invalid: [count: Invalid value: "": needs to be unset, source: Invalid value: "": needs to be unset]"#
    );
    let mut fresh = deprecated.clone();
    let fields = fresh.as_object_mut().expect("an object");
    fields.remove("deprecatedCount");
    fields.remove("deprecatedSource");
    assert_eq!(t.post(events_v1, &fresh).await.status, 201);
    let as_core = t.get(&format!("{core_events}/new")).await.json();
    assert_eq!(
        (
            as_core["message"].as_str(),
            as_core["involvedObject"]["name"].as_str(),
            as_core["reportingComponent"].as_str(),
            as_core["source"].as_object().map(serde_json::Map::len),
        ),
        (Some("n"), Some("p"), Some("c"), Some(0)),
        "{as_core}"
    );
    let names = |list: serde_json::Value| -> Vec<String> {
        list["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|item| item["metadata"]["name"].as_str().map(str::to_owned))
            .collect()
    };
    assert_eq!(names(t.get(core_events).await.json()), ["new", "started"]);
    assert_eq!(names(t.get(events_v1).await.json()), ["new", "started"]);
    assert_eq!(t.delete(&format!("{events_v1}/started")).await.status, 200);
    assert_eq!(t.get(&format!("{core_events}/started")).await.status, 404);
}
