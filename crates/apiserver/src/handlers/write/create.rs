//! POST: creating an object (and serving a new CustomResourceDefinition).

use super::*;

/// POST: creates an object (201).
pub(crate) fn create(call: &Call) -> HandlerResult<Response<Body>> {
    if call.subresource().is_some() {
        return Err(fail(Status::failure(
            StatusReason::MethodNotAllowed,
            "the server does not allow this method on the requested resource",
        )));
    }
    if !call.resource.builtin && definition_terminating(call) {
        let resource = &call.resource;
        return Err(fail(
            Status::failure(
                StatusReason::MethodNotAllowed,
                "create not allowed while custom resource definition is terminating",
            )
            .with_details(StatusDetails {
                group: resource.group.clone(),
                kind: resource.plural.clone(),
                ..StatusDetails::default()
            }),
        ));
    }
    let dry_run = call.dry_run()?;
    let object = as_object(call.decode_body()?)?;
    create_object(call, object, dry_run, false)
}

/// Whether the CustomResourceDefinition of the custom resource `call` writes is being
/// deleted.
fn definition_terminating(call: &Call) -> bool {
    let crds = GroupResource::new("apiextensions.k8s.io", "customresourcedefinitions");
    let name = format!("{}.{}", call.resource.plural, call.resource.group);
    call.state
        .store
        .get(&crds, &name)
        .is_some_and(|crd| crd.value.pointer("/metadata/deletionTimestamp").is_some())
}

