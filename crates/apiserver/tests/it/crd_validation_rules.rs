//! CRD validation rules (`x-kubernetes-validations`, CEL) over HTTP: plain rules,
//! `messageExpression`, `fieldPath`, `reason`, transition rules, rules on list items and
//! map values, rules that do not compile or cost too much refused with the CRD, and the
//! rules checked on create, update, `/status`, merge patch and server-side apply, with
//! kube-apiserver's texts.

use serde_json::{Value, json};

use crate::support::{TestServer, assert_created};

const WIDGETS: &str = "/apis/example.com/v1/namespaces/default/widgets";
const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";

/// The `widgets.example.com` CRD (kind `Widget`, a status subresource) whose root schema
/// has `properties`.
fn widget_crd(properties: Value) -> Value {
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "properties": properties}}}]}})
}

/// A CRD whose `spec` has replicas, minReplicas and a name, with `rules` on `spec`.
fn spec_rules_crd(rules: Value) -> Value {
    widget_crd(
        json!({"spec": {"type": "object", "x-kubernetes-validations": rules,
        "properties": {"replicas": {"type": "integer"}, "minReplicas": {"type": "integer"},
                       "name": {"type": "string"}}}}),
    )
}

fn widget(spec: Value) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": spec})
}

#[tokio::test]
async fn a_rule_is_enforced_on_create_and_update_with_the_real_text() {
    let t = TestServer::start().await;
    t.create_crd(&spec_rules_crd(
        json!([{"rule": "self.minReplicas <= self.replicas"}]),
    ))
    .await;
    t.post(WIDGETS, &widget(json!({"replicas": 1, "minReplicas": 2})))
        .await
        .assert_status_message(
            422,
            r#"Widget.example.com "w" is invalid: spec: Invalid value: "object": failed rule: self.minReplicas <= self.replicas"#,
        );
    let created = t
        .post(WIDGETS, &widget(json!({"replicas": 3, "minReplicas": 2})))
        .await;
    assert_created(&created);
    let mut bad = created.json();
    bad["spec"]["replicas"] = json!(1);
    let updated = t.put(&format!("{WIDGETS}/w"), &bad).await;
    updated.assert_status_message(
        422,
        r#"Widget.example.com "w" is invalid: spec: Invalid value: "object": failed rule: self.minReplicas <= self.replicas"#,
    );
    assert_eq!(
        updated.json()["details"]["causes"][0],
        json!({"reason": "FieldValueInvalid", "field": "spec",
            "message": "Invalid value: \"object\": failed rule: self.minReplicas <= self.replicas"})
    );
}

#[tokio::test]
async fn message_expression_field_path_and_reason_shape_the_errors() {
    let t = TestServer::start().await;
    t.create_crd(&spec_rules_crd(json!([
        {"rule": "self.replicas <= 10", "fieldPath": ".replicas", "reason": "FieldValueForbidden",
         "messageExpression": "'replicas ' + string(self.replicas) + ' is over 10'"},
        {"rule": "has(self.name)", "reason": "FieldValueRequired", "message": "a name is required"},
        {"rule": "self.minReplicas != 7", "reason": "FieldValueDuplicate"},
        {"rule": "self.replicas != 12", "message": "twelve is unlucky"}
    ])))
    .await;
    t.post(WIDGETS, &widget(json!({"replicas": 12, "minReplicas": 7})))
        .await
        .assert_status_message(
            422,
            r#"Widget.example.com "w" is invalid: [spec.replicas: Forbidden: replicas 12 is over 10, spec: Required value: a name is required, spec: Duplicate value: "object", spec: Invalid value: "object": twelve is unlucky]"#,
        );
    assert_created(
        &t.post(
            WIDGETS,
            &widget(json!({"replicas": 2, "minReplicas": 1, "name": "x"})),
        )
        .await,
    );
}

