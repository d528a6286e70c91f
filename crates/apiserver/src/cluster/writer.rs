//! [`Writer`]: how the parts of the simulated cluster write, through the generic store, as
//! the user and field manager of the component they play (a kubelet, the scheduler, the
//! controller manager).

use serde_json::{Map, Value};

use crate::authentication::UserInfo;
use crate::registry::ResourceDef;
use crate::registry::store::{DeleteOptions, Deleted, GenericStore, Ownership, WriteRequest};
use std::sync::Arc;

/// A component's writes.
pub(super) struct Writer<'a> {
    pub(super) store: &'a GenericStore<'a>,
    pub(super) user: UserInfo,
    pub(super) manager: &'static str,
}

/// A built-in resource of the core group or another, by group, version and plural.
#[derive(Clone, Copy, Debug)]
pub(super) struct Kind {
    pub(super) group: &'static str,
    pub(super) version: &'static str,
    pub(super) plural: &'static str,
}

pub(super) const PODS: Kind = Kind {
    group: "",
    version: "v1",
    plural: "pods",
};
pub(super) const NODES: Kind = Kind {
    group: "",
    version: "v1",
    plural: "nodes",
};
pub(super) const EVENTS: Kind = Kind {
    group: "",
    version: "v1",
    plural: "events",
};
pub(super) const LEASES: Kind = Kind {
    group: "coordination.k8s.io",
    version: "v1",
    plural: "leases",
};

impl<'a> Writer<'a> {
    /// A component writing as `username` (in `groups`), recorded under `manager`.
    pub(super) fn new(
        store: &'a GenericStore<'a>,
        username: String,
        groups: &[&str],
        manager: &'static str,
    ) -> Self {
        let mut all = vec!["system:authenticated".to_owned()];
        all.extend(groups.iter().map(|g| (*g).to_owned()));
        Writer {
            store,
            user: UserInfo {
                username,
                uid: String::new(),
                groups: all,
            },
            manager,
        }
    }

    fn resource(&self, kind: Kind) -> Option<Arc<ResourceDef>> {
        self.store
            .resources
            .lookup(kind.group, kind.version, kind.plural)
    }

    /// Creates `object`; whether it was stored.
    pub(super) fn create(&self, kind: Kind, namespace: Option<&str>, object: Value) -> bool {
        let (Some(resource), Value::Object(object)) = (self.resource(kind), object) else {
            return false;
        };
        let name = object
            .get("metadata")
            .and_then(|m| m.get("name"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let request = WriteRequest::new(&resource, namespace, &name, &self.user, self.manager);
        match self.store.create(&request, object, Ownership::RecordUpdate) {
            Ok(_) => true,
            Err(status) => {
                tracing::debug!(resource = kind.plural, %name, status = %status.message, "a simulated component's create was refused");
                false
            }
        }
    }

    /// Updates the object (its `status` subresource when `status`), if it still has
    /// `uid` (any uid when empty): `change` edits a copy and says whether it changed
    /// anything. Whether storage changed.
    pub(super) fn update(
        &self,
        kind: Kind,
        namespace: Option<&str>,
        name: &str,
        uid: &str,
        status: bool,
        change: impl Fn(&mut Map<String, Value>) -> bool,
    ) -> bool {
        let Some(resource) = self.resource(kind) else {
            return false;
        };
        let request = WriteRequest {
            subresource: status.then_some("status"),
            ..WriteRequest::new(&resource, namespace, name, &self.user, self.manager)
        };
        let outcome = self
            .store
            .update(&request, false, Ownership::RecordUpdate, |current| {
                let current_uid = current
                    .value
                    .pointer("/metadata/uid")
                    .and_then(Value::as_str);
                if !uid.is_empty() && current_uid != Some(uid) {
                    return Ok(None);
                }
                let mut object = current.value.as_object().cloned().unwrap_or_default();
                Ok(change(&mut object).then_some(object))
            });
        match outcome {
            Ok(result) => result.changed,
            Err(status) => {
                tracing::debug!(resource = kind.plural, %name, status = %status.message, "a simulated component's update was refused");
                false
            }
        }
    }

    /// Deletes the object with `uid`, with grace period `grace` (`None`: the kind's).
    /// Whether it left storage.
    pub(super) fn delete(
        &self,
        kind: Kind,
        namespace: Option<&str>,
        name: &str,
        uid: &str,
        grace: Option<i64>,
    ) -> bool {
        let Some(resource) = self.resource(kind) else {
            return false;
        };
        let request = WriteRequest::new(&resource, namespace, name, &self.user, self.manager);
        let options = DeleteOptions {
            precondition_uid: Some(uid.to_owned()),
            ..DeleteOptions::default()
        };
        matches!(
            self.store.delete_with_grace(&request, &options, grace),
            Ok(Deleted::Removed(_))
        )
    }
}
