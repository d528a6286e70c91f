//! [`StandIn`]: what answers a forwarded port of a Pod that a simulated kubelet runs when
//! no `port-forward.kubeclient.dev/<port>` annotation names a host address for it.
//!
//! A simulated container runs no real process, so nothing of its own listens. Clients
//! still expect a running Pod's server to answer (the Python client's e2e suite forwards
//! to an `nginx` Pod and reads its welcome page, and to a Pod whose server echoes what it
//! gets), so the server stands in, inside the process (nothing on the host is dialled),
//! on the ports a container of the Pod says it listens on: its declared `ports`, the ports
//! of its probes, port 80 for an `nginx` image, and the port numbers on the command line
//! of a command the simulation does not run itself (`python server.py 1234 1235`):
//!
//! - port 80 of an `nginx` container answers HTTP/1.1 as a fresh nginx does: its welcome
//!   page at `/`, its 404 page elsewhere;
//! - the others echo the bytes they receive, until the client half-closes.
//!
//! Other ports report that nothing listens, as a real Pod's do. A Pod no kubelet runs (no
//! running container: the API server alone, `--nodes 0`) has no stand-ins.

use serde_json::Value;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _, DuplexStream};

/// The buffer between a forwarded connection and its stand-in.
const PIPE_BUFFER: usize = 64 * 1024;
/// The longest request head the nginx stand-in reads (nginx's default buffers are 8 KiB).
const MAX_REQUEST_HEAD: usize = 16 * 1024;
/// The largest request body the nginx stand-in reads past.
const MAX_REQUEST_BODY: u64 = 1024 * 1024;

const NGINX_WELCOME: &str = "<!DOCTYPE html>\n<html>\n<head>\n<title>Welcome to nginx!</title>\n<style>\nhtml { color-scheme: light dark; }\nbody { width: 35em; margin: 0 auto;\nfont-family: Tahoma, Verdana, Arial, sans-serif; }\n</style>\n</head>\n<body>\n<h1>Welcome to nginx!</h1>\n<p>If you see this page, the nginx web server is successfully installed and\nworking. Further configuration is required.</p>\n\n<p>For online documentation and support please refer to\n<a href=\"http://nginx.org/\">nginx.org</a>.<br/>\nCommercial support is available at\n<a href=\"http://nginx.com/\">nginx.com</a>.</p>\n\n<p><em>Thank you for using nginx.</em></p>\n</body>\n</html>\n";
const NGINX_NOT_FOUND: &str = "<html>\r\n<head><title>404 Not Found</title></head>\r\n<body>\r\n<center><h1>404 Not Found</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n";
const NGINX_BAD_REQUEST: &str = "<html>\r\n<head><title>400 Bad Request</title></head>\r\n<body>\r\n<center><h1>400 Bad Request</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n";

/// What stands in for a simulated Pod's server on one port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StandIn {
    /// nginx's default site.
    Nginx,
    /// Sends back what it receives.
    Echo,
}

impl StandIn {
    /// The stand-in for `port` of `pod`, if a kubelet runs the Pod (a container of it is
    /// running).
    ///
    /// ```text
    /// image nginx:1.27, port 80  -> Some(Nginx)
    /// image python, port 1234    -> Some(Echo)
    /// no running container       -> None
    /// ```
    pub(crate) fn for_pod(pod: &Value, port: u16) -> Option<StandIn> {
        let running = pod
            .pointer("/status/containerStatuses")
            .and_then(Value::as_array)
            .is_some_and(|statuses| {
                statuses
                    .iter()
                    .any(|status| status.pointer("/state/running").is_some())
            });
        if !running {
            return None;
        }
        let containers = pod.pointer("/spec/containers").and_then(Value::as_array)?;
        containers.iter().find_map(|container| {
            let nginx = container["image"]
                .as_str()
                .is_some_and(|image| image_name(image).starts_with("nginx"));
            if nginx && port == 80 {
                Some(StandIn::Nginx)
            } else {
                listens_on(container, port).then_some(StandIn::Echo)
            }
        })
    }

    /// A connection to a new instance of the stand-in (served on its own task until
    /// either side closes).
    pub(crate) fn connect(self) -> DuplexStream {
        let (client, server) = tokio::io::duplex(PIPE_BUFFER);
        match self {
            StandIn::Echo => tokio::spawn(echo(server)),
            StandIn::Nginx => tokio::spawn(nginx(server)),
        };
        client
    }
}