/// Creates `object`. `ownership_recorded` is set for server-side apply creates, whose
/// object already carries its managedFields.
pub(super) fn create_object(
    call: &Call,
    mut object: Map<String, Value>,
    dry_run: bool,
    ownership_recorded: bool,
) -> HandlerResult<Response<Body>> {
    let resource = call.resource.clone();
    call.check_type_meta(&mut object)?;
    call.check_namespace(&mut object)?;
    let metadata = metadata_mut(&mut object);
    if metadata
        .get("resourceVersion")
        .and_then(Value::as_str)
        .is_some_and(|rv| !rv.is_empty())
    {
        return Err(fail(Status::internal_error(
            "resourceVersion should not be set on objects to be created",
        )));
    }
    for field in SYSTEM_FIELDS {
        metadata.remove(field);
    }
    metadata.remove("generation");
    let explicit_name = metadata
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let generate_prefix = metadata
        .get("generateName")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    if explicit_name.is_empty() && generate_prefix.is_empty() {
        return Err(invalid(
            &resource,
            "",
            "metadata.name",
            "FieldValueRequired",
            "Required value: name or generateName is required",
        ));
    }
    if !explicit_name.is_empty() {
        validate_name(&resource, &explicit_name)?;
    }
    let time = now();
    metadata.insert("uid".to_owned(), json!(uuid::Uuid::new_v4().to_string()));
    metadata.insert("creationTimestamp".to_owned(), json!(time));
    if resource.tracks_generation {
        metadata.insert("generation".to_owned(), json!(1));
    }
    if resource.status_subresource && !resource.builtin {
        object.remove("status");
    }
    match resource.special {
        Special::Namespace => {
            object.insert("status".to_owned(), json!({"phase": "Active"}));
            // Every namespace carries its name as a label (Kubernetes 1.21+).
            let labels = metadata_mut(&mut object)
                .entry("labels")
                .or_insert_with(|| json!({}));
            if let Value::Object(labels) = labels {
                labels.insert(
                    "kubernetes.io/metadata.name".to_owned(),
                    json!(explicit_name),
                );
            }
            object
                .entry("spec")
                .or_insert_with(|| json!({"finalizers": ["kubernetes"]}));
        }
        Special::CustomResourceDefinition => {
            let crd = Value::Object(object.clone());
            crd_resources(&crd).map_err(|message| {
                invalid(
                    &resource,
                    &explicit_name,
                    message.split(':').next().unwrap_or(""),
                    "FieldValueInvalid",
                    &message,
                )
            })?;
            object.insert("status".to_owned(), crd_status(&crd, &time));
        }
        Special::None | Special::Review | Special::ReadOnly => {}
    }
    let requested = defaults::allocates(&resource).then(|| object.clone());
    defaults::apply(&call.state, &resource, &mut object, None);
    let mut value = Value::Object(object);
    let warnings = call.validate_fields(&mut value, Decoding::Body)?;
    validate::check_object(&resource, &value)?;
    kind_rules::check(&resource, &value, None, Vec::new())?;
    call.check_namespace_exists()?;
    if !ownership_recorded {
        let (manager, api_version) = (call.field_manager(), resource.api_version());
        let keys = list_key(&resource.kind);
        let atomic = atomic_fields(&resource, &api_version);
        let context = write_context(call, &manager, &api_version, &time, &keys, &atomic);
        // kube-apiserver diffs a created object against its type's Go zero value: fields
        // present there (value structs such as a Deployment's `strategy`) are not created
        // by the write and get no `"."` node.
        let zero = resource
            .builtin
            .then(|| kubeclient_machinery::protobuf::go_zero_value(&api_version, &resource.kind))
            .flatten();
        match &requested {
            Some(requested) => {
                // Allocated fields belong to nobody: ownership is computed without them.
                let mut owned = defaults::without_allocated(requested, &value);
                managed_fields::record_update(zero.as_ref(), &mut owned, &context);
                let entries = owned.pointer("/metadata/managedFields").cloned();
                if let (Some(entries), Some(metadata)) = (
                    entries,
                    value.get_mut("metadata").and_then(Value::as_object_mut),
                ) {
                    metadata.insert("managedFields".to_owned(), entries);
                }
            }
            None => managed_fields::record_update(zero.as_ref(), &mut value, &context),
        }
    }
    version_conversion::to_storage_version(&resource, &mut value);
    validate::check_size(&resource, &value, call.state.config.limits.max_object_bytes)?;
    for attempt in 0..8 {
        let name = if explicit_name.is_empty() {
            generate_name(&generate_prefix)
        } else {
            explicit_name.clone()
        };
        if explicit_name.is_empty()
            && let Some(metadata) = value.get_mut("metadata").and_then(Value::as_object_mut)
        {
            metadata.insert("name".to_owned(), json!(name));
            if resource.special == Special::Namespace
                && let Some(labels) = metadata.get_mut("labels").and_then(Value::as_object_mut)
            {
                labels.insert("kubernetes.io/metadata.name".to_owned(), json!(name));
            }
        }
        let key = call.key_for(&name);
        let outcome = call.state.store.update(&call.storage(), &key, |current| {
            if current.is_some() {
                return Err(fail(Status::already_exists(&call.group_resource(), &name)));
            }
            Ok(if dry_run {
                Write::Unchanged
            } else {
                Write::Create(value.clone())
            })
        });
        match outcome {
            Ok(outcome) => {
                if dry_run {
                    let served = version_conversion::served_value(&resource, &value);
                    return Ok(with_warnings(
                        json(StatusCode::CREATED, &*served),
                        &warnings,
                    ));
                }
                let Some(created) = outcome.object else {
                    return Err(fail(Status::internal_error("create stored nothing")));
                };
                if resource.special == Special::CustomResourceDefinition {
                    register_crd(call, &created.value);
                }
                if resource.special == Special::Namespace {
                    call.state.controllers.wake(); // its `default` ServiceAccount
                }
                call.state.controllers.wake_for(&created.value);
                let response = json_bytes(
                    StatusCode::CREATED,
                    version_conversion::served_bytes(&resource, &created),
                );
                return Ok(with_warnings(response, &warnings));
            }
            Err(status)
                if status.reason == "AlreadyExists" && explicit_name.is_empty() && attempt < 7 =>
            {
                continue;
            }
            Err(status) => return Err(status),
        }
    }
    Err(fail(Status::already_exists(
        &call.group_resource(),
        &generate_prefix,
    )))
}

/// Serves what a stored CustomResourceDefinition defines (after a create or an update).
/// One whose group and plural name a built-in resource serves nothing: the built-in
/// stays what is served.
pub(super) fn register_crd(call: &Call, crd: &Value) {
    if let Ok(resources) = crate::registry::crd_served_resources(crd)
        && let Some(first) = resources.first()
    {
        let (group, plural) = (first.group.clone(), first.plural.clone());
        if !call.state.registry.register(&group, &plural, resources) {
            tracing::debug!(%group, %plural, "a CRD names a built-in resource; the built-in stays served");
        }
    }
}
