//! Custom resources served in several versions. With the conversion strategy `None` (the
//! default; webhooks are not supported and treated the same) kube-apiserver stores every
//! object in the CRD's storage version and serves it in the version asked for, changing
//! only `apiVersion`; an object written through another version is pruned by that
//! version's schema and then by the storage version's, so fields only the other version
//! declares are dropped. Objects stored before the storage version changed keep theirs
//! until they are written again, as in etcd.
//!
//! `events.k8s.io/v1` Events go the same way: stored as core/v1 Events, served with
//! [`event_versions`]' field mapping.

use std::borrow::Cow;

use bytes::Bytes;
use serde_json::{Value, json};

use super::structural_schema;
use crate::registry::{ResourceDef, event_versions};
use crate::storage::StoredObject;

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

/// `object` in the version `resource` serves, if it is stored in another one (an
/// `events.k8s.io` Event is stored as a core/v1 Event).
pub(crate) fn served_value<'a>(resource: &ResourceDef, object: &'a Value) -> Cow<'a, Value> {
    if !needs_conversion(resource, object) {
        return Cow::Borrowed(object);
    }
    if event_versions::converts(resource) {
        return Cow::Owned(event_versions::core_as_events_v1(object));
    }
    let mut converted = object.clone();
    if let Some(fields) = converted.as_object_mut() {
        fields.insert("apiVersion".to_owned(), json!(resource.api_version()));
    }
    Cow::Owned(converted)
}

/// The bytes of a stored object as `resource` serves it.
pub(crate) fn served_bytes(resource: &ResourceDef, object: &StoredObject) -> Bytes {
    match served_value(resource, &object.value) {
        Cow::Borrowed(_) => object.bytes.clone(),
        Cow::Owned(converted) => Bytes::from(serde_json::to_vec(&converted).unwrap_or_default()),
    }
}

/// A stored object as `resource` serves it (the base of a patch or update through it),
/// if that differs from how it is stored.
pub(crate) fn served_object(resource: &ResourceDef, object: &StoredObject) -> Option<StoredObject> {
    match served_value(resource, &object.value) {
        Cow::Borrowed(_) => None,
        Cow::Owned(converted) => Some(StoredObject::new(converted, object.rv)),
    }
}

/// Turns an object written through `resource` into the CRD's storage version: its
/// `apiVersion`, and the fields the storage version's schema does not declare pruned.
pub(crate) fn to_storage_version(resource: &ResourceDef, object: &mut Value) {
    if event_versions::converts(resource) {
        if needs_conversion(resource, object) {
            return; // stored form already
        }
        *object = event_versions::events_v1_as_core(object);
        return;
    }
    if !multi_version(resource) {
        return;
    }
    let Some(storage) = resource.storage_version.as_deref() else {
        return;
    };
    let Some(fields) = object.as_object_mut() else {
        return;
    };
    fields.insert(
        "apiVersion".to_owned(),
        json!(format!("{}/{storage}", resource.group)),
    );
    // Pruned, not defaulted: the storage version's defaults apply when it is written
    // through, not on conversion.
    if let Some(schema) = resource.storage_schema.as_deref() {
        structural_schema::prune(schema, fields);
    }
}
