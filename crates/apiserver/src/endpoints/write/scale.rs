//! The scale subresource: reading and writing replicas at the resource's paths.

use super::*;

fn value_at<'a>(object: &'a Value, path: &str) -> Option<&'a Value> {
    path.trim_start_matches('.')
        .split('.')
        .try_fold(object, |value, segment| value.get(segment))
}

/// kube-apiserver's `ValidateScale` on a written Scale: `spec.replicas` must not be
/// negative (422 naming the Scale, whatever the scaled resource).
pub(super) fn validate_scale_replicas(call: &Call, replicas: &Value) -> HandlerResult<()> {
    match replicas.as_i64() {
        Some(count) if count < 0 => Err(fail(Status::invalid(
            "autoscaling",
            "Scale",
            call.name(),
            vec![StatusCause::new(
                "FieldValueInvalid",
                &format!("Invalid value: {count}: must be greater than or equal to 0"),
                "spec.replicas",
            )],
        ))),
        _ => Ok(()),
    }
}

/// The object with `replicas` written at the resource's spec replicas path.
pub(super) fn with_replicas(call: &Call, object: &Value, replicas: Value) -> Map<String, Value> {
    let mut result = object.clone();
    let path = call
        .resource
        .scale
        .as_ref()
        .map_or(".spec.replicas", |s| s.spec_replicas_path.as_str())
        .trim_start_matches('.')
        .to_owned();
    let mut target = &mut result;
    let segments: Vec<&str> = path.split('.').collect();
    if let Some((last, parents)) = segments.split_last() {
        for segment in parents {
            if !target.get(*segment).is_some_and(Value::is_object) {
                target[*segment] = json!({});
            }
            target = &mut target[*segment];
        }
        target[*last] = replicas;
    }
    result.as_object().cloned().unwrap_or_default()
}

/// The `autoscaling/v1` Scale of an object.
/// A built-in workload's `spec.selector` as text (`app=web`), as its scale subresource
/// reports it: a LabelSelector (Deployments, ReplicaSets, StatefulSets) or a plain map
/// (ReplicationControllers); `None` without a selector or with one that does not convert.
fn builtin_selector_text(object: &Value) -> Option<String> {
    let selector = object.get("spec")?.get("selector")?;
    let as_label_selector =
        if selector.get("matchLabels").is_some() || selector.get("matchExpressions").is_some() {
            selector.clone()
        } else {
            json!({"matchLabels": selector})
        };
    crate::object::label_selector(Some(&as_label_selector))
        .ok()
        .map(|selector| selector.to_string())
}

pub(crate) fn scale_of(call: &Call, object: &Value) -> Value {
    let Some(scale) = &call.resource.scale else {
        return Value::Null;
    };
    let metadata = object.get("metadata");
    let pick = |field: &str| {
        metadata
            .and_then(|m| m.get(field))
            .cloned()
            .unwrap_or(Value::Null)
    };
    let mut status = json!({"replicas": value_at(object, &scale.status_replicas_path).cloned().unwrap_or(json!(0))});
    let selector = if call.resource.builtin {
        builtin_selector_text(object)
            .filter(|text| !text.is_empty())
            .map(Value::String)
    } else {
        scale
            .label_selector_path
            .as_deref()
            .and_then(|p| value_at(object, p))
            .cloned()
    };
    if let Some(selector) = selector {
        status["selector"] = selector;
    }
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            "name": pick("name"), "namespace": pick("namespace"), "uid": pick("uid"),
            "resourceVersion": pick("resourceVersion"), "creationTimestamp": pick("creationTimestamp"),
        },
        "spec": {"replicas": value_at(object, &scale.spec_replicas_path).cloned().unwrap_or(json!(0))},
        "status": status,
    })
}
