use k8s_openapi::api::core::v1::ConfigMap;
use serde_json::{Value, json};

use super::{
    AdmissionReview, CustomDefaulter, CustomValidator, Denial, Warnings, default_review,
    validate_review,
};

fn review(operation: &str, object: Option<Value>, old_object: Option<Value>) -> AdmissionReview {
    let mut request = json!({
        "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
        "operation": operation,
        "kind": {"group": "", "version": "v1", "kind": "ConfigMap"},
        "resource": {"group": "", "version": "v1", "resource": "configmaps"},
        "namespace": "default", "name": "settings",
        "userInfo": {"username": "alice", "groups": ["system:authenticated"]},
        "dryRun": false,
    });
    if let Some(object) = object {
        request["object"] = object;
    }
    if let Some(old) = old_object {
        request["oldObject"] = old;
    }
    serde_json::from_value(json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request,
    }))
    .unwrap()
}

fn config_map(data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": "settings", "namespace": "default"}, "data": data})
}

/// Adds `team: core` to the labels; refuses a ConfigMap whose data says `refuse`.
struct Labels;

impl CustomDefaulter<ConfigMap> for Labels {
    async fn default(&self, cm: &mut ConfigMap) -> Result<(), Denial> {
        if cm.data.as_ref().is_some_and(|d| d.contains_key("refuse")) {
            return Err(Denial::new("refused by policy"));
        }
        cm.metadata
            .labels
            .get_or_insert_default()
            .insert("team".into(), "core".into());
        Ok(())
    }
}

fn block_on<T>(future: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(future)
}

/// The object after applying a response's patch.
fn patched(original: &Value, answer: &AdmissionReview) -> Value {
    let response = answer.response.as_ref().unwrap();
    let mut object = original.clone();
    if let Some(patch) = &response.patch {
        let patch: json_patch::Patch = serde_json::from_slice(patch).unwrap();
        json_patch::patch(&mut object, &patch).unwrap();
    }
    object
}

#[test]
fn a_defaulter_answers_with_a_json_patch_of_its_changes_and_the_request_uid() {
    let object = config_map(json!({"k": "v"}));
    let answer = block_on(default_review(
        &Labels,
        review("CREATE", Some(object.clone()), None),
    ));
    let wire = serde_json::to_value(&answer).unwrap();
    assert_eq!(wire["apiVersion"], "admission.k8s.io/v1");
    assert_eq!(wire["kind"], "AdmissionReview");
    assert_eq!(
        wire["response"]["uid"],
        "705ab4f5-6393-11e8-b7cc-42010a800002"
    );
    assert_eq!(wire["response"]["allowed"], true);
    assert_eq!(wire["response"]["patchType"], "JSONPatch");
    assert!(
        wire["response"]["patch"].is_string(),
        "base64 on the wire: {wire}"
    );
    let mut expected = object.clone();
    expected["metadata"]["labels"] = json!({"team": "core"});
    assert_eq!(patched(&object, &answer), expected);
    let back: AdmissionReview = serde_json::from_value(wire).unwrap();
    assert_eq!(back, answer, "the answer reads back as written");
}

#[test]
fn fields_the_type_does_not_know_are_kept_and_an_unchanged_object_has_no_patch() {
    let mut object = config_map(json!({"k": "v"}));
    object["futureField"] = json!({"x": 1});
    object["metadata"]["labels"] = json!({"team": "core"});
    let answer = block_on(default_review(
        &Labels,
        review("UPDATE", Some(object.clone()), None),
    ));
    let response = answer.response.unwrap();
    assert!(response.allowed);
    assert_eq!(response.patch, None, "nothing changed, nothing removed");
    assert_eq!(response.patch_type, None);
}

