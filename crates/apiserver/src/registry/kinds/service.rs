//! Services (kube-apiserver's `pkg/registry/core/service`): defaults (type, session
//! affinity, ports and target ports, IP families, traffic policies), ClusterIP and NodePort
//! allocation (`allocators.rs`) kept across updates, unique port names, an immutable
//! ClusterIP, and the allocated fields that belong to no field manager.

use std::collections::HashSet;

use kubeclient_machinery::StatusCause;
use serde_json::{Map, Value, json};

use crate::registry::allocators::{allocate_cluster_ip, allocate_node_port, used_node_ports};
use crate::registry::defaults::{child, child_or_insert, set};
use crate::registry::printers::{self, Column};
use crate::registry::strategy::{Strategy, StrategyContext};
use crate::storage::Store;

/// The Service strategy.
pub(crate) struct ServiceStrategy;

impl Strategy for ServiceStrategy {
    fn table_columns(&self) -> Option<&'static [Column]> {
        Some(printers::service::SERVICE)
    }

    fn prepare_for_create(&self, context: StrategyContext<'_>, object: &mut Map<String, Value>) {
        defaults(context.store, object, None);
    }

    fn prepare_for_update(
        &self,
        context: StrategyContext<'_>,
        object: &mut Map<String, Value>,
        current: &Value,
    ) {
        defaults(context.store, object, Some(current));
    }

    fn return_deleted_object(&self) -> bool {
        true
    }

    fn validate(&self, object: &Value, _: Option<&Value>, causes: &mut Vec<StatusCause>) {
        let mut seen = HashSet::new();
        let ports = object
            .pointer("/spec/ports")
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice);
        for (index, port) in ports.iter().enumerate() {
            let name = port.get("name").and_then(Value::as_str).unwrap_or("");
            if !name.is_empty() && !seen.insert(name) {
                causes.push(StatusCause::new(
                    "FieldValueDuplicate",
                    &format!("Duplicate value: {name:?}"),
                    &format!("spec.ports[{index}].name"),
                ));
            }
        }
    }

    fn immutable_causes(&self, current: &Value, desired: &Value, causes: &mut Vec<StatusCause>) {
        let before = current
            .pointer("/spec/clusterIP")
            .and_then(Value::as_str)
            .unwrap_or("");
        let after = desired
            .pointer("/spec/clusterIP")
            .and_then(Value::as_str)
            .unwrap_or("");
        if before.is_empty() || after.is_empty() || before == after {
            return;
        }
        let ips: Vec<String> = desired
            .pointer("/spec/clusterIPs")
            .and_then(Value::as_array)
            .map(|ips| {
                ips.iter()
                    .filter_map(Value::as_str)
                    .map(|ip| format!("{ip:?}"))
                    .collect()
            })
            .unwrap_or_else(|| vec![format!("{after:?}")]);
        causes.push(StatusCause::new(
            "FieldValueInvalid",
            &format!(
                "Invalid value: []string{{{}}}: may not change once set",
                ips.join(", ")
            ),
            "spec.clusterIPs[0]",
        ));
    }

    fn allocates(&self) -> bool {
        true
    }

    fn without_allocated(&self, requested: &Map<String, Value>, object: &Value) -> Value {
        let mut owned = object.clone();
        let requested_spec = requested.get("spec");
        let requested_has = |field: &str| {
            requested_spec
                .and_then(|spec| spec.get(field))
                .is_some_and(|value| !value.is_null() && value != "")
        };
        let Some(spec) = owned.get_mut("spec").and_then(Value::as_object_mut) else {
            return owned;
        };
        for field in [
            "clusterIP",
            "clusterIPs",
            "ipFamilies",
            "ipFamilyPolicy",
            "healthCheckNodePort",
        ] {
            if !requested_has(field) {
                spec.remove(field);
            }
        }
        let requested_ports = requested_spec
            .and_then(|spec| spec.get("ports"))
            .and_then(Value::as_array);
        if let Some(Value::Array(ports)) = spec.get_mut("ports") {
            for (index, port) in ports.iter_mut().enumerate() {
                let requested_node_port = requested_ports
                    .and_then(|ports| ports.get(index))
                    .and_then(|port| port.get("nodePort"))
                    .and_then(Value::as_i64)
                    .is_some_and(|node_port| node_port != 0);
                if !requested_node_port && let Some(port) = port.as_object_mut() {
                    port.remove("nodePort");
                }
            }
        }
        owned
    }
}

/// A Service's defaults; its ClusterIP and NodePorts are allocated on create and kept on
/// update.
fn defaults(store: &Store, object: &mut Map<String, Value>, current: Option<&Value>) {
    let Some(spec) = child(object, "spec") else {
        return;
    };
    set(spec, "type", json!("ClusterIP"));
    let service_type = spec
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("ClusterIP")
        .to_owned();
    if service_type == "ExternalName" {
        set(spec, "sessionAffinity", json!("None"));
        return;
    }
    set(spec, "sessionAffinity", json!("None"));
    if let Some(Value::Array(ports)) = spec.get_mut("ports") {
        for port in ports.iter_mut().filter_map(Value::as_object_mut) {
            set(port, "protocol", json!("TCP"));
            let number = port.get("port").cloned().unwrap_or(Value::Null);
            set(port, "targetPort", number);
        }
    }
    // An update keeps what was allocated (the strategy's patchAllocatedValues).
    let old_spec = current.and_then(|c| c.get("spec"));
    if let Some(old) = old_spec {
        for field in ["clusterIP", "clusterIPs"] {
            if let Some(value) = old.get(field) {
                set(spec, field, value.clone());
            }
        }
    }
    let external = service_type == "NodePort" || service_type == "LoadBalancer";
    if external {
        set(spec, "externalTrafficPolicy", json!("Cluster"));
        if service_type == "LoadBalancer" {
            set(spec, "allocateLoadBalancerNodePorts", json!(true));
        }
        let old_ports: Vec<Value> = old_spec
            .and_then(|s| s.get("ports"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let mut used = used_node_ports(store);
        if let Some(Value::Array(ports)) = spec.get_mut("ports") {
            for port in ports.iter_mut().filter_map(Value::as_object_mut) {
                if port
                    .get("nodePort")
                    .and_then(Value::as_i64)
                    .is_some_and(|p| p != 0)
                {
                    continue;
                }
                let kept = old_ports.iter().find_map(|old| {
                    (old.get("port") == port.get("port")
                        && old.get("protocol") == port.get("protocol"))
                    .then(|| old.get("nodePort").cloned())
                    .flatten()
                });
                let node_port = kept.or_else(|| allocate_node_port(&mut used).map(|p| json!(p)));
                if let Some(node_port) = node_port {
                    port.insert("nodePort".to_owned(), node_port);
                }
            }
        }
    }
    if spec
        .get("clusterIP")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
        && let Some(ip) = allocate_cluster_ip(store)
    {
        spec.insert("clusterIP".to_owned(), json!(ip));
    }
    let cluster_ip = spec.get("clusterIP").cloned().unwrap_or(Value::Null);
    set(spec, "clusterIPs", json!([cluster_ip]));
    set(spec, "ipFamilies", json!(["IPv4"]));
    set(spec, "ipFamilyPolicy", json!("SingleStack"));
    set(spec, "internalTrafficPolicy", json!("Cluster"));
    set(child_or_insert(object, "status"), "loadBalancer", json!({}));
}