/// Whether the simulated `container` listens on `port`: a declared port, a probe's port,
/// or a port number on the command line of a command that is not built in.
fn listens_on(container: &Value, port: u16) -> bool {
    let is_port = |value: &Value| value.as_u64() == Some(u64::from(port));
    let declared = container["ports"]
        .as_array()
        .is_some_and(|ports| ports.iter().any(|p| is_port(&p["containerPort"])));
    let named = |name: &str| {
        container["ports"].as_array().is_some_and(|ports| {
            ports
                .iter()
                .any(|p| p["name"] == name && is_port(&p["containerPort"]))
        })
    };
    let probed = ["readinessProbe", "livenessProbe", "startupProbe"]
        .iter()
        .any(|probe| {
            ["tcpSocket", "httpGet", "grpc"].iter().any(|action| {
                let target = &container[probe][action]["port"];
                is_port(target) || target.as_str().is_some_and(named)
            })
        });
    let argv: Vec<&str> = ["command", "args"]
        .iter()
        .filter_map(|field| container[field].as_array())
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let on_command_line = argv.first().is_some_and(|program| {
        !super::builtin_commands::is_builtin(program)
            && argv[1..].iter().any(|arg| arg.parse::<u16>() == Ok(port))
    });
    declared || probed || on_command_line
}

/// The repository's last path segment: `docker.io/library/nginx:1.27@sha256:..` is
/// `nginx`.
fn image_name(image: &str) -> &str {
    let without_digest = image.split('@').next().unwrap_or(image);
    let last = without_digest.rsplit('/').next().unwrap_or(without_digest);
    last.split(':').next().unwrap_or(last)
}

async fn echo(mut connection: DuplexStream) {
    let mut buffer = vec![0u8; PIPE_BUFFER];
    loop {
        match connection.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if connection.write_all(&buffer[..n]).await.is_err() {
                    return;
                }
            }
        }
    }
    let _ = connection.shutdown().await;
}

/// One request's head, as much as the stand-in needs of it.
#[derive(Debug, PartialEq)]
struct RequestHead {
    method: String,
    path: String,
    keep_alive: bool,
    content_length: u64,
}

/// Parses a request head (without its blank line); `None` when it is not HTTP/1.x.
fn parse_head(head: &str) -> Option<RequestHead> {
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next()?.split(' ');
    let (method, path, version) = (
        request_line.next()?,
        request_line.next()?,
        request_line.next()?,
    );
    if request_line.next().is_some() || !version.starts_with("HTTP/1.") || method.is_empty() {
        return None;
    }
    let mut keep_alive = version != "HTTP/1.0";
    let mut content_length = 0;
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("connection") {
            if value.eq_ignore_ascii_case("close") {
                keep_alive = false;
            } else if value.eq_ignore_ascii_case("keep-alive") {
                keep_alive = true;
            }
        } else if name.eq_ignore_ascii_case("content-length") {
            content_length = value.parse().ok()?;
        }
    }
    Some(RequestHead {
        method: method.to_owned(),
        path: path.to_owned(),
        keep_alive,
        content_length,
    })
}

/// Serves HTTP/1.1 requests as nginx's default site until the client closes or asks to.
async fn nginx(mut connection: DuplexStream) {
    let mut pending: Vec<u8> = Vec::new();
    let mut buffer = vec![0u8; 8 * 1024];
    loop {
        let head_end = loop {
            if let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
                break Some(end);
            }
            if pending.len() > MAX_REQUEST_HEAD {
                break None;
            }
            match connection.read(&mut buffer).await {
                Ok(0) | Err(_) => return,
                Ok(n) => pending.extend_from_slice(&buffer[..n]),
            }
        };
        let head = head_end
            .and_then(|end| std::str::from_utf8(&pending[..end]).ok())
            .and_then(parse_head);
        let Some(head) = head.filter(|head| head.content_length <= MAX_REQUEST_BODY) else {
            let _ = respond(
                &mut connection,
                "400 Bad Request",
                NGINX_BAD_REQUEST,
                false,
                true,
            )
            .await;
            return;
        };
        let consumed = head_end.unwrap_or(0) + 4;
        pending.drain(..consumed.min(pending.len()));
        // Reads past the body (the default site ignores it).
        let mut body_left = head.content_length;
        while body_left > 0 {
            if pending.is_empty() {
                match connection.read(&mut buffer).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => pending.extend_from_slice(&buffer[..n]),
                }
            }
            let take = usize::try_from(body_left)
                .unwrap_or(usize::MAX)
                .min(pending.len());
            pending.drain(..take);
            body_left -= take as u64;
        }
        let (status, page) = match head.path.split('?').next().unwrap_or("") {
            "/" | "/index.html" => ("200 OK", NGINX_WELCOME),
            _ => ("404 Not Found", NGINX_NOT_FOUND),
        };
        let with_body = head.method != "HEAD";
        if respond(&mut connection, status, page, head.keep_alive, with_body)
            .await
            .is_err()
            || !head.keep_alive
        {
            let _ = connection.shutdown().await;
            return;
        }
    }
}

