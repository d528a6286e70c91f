//! Delete: preconditions, finalizers, graceful deletion, the propagation policy's
//! finalizer, a Namespace's `Terminating` phase and a CRD's cleanup; deletecollection;
//! and what removing an object entails (a removed CRD stops being served).

use super::*;
use crate::object::{finalizers, meta_str, now};
use crate::registry::strategy::strategy_for;
use crate::registry::{
    CRD_CLEANUP_FINALIZER, Propagation, Special, crd_resources, set_terminating,
};
use crate::storage::Write;

/// DeleteOptions: preconditions and the propagation policy (the dry run is the
/// request's).
#[derive(Clone, Debug, Default)]
pub(crate) struct DeleteOptions {
    /// `preconditions.uid`.
    pub(crate) precondition_uid: Option<String>,
    /// `preconditions.resourceVersion`.
    pub(crate) precondition_rv: Option<String>,
    /// `propagationPolicy` (or the deprecated `orphanDependents`); `None` uses the
    /// resource's default.
    pub(crate) propagation: Option<Propagation>,
}

/// What a delete did.
#[derive(Debug)]
pub(crate) enum Deleted {
    /// The object left storage; this was its last state.
    Removed(Value),
    /// The object stays, marked for deletion (finalizers, a propagation policy that waits
    /// for dependents, or a Namespace being emptied).
    Marked(Value),
}

