//! The printers of Services (type, cluster and external IPs, ports) and Endpoints.

use super::*;

pub(crate) const SERVICE: &[Column] = &[
    col("Type", "string", |o| json!(service_type(o))),
    col("Cluster-IP", "string", |o| {
        or_none(text(o, "/spec/clusterIP"))
    }),
    col("External-IP", "string", service_external_ip),
    col("Port(s)", "string", service_ports),
    col("Age", "string", age),
    wide("Selector", "string", |o| {
        map_text(field(o, "/spec/selector"))
    }),
];

fn service_type(service: &Value) -> &str {
    match text(service, "/spec/type") {
        "" => "ClusterIP",
        other => other,
    }
}

pub(super) fn service_external_ip(service: &Value) -> Value {
    let external: Vec<&str> = items(service, "/spec/externalIPs")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    match service_type(service) {
        "LoadBalancer" => {
            let ingress: Vec<&str> = items(service, "/status/loadBalancer/ingress")
                .iter()
                .map(|i| {
                    let ip = text(i, "/ip");
                    if ip.is_empty() {
                        text(i, "/hostname")
                    } else {
                        ip
                    }
                })
                .filter(|s| !s.is_empty())
                .collect();
            let all: Vec<&str> = external.iter().copied().chain(ingress).collect();
            if all.is_empty() {
                json!("<pending>")
            } else {
                json!(all.join(","))
            }
        }
        "ExternalName" => json!(text(service, "/spec/externalName")),
        _ => or_none(&external.join(",")),
    }
}

fn service_ports(service: &Value) -> Value {
    let ports: Vec<String> = items(service, "/spec/ports")
        .iter()
        .map(|port| {
            let protocol = match text(port, "/protocol") {
                "" => "TCP",
                other => other,
            };
            match field(port, "/nodePort").as_i64() {
                Some(node_port) if node_port != 0 => {
                    format!("{}:{node_port}/{protocol}", int(port, "/port"))
                }
                _ => format!("{}/{protocol}", int(port, "/port")),
            }
        })
        .collect();
    or_none(&ports.join(","))
}

pub(crate) const ENDPOINTS: &[Column] = &[
    col("Endpoints", "string", endpoints_text),
    col("Age", "string", age),
];

fn endpoints_text(endpoints: &Value) -> Value {
    let mut all = Vec::new();
    for subset in items(endpoints, "/subsets") {
        let ports = items(subset, "/ports");
        for address in items(subset, "/addresses") {
            let ip = text(address, "/ip");
            if ports.is_empty() {
                all.push(ip.to_owned());
            }
            for port in ports {
                all.push(format!("{ip}:{}", int(port, "/port")));
            }
        }
    }
    let shown = all.iter().take(3).cloned().collect::<Vec<_>>().join(",");
    if all.len() > 3 {
        json!(format!("{shown} + {} more...", all.len() - 3))
    } else {
        or_none(&shown)
    }
}

/// `discovery.k8s.io` EndpointSlices (kube-apiserver's `printEndpointSlice`).
pub(crate) const ENDPOINT_SLICE: &[Column] = &[
    col("AddressType", "string", address_type),
    col("Ports", "string", slice_ports),
    col("Endpoints", "string", slice_endpoints),
    col("Age", "string", age),
];

/// The first three of `all`, then how many more; `<unset>` for none.
fn first_three(all: &[String]) -> Value {
    if all.is_empty() {
        return json!("<unset>");
    }
    let shown = all.iter().take(3).cloned().collect::<Vec<_>>().join(",");
    if all.len() > 3 {
        json!(format!("{shown} + {} more...", all.len() - 3))
    } else {
        json!(shown)
    }
}

fn address_type(slice: &Value) -> Value {
    json!(text(slice, "/addressType"))
}

fn slice_ports(slice: &Value) -> Value {
    let ports: Vec<String> = items(slice, "/ports")
        .iter()
        .map(|port| int(port, "/port").to_string())
        .collect();
    first_three(&ports)
}

fn slice_endpoints(slice: &Value) -> Value {
    let addresses: Vec<String> = items(slice, "/endpoints")
        .iter()
        .flat_map(|endpoint| items(endpoint, "/addresses"))
        .filter_map(|address| address.as_str().map(str::to_owned))
        .collect();
    first_three(&addresses)
}

// --- Cluster and configuration ------------------------------------------------------
