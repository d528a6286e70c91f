//! Custom resources served in several versions. kube-apiserver stores every object in
//! the CRD's storage version and serves it in the version asked for: with the conversion
//! strategy `None` (the default) changing only `apiVersion`, with `Webhook` through the
//! CRD's conversion webhook (`webhook_converter.rs`), its answer pruned by the schema
//! of the version it converted to. With `None` an object written through another
//! version is pruned by that version's schema and then by the storage version's, so
//! fields only the other version declares are dropped. Objects stored before the storage version changed keep theirs
//! until they are written again, as in etcd.
//!
//! `events.k8s.io/v1` Events go the same way: stored as core/v1 Events, served with
//! [`event_versions`]' field mapping.

use std::borrow::Cow;
use std::sync::Arc;

use bytes::Bytes;
use kubeclient_machinery::Status;
use serde_json::{Value, json};

use super::structural_schema;
use super::webhook_converter::{Conversion, ConversionError, convert, convert_blocking};
use crate::registry::{ResourceDef, event_versions};
use crate::storage::StoredObject;
use crate::webhook_client::WebhookPolicy;

/// Whether objects of `resource` may be stored in another version than the one served.
fn multi_version(resource: &ResourceDef) -> bool {
    !resource.builtin
        && resource
            .storage_version
            .as_deref()
            .is_some_and(|storage| storage != resource.version)
}

/// Whether `object` must be converted to be served through `resource`.
fn needs_conversion(resource: &ResourceDef, object: &Value) -> bool {
    (!resource.builtin || event_versions::converts(resource))
        && object.get("apiVersion").and_then(Value::as_str)
            != Some(resource.api.api_version.as_str())
}

/// The webhook call converting `objects` to `desired`, if `resource`'s CRD converts
/// through a webhook.
fn webhook_conversion<'a>(
    resource: &'a ResourceDef,
    objects: Vec<Value>,
    desired: String,
    list: bool,
    policy: WebhookPolicy,
) -> Option<Conversion<'a>> {
    let webhook = resource.conversion_webhook.as_deref()?;
    Some(Conversion {
        webhook,
        resource,
        objects,
        desired,
        list,
        policy,
    })
}

/// A webhook's converted object as kube-apiserver keeps it: pruned by the schema of the
/// version it is now in.
fn pruned(mut object: Value, schema: Option<&Value>) -> Value {
    if let (Some(schema), Some(fields)) = (schema, object.as_object_mut()) {
        structural_schema::prune(schema, fields);
    }
    object
}

/// `object` converted to `desired` through `resource`'s webhook, waiting for it, and
/// pruned by the `schema` of that version; `None` when the CRD has no webhook.
fn convert_one(
    resource: &ResourceDef,
    object: &Value,
    desired: String,
    schema: Option<&Value>,
    policy: WebhookPolicy,
) -> Option<Result<Value, Box<Status>>> {
    let conversion = webhook_conversion(resource, vec![object.clone()], desired, false, policy)?;
    let converted = match convert_blocking(conversion) {
        // The count was checked: one object sent, one back.
        Ok(converted) => converted.into_iter().next(),
        Err(err) => return Some(Err(err.status())),
    };
    Some(
        converted
            .map(|converted| pruned(converted, schema))
            .ok_or_else(|| {
                ConversionError("conversion webhook returned no object".to_owned()).status()
            }),
    )
}

/// `object` in the version `resource` serves, if it is stored in another one (an
/// `events.k8s.io` Event is stored as a core/v1 Event). A CRD converting through a
/// webhook has it called, waiting for it: only for callers on the blocking pool (the
/// write handlers); async readers use [`present`] first.
///
/// # Errors
///
/// The webhook's failure (500).
pub(crate) fn served_value<'a>(
    resource: &ResourceDef,
    object: &'a Value,
    policy: WebhookPolicy,
) -> Result<Cow<'a, Value>, Box<Status>> {
    if !needs_conversion(resource, object) {
        return Ok(Cow::Borrowed(object));
    }
    if event_versions::converts(resource) {
        return Ok(Cow::Owned(event_versions::core_as_events_v1(object)));
    }
    if let Some(converted) = convert_one(
        resource,
        object,
        resource.api_version(),
        resource.schema.as_deref(),
        policy,
    ) {
        return Ok(Cow::Owned(converted?));
    }
    let mut converted = object.clone();
    if let Some(fields) = converted.as_object_mut() {
        fields.insert("apiVersion".to_owned(), json!(resource.api_version()));
    }
    Ok(Cow::Owned(converted))
}

/// The bytes of a stored object as `resource` serves it (see [`served_value`]).
///
/// # Errors
///
/// As [`served_value`].
pub(crate) fn served_bytes(
    resource: &ResourceDef,
    object: &StoredObject,
    policy: WebhookPolicy,
) -> Result<Bytes, Box<Status>> {
    Ok(match served_value(resource, &object.value, policy)? {
        Cow::Borrowed(_) => object.bytes.clone(),
        Cow::Owned(converted) => Bytes::from(serde_json::to_vec(&converted).unwrap_or_default()),
    })
}

/// A stored object as `resource` serves it (the base of a patch or update through it),
/// if that differs from how it is stored (see [`served_value`]).
///
/// # Errors
///
/// As [`served_value`].
pub(crate) fn served_object(
    resource: &ResourceDef,
    object: &StoredObject,
    policy: WebhookPolicy,
) -> Result<Option<StoredObject>, Box<Status>> {
    Ok(match served_value(resource, &object.value, policy)? {
        Cow::Borrowed(_) => None,
        Cow::Owned(converted) => Some(StoredObject::new(converted, object.rv)),
    })
}

