//! kube-controller-manager's Endpoints controller (`pkg/controller/endpoint`): for every
//! Service with a selector, an Endpoints object of the same name whose subsets list the
//! selected Pods' addresses (`addresses` when ready or the Service publishes not-ready
//! addresses, `notReadyAddresses` otherwise; Pods being deleted left out unless it
//! publishes them) with `nodeName`, `targetRef` and `hostname`, and the container ports
//! the Service's ports target, packed as `RepackSubsets` packs them (one subset per set of
//! ports). Labels are the Service's (plus `service.kubernetes.io/headless` for a headless
//! one); past 1,000 addresses the rest is dropped and the object annotated
//! `endpoints.kubernetes.io/over-capacity: truncated`. The Endpoints of a Service that
//! went away are deleted (those this controller wrote).

use std::collections::{BTreeMap, HashSet};

use serde_json::{Map, Value, json};

use super::controller_utils::meta;
use super::endpoint_util::{
    PodsByNamespace, endpoint_port, hostname, is_headless, publishes_not_ready, selected_pods,
    should_be_in_endpoints, target_ref, written_by_controller_manager,
};
use super::writer::{ENDPOINTS, Writer};

/// The most addresses one Endpoints object holds (`maxCapacity`).
const MAX_CAPACITY: usize = 1000;

const OVER_CAPACITY: &str = "endpoints.kubernetes.io/over-capacity";
pub(super) const HEADLESS_LABEL: &str = "service.kubernetes.io/headless";

/// One pass over every Service and Endpoints object.
pub(super) fn sync(
    writer: &Writer<'_>,
    services: &[&Value],
    pods: &PodsByNamespace<'_>,
    endpoints: &[&Value],
) {
    let existing: BTreeMap<(&str, &str), &Value> = endpoints
        .iter()
        .map(|e| ((meta(e, "namespace"), meta(e, "name")), *e))
        .collect();
    let mut services_present = HashSet::new();
    for service in services {
        let key = (meta(service, "namespace"), meta(service, "name"));
        services_present.insert(key);
        let Some(selected) = selected_pods(service, pods) else {
            continue;
        };
        let (subsets, truncated) = subsets(service, &selected);
        let labels = labels(service);
        match existing.get(&key) {
            None => {
                let mut metadata = json!({"name": key.1, "namespace": key.0, "labels": labels});
                if truncated {
                    metadata["annotations"] = json!({OVER_CAPACITY: "truncated"});
                }
                let object = json!({
                    "apiVersion": "v1", "kind": "Endpoints",
                    "metadata": metadata, "subsets": subsets,
                });
                writer.create(ENDPOINTS, Some(key.0), object);
            }
            Some(current) => {
                let marked = current
                    .pointer("/metadata/annotations")
                    .and_then(|a| a.get(OVER_CAPACITY))
                    .is_some();
                let same = same_or_empty(current.get("subsets"), &subsets)
                    && same_or_empty(current.pointer("/metadata/labels"), &labels)
                    && marked == truncated;
                if same {
                    continue;
                }
                writer.update(
                    ENDPOINTS,
                    Some(key.0),
                    key.1,
                    meta(current, "uid"),
                    false,
                    |object| {
                        object.insert("subsets".to_owned(), subsets.clone());
                        let metadata = object
                            .entry("metadata")
                            .or_insert_with(|| Value::Object(Map::new()));
                        if let Value::Object(metadata) = metadata {
                            metadata.insert("labels".to_owned(), labels.clone());
                            let annotations = metadata
                                .entry("annotations")
                                .or_insert_with(|| Value::Object(Map::new()));
                            if let Value::Object(annotations) = annotations {
                                if truncated {
                                    annotations
                                        .insert(OVER_CAPACITY.to_owned(), json!("truncated"));
                                } else {
                                    annotations.remove(OVER_CAPACITY);
                                }
                            }
                        }
                        true
                    },
                );
            }
        }
    }
    for (key, current) in &existing {
        if !services_present.contains(key) && written_by_controller_manager(current) {
            writer.delete(ENDPOINTS, Some(key.0), key.1, meta(current, "uid"), None);
        }
    }
}

