//! `ValidatingAdmissionPolicy` and `ValidatingAdmissionPolicyBinding` over HTTP (issue 30):
//! served with v1's defaults and kubectl's columns, validated with kube-apiserver's texts
//! (expressions that do not compile refused), and enforced on writes: Deny, Warn and Audit,
//! `message`/`messageExpression`/`reason`, namespace selectors and excluded rules, params
//! from ConfigMaps (by name, by selector, `parameterNotFoundAction`), `matchConditions`,
//! `variables`, `failurePolicy` on runtime errors, custom resources, deletes, hostile
//! expressions, and the real kubectl.

use serde_json::{Value, json};

use crate::kubectl::Kubectl;
use crate::support::{Reply, TestServer, assert_created};

const POLICIES: &str = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies";
const BINDINGS: &str = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings";
const DEPLOYMENTS: &str = "/apis/apps/v1/namespaces/default/deployments";

fn policy(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name}, "spec": spec})
}

fn binding(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name}, "spec": spec})
}

/// `matchConstraints` naming Deployments on create and update.
fn deployments_rule() -> Value {
    json!({"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"],
        "operations": ["CREATE", "UPDATE"], "resources": ["deployments"]}]})
}

fn deployment(name: &str, replicas: i64) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})
}

/// kube-apiserver's refusal of Deployment `name` by `policy` through `binding`.
fn denied(name: &str, policy: &str, binding: &str, message: &str) -> String {
    format!(
        r#"deployments.apps "{name}" is forbidden: ValidatingAdmissionPolicy '{policy}' with binding '{binding}' denied request: {message}"#
    )
}

