//! [`Writer`]: how the parts of the simulated cluster write, through the generic store, as
//! the user and field manager of the component they play (a kubelet, the scheduler, the
//! controller manager).

use serde_json::{Map, Value, json};

use std::sync::Arc;

use crate::authentication::UserInfo;
use crate::object::now;
use crate::registry::store::{DeleteOptions, GenericStore, Ownership, WriteRequest};
use crate::registry::{Propagation, ResourceDef};

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
pub(super) const ENDPOINTS: Kind = Kind {
    group: "",
    version: "v1",
    plural: "endpoints",
};
pub(super) const ENDPOINT_SLICES: Kind = Kind {
    group: "discovery.k8s.io",
    version: "v1",
    plural: "endpointslices",
};
pub(super) const REPLICA_SETS: Kind = Kind {
    group: "apps",
    version: "v1",
    plural: "replicasets",
};
pub(super) const DEPLOYMENTS: Kind = Kind {
    group: "apps",
    version: "v1",
    plural: "deployments",
};
pub(super) const DAEMON_SETS: Kind = Kind {
    group: "apps",
    version: "v1",
    plural: "daemonsets",
};
pub(super) const STATEFUL_SETS: Kind = Kind {
    group: "apps",
    version: "v1",
    plural: "statefulsets",
};
pub(super) const PERSISTENT_VOLUME_CLAIMS: Kind = Kind {
    group: "",
    version: "v1",
    plural: "persistentvolumeclaims",
};
pub(super) const JOBS: Kind = Kind {
    group: "batch",
    version: "v1",
    plural: "jobs",
};
pub(super) const CRON_JOBS: Kind = Kind {
    group: "batch",
    version: "v1",
    plural: "cronjobs",
};
pub(super) const REPLICATION_CONTROLLERS: Kind = Kind {
    group: "",
    version: "v1",
    plural: "replicationcontrollers",
};
pub(super) const CONTROLLER_REVISIONS: Kind = Kind {
    group: "apps",
    version: "v1",
    plural: "controllerrevisions",
};
pub(super) const PERSISTENT_VOLUMES: Kind = Kind {
    group: "",
    version: "v1",
    plural: "persistentvolumes",
};
pub(super) const STORAGE_CLASSES: Kind = Kind {
    group: "storage.k8s.io",
    version: "v1",
    plural: "storageclasses",
};
pub(super) const RESOURCE_QUOTAS: Kind = Kind {
    group: "",
    version: "v1",
    plural: "resourcequotas",
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
                ..UserInfo::default()
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
        self.create_object(kind, namespace, object).is_some()
    }

    /// Creates `object`; what was stored (with its generated name).
    pub(super) fn create_object(
        &self,
        kind: Kind,
        namespace: Option<&str>,
        object: Value,
    ) -> Option<Value> {
        let (Some(resource), Value::Object(object)) = (self.resource(kind), object) else {
            return None;
        };
        let name = object
            .get("metadata")
            .and_then(|m| m.get("name"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let request = WriteRequest::new(&resource, namespace, &name, &self.user, self.manager);
        match self.store.create(&request, object, Ownership::RecordUpdate) {
            Ok(result) => result.stored.map(|stored| stored.value.clone()),
            Err(status) => {
                tracing::debug!(resource = kind.plural, %name, status = %status.message, "a simulated component's create was refused");
                None
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

    /// Writes `status` as `object`'s status subresource, unless it already is.
    pub(super) fn replace_status(&self, kind: Kind, object: &Value, status: Value) {
        if object.get("status") == Some(&status) {
            return;
        }
        let (namespace, name, uid) = identity(object);
        self.update(kind, namespace, name, uid, true, |current| {
            current.insert("status".to_owned(), status.clone());
            true
        });
    }

    /// Deletes the object with `uid`, with grace period `grace` (`None`: the kind's).
    /// Whether the delete was accepted (the object left storage or is marked).
    pub(super) fn delete(
        &self,
        kind: Kind,
        namespace: Option<&str>,
        name: &str,
        uid: &str,
        grace: Option<i64>,
    ) -> bool {
        let options = DeleteOptions {
            precondition_uid: Some(uid.to_owned()),
            ..DeleteOptions::default()
        };
        self.delete_by(kind, namespace, name, &options, grace)
    }

    /// Deletes `object` (if it still has its uid) with propagation policy `Background`,
    /// as controllers delete the Jobs they own (the garbage collector removes their
    /// Pods). Whether the delete was accepted.
    pub(super) fn delete_in_background(&self, kind: Kind, object: &Value) -> bool {
        let (namespace, name, uid) = identity(object);
        let options = DeleteOptions {
            precondition_uid: Some(uid.to_owned()),
            propagation: Some(Propagation::Background),
            ..DeleteOptions::default()
        };
        self.delete_by(kind, namespace, name, &options, None)
    }

    fn delete_by(
        &self,
        kind: Kind,
        namespace: Option<&str>,
        name: &str,
        options: &DeleteOptions,
        grace: Option<i64>,
    ) -> bool {
        let Some(resource) = self.resource(kind) else {
            return false;
        };
        let request = WriteRequest::new(&resource, namespace, name, &self.user, self.manager);
        self.store
            .delete_with_grace(&request, options, grace)
            .is_ok()
    }
}

/// An object's namespace (`None` when cluster-scoped), name and uid.
fn identity(object: &Value) -> (Option<&str>, &str, &str) {
    let meta = |field: &str| {
        object
            .pointer(&format!("/metadata/{field}"))
            .and_then(Value::as_str)
            .unwrap_or("")
    };
    let namespace = Some(meta("namespace")).filter(|ns| !ns.is_empty());
    (namespace, meta("name"), meta("uid"))
}

/// What an Event is about and who reports it.
pub(super) struct EventFor<'a> {
    /// The object (its kind, namespace, name, uid and resourceVersion are referred to).
    pub(super) involved: &'a Value,
    /// The reporting component (`default-scheduler`, `replicaset-controller` ...).
    pub(super) component: &'a str,
    /// What it was doing (`Scheduling`, `Binding` ...).
    pub(super) action: &'a str,
}

impl Writer<'_> {
    /// Records a core/v1 Event about `about` (as client-go's recorder names them:
    /// `<object>.<hex nanoseconds>`).
    pub(super) fn record_event(
        &self,
        about: &EventFor<'_>,
        kind: &str,
        reason: &str,
        message: &str,
    ) {
        self.record_part_event(about, None, kind, reason, message);
    }

    /// Records a core/v1 Event about a part of `about` (`field_path`, e.g.
    /// `spec.containers{web}`, as kubelet's container events); the Event's name.
    pub(super) fn record_part_event(
        &self,
        about: &EventFor<'_>,
        field_path: Option<&str>,
        kind: &str,
        reason: &str,
        message: &str,
    ) -> Option<String> {
        let object = about.involved;
        let meta = |field: &str| {
            object
                .pointer(&format!("/metadata/{field}"))
                .cloned()
                .unwrap_or(Value::Null)
        };
        let name = meta("name");
        let namespace = object
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .filter(|ns| !ns.is_empty())
            .unwrap_or("default")
            .to_owned();
        let time = now();
        let nanos = jiff::Timestamp::now().as_nanosecond();
        let mut event = json!({
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": format!("{}.{nanos:x}", name.as_str().unwrap_or("object")), "namespace": namespace},
            "involvedObject": {
                "apiVersion": object["apiVersion"], "kind": object["kind"], "namespace": meta("namespace"),
                "name": name, "uid": meta("uid"), "resourceVersion": meta("resourceVersion"),
            },
            "reason": reason, "message": message, "type": kind,
            "source": {"component": about.component},
            "reportingComponent": about.component,
            "reportingInstance": format!("{}-kubeclient", about.component),
            "action": about.action,
            "firstTimestamp": time, "lastTimestamp": time, "count": 1,
        });
        if let Some(path) = field_path {
            event["involvedObject"]["fieldPath"] = json!(path);
        }
        let stored = self.create_object(EVENTS, Some(&namespace), event)?;
        stored
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .map(str::to_owned)
    }
}
