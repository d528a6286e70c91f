//! The store's side of admission: the [`Attributes`] of a write (its options as a
//! review carries them; the `autoscaling/v1` Scale for the scale subresource) and the
//! mutating and validating steps the verbs call. Writes the server makes itself
//! (`WriteRequest::admit` false) skip them.

use kubeclient_machinery::Status;
use serde_json::{Map, Value, json};

use super::delete::DeleteOptions;
use super::write_request::WriteRequest;
use super::{GenericStore, fail};
use crate::registry::admission::{self, Attributes, Operation};
use crate::registry::{Propagation, ResourceDef};

/// The value at a dotted path (`.spec.replicas`).
fn value_at<'a>(object: &'a Value, path: &str) -> Option<&'a Value> {
    path.trim_start_matches('.')
        .split('.')
        .try_fold(object, |value, segment| value.get(segment))
}

/// The `autoscaling/v1` Scale a webhook sees for the scale subresource of `object`.
fn scale_of(resource: &ResourceDef, object: &Value) -> Value {
    let Some(scale) = &resource.scale else {
        return object.clone();
    };
    let metadata = object.get("metadata").cloned().unwrap_or_else(|| json!({}));
    let pick = |field: &str| metadata.get(field).cloned().unwrap_or(Value::Null);
    let replicas = |path: &str| value_at(object, path).cloned().unwrap_or(json!(0));
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            "name": pick("name"), "namespace": pick("namespace"), "uid": pick("uid"),
            "resourceVersion": pick("resourceVersion"), "creationTimestamp": pick("creationTimestamp"),
        },
        "spec": {"replicas": replicas(&scale.spec_replicas_path)},
        "status": {"replicas": replicas(&scale.status_replicas_path)},
    })
}

/// `object` with the replicas a mutated Scale asks for.
fn with_scale_replicas(resource: &ResourceDef, object: &mut Map<String, Value>, scale: &Value) {
    let (Some(spec), Some(replicas)) = (&resource.scale, scale.pointer("/spec/replicas").cloned())
    else {
        return;
    };
    let path: Vec<&str> = spec
        .spec_replicas_path
        .trim_start_matches('.')
        .split('.')
        .collect();
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut target = object;
    for segment in parents {
        let entry = target
            .entry((*segment).to_owned())
            .or_insert_with(|| json!({}));
        if !entry.is_object() {
            *entry = json!({});
        }
        let Value::Object(next) = entry else {
            return;
        };
        target = next;
    }
    target.insert((*last).to_owned(), replicas);
}

/// The options of a create or update, as a review carries them.
fn write_options(request: &WriteRequest<'_>) -> Value {
    let mut options = Map::new();
    if request.dry_run {
        options.insert("dryRun".to_owned(), json!(["All"]));
    }
    if !request.field_manager.is_empty() {
        options.insert("fieldManager".to_owned(), json!(request.field_manager));
    }
    Value::Object(options)
}

/// The options of a delete, as a review carries them.
fn delete_options(request: &WriteRequest<'_>, options: &DeleteOptions) -> Value {
    let mut typed = Map::new();
    if request.dry_run {
        typed.insert("dryRun".to_owned(), json!(["All"]));
    }
    if let Some(seconds) = options.grace_period_seconds {
        typed.insert("gracePeriodSeconds".to_owned(), json!(seconds));
    }
    if let Some(propagation) = options.propagation {
        let name = match propagation {
            Propagation::Background => "Background",
            Propagation::Foreground => "Foreground",
            Propagation::Orphan => "Orphan",
        };
        typed.insert("propagationPolicy".to_owned(), json!(name));
    }
    let mut preconditions = Map::new();
    if let Some(uid) = &options.precondition_uid {
        preconditions.insert("uid".to_owned(), json!(uid));
    }
    if let Some(rv) = &options.precondition_rv {
        preconditions.insert("resourceVersion".to_owned(), json!(rv));
    }
    if !preconditions.is_empty() {
        typed.insert("preconditions".to_owned(), Value::Object(preconditions));
    }
    Value::Object(typed)
}

/// An object as the mutating webhooks left it, and their warnings.
type Admitted = (Map<String, Value>, Vec<String>);

fn name_of(object: &Value) -> String {
    object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned()
}

