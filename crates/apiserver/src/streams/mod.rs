//! Pod streams, the kubelet's part of the API: `pods/log`, `pods/exec`, `pods/attach` and
//! `pods/portforward`, over WebSocket (`v4`/`v5.channel.k8s.io`, `portforward.k8s.io`) and
//! SPDY/3.1, plus the admin path that appends a container's log lines.
//!
//! In a cluster kube-apiserver proxies these requests to the Pod's kubelet; here the
//! server answers them itself from [`Sessions`](crate::sessions::Sessions) (log lines,
//! built-in commands, port-forward targets). The endpoints route and authenticate the
//! request and return it as `endpoints::Handled::PodStream`; the server hands it
//! here. Endpoints and streams never import each other.

pub(crate) mod builtin_commands;
mod exec;
mod logs;
mod pod_target;
mod port_forward;
mod port_forward_spdy;
mod port_forward_streams;
mod port_forward_target;
mod shell;
mod spdy;
mod stand_in_server;
mod websocket;

use std::sync::Arc;

use http::{Request, Response};
use kubeclient_machinery::Status;

use crate::response::{Body, status_response};
use crate::state::State;

/// Answers `.../namespaces/{namespace}/pods/{name}/{subresource}` for a stream
/// subresource (`log`, `exec`, `attach`, `portforward`): the log, the 101 upgrade (the
/// session runs in its own task), or the error Status.
pub(crate) fn serve<B>(
    state: &Arc<State>,
    request: Request<B>,
    namespace: &str,
    name: &str,
    subresource: &str,
) -> Response<Body> {
    let answer = match subresource {
        "log" => logs::get(state, &request, namespace, name),
        "exec" => exec::handle(state, request, namespace, name, exec::Kind::Exec),
        "attach" => exec::handle(state, request, namespace, name, exec::Kind::Attach),
        "portforward" if port_forward_spdy::is_spdy_upgrade(&request) => {
            port_forward_spdy::handle(state, request, namespace, name)
        }
        "portforward" => port_forward::handle(state, request, namespace, name),
        _ => Err(Box::new(Status::failure(
            kubeclient_machinery::StatusReason::NotFound,
            "the server could not find the requested resource",
        ))),
    };
    answer.unwrap_or_else(|status| status_response(&status))
}

/// Answers `POST /_kubeclient/pods/{namespace}/{name}/log?container=c[&finish=true]`
/// (admin): appends the body to the container's log.
pub(crate) async fn append_log<B>(
    state: &Arc<State>,
    request: Request<B>,
    namespace: &str,
    name: &str,
) -> Response<Body>
where
    B: hyper::body::Body + Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    logs::admin_append(state, request, namespace, name)
        .await
        .unwrap_or_else(|status| status_response(&status))
}
