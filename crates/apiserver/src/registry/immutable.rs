//! Fields an update may not change, with kube-apiserver's messages: a workload's
//! `spec.selector`, a Secret's `type`, the contents of
//! ConfigMaps and Secrets marked `immutable` (and that mark itself), a StatefulSet's
//! fixed spec fields, and `metadata.uid` (a PUT naming another uid fails its
//! precondition with 409, a patch changing it is 422); and those of the kinds with a
//! [`Strategy`](super::strategy::Strategy) (a Service's cluster IPs).

use kubeclient_machinery::{Status, StatusCause};
use serde_json::{Map, Value, json};

use super::store::{Decoding, StoreResult, WriteRequest, fail};
use super::strategy::strategy_for;
use crate::object::{meta_str, store_key};

/// Checks `desired` (the object a write asks for, before server fields are carried
/// over) against `current`: the causes of a 422 for every immutable field changed (they
/// follow the object's own validation errors in the answer, as in kube-apiserver).
///
/// # Errors
///
/// 409 for a PUT with another uid.
pub(crate) fn check(
    request: &WriteRequest<'_>,
    current: &Value,
    desired: &Map<String, Value>,
    decoding: Decoding,
) -> StoreResult<Vec<StatusCause>> {
    if request.subresource.is_some() {
        return Ok(Vec::new());
    }
    let current_uid = meta_str(current, "uid");
    let desired_value = Value::Object(desired.clone());
    let asked_uid = meta_str(&desired_value, "uid");
    let mut causes = Vec::new();
    if !asked_uid.is_empty() && asked_uid != current_uid {
        if decoding == Decoding::Body {
            return Err(fail(Status::conflict(
                &request.group_resource(),
                request.name,
                &format!(
                    "StorageError: invalid object, Code: 4, Key: /registry/{}/{}, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: {asked_uid}, UID in object meta: {current_uid}",
                    request.group_resource(),
                    store_key(request.namespace, request.name)
                ),
            )));
        }
        causes.push(StatusCause::new(
            "FieldValueInvalid",
            &format!("Invalid value: {asked_uid:?}: field is immutable"),
            "metadata.uid",
        ));
    }
    let old = |pointer: &str| current.pointer(pointer);
    let new = |pointer: &str| desired_value.pointer(pointer);
    let resource = request.resource;
    match (resource.group.as_str(), resource.kind.as_str()) {
        ("apps", "Deployment" | "ReplicaSet" | "DaemonSet" | "StatefulSet") => {
            if let (Some(before), Some(after)) = (old("/spec/selector"), new("/spec/selector"))
                && before != after
            {
                causes.push(StatusCause::new(
                    "FieldValueInvalid",
                    &format!(
                        "Invalid value: {}: field is immutable",
                        go_label_selector(after)
                    ),
                    "spec.selector",
                ));
            }
            if resource.kind == "StatefulSet" && statefulset_spec_changed(current, &desired_value) {
                causes.push(StatusCause::new(
                    "FieldValueForbidden",
                    "Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
                    "spec",
                ));
            }
        }
        ("", "ConfigMap" | "Secret") => {
            if resource.kind == "Secret"
                && let (Some(before), Some(after)) = (old("/type"), new("/type"))
                && before != after
            {
                causes.push(StatusCause::new(
                    "FieldValueInvalid",
                    &format!(
                        "Invalid value: {:?}: field is immutable",
                        after.as_str().unwrap_or("")
                    ),
                    "type",
                ));
            }
            if old("/immutable") == Some(&json!(true)) {
                let forbidden = |field: &str| {
                    StatusCause::new(
                        "FieldValueForbidden",
                        "Forbidden: field is immutable when `immutable` is set",
                        field,
                    )
                };
                if new("/immutable") != Some(&json!(true)) {
                    causes.push(forbidden("immutable"));
                }
                for field in ["data", "binaryData"] {
                    let pointer = format!("/{field}");
                    let empty =
                        |v: Option<&Value>| v.is_none_or(|v| v.is_null() || v == &json!({}));
                    let (before, after) = (old(&pointer), new(&pointer));
                    if before != after && !(empty(before) && empty(after)) {
                        causes.push(forbidden(field));
                    }
                }
            }
        }
        _ => {}
    }
    if let Some(strategy) = strategy_for(resource) {
        strategy.immutable_causes(current, &desired_value, &mut causes);
    }
    Ok(causes)
}

/// Whether a StatefulSet update changes a spec field other than the ones that may change.
fn statefulset_spec_changed(current: &Value, desired: &Value) -> bool {
    const MUTABLE: [&str; 6] = [
        "replicas",
        "ordinals",
        "template",
        "updateStrategy",
        "persistentVolumeClaimRetentionPolicy",
        "minReadySeconds",
    ];
    let fixed = |object: &Value| -> Map<String, Value> {
        object
            .get("spec")
            .and_then(Value::as_object)
            .map(|spec| {
                spec.iter()
                    .filter(|(key, _)| !MUTABLE.contains(&key.as_str()))
                    .map(|(key, value)| (key.clone(), value.clone()))
                    .collect()
            })
            .unwrap_or_default()
    };
    fixed(current) != fixed(desired)
}

/// A label selector as Go's `%#v` prints `v1.LabelSelector` (the API server's message).
pub(super) fn go_label_selector(selector: &Value) -> String {
    let quote = |v: &Value| format!("{:?}", v.as_str().unwrap_or(""));
    let labels = match selector.get("matchLabels").and_then(Value::as_object) {
        Some(map) if !map.is_empty() => {
            let pairs: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{k:?}:{}", quote(v)))
                .collect();
            format!("map[string]string{{{}}}", pairs.join(", "))
        }
        _ => "map[string]string(nil)".to_owned(),
    };
    let expressions = match selector.get("matchExpressions").and_then(Value::as_array) {
        Some(list) if !list.is_empty() => {
            let items: Vec<String> = list
                .iter()
                .map(|e| {
                    let values: Vec<String> = e
                        .get("values")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .map(quote)
                        .collect();
                    let values = if values.is_empty() {
                        "[]string(nil)".to_owned()
                    } else {
                        format!("[]string{{{}}}", values.join(", "))
                    };
                    format!(
                        "v1.LabelSelectorRequirement{{Key:{}, Operator:{}, Values:{values}}}",
                        quote(e.get("key").unwrap_or(&Value::Null)),
                        quote(e.get("operator").unwrap_or(&Value::Null)),
                    )
                })
                .collect();
            format!("[]v1.LabelSelectorRequirement{{{}}}", items.join(", "))
        }
        _ => "[]v1.LabelSelectorRequirement(nil)".to_owned(),
    };
    format!("v1.LabelSelector{{MatchLabels:{labels}, MatchExpressions:{expressions}}}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_print_as_go_does() {
        let selector = json!({"matchLabels": {"a": "b", "c": "d"}});
        assert_eq!(
            go_label_selector(&selector),
            r#"v1.LabelSelector{MatchLabels:map[string]string{"a":"b", "c":"d"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}"#
        );
        let with_expression = json!({"matchLabels": {"a": "b"}, "matchExpressions": [{"key": "c", "operator": "In", "values": ["d"]}]});
        assert_eq!(
            go_label_selector(&with_expression),
            r#"v1.LabelSelector{MatchLabels:map[string]string{"a":"b"}, MatchExpressions:[]v1.LabelSelectorRequirement{v1.LabelSelectorRequirement{Key:"c", Operator:"In", Values:[]string{"d"}}}}"#
        );
    }
}
