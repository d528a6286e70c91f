//! DELETE of one object (finalizers, preconditions, propagation) and deletecollection.
//!
//! [`delete_object`] is also how the server's own controllers delete (the garbage collector
//! and the namespace controller, in [`crate::controllers`]).

use super::*;
use crate::registry::{CRD_CLEANUP_FINALIZER, Propagation, event_versions, set_terminating};
use crate::state::State;

/// Delete options from the body (if any) or the query.
#[derive(Clone, Debug, Default)]
pub(crate) struct DeleteOptions {
    pub(crate) dry_run: bool,
    pub(crate) precondition_uid: Option<String>,
    pub(crate) precondition_rv: Option<String>,
    /// `propagationPolicy` (or the deprecated `orphanDependents`); `None` uses the
    /// resource's default.
    pub(crate) propagation: Option<Propagation>,
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
    let policy = body
        .get("propagationPolicy")
        .and_then(Value::as_str)
        .or(call.query.get("propagationPolicy"));
    let orphan_dependents = match body.get("orphanDependents") {
        Some(value) => value.as_bool(),
        None => call.query.get("orphanDependents").map(|v| v == "true"),
    };
    let propagation = match (policy, orphan_dependents) {
        (Some(policy), Some(_)) => {
            return Err(invalid_delete_options(
                "propagationPolicy",
                &format!(
                    "Invalid value: {policy:?}: orphanDependents and deletionPropagation cannot be both set"
                ),
            ));
        }
        (Some("Foreground"), None) => Some(Propagation::Foreground),
        (Some("Background"), None) => Some(Propagation::Background),
        (Some("Orphan"), None) => Some(Propagation::Orphan),
        (Some(policy), None) => {
            return Err(invalid_delete_options(
                "propagationPolicy",
                &format!(
                    "Unsupported value: {policy:?}: supported values: \"Foreground\", \"Background\", \"Orphan\""
                ),
            ));
        }
        (None, Some(true)) => Some(Propagation::Orphan),
        (None, Some(false)) => Some(Propagation::Background),
        (None, None) => None,
    };
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
        propagation,
    })
}

fn invalid_delete_options(field: &str, message: &str) -> Box<Status> {
    let reason = if message.starts_with("Unsupported") {
        "FieldValueNotSupported"
    } else {
        "FieldValueInvalid"
    };
    fail(Status::invalid(
        "meta.k8s.io",
        "DeleteOptions",
        "",
        vec![StatusCause::new(reason, message, field)],
    ))
}

/// What a delete did.
pub(crate) enum Deleted {
    /// The object left storage; this was its last state.
    Removed(Value),
    /// The object stays, marked for deletion (finalizers, a propagation policy that waits
    /// for dependents, or a Namespace being emptied).
    Marked(Value),
}

