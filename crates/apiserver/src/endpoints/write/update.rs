//! PUT: replacing an object, its status or its scale.

use super::create::create_object;
use super::existing::write_existing;
use super::scale::{validate_scale_replicas, with_replicas};
use super::*;

/// PUT: replaces an object (or its status / scale).
pub(crate) fn update(call: &Call) -> HandlerResult<Response<Body>> {
    if call.query.get("force").is_some() {
        return Err(force_forbidden(call));
    }
    let body = as_object(call.decode_body()?)?;
    if call.subresource() == Some("scale") {
        let replicas = body
            .get("spec")
            .and_then(|s| s.get("replicas"))
            .cloned()
            .unwrap_or(json!(0));
        validate_scale_replicas(call, &replicas)?;
        // A Scale carrying a resourceVersion is a precondition on the object's, as in
        // kube-apiserver (a stale `kubectl scale --resource-version` gets 409).
        let scale_rv = meta_str(&Value::Object(body.clone()), "resourceVersion").to_owned();
        return write_existing(call, false, Ownership::RecordUpdate, |current| {
            if !scale_rv.is_empty() && scale_rv != current.rv.to_string() {
                return Err(conflict(&call.group_resource(), call.name()));
            }
            Ok(with_replicas(call, &current.value, replicas.clone()))
        });
    }
    // A PUT names what it writes (kube-apiserver's `checkName`): a body without a name
    // would otherwise replace the object with whatever it carries.
    if meta_str(&Value::Object(body.clone()), "name").is_empty() {
        return Err(fail(Status::bad_request(format!(
            "the name of the object ({} based on URL) was undeterminable: name must be provided",
            call.name()
        ))));
    }
    if call.subresource().is_none() && strategy_for(&call.resource).allow_create_on_update() {
        let name = call.name();
        let missing = call
            .state
            .store
            .get(&call.storage(), &call.key_for(name))
            .is_none();
        if missing {
            let mut body = body;
            let metadata = metadata_mut(&mut body);
            let body_name = metadata.get("name").and_then(Value::as_str).unwrap_or("");
            if !body_name.is_empty() && body_name != name {
                return Err(fail(Status::bad_request(format!(
                    "the name of the object ({body_name}) does not match the name on the URL ({name})"
                ))));
            }
            metadata.insert("name".to_owned(), json!(name));
            metadata.remove("resourceVersion");
            return create_object(call, body, Ownership::RecordUpdate);
        }
    }
    write_existing(call, true, Ownership::RecordUpdate, |_| Ok(body.clone()))
}
