//! Regression tests of issue 24, item 5: validation that silently did nothing.

use serde_json::{Value, json};

use crate::support::TestServer;

const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";
const PODS: &str = "/api/v1/namespaces/default/pods";

#[tokio::test]
async fn put_without_metadata_name_is_400_and_keeps_the_data() {
    let t = TestServer::start().await;
    t.create_configmap("settings", json!({})).await;
    for body in [json!({"data": {}}), json!({"metadata": {}, "data": {}})] {
        let reply = t.put(&format!("{CONFIGMAPS}/settings"), &body).await;
        reply.assert_status_message(400, "the name of the object (settings based on URL) was undeterminable: name must be provided");
    }
    let stored = t.get(&format!("{CONFIGMAPS}/settings")).await.json();
    assert_eq!(stored["data"], json!({"k": "v"}), "nothing was wiped");
}

#[tokio::test]
async fn eviction_without_a_name_is_400_and_the_pod_stays() {
    let t = TestServer::start().await;
    let pod =
        json!({"metadata": {"name": "web"}, "spec": {"containers": [{"name": "c", "image": "x"}]}});
    assert_eq!(t.post(PODS, &pod).await.status, 201);
    for metadata in [json!({}), json!({"name": "other"})] {
        let eviction = json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": metadata});
        let reply = t.post(&format!("{PODS}/web/eviction"), &eviction).await;
        reply.assert_status_message(400, "name in URL does not match name in Eviction object");
    }
    assert_eq!(
        t.get(&format!("{PODS}/web")).await.status,
        200,
        "the Pod was not evicted"
    );
}

#[tokio::test]
async fn pod_with_duplicate_container_names_is_refused_on_create_and_apply() {
    let t = TestServer::start().await;
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "twins"},
        "spec": {"containers": [{"name": "c", "image": "x"}, {"name": "c", "image": "y"}]}});
    let reply = t.post(PODS, &pod).await;
    reply.assert_status_message(
        422,
        "Pod \"twins\" is invalid: spec.containers[1].name: Duplicate value: \"c\"",
    );
    let reply = t
        .patch(
            &format!("{PODS}/twins?fieldManager=test"),
            "application/apply-patch+yaml",
            &pod.to_string(),
        )
        .await;
    assert_eq!(
        reply.status,
        422,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    let init = json!({"metadata": {"name": "init-twin"},
        "spec": {"initContainers": [{"name": "c", "image": "x"}], "containers": [{"name": "c", "image": "y"}]}});
    let reply = t.post(PODS, &init).await;
    assert_eq!(reply.status, 422);
    assert_eq!(
        reply.json()["details"]["causes"][0]["field"],
        "spec.containers[0].name"
    );
}

fn pattern_crd(pattern: &str) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "words.example.com"},
        "spec": {
            "group": "example.com", "scope": "Namespaced",
            "names": {"plural": "words", "kind": "Word"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "word": {"type": "string", "pattern": pattern}}}}}]
        }
    })
}

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const WORDS: &str = "/apis/example.com/v1/namespaces/default/words";

fn word(name: &str, text: &str) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Word",
        "metadata": {"name": name}, "word": text})
}

#[tokio::test]
async fn crd_pattern_that_does_not_compile_is_refused_with_422() {
    let t = TestServer::start().await;
    t.post(CRDS, &pattern_crd("([")).await.assert_status_message(
        422,
        "CustomResourceDefinition.apiextensions.k8s.io \"words.example.com\" is invalid: \
         spec.versions[0].schema.openAPIV3Schema.properties[word].pattern: Invalid value: \"([\": \
         must be a valid regular expression, but isn't: error parsing regexp: missing closing ]: `[`",
    );
    // Lookahead and backreferences are not RE2: refused too, not ignored.
    for (pattern, error) in [
        ("^(?=a)", "invalid or unsupported Perl syntax: `(?=`"),
        (r"^(a)\1$", "invalid escape sequence: `\\1`"),
    ] {
        let reply = t.post(CRDS, &pattern_crd(pattern)).await;
        assert_eq!(reply.status, 422, "{pattern}");
        let message = reply.json()["message"].as_str().unwrap_or("").to_owned();
        assert!(message.ends_with(error), "{message}");
    }
    assert_eq!(
        t.get(&format!("{CRDS}/words.example.com")).await.status,
        404
    );
}

#[tokio::test]
async fn crd_update_to_a_pattern_that_does_not_compile_is_refused_and_the_old_one_stays_enforced() {
    let t = TestServer::start().await;
    t.create_crd(&pattern_crd("^[a-z]+$")).await;
    let mut crd = t.get(&format!("{CRDS}/words.example.com")).await.json();
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["word"]["pattern"] =
        json!("a{2}{3}(");
    let reply = t.put(&format!("{CRDS}/words.example.com"), &crd).await;
    assert_eq!(
        reply.status,
        422,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    assert_eq!(t.post(WORDS, &word("lower", "abc")).await.status, 201);
    assert_eq!(t.post(WORDS, &word("upper", "ABC")).await.status, 422);
}

#[tokio::test]
async fn crd_pattern_word_class_refuses_cafe_as_re2() {
    let t = TestServer::start().await;
    t.create_crd(&pattern_crd(r"^\w+$")).await;
    assert_eq!(t.post(WORDS, &word("plain", "cafe_1")).await.status, 201);
    let reply = t.post(WORDS, &word("accent", "café")).await;
    assert_eq!(
        reply.status,
        422,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    let message = reply.json()["message"].as_str().unwrap_or("").to_owned();
    assert!(message.contains(r"should match '^\w+$'"), "{message}");
}

#[tokio::test]
async fn crd_pattern_of_one_megabyte_is_compiled_and_enforced() {
    let t = TestServer::start().await;
    let words: Vec<String> = (0..120_000).map(|i| format!("w{i:07}")).collect();
    let pattern = format!("^(?:{})$", words.join("|"));
    assert!(pattern.len() > 1_000_000);
    t.create_crd(&pattern_crd(&pattern)).await;
    assert_eq!(t.post(WORDS, &word("listed", "w0119999")).await.status, 201);
    let reply = t.post(WORDS, &word("unlisted", "w0120000")).await;
    assert_eq!(
        reply.status,
        422,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
}
