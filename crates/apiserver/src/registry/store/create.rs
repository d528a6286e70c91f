//! Create: a new object, with its server-owned metadata, defaults, validation and
//! managedFields (and, for a CustomResourceDefinition, the resources it serves).

use super::validate_object;
use super::*;
use crate::object::{generate_name, now};
use crate::registry::apiextensions::version_conversion;
use crate::registry::kinds::strategy_for;
use crate::registry::strategy::Strategy;
use crate::registry::{Special, validate};
use crate::storage::Write;

impl GenericStore<'_> {
    /// Creates `object` (`request.name` is ignored: the object names itself, or asks for
    /// a generated name). With [`Ownership::AlreadyRecorded`] (server-side apply) the
    /// object already carries its managedFields.
    ///
    /// # Errors
    ///
    /// The API's Status: 400 for a type, namespace or resourceVersion the object may not
    /// carry, 422 for an invalid object, 404/403 for a missing or terminating namespace,
    /// 409 when the name is taken.
    pub(crate) fn create(
        &self,
        request: &WriteRequest<'_>,
        mut object: Map<String, Value>,
        ownership: Ownership,
    ) -> StoreResult<WriteResult> {
        let resource = request.resource;
        request.check_type_meta(&mut object)?;
        request.check_namespace(&mut object)?;
        let mut admission_warnings = Vec::new();
        if request.admit {
            // The webhooks see the decoded object with its defaults, as kube-apiserver's do.
            strategy_for(resource).defaults(self.strategy_context(resource), &mut object);
            let (admitted, warnings) = self.admit_create(request, object)?;
            object = admitted;
            admission_warnings = warnings;
            request.check_type_meta(&mut object)?;
            request.check_namespace(&mut object)?;
        }
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
        let text = |field: &str| {
            metadata
                .get(field)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        let (explicit_name, generate_prefix) = (text("name"), text("generateName"));
        if explicit_name.is_empty() && generate_prefix.is_empty() {
            return Err(invalid(
                resource,
                "",
                "metadata.name",
                "FieldValueRequired",
                "Required value: name or generateName is required",
            ));
        }
        if !explicit_name.is_empty() {
            validate::validate_name(resource, &explicit_name)?;
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
        let strategy = strategy_for(resource);
        strategy.begin_create(resource, &mut object)?;
        // Fields the create allocates belong to nobody: ownership is computed without them.
        let requested = strategy.allocates().then(|| (strategy, object.clone()));
        let context = self.strategy_context(resource);
        strategy.defaults(context, &mut object);
        strategy.prepare_for_create(context, &mut object);
        let mut value = Value::Object(object);
        let warnings = (request.field_check)(&mut value, request.decoding)?;
        validate::check_object(resource, &value, None)?;
        validate_object(resource, &value, None, Vec::new())?;
        self.check_namespace_exists(request.namespace)?;
        if ownership == Ownership::RecordUpdate {
            let requested = requested
                .as_ref()
                .map(|(strategy, object)| (*strategy, object));
            record_create(request, &time, requested, &mut value);
        }
        // The validating webhooks see the object as it will be stored, named.
        let mut first_name = None;
        if request.admit {
            if explicit_name.is_empty() {
                let name = generate_name(&generate_prefix);
                if let Some(metadata) = value.get_mut("metadata").and_then(Value::as_object_mut) {
                    metadata.insert("name".to_owned(), json!(name));
                    strategy.name_generated(metadata, &name);
                }
                first_name = Some(name);
            }
            admission_warnings.extend(self.validate_write(request, &value, None)?);
        }
        // The ResourceQuota plugin runs after the webhooks (kube-apiserver's order), on
        // every create, the controllers' too.
        let _quota_guard = self.admit_quota(request, &value)?;
        let mut warnings = warnings;
        warnings.extend(admission_warnings);
        version_conversion::to_storage_version(resource, &mut value, self.webhooks)?;
        validate::check_size(resource, &value, self.max_object_bytes)?;
        let storage = request.storage();
        for attempt in 0..8 {
            let name = if !explicit_name.is_empty() {
                explicit_name.clone()
            } else if let Some(name) = first_name.take() {
                name
            } else {
                generate_name(&generate_prefix)
            };
            if explicit_name.is_empty()
                && let Some(metadata) = value.get_mut("metadata").and_then(Value::as_object_mut)
            {
                metadata.insert("name".to_owned(), json!(name));
                strategy.name_generated(metadata, &name);
            }
            let outcome = self
                .storage
                .update(&storage, &request.key_for(&name), |current| {
                    if current.is_some() {
                        return Err(fail(Status::already_exists(
                            &request.group_resource(),
                            &name,
                        )));
                    }
                    Ok(if request.dry_run {
                        Write::Unchanged
                    } else {
                        Write::Create(value.clone())
                    })
                });
            match outcome {
                Ok(_) if request.dry_run => {
                    return Ok(WriteResult {
                        stored: None,
                        computed: Some(value),
                        changed: false,
                        warnings,
                    });
                }
                Ok(outcome) => {
                    let Some(created) = outcome.object else {
                        return Err(fail(Status::internal_error("create stored nothing")));
                    };
                    if resource.special == Special::CustomResourceDefinition {
                        self.resources.serve_crd(&created.value);
                    }
                    self.committed(request, Committed::Created(&created.value));
                    return Ok(WriteResult {
                        stored: Some(created),
                        computed: Some(value),
                        changed: true,
                        warnings,
                    });
                }
                Err(status)
                    if status.reason == "AlreadyExists"
                        && explicit_name.is_empty()
                        && attempt < 7 =>
                {
                    continue;
                }
                Err(status) => return Err(status),
            }
        }
        Err(fail(Status::already_exists(
            &request.group_resource(),
            &generate_prefix,
        )))
    }
}

/// Records the fields a create sets for the request's field manager. kube-apiserver
/// diffs a created object against its type's Go zero value: fields present there (value
/// structs such as a Deployment's `strategy`) are not created by the write and get no
/// `"."` node. Allocated fields (`requested` is the object before allocation) belong to
/// nobody.
fn record_create(
    request: &WriteRequest<'_>,
    time: &str,
    requested: Option<(&dyn Strategy, &Map<String, Value>)>,
    value: &mut Value,
) {
    let resource = request.resource;
    let zero = resource
        .builtin
        .then(|| {
            kubeclient_machinery::protobuf::go_zero_value(&resource.api_version(), &resource.kind)
        })
        .flatten();
    with_write_context(request, time, |context| match requested {
        Some((strategy, requested)) => {
            let mut owned = strategy.without_allocated(requested, value);
            managed_fields::record_update(zero.as_ref(), &mut owned, context);
            let entries = owned.pointer("/metadata/managedFields").cloned();
            if let (Some(entries), Some(metadata)) = (
                entries,
                value.get_mut("metadata").and_then(Value::as_object_mut),
            ) {
                metadata.insert("managedFields".to_owned(), entries);
            }
        }
        None => managed_fields::record_update(zero.as_ref(), value, context),
    });
}