impl GenericStore<'_> {
    fn attributes<'r>(
        &self,
        request: &'r WriteRequest<'r>,
        operation: Operation,
        options: Value,
    ) -> Attributes<'r> {
        Attributes {
            resource: request.resource,
            subresource: request.subresource.unwrap_or(""),
            operation,
            namespace: request.namespace.unwrap_or(""),
            name: request.name.to_owned(),
            object: None,
            old_object: None,
            dry_run: request.dry_run,
            options,
            user: request.user,
        }
    }

    /// The mutating webhooks of a create: `object` as they leave it, and their warnings.
    pub(super) fn admit_create(
        &self,
        request: &WriteRequest<'_>,
        object: Map<String, Value>,
    ) -> Result<Admitted, Box<Status>> {
        let mut attributes = self.attributes(request, Operation::Create, write_options(request));
        let object = Value::Object(object);
        attributes.name = name_of(&object);
        attributes.object = Some(object);
        let warnings =
            admission::admit(self.storage, self.resources, self.webhooks, &mut attributes)?;
        Ok((as_object(attributes.object)?, warnings))
    }

    /// The mutating webhooks of an update of `current`: `object` as they leave it, and
    /// their warnings. The scale subresource shows them Scales, and takes the replicas
    /// of theirs.
    pub(super) fn admit_update(
        &self,
        request: &WriteRequest<'_>,
        mut object: Map<String, Value>,
        current: &Value,
    ) -> Result<Admitted, Box<Status>> {
        let resource = request.resource;
        let scale = request.subresource == Some("scale");
        let mut attributes = self.attributes(request, Operation::Update, write_options(request));
        let value = Value::Object(object.clone());
        attributes.object = Some(if scale {
            scale_of(resource, &value)
        } else {
            value
        });
        attributes.old_object = Some(if scale {
            scale_of(resource, current)
        } else {
            current.clone()
        });
        let warnings =
            admission::admit(self.storage, self.resources, self.webhooks, &mut attributes)?;
        if scale {
            if let Some(scale) = &attributes.object {
                with_scale_replicas(resource, &mut object, scale);
            }
            return Ok((object, warnings));
        }
        Ok((as_object(attributes.object)?, warnings))
    }

    /// The validating admission policies, then the validating webhooks, of a create or update (`old` the stored object) of the
    /// object as it would be stored; their warnings.
    pub(super) fn validate_write(
        &self,
        request: &WriteRequest<'_>,
        object: &Value,
        old: Option<&Value>,
    ) -> Result<Vec<String>, Box<Status>> {
        let resource = request.resource;
        let operation = if old.is_some() {
            Operation::Update
        } else {
            Operation::Create
        };
        let scale = request.subresource == Some("scale");
        let mut attributes = self.attributes(request, operation, write_options(request));
        attributes.name = name_of(object);
        attributes.object = Some(if scale {
            scale_of(resource, object)
        } else {
            object.clone()
        });
        attributes.old_object = old.map(|old| {
            if scale {
                scale_of(resource, old)
            } else {
                old.clone()
            }
        });
        self.validate_admission(&attributes)
    }

    /// The validating admission policies, then the validating webhooks (kube-apiserver's
    /// plugin order); their warnings.
    fn validate_admission(&self, attributes: &Attributes<'_>) -> Result<Vec<String>, Box<Status>> {
        let mut warnings =
            admission::validate_policies(self.storage, self.resources, self.webhooks, attributes)?;
        warnings.extend(admission::validate(
            self.storage,
            self.resources,
            self.webhooks,
            attributes,
        )?);
        Ok(warnings)
    }

    /// The mutating webhooks, the validating admission policies, then the validating
    /// webhooks of a delete of `current`.
    pub(super) fn admit_delete(
        &self,
        request: &WriteRequest<'_>,
        options: &DeleteOptions,
        current: &Value,
    ) -> Result<Vec<String>, Box<Status>> {
        let mut attributes =
            self.attributes(request, Operation::Delete, delete_options(request, options));
        attributes.old_object = Some(current.clone());
        let mut warnings =
            admission::admit(self.storage, self.resources, self.webhooks, &mut attributes)?;
        warnings.extend(self.validate_admission(&attributes)?);
        Ok(warnings)
    }
}

/// The object mutating webhooks left, which must still be one.
fn as_object(object: Option<Value>) -> Result<Map<String, Value>, Box<Status>> {
    match object {
        Some(Value::Object(map)) => Ok(map),
        _ => Err(fail(Status::internal_error(
            "the admission webhooks left no object",
        ))),
    }
}
