//! What a probe or a lifecycle hook does (`exec`, `httpGet`, `tcpSocket`, `grpc`,
//! `sleep`), and how a network action fares in the simulation, where nothing listens.
//!
//! A network action succeeds unless its port is closed: the Pod's annotation
//! [`CLOSED_PORTS_ANNOTATION`] lists ports (numbers, or names of the Pod's container
//! ports) where nothing answers, so a test can make an HTTP or TCP probe fail and, by
//! removing the port again, pass. A named port the container does not declare is an
//! error, as kubelet's `ResolveContainerPort` makes it.

use std::time::Duration;

use serde_json::Value;

/// The Pod annotation listing ports nothing listens on (`"8080,metrics"`): HTTP GET, TCP
/// socket and gRPC probes and hooks aimed at them fail with "connection refused".
pub const CLOSED_PORTS_ANNOTATION: &str = "kubeclient.dev/closed-ports";

/// A probe's or hook's action.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Action {
    /// `exec.command`.
    Exec(Vec<String>),
    /// `httpGet`: the URL's parts.
    HttpGet {
        scheme: String,
        host: String,
        port: Value,
        path: String,
    },
    /// `tcpSocket`.
    TcpSocket { host: String, port: Value },
    /// `grpc`.
    Grpc { port: Value },
    /// `sleep.seconds` (hooks only).
    Sleep(Duration),
}

impl Action {
    /// The action of a probe or handler object (`None`: it names none).
    pub(super) fn parse(handler: &Value) -> Option<Action> {
        let text = |value: &Value, field: &str, default: &str| {
            value[field].as_str().unwrap_or(default).to_owned()
        };
        if let Some(exec) = handler.get("exec") {
            let argv = exec["command"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|a| a.as_str().map(str::to_owned))
                .collect();
            return Some(Action::Exec(argv));
        }
        if let Some(http) = handler.get("httpGet") {
            return Some(Action::HttpGet {
                scheme: text(http, "scheme", "HTTP").to_lowercase(),
                host: text(http, "host", ""),
                port: http["port"].clone(),
                path: text(http, "path", ""),
            });
        }
        if let Some(tcp) = handler.get("tcpSocket") {
            return Some(Action::TcpSocket {
                host: text(tcp, "host", ""),
                port: tcp["port"].clone(),
            });
        }
        if let Some(grpc) = handler.get("grpc") {
            return Some(Action::Grpc {
                port: grpc["port"].clone(),
            });
        }
        if let Some(sleep) = handler.get("sleep") {
            let seconds = sleep["seconds"].as_u64().unwrap_or(0).min(86_400);
            return Some(Action::Sleep(Duration::from_secs(seconds)));
        }
        None
    }
}

/// How a network action fared.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Reach {
    Answered,
    /// Nothing answered (kubelet's message).
    Refused(String),
    /// The action could not be made (a named port the container lacks).
    Error(String),
}

/// The container ports a container declares, `(name, number)`.
pub(super) fn container_ports(container: &Value) -> Vec<(String, i64)> {
    container["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| {
            let number = p["containerPort"].as_i64()?;
            Some((p["name"].as_str().unwrap_or("").to_owned(), number))
        })
        .collect()
}

/// The port number `port` (a number, a container port's name, or a number as a string)
/// stands for, as kubelet's `ResolveContainerPort`.
fn resolve_port(port: &Value, ports: &[(String, i64)]) -> Result<i64, String> {
    let number = match port {
        Value::Number(n) => n.as_i64().unwrap_or(-1),
        Value::String(name) => match ports.iter().find(|(n, _)| n == name) {
            Some((_, number)) => *number,
            None => name
                .parse::<i64>()
                .map_err(|_| format!("strconv.Atoi: parsing {name:?}: invalid syntax"))?,
        },
        _ => -1,
    };
    if (1..65536).contains(&number) {
        Ok(number)
    } else {
        Err(format!("invalid port number: {number}"))
    }
}

