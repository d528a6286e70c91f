//! Logs, exec, attach and port-forward of the client against the embedded server, over
//! real HTTP and WebSockets (issue 17).

use std::time::Duration;

use futures_util::TryStreamExt as _;
use k8s_openapi::api::core::v1::Pod;
use kubeclient::api::{AttachParams, LogParams};
use kubeclient::{Api, Client, Error, PostParams, StreamError};
use kubeclient_apiserver::ApiServer;
use serde_json::json;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpListener;

use crate::support::{Fixture, config_of, start, start_with};

/// Every await on a stream gets this long before the test fails naming what hung.
const LIMIT: Duration = Duration::from_secs(30);

async fn within<T>(what: &str, future: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(LIMIT, future)
        .await
        .unwrap_or_else(|_| panic!("{what} did not finish within {LIMIT:?} (a stream stuck?)"))
}

async fn create_pod(pods: &Api<Pod>, pod: serde_json::Value) {
    let pod: Pod = serde_json::from_value(pod).expect("a Pod");
    pods.create(&PostParams::default(), &pod)
        .await
        .expect("create the Pod");
}

async fn pod_with(fixture: &Fixture, name: &str, containers: serde_json::Value) -> Api<Pod> {
    let pods: Api<Pod> = Api::namespaced(fixture.client.clone(), "default");
    create_pod(
        &pods,
        json!({"metadata": {"name": name}, "spec": {"containers": containers}}),
    )
    .await;
    pods
}

async fn read_all(reader: Option<impl tokio::io::AsyncRead + Unpin>) -> Vec<u8> {
    let mut out = Vec::new();
    if let Some(mut reader) = reader {
        within("reading a pipe", reader.read_to_end(&mut out))
            .await
            .expect("the pipe is readable");
    }
    out
}

#[tokio::test]
async fn logs_honour_tail_limit_timestamps_and_container_rules() {
    let fixture = start().await;
    let pods = pod_with(&fixture, "web", json!([{"name": "main", "image": "x"}])).await;
    fixture
        .server
        .pod_logs()
        .append("default", "web", "main", "one\ntwo\nthree\n");
    let all = pods.logs("web", &LogParams::default()).await.expect("logs");
    assert_eq!(all, "one\ntwo\nthree\n");
    let tail = pods
        .logs("web", &LogParams::default().tail_lines(2))
        .await
        .expect("tail");
    assert_eq!(tail, "two\nthree\n");
    let limited = pods
        .logs("web", &LogParams::default().limit_bytes(6))
        .await
        .expect("limit");
    assert_eq!(limited, "one\ntw");
    let stamped = pods
        .logs("web", &LogParams::default().timestamps().tail_lines(1))
        .await
        .expect("timestamps");
    let (time, line) = stamped.split_once(' ').expect("a timestamp and a space");
    assert!(
        time.parse::<jiff::Timestamp>().is_ok(),
        "{time:?} is RFC 3339"
    );
    assert_eq!(line, "three\n");

    let missing = pods.logs("nope", &LogParams::default()).await.unwrap_err();
    assert!(missing.is_not_found(), "{missing}");
    let wrong = pods
        .logs("web", &LogParams::default().container("sidecar"))
        .await
        .unwrap_err();
    assert_eq!(wrong.api().map(|e| e.code()), Some(400), "{wrong}");
    assert!(
        wrong
            .to_string()
            .contains("container sidecar is not valid for pod web"),
        "{wrong}"
    );
    let invalid = pods
        .logs("web", &LogParams::default().tail_lines(-1))
        .await
        .unwrap_err();
    assert_eq!(invalid.api().map(|e| e.code()), Some(422), "{invalid}");
    let previous = pods
        .logs("web", &LogParams::default().previous())
        .await
        .unwrap_err();
    assert_eq!(previous.api().map(|e| e.code()), Some(400), "{previous}");

    let two = pod_with(
        &fixture,
        "two",
        json!([{"name": "a", "image": "x"}, {"name": "b", "image": "x"}]),
    )
    .await;
    let ambiguous = two.logs("two", &LogParams::default()).await.unwrap_err();
    assert!(
        ambiguous.to_string().contains("choose one of: [a b]"),
        "{ambiguous}"
    );
}

