//! `POST .../pods/{name}/eviction`: an `Eviction` (`kubectl drain`) deletes the Pod
//! unless a PodDisruptionBudget covering it allows no disruption, then answers 429 as
//! kube-apiserver does.

use super::*;
use std::sync::Arc;

use crate::registry::Propagation;

/// POST of an Eviction: 201 with a Success Status once the Pod is deleted.
pub(crate) fn evict(call: &Call) -> HandlerResult<Response<Body>> {
    let name = call.name().to_owned();
    let namespace = call.path.namespace.clone().unwrap_or_default();
    let body = as_object(call.decode_body()?)?;
    // An Eviction names its Pod; one without a name (or another name) evicts nothing.
    if meta_str(&Value::Object(body.clone()), "name") != name {
        return Err(fail(Status::bad_request(
            "name in URL does not match name in Eviction object",
        )));
    }
    let pod = call
        .state
        .store
        .get(&call.group_resource(), &call.key_for(&name))
        .ok_or_else(|| call.not_found(&name))?;
    if let Some(budget) = blocking_budget(call, &namespace, &pod.value) {
        let health = |field: &str| {
            budget
                .value
                .pointer(&format!("/status/{field}"))
                .and_then(Value::as_i64)
                .unwrap_or(0)
        };
        let mut status = Status::failure(
            StatusReason::TooManyRequests,
            "Cannot evict pod as it would violate the pod's disruption budget.",
        );
        status.details = Some(StatusDetails {
            causes: vec![StatusCause::new(
                "DisruptionBudget",
                &format!(
                    "The disruption budget {} needs {} healthy pods and has {} currently",
                    budget.name(),
                    health("desiredHealthy"),
                    health("currentHealthy")
                ),
                "",
            )],
            ..StatusDetails::default()
        });
        return Err(fail(status));
    }
    let options = body.get("deleteOptions");
    let precondition = |field: &str| {
        options
            .and_then(|o| o.pointer(&format!("/preconditions/{field}")))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let dry_run = options
        .and_then(|o| o.get("dryRun"))
        .and_then(Value::as_array)
        .is_some_and(|values| !values.is_empty());
    let delete = DeleteOptions {
        precondition_uid: precondition("uid"),
        precondition_rv: precondition("resourceVersion"),
        propagation: Some(Propagation::Background),
        grace_period_seconds: options
            .and_then(|o| o.get("gracePeriodSeconds"))
            .and_then(Value::as_i64),
    };
    let manager = call.field_manager();
    let check = call.field_check();
    let request = call.write_request(&manager, &check)?;
    let request = WriteRequest {
        // The Pod, not its eviction subresource.
        subresource: None,
        dry_run: dry_run || request.dry_run,
        // kube-apiserver's eviction deletes the Pod without admitting the deletion.
        admit: false,
        ..request
    };
    call.state.generic_store().delete(&request, &delete)?;
    let mut done = Status::success(None);
    done.code = StatusCode::CREATED.as_u16();
    Ok(json(StatusCode::CREATED, &done))
}

/// A PodDisruptionBudget in the Pod's namespace that selects it and allows no
/// disruption now (`status.disruptionsAllowed` 0, or a `maxUnavailable` of 0).
fn blocking_budget(call: &Call, namespace: &str, pod: &Value) -> Option<Arc<StoredObject>> {
    let labels = pod.pointer("/metadata/labels").and_then(Value::as_object);
    let budgets = call.state.store.snapshot(
        &GroupResource::new("policy", "poddisruptionbudgets"),
        &format!("{namespace}/"),
    );
    budgets.objects.iter().find_map(|budget| {
        let selector = budget.value.pointer("/spec/selector")?;
        let selects = selector
            .get("matchLabels")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .all(|(key, value)| labels.and_then(|l| l.get(key)) == Some(value));
        let blocked = budget
            .value
            .pointer("/status/disruptionsAllowed")
            .and_then(Value::as_i64)
            .map_or_else(
                || budget.value.pointer("/spec/maxUnavailable") == Some(&json!(0)),
                |allowed| allowed <= 0,
            );
        (selects && blocked).then(|| Arc::clone(budget))
    })
}