impl GenericStore<'_> {
    /// Deletes the object `request` names, or marks it for deletion: preconditions,
    /// finalizers, the propagation policy's finalizer and a Namespace's `Terminating`
    /// phase.
    ///
    /// # Errors
    ///
    /// 404 for a missing object, 409 for a failed precondition.
    pub(crate) fn delete(
        &self,
        request: &WriteRequest<'_>,
        options: &DeleteOptions,
    ) -> StoreResult<Deleted> {
        self.delete_with_grace(request, options, None)
    }

    /// [`delete`](Self::delete) with a grace period: `Some(0)` removes an object the
    /// kind deletes gracefully at once, and finishes the deletion of one already marked
    /// (what a kubelet sends once a Pod's containers stopped); `None` uses the kind's
    /// (the [`Strategy`](crate::registry::strategy::Strategy)'s `deletion_grace_period`).
    ///
    /// # Errors
    ///
    /// As [`delete`](Self::delete).
    pub(crate) fn delete_with_grace(
        &self,
        request: &WriteRequest<'_>,
        options: &DeleteOptions,
        grace: Option<i64>,
    ) -> StoreResult<Deleted> {
        let resource = request.resource;
        // Asked before the write: the strategy reads storage, which the write locks.
        let graceful = match grace {
            Some(0) => None,
            _ => strategy_for(resource).and_then(|strategy| {
                let current = self.get(resource, request.namespace, request.name)?;
                strategy.deletion_grace_period(self.storage, &current.value)
            }),
        };
        let name = request.name;
        let dry_run = request.dry_run;
        let mut result: Option<Deleted> = None;
        let propagation = options
            .propagation
            .unwrap_or_else(|| resource.default_propagation());
        // kube-apiserver's early precondition check names the kind, not the resource.
        let precondition_kind = GroupResource {
            group: resource.group.clone(),
            resource: resource.kind.clone(),
        };
        let outcome = self.storage.write(&request.storage(), &request.key_for(name), |current| {
            let current = current.ok_or_else(|| request.not_found(name))?;
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
                if grace == Some(0) && finalizers(&current.value).next().is_none() {
                    result = Some(Deleted::Removed(current.value.clone()));
                    return Ok(if dry_run { Write::Unchanged } else { Write::Delete });
                }
                result = Some(Deleted::Marked(current.value.clone()));
                return Ok(Write::Unchanged);
            }
            // A Namespace always waits for the namespace controller to empty it.
            let is_namespace = resource.special == Special::Namespace;
            let stays = finalizers(&current.value).next().is_some()
                || added_finalizer.is_some()
                || is_namespace;
            if !stays && graceful.is_none() {
                let mut last = current.value.clone();
                if strategy_for(resource).is_some_and(|strategy| strategy.deletes_gracefully())
                    && let Some(metadata) = last.get_mut("metadata").and_then(Value::as_object_mut)
                {
                    metadata.insert("deletionTimestamp".to_owned(), json!(now()));
                    metadata.insert("deletionGracePeriodSeconds".to_owned(), json!(0));
                }
                result = Some(Deleted::Removed(last));
                return Ok(if dry_run { Write::Unchanged } else { Write::Delete });
            }
            let seconds = graceful.unwrap_or(0);
            metadata.insert("deletionTimestamp".to_owned(), json!(seconds_from_now(seconds)));
            metadata.insert("deletionGracePeriodSeconds".to_owned(), json!(seconds));
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
            Ok(if dry_run { Write::Unchanged } else { Write::Update(marked) })
        })?;
        let mut deleted =
            result.ok_or_else(|| fail(Status::internal_error("delete decided nothing")))?;
        // A marked object is answered as stored, with the resourceVersion of the marking.
        if let (Deleted::Marked(answer), Some(stored)) = (&mut deleted, &outcome.object)
            && !dry_run
        {
            *answer = stored.value.clone();
        }
        if !dry_run {
            if let Deleted::Removed(object) = &deleted {
                self.after_removal(resource, object);
            }
            self.committed(request, Committed::Deleted);
        }
        Ok(deleted)
    }

    /// Deletes every object of `request`'s resource in its namespace (every namespace
    /// when `None`) that `selected` picks; the objects as they were before, in storage
    /// form (those gone meanwhile are skipped).
    ///
    /// # Errors
    ///
    /// The first failed delete's Status.
    pub(crate) fn delete_collection(
        &self,
        request: &WriteRequest<'_>,
        selected: impl Fn(&StoredObject) -> bool,
        options: &DeleteOptions,
    ) -> StoreResult<Vec<Arc<StoredObject>>> {
        let prefix = request
            .namespace
            .map(|ns| format!("{ns}/"))
            .unwrap_or_default();
        let snapshot = self.storage.snapshot(&request.storage(), &prefix);
        let mut deleted = Vec::new();
        for object in snapshot.objects.into_iter().filter(|o| selected(o)) {
            let one = WriteRequest {
                namespace: Some(object.namespace()).filter(|ns| !ns.is_empty()),
                name: object.name(),
                ..*request
            };
            match self.delete(&one, options) {
                Ok(_) => {}
                Err(status) if status.code == 404 => continue,
                Err(status) => return Err(status),
            }
            deleted.push(object);
        }
        Ok(deleted)
    }

    /// Side effects of removing an object: a removed CRD stops being served and its
    /// objects go.
    pub(crate) fn after_removal(&self, resource: &ResourceDef, object: &Value) {
        if resource.special != Special::CustomResourceDefinition {
            return;
        }
        if let Ok(resources) = crd_resources(object)
            && let Some(first) = resources.first()
        {
            let group_resource = first.group_resource();
            // A CRD naming a built-in resource never served it: the built-in's objects stay.
            if self.resources.is_builtin(&first.group, &first.plural) {
                return;
            }
            self.resources.unregister(&first.group, &first.plural);
            for stored in self.storage.snapshot(&group_resource, "").objects {
                let key = store_key(Some(stored.namespace()), stored.name());
                let _ = self
                    .storage
                    .write(&group_resource, &key, |_| Ok::<_, ()>(Write::Delete));
            }
            self.storage.drop_watchers_of(&group_resource);
        }
    }
}

/// The time `seconds` from now, as a `deletionTimestamp` (whole seconds).
fn seconds_from_now(seconds: i64) -> String {
    let at = jiff::Timestamp::now().as_second().saturating_add(seconds);
    jiff::Timestamp::from_second(at).map_or_else(|_| now(), |t| t.to_string())
}
