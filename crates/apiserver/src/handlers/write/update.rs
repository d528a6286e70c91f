//! PUT: replacing an object, its status or its scale.

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
        return write_existing(call, false, Ownership::RecordUpdate, |current| {
            Ok(with_replicas(call, &current.value, replicas.clone()))
        });
    }
    write_existing(call, true, Ownership::RecordUpdate, |_| Ok(body.clone()))
}
