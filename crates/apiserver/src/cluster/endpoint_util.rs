//! What the Endpoints and EndpointSlice controllers share (`k8s.io/endpointslice/util`
//! and `pkg/api/v1/pod`'s `FindPort`): which Pods a Service selects, which of them belong
//! in its endpoints, the container port a Service port targets, and how an endpoint
//! refers to its Pod.

use std::collections::{HashMap, HashSet};

use serde_json::{Value, json};

use super::controller_utils::meta;

/// The Pods of every namespace, by namespace (the controllers' lister index).
pub(super) type PodsByNamespace<'a> = HashMap<&'a str, Vec<&'a Value>>;

/// `pods` grouped by namespace.
pub(super) fn by_namespace<'a>(pods: &[&'a Value]) -> PodsByNamespace<'a> {
    let mut grouped: PodsByNamespace<'a> = HashMap::new();
    for pod in pods {
        grouped.entry(meta(pod, "namespace")).or_default().push(pod);
    }
    grouped
}

/// The namespaces of the Services that select Pods (have a non-empty selector).
pub(super) fn selecting_namespaces<'a>(services: &[&'a Value]) -> HashSet<&'a str> {
    services
        .iter()
        .filter(|service| selector(service).is_some())
        .map(|service| meta(service, "namespace"))
        .collect()
}

fn selector(service: &Value) -> Option<&serde_json::Map<String, Value>> {
    service
        .pointer("/spec/selector")
        .and_then(Value::as_object)
        .filter(|s| !s.is_empty())
}

/// The Pods of `service`'s namespace its `spec.selector` picks; `None` when it has no
/// selector (its endpoints are someone else's to write). An empty selector is none, as
/// it is once stored upstream.
pub(super) fn selected_pods<'a>(
    service: &Value,
    pods: &PodsByNamespace<'a>,
) -> Option<Vec<&'a Value>> {
    let selector = selector(service)?;
    let candidates = pods
        .get(meta(service, "namespace"))
        .map(Vec::as_slice)
        .unwrap_or_default();
    Some(
        candidates
            .iter()
            .copied()
            .filter(|pod| {
                let labels = pod.pointer("/metadata/labels");
                selector
                    .iter()
                    .all(|(key, value)| labels.and_then(|l| l.get(key)) == Some(value))
            })
            .collect(),
    )
}

/// Whether `pod` belongs in a Service's endpoints (`ShouldPodBeInEndpoints`): it has an
/// address, has not finished, and is not being deleted unless `include_terminating`.
pub(super) fn should_be_in_endpoints(pod: &Value, include_terminating: bool) -> bool {
    let has_ip = pod
        .pointer("/status/podIP")
        .and_then(Value::as_str)
        .is_some_and(|ip| !ip.is_empty());
    let finished = matches!(
        pod.pointer("/status/phase").and_then(Value::as_str),
        Some("Succeeded" | "Failed")
    );
    let terminating = pod.pointer("/metadata/deletionTimestamp").is_some();
    has_ip && !finished && (include_terminating || !terminating)
}

/// Whether the Service publishes Pods that are not ready (`publishNotReadyAddresses`).
pub(super) fn publishes_not_ready(service: &Value) -> bool {
    service
        .pointer("/spec/publishNotReadyAddresses")
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

/// Whether the Service is headless (`clusterIP: None`).
pub(super) fn is_headless(service: &Value) -> bool {
    service.pointer("/spec/clusterIP").and_then(Value::as_str) == Some("None")
}

/// The container port `service_port`'s `targetPort` names in `pod` (`FindPort`): a
/// number as it is; a name looked up among the containers' ports of the same protocol
/// (`None` when no container has it).
pub(super) fn find_port(pod: &Value, service_port: &Value) -> Option<i64> {
    let protocol = protocol(service_port);
    match service_port.get("targetPort") {
        Some(Value::Number(number)) => number.as_i64(),
        Some(Value::String(name)) => pod
            .pointer("/spec/containers")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|c| c["ports"].as_array())
            .flatten()
            .find(|port| port["name"].as_str() == Some(name) && self::protocol(port) == protocol)
            .and_then(|port| port["containerPort"].as_i64()),
        // Defaulted to `port` on create; an object written before that still means it.
        _ => service_port["port"].as_i64(),
    }
}