#[tokio::test]
async fn a_transition_rule_makes_a_field_immutable() {
    let t = TestServer::start().await;
    t.create_crd(&widget_crd(json!({"spec": {"type": "object", "properties": {
        "name": {"type": "string",
            "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "name is immutable"}]},
        "replicas": {"type": "integer"}}}})))
    .await;
    // Created freely: there is no old value.
    let created = t
        .post(WIDGETS, &widget(json!({"name": "a", "replicas": 1})))
        .await;
    assert_created(&created);
    let mut same = created.json();
    same["spec"]["replicas"] = json!(2);
    let kept = t.put(&format!("{WIDGETS}/w"), &same).await;
    assert_eq!(kept.status, 200, "{}", String::from_utf8_lossy(&kept.body));
    let mut changed = kept.json();
    changed["spec"]["name"] = json!("b");
    t.put(&format!("{WIDGETS}/w"), &changed)
        .await
        .assert_status_message(
            422,
            r#"Widget.example.com "w" is invalid: spec.name: Invalid value: "string": name is immutable"#,
        );
    // A merge patch is checked on the merged object, against the stored one.
    t.patch(
        &format!("{WIDGETS}/w"),
        "application/merge-patch+json",
        r#"{"spec": {"name": "c"}}"#,
    )
    .await
    .assert_status_message(
        422,
        r#"Widget.example.com "w" is invalid: spec.name: Invalid value: "string": name is immutable"#,
    );
}

#[tokio::test]
async fn rules_on_list_items_and_map_values_name_the_element() {
    let t = TestServer::start().await;
    t.create_crd(&widget_crd(json!({"spec": {"type": "object", "properties": {
        "ports": {"type": "array", "items": {"type": "integer",
            "x-kubernetes-validations": [{"rule": "self > 0 && self < 65536", "message": "not a port"}]}},
        "labels": {"type": "object", "additionalProperties": {"type": "string",
            "x-kubernetes-validations": [{"rule": "self.size() <= 5"}]}},
        "hosts": {"type": "array", "maxItems": 10, "items": {"type": "string"},
            "x-kubernetes-validations": [{"rule": "self.all(h, h.endsWith('.example.com'))",
                "message": "hosts must be under example.com"}]}}}})))
    .await;
    t.post(
        WIDGETS,
        &widget(json!({"ports": [80, 70000], "labels": {"ok": "a", "long": "toolong"},
            "hosts": ["a.example.com", "b.other.org"]})),
    )
    .await
    .assert_status_message(
        422,
        r#"Widget.example.com "w" is invalid: [spec.hosts: Invalid value: "array": hosts must be under example.com, spec.labels[long]: Invalid value: "string": failed rule: self.size() <= 5, spec.ports[1]: Invalid value: "integer": not a port]"#,
    );
    assert_created(
        &t.post(
            WIDGETS,
            &widget(json!({"ports": [80], "labels": {"ok": "a"}, "hosts": ["a.example.com"]})),
        )
        .await,
    );
}

#[tokio::test]
async fn a_rule_that_does_not_compile_fails_the_crd_with_the_real_message() {
    let t = TestServer::start().await;
    let reply = t
        .post(CRDS, &spec_rules_crd(json!([{"rule": "self.replicas >"}])))
        .await;
    assert_eq!(
        reply.status,
        422,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    let message = reply.json()["message"].as_str().unwrap_or("").to_owned();
    assert!(
        message.starts_with(
            r#"CustomResourceDefinition.apiextensions.k8s.io "widgets.example.com" is invalid: spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: "self.replicas >": compilation failed: ERROR: <input>:1:"#
        ),
        "{message}"
    );
    let undeclared = t
        .post(CRDS, &spec_rules_crd(json!([{"rule": "replicas > 1"}])))
        .await;
    assert_eq!(undeclared.status, 422);
    assert!(
        undeclared.json()["message"].as_str().unwrap_or("").contains(
            "compilation failed: ERROR: <input>:1:1: undeclared reference to 'replicas' (in container '')"
        ),
        "{}",
        String::from_utf8_lossy(&undeclared.body)
    );
    t.post(CRDS, &spec_rules_crd(json!([{"rule": "self.replica > 1"}])))
        .await
        .assert_status_message(
            422,
            "CustomResourceDefinition.apiextensions.k8s.io \"widgets.example.com\" is invalid: spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: \"self.replica > 1\": compilation failed: ERROR: <input>:1:5: undefined field 'replica'\n | self.replica > 1\n | ....^",
        );
    let bad_reason = t
        .post(
            CRDS,
            &spec_rules_crd(json!([{"rule": "true", "reason": "Nope", "fieldPath": ".missing"}])),
        )
        .await;
    bad_reason.assert_status_message(
        422,
        r#"CustomResourceDefinition.apiextensions.k8s.io "widgets.example.com" is invalid: [spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].reason: Unsupported value: "Nope": supported values: "FieldValueInvalid", "FieldValueForbidden", "FieldValueRequired", "FieldValueDuplicate", spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].fieldPath: Invalid value: ".missing": fieldPath must be a valid path: does not refer to a valid field]"#,
    );
    // Nothing was served.
    assert_eq!(t.get(WIDGETS).await.status, 404);
}

#[tokio::test]
async fn status_writes_are_checked_by_the_status_rules() {
    let t = TestServer::start().await;
    t.create_crd(&widget_crd(json!({
        "spec": {"type": "object", "properties": {"replicas": {"type": "integer"}}},
        "status": {"type": "object",
            "x-kubernetes-validations": [{"rule": "self.ready <= self.total", "message": "ready exceeds total"}],
            "properties": {"ready": {"type": "integer"}, "total": {"type": "integer"}}}})))
    .await;
    let created = t.post(WIDGETS, &widget(json!({"replicas": 1}))).await;
    assert_created(&created);
    let mut object = created.json();
    object["status"] = json!({"ready": 3, "total": 2});
    t.put(&format!("{WIDGETS}/w/status"), &object)
        .await
        .assert_status_message(
            422,
            r#"Widget.example.com "w" is invalid: status: Invalid value: "object": ready exceeds total"#,
        );
    t.patch(
        &format!("{WIDGETS}/w/status"),
        "application/merge-patch+json",
        r#"{"status": {"ready": 5, "total": 1}}"#,
    )
    .await
    .assert_status_message(
        422,
        r#"Widget.example.com "w" is invalid: status: Invalid value: "object": ready exceeds total"#,
    );
    object["status"] = json!({"ready": 1, "total": 2});
    let ok = t.put(&format!("{WIDGETS}/w/status"), &object).await;
    assert_eq!(ok.status, 200, "{}", String::from_utf8_lossy(&ok.body));
}

#[tokio::test]
async fn server_side_apply_and_json_patch_are_checked() {
    let t = TestServer::start().await;
    t.create_crd(&spec_rules_crd(
        json!([{"rule": "self.minReplicas <= self.replicas", "message": "minReplicas over replicas"}]),
    ))
    .await;
    let path = format!("{WIDGETS}/w?fieldManager=test");
    let apply = |spec: &str| {
        format!("apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n{spec}\n")
    };
    t.patch(
        &path,
        "application/apply-patch+yaml",
        &apply("  replicas: 1\n  minReplicas: 4"),
    )
    .await
    .assert_status_message(
        422,
        r#"Widget.example.com "w" is invalid: spec: Invalid value: "object": minReplicas over replicas"#,
    );
    let applied = t
        .patch(
            &path,
            "application/apply-patch+yaml",
            &apply("  replicas: 5\n  minReplicas: 4"),
        )
        .await;
    assert_created(&applied);
    t.patch(
        &format!("{WIDGETS}/w"),
        "application/json-patch+json",
        r#"[{"op": "replace", "path": "/spec/replicas", "value": 2}]"#,
    )
    .await
    .assert_status_message(
        422,
        r#"Widget.example.com "w" is invalid: spec: Invalid value: "object": minReplicas over replicas"#,
    );
}

#[tokio::test]
async fn schema_errors_that_block_rules_say_so() {
    let t = TestServer::start().await;
    t.create_crd(&spec_rules_crd(json!([{"rule": "self.replicas > 0"}])))
        .await;
    t.post(WIDGETS, &widget(json!({"replicas": "many"})))
        .await
        .assert_status_message(
            422,
            r#"Widget.example.com "w" is invalid: [spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string", <nil>: Invalid value: "null": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation]"#,
        );
}

#[tokio::test]
async fn hostile_rules_are_refused_or_bounded_and_the_server_stays_up() {
    let t = TestServer::start().await;
    // Quadratic over a list the schema does not bound: refused with the CRD.
    let unbounded = widget_crd(json!({"spec": {"type": "object", "properties": {
        "items": {"type": "array", "items": {"type": "string"},
            "x-kubernetes-validations": [{"rule": "self.all(x, self.all(y, x == y || x != y))"}]}}}}));
    let refused = t.post(CRDS, &unbounded).await;
    assert_eq!(refused.status, 422);
    assert!(
        refused.json()["message"].as_str().unwrap_or("").contains(
            "x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of more than 100x"
        ),
        "{}",
        String::from_utf8_lossy(&refused.body)
    );
    // Expression nesting past the parser's limit does not compile (and does not crash).
    let deep = format!("{}true{}", "(".repeat(500), ")".repeat(500));
    let nested = t
        .post(CRDS, &spec_rules_crd(json!([{ "rule": deep }])))
        .await;
    assert_eq!(
        nested.status,
        422,
        "{}",
        String::from_utf8_lossy(&nested.body)
    );
    // Bounded by maxItems, accepted; a full list is stopped before it is evaluated, and
    // runtime errors are reported, not fatal.
    t.create_crd(&widget_crd(
        json!({"spec": {"type": "object", "properties": {
        "items": {"type": "array", "maxItems": 300, "items": {"type": "integer"},
            "x-kubernetes-validations": [{"rule": "self.all(x, self.all(y, x == y || x != y))"}]},
        "divisor": {"type": "integer",
            "x-kubernetes-validations": [{"rule": "10 / self > 1"}]}}}}),
    ))
    .await;
    let big: Vec<i64> = (0..300).collect();
    let stopped = t.post(WIDGETS, &widget(json!({"items": big}))).await;
    stopped.assert_status_message(
        422,
        r#"Widget.example.com "w" is invalid: spec.items: Invalid value: "array": 'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: self.all(x, self.all(y, x == y || x != y))"#,
    );
    t.post(WIDGETS, &widget(json!({"divisor": 0})))
        .await
        .assert_status_message(
            422,
            r#"Widget.example.com "w" is invalid: spec.divisor: Invalid value: "integer": division by zero evaluating rule: 10 / self > 1"#,
        );
    assert_created(
        &t.post(WIDGETS, &widget(json!({"items": [1, 2, 3], "divisor": 2})))
            .await,
    );
    assert_eq!(t.get(&format!("{WIDGETS}/w")).await.status, 200);
}

#[tokio::test]
async fn kubernetes_libraries_are_available_to_rules() {
    let t = TestServer::start().await;
    t.create_crd(&widget_crd(json!({"spec": {"type": "object", "properties": {
        "endpoint": {"type": "string", "x-kubernetes-validations": [
            {"rule": "isURL(self) && url(self).getScheme() == 'https'", "message": "must be an https URL"}]},
        "address": {"type": "string", "x-kubernetes-validations": [
            {"rule": "isIP(self) && cidr('10.0.0.0/8').containsIP(self)", "message": "must be in 10.0.0.0/8"}]},
        "memory": {"type": "string", "x-kubernetes-validations": [
            {"rule": "isQuantity(self) && quantity(self).isLessThan(quantity('1Gi'))", "message": "at most 1Gi"}]},
        "tags": {"type": "array", "maxItems": 5, "items": {"type": "string"}, "x-kubernetes-validations": [
            {"rule": "self.isSorted()", "message": "tags must be sorted"},
            {"rule": "sets.contains(['a', 'b', 'c'], self)", "message": "unknown tag"}]},
        "host": {"type": "string", "x-kubernetes-validations": [
            {"rule": "!format.dns1123Subdomain().validate(self).hasValue()",
             "messageExpression": "format.dns1123Subdomain().validate(self).value()[0]"}]}}}})))
    .await;
    t.post(
        WIDGETS,
        &widget(json!({"endpoint": "http://x", "address": "11.0.0.1", "memory": "2Gi", "tags": ["b", "a", "z"],
            "host": "Bad_Host"})),
    )
    .await
    .assert_status_message(
        422,
        r#"Widget.example.com "w" is invalid: [spec.address: Invalid value: "string": must be in 10.0.0.0/8, spec.endpoint: Invalid value: "string": must be an https URL, spec.host: Invalid value: "string": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*'), spec.memory: Invalid value: "string": at most 1Gi, spec.tags: Invalid value: "array": tags must be sorted, spec.tags: Invalid value: "array": unknown tag]"#,
    );
    assert_created(
        &t.post(
            WIDGETS,
            &widget(
                json!({"endpoint": "https://x.example.com/a", "address": "10.1.2.3",
                "memory": "512Mi", "tags": ["a", "b"], "host": "a.example.com"}),
            ),
        )
        .await,
    );
}

#[tokio::test]
async fn root_rules_report_nil_and_optional_old_self_runs_on_create() {
    let t = TestServer::start().await;
    let mut crd = widget_crd(json!({"spec": {"type": "object", "properties": {
        "phase": {"type": "string", "x-kubernetes-validations": [{
            "rule": "oldSelf.hasValue() ? self != '' : self == 'New'",
            "optionalOldSelf": true, "message": "a widget starts in phase New"}]}}}}));
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["x-kubernetes-validations"] =
        json!([{"rule": "self.metadata.name.startsWith('w')", "message": "names start with w"}]);
    t.create_crd(&crd).await;
    let mut other = widget(json!({"phase": "New"}));
    other["metadata"]["name"] = json!("x");
    t.post(WIDGETS, &other).await.assert_status_message(
        422,
        r#"Widget.example.com "x" is invalid: <nil>: Invalid value: "object": names start with w"#,
    );
    t.post(WIDGETS, &widget(json!({"phase": "Running"})))
        .await
        .assert_status_message(
            422,
            r#"Widget.example.com "w" is invalid: spec.phase: Invalid value: "string": a widget starts in phase New"#,
        );
    let created = t.post(WIDGETS, &widget(json!({"phase": "New"}))).await;
    assert_created(&created);
    let mut running = created.json();
    running["spec"]["phase"] = json!("Running");
    let updated = t.put(&format!("{WIDGETS}/w"), &running).await;
    assert_eq!(
        updated.status,
        200,
        "{}",
        String::from_utf8_lossy(&updated.body)
    );
}

#[tokio::test]
async fn rules_added_by_a_crd_update_apply_to_later_writes() {
    let t = TestServer::start().await;
    t.create_crd(&spec_rules_crd(json!([]))).await;
    assert_created(
        &t.post(WIDGETS, &widget(json!({"replicas": 1, "minReplicas": 2})))
            .await,
    );
    let mut crd = t.get(&format!("{CRDS}/widgets.example.com")).await.json();
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["x-kubernetes-validations"] = json!([{"rule": "self.minReplicas <= self.replicas", "message": "minReplicas over replicas"}]);
    let updated = t.put(&format!("{CRDS}/widgets.example.com"), &crd).await;
    assert_eq!(
        updated.status,
        200,
        "{}",
        String::from_utf8_lossy(&updated.body)
    );
    let mut second = widget(json!({"replicas": 1, "minReplicas": 2}));
    second["metadata"]["name"] = json!("w2");
    t.post(WIDGETS, &second).await.assert_status_message(
        422,
        r#"Widget.example.com "w2" is invalid: spec: Invalid value: "object": minReplicas over replicas"#,
    );
    // The object stored before the rule keeps its invalid spec through an unrelated
    // update (ratcheting), and cannot change it to another invalid one.
    let mut old = t.get(&format!("{WIDGETS}/w")).await.json();
    old["metadata"]["labels"] = json!({"touched": "yes"});
    let relabelled = t.put(&format!("{WIDGETS}/w"), &old).await;
    assert_eq!(
        relabelled.status,
        200,
        "{}",
        String::from_utf8_lossy(&relabelled.body)
    );
    let mut worse = relabelled.json();
    worse["spec"]["minReplicas"] = json!(3);
    t.put(&format!("{WIDGETS}/w"), &worse)
        .await
        .assert_status_message(
            422,
            r#"Widget.example.com "w" is invalid: spec: Invalid value: "object": minReplicas over replicas"#,
        );
    // A rule that does not compile cannot be added by an update either.
    let mut broken = t.get(&format!("{CRDS}/widgets.example.com")).await.json();
    broken["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["x-kubernetes-validations"] =
        json!([{"rule": "self.minReplicas <="}]);
    assert_eq!(
        t.put(&format!("{CRDS}/widgets.example.com"), &broken)
            .await
            .status,
        422
    );
}
