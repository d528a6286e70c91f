//! kube-apiserver's ResourceQuota admission plugin
//! (`k8s.io/apiserver/pkg/admission/plugin/resourcequota`), for creates: an object whose
//! usage would take its namespace past a quota's `spec.hard` is refused with 403
//! (`exceeded quota: NAME, requested: ..., used: ..., limited: ...`), and a Pod whose
//! containers leave out a compute resource a quota constrains is refused with
//! `failed quota: NAME: must specify ...`. Usage is counted from the stored objects at
//! admission time, so it holds before the quota controller wrote any status (where
//! kube-apiserver refuses with `status unknown for quota`), and creates a quota counts
//! are admitted and stored one at a time in this process, so two racing creates cannot
//! both take the last unit. (Several servers on one etcd do not share that lock;
//! kube-apiserver's plugin serializes through the quota's `status.used` instead.)

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Mutex, MutexGuard};

use kubeclient_machinery::{GroupResource, Status};
use serde_json::Value;

use super::{GenericStore, StoreResult, WriteRequest, fail};
use crate::registry::resource_quota::{
    self, all_zero, counted_resource, exceeds, hard_limits, namespace_usage, object_usage, pretty,
    quota_selects,
};

/// Held from the admission of a create that a quota counts to its commit.
static QUOTA_ADMISSION: Mutex<()> = Mutex::new(());

/// The lock that keeps a quota-counted create's admission and commit together.
pub(super) type QuotaGuard = MutexGuard<'static, ()>;

/// The compute resources each container must name when a quota constrains them
/// (`pods.go`'s `validationSet`).
const CONTAINER_CONSTRAINED: [&str; 6] = [
    "cpu",
    "memory",
    "requests.cpu",
    "requests.memory",
    "limits.cpu",
    "limits.memory",
];

/// The quota resources a container names: `requests.X` and bare `X` for a request,
/// `limits.X` for a limit.
fn container_names(container: &Value) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for resource in ["cpu", "memory"] {
        let has = |kind: &str| {
            container
                .get("resources")
                .and_then(|r| r.get(kind))
                .and_then(|r| r.get(resource))
                .is_some()
        };
        if has("requests") {
            names.insert(resource.to_owned());
            names.insert(format!("requests.{resource}"));
        }
        if has("limits") {
            names.insert(format!("limits.{resource}"));
        }
    }
    names
}

/// `must specify R for: C1,C2; ...` when a container of `pod` leaves out a resource of
/// `hard` that must be named (`podEvaluator.Constraints`).
fn missing_constraints(
    pod: &Value,
    hard: &BTreeMap<String, resource_quota::Amount>,
) -> Option<String> {
    let required: BTreeSet<&str> = CONTAINER_CONSTRAINED
        .into_iter()
        .filter(|name| hard.contains_key(*name))
        .collect();
    if required.is_empty() {
        return None;
    }
    let mut missing: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for field in ["containers", "initContainers"] {
        let containers = pod
            .pointer(&format!("/spec/{field}"))
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        for container in containers {
            let named = container_names(container);
            let name = container.get("name").and_then(Value::as_str).unwrap_or("");
            for resource in &required {
                if !named.contains(*resource) {
                    missing.entry(resource).or_default().insert(name.to_owned());
                }
            }
        }
    }
    if missing.is_empty() {
        return None;
    }
    let parts: Vec<String> = missing
        .iter()
        .map(|(resource, containers)| {
            let containers: Vec<&str> = containers.iter().map(String::as_str).collect();
            format!("{resource} for: {}", containers.join(","))
        })
        .collect();
    Some(format!("must specify {}", parts.join("; ")))
}

impl GenericStore<'_> {
    /// The quota admission of a create of `object` (as it would be stored): 403 when it
    /// would exceed a quota of its namespace or leaves out a resource one constrains.
    /// When a quota counts the object, the returned guard must be held until the object
    /// is stored.
    pub(super) fn admit_quota(
        &self,
        request: &WriteRequest<'_>,
        object: &Value,
    ) -> StoreResult<Option<QuotaGuard>> {
        let Some(namespace) = request.namespace.filter(|n| !n.is_empty()) else {
            return Ok(None);
        };
        let quota_resource = GroupResource::new("", "resourcequotas");
        let prefix = format!("{namespace}/");
        if !self.storage.any_with_prefix(&quota_resource, &prefix) {
            return Ok(None);
        }
        let guard = crate::sync::lock(&QUOTA_ADMISSION);
        let quotas = self.storage.snapshot(&quota_resource, &prefix);
        let (group, plural) = (
            request.resource.group.as_str(),
            request.resource.plural.as_str(),
        );
        let name = object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        let forbidden = |why: String| {
            fail(Status::forbidden(
                &GroupResource::new(group, plural),
                name,
                &why,
            ))
        };
        let mut quotas: Vec<&Value> = quotas.objects.iter().map(|o| &o.value).collect();
        quotas.sort_by_key(|q| q.pointer("/metadata/name").and_then(Value::as_str));
        let mut counted = false;
        for quota in quotas {
            let quota_name = quota
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("");
            let hard = hard_limits(quota);
            let counts_object = hard
                .keys()
                .any(|r| counted_resource(r).is_some_and(|(g, p)| g == group && p == plural));
            if !counts_object || !quota_selects(quota, group, plural, object) {
                continue;
            }
            counted = true;
            if group.is_empty()
                && plural == "pods"
                && let Some(missing) = missing_constraints(object, &hard)
            {
                return Err(forbidden(format!("failed quota: {quota_name}: {missing}")));
            }
            let requested: BTreeMap<String, resource_quota::Amount> = hard
                .keys()
                .filter_map(|r| Some((r.clone(), object_usage(r, group, plural, object)?)))
                .collect();
            if all_zero(&requested) {
                continue;
            }
            let used = namespace_usage(
                self.storage,
                namespace,
                quota,
                requested.keys().map(String::as_str),
            );
            let exceeded: BTreeSet<&String> = requested
                .iter()
                .filter(|(r, amount)| match (used.get(*r), hard.get(*r)) {
                    (Some(used), Some(limit)) => exceeds(*used, **amount, *limit),
                    _ => false,
                })
                .map(|(r, _)| r)
                .collect();
            if exceeded.is_empty() {
                continue;
            }
            let only = |amounts: &BTreeMap<String, resource_quota::Amount>| {
                amounts
                    .iter()
                    .filter(|(r, _)| exceeded.contains(r))
                    .map(|(r, a)| (r.clone(), *a))
                    .collect::<BTreeMap<_, _>>()
            };
            return Err(forbidden(format!(
                "exceeded quota: {quota_name}, requested: {}, used: {}, limited: {}",
                pretty(&only(&requested)),
                pretty(&only(&used)),
                pretty(&only(&hard)),
            )));
        }
        Ok(counted.then_some(guard))
    }
}