async fn respond(
    connection: &mut DuplexStream,
    status: &str,
    page: &str,
    keep_alive: bool,
    with_body: bool,
) -> std::io::Result<()> {
    let date = jiff::Timestamp::now().strftime("%a, %d %b %Y %H:%M:%S GMT");
    let connection_header = if keep_alive { "keep-alive" } else { "close" };
    let mut answer = format!(
        "HTTP/1.1 {status}\r\nServer: nginx\r\nDate: {date}\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: {connection_header}\r\n\r\n",
        page.len()
    );
    if with_body {
        answer.push_str(page);
    }
    connection.write_all(answer.as_bytes()).await
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn stand_ins_serve_the_ports_a_running_container_listens_on() {
        let running = json!({"running": {"startedAt": "2026-12-05T00:00:00Z"}});
        let pod = |container: Value, state: Value| {
            json!({"spec": {"containers": [container]},
                   "status": {"containerStatuses": [{"name": "c", "state": state}]}})
        };
        let nginx = pod(
            json!({"name": "c", "image": "docker.io/library/nginx:1.27"}),
            running.clone(),
        );
        assert_eq!(StandIn::for_pod(&nginx, 80), Some(StandIn::Nginx));
        assert_eq!(StandIn::for_pod(&nginx, 8080), None);
        let server = pod(
            json!({"name": "c", "image": "python",
                   "command": ["python", "-u", "/opt/server.py", "1234"], "args": ["1235"],
                   "ports": [{"name": "metrics", "containerPort": 9090}],
                   "readinessProbe": {"tcpSocket": {"port": 7000}},
                   "livenessProbe": {"httpGet": {"port": "metrics"}}}),
            running.clone(),
        );
        for port in [1234, 1235, 9090, 7000] {
            assert_eq!(
                StandIn::for_pod(&server, port),
                Some(StandIn::Echo),
                "{port}"
            );
        }
        assert_eq!(StandIn::for_pod(&server, 80), None);
        assert_eq!(StandIn::for_pod(&server, 1236), None);
        let builtin = pod(
            json!({"name": "c", "image": "busybox", "command": ["sleep", "3600"]}),
            running,
        );
        assert_eq!(
            StandIn::for_pod(&builtin, 3600),
            None,
            "a built-in's arguments are not ports"
        );
        let waiting = pod(
            json!({"name": "c", "image": "nginx"}),
            json!({"waiting": {"reason": "ContainerCreating"}}),
        );
        assert_eq!(StandIn::for_pod(&waiting, 80), None);
        assert_eq!(StandIn::for_pod(&json!({}), 80), None);
    }

    #[test]
    fn request_heads_parse_or_are_refused() {
        let head = parse_head("GET /x?y HTTP/1.1\r\nHost: a\r\nConnection: close").expect("a head");
        assert_eq!(head.path, "/x?y");
        assert!(!head.keep_alive);
        let old = parse_head("HEAD / HTTP/1.0\r\nContent-Length: 3").expect("a head");
        assert!(!old.keep_alive && old.content_length == 3 && old.method == "HEAD");
        for bad in [
            "",
            "GET /",
            "GET / SPDY/3",
            "GET / HTTP/1.1 extra",
            "GET / HTTP/1.1\r\nContent-Length: -1",
        ] {
            assert_eq!(parse_head(bad), None, "{bad:?}");
        }
    }

    #[tokio::test]
    async fn nginx_answers_its_welcome_page_and_keeps_the_connection() {
        let mut connection = StandIn::Nginx.connect();
        connection
            .write_all(b"GET / HTTP/1.1\r\nHost: web\r\n\r\nGET /missing HTTP/1.1\r\nConnection: close\r\n\r\n")
            .await
            .expect("send");
        let mut answer = String::new();
        connection.read_to_string(&mut answer).await.expect("read");
        assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer}");
        assert!(answer.contains("<h1>Welcome to nginx!</h1>"), "{answer}");
        assert!(answer.contains("HTTP/1.1 404 Not Found\r\n"), "{answer}");
    }

    #[tokio::test]
    async fn echo_sends_back_what_it_gets_until_the_client_half_closes() {
        let mut connection = StandIn::Echo.connect();
        connection.write_all(b"ping").await.expect("send");
        connection.shutdown().await.expect("half-close");
        let mut answer = Vec::new();
        connection.read_to_end(&mut answer).await.expect("read");
        assert_eq!(answer, b"ping");
    }
}