#[tokio::test]
async fn followed_log_streams_appended_lines_until_the_log_finishes() {
    let fixture = start().await;
    let pods = pod_with(&fixture, "web", json!([{"name": "main", "image": "x"}])).await;
    let logs = fixture.server.pod_logs();
    logs.append("default", "web", "main", "old 1\nold 2\n");
    let stream = pods
        .log_stream("web", &LogParams::default().follow().tail_lines(1))
        .await
        .expect("follow");
    let mut lines = std::pin::pin!(stream);
    assert_eq!(
        within("the tail line", lines.try_next())
            .await
            .expect("ok")
            .as_deref(),
        Some("old 2")
    );
    logs.append("default", "web", "main", "new 1\nnew 2\n");
    assert_eq!(
        within("a new line", lines.try_next())
            .await
            .expect("ok")
            .as_deref(),
        Some("new 1")
    );
    assert_eq!(
        within("a new line", lines.try_next())
            .await
            .expect("ok")
            .as_deref(),
        Some("new 2")
    );
    logs.finish("default", "web", "main");
    assert_eq!(within("the end", lines.try_next()).await.expect("ok"), None);
}

#[tokio::test]
async fn followed_log_ends_when_the_pod_is_deleted() {
    let fixture = start().await;
    let pods = pod_with(&fixture, "web", json!([{"name": "main", "image": "x"}])).await;
    let stream = pods
        .log_stream("web", &LogParams::default().follow())
        .await
        .expect("follow");
    let mut lines = std::pin::pin!(stream);
    pods.delete("web", &Default::default())
        .await
        .expect("delete");
    assert_eq!(within("the end", lines.try_next()).await.expect("ok"), None);
}

#[tokio::test]
async fn exec_echo_prints_its_arguments_over_v5_and_exits_zero() {
    let fixture = start().await;
    let pods = pod_with(&fixture, "web", json!([{"name": "main", "image": "x"}])).await;
    let mut process = pods
        .exec("web", ["echo", "hello", "world"], &AttachParams::default())
        .await
        .expect("exec");
    assert_eq!(process.protocol(), "v5.channel.k8s.io");
    let stdout = read_all(process.stdout()).await;
    let stderr = read_all(process.stderr()).await;
    let status = within("exit status", process.join()).await.expect("status");
    assert_eq!(String::from_utf8_lossy(&stdout), "hello world\n");
    assert!(stderr.is_empty());
    assert!(status.success());
    assert_eq!(status.status.status, "Success");
}

#[tokio::test]
async fn exec_cat_echoes_several_megabytes_of_stdin_until_eof() {
    let fixture = start().await;
    let pods = pod_with(&fixture, "web", json!([{"name": "main", "image": "x"}])).await;
    let mut process = pods
        .exec("web", ["cat"], &AttachParams::default().stdin(true))
        .await
        .expect("exec");
    let input: Vec<u8> = (0..5 * 1024 * 1024u32).map(|i| (i % 251) as u8).collect();
    let mut stdin = process.stdin().expect("stdin");
    let stdout = process.stdout();
    let expected = input.clone();
    // Write and read at once: cat's output fills the pipes long before stdin is done.
    let writer = tokio::spawn(async move {
        stdin.write_all(&input).await.expect("write stdin");
        stdin.shutdown().await.expect("close stdin");
    });
    let echoed = read_all(stdout).await;
    within("the writer", writer).await.expect("the writer task");
    let status = within("exit status", process.join()).await.expect("status");
    assert_eq!(echoed.len(), expected.len());
    assert!(echoed == expected, "cat returned different bytes");
    assert!(status.success());
}

#[tokio::test]
async fn exec_seq_streams_a_large_stdout_without_loss() {
    let fixture = start().await;
    let pods = pod_with(&fixture, "web", json!([{"name": "main", "image": "x"}])).await;
    let mut process = pods
        .exec("web", ["seq", "1000000"], &AttachParams::default())
        .await
        .expect("exec");
    let stdout = read_all(process.stdout()).await;
    let status = within("exit status", process.join()).await.expect("status");
    assert!(status.success());
    assert!(stdout.len() > 6_000_000, "{} bytes", stdout.len());
    let text = String::from_utf8(stdout).expect("UTF-8");
    for (expected, line) in (1..=1_000_000u64).zip(text.lines()) {
        assert_eq!(line.parse::<u64>().ok(), Some(expected));
    }
    assert_eq!(text.lines().count(), 1_000_000);
}

