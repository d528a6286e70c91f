//! [`Graph`]: every stored object with its owners and dependents, as the garbage
//! collector's dependency graph (client-go's GC `GraphBuilder`), rebuilt for each pass,
//! and the writes the controllers make on its nodes (through the generic store, by their
//! [`Writer`]).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde_json::Value;

use super::writer::Writer;
use crate::object::{finalizers, metadata_mut};
use crate::registry::store::{DeleteOptions, GenericStore, Ownership, WriteRequest};
use crate::registry::{Propagation, ResourceDef};
use crate::storage::StoredObject;

/// One stored object and the resource it is stored under.
pub(super) struct Node {
    pub(super) resource: Arc<ResourceDef>,
    pub(super) object: Arc<StoredObject>,
}

/// One entry of `metadata.ownerReferences`.
pub(super) struct OwnerRef<'a> {
    pub(super) uid: &'a str,
    pub(super) block_owner_deletion: bool,
}

impl Node {
    fn metadata(&self) -> Option<&Value> {
        self.object.value.get("metadata")
    }

    pub(super) fn uid(&self) -> &str {
        self.metadata()
            .and_then(|m| m.get("uid"))
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    /// Whether it carries a `deletionTimestamp`.
    pub(super) fn deleting(&self) -> bool {
        self.metadata()
            .and_then(|m| m.get("deletionTimestamp"))
            .is_some()
    }

    pub(super) fn has_finalizer(&self, finalizer: &str) -> bool {
        finalizers(&self.object.value).any(|f| f == finalizer)
    }

    pub(super) fn owner_refs(&self) -> impl Iterator<Item = OwnerRef<'_>> {
        self.metadata()
            .and_then(|m| m.get("ownerReferences"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|owner| {
                Some(OwnerRef {
                    uid: owner.get("uid")?.as_str()?,
                    block_owner_deletion: owner
                        .get("blockOwnerDeletion")
                        .and_then(Value::as_bool)
                        .unwrap_or(false),
                })
            })
    }

    fn namespace(&self) -> Option<&str> {
        Some(self.object.namespace()).filter(|ns| !ns.is_empty())
    }

    /// Deletes it with `propagation`, unless it is already being deleted. Whether that
    /// changed anything.
    pub(super) fn delete(&self, writer: &Writer<'_>, propagation: Propagation) -> bool {
        if self.deleting() {
            return false;
        }
        let options = DeleteOptions {
            precondition_uid: Some(self.uid().to_owned()),
            propagation: Some(propagation),
            ..DeleteOptions::default()
        };
        let request = writer.request(&self.resource, self.namespace(), self.object.name());
        writer.store.delete(&request, &options).is_ok()
    }

    /// Deletes it again once it is marked and its last finalizer is gone, as the
    /// namespace controller and apiextensions-apiserver's CRD finalizer do after they
    /// removed theirs: an update does not remove an object whose deletion set no grace
    /// period (Namespaces, CRDs). Whether it is gone.
    pub(super) fn finish_deletion(&self, writer: &Writer<'_>) -> bool {
        let options = DeleteOptions {
            precondition_uid: Some(self.uid().to_owned()),
            ..DeleteOptions::default()
        };
        let request = writer.request(&self.resource, self.namespace(), self.object.name());
        writer.store.delete(&request, &options).is_ok()
    }

    /// Rewrites it with `change`, if it is still this object (same uid), as an update
    /// through the store; a result that is being deleted with a grace period of 0 and has
    /// no finalizers left is removed. Whether it changed.
    pub(super) fn rewrite(
        &self,
        writer: &Writer<'_>,
        change: impl Fn(&mut serde_json::Map<String, Value>),
    ) -> bool {
        self.write(writer, None, change)
    }

    /// [`rewrite`](Self::rewrite) of its status subresource.
    pub(super) fn rewrite_status(
        &self,
        writer: &Writer<'_>,
        change: impl Fn(&mut serde_json::Map<String, Value>),
    ) -> bool {
        self.write(writer, Some("status"), change)
    }

    fn write(
        &self,
        writer: &Writer<'_>,
        subresource: Option<&str>,
        change: impl Fn(&mut serde_json::Map<String, Value>),
    ) -> bool {
        let uid = self.uid();
        let request = WriteRequest {
            subresource,
            ..writer.request(&self.resource, self.namespace(), self.object.name())
        };
        let outcome = writer
            .store
            .update(&request, false, Ownership::RecordUpdate, |current| {
                if current
                    .value
                    .pointer("/metadata/uid")
                    .and_then(Value::as_str)
                    != Some(uid)
                {
                    return Ok(None);
                }
                let mut object = current.value.as_object().cloned().unwrap_or_default();
                change(&mut object);
                Ok((Value::Object(object.clone()) != current.value).then_some(object))
            });
        match outcome {
            Ok(result) => result.changed,
            Err(status) => {
                tracing::debug!(status = %status.message, "a controller's write was refused");
                false
            }
        }
    }

    /// Removes `finalizer` from `metadata.finalizers` (the object goes if it was the last).
    pub(super) fn remove_finalizer(&self, writer: &Writer<'_>, finalizer: &str) -> bool {
        self.rewrite(writer, |object| {
            let metadata = metadata_mut(object);
            if let Some(Value::Array(list)) = metadata.get_mut("finalizers") {
                list.retain(|f| f.as_str() != Some(finalizer));
                if list.is_empty() {
                    metadata.remove("finalizers");
                }
            }
        })
    }

    /// Removes the owner references to the owners in `uids`.
    pub(super) fn remove_owner_refs(&self, writer: &Writer<'_>, uids: &HashSet<&str>) -> bool {
        self.rewrite(writer, |object| {
            let metadata = metadata_mut(object);
            if let Some(Value::Array(refs)) = metadata.get_mut("ownerReferences") {
                refs.retain(|r| {
                    r.get("uid")
                        .and_then(Value::as_str)
                        .is_none_or(|uid| !uids.contains(uid))
                });
                if refs.is_empty() {
                    metadata.remove("ownerReferences");
                }
            }
        })
    }
}

/// Every stored object, indexed by uid and by owner.
pub(super) struct Graph {
    pub(super) nodes: Vec<Node>,
    by_uid: HashMap<String, usize>,
    dependents: HashMap<String, Vec<usize>>,
}

impl Graph {
    /// Reads every resource's objects (once per stored resource, whatever the versions).
    pub(super) fn load(store: &GenericStore<'_>) -> Graph {
        let mut seen = HashSet::new();
        let mut nodes = Vec::new();
        for resource in store.resources.all() {
            let group_resource = resource.group_resource();
            if !seen.insert(group_resource.clone()) {
                continue;
            }
            for object in store.storage.snapshot(&group_resource, "").objects {
                nodes.push(Node {
                    resource: Arc::clone(&resource),
                    object,
                });
            }
        }
        let mut by_uid = HashMap::new();
        let mut dependents: HashMap<String, Vec<usize>> = HashMap::new();
        for (index, node) in nodes.iter().enumerate() {
            by_uid.insert(node.uid().to_owned(), index);
            for owner in node.owner_refs() {
                dependents
                    .entry(owner.uid.to_owned())
                    .or_default()
                    .push(index);
            }
        }
        Graph {
            nodes,
            by_uid,
            dependents,
        }
    }

    /// The object with this uid, if it is stored.
    pub(super) fn get(&self, uid: &str) -> Option<&Node> {
        self.by_uid.get(uid).map(|&index| &self.nodes[index])
    }

    /// The objects that name `uid` among their owners.
    pub(super) fn dependents_of(&self, uid: &str) -> impl Iterator<Item = &Node> {
        self.dependents
            .get(uid)
            .into_iter()
            .flatten()
            .map(|&index| &self.nodes[index])
    }

    /// Whether anything names `uid` among its owners.
    pub(super) fn has_dependents(&self, uid: &str) -> bool {
        self.dependents.contains_key(uid)
    }
}
