//! The Pod and container a `log`, `exec`, `attach` or `portforward` request names, with
//! the API server's rules (`pkg/registry/core/pod/strategy.go`): a missing Pod is 404; no
//! container named and more than one in the Pod is 400 listing them; a container the Pod
//! does not have is 400 `container X is not valid for pod Y`.

use std::sync::Arc;

use kubeclient_machinery::{GroupResource, Status};
use serde_json::Value;

use crate::object::store_key;
use crate::response::{HandlerResult, fail};
use crate::state::State;
use crate::storage::StoredObject;

/// A Pod, and one of its containers when one was resolved.
#[derive(Debug)]
pub(crate) struct PodTarget {
    /// The namespace.
    pub(crate) namespace: String,
    /// The Pod's name.
    pub(crate) name: String,
    /// The stored Pod.
    pub(crate) pod: Arc<StoredObject>,
    /// The container's name (empty for port-forward, which targets the Pod).
    pub(crate) container: String,
}

pub(crate) fn pods() -> GroupResource {
    GroupResource::new("", "pods")
}

/// Looks the Pod up.
///
/// # Errors
///
/// 404 NotFound when it does not exist.
pub(crate) fn find_pod(state: &State, namespace: &str, name: &str) -> HandlerResult<PodTarget> {
    let pod = state
        .store
        .get(&pods(), &store_key(Some(namespace), name))
        .ok_or_else(|| fail(Status::not_found(&pods(), name)))?;
    Ok(PodTarget {
        namespace: namespace.to_owned(),
        name: name.to_owned(),
        pod,
        container: String::new(),
    })
}

/// The node the Pod is bound to, if any.
pub(crate) fn node_name(target: &PodTarget) -> Option<&str> {
    target
        .pod
        .value
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .filter(|node| !node.is_empty())
}

/// Exec, attach and port-forward reach a Pod through its node.
///
/// # Errors
///
/// 400 `pod X does not have a host assigned` for a Pod no node holds (kube-apiserver's
/// answer, before any upgrade).
pub(crate) fn require_host(target: &PodTarget) -> HandlerResult<()> {
    match node_name(target) {
        Some(_) => Ok(()),
        None => Err(fail(Status::bad_request(format!(
            "pod {} does not have a host assigned",
            target.name
        )))),
    }
}

/// Looks the Pod up and resolves `container` (the only container when empty).
///
/// # Errors
///
/// 404 for a missing Pod, 400 for a missing or unknown container name.
pub(crate) fn resolve(
    state: &State,
    namespace: &str,
    name: &str,
    container: Option<&str>,
) -> HandlerResult<PodTarget> {
    let mut target = find_pod(state, namespace, name)?;
    let spec = &target.pod.value["spec"];
    let names = |field: &str| -> Vec<String> {
        spec[field]
            .as_array()
            .map(|containers| {
                containers
                    .iter()
                    .filter_map(|c| c["name"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    let regular = names("containers");
    target.container = match container.filter(|c| !c.is_empty()) {
        Some(wanted) => {
            let known = regular.iter().any(|c| c == wanted)
                || names("initContainers").iter().any(|c| c == wanted)
                || names("ephemeralContainers").iter().any(|c| c == wanted);
            if !known {
                return Err(fail(Status::bad_request(format!(
                    "container {wanted} is not valid for pod {name}"
                ))));
            }
            wanted.to_owned()
        }
        None => match regular.as_slice() {
            [only] => only.clone(),
            [] => {
                return Err(fail(Status::bad_request(format!(
                    "a container name must be specified for pod {name}"
                ))));
            }
            many => {
                return Err(fail(Status::bad_request(format!(
                    "a container name must be specified for pod {name}, choose one of: [{}]",
                    many.join(" ")
                ))));
            }
        },
    };
    Ok(target)
}

impl PodTarget {
    /// The resolved container's spec (`null` if it has none).
    pub(crate) fn container_spec(&self) -> &Value {
        let spec = &self.pod.value["spec"];
        for field in ["containers", "initContainers", "ephemeralContainers"] {
            if let Some(found) = spec[field].as_array().and_then(|containers| {
                containers
                    .iter()
                    .find(|c| c["name"].as_str() == Some(self.container.as_str()))
            }) {
                return found;
            }
        }
        &Value::Null
    }
}