#[tokio::test]
async fn exec_reports_non_zero_exit_codes_stderr_and_unknown_commands() {
    let fixture = start().await;
    let pods = pod_with(&fixture, "web", json!([{"name": "main", "image": "x"}])).await;
    let process = pods
        .exec("web", ["exit", "3"], &AttachParams::default())
        .await
        .expect("exec");
    let status = within("exit status", process.join()).await.expect("status");
    assert_eq!(status.code, 3);
    assert!(!status.success());
    assert_eq!(status.status.reason, "NonZeroExitCode");

    let mut process = pods
        .exec("web", ["echo-stderr", "oops"], &AttachParams::default())
        .await
        .expect("exec");
    let stdout = read_all(process.stdout()).await;
    let stderr = read_all(process.stderr()).await;
    assert!(stdout.is_empty());
    assert_eq!(stderr, b"oops\n");

    let process = pods
        .exec("web", ["rm", "-rf", "/"], &AttachParams::default())
        .await
        .expect("exec opens");
    let err = within("exit status", process.join()).await.unwrap_err();
    assert_eq!(err.api().map(|e| e.code()), Some(500), "{err}");
    assert!(
        err.to_string().contains("executable file not found"),
        "{err}"
    );
}

#[tokio::test]
async fn exec_refuses_missing_pods_containers_and_commands() {
    let fixture = start().await;
    let pods = pod_with(&fixture, "web", json!([{"name": "main", "image": "x"}])).await;
    let missing = pods
        .exec("nope", ["true"], &AttachParams::default())
        .await
        .unwrap_err();
    assert!(missing.is_not_found(), "{missing}");
    let container = pods
        .exec("web", ["true"], &AttachParams::default().container("other"))
        .await
        .unwrap_err();
    assert_eq!(container.api().map(|e| e.code()), Some(400), "{container}");
    let empty: [&str; 0] = [];
    let no_command = pods
        .exec("web", empty, &AttachParams::default())
        .await
        .unwrap_err();
    assert_eq!(
        no_command.api().map(|e| e.code()),
        Some(400),
        "{no_command}"
    );
}

#[tokio::test]
async fn attach_runs_the_containers_command_with_stdin() {
    let fixture = start().await;
    let pods = pod_with(
        &fixture,
        "web",
        json!([{"name": "main", "image": "x", "command": ["cat"], "env": [{"name": "MODE", "value": "fast"}]}]),
    )
    .await;
    let mut process = pods
        .attach("web", &AttachParams::default().stdin(true).stderr(false))
        .await
        .expect("attach");
    let mut stdin = process.stdin().expect("stdin");
    stdin.write_all(b"ping\n").await.expect("write");
    drop(stdin);
    let stdout = read_all(process.stdout()).await;
    assert_eq!(stdout, b"ping\n");
    assert!(
        within("exit", process.join())
            .await
            .expect("status")
            .success()
    );

    let mut env = pods
        .exec("web", ["env"], &AttachParams::default())
        .await
        .expect("exec env");
    let text = String::from_utf8(read_all(env.stdout()).await).expect("UTF-8");
    assert_eq!(text, "HOSTNAME=web\nMODE=fast\n");
}

#[tokio::test]
async fn tty_sessions_see_terminal_resizes() {
    let fixture = start().await;
    let pods = pod_with(&fixture, "web", json!([{"name": "main", "image": "x"}])).await;
    let mut process = pods
        .exec(
            "web",
            ["tty-size"],
            &AttachParams::default().stdin(true).tty(true),
        )
        .await
        .expect("exec");
    assert!(process.stderr().is_none(), "a TTY has no separate stderr");
    let sizes = process.terminal_size().expect("a TTY session can resize");
    let mut stdout = process.stdout().expect("stdout");
    let stdin = process.stdin().expect("stdin");
    let mut line = vec![0u8; 64];
    sizes.resize(80, 24).await.expect("resize");
    let n = within("the first size", stdout.read(&mut line))
        .await
        .expect("read");
    assert_eq!(&line[..n], b"80x24\n");
    sizes.resize(120, 40).await.expect("resize");
    let n = within("the second size", stdout.read(&mut line))
        .await
        .expect("read");
    assert_eq!(&line[..n], b"120x40\n");
    drop(stdin);
    assert!(
        within("exit", process.join())
            .await
            .expect("status")
            .success()
    );
}

