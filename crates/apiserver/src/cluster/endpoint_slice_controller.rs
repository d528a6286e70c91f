//! kube-controller-manager's EndpointSlice controller (`pkg/controller/endpointslice`
//! and `k8s.io/endpointslice`'s reconciler): for every Service with a selector (not an
//! `ExternalName` one), `discovery.k8s.io/v1` EndpointSlices named `<service>-<random>`,
//! owned by the Service, labelled `kubernetes.io/service-name` and
//! `endpointslice.kubernetes.io/managed-by: endpointslice-controller.k8s.io` (and the
//! Service's labels), one or more per set of ports, at most 100 endpoints each. Each
//! selected Pod with an address that has not finished is an endpoint, terminating ones
//! included: `conditions.serving` is its readiness (or `publishNotReadyAddresses`),
//! `terminating` whether it is being deleted, `ready` serving and not terminating (or
//! `publishNotReadyAddresses`); with `nodeName`, `zone` (its node's
//! `topology.kubernetes.io/zone`), `targetRef` and `hostname`. A Service with no
//! endpoints keeps one empty placeholder slice. Slices are updated in place where
//! their ports still fit, surplus ones deleted; the Service's deletion takes its slices
//! through their owner reference (the garbage collector).

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::controller_utils::{controller_ref, controller_uid, is_ready, meta};
use super::endpoint_util::{
    PodsByNamespace, endpoint_port, hostname, is_headless, publishes_not_ready, selected_pods,
    should_be_in_endpoints, target_ref,
};
use super::endpoints_controller::{HEADLESS_LABEL, port_key, same_or_empty};
use super::node::NodeSet;
use super::writer::{ENDPOINT_SLICES, Writer};

/// The most endpoints in one slice (`--max-endpoints-per-slice`).
const MAX_ENDPOINTS_PER_SLICE: usize = 100;

pub(super) const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";
pub(super) const MANAGED_BY_LABEL: &str = "endpointslice.kubernetes.io/managed-by";
pub(super) const CONTROLLER_NAME: &str = "endpointslice-controller.k8s.io";
const ZONE_LABEL: &str = "topology.kubernetes.io/zone";

/// One pass over every Service.
pub(super) fn sync(
    writer: &Writer<'_>,
    services: &[&Value],
    pods: &PodsByNamespace<'_>,
    slices: &[&Value],
    nodes: &NodeSet,
) {
    let zones: BTreeMap<&str, &str> = nodes
        .nodes
        .iter()
        .filter_map(|n| {
            n.labels
                .get(ZONE_LABEL)
                .map(|z| (n.name.as_str(), z.as_str()))
        })
        .collect();
    // The slices this controller manages, by (namespace, service name).
    let mut managed: BTreeMap<(&str, &str), Vec<&Value>> = BTreeMap::new();
    for slice in slices {
        let labels = slice.pointer("/metadata/labels");
        let label = |key: &str| labels.and_then(|l| l.get(key)).and_then(Value::as_str);
        if let (Some(CONTROLLER_NAME), Some(service)) =
            (label(MANAGED_BY_LABEL), label(SERVICE_NAME_LABEL))
        {
            managed
                .entry((meta(slice, "namespace"), service))
                .or_default()
                .push(slice);
        }
    }
    for service in services {
        if service.pointer("/spec/type").and_then(Value::as_str) == Some("ExternalName") {
            continue;
        }
        let Some(selected) = selected_pods(service, pods) else {
            continue;
        };
        let key = (meta(service, "namespace"), meta(service, "name"));
        let mut existing = managed.remove(&key).unwrap_or_default();
        // Slices of an earlier Service of that name go (the garbage collector would too).
        let uid = meta(service, "uid");
        existing.retain(|slice| {
            let ours = controller_uid(slice) == Some(uid);
            if !ours {
                writer.delete(
                    ENDPOINT_SLICES,
                    Some(key.0),
                    meta(slice, "name"),
                    meta(slice, "uid"),
                    None,
                );
            }
            ours
        });
        reconcile(
            writer,
            service,
            &desired(service, &selected, &zones),
            existing,
        );
    }
}

/// The endpoints with one set of ports (sorted).
struct PortGroup {
    ports: Vec<Value>,
    endpoints: Vec<Value>,
}

/// What one slice should hold: the key of its ports (`None`: the placeholder, no ports),
/// the ports and its endpoints.
struct Wanted<'a> {
    key: Option<String>,
    ports: Option<&'a Vec<Value>>,
    endpoints: &'a [Value],
}

