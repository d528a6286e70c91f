//! `POST .../pods/{name}/binding`: a scheduler binds a Pod to a node (kube-apiserver's
//! `BindingREST.Create`). The Binding must carry the Pod's name and a target node by name
//! (`kind` empty or `Node`: kube-apiserver answers a bad target with a 500 carrying the
//! validation errors, and so does this server); a `metadata.uid` must be the Pod's. The
//! store's [`bind`](crate::registry::store::bind) sets `spec.nodeName` and `PodScheduled`
//! and answers 409 for a Pod already bound or being deleted. 201 with a Success Status.
//! Custom schedulers (a Pod's `schedulerName` other than `default-scheduler`) use it.

use super::*;

/// POST of a Binding: 201 with a Success Status once the Pod is bound.
pub(crate) fn bind_pod(call: &Call) -> HandlerResult<Response<Body>> {
    let name = call.name().to_owned();
    let namespace = call.path.namespace.clone().unwrap_or_default();
    let binding = Value::Object(as_object(call.decode_body()?)?);
    if meta_str(&binding, "name") != name {
        return Err(fail(Status::bad_request(
            "name in URL does not match name in Binding object",
        )));
    }
    let target = |field: &str| {
        binding
            .pointer(&format!("/target/{field}"))
            .and_then(Value::as_str)
            .unwrap_or("")
    };
    let mut errors = Vec::new();
    if !matches!(target("kind"), "" | "Node") {
        errors.push(format!(
            "target.kind: Unsupported value: {:?}: supported values: \"Node\", \"<empty>\"",
            target("kind")
        ));
    }
    if target("name").is_empty() {
        errors.push("target.name: Required value".to_owned());
    }
    match errors.as_slice() {
        [] => {}
        [one] => return Err(fail(Status::internal_error(one))),
        many => {
            return Err(fail(Status::internal_error(&format!(
                "[{}]",
                many.join(", ")
            ))));
        }
    }
    let pod = call
        .state
        .store
        .get(&call.group_resource(), &call.key_for(&name))
        .ok_or_else(|| call.not_found(&name))?;
    let uid = match meta_str(&binding, "uid") {
        "" => meta_str(&pod.value, "uid").to_owned(),
        given => given.to_owned(),
    };
    if !call.dry_run()? {
        store::bind(
            &call.state.generic_store(),
            &call.user,
            &namespace,
            &name,
            &uid,
            target("name"),
        )?;
    }
    let mut done = Status::success(None);
    done.code = StatusCode::CREATED.as_u16();
    Ok(json(StatusCode::CREATED, &done))
}