#[tokio::test]
async fn a_session_cut_off_mid_stream_is_a_clear_error() {
    let Fixture { server, client } = start().await;
    let pods: Api<Pod> = Api::namespaced(client, "default");
    create_pod(
        &pods,
        json!({"metadata": {"name": "web"}, "spec": {"containers": [{"name": "main", "image": "x"}]}}),
    )
    .await;
    let mut process = pods
        .exec("web", ["sleep", "60"], &AttachParams::default())
        .await
        .expect("exec");
    let stdout = process.stdout();
    server.shutdown().await;
    let err = within("the cut-off session", process.join())
        .await
        .unwrap_err();
    match &err {
        Error::Stream {
            source: StreamError::ClosedWithoutStatus { code, .. },
            ..
        } => assert_eq!(*code, Some(1001), "the server says it is going away"),
        other => panic!("expected a closed-mid-stream error, got {other:?}"),
    }
    assert!(err.to_string().contains("stream of"), "{err}");
    assert!(read_all(stdout).await.is_empty());
}

/// A TCP echo server on loopback; returns its address.
async fn echo_server() -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("address");
    tokio::spawn(async move {
        while let Ok((mut connection, _)) = listener.accept().await {
            tokio::spawn(async move {
                let (mut read, mut write) = connection.split();
                let _ = tokio::io::copy(&mut read, &mut write).await;
            });
        }
    });
    address
}

async fn forwarding_pod(fixture: &Fixture, annotations: serde_json::Value) -> Api<Pod> {
    let pods: Api<Pod> = Api::namespaced(fixture.client.clone(), "default");
    create_pod(
        &pods,
        json!({"metadata": {"name": "web", "annotations": annotations},
               "spec": {"containers": [{"name": "main", "image": "x"}]}}),
    )
    .await;
    pods
}

#[tokio::test]
async fn port_forward_carries_bytes_both_ways_on_several_ports() {
    let fixture = start().await;
    let first = echo_server().await;
    let second = echo_server().await;
    fixture.server.allow_port_forward(first);
    fixture.server.allow_port_forward(second);
    let pods = forwarding_pod(
        &fixture,
        json!({"port-forward.kubeclient.dev/8080": first.to_string(),
               "port-forward.kubeclient.dev/9090": second.to_string()}),
    )
    .await;
    let mut forwarder = pods
        .port_forward("web", &[8080, 9090])
        .await
        .expect("forward");
    for (port, payload) in [
        (8080u16, &b"to the first"[..]),
        (9090, &b"to the second"[..]),
    ] {
        let mut stream = forwarder.take_stream(port).expect("a stream per port");
        stream.write_all(payload).await.expect("write");
        let mut echoed = vec![0u8; payload.len()];
        within("the echo", stream.read_exact(&mut echoed))
            .await
            .expect("read");
        assert_eq!(echoed, payload);
    }
    assert!(
        forwarder.take_stream(8080).is_none(),
        "each stream is taken once"
    );
}

/// Issue 26: a Pod reaches only the host addresses the operator allows; a listener on
/// loopback the allowlist does not name (a database, an etcd, the server itself) is not
/// dialled.
#[tokio::test]
async fn port_forward_dials_only_allowed_addresses() {
    let fixture = start().await;
    let unlisted = echo_server().await;
    let pods = forwarding_pod(
        &fixture,
        json!({"port-forward.kubeclient.dev/80": "10.0.0.1:80",
               "port-forward.kubeclient.dev/82": unlisted.to_string(),
               "port-forward.kubeclient.dev/83": fixture.server.address().to_string()}),
    )
    .await;
    let mut forwarder = pods
        .port_forward("web", &[80, 81, 82, 83])
        .await
        .expect("forward");
    let remote = within("the 80 error", forwarder.take_error(80).expect("once"))
        .await
        .expect("an error for port 80");
    assert!(
        remote.contains("not in the server's port-forward allowlist"),
        "{remote}"
    );
    assert!(
        remote.contains("--port-forward-allow 10.0.0.1:80"),
        "{remote}"
    );
    for port in [82, 83] {
        let refused = within("the error", forwarder.take_error(port).expect("once"))
            .await
            .expect("an error for a loopback address not allowed");
        assert!(refused.contains("allowlist"), "port {port}: {refused}");
    }
    let missing = within("the 81 error", forwarder.take_error(81).expect("once"))
        .await
        .expect("an error for port 81");
    assert!(
        missing.contains("port-forward.kubeclient.dev/81"),
        "{missing}"
    );
    within("the session end", forwarder.join())
        .await
        .expect("a clean end");

    let none = pods.port_forward("web", &[]).await.unwrap_err();
    assert!(matches!(none, Error::InvalidRequest(_)), "{none}");
    let missing_pod = pods.port_forward("nope", &[80]).await.unwrap_err();
    assert!(missing_pod.is_not_found(), "{missing_pod}");
}