/// A port's protocol (`TCP` unless set).
pub(super) fn protocol(port: &Value) -> &str {
    port["protocol"].as_str().unwrap_or("TCP")
}

/// The endpoint port a Service port makes for a Pod: name, the Pod's port number,
/// protocol and application protocol; `None` when the Pod lacks the target port.
pub(super) fn endpoint_port(pod: &Value, service_port: &Value) -> Option<Value> {
    let number = find_port(pod, service_port)?;
    let mut port = json!({
        "name": service_port["name"].as_str().unwrap_or(""),
        "port": number,
        "protocol": protocol(service_port),
    });
    if let Some(app) = service_port.get("appProtocol").filter(|a| a.is_string()) {
        port["appProtocol"] = app.clone();
    }
    Some(port)
}

/// How an endpoint refers to its Pod.
pub(super) fn target_ref(pod: &Value) -> Value {
    json!({
        "kind": "Pod", "namespace": meta(pod, "namespace"),
        "name": meta(pod, "name"), "uid": meta(pod, "uid"),
    })
}

/// The Pod's DNS hostname under the Service: its `spec.hostname` when its `subdomain`
/// is the Service's name.
pub(super) fn hostname<'a>(pod: &'a Value, service: &Value) -> Option<&'a str> {
    let hostname = pod.pointer("/spec/hostname").and_then(Value::as_str)?;
    let subdomain = pod.pointer("/spec/subdomain").and_then(Value::as_str)?;
    (!hostname.is_empty() && subdomain == meta(service, "name")).then_some(hostname)
}

/// Whether `object` was last written by the controller manager (its managed fields
/// name it), so a controller removes only what it made.
pub(super) fn written_by_controller_manager(object: &Value) -> bool {
    object
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .is_some_and(|fields| {
            fields
                .iter()
                .any(|f| f["manager"] == "kube-controller-manager")
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_ports_resolve_by_number_or_name_and_protocol() {
        let pod = json!({"spec": {"containers": [
            {"name": "a", "ports": [{"name": "http", "containerPort": 8080}]},
            {"name": "b", "ports": [{"name": "dns", "containerPort": 53, "protocol": "UDP"}]},
        ]}});
        assert_eq!(
            find_port(&pod, &json!({"port": 80, "targetPort": 9000})),
            Some(9000)
        );
        assert_eq!(
            find_port(&pod, &json!({"port": 80, "targetPort": "http"})),
            Some(8080)
        );
        assert_eq!(
            find_port(&pod, &json!({"port": 53, "targetPort": "dns"})),
            None
        );
        assert_eq!(
            find_port(
                &pod,
                &json!({"port": 53, "protocol": "UDP", "targetPort": "dns"})
            ),
            Some(53)
        );
        assert_eq!(find_port(&pod, &json!({"port": 81})), Some(81));
    }

    #[test]
    fn only_addressed_unfinished_pods_belong_and_terminating_ones_when_asked() {
        let running = json!({"status": {"phase": "Running", "podIP": "10.244.1.2"}});
        let pending = json!({"status": {"phase": "Pending"}});
        let done = json!({"status": {"phase": "Succeeded", "podIP": "10.244.1.3"}});
        let leaving = json!({"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"}, "status": {"phase": "Running", "podIP": "10.244.1.4"}});
        assert!(should_be_in_endpoints(&running, false));
        assert!(!should_be_in_endpoints(&pending, true));
        assert!(!should_be_in_endpoints(&done, true));
        assert!(!should_be_in_endpoints(&leaving, false));
        assert!(should_be_in_endpoints(&leaving, true));
    }
}
