//! `admissionregistration.k8s.io/v1` webhook configurations over HTTP: served in
//! discovery, stored with v1's defaults, validated as kube-apiserver validates them, and
//! printed with their `Webhooks` column; the causes are kube-apiserver v1.20's. (The admission chain calling webhooks is tested
//! with real webhook servers in the client's `tests/it/admission.rs`.)

use serde_json::{Value, json};

use crate::support::TestServer;

const MUTATING: &str = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations";
const VALIDATING: &str = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations";

fn configuration(kind: &str, name: &str, webhooks: Value) -> Value {
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
        "metadata": {"name": name}, "webhooks": webhooks,
    })
}

fn good_hook(name: &str) -> Value {
    json!({
        "name": name,
        "clientConfig": {"url": "https://127.0.0.1:9443/validate"},
        "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    })
}

#[tokio::test]
async fn webhook_configurations_are_served_cluster_scoped_in_discovery() {
    let t = TestServer::start().await;
    let list = t.get("/apis/admissionregistration.k8s.io/v1").await.json();
    let resources = list["resources"].as_array().unwrap();
    for (name, kind) in [
        (
            "mutatingwebhookconfigurations",
            "MutatingWebhookConfiguration",
        ),
        (
            "validatingwebhookconfigurations",
            "ValidatingWebhookConfiguration",
        ),
    ] {
        let entry = resources
            .iter()
            .find(|r| r["name"] == name)
            .unwrap_or_else(|| panic!("{name} in {list}"));
        assert_eq!(entry["kind"], kind);
        assert_eq!(entry["namespaced"], false);
    }
}

#[tokio::test]
async fn a_stored_configuration_gets_v1s_defaults_and_a_webhooks_column() {
    let t = TestServer::start().await;
    let mut hook = good_hook("a.example.com");
    hook["clientConfig"] = json!({"service": {"namespace": "default", "name": "webhook"}});
    let created = t
        .post(
            MUTATING,
            &configuration("MutatingWebhookConfiguration", "m", json!([hook])),
        )
        .await;
    assert_eq!(
        created.status,
        201,
        "{}",
        String::from_utf8_lossy(&created.body)
    );
    let stored = created.json();
    let hook = &stored["webhooks"][0];
    assert_eq!(hook["failurePolicy"], "Fail");
    assert_eq!(hook["matchPolicy"], "Equivalent");
    assert_eq!(hook["timeoutSeconds"], 10);
    assert_eq!(hook["reinvocationPolicy"], "Never");
    assert_eq!(hook["namespaceSelector"], json!({}));
    assert_eq!(hook["objectSelector"], json!({}));
    assert_eq!(hook["rules"][0]["scope"], "*");
    assert_eq!(hook["clientConfig"]["service"]["port"], 443);
    assert_eq!(stored["metadata"]["generation"], 1);

    let table = t
        .get_accepting(MUTATING, "application/json;as=Table;v=v1;g=meta.k8s.io")
        .await
        .json();
    let columns: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(columns, ["Name", "Webhooks", "Age"]);
    assert_eq!(table["rows"][0]["cells"][1], 1);
}

#[tokio::test]
async fn invalid_configurations_are_refused_with_kube_apiservers_causes() {
    let t = TestServer::start().await;
    let mut bad = good_hook("short");
    bad["clientConfig"] = json!({"url": "http://127.0.0.1:9443/x?a=b",
                                 "service": {"namespace": "default", "name": "w"}});
    bad.as_object_mut().unwrap().remove("sideEffects");
    bad["admissionReviewVersions"] = json!(["v2"]);
    bad["timeoutSeconds"] = json!(31);
    bad["failurePolicy"] = json!("Sometimes");
    bad["rules"] = json!([{"operations": ["*", "CREATE"], "apiGroups": [], "apiVersions": ["v1"],
                           "resources": ["*", "pods"], "scope": "Everywhere"}]);
    let reply = t
        .post(
            VALIDATING,
            &configuration(
                "ValidatingWebhookConfiguration",
                "v",
                json!([bad, good_hook("a.example.com"), good_hook("a.example.com")]),
            ),
        )
        .await;
    assert_eq!(
        reply.status,
        422,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    let status = reply.json();
    let causes = reply.causes();
    let expect = |field: &str, message: &str| {
        assert!(
            causes.iter().any(|(f, m)| f == field && m == message),
            "no cause {field}: {message} in {causes:#?}"
        );
    };
    expect(
        "webhooks[0].name",
        "Invalid value: \"short\": should be a domain with at least three segments separated by dots",
    );
    expect(
        "webhooks[0].rules[0].operations",
        "Invalid value: []admissionregistration.OperationType{\"*\", \"CREATE\"}: if '*' is present, must not specify other operations",
    );
    expect("webhooks[0].rules[0].apiGroups", "Required value");
    expect(
        "webhooks[0].rules[0].resources",
        "Invalid value: []string{\"*\", \"pods\"}: if '*' is present, must not specify other resources without subresources",
    );
    expect(
        "webhooks[0].rules[0].scope",
        "Unsupported value: \"Everywhere\": supported values: \"*\", \"Cluster\", \"Namespaced\"",
    );
    expect(
        "webhooks[0].failurePolicy",
        "Unsupported value: \"Sometimes\": supported values: \"Fail\", \"Ignore\"",
    );
    expect(
        "webhooks[0].sideEffects",
        "Required value: must specify one of None, NoneOnDryRun",
    );
    expect(
        "webhooks[0].timeoutSeconds",
        "Invalid value: 31: the timeout value must be between 1 and 30 seconds",
    );
    expect(
        "webhooks[0].admissionReviewVersions",
        "Invalid value: []string{\"v2\"}: must include at least one of v1, v1beta1",
    );
    expect(
        "webhooks[0].clientConfig",
        "Required value: exactly one of url or service is required",
    );
    expect("webhooks[2].name", "Duplicate value: \"a.example.com\"");
    assert!(
        status["message"].as_str().unwrap().starts_with(
            "ValidatingWebhookConfiguration.admissionregistration.k8s.io \"v\" is invalid: ["
        ),
        "{status}"
    );

    let mut url = good_hook("b.example.com");
    url["clientConfig"] = json!({"url": "http://user@127.0.0.1/x?a=b#f"});
    let reply = t
        .post(
            VALIDATING,
            &configuration("ValidatingWebhookConfiguration", "u", json!([url])),
        )
        .await;
    assert_eq!(reply.status, 422);
    let text = String::from_utf8_lossy(&reply.body).to_string();
    for message in [
        "Invalid value: \\\"http\\\": 'https' is the only allowed URL scheme; desired format: https://host[/path]",
        "user information is not permitted in the URL",
        "query parameters are not permitted in the URL",
        "fragments are not permitted in the URL",
    ] {
        assert!(text.contains(message), "{message} not in {text}");
    }

    // caBundle is bytes: base64 that does not decode is refused before validation.
    let mut bundle = good_hook("c.example.com");
    bundle["clientConfig"]["caBundle"] = json!("not base64!");
    let reply = t
        .post(
            VALIDATING,
            &configuration("ValidatingWebhookConfiguration", "c", json!([bundle])),
        )
        .await;
    assert_eq!(
        reply.status,
        400,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
}
