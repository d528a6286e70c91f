//! Regression tests of issue 24, item 4: inputs that cost minutes or hundreds of MB.
//! (Their costs are measured by `examples/input_costs.rs`; tests never assert on time.)

use serde_json::{Value, json};

use crate::support::TestServer;

const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

/// A billion-laughs document of nine levels of nine aliases (~400 bytes, 9^9 nodes).
fn laughs() -> String {
    let mut doc = String::from(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: laughs}\nx:\n  a: &a [lol,lol,lol,lol,lol,lol,lol,lol,lol]\n",
    );
    let names = ["a", "b", "c", "d", "e", "f", "g", "h", "i"];
    for pair in names.windows(2) {
        let refs = vec![format!("*{}", pair[0]); 9].join(",");
        doc.push_str(&format!("  {}: &{} [{refs}]\n", pair[1], pair[1]));
    }
    doc
}

#[tokio::test]
async fn yaml_alias_bomb_is_refused_with_400_saying_it_aliases_excessively() {
    let t = TestServer::start().await;
    let doc = laughs();
    assert!(doc.len() < 500);
    for (method, path, content_type) in [
        ("POST", CONFIGMAPS.to_owned(), "application/yaml"),
        (
            "PATCH",
            format!("{CONFIGMAPS}/laughs?fieldManager=bomber"),
            "application/apply-patch+yaml",
        ),
    ] {
        let reply = t.request(method, &path, Some(content_type), &doc).await;
        assert_eq!(
            reply.status,
            400,
            "{}",
            String::from_utf8_lossy(&reply.body)
        );
        let message = reply.json()["message"].as_str().unwrap_or("").to_owned();
        assert!(
            message.starts_with(
                "the body of the request could not be decoded as YAML: yaml: document contains excessive aliasing"
            ),
            "{message}"
        );
    }
    assert_eq!(t.get(&format!("{CONFIGMAPS}/laughs")).await.status, 404);
}

#[tokio::test]
async fn yaml_with_modest_aliases_is_decoded_as_go_decodes_it() {
    let t = TestServer::start().await;
    let doc = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: anchors\n  labels: &l {app: web, tier: front}\n  annotations: *l\ndata:\n  a: &v shared\n  b: *v\n";
    let reply = t
        .request("POST", CONFIGMAPS, Some("application/yaml"), doc)
        .await;
    assert_eq!(
        reply.status,
        201,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    let stored = reply.json();
    assert_eq!(stored["metadata"]["annotations"]["tier"], "front");
    assert_eq!(stored["data"]["b"], "shared");
}

fn env_pod(env: Vec<Value>) -> String {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "many-env"},
        "spec": {"containers": [{"name": "main", "image": "busybox", "env": env}]}})
    .to_string()
}

/// The list-map apply that used to be quadratic: every entry kept, changed and shared
/// exactly as with a few entries.
#[tokio::test]
async fn apply_of_thousands_of_env_entries_keeps_changes_and_shares_them_as_with_few() {
    let t = TestServer::start().await;
    let n = 3_000usize;
    let pod = "/api/v1/namespaces/default/pods/many-env";
    let apply = |manager: &str, force: bool| {
        format!(
            "{pod}?fieldManager={manager}{}",
            if force { "&force=true" } else { "" }
        )
    };
    let yaml = "application/apply-patch+yaml";
    let entry = |i: usize, value: &str| json!({"name": format!("E{i}"), "value": value});
    let first: Vec<Value> = (0..n).map(|i| entry(i, "v")).collect();
    let reply = t.patch(&apply("alice", false), yaml, &env_pod(first)).await;
    assert_eq!(
        reply.status,
        201,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    // Alice drops every 4th entry and changes every 5th; bob takes every 3rd.
    let bob: Vec<Value> = (0..n).step_by(3).map(|i| entry(i, "b")).collect();
    let reply = t.patch(&apply("bob", true), yaml, &env_pod(bob)).await;
    assert_eq!(
        reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    let again: Vec<Value> = (0..n)
        .filter(|i| i % 4 != 0)
        .map(|i| match (i % 3, i % 5) {
            (0, _) => json!({"name": format!("E{i}")}),
            (_, 0) => entry(i, "w"),
            _ => entry(i, "v"),
        })
        .collect();
    let reply = t.patch(&apply("alice", false), yaml, &env_pod(again)).await;
    assert_eq!(
        reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    let result = reply.json();
    let expected: Vec<Value> = (0..n)
        .filter(|i| i % 4 != 0 || i % 3 == 0)
        .map(|i| match (i % 3, i % 5) {
            (0, _) => entry(i, "b"),
            (_, 0) => entry(i, "w"),
            _ => entry(i, "v"),
        })
        .collect();
    assert_eq!(
        result["spec"]["containers"][0]["env"],
        Value::Array(expected)
    );
    let owned = |manager: &str| -> usize {
        result["metadata"]["managedFields"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|e| e["manager"] == manager)
            .and_then(|e| {
                e["fieldsV1"]["f:spec"]["f:containers"]["k:{\"name\":\"main\"}"]["f:env"]
                    .as_object()
                    .map(|entries| entries.keys().filter(|k| k.starts_with("k:")).count())
            })
            .unwrap_or(0)
    };
    assert_eq!(owned("alice"), (0..n).filter(|i| i % 4 != 0).count());
    assert_eq!(owned("bob"), n.div_ceil(3));
}
