//! A Pod's binding to a node (kube-apiserver's `BindingREST` in
//! `pkg/registry/core/pod/storage`): `spec.nodeName` is set once, by the scheduler, with
//! the `PodScheduled` condition; a Pod already bound, or being deleted, refuses a second
//! binding with 409. The rules of the binding subresource's compute step are the Pod's
//! ([`kinds::pod_binding`](crate::registry::kinds::pod_binding)).

use kubeclient_machinery::{GroupResource, Status};
use serde_json::{Value, json};

use super::{GenericStore, Ownership, StoreResult, WriteRequest, fail};
use crate::authentication::UserInfo;
use crate::object::now;
use crate::registry::kinds::pod_binding::{BINDING_SUBRESOURCE, set_condition};

/// Binds the Pod `namespace/name` (with `uid`) to `node`, as `user`: sets
/// `spec.nodeName` and the `PodScheduled=True` condition in one write.
///
/// # Errors
///
/// 404 when the Pod is gone, 409 when it is another Pod of that name, already bound or
/// being deleted.
pub(crate) fn bind(
    store: &GenericStore<'_>,
    user: &UserInfo,
    namespace: &str,
    name: &str,
    uid: &str,
    node: &str,
) -> StoreResult<()> {
    let pods = store
        .resources
        .lookup("", "v1", "pods")
        .ok_or_else(|| fail(Status::internal_error("pods are not served")))?;
    let request = WriteRequest {
        subresource: Some(BINDING_SUBRESOURCE),
        ..WriteRequest::new(&pods, Some(namespace), name, user, "kube-scheduler")
    };
    let binding = GroupResource::new("", "pods/binding");
    let refused = |message: String| fail(Status::conflict(&binding, name, &message));
    store.update(&request, false, Ownership::AlreadyRecorded, |current| {
        let pod = &current.value;
        if pod.pointer("/metadata/uid").and_then(Value::as_str) != Some(uid) {
            return Err(refused(format!(
                "the UID in the precondition ({uid}) does not match the UID in record"
            )));
        }
        if pod.pointer("/metadata/deletionTimestamp").is_some() {
            return Err(refused(format!(
                "pod {name} is being deleted, cannot be assigned to a host"
            )));
        }
        let bound = pod
            .pointer("/spec/nodeName")
            .and_then(Value::as_str)
            .unwrap_or("");
        if !bound.is_empty() {
            return Err(refused(format!(
                "pod {name} is already assigned to node {bound:?}"
            )));
        }
        let mut object = pod.as_object().cloned().unwrap_or_default();
        if let Some(Value::Object(spec)) = object.get_mut("spec") {
            spec.insert("nodeName".to_owned(), json!(node));
        }
        set_condition(
            &mut object,
            json!({"type": "PodScheduled", "status": "True", "lastProbeTime": null, "lastTransitionTime": now()}),
        );
        Ok(Some(object))
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;
    use crate::registry::kinds::pod_binding::{
        SCHEDULER_LEASE_NAME, SCHEDULER_LEASE_NAMESPACE, cluster_runs, kubelet_runs,
    };
    use crate::registry::store::NoHook;
    use crate::storage::Store;

    fn user() -> UserInfo {
        UserInfo {
            username: "system:kube-scheduler".to_owned(),
            uid: String::new(),
            groups: Vec::new(),
            ..UserInfo::default()
        }
    }

    /// A store with namespace `default` and an unbound Pod `web` (a cluster "runs": the
    /// scheduler's Lease exists); the Pod's uid.
    fn store_with_pod(storage: &Store, registry: &Registry) -> String {
        let store = GenericStore {
            storage,
            resources: registry,
            max_object_bytes: 1 << 20,
            hook: &NoHook,
            webhooks: Default::default(),
        };
        let user = user();
        let create = |group: &str, plural: &str, namespace: Option<&str>, object: Value| {
            let resource = registry.lookup(group, "v1", plural).expect("served");
            let Value::Object(object) = object else {
                unreachable!("objects are maps")
            };
            let name = object["metadata"]["name"].as_str().unwrap_or("").to_owned();
            let request = WriteRequest::new(&resource, namespace, &name, &user, "test");
            store
                .create(&request, object, Ownership::RecordUpdate)
                .expect("created")
        };
        for namespace in ["default", SCHEDULER_LEASE_NAMESPACE] {
            create(
                "",
                "namespaces",
                None,
                json!({"metadata": {"name": namespace}}),
            );
        }
        create(
            "coordination.k8s.io",
            "leases",
            Some(SCHEDULER_LEASE_NAMESPACE),
            json!({"metadata": {"name": SCHEDULER_LEASE_NAME}, "spec": {}}),
        );
        let pod = create(
            "",
            "pods",
            Some("default"),
            json!({"metadata": {"name": "web"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}),
        );
        let stored = pod.stored.expect("stored");
        assert!(
            stored.value.pointer("/spec/nodeName").is_none(),
            "no create-time binding"
        );
        stored.value["metadata"]["uid"]
            .as_str()
            .unwrap_or("")
            .to_owned()
    }

    #[test]
    fn a_pod_binds_once_with_its_condition_and_a_second_binding_conflicts() {
        let (storage, registry) = (Store::new(100), Registry::new());
        let uid = store_with_pod(&storage, &registry);
        let store = GenericStore {
            storage: &storage,
            resources: &registry,
            max_object_bytes: 1 << 20,
            hook: &NoHook,
            webhooks: Default::default(),
        };
        assert!(cluster_runs(&storage));
        assert!(!kubelet_runs(&storage, "node-1"));
        bind(&store, &user(), "default", "web", &uid, "node-1").expect("bound");
        let pod = storage
            .get(&GroupResource::new("", "pods"), "default/web")
            .expect("the Pod");
        assert_eq!(pod.value["spec"]["nodeName"], "node-1");
        let conditions = pod.value["status"]["conditions"]
            .as_array()
            .expect("conditions");
        assert!(
            conditions
                .iter()
                .any(|c| c["type"] == "PodScheduled" && c["status"] == "True")
        );
        let again =
            bind(&store, &user(), "default", "web", &uid, "node-2").expect_err("a conflict");
        assert_eq!(again.code, 409);
        assert_eq!(
            again.message,
            "Operation cannot be fulfilled on pods/binding \"web\": pod web is already assigned to node \"node-1\""
        );
        let other = bind(&store, &user(), "default", "web", "another-uid", "node-2")
            .expect_err("another Pod");
        assert_eq!(other.code, 409);
        let missing = bind(&store, &user(), "default", "gone", &uid, "node-2").expect_err("404");
        assert_eq!(missing.code, 404);
    }
}
