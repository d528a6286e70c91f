//! Custom resources checked by their CRD's schema: defaults, pruning, patterns, formats,
//! junctors, and several versions stored in one and served in each.

use serde_json::{Value, json};

use crate::support::TestServer;

/// A namespaced CRD `{plural}.example.com` of one version `v1` whose `spec` has
/// `properties`.
fn example_crd(plural: &str, kind: &str, properties: Value) -> Value {
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.example.com")},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": plural, "singular": kind.to_lowercase(), "kind": kind},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                "type": "object", "properties": {"spec": {"type": "object", "properties": properties}}}}}]}})
}

#[tokio::test]
async fn custom_resources_are_defaulted_and_pruned_by_their_schema() {
    let t = TestServer::start().await;
    let crd = example_crd(
        "gadgets",
        "Gadget",
        json!({"size": {"type": "integer", "default": 3},
            "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}),
    );
    t.create_crd(&crd).await;
    let gadget = json!({"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"},
        "spec": {"colour": "red", "extra": {"kept": true}}, "unknown": 1});
    let created = t
        .post("/apis/example.com/v1/namespaces/default/gadgets", &gadget)
        .await;
    assert_eq!(
        created.status,
        201,
        "{}",
        String::from_utf8_lossy(&created.body)
    );
    let stored = t
        .get("/apis/example.com/v1/namespaces/default/gadgets/g")
        .await
        .json();
    assert_eq!(stored["spec"], json!({"size": 3, "extra": {"kept": true}}));
    assert!(stored.get("unknown").is_none(), "{stored}");
}

#[tokio::test]
async fn custom_resources_are_checked_against_patterns_formats_and_junctors() {
    let t = TestServer::start().await;
    let crd = example_crd(
        "widgets",
        "Widget",
        json!({"name": {"type": "string", "pattern": "^[a-z]+$"},
            "when": {"type": "string", "format": "date-time"},
            "ports": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
                "anyOf": [{"required": ["a"]}, {"required": ["b"]}]}}),
    );
    let created = t
        .post(
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            &crd,
        )
        .await;
    assert_eq!(created.status, 201);
    let widgets = "/apis/example.com/v1/namespaces/default/widgets";
    let widget = |spec: serde_json::Value| json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": spec});
    let rejected = t
        .post(
            widgets,
            &widget(json!({"name": "ABC", "when": "yesterday", "ports": {}})),
        )
        .await;
    assert_eq!(rejected.status, 422);
    let causes: Vec<String> = rejected.json()["details"]["causes"]
        .as_array()
        .map(|causes| {
            causes
                .iter()
                .map(|c| format!("{} {}", c["field"], c["message"]))
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(
        causes,
        [
            r#""spec.name" "Invalid value: \"ABC\": spec.name in body should match '^[a-z]+$'""#,
            r#""<nil>" "Invalid value: \"\": \"spec.ports\" must validate at least one schema (anyOf)""#,
            r#""spec.ports.a" "Required value""#,
            r#""spec.when" "Invalid value: \"yesterday\": spec.when in body must be of type date-time: \"yesterday\"""#,
        ]
    );
    let accepted = t
        .post(
            widgets,
            &widget(json!({"name": "abc", "when": "2020-01-02T03:04:05Z", "ports": {"b": "x"}})),
        )
        .await;
    assert_eq!(
        accepted.status,
        201,
        "{}",
        String::from_utf8_lossy(&accepted.body)
    );
}

/// A CRD with a storage version, a deprecated served version and an unserved one, as
/// kube-apiserver v1.20 answered for it: objects are stored in `v1`, served in the version
/// asked for, pruned by the storage version's schema, and the deprecated version warns.
#[tokio::test]
async fn custom_resources_of_several_versions_are_stored_in_one_and_served_in_each() {
    let t = TestServer::start().await;
    let schema = |extra: bool| {
        let mut properties = json!({"size": {"type": "integer"}});
        if extra {
            properties["old"] = json!({"type": "string"});
        }
        json!({"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object", "properties": properties}}}})
    };
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "things.mv.example.com"},
        "spec": {"group": "mv.example.com", "scope": "Namespaced",
            "names": {"plural": "things", "singular": "thing", "kind": "Thing"},
            "versions": [
                {"name": "v1", "served": true, "storage": true, "schema": schema(false)},
                {"name": "v1beta1", "served": true, "storage": false, "deprecated": true,
                 "deprecationWarning": "use v1", "schema": schema(true)},
                {"name": "v1alpha1", "served": false, "storage": false, "schema": schema(true)}]}});
    let created = t
        .post(
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            &crd,
        )
        .await;
    assert_eq!(created.status, 201);
    let beta = "/apis/mv.example.com/v1beta1/namespaces/default/things";
    let mut watch = t.watch(&format!("{beta}?watch=true")).await;
    let thing = json!({"apiVersion": "mv.example.com/v1beta1", "kind": "Thing",
        "metadata": {"name": "t1"}, "spec": {"size": 1, "old": "x"}});
    let created = t.post(beta, &thing).await;
    assert_eq!(created.status, 201);
    assert_eq!(created.header("warning"), Some(r#"299 - "use v1""#));
    let answer = created.json();
    assert_eq!(answer["apiVersion"], "mv.example.com/v1beta1");
    assert_eq!(answer["spec"], json!({"size": 1}), "pruned by v1's schema");

    let stable = t
        .get("/apis/mv.example.com/v1/namespaces/default/things/t1")
        .await;
    assert_eq!(stable.header("warning"), None);
    assert_eq!(stable.json()["apiVersion"], "mv.example.com/v1");
    let listed = t.get(beta).await.json();
    assert_eq!(listed["apiVersion"], "mv.example.com/v1beta1");
    assert_eq!(listed["items"][0]["apiVersion"], "mv.example.com/v1beta1");
    let event = watch.next().await.expect("the ADDED event");
    assert_eq!(event["object"]["apiVersion"], "mv.example.com/v1beta1");

    let patched = t
        .patch(
            &format!("{beta}/t1"),
            "application/merge-patch+json",
            r#"{"spec":{"size":2}}"#,
        )
        .await;
    assert_eq!(patched.status, 200);
    assert_eq!(patched.json()["apiVersion"], "mv.example.com/v1beta1");
    let stable = t
        .get("/apis/mv.example.com/v1/namespaces/default/things/t1")
        .await
        .json();
    assert_eq!(stable["spec"], json!({"size": 2}));
    assert_eq!(
        t.get("/apis/mv.example.com/v1alpha1/namespaces/default/things")
            .await
            .status,
        404
    );
}

/// Issue 30: a custom resource whose body names another kind is a 422 naming that kind, as
/// a real kube-apiserver answers (checked on v1.20): on create and on a patch that
/// changes it. Another apiVersion stays a 400.
#[tokio::test]
async fn a_custom_resource_body_of_another_kind_is_invalid() {
    let t = TestServer::start().await;
    t.create_crd(&example_crd("widgets", "Widget", json!({})))
        .await;
    let path = "/apis/example.com/v1/namespaces/default/widgets";
    let reply = t
        .post(
            path,
            &json!({"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "a"}}),
        )
        .await;
    reply.assert_status_message(
        422,
        r#"Gadget.example.com "a" is invalid: kind: Invalid value: "Gadget": must be Widget"#,
    );
    let details = &reply.json()["details"];
    assert_eq!(
        (details["kind"].as_str(), details["group"].as_str()),
        (Some("Gadget"), Some("example.com"))
    );
    let other_version = t
        .post(
            path,
            &json!({"apiVersion": "other.com/v1", "kind": "Widget", "metadata": {"name": "b"}}),
        )
        .await;
    other_version.assert_status_message(
        400,
        "the API version in the data (other.com/v1) does not match the expected API version (example.com/v1)",
    );
    let created = t
        .post(
            path,
            &json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "ok"}}),
        )
        .await;
    assert_eq!(created.status, 201);
    let patched = t
        .patch(
            &format!("{path}/ok"),
            "application/merge-patch+json",
            r#"{"kind":"Gadget"}"#,
        )
        .await;
    patched.assert_status_message(
        422,
        r#"Gadget.example.com "ok" is invalid: kind: Invalid value: "Gadget": must be Widget"#,
    );
}