#[tokio::test]
async fn local_forwarder_serves_concurrent_connections() {
    let fixture = start().await;
    let target = echo_server().await;
    fixture.server.allow_port_forward(target);
    let pods = forwarding_pod(
        &fixture,
        json!({"port-forward.kubeclient.dev/8080": target.to_string()}),
    )
    .await;
    let forward = pods
        .forward_local("web", 8080, "127.0.0.1:0".parse().expect("an address"))
        .await
        .expect("listen");
    let address = forward.local_address();
    let mut clients = Vec::new();
    for i in 0..8u8 {
        clients.push(tokio::spawn(async move {
            let mut connection = tokio::net::TcpStream::connect(address)
                .await
                .expect("connect");
            let payload: Vec<u8> = (0..200_000u32).map(|j| (j as u8) ^ i).collect();
            let (mut read, mut write) = connection.split();
            let expected = payload.clone();
            let sending = async move { write.write_all(&payload).await.expect("send") };
            let receiving = async move {
                let mut echoed = vec![0u8; expected.len()];
                read.read_exact(&mut echoed).await.expect("receive");
                assert!(echoed == expected, "connection {i} got other bytes back");
            };
            tokio::join!(sending, receiving);
        }));
    }
    for client in clients {
        within("a forwarded connection", client)
            .await
            .expect("the client task");
    }
    drop(forward);
}

#[tokio::test]
async fn exec_and_port_forward_go_through_tls_and_the_token_like_every_request() {
    let fixture = start_with(ApiServer::builder().tls(true).token("s3cret")).await;
    assert!(fixture.client.base_url().starts_with("https://"));
    let pods = pod_with(&fixture, "web", json!([{"name": "main", "image": "x"}])).await;
    let mut process = pods
        .exec("web", ["echo", "over", "tls"], &AttachParams::default())
        .await
        .expect("exec over TLS with the token");
    assert_eq!(read_all(process.stdout()).await, b"over tls\n");
    assert!(
        within("exit", process.join())
            .await
            .expect("status")
            .success()
    );

    let target = echo_server().await;
    fixture.server.allow_port_forward(target);
    let pods_api: Api<Pod> = Api::namespaced(fixture.client.clone(), "default");
    create_pod(
        &pods_api,
        json!({"metadata": {"name": "fwd", "annotations": {"port-forward.kubeclient.dev/80": target.to_string()}},
               "spec": {"containers": [{"name": "main", "image": "x"}]}}),
    )
    .await;
    let mut forwarder = pods_api
        .port_forward("fwd", &[80])
        .await
        .expect("forward over TLS");
    let mut stream = forwarder.take_stream(80).expect("the stream");
    stream.write_all(b"tls bytes").await.expect("write");
    let mut echoed = [0u8; 9];
    within("the echo over TLS", stream.read_exact(&mut echoed))
        .await
        .expect("read");
    assert_eq!(&echoed, b"tls bytes");

    let mut wrong = config_of(&fixture.server);
    wrong.credentials = kubeclient::config::Credentials::Token("nope".to_owned());
    let anonymous: Api<Pod> =
        Api::namespaced(Client::new(wrong).await.expect("a client"), "default");
    let err = anonymous
        .exec("web", ["true"], &AttachParams::default())
        .await
        .unwrap_err();
    assert!(err.api().is_some_and(|e| e.is_unauthorized()), "{err}");
}

#[tokio::test]
async fn exec_falls_back_to_v4_on_a_server_without_v5() {
    let fixture = start_with(ApiServer::builder().legacy_remote_command(true)).await;
    let pods = pod_with(&fixture, "web", json!([{"name": "main", "image": "x"}])).await;
    let mut process = pods
        .exec("web", ["echo", "old", "server"], &AttachParams::default())
        .await
        .expect("exec");
    assert_eq!(process.protocol(), "v4.channel.k8s.io");
    assert_eq!(read_all(process.stdout()).await, b"old server\n");
    let status = within("exit", process.join()).await.expect("status");
    assert!(status.success());
}