/// The finalizers of an object (`metadata.finalizers`).
pub(crate) fn finalizers(object: &Value) -> impl Iterator<Item = &str> {
    object
        .get("metadata")
        .and_then(|m| m.get("finalizers"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

/// A Namespace's own finalizers (`spec.finalizers`, `kubernetes` until the namespace
/// controller emptied it).
fn namespace_finalizers(object: &Value) -> bool {
    object.get("kind").and_then(Value::as_str) == Some("Namespace")
        && object
            .get("spec")
            .and_then(|s| s.get("finalizers"))
            .and_then(Value::as_array)
            .is_some_and(|f| !f.is_empty())
}

/// Whether an object being deleted has lost its last finalizer (and must now go).
pub(crate) fn finalized(object: &Value) -> bool {
    object
        .get("metadata")
        .and_then(|m| m.get("deletionTimestamp"))
        .is_some()
        && finalizers(object).next().is_none()
        && !namespace_finalizers(object)
}

/// Deletes one object, or marks it for deletion, as a DELETE does: preconditions,
/// finalizers, the propagation policy's finalizer and a Namespace's `Terminating` phase.
/// Wakes the server's controllers when it changed something.
pub(crate) fn delete_object(
    state: &State,
    resource: &ResourceDef,
    namespace: Option<&str>,
    name: &str,
    options: &DeleteOptions,
) -> HandlerResult<Deleted> {
    let mut result: Option<Deleted> = None;
    let group_resource = resource.group_resource();
    let propagation = options
        .propagation
        .unwrap_or_else(|| resource.default_propagation());
    // kube-apiserver's early precondition check names the kind, not the resource.
    let precondition_kind = GroupResource {
        group: resource.group.clone(),
        resource: resource.kind.clone(),
    };
    let storage = event_versions::storage_of(resource);
    let outcome = state.store.write(&storage, &store_key(namespace, name), |current| {
        let current = current.ok_or_else(|| fail(Status::not_found(&group_resource, name)))?;
        let uid = meta_str(&current.value, "uid");
        if let Some(expected) = &options.precondition_uid
            && expected != uid
        {
            return Err(fail(Status::conflict(
                &precondition_kind,
                name,
                &format!("the UID in the precondition ({expected}) does not match the UID in record ({uid}). The object might have been deleted and then recreated"),
            )));
        }
        if let Some(expected) = &options.precondition_rv
            && *expected != current.rv.to_string()
        {
            return Err(fail(Status::conflict(
                &precondition_kind,
                name,
                &format!("the ResourceVersion in the precondition ({expected}) does not match the ResourceVersion in record ({}). The object might have been modified", current.rv),
            )));
        }
        let added_finalizer = match resource.special {
            Special::Namespace => None,
            // A CRD waits for its custom resources to go, whatever the propagation.
            Special::CustomResourceDefinition => Some(CRD_CLEANUP_FINALIZER),
            _ => propagation.finalizer(),
        };
        let mut marked = current.value.as_object().cloned().unwrap_or_default();
        let metadata = metadata_mut(&mut marked);
        if metadata.contains_key("deletionTimestamp") {
            result = Some(Deleted::Marked(current.value.clone()));
            return Ok(Write::Unchanged);
        }
        // A Namespace always waits for the namespace controller to empty it.
        let is_namespace = resource.special == Special::Namespace;
        let stays = finalizers(&current.value).next().is_some()
            || added_finalizer.is_some()
            || is_namespace;
        if !stays {
            let mut last = current.value.clone();
            if resource.group.is_empty() && resource.plural == "pods" {
                // Pods are deleted gracefully; with no kubelet the grace period ends at once,
                // and the answer shows the deletion as kube-apiserver's does for a Pod no
                // node holds.
                if let Some(metadata) = last.get_mut("metadata").and_then(Value::as_object_mut) {
                    metadata.insert("deletionTimestamp".to_owned(), json!(now()));
                    metadata.insert("deletionGracePeriodSeconds".to_owned(), json!(0));
                }
            }
            result = Some(Deleted::Removed(last));
            return Ok(if options.dry_run { Write::Unchanged } else { Write::Delete });
        }
        metadata.insert("deletionTimestamp".to_owned(), json!(now()));
        metadata.insert("deletionGracePeriodSeconds".to_owned(), json!(0));
        if let Some(finalizer) = added_finalizer
            && finalizers(&current.value).all(|f| f != finalizer)
        {
            let list = metadata
                .entry("finalizers")
                .or_insert_with(|| Value::Array(Vec::new()));
            if let Value::Array(list) = list {
                list.push(json!(finalizer));
            }
        }
        let is_crd = resource.special == Special::CustomResourceDefinition;
        // (apiextensions-apiserver marks a CRD by an update, which keeps its generation.)
        if resource.tracks_generation && !is_crd {
            let generation = metadata.get("generation").and_then(Value::as_i64).unwrap_or(1);
            metadata.insert("generation".to_owned(), json!(generation.saturating_add(1)));
        }
        if is_crd {
            metadata_mut(&mut marked).remove("deletionGracePeriodSeconds");
            set_terminating(
                &mut marked,
                "InstanceDeletionPending",
                "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
                &now(),
            );
        }
        if is_namespace {
            marked.insert("status".to_owned(), json!({"phase": "Terminating"}));
            let spec = marked.entry("spec").or_insert_with(|| json!({}));
            if let Value::Object(spec) = spec {
                let list = spec
                    .entry("finalizers")
                    .or_insert_with(|| Value::Array(Vec::new()));
                if let Value::Array(list) = list
                    && !list.iter().any(|f| f == "kubernetes")
                {
                    list.push(json!("kubernetes"));
                }
            }
        }
        let marked = Value::Object(marked);
        result = Some(Deleted::Marked(marked.clone()));
        Ok(if options.dry_run { Write::Unchanged } else { Write::Update(marked) })
    })?;
    let mut deleted =
        result.ok_or_else(|| fail(Status::internal_error("delete decided nothing")))?;
    // A marked object is answered as stored, with the resourceVersion of the marking.
    if let (Deleted::Marked(answer), Some(stored)) = (&mut deleted, &outcome.object)
        && !options.dry_run
    {
        *answer = stored.value.clone();
    }
    if !options.dry_run {
        if let Deleted::Removed(object) = &deleted {
            after_removal(state, resource, object);
        }
        state.controllers.wake();
    }
    Ok(deleted)
}

/// Side effects of removing an object: a removed CRD stops being served and its objects go.
pub(crate) fn after_removal(state: &State, resource: &ResourceDef, object: &Value) {
    if resource.special != Special::CustomResourceDefinition {
        return;
    }
    if let Ok(resources) = crd_resources(object)
        && let Some(first) = resources.first()
    {
        let group_resource = first.group_resource();
        // A CRD naming a built-in resource never served it: the built-in's objects stay.
        if state.registry.is_builtin(&first.group, &first.plural) {
            return;
        }
        state.registry.unregister(&first.group, &first.plural);
        for stored in state.store.snapshot(&group_resource, "").objects {
            let key = store_key(Some(stored.namespace()), stored.name());
            let _ = state
                .store
                .write(&group_resource, &key, |_| Ok::<_, ()>(Write::Delete));
        }
        state.store.drop_watchers_of(&group_resource);
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
    let namespace = call.path.namespace.as_deref();
    match delete_object(&call.state, &call.resource, namespace, &name, &options)? {
        Deleted::Marked(object) => Ok(json(
            StatusCode::OK,
            &*version_conversion::served_value(&call.resource, &object),
        )),
        Deleted::Removed(object) if call.resource.returns_deleted_object() => Ok(json(
            StatusCode::OK,
            &*version_conversion::served_value(&call.resource, &object),
        )),
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
    let snapshot = call.state.store.snapshot(&call.storage(), &prefix);
    let mut items = Vec::new();
    for object in snapshot.objects.iter().filter(|o| filter.matches(o)) {
        let namespace = Some(object.namespace()).filter(|ns| !ns.is_empty());
        match delete_object(
            &call.state,
            &call.resource,
            namespace,
            object.name(),
            &options,
        ) {
            Ok(_) => items
                .push(version_conversion::served_value(&call.resource, &object.value).into_owned()),
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