/// Asserts the status code, showing the body when it differs.
#[track_caller]
fn assert_code(reply: &Reply, code: u16) {
    assert_eq!(
        reply.status,
        code,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
}

/// A merge patch that must succeed.
async fn merge_patch(t: &TestServer, path: &str, body: &str) {
    assert_code(
        &t.patch(path, "application/merge-patch+json", body).await,
        200,
    );
}

/// The column names of a Table.
fn column_names(table: &Value) -> Vec<&str> {
    table["columnDefinitions"]
        .as_array()
        .map(|columns| columns.iter().filter_map(|c| c["name"].as_str()).collect())
        .unwrap_or_default()
}

/// Creates a policy and its binding (both must be accepted).
async fn install(t: &TestServer, policy_body: Value, binding_body: Value) {
    assert_created(&t.post(POLICIES, &policy_body).await);
    assert_created(&t.post(BINDINGS, &binding_body).await);
}

/// The replicas policy `object.spec.replicas <= 5` bound with `actions`.
async fn replicas_policy(t: &TestServer, actions: Value) {
    install(
        t,
        policy(
            "replicas.example.com",
            json!({"matchConstraints": deployments_rule(),
                "validations": [{"expression": "object.spec.replicas <= 5"}]}),
        ),
        binding(
            "replicas-binding",
            json!({"policyName": "replicas.example.com", "validationActions": actions}),
        ),
    )
    .await;
}

const DENIED: &str = "ValidatingAdmissionPolicy 'replicas.example.com' with binding 'replicas-binding' denied request: failed expression: object.spec.replicas <= 5";

#[tokio::test]
async fn both_kinds_are_served_with_v1_defaults_and_kubectl_columns() {
    let t = TestServer::start().await;
    let list = t.get("/apis/admissionregistration.k8s.io/v1").await.json();
    for (name, kind) in [
        ("validatingadmissionpolicies", "ValidatingAdmissionPolicy"),
        (
            "validatingadmissionpolicybindings",
            "ValidatingAdmissionPolicyBinding",
        ),
    ] {
        let entry = list["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name)
            .unwrap_or_else(|| panic!("{name} in {list}"));
        assert_eq!(entry["kind"], kind);
        assert_eq!(entry["namespaced"], false);
    }
    let created = t
        .post(
            POLICIES,
            &policy(
                "p.example.com",
                json!({"paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
                    "matchConstraints": deployments_rule(),
                    "validations": [{"expression": "true"}]}),
            ),
        )
        .await;
    assert_created(&created);
    let spec = &created.json()["spec"];
    assert_eq!(spec["failurePolicy"], "Fail");
    assert_eq!(spec["matchConstraints"]["matchPolicy"], "Equivalent");
    assert_eq!(spec["matchConstraints"]["namespaceSelector"], json!({}));
    assert_eq!(spec["matchConstraints"]["objectSelector"], json!({}));
    assert_eq!(spec["matchConstraints"]["resourceRules"][0]["scope"], "*");
    let created = t
        .post(
            BINDINGS,
            &binding(
                "b",
                json!({"policyName": "p.example.com", "validationActions": ["Deny"],
                    "paramRef": {"name": "limits"}}),
            ),
        )
        .await;
    assert_created(&created);
    assert_eq!(
        created.json()["spec"]["paramRef"]["parameterNotFoundAction"],
        "Deny"
    );
    let table_accept = "application/json;as=Table;v=v1;g=meta.k8s.io";
    let table = t.get_accepting(POLICIES, table_accept).await.json();
    assert_eq!(
        column_names(&table),
        ["Name", "Validations", "ParamKind", "Age"]
    );
    assert_eq!(table["rows"][0]["cells"][1], 1);
    assert_eq!(table["rows"][0]["cells"][2], "v1/ConfigMap");
    let table = t.get_accepting(BINDINGS, table_accept).await.json();
    assert_eq!(
        column_names(&table),
        ["Name", "PolicyName", "ParamRef", "Age"]
    );
    assert_eq!(table["rows"][0]["cells"][1], "p.example.com");
    assert_eq!(table["rows"][0]["cells"][2], "*/limits");
}

#[tokio::test]
async fn a_deny_policy_refuses_creates_and_updates_with_the_real_text() {
    let t = TestServer::start().await;
    replicas_policy(&t, json!(["Deny"])).await;
    let refused = t.post(DEPLOYMENTS, &deployment("web", 6)).await;
    refused.assert_status_message(
        422,
        &format!(r#"deployments.apps "web" is forbidden: {DENIED}"#),
    );
    let status = refused.json();
    assert_eq!(status["reason"], "Invalid");
    assert_eq!(status["details"]["causes"][0]["message"], DENIED);
    assert_created(&t.post(DEPLOYMENTS, &deployment("web", 3)).await);
    let patched = t
        .patch(
            &format!("{DEPLOYMENTS}/web"),
            "application/merge-patch+json",
            r#"{"spec": {"replicas": 9}}"#,
        )
        .await;
    assert_code(&patched, 422);
    // Removing the binding takes effect on the next write.
    assert_eq!(
        t.delete(&format!("{BINDINGS}/replicas-binding"))
            .await
            .status,
        200
    );
    assert_created(&t.post(DEPLOYMENTS, &deployment("big", 9)).await);
}

#[tokio::test]
async fn message_message_expression_and_reason_shape_the_refusal() {
    let t = TestServer::start().await;
    install(
        &t,
        policy(
            "messages.example.com",
            json!({"matchConstraints": deployments_rule(), "validations": [
                {"expression": "object.spec.replicas != 7", "message": "seven is unlucky", "reason": "Forbidden"},
                {"expression": "object.spec.replicas <= 5",
                 "messageExpression": "'replicas ' + string(object.spec.replicas) + ' is over 5'"}]}),
        ),
        binding(
            "messages",
            json!({"policyName": "messages.example.com", "validationActions": ["Deny"]}),
        ),
    )
    .await;
    let refused = t.post(DEPLOYMENTS, &deployment("web", 7)).await;
    refused.assert_status_message(
        403,
        &denied(
            "web",
            "messages.example.com",
            "messages",
            "seven is unlucky",
        ),
    );
    assert_eq!(refused.json()["reason"], "Forbidden");
    t.post(DEPLOYMENTS, &deployment("web", 6))
        .await
        .assert_status_message(
            422,
            &denied(
                "web",
                "messages.example.com",
                "messages",
                "replicas 6 is over 5",
            ),
        );
}

#[tokio::test]
async fn warn_adds_a_warning_and_audit_lets_the_write_through_silently() {
    let t = TestServer::start().await;
    replicas_policy(&t, json!(["Warn", "Audit"])).await;
    let created = t.post(DEPLOYMENTS, &deployment("web", 6)).await;
    assert_created(&created);
    assert_eq!(
        created.header("warning"),
        Some(
            r#"299 - "Validation failed for ValidatingAdmissionPolicy 'replicas.example.com' with binding 'replicas-binding': failed expression: object.spec.replicas <= 5""#
        )
    );
    merge_patch(
        &t,
        &format!("{BINDINGS}/replicas-binding"),
        r#"{"spec": {"validationActions": ["Audit"]}}"#,
    )
    .await;
    let created = t.post(DEPLOYMENTS, &deployment("other", 6)).await;
    assert_created(&created);
    assert_eq!(created.header("warning"), None);
}

#[tokio::test]
async fn a_binding_namespace_selector_and_excluded_rules_narrow_the_match() {
    let t = TestServer::start().await;
    assert_created(
        &t.post(
            "/api/v1/namespaces",
            &json!({"metadata": {"name": "test", "labels": {"environment": "test"}}}),
        )
        .await,
    );
    install(
        &t,
        policy(
            "replicas.example.com",
            json!({"matchConstraints": deployments_rule(),
                "validations": [{"expression": "object.spec.replicas <= 5"}]}),
        ),
        binding(
            "replicas-binding",
            json!({"policyName": "replicas.example.com", "validationActions": ["Deny"],
                "matchResources": {"namespaceSelector": {"matchLabels": {"environment": "test"}}}}),
        ),
    )
    .await;
    assert_created(&t.post(DEPLOYMENTS, &deployment("web", 6)).await);
    let refused = t
        .post(
            "/apis/apps/v1/namespaces/test/deployments",
            &deployment("web", 6),
        )
        .await;
    assert_code(&refused, 422);

    install(
        &t,
        policy(
            "no-data.example.com",
            json!({"matchConstraints": {
                    "resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                        "operations": ["CREATE"], "resources": ["configmaps", "secrets"]}],
                    "excludeResourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                        "operations": ["*"], "resources": ["secrets"]}]},
                "validations": [{"expression": "false", "message": "no"}]}),
        ),
        binding(
            "no-data",
            json!({"policyName": "no-data.example.com", "validationActions": ["Deny"]}),
        ),
    )
    .await;
    let refused = t
        .post(
            "/api/v1/namespaces/default/configmaps",
            &json!({"metadata": {"name": "c"}}),
        )
        .await;
    assert_code(&refused, 422);
    assert_created(
        &t.post(
            "/api/v1/namespaces/default/secrets",
            &json!({"metadata": {"name": "s"}}),
        )
        .await,
    );
}

/// A policy limiting replicas to the `maxReplicas` of its ConfigMap params.
fn params_policy() -> Value {
    policy(
        "limits.example.com",
        json!({"paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
            "matchConstraints": deployments_rule(),
            "validations": [{"expression": "object.spec.replicas <= int(params.data.maxReplicas)",
                "messageExpression": "'at most ' + params.data.maxReplicas + ' replicas'"}]}),
    )
}

async fn limits_config_map(t: &TestServer, name: &str, labels: Value, max: &str) {
    assert_created(
        &t.post(
            "/api/v1/namespaces/default/configmaps",
            &json!({"metadata": {"name": name, "labels": labels}, "data": {"maxReplicas": max}}),
        )
        .await,
    );
}

#[tokio::test]
async fn params_come_from_a_config_map_by_name_or_by_selector() {
    let t = TestServer::start().await;
    limits_config_map(&t, "limits", json!({}), "2").await;
    install(
        &t,
        params_policy(),
        binding(
            "by-name",
            json!({"policyName": "limits.example.com", "validationActions": ["Deny"],
                "paramRef": {"name": "limits", "namespace": "default"}}),
        ),
    )
    .await;
    t.post(DEPLOYMENTS, &deployment("web", 3))
        .await
        .assert_status_message(
            422,
            &denied("web", "limits.example.com", "by-name", "at most 2 replicas"),
        );
    assert_created(&t.post(DEPLOYMENTS, &deployment("web", 2)).await);
    // A change of the params counts on the next write.
    merge_patch(
        &t,
        "/api/v1/namespaces/default/configmaps/limits",
        r#"{"data": {"maxReplicas": "4"}}"#,
    )
    .await;
    assert_created(&t.post(DEPLOYMENTS, &deployment("four", 4)).await);

    // By selector (namespace omitted: the request's), every selected object must pass.
    assert_eq!(t.delete(&format!("{BINDINGS}/by-name")).await.status, 200);
    limits_config_map(&t, "tight", json!({"limits": "yes"}), "1").await;
    assert_created(
        &t.post(
            BINDINGS,
            &binding(
                "by-selector",
                json!({"policyName": "limits.example.com", "validationActions": ["Deny"],
                    "paramRef": {"selector": {"matchLabels": {"limits": "yes"}},
                        "parameterNotFoundAction": "Deny"}}),
            ),
        )
        .await,
    );
    t.post(DEPLOYMENTS, &deployment("two", 2))
        .await
        .assert_status_message(
            422,
            &denied(
                "two",
                "limits.example.com",
                "by-selector",
                "at most 1 replicas",
            ),
        );
    assert_created(&t.post(DEPLOYMENTS, &deployment("one", 1)).await);
}

#[tokio::test]
async fn missing_params_deny_or_allow_as_the_binding_says() {
    let t = TestServer::start().await;
    install(
        &t,
        params_policy(),
        binding(
            "missing",
            json!({"policyName": "limits.example.com", "validationActions": ["Deny"],
                "paramRef": {"name": "absent", "parameterNotFoundAction": "Deny"}}),
        ),
    )
    .await;
    t.post(DEPLOYMENTS, &deployment("web", 1)).await.assert_status_message(
        422,
        &denied("web", "limits.example.com", "missing", "failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"),
    );
    merge_patch(
        &t,
        &format!("{BINDINGS}/missing"),
        r#"{"spec": {"paramRef": {"parameterNotFoundAction": "Allow"}}}"#,
    )
    .await;
    assert_created(&t.post(DEPLOYMENTS, &deployment("web", 100)).await);
    // A cluster-scoped paramKind takes no paramRef namespace (a configuration error).
    install(
        &t,
        policy(
            "cluster-params.example.com",
            json!({"paramKind": {"apiVersion": "v1", "kind": "Namespace"},
                "matchConstraints": deployments_rule(),
                "validations": [{"expression": "true"}]}),
        ),
        binding(
            "cluster-params",
            json!({"policyName": "cluster-params.example.com", "validationActions": ["Deny"],
                "paramRef": {"name": "default", "namespace": "default"}}),
        ),
    )
    .await;
    t.post(DEPLOYMENTS, &deployment("other", 1)).await.assert_status_message(
        422,
        &denied("other", "cluster-params.example.com", "cluster-params", "failed to configure binding: paramRef.namespace must not be provided for a cluster-scoped `paramKind`"),
    );
}

#[tokio::test]
async fn match_conditions_and_variables_decide_what_is_checked() {
    let t = TestServer::start().await;
    install(
        &t,
        policy(
            "conditions.example.com",
            json!({"matchConstraints": deployments_rule(),
                "matchConditions": [{"name": "checked", "expression": "object.metadata.name.startsWith('checked-')"}],
                "variables": [{"name": "replicas", "expression": "object.spec.replicas"},
                              {"name": "doubled", "expression": "variables.replicas * 2"}],
                "validations": [{"expression": "variables.doubled <= 4",
                    "messageExpression": "'doubled is ' + string(variables.doubled)"}]}),
        ),
        binding(
            "conditions",
            json!({"policyName": "conditions.example.com", "validationActions": ["Deny"]}),
        ),
    )
    .await;
    assert_created(&t.post(DEPLOYMENTS, &deployment("free", 9)).await);
    t.post(DEPLOYMENTS, &deployment("checked-a", 3))
        .await
        .assert_status_message(
            422,
            &denied(
                "checked-a",
                "conditions.example.com",
                "conditions",
                "doubled is 6",
            ),
        );
    assert_created(&t.post(DEPLOYMENTS, &deployment("checked-b", 2)).await);
}

#[tokio::test]
async fn failure_policy_decides_on_runtime_errors() {
    let t = TestServer::start().await;
    let spec = |failure: &str| {
        json!({"failurePolicy": failure, "matchConstraints": deployments_rule(),
            "validations": [{"expression": "object.spec.missing == 1"}]})
    };
    install(
        &t,
        policy("broken.example.com", spec("Fail")),
        binding(
            "broken",
            json!({"policyName": "broken.example.com", "validationActions": ["Deny"]}),
        ),
    )
    .await;
    t.post(DEPLOYMENTS, &deployment("web", 1))
        .await
        .assert_status_message(
            422,
            &denied(
                "web",
                "broken.example.com",
                "broken",
                "expression 'object.spec.missing == 1' resulted in error: no such key: missing",
            ),
        );
    merge_patch(
        &t,
        &format!("{POLICIES}/broken.example.com"),
        r#"{"spec": {"failurePolicy": "Ignore"}}"#,
    )
    .await;
    assert_created(&t.post(DEPLOYMENTS, &deployment("web", 1)).await);
}

#[tokio::test]
async fn a_policy_checks_custom_resources_and_deletes() {
    let t = TestServer::start().await;
    t.create_crd(&json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}}))
    .await;
    install(
        &t,
        policy(
            "widgets.example.com",
            json!({"matchConstraints": {"resourceRules": [{"apiGroups": ["example.com"], "apiVersions": ["*"],
                    "operations": ["CREATE", "UPDATE", "DELETE"], "resources": ["widgets"]}]},
                "validations": [
                    {"expression": "request.operation == 'DELETE' ? (object == null && oldObject.metadata.name != 'keep') : object.spec.size < 10",
                     "messageExpression": "request.operation + ' of ' + request.name + ' by ' + request.userInfo.username + ' refused'"}]}),
        ),
        binding(
            "widgets",
            json!({"policyName": "widgets.example.com", "validationActions": ["Deny"]}),
        ),
    )
    .await;
    let widgets = "/apis/example.com/v1/namespaces/default/widgets";
    let widget = |name: &str, size: i64| json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name}, "spec": {"size": size}});
    let refused = t.post(widgets, &widget("big", 12)).await;
    assert_code(&refused, 422);
    let message = refused.json()["message"].as_str().unwrap_or("").to_owned();
    assert!(
        message.starts_with(r#"widgets.example.com "big" is forbidden: ValidatingAdmissionPolicy 'widgets.example.com' with binding 'widgets' denied request: CREATE of big by "#),
        "{message}"
    );
    assert_created(&t.post(widgets, &widget("keep", 1)).await);
    assert_created(&t.post(widgets, &widget("drop", 1)).await);
    assert_eq!(t.delete(&format!("{widgets}/drop")).await.status, 200);
    let refused = t.delete(&format!("{widgets}/keep")).await;
    assert_code(&refused, 422);
}