#[test]
fn a_defaulter_skips_deletes_and_its_denials_and_bad_objects_are_refusals() {
    let deleted = block_on(default_review(&Labels, review("DELETE", None, None)));
    let response = deleted.response.unwrap();
    assert!(response.allowed && response.patch.is_none());

    let refused = block_on(default_review(
        &Labels,
        review("CREATE", Some(config_map(json!({"refuse": "yes"}))), None),
    ));
    let response = refused.response.unwrap();
    assert!(!response.allowed);
    let status = response.result.unwrap();
    assert_eq!(
        (status.code, status.reason.as_str(), status.message.as_str()),
        (403, "Forbidden", "refused by policy")
    );

    let garbage = block_on(default_review(
        &Labels,
        review("CREATE", Some(json!({"metadata": {"name": 7}})), None),
    ));
    let status = garbage.response.unwrap().result.unwrap();
    assert_eq!(status.code, 400);
    assert!(status.message.contains("ConfigMap"), "{}", status.message);

    let empty: AdmissionReview =
        serde_json::from_value(json!({"apiVersion": "admission.k8s.io/v1"})).unwrap();
    let status = block_on(default_review(&Labels, empty))
        .response
        .unwrap()
        .result
        .unwrap();
    assert_eq!(status.code, 400);
}

/// `data.owner` is immutable; creates warn when there is no owner; deletes of
/// ConfigMaps labelled `protected` are refused.
struct Owner;

fn owner(cm: &ConfigMap) -> Option<String> {
    cm.data.as_ref().and_then(|d| d.get("owner")).cloned()
}

impl CustomValidator<ConfigMap> for Owner {
    async fn validate_create(&self, cm: &ConfigMap) -> Result<Warnings, Denial> {
        Ok(owner(cm)
            .is_none()
            .then(|| "no data.owner: nobody will be paged".to_owned())
            .into_iter()
            .collect())
    }

    async fn validate_update(&self, old: &ConfigMap, new: &ConfigMap) -> Result<Warnings, Denial> {
        if owner(old) != owner(new) {
            return Err(Denial::invalid("data.owner is immutable"));
        }
        Ok(Vec::new())
    }

    async fn validate_delete(&self, cm: &ConfigMap) -> Result<Warnings, Denial> {
        let labels = cm.metadata.labels.clone().unwrap_or_default();
        if labels.contains_key("protected") {
            return Err(Denial::new("protected ConfigMaps are not deleted"));
        }
        Ok(Vec::new())
    }
}

#[test]
fn a_validator_sees_each_operation_with_the_right_objects() {
    let created = block_on(validate_review(
        &Owner,
        review("CREATE", Some(config_map(json!({}))), None),
    ));
    let response = created.response.unwrap();
    assert!(response.allowed);
    assert_eq!(response.warnings, ["no data.owner: nobody will be paged"]);

    let old = config_map(json!({"owner": "alice"}));
    let same = block_on(validate_review(
        &Owner,
        review("UPDATE", Some(old.clone()), Some(old.clone())),
    ));
    assert!(same.response.unwrap().allowed);
    let changed = block_on(validate_review(
        &Owner,
        review(
            "UPDATE",
            Some(config_map(json!({"owner": "bob"}))),
            Some(old.clone()),
        ),
    ));
    let response = changed.response.unwrap();
    assert!(!response.allowed);
    let status = response.result.unwrap();
    assert_eq!(
        (status.code, status.reason.as_str(), status.message.as_str()),
        (422, "Invalid", "data.owner is immutable")
    );

    let mut protected = old.clone();
    protected["metadata"]["labels"] = json!({"protected": "true"});
    let deleted = block_on(validate_review(
        &Owner,
        review("DELETE", None, Some(protected)),
    ));
    assert!(
        !deleted.response.unwrap().allowed,
        "the old object is the one deleted"
    );
    let deleted = block_on(validate_review(&Owner, review("DELETE", None, Some(old))));
    assert!(deleted.response.unwrap().allowed);

    let missing_old = block_on(validate_review(
        &Owner,
        review("UPDATE", Some(config_map(json!({}))), None),
    ));
    let status = missing_old.response.unwrap().result.unwrap();
    assert_eq!(status.code, 400);
    assert!(status.message.contains("oldObject"), "{}", status.message);
}