/// The endpoints of `service`, grouped by their (sorted) ports.
fn desired(
    service: &Value,
    pods: &[&Value],
    zones: &BTreeMap<&str, &str>,
) -> BTreeMap<String, PortGroup> {
    let publish = publishes_not_ready(service);
    let service_ports: Vec<&Value> = service
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .map(|ports| ports.iter().collect())
        .unwrap_or_default();
    let mut groups: BTreeMap<String, PortGroup> = BTreeMap::new();
    for pod in pods {
        if !should_be_in_endpoints(pod, true) {
            continue;
        }
        let mut ports: Vec<Value> = service_ports
            .iter()
            .filter_map(|p| endpoint_port(pod, p))
            .collect();
        ports.sort_by_key(port_key);
        let serving = publish || is_ready(pod);
        let terminating = pod.pointer("/metadata/deletionTimestamp").is_some();
        let mut endpoint = json!({
            "addresses": [pod.pointer("/status/podIP").and_then(Value::as_str).unwrap_or("")],
            "conditions": {"ready": publish || (serving && !terminating), "serving": serving, "terminating": terminating},
            "targetRef": target_ref(pod),
        });
        let node = pod
            .pointer("/spec/nodeName")
            .and_then(Value::as_str)
            .unwrap_or("");
        if !node.is_empty() {
            endpoint["nodeName"] = json!(node);
            if let Some(zone) = zones.get(node) {
                endpoint["zone"] = json!(zone);
            }
        }
        if let Some(hostname) = hostname(pod, service) {
            endpoint["hostname"] = json!(hostname);
        }
        let key = ports.iter().map(port_key).collect::<Vec<_>>().join(",");
        groups
            .entry(key)
            .or_insert_with(|| PortGroup {
                ports,
                endpoints: Vec::new(),
            })
            .endpoints
            .push(endpoint);
    }
    for group in groups.values_mut() {
        group
            .endpoints
            .sort_by(|a, b| a["addresses"][0].as_str().cmp(&b["addresses"][0].as_str()));
    }
    groups
}

/// The key of a stored slice's ports (as [`desired`] keys them).
fn slice_port_key(slice: &Value) -> Option<String> {
    let ports = slice.get("ports").and_then(Value::as_array)?;
    let mut keys: Vec<String> = ports.iter().map(port_key).collect();
    keys.sort();
    Some(keys.join(","))
}

/// Brings `existing` (this Service's slices) to `desired`: slices whose ports fit are
/// updated in place (in name order), missing ones created, the rest deleted; with no
/// endpoints at all, one placeholder (no ports, no endpoints) stays.
fn reconcile(
    writer: &Writer<'_>,
    service: &Value,
    desired: &BTreeMap<String, PortGroup>,
    mut existing: Vec<&Value>,
) {
    existing.sort_by_key(|slice| meta(slice, "name"));
    let labels = labels(service);
    let namespace = meta(service, "namespace");
    let mut wanted: Vec<Wanted<'_>> = Vec::new();
    for (key, group) in desired {
        for chunk in group.endpoints.chunks(MAX_ENDPOINTS_PER_SLICE) {
            wanted.push(Wanted {
                key: Some(key.clone()),
                ports: Some(&group.ports),
                endpoints: chunk,
            });
        }
    }
    if wanted.is_empty() {
        wanted.push(Wanted {
            key: None,
            ports: None,
            endpoints: &[],
        });
    }
    let mut unused: Vec<Option<&Value>> = existing.iter().copied().map(Some).collect();
    let mut to_create = Vec::new();
    for Wanted {
        key,
        ports,
        endpoints,
    } in wanted
    {
        let fit = unused
            .iter_mut()
            .find(|slot| slot.is_some_and(|slice| slice_port_key(slice) == key))
            .and_then(Option::take);
        let endpoints = Value::Array(endpoints.to_vec());
        let ports = ports.map(|p| Value::Array(p.clone()));
        match fit {
            Some(slice) => {
                let same = same_or_empty(slice.get("endpoints"), &endpoints)
                    && same_or_empty(slice.pointer("/metadata/labels"), &labels)
                    && ports
                        .as_ref()
                        .is_none_or(|p| same_or_empty(slice.get("ports"), p));
                if !same {
                    writer.update(
                        ENDPOINT_SLICES,
                        Some(namespace),
                        meta(slice, "name"),
                        meta(slice, "uid"),
                        false,
                        |object| {
                            object.insert("endpoints".to_owned(), endpoints.clone());
                            if let Some(ports) = &ports {
                                object.insert("ports".to_owned(), ports.clone());
                            }
                            if let Some(Value::Object(metadata)) = object.get_mut("metadata") {
                                metadata.insert("labels".to_owned(), labels.clone());
                            }
                            true
                        },
                    );
                }
            }
            None => to_create.push((ports, endpoints)),
        }
    }
    for slice in unused.into_iter().flatten() {
        writer.delete(
            ENDPOINT_SLICES,
            Some(namespace),
            meta(slice, "name"),
            meta(slice, "uid"),
            None,
        );
    }
    for (ports, endpoints) in to_create {
        let mut slice = Map::new();
        slice.insert("apiVersion".to_owned(), json!("discovery.k8s.io/v1"));
        slice.insert("kind".to_owned(), json!("EndpointSlice"));
        slice.insert(
            "metadata".to_owned(),
            json!({
                "generateName": format!("{}-", meta(service, "name")),
                "namespace": namespace,
                "labels": labels,
                "ownerReferences": [controller_ref(service)],
            }),
        );
        slice.insert("addressType".to_owned(), json!("IPv4"));
        slice.insert("endpoints".to_owned(), endpoints);
        if let Some(ports) = ports {
            slice.insert("ports".to_owned(), ports);
        }
        writer.create(ENDPOINT_SLICES, Some(namespace), Value::Object(slice));
    }
}

/// The slices' labels: the Service's, its name, the manager, the headless label.
fn labels(service: &Value) -> Value {
    let mut labels = service
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    labels.insert(SERVICE_NAME_LABEL.to_owned(), json!(meta(service, "name")));
    labels.insert(MANAGED_BY_LABEL.to_owned(), json!(CONTROLLER_NAME));
    if is_headless(service) {
        labels.insert(HEADLESS_LABEL.to_owned(), json!(""));
    } else {
        labels.remove(HEADLESS_LABEL);
    }
    Value::Object(labels)
}