/// The Service's labels, and the headless label for a headless one.
fn labels(service: &Value) -> Value {
    let mut labels = service
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    if is_headless(service) {
        labels.insert(HEADLESS_LABEL.to_owned(), json!(""));
    } else {
        labels.remove(HEADLESS_LABEL);
    }
    Value::Object(labels)
}

/// One subset being packed: its ports, and the addresses having exactly those.
struct Subset {
    ports: Vec<Value>,
    ready: Vec<Value>,
    not_ready: Vec<Value>,
}

/// The subsets of `service` over the Pods it selects, and whether addresses were
/// dropped past [`MAX_CAPACITY`].
fn subsets(service: &Value, pods: &[&Value]) -> (Value, bool) {
    let tolerate_unready = publishes_not_ready(service);
    let service_ports: Vec<&Value> = service
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .map(|ports| ports.iter().collect())
        .unwrap_or_default();
    // By the key of their (sorted) ports.
    let mut packed: BTreeMap<String, Subset> = BTreeMap::new();
    for pod in pods {
        if !should_be_in_endpoints(pod, tolerate_unready) {
            continue;
        }
        let mut ports: Vec<Value> = service_ports
            .iter()
            .filter_map(|port| endpoint_port(pod, port))
            .collect();
        if ports.is_empty() && !(service_ports.is_empty() && is_headless(service)) {
            continue;
        }
        ports.sort_by_key(port_key);
        let mut address = json!({
            "ip": pod.pointer("/status/podIP").and_then(Value::as_str).unwrap_or(""),
            "targetRef": target_ref(pod),
        });
        if let Some(node) = pod
            .pointer("/spec/nodeName")
            .filter(|n| n.as_str().is_some_and(|n| !n.is_empty()))
        {
            address["nodeName"] = node.clone();
        }
        if let Some(hostname) = hostname(pod, service) {
            address["hostname"] = json!(hostname);
        }
        let key = ports.iter().map(port_key).collect::<Vec<_>>().join(",");
        let entry = packed.entry(key).or_insert_with(|| Subset {
            ports,
            ready: Vec::new(),
            not_ready: Vec::new(),
        });
        if tolerate_unready || super::controller_utils::is_ready(pod) {
            entry.ready.push(address);
        } else {
            entry.not_ready.push(address);
        }
    }
    let mut room = MAX_CAPACITY;
    let mut truncated = false;
    let mut subsets = Vec::new();
    for Subset {
        ports,
        mut ready,
        mut not_ready,
    } in packed.into_values()
    {
        for addresses in [&mut ready, &mut not_ready] {
            addresses.sort_by(|a, b| a["ip"].as_str().cmp(&b["ip"].as_str()));
            if addresses.len() > room {
                addresses.truncate(room);
                truncated = true;
            }
            room -= addresses.len();
        }
        if ready.is_empty() && not_ready.is_empty() {
            continue;
        }
        let mut subset = Map::new();
        if !ready.is_empty() {
            subset.insert("addresses".to_owned(), Value::Array(ready));
        }
        if !not_ready.is_empty() {
            subset.insert("notReadyAddresses".to_owned(), Value::Array(not_ready));
        }
        if !ports.is_empty() {
            subset.insert("ports".to_owned(), Value::Array(ports));
        }
        subsets.push(Value::Object(subset));
    }
    (Value::Array(subsets), truncated)
}

/// Whether a stored field holds `wanted`, an absent or null field counting as empty.
pub(super) fn same_or_empty(stored: Option<&Value>, wanted: &Value) -> bool {
    let empty = |value: &Value| match value {
        Value::Null => true,
        Value::Array(items) => items.is_empty(),
        Value::Object(map) => map.is_empty(),
        _ => false,
    };
    match stored {
        Some(value) if !value.is_null() => value == wanted || (empty(value) && empty(wanted)),
        _ => empty(wanted),
    }
}

/// The order of an endpoint port: by name, then number, then protocol.
pub(super) fn port_key(port: &Value) -> String {
    format!(
        "{}/{}/{}",
        port["name"].as_str().unwrap_or(""),
        port["port"].as_i64().unwrap_or(0),
        port["protocol"].as_str().unwrap_or("")
    )
}