/// The ports the Pod's annotation closes, names resolved over every container's ports.
fn closed_ports(pod: &Value) -> Vec<i64> {
    let Some(list) = pod
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(CLOSED_PORTS_ANNOTATION))
        .and_then(Value::as_str)
    else {
        return Vec::new();
    };
    let all: Vec<(String, i64)> = pod
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .flat_map(container_ports)
        .collect();
    list.split(',')
        .map(str::trim)
        .filter(|entry| !entry.is_empty())
        .filter_map(|entry| resolve_port(&Value::String(entry.to_owned()), &all).ok())
        .collect()
}

/// Whether a network action of a container (its declared `ports`) in `pod` (at address
/// `pod_ip`) answers; `None` for an action that is not a network one.
pub(super) fn reach(
    action: &Action,
    pod: &Value,
    ports: &[(String, i64)],
    pod_ip: &str,
    timeout: Duration,
) -> Option<Reach> {
    let (port, host) = match action {
        Action::HttpGet { port, host, .. } | Action::TcpSocket { port, host } => (port, host),
        Action::Grpc { port } => (port, &String::new()),
        Action::Exec(_) | Action::Sleep(_) => return None,
    };
    let port = match resolve_port(port, ports) {
        Ok(port) => port,
        Err(message) => return Some(Reach::Error(message)),
    };
    if !closed_ports(pod).contains(&port) {
        return Some(Reach::Answered);
    }
    let host = if host.is_empty() { pod_ip } else { host };
    let dial = format!("dial tcp {host}:{port}: connect: connection refused");
    Some(Reach::Refused(match action {
        Action::HttpGet { scheme, path, .. } => {
            format!("Get \"{scheme}://{host}:{port}{path}\": {dial}")
        }
        Action::Grpc { .. } => format!(
            "timeout: failed to connect service \"{host}:{port}\" within {}s",
            timeout.as_secs()
        ),
        _ => dial,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn network_actions_answer_unless_their_port_is_closed_by_number_or_name() {
        let pod = json!({
            "metadata": {"annotations": {CLOSED_PORTS_ANNOTATION: "8080, metrics"}},
            "spec": {"containers": [{"name": "a", "ports": [{"name": "metrics", "containerPort": 9090}, {"name": "web", "containerPort": 80}]}]},
        });
        let ports = container_ports(&pod["spec"]["containers"][0]);
        let http = |port: Value| {
            Action::parse(&json!({"httpGet": {"port": port, "path": "/healthz"}})).unwrap()
        };
        let second = Duration::from_secs(1);
        assert_eq!(
            reach(&http(json!("web")), &pod, &ports, "10.0.0.2", second),
            Some(Reach::Answered)
        );
        assert_eq!(
            reach(&http(json!(8080)), &pod, &ports, "10.0.0.2", second),
            Some(Reach::Refused(
                "Get \"http://10.0.0.2:8080/healthz\": dial tcp 10.0.0.2:8080: connect: connection refused"
                    .to_owned()
            ))
        );
        let tcp = Action::parse(&json!({"tcpSocket": {"port": "metrics"}})).unwrap();
        assert!(matches!(
            reach(&tcp, &pod, &ports, "10.0.0.2", second),
            Some(Reach::Refused(m)) if m == "dial tcp 10.0.0.2:9090: connect: connection refused"
        ));
        assert_eq!(
            reach(&http(json!("nope")), &pod, &ports, "10.0.0.2", second),
            Some(Reach::Error(
                "strconv.Atoi: parsing \"nope\": invalid syntax".to_owned()
            ))
        );
        assert_eq!(
            reach(&http(json!(70000)), &pod, &ports, "10.0.0.2", second),
            Some(Reach::Error("invalid port number: 70000".to_owned()))
        );
        let exec = Action::parse(&json!({"exec": {"command": ["true"]}})).unwrap();
        assert_eq!(reach(&exec, &pod, &ports, "10.0.0.2", second), None);
    }
}