/// The positions of the objects that `resource` does not serve as they are.
fn pending<'a>(resource: &ResourceDef, objects: impl Iterator<Item = &'a Value>) -> Vec<usize> {
    objects
        .enumerate()
        .filter(|(_, object)| needs_conversion(resource, object))
        .map(|(index, _)| index)
        .collect()
}

/// A list's items as `resource` serves them, those that need it converted in one
/// webhook call, waiting for it: for the write handlers on the blocking pool (a
/// delete-collection's answer).
///
/// # Errors
///
/// The webhook's failure (500).
pub(crate) fn served_items(
    resource: &ResourceDef,
    mut items: Vec<Value>,
    policy: WebhookPolicy,
) -> Result<Vec<Value>, Box<Status>> {
    let pending = pending(resource, items.iter());
    if pending.is_empty() {
        return Ok(items);
    }
    let sent = pending.iter().map(|i| items[*i].clone()).collect();
    let Some(conversion) = webhook_conversion(resource, sent, resource.api_version(), true, policy)
    else {
        for index in pending {
            items[index] = served_value(resource, &items[index], policy)?.into_owned();
        }
        return Ok(items);
    };
    let converted = convert_blocking(conversion).map_err(|err| err.status())?;
    for (index, value) in pending.into_iter().zip(converted) {
        items[index] = pruned(value, resource.schema.as_deref());
    }
    Ok(items)
}

/// Stored objects as `resource` serves them, in async context (reads, lists, watches):
/// a CRD converting through a webhook has the objects that need it converted in one
/// call (`list`: they are a list's items), awaited.
///
/// # Errors
///
/// The webhook's failure (500).
pub(crate) async fn present(
    resource: &ResourceDef,
    mut objects: Vec<Arc<StoredObject>>,
    list: bool,
    policy: WebhookPolicy,
) -> Result<Vec<Arc<StoredObject>>, Box<Status>> {
    let pending = pending(resource, objects.iter().map(|object| &object.value));
    if pending.is_empty() {
        return Ok(objects);
    }
    let sent = pending.iter().map(|i| objects[*i].value.clone()).collect();
    let Some(conversion) = webhook_conversion(resource, sent, resource.api_version(), list, policy)
    else {
        for index in pending {
            if let Some(served) = served_object(resource, &objects[index], policy)? {
                objects[index] = Arc::new(served);
            }
        }
        return Ok(objects);
    };
    let converted = convert(conversion).await.map_err(|err| err.status())?;
    for (index, value) in pending.into_iter().zip(converted) {
        let value = pruned(value, resource.schema.as_deref());
        let rv = objects[index].rv;
        objects[index] = Arc::new(StoredObject::new(value, rv));
    }
    Ok(objects)
}

/// `object` (of another version of the CRD) as `resource` serves it, for an admission
/// webhook whose rules name that version: converted by the CRD's webhook if it names
/// one (waiting for it: admission runs in the store, on the blocking pool), else with
/// its `apiVersion` changed.
///
/// # Errors
///
/// The webhook's failure (500).
pub(crate) fn to_version(
    resource: &ResourceDef,
    mut object: Value,
    policy: WebhookPolicy,
) -> Result<Value, Box<Status>> {
    if object.get("apiVersion").and_then(Value::as_str) == Some(resource.api.api_version.as_str()) {
        return Ok(object);
    }
    if let Some(converted) = convert_one(
        resource,
        &object,
        resource.api_version(),
        resource.schema.as_deref(),
        policy,
    ) {
        return converted;
    }
    if let Some(fields) = object.as_object_mut() {
        fields.insert("apiVersion".to_owned(), json!(resource.api_version()));
    }
    Ok(object)
}

/// Turns an object written through `resource` into the CRD's storage version: its
/// `apiVersion` (or the webhook's conversion), and the fields the storage version's
/// schema does not declare pruned. Waits for a webhook: for the store, on the blocking
/// pool.
///
/// # Errors
///
/// The webhook's failure (500).
pub(crate) fn to_storage_version(
    resource: &ResourceDef,
    object: &mut Value,
    policy: WebhookPolicy,
) -> Result<(), Box<Status>> {
    if event_versions::converts(resource) {
        if needs_conversion(resource, object) {
            return Ok(()); // stored form already
        }
        *object = event_versions::events_v1_as_core(object);
        return Ok(());
    }
    if !multi_version(resource) {
        return Ok(());
    }
    let Some(storage) = resource.storage_version.as_deref() else {
        return Ok(());
    };
    let storage_api_version = format!("{}/{storage}", resource.group);
    if object.get("apiVersion").and_then(Value::as_str) == Some(storage_api_version.as_str()) {
        return Ok(());
    }
    if let Some(converted) = convert_one(
        resource,
        object,
        storage_api_version.clone(),
        resource.storage_schema.as_deref(),
        policy,
    ) {
        *object = converted?;
        return Ok(());
    }
    let Some(fields) = object.as_object_mut() else {
        return Ok(());
    };
    fields.insert("apiVersion".to_owned(), json!(storage_api_version));
    // Pruned, not defaulted: the storage version's defaults apply when it is written
    // through, not on conversion.
    if let Some(schema) = resource.storage_schema.as_deref() {
        structural_schema::prune(schema, fields);
    }
    Ok(())
}
