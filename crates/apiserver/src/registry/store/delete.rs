//! Delete: preconditions, finalizers, graceful deletion, the propagation policy's
//! finalizer, a Namespace's `Terminating` phase and a CRD's cleanup; deletecollection;
//! and what removing an object entails (a removed CRD stops being served).

use super::*;
use crate::object::{finalized, finalizers, meta_str, now};
use crate::registry::kinds::strategy_for;
use crate::registry::{Propagation, Special, crd_resources};
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
    /// `gracePeriodSeconds` (a negative one counts as 1, as `BeforeDelete` has it);
    /// `None` uses the object's (a Pod's `terminationGracePeriodSeconds`).
    pub(crate) grace_period_seconds: Option<i64>,
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

    /// [`delete`](Self::delete) with a grace period (else the options' own): `Some(0)`
    /// removes an object the kind deletes gracefully at once, and finishes the deletion
    /// of one already marked (what a kubelet sends once a Pod's containers stopped); a
    /// shorter one than a marked object's shortens its grace period (`BeforeDelete`: the
    /// `deletionTimestamp` moves earlier by the difference); `None` uses the kind's (the
    /// [`Strategy`](crate::registry::strategy::Strategy)'s `deletion_grace_period`).
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
        let strategy = strategy_for(resource);
        // Asked before the write: the strategy reads storage, which the write locks.
        let grace = grace
            .or(options.grace_period_seconds)
            .map(|seconds| if seconds < 0 { 1 } else { seconds });
        let graceful = match grace {
            Some(0) => None,
            _ => self
                .get(resource, request.namespace, request.name)
                .and_then(|current| {
                    strategy.deletion_grace_period(self.storage, &current.value, grace)
                }),
        };
        if request.admit
            && let Some(current) = self.get(resource, request.namespace, request.name)
        {
            // Their warnings have nowhere to go: a DELETE's answer carries none here.
            self.admit_delete(request, options, &current.value)?;
        }
        let name = request.name;
        let dry_run = request.dry_run;
        let mut result: Option<Deleted> = None;
        let propagation = options
            .propagation
            .unwrap_or_else(|| strategy.default_garbage_collection_policy(&resource.version));
        // kube-apiserver's early precondition check names the kind, not the resource.
        let precondition_kind = GroupResource {
            group: resource.group.clone(),
            resource: resource.kind.clone(),
        };
        // Decided again on the newer state when another write got in between (over etcd,
        // another server's): kube-apiserver's delete is a `GuaranteedUpdate` too, which
        // re-reads and checks the preconditions and finalizers again instead of a 409.
        let outcome = self.storage.update(&request.storage(), &request.key_for(name), |current| {
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
            let added_finalizer = strategy.deletion_finalizer(propagation);
            let mut marked = current.value.as_object().cloned().unwrap_or_default();
            let metadata = metadata_mut(&mut marked);
            if metadata.contains_key("deletionTimestamp") {
                // Marked, with no finalizer left: a DELETE with a grace period of 0, or of
                // one marked without a grace period (or 0), removes it (kube-apiserver's
                // BeforeDelete lets such a DELETE through).
                let no_grace = metadata
                    .get("deletionGracePeriodSeconds")
                    .and_then(Value::as_i64)
                    .is_none_or(|seconds| seconds == 0);
                if (grace == Some(0) || no_grace) && finalized(&current.value) {
                    result = Some(Deleted::Removed(current.value.clone()));
                    return Ok(if dry_run { Write::Unchanged } else { Write::Delete });
                }
                // Only a shorter grace period may be set, on what a kubelet runs.
                let marked_grace = metadata.get("deletionGracePeriodSeconds").and_then(Value::as_i64);
                if let (Some(shorter), Some(longer)) = (grace, marked_grace)
                    && shorter < longer
                    && strategy.deletes_gracefully()
                {
                    let timestamp = metadata
                        .get("deletionTimestamp")
                        .and_then(Value::as_str)
                        .and_then(|t| t.parse::<jiff::Timestamp>().ok())
                        .and_then(|t| t.checked_sub(jiff::SignedDuration::from_secs(longer - shorter)).ok());
                    if let Some(timestamp) = timestamp {
                        metadata.insert("deletionTimestamp".to_owned(), json!(timestamp.to_string()));
                    }
                    metadata.insert("deletionGracePeriodSeconds".to_owned(), json!(shorter));
                    let marked = Value::Object(marked);
                    result = Some(Deleted::Marked(marked.clone()));
                    return Ok(if dry_run { Write::Unchanged } else { Write::Update(marked) });
                }
                result = Some(Deleted::Marked(current.value.clone()));
                return Ok(Write::Unchanged);
            }
            let stays = finalizers(&current.value).next().is_some()
                || added_finalizer.is_some()
                || strategy.deletes_through_controller();
            if !stays && graceful.is_none() {
                let mut last = current.value.clone();
                if strategy.deletes_gracefully()
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
            if resource.tracks_generation && strategy.deletion_bumps_generation() {
                let generation = metadata.get("generation").and_then(Value::as_i64).unwrap_or(1);
                metadata.insert("generation".to_owned(), json!(generation.saturating_add(1)));
            }
            strategy.prepare_for_deletion(&mut marked);
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
        // Only a real change is told: a DELETE of an object already marked wakes nobody.
        if !dry_run && outcome.change.is_some() {
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
                    .update(&group_resource, &key, |_| Ok::<_, ()>(Write::Delete));
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

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::authentication::UserInfo;

    /// Counts the deletes it is told of.
    #[derive(Default)]
    struct CountingHook(AtomicUsize);

    impl WriteHook for CountingHook {
        fn committed(&self, _: &ResourceDef, write: Committed<'_>) {
            if matches!(write, Committed::Deleted) {
                self.0.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Issue 25: every DELETE woke the controllers, even one of an object already marked
    /// for deletion, which changes nothing.
    #[test]
    fn only_a_delete_that_changes_storage_is_told_to_the_hook() {
        let (storage, resources, hook) =
            (Store::new(100), Registry::new(), CountingHook::default());
        let store = GenericStore {
            storage: &storage,
            resources: &resources,
            max_object_bytes: 1 << 20,
            hook: &hook,
            webhooks: Default::default(),
        };
        let namespaces = resources
            .lookup("", "v1", "namespaces")
            .expect("namespaces");
        let user = UserInfo::admin();
        let request = WriteRequest::new(&namespaces, None, "team", &user, "test");
        let namespace =
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}});
        let Value::Object(namespace) = namespace else {
            unreachable!()
        };
        store
            .create(&request, namespace, Ownership::RecordUpdate)
            .expect("created");
        let first = store.delete(&request, &DeleteOptions::default());
        assert!(matches!(first, Ok(Deleted::Marked(_))), "{first:?}");
        assert_eq!(hook.0.load(Ordering::Relaxed), 1, "the marking is told");
        let again = store.delete(&request, &DeleteOptions::default());
        assert!(matches!(again, Ok(Deleted::Marked(_))), "{again:?}");
        assert_eq!(
            hook.0.load(Ordering::Relaxed),
            1,
            "a second DELETE changes nothing"
        );
    }
}
