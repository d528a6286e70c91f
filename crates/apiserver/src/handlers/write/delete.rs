//! DELETE of one object (finalizers, preconditions, propagation) and deletecollection.

use super::*;

/// Delete options from the body (if any) or the query.
struct DeleteOptions {
    dry_run: bool,
    precondition_uid: Option<String>,
    precondition_rv: Option<String>,
}

fn delete_options(call: &Call) -> HandlerResult<DeleteOptions> {
    let body: Value = if call.body.iter().all(u8::is_ascii_whitespace) {
        Value::Null
    } else {
        serde_json::from_slice(&call.body).map_err(|err| {
            fail(Status::bad_request(format!(
                "the DeleteOptions body could not be decoded: {err}"
            )))
        })?
    };
    let dry_run = match body.get("dryRun").and_then(Value::as_array) {
        Some(values) => {
            let mut dry = false;
            for value in values {
                dry |= dry_run_value(value.as_str())?;
            }
            dry
        }
        None => call.dry_run()?,
    };
    if let Some(policy) = body
        .get("propagationPolicy")
        .and_then(Value::as_str)
        .or(call.query.get("propagationPolicy"))
        && !matches!(policy, "Foreground" | "Background" | "Orphan")
    {
        return Err(fail(Status::invalid(
            "meta.k8s.io",
            "DeleteOptions",
            "",
            vec![StatusCause::new(
                "FieldValueNotSupported",
                &format!(
                    "Unsupported value: {policy:?}: supported values: \"Foreground\", \"Background\", \"Orphan\""
                ),
                "propagationPolicy",
            )],
        )));
    }
    let preconditions = body.get("preconditions");
    let precondition = |field: &str| {
        preconditions
            .and_then(|p| p.get(field))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    Ok(DeleteOptions {
        dry_run,
        precondition_uid: precondition("uid"),
        precondition_rv: precondition("resourceVersion"),
    })
}

/// What a delete did.
enum Deleted {
    /// The object left storage; this was its last state.
    Removed(Value),
    /// The object has finalizers: it stays, marked for deletion.
    Marked(Value),
}

fn delete_one(call: &Call, name: &str, options: &DeleteOptions) -> HandlerResult<Deleted> {
    let mut result: Option<Deleted> = None;
    let group_resource = call.group_resource();
    call.state.store.write(&group_resource, &call.key_for(name), |current| {
        let current = current.ok_or_else(|| call.not_found(name))?;
        let uid = meta_str(&current.value, "uid");
        if let Some(expected) = &options.precondition_uid
            && expected != uid
        {
            return Err(fail(Status::conflict(
                &group_resource,
                name,
                &format!("Precondition failed: UID in precondition: {expected}, UID in object meta: {uid}"),
            )));
        }
        if let Some(expected) = &options.precondition_rv
            && *expected != current.rv.to_string()
        {
            return Err(fail(Status::conflict(
                &group_resource,
                name,
                &format!("Precondition failed: ResourceVersion in precondition: {expected}, ResourceVersion in object meta: {}", current.rv),
            )));
        }
        let has_finalizers = current
            .value
            .get("metadata")
            .and_then(|m| m.get("finalizers"))
            .and_then(Value::as_array)
            .is_some_and(|f| !f.is_empty());
        if !has_finalizers {
            result = Some(Deleted::Removed(current.value.clone()));
            return Ok(if options.dry_run { Write::Unchanged } else { Write::Delete });
        }
        let mut marked = current.value.as_object().cloned().unwrap_or_default();
        let metadata = metadata_mut(&mut marked);
        if metadata.contains_key("deletionTimestamp") {
            result = Some(Deleted::Marked(current.value.clone()));
            return Ok(Write::Unchanged);
        }
        metadata.insert("deletionTimestamp".to_owned(), json!(now()));
        metadata.insert("deletionGracePeriodSeconds".to_owned(), json!(0));
        if call.resource.tracks_generation {
            let generation = metadata.get("generation").and_then(Value::as_i64).unwrap_or(1);
            metadata.insert("generation".to_owned(), json!(generation + 1));
        }
        let marked = Value::Object(marked);
        result = Some(Deleted::Marked(marked.clone()));
        Ok(if options.dry_run { Write::Unchanged } else { Write::Update(marked) })
    })?;
    let deleted = result.ok_or_else(|| fail(Status::internal_error("delete decided nothing")))?;
    if let Deleted::Removed(object) = &deleted
        && !options.dry_run
    {
        after_removal(call, name, object);
    }
    Ok(deleted)
}

/// Side effects of removing a namespace (its contents go) or a CRD (its resource stops
/// being served and its objects go).
fn after_removal(call: &Call, name: &str, object: &Value) {
    match call.resource.special {
        Special::Namespace => {
            let prefix = format!("{name}/");
            for resource in call.state.registry.all().iter().filter(|r| r.namespaced) {
                let group_resource = resource.group_resource();
                for stored in call.state.store.snapshot(&group_resource, &prefix).objects {
                    let key = store_key(Some(name), stored.name());
                    let _ = call
                        .state
                        .store
                        .write(&group_resource, &key, |_| Ok::<_, ()>(Write::Delete));
                }
            }
        }
        Special::CustomResourceDefinition => {
            if let Ok(resources) = crd_resources(object)
                && let Some(first) = resources.first()
            {
                let group_resource = first.group_resource();
                call.state.registry.unregister(&first.group, &first.plural);
                for stored in call.state.store.snapshot(&group_resource, "").objects {
                    let key = store_key(Some(stored.namespace()), stored.name());
                    let _ = call
                        .state
                        .store
                        .write(&group_resource, &key, |_| Ok::<_, ()>(Write::Delete));
                }
                call.state.store.drop_watchers_of(&group_resource);
            }
        }
        Special::None => {}
    }
}

/// DELETE of one object.
pub(crate) fn delete(call: &Call) -> HandlerResult<Response<Body>> {
    if call.subresource().is_some() {
        return Err(fail(Status::failure(
            StatusReason::MethodNotAllowed,
            "the server does not allow this method on the requested resource",
        )));
    }
    let options = delete_options(call)?;
    let name = call.name().to_owned();
    match delete_one(call, &name, &options)? {
        Deleted::Marked(object) => Ok(json(StatusCode::OK, &object)),
        Deleted::Removed(object) if !call.resource.builtin => Ok(json(StatusCode::OK, &object)),
        Deleted::Removed(object) => {
            let group_resource = call.group_resource();
            Ok(json(
                StatusCode::OK,
                &Status::success(Some(StatusDetails {
                    name,
                    group: group_resource.group,
                    kind: group_resource.resource,
                    uid: meta_str(&object, "uid").to_owned(),
                    ..StatusDetails::default()
                })),
            ))
        }
    }
}

/// DELETE of a collection: every object matching the selectors; answers with the list of
/// the objects as they were before.
pub(crate) fn delete_collection(call: &Call) -> HandlerResult<Response<Body>> {
    let options = delete_options(call)?;
    let filter = call.selector_filter()?;
    let prefix = call.namespace_prefix();
    let snapshot = call.state.store.snapshot(&call.group_resource(), &prefix);
    let mut items = Vec::new();
    for object in snapshot.objects.iter().filter(|o| filter.matches(o)) {
        match delete_one(call, object.name(), &options) {
            Ok(_) => items.push(object.value.clone()),
            Err(status) if status.code == 404 => {}
            Err(status) => return Err(status),
        }
    }
    Ok(json(
        StatusCode::OK,
        &json!({
            "kind": call.resource.list_kind,
            "apiVersion": call.resource.api_version(),
            "metadata": {"resourceVersion": call.state.store.revision().to_string()},
            "items": items,
        }),
    ))
}
