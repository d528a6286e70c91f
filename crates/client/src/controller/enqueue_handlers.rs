//! The event handlers a controller registers: enqueue the object's own key, its controller
//! owner's key, or the keys a mapping function returns (controller-runtime's
//! `EnqueueRequestForObject`, `EnqueueRequestForOwner(OnlyControllerOwner)` and
//! `EnqueueRequestsFromMapFunc`).

use std::marker::PhantomData;
use std::sync::Arc;

use kubeclient_machinery::gvk::ScopeNamespaced;
use kubeclient_machinery::{DeletedObject, Object, meta_namespace_key};

use crate::cache::ResourceEventHandler;
use crate::workqueue::RateLimitingQueue;

use super::predicate::Predicate;

/// Maps a watched object to the keys of the primary objects to reconcile.
pub(super) type MapFn<O> = Arc<dyn Fn(&O) -> Vec<String> + Send + Sync>;

/// Enqueues the key of every added, updated or deleted primary object.
pub(super) struct EnqueueObject {
    pub(super) queue: RateLimitingQueue<String>,
}

impl<K: Object> ResourceEventHandler<K> for EnqueueObject {
    fn on_add(&self, obj: &Arc<K>, _: bool) {
        self.queue.add(meta_namespace_key(obj.as_ref()));
    }

    fn on_update(&self, _: &Arc<K>, new: &Arc<K>) {
        self.queue.add(meta_namespace_key(new.as_ref()));
    }

    fn on_delete(&self, obj: &DeletedObject<K>) {
        self.queue.add(obj.key());
    }

    fn reads_old_object(&self) -> bool {
        false
    }
}

/// Enqueues the key of the controller owner of an owned object when that owner is a `P`
/// (same API group and kind; the version may differ). An update enqueues both the old and
/// the new owner when the owner reference changed.
pub(super) struct EnqueueOwner<P> {
    pub(super) queue: RateLimitingQueue<String>,
    pub(super) owner: PhantomData<fn() -> P>,
}

impl<P> EnqueueOwner<P>
where
    P: k8s_openapi::Resource<Scope: ScopeNamespaced>,
{
    fn owner_key<C: Object>(child: &C) -> Option<String> {
        let owner = child.controller_of()?;
        let group = owner
            .api_version
            .rsplit_once('/')
            .map_or("", |(group, _)| group);
        if owner.kind != P::KIND || group != P::GROUP || owner.name.is_empty() {
            return None;
        }
        Some(match child.namespace() {
            Some(namespace) if P::Scope::NAMESPACED => format!("{namespace}/{}", owner.name),
            _ => owner.name.clone(),
        })
    }

    fn enqueue<C: Object>(&self, child: &C) {
        if let Some(key) = Self::owner_key(child) {
            self.queue.add(key);
        }
    }
}

impl<P, C> ResourceEventHandler<C> for EnqueueOwner<P>
where
    P: k8s_openapi::Resource<Scope: ScopeNamespaced> + 'static,
    C: Object,
{
    fn on_add(&self, obj: &Arc<C>, _: bool) {
        self.enqueue(obj.as_ref());
    }

    fn on_update(&self, old: &Arc<C>, new: &Arc<C>) {
        let (old_key, new_key) = (Self::owner_key(old.as_ref()), Self::owner_key(new.as_ref()));
        if old_key != new_key
            && let Some(key) = old_key
        {
            self.queue.add(key);
        }
        if let Some(key) = new_key {
            self.queue.add(key);
        }
    }

    fn on_delete(&self, obj: &DeletedObject<C>) {
        if let Some(child) = obj.object() {
            self.enqueue(child.as_ref());
        }
    }
}

/// Enqueues the keys a mapping function returns for a watched object (old and new on an
/// update, so a primary that stopped matching is reconciled too).
pub(super) struct EnqueueMapped<O> {
    pub(super) queue: RateLimitingQueue<String>,
    pub(super) map: MapFn<O>,
}

impl<O> EnqueueMapped<O> {
    fn enqueue(&self, obj: &O) {
        for key in (self.map)(obj) {
            self.queue.add(key);
        }
    }
}

impl<O: Object> ResourceEventHandler<O> for EnqueueMapped<O> {
    fn on_add(&self, obj: &Arc<O>, _: bool) {
        self.enqueue(obj.as_ref());
    }

    fn on_update(&self, old: &Arc<O>, new: &Arc<O>) {
        self.enqueue(old.as_ref());
        self.enqueue(new.as_ref());
    }

    fn on_delete(&self, obj: &DeletedObject<O>) {
        if let Some(obj) = obj.object() {
            self.enqueue(obj.as_ref());
        }
    }
}

/// Passes an event on to `handler` when `predicate` lets it through (controller-runtime's
/// predicates on a `source.Kind`). A tombstone without its last state always passes.
pub(super) struct Filtered<H, K> {
    pub(super) handler: H,
    pub(super) predicate: Arc<dyn Predicate<K>>,
}

impl<H: ResourceEventHandler<K>, K: Object + 'static> ResourceEventHandler<K> for Filtered<H, K> {
    fn on_add(&self, obj: &Arc<K>, is_in_initial_list: bool) {
        if self.predicate.create(obj.as_ref()) {
            self.handler.on_add(obj, is_in_initial_list);
        }
    }

    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        if self.predicate.update(old.as_ref(), new.as_ref()) {
            self.handler.on_update(old, new);
        }
    }

    fn on_delete(&self, obj: &DeletedObject<K>) {
        if obj
            .object()
            .is_none_or(|o| self.predicate.delete(o.as_ref()))
        {
            self.handler.on_delete(obj);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
    use k8s_openapi::api::core::v1::Namespace;

    fn owned_by(api_version: &str, kind: &str, controller: bool) -> ReplicaSet {
        serde_json::from_value(serde_json::json!({"metadata": {
            "name": "web-1234", "namespace": "prod",
            "ownerReferences": [{"apiVersion": api_version, "kind": kind, "name": "web", "uid": "u", "controller": controller}]
        }}))
        .unwrap()
    }

    #[test]
    fn the_owner_key_needs_a_controller_reference_of_the_same_group_and_kind() {
        type ToDeployment = EnqueueOwner<Deployment>;
        assert_eq!(
            ToDeployment::owner_key(&owned_by("apps/v1", "Deployment", true)).as_deref(),
            Some("prod/web")
        );
        // Another version of the same group still names the owner.
        assert_eq!(
            ToDeployment::owner_key(&owned_by("apps/v1beta2", "Deployment", true)).as_deref(),
            Some("prod/web")
        );
        assert_eq!(
            ToDeployment::owner_key(&owned_by("apps/v1", "Deployment", false)),
            None,
            "not the controller"
        );
        assert_eq!(
            ToDeployment::owner_key(&owned_by("other.io/v1", "Deployment", true)),
            None,
            "another group"
        );
        assert_eq!(
            ToDeployment::owner_key(&owned_by("apps/v1", "StatefulSet", true)),
            None,
            "another kind"
        );
    }

    #[test]
    fn a_cluster_scoped_owner_is_keyed_by_name_alone() {
        let child = owned_by("v1", "Namespace", true);
        assert_eq!(
            EnqueueOwner::<Namespace>::owner_key(&child).as_deref(),
            Some("web")
        );
    }
}