#[tokio::test]
async fn invalid_policies_and_bindings_are_refused_with_the_real_causes() {
    let t = TestServer::start().await;
    let refused = t
        .post(
            POLICIES,
            &policy(
                "bad.example.com",
                json!({"validations": [
                    {"expression": "object.spec.replicas <="},
                    {"expression": "foo.bar == 1"},
                    {"expression": "1 + 1"},
                    {"expression": "true", "reason": "Teapot", "message": "a\nb"}],
                    "variables": [{"name": "not-an-identifier", "expression": "1"}]}),
            ),
        )
        .await;
    assert_code(&refused, 422);
    let causes = refused.causes();
    let cause = |field: &str| {
        causes
            .iter()
            .find(|(f, _)| f == field)
            .map(|(_, m)| m.clone())
            .unwrap_or_else(|| panic!("no cause at {field}: {causes:?}"))
    };
    assert_eq!(cause("spec.matchConstraints"), "Required value");
    assert!(
        cause("spec.validations[0].expression").starts_with(
            r#"Invalid value: "object.spec.replicas <=": compilation failed: ERROR: <input>:1:"#
        ),
        "{causes:?}"
    );
    assert_eq!(
        cause("spec.validations[1].expression"),
        "Invalid value: \"foo.bar == 1\": compilation failed: ERROR: <input>:1:1: undeclared reference to 'foo' (in container '')\n | foo.bar == 1\n | ^"
    );
    assert_eq!(
        cause("spec.validations[2].expression"),
        r#"Invalid value: "1 + 1": cel expression must evaluate to a bool"#
    );
    assert_eq!(
        cause("spec.validations[3].reason"),
        r#"Unsupported value: "Teapot": supported values: "Forbidden", "Invalid", "RequestEntityTooLarge", "Unauthorized""#
    );
    assert_eq!(
        cause("spec.validations[3].message"),
        r#"Invalid value: "a\nb": message must not contain line breaks"#
    );
    assert_eq!(
        cause("spec.variables[0].name"),
        r#"Invalid value: "not-an-identifier": name is not a valid CEL identifier"#
    );

    let refused = t
        .post(
            BINDINGS,
            &binding(
                "bad",
                json!({"validationActions": ["Deny", "Warn", "Deny", "Shout"],
                    "paramRef": {"name": "x", "selector": {}}}),
            ),
        )
        .await;
    assert_code(&refused, 422);
    let causes = refused.causes();
    for (field, message) in [
        ("spec.policyName", "Required value"),
        ("spec.validationActions[2]", r#"Duplicate value: "Deny""#),
        (
            "spec.validationActions[3]",
            r#"Unsupported value: "Shout": supported values: "Audit", "Deny", "Warn""#,
        ),
        (
            "spec.validationActions",
            r#"Invalid value: []admissionregistration.ValidationAction{"Deny", "Warn", "Deny", "Shout"}: must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)"#,
        ),
        (
            "spec.paramRef.name",
            "Forbidden: name and selector are mutually exclusive",
        ),
    ] {
        assert!(
            causes.iter().any(|(f, m)| f == field && m == message),
            "{field}: {message} in {causes:?}"
        );
    }
    let refused = t
        .post(BINDINGS, &binding("empty", json!({"policyName": "p"})))
        .await;
    assert_eq!(
        refused.causes(),
        [(
            "spec.validationActions".to_owned(),
            "Required value: at least one validation action is required".to_owned()
        )]
    );
}

#[tokio::test]
async fn hostile_expressions_and_configurations_never_take_the_server_down() {
    let t = TestServer::start().await;
    // Too deep, and too long: refused before parsing.
    let deep = format!("{}true{}", "(".repeat(5_000), ")".repeat(5_000));
    let long = format!("'{}' == ''", "a".repeat(200_000));
    for (expression, problem) in [
        (
            deep.as_str(),
            "compilation failed: expression nesting exceeds the limit of 250",
        ),
        (
            long.as_str(),
            "compilation failed: expression code point size exceeds limit",
        ),
    ] {
        let refused = t
            .post(
                POLICIES,
                &policy(
                    "hostile.example.com",
                    json!({"matchConstraints": deployments_rule(),
                        "validations": [{"expression": expression}]}),
                ),
            )
            .await;
        assert_eq!(refused.status, 422);
        assert!(
            refused
                .causes()
                .iter()
                .any(|(f, m)| f == "spec.validations[0].expression" && m.contains(problem)),
            "{problem}: {:?}",
            refused
                .causes()
                .iter()
                .map(|(f, m)| (f, m.chars().take(200).collect::<String>()))
                .collect::<Vec<_>>()
        );
    }
    // A nested comprehension over a large object is stopped by the cost bound.
    install(
        &t,
        policy(
            "expensive.example.com",
            json!({"matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                    "operations": ["CREATE"], "resources": ["configmaps"]}]},
                "validations": [{"expression":
                    "object.data.all(a, object.data.all(b, object.data.all(c, a + b + c != '')))"}]}),
        ),
        binding(
            "expensive",
            json!({"policyName": "expensive.example.com", "validationActions": ["Deny"]}),
        ),
    )
    .await;
    let data: serde_json::Map<String, Value> = (0..400)
        .map(|i| (format!("key{i}"), json!("value")))
        .collect();
    let refused = t
        .post(
            "/api/v1/namespaces/default/configmaps",
            &json!({"metadata": {"name": "big"}, "data": data}),
        )
        .await;
    assert_code(&refused, 422);
    assert!(
        refused.json()["message"]
            .as_str()
            .unwrap_or("")
            .ends_with("resulted in error: operation cancelled: actual cost limit exceeded"),
        "{}",
        String::from_utf8_lossy(&refused.body)
    );
    assert_eq!(t.delete(&format!("{BINDINGS}/expensive")).await.status, 200);
    // A paramKind no resource serves: a configuration error under failurePolicy Fail.
    install(
        &t,
        policy(
            "nowhere.example.com",
            json!({"paramKind": {"apiVersion": "example.com/v9", "kind": "Nothing"},
                "matchConstraints": deployments_rule(),
                "validations": [{"expression": "params.x == 1"}]}),
        ),
        binding(
            "nowhere",
            json!({"policyName": "nowhere.example.com", "validationActions": ["Deny"],
                "paramRef": {"name": "x"}}),
        ),
    )
    .await;
    t.post(DEPLOYMENTS, &deployment("web", 1)).await.assert_status_message(
        422,
        &denied("web", "nowhere.example.com", "nowhere", "failed to configure policy: failed to find resource referenced by paramKind: 'example.com/v9, Kind=Nothing'"),
    );
    // Params that are not what the expression expects: an evaluation error, not a crash.
    install(
        &t,
        policy(
            "odd-params.example.com",
            json!({"paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
                "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                    "operations": ["CREATE"], "resources": ["secrets"]}]},
                "validations": [{"expression": "params.data.limit.size() > 1 && params.x[0] == 1"}]}),
        ),
        binding(
            "odd-params",
            json!({"policyName": "odd-params.example.com", "validationActions": ["Deny"],
                "paramRef": {"name": "odd", "namespace": "default"}}),
        ),
    )
    .await;
    limits_config_map(&t, "odd", json!({}), "1").await;
    let refused = t
        .post(
            "/api/v1/namespaces/default/secrets",
            &json!({"metadata": {"name": "s"}}),
        )
        .await;
    assert_code(&refused, 422);
    // Still serving.
    assert_eq!(
        t.get("/api/v1/namespaces/default/configmaps").await.status,
        200
    );
}

#[tokio::test]
async fn kubectl_applies_a_policy_and_shows_its_refusal() {
    let t = TestServer::start().await;
    let kubectl = Kubectl::for_server(&t);
    let manifest = kubectl.write(
        "policy.yaml",
        r#"apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: demo-policy.example.com
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups: ["apps"]
      apiVersions: ["v1"]
      operations: ["CREATE", "UPDATE"]
      resources: ["deployments"]
  validations:
  - expression: "object.spec.replicas <= 5"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: demo-binding-test.example.com
spec:
  policyName: demo-policy.example.com
  validationActions: [Deny]
"#,
    );
    let applied = kubectl.ok(&["apply", "-f", &manifest]).await;
    assert!(
        applied.contains(
            "validatingadmissionpolicy.admissionregistration.k8s.io/demo-policy.example.com created"
        ),
        "{applied}"
    );
    let output = kubectl
        .run(&[
            "create",
            "deployment",
            "nginx",
            "--image=nginx",
            "--replicas=6",
        ])
        .await;
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("ValidatingAdmissionPolicy 'demo-policy.example.com' with binding 'demo-binding-test.example.com' denied request: failed expression: object.spec.replicas <= 5"),
        "{stderr}"
    );
    let listed = kubectl.ok(&["get", "validatingadmissionpolicies"]).await;
    assert!(listed.contains("VALIDATIONS"), "{listed}");
}
