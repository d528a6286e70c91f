//! A kubelet's own HTTPS port (10250 on a node) for the simulated nodes, served on
//! loopback when asked (`ApiServerBuilder::kubelet_port`, `kubeclient serve
//! --kubelet-port`): the kubelet's debug paths that clients drive directly (kube-rs's
//! `kubelet-debug` feature, `kubectl get --raw` through the node proxy) are turned into
//! the API server's Pod stream requests and answered by the same streams, after the same
//! authentication.
//!
//! - `/exec/{namespace}/{pod}[/{uid}]/{container}?command=...&input=1&output=1&error=1&tty=1`
//!   and `/attach/...` (the kubelet's `input`/`output`/`error` are `stdin`/`stdout`/`stderr`);
//! - `/portForward/{namespace}/{pod}[/{uid}]?ports=...`;
//! - `/containerLogs/{namespace}/{pod}/{container}` with the log options;
//! - `/healthz`.
//!
//! One port stands for every simulated node; authorization is the API server's for the
//! Pod subresource (a kubelet asks for `nodes/proxy`).

use std::sync::Arc;

use http::{Request, Response, StatusCode, Uri};

use crate::authentication::UserInfo;
use crate::response::{self, Body};
use crate::state::State;

/// Answers one request to the kubelet port.
pub(super) async fn respond<B>(
    state: Arc<State>,
    request: Request<B>,
    client_certificate: Option<&UserInfo>,
) -> Response<Body>
where
    B: hyper::body::Body + Send,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let path = request.uri().path();
    if path == "/healthz" {
        return response::with_body(
            StatusCode::OK,
            "text/plain; charset=utf-8",
            response::full("ok"),
        );
    }
    let Some(target) = api_path(path, request.uri().query().unwrap_or("")) else {
        return response::with_body(
            StatusCode::NOT_FOUND,
            "text/plain; charset=utf-8",
            response::full("404 page not found\n"),
        );
    };
    let Ok(uri) = target.parse::<Uri>() else {
        return response::with_body(
            StatusCode::BAD_REQUEST,
            "text/plain; charset=utf-8",
            response::full("malformed request path\n"),
        );
    };
    let (mut parts, body) = request.into_parts();
    parts.uri = uri;
    super::respond(state, Request::from_parts(parts, body), client_certificate).await
}

/// The API server path and query a kubelet path stands for, if it is one of the
/// kubelet's stream paths.
fn api_path(path: &str, query: &str) -> Option<String> {
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let pod_path = |namespace: &str, pod: &str, subresource: &str| {
        format!("/api/v1/namespaces/{namespace}/pods/{pod}/{subresource}")
    };
    let (base, container, query) = match segments.as_slice() {
        [kind @ ("exec" | "attach"), namespace, pod, .., container] if segments.len() <= 5 => (
            pod_path(namespace, pod, kind),
            Some(*container),
            stream_query(query),
        ),
        ["portForward", namespace, pod] | ["portForward", namespace, pod, _] => (
            pod_path(namespace, pod, "portforward"),
            None,
            query.to_owned(),
        ),
        ["containerLogs", namespace, pod, container] => (
            pod_path(namespace, pod, "log"),
            Some(*container),
            query.to_owned(),
        ),
        _ => return None,
    };
    if base.contains("//") || container.is_some_and(str::is_empty) {
        return None;
    }
    let mut pairs = form_urlencoded::Serializer::new(String::new());
    if let Some(container) = container {
        pairs.append_pair("container", container);
    }
    let container_query = pairs.finish();
    let joined: Vec<&str> = [container_query.as_str(), query.as_str()]
        .into_iter()
        .filter(|part| !part.is_empty())
        .collect();
    Some(format!("{base}?{}", joined.join("&")))
}

/// An exec or attach query in the API server's names: `input`, `output`, `error` become
/// `stdin`, `stdout`, `stderr` (`1` or `true`: on); `command` and `tty` stay.
fn stream_query(query: &str) -> String {
    let mut translated = form_urlencoded::Serializer::new(String::new());
    for (name, value) in form_urlencoded::parse(query.as_bytes()) {
        let on = value == "1" || value.eq_ignore_ascii_case("true");
        match name.as_ref() {
            "command" => {
                translated.append_pair("command", &value);
            }
            "input" | "output" | "error" | "tty" if on => {
                let name = match name.as_ref() {
                    "input" => "stdin",
                    "output" => "stdout",
                    "error" => "stderr",
                    other => other,
                };
                translated.append_pair(name, "true");
            }
            _ => {}
        }
    }
    translated.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubelet_paths_become_pod_stream_requests() {
        assert_eq!(
            api_path(
                "/exec/default/web/main",
                "&input=1&output=1&tty=1&command=sh&command=-c&command=echo%20hi"
            )
            .as_deref(),
            Some(
                "/api/v1/namespaces/default/pods/web/exec?container=main&stdin=true&stdout=true&tty=true&command=sh&command=-c&command=echo+hi"
            )
        );
        assert_eq!(
            api_path("/attach/ns/web/0f3c/main", "output=1&error=0").as_deref(),
            Some("/api/v1/namespaces/ns/pods/web/attach?container=main&stdout=true")
        );
        assert_eq!(
            api_path("/portForward/ns/web", "ports=80").as_deref(),
            Some("/api/v1/namespaces/ns/pods/web/portforward?ports=80")
        );
        assert_eq!(
            api_path("/containerLogs/ns/web/main", "tailLines=2").as_deref(),
            Some("/api/v1/namespaces/ns/pods/web/log?container=main&tailLines=2")
        );
        for path in [
            "/exec/ns/web",
            "/exec//web/main",
            "/pods",
            "/exec/a/b/c/d/e",
        ] {
            assert_eq!(api_path(path, ""), None, "{path}");
        }
    }
}
