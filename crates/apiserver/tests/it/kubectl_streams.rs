//! The real kubectl (1.33) streams against the server: `logs -f`, `exec` with stdin, a
//! failing command's exit code, a large output, `attach` (issue 17).

use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader};

use crate::kubectl::Kubectl;
use crate::support::TestServer;

const LIMIT: Duration = Duration::from_secs(60);

const POD: &str = r#"{"apiVersion": "v1", "kind": "Pod",
 "metadata": {"name": "web", "namespace": "default"},
 "spec": {"containers": [{"name": "main", "image": "busybox", "command": ["cat"]}]}}"#;

async fn with_pod() -> (TestServer, Kubectl) {
    let t = TestServer::start().await;
    let kubectl = Kubectl::for_server(&t);
    let manifest = kubectl.write("pod.json", POD);
    kubectl.ok(&["create", "-f", &manifest]).await;
    (t, kubectl)
}

/// Runs kubectl with `input` on stdin; returns the output.
async fn run_with_stdin(kubectl: &Kubectl, args: &[&str], input: &[u8]) -> std::process::Output {
    let mut child = kubectl
        .command(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubectl starts");
    let mut stdin = child.stdin.take().expect("piped stdin");
    let input = input.to_vec();
    let writer = tokio::spawn(async move {
        stdin
            .write_all(&input)
            .await
            .expect("write kubectl's stdin");
        // Dropping stdin closes it: kubectl sends the close signal for channel 0.
    });
    let output = tokio::time::timeout(LIMIT, child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("kubectl {args:?} finished within {LIMIT:?}"))
        .expect("kubectl runs");
    writer.await.expect("the stdin writer");
    output
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_logs_tail_and_follow_stream_appended_lines() {
    let (t, kubectl) = with_pod().await;
    let logs = t.server.pod_logs();
    logs.append("default", "web", "main", "first\nsecond\n");
    assert_eq!(kubectl.ok(&["logs", "web"]).await, "first\nsecond\n");
    assert_eq!(kubectl.ok(&["logs", "web", "--tail=1"]).await, "second\n");

    let mut child = kubectl
        .command(&["logs", "-f", "web", "-c", "main"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubectl logs -f starts");
    let mut lines = BufReader::new(child.stdout.take().expect("piped stdout")).lines();
    let mut next = async || {
        tokio::time::timeout(LIMIT, lines.next_line())
            .await
            .expect("a log line within the limit")
            .expect("readable")
    };
    assert_eq!(next().await.as_deref(), Some("first"));
    assert_eq!(next().await.as_deref(), Some("second"));
    logs.append("default", "web", "main", "third\n");
    assert_eq!(next().await.as_deref(), Some("third"));
    logs.finish("default", "web", "main");
    assert_eq!(next().await, None, "the stream ends when the log does");
    let status = tokio::time::timeout(LIMIT, child.wait())
        .await
        .expect("kubectl exits")
        .expect("waited");
    assert!(status.success(), "kubectl logs -f exits 0: {status:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_exec_cat_echoes_stdin_until_eof() {
    let (_t, kubectl) = with_pod().await;
    let input: Vec<u8> = (0..1_000_000u32)
        .map(|i| b"abcdefghij\n"[(i % 11) as usize])
        .collect();
    let output = run_with_stdin(&kubectl, &["exec", "-i", "web", "--", "cat"], &input).await;
    assert!(output.status.success(), "stderr: {}", text(&output.stderr));
    assert_eq!(output.stdout.len(), input.len());
    assert!(
        output.stdout == input,
        "kubectl exec -i -- cat returned other bytes"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_exec_prints_a_large_output_and_propagates_exit_codes() {
    let (_t, kubectl) = with_pod().await;
    let seq = kubectl.ok(&["exec", "web", "--", "seq", "200000"]).await;
    assert_eq!(seq.lines().count(), 200_000);
    assert_eq!(seq.lines().last(), Some("200000"));
    assert_eq!(
        kubectl
            .ok(&["exec", "web", "-c", "main", "--", "echo", "a", "b"])
            .await,
        "a b\n"
    );

    let failed = kubectl.run(&["exec", "web", "--", "exit", "7"]).await;
    assert_eq!(
        failed.status.code(),
        Some(7),
        "stderr: {}",
        text(&failed.stderr)
    );
    assert!(
        text(&failed.stderr).contains("command terminated with exit code 7"),
        "{}",
        text(&failed.stderr)
    );

    let unknown = kubectl.run(&["exec", "web", "--", "no-such-command"]).await;
    assert!(!unknown.status.success());
    assert!(
        text(&unknown.stderr).contains("executable file not found"),
        "{}",
        text(&unknown.stderr)
    );

    let missing = kubectl.run(&["exec", "nope", "--", "true"]).await;
    assert!(
        text(&missing.stderr).contains("pods \"nope\" not found"),
        "{}",
        text(&missing.stderr)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_attach_with_stdin_reaches_the_containers_process() {
    let (_t, kubectl) = with_pod().await;
    let output = run_with_stdin(&kubectl, &["attach", "-i", "web"], b"hello attach\n").await;
    assert!(output.status.success(), "stderr: {}", text(&output.stderr));
    assert_eq!(text(&output.stdout), "hello attach\n");
}

/// A TCP echo server on loopback; returns its address.
async fn echo_server() -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
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

/// Creates Pod `web`, Running, whose port 8080 forwards to `echo`.
async fn forwarding_pod(kubectl: &Kubectl, echo: std::net::SocketAddr) {
    let pod = format!(
        r#"{{"apiVersion": "v1", "kind": "Pod",
             "metadata": {{"name": "web", "namespace": "default",
                          "annotations": {{"port-forward.kubeclient.dev/8080": "{echo}"}}}},
             "spec": {{"containers": [{{"name": "main", "image": "busybox"}}]}}}}"#
    );
    let manifest = kubectl.write("pod.json", &pod);
    kubectl.ok(&["create", "-f", &manifest]).await;
    // kubectl forwards only to a running Pod.
    kubectl
        .ok(&[
            "patch",
            "pod",
            "web",
            "--subresource=status",
            "--type=merge",
            "-p",
            r#"{"status":{"phase":"Running"}}"#,
        ])
        .await;
}

/// Sends `len` bytes (a pattern keyed by `seed`) through `local` and checks the echo.
async fn echo_through(local: std::net::SocketAddr, len: usize, seed: u8) {
    let mut connection = tokio::net::TcpStream::connect(local)
        .await
        .expect("connect");
    let payload: Vec<u8> = (0..len)
        .map(|j| (j as u8).wrapping_mul(31) ^ seed)
        .collect();
    let (mut read, mut write) = connection.split();
    let expected = payload.clone();
    let sending = async move { write.write_all(&payload).await.expect("send") };
    let receiving = async move {
        let mut echoed = vec![0u8; expected.len()];
        read.read_exact(&mut echoed)
            .await
            .expect("receive the echo");
        assert!(echoed == expected, "connection {seed} got other bytes back");
    };
    tokio::join!(sending, receiving);
}

/// Issue 24: a frame half read when another `select!` branch won was thrown away, and the
/// connection died with "a SPDY frame of 7434609 bytes is over the limit" (kubectl: "lost
/// connection to pod") as soon as streams ended while others were busy.
#[tokio::test(flavor = "multi_thread")]
async fn kubectl_port_forward_keeps_four_20_mib_streams_alive_under_connection_churn() {
    let t = TestServer::start().await;
    let kubectl = Kubectl::for_server(&t);
    let echo = echo_server().await;
    t.server.allow_port_forward(echo);
    forwarding_pod(&kubectl, echo).await;
    let (mut child, local) = port_forward(&kubectl, ":8080").await;
    let started = std::time::Instant::now();
    let mut big = Vec::new();
    for seed in 0..4u8 {
        big.push(tokio::spawn(echo_through(local, 20 * 1024 * 1024, seed)));
    }
    let churn = tokio::spawn(async move {
        for round in 0..100u32 {
            let mut short = Vec::new();
            for k in 0..4u32 {
                let seed = u8::try_from((round * 4 + k) % 251).unwrap_or(0);
                short.push(tokio::spawn(echo_through(
                    local,
                    1024 + (round as usize % 7) * 4096,
                    seed,
                )));
            }
            for connection in short {
                connection.await.expect("a short connection");
            }
        }
    });
    tokio::time::timeout(Duration::from_secs(240), churn)
        .await
        .expect("400 short connections finish (is the SPDY session alive?)")
        .expect("the churn task");
    for client in big {
        tokio::time::timeout(Duration::from_secs(240), client)
            .await
            .expect("a 20 MiB connection finishes")
            .expect("the client task");
    }
    eprintln!(
        "4 x 20 MiB echoed beside 400 short connections in {:?}",
        started.elapsed()
    );
    assert!(
        child.try_wait().expect("kubectl's status").is_none(),
        "kubectl port-forward is still running"
    );
    echo_through(local, 4096, 7).await;
    let _ = child.kill().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_port_forward_carries_bytes_both_ways_on_concurrent_connections() {
    let t = TestServer::start().await;
    let kubectl = Kubectl::for_server(&t);
    let echo = echo_server().await;
    t.server.allow_port_forward(echo);
    forwarding_pod(&kubectl, echo).await;
    let (mut child, local) = port_forward(&kubectl, ":8080").await;
    let mut clients = Vec::new();
    for i in 0..4u8 {
        clients.push(tokio::spawn(async move {
            let mut connection = tokio::net::TcpStream::connect(local)
                .await
                .expect("connect");
            let payload: Vec<u8> = (0..200_000u32).map(|j| (j as u8) ^ i).collect();
            let (mut read, mut write) = connection.split();
            let expected = payload.clone();
            let sending = async move { write.write_all(&payload).await.expect("send") };
            let receiving = async move {
                let mut echoed = vec![0u8; expected.len()];
                read.read_exact(&mut echoed)
                    .await
                    .expect("receive the echo");
                assert!(echoed == expected, "connection {i} got other bytes back");
            };
            tokio::join!(sending, receiving);
        }));
    }
    for client in clients {
        tokio::time::timeout(LIMIT, client)
            .await
            .expect("a forwarded connection finishes")
            .expect("the client task");
    }
    let _ = child.kill().await;

    // A port without a target: kubectl reports the server's message from the error stream.
    let (mut child, local) = port_forward(&kubectl, ":9999").await;
    let mut connection = tokio::net::TcpStream::connect(local)
        .await
        .expect("connect");
    let mut nothing = Vec::new();
    let _ = tokio::time::timeout(LIMIT, connection.read_to_end(&mut nothing)).await;
    assert!(nothing.is_empty());
    let mut stderr = String::new();
    let mut pipe = child.stderr.take().expect("piped stderr");
    let _ = tokio::time::timeout(Duration::from_secs(5), pipe.read_to_string(&mut stderr)).await;
    let _ = child.kill().await;
    assert!(
        stderr.contains("port-forward.kubeclient.dev/9999"),
        "kubectl shows the server's error: {stderr}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_exec_and_logs_over_tls_with_a_token() {
    let t = TestServer::start_with(
        kubeclient_apiserver::ApiServer::builder()
            .tls(true)
            .token("s3cret"),
    )
    .await;
    let kubectl = Kubectl::for_server(&t);
    let manifest = kubectl.write("pod.json", POD);
    kubectl.ok(&["create", "-f", &manifest]).await;
    assert_eq!(
        kubectl
            .ok(&["exec", "web", "--", "echo", "over", "tls"])
            .await,
        "over tls\n"
    );
    let output = run_with_stdin(&kubectl, &["exec", "-i", "web", "--", "cat"], b"piped\n").await;
    assert!(output.status.success(), "stderr: {}", text(&output.stderr));
    assert_eq!(output.stdout, b"piped\n");
    t.server
        .pod_logs()
        .append("default", "web", "main", "secure line\n");
    assert_eq!(kubectl.ok(&["logs", "web"]).await, "secure line\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_exec_with_a_tty_sends_the_terminal_size() {
    let (_t, kubectl) = with_pod().await;
    // `script` gives kubectl a pseudo-terminal whose size stty sets.
    let inner = format!(
        "stty cols 100 rows 30; {}",
        kubectl
            .argv(&["exec", "-it", "web", "--", "tty-size"])
            .join(" ")
    );
    let mut child = tokio::process::Command::new("script")
        .args(["-qec", &inner, "/dev/null"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("script starts");
    let mut stdin = child.stdin.take().expect("piped stdin");
    let mut stdout = child.stdout.take().expect("piped stdout");
    let mut seen = Vec::new();
    let mut buffer = [0u8; 256];
    while !String::from_utf8_lossy(&seen).contains("100x30") {
        let n = tokio::time::timeout(LIMIT, stdout.read(&mut buffer))
            .await
            .expect("the size within the limit")
            .expect("readable");
        assert!(n > 0, "the terminal closed early: {}", text(&seen));
        seen.extend_from_slice(&buffer[..n]);
    }
    // Ctrl-D ends tty-size, as it would end a program reading a terminal.
    stdin.write_all(&[0x04]).await.expect("send Ctrl-D");
    let status = tokio::time::timeout(LIMIT, child.wait())
        .await
        .expect("kubectl exits")
        .expect("waited");
    assert!(status.success(), "output: {}", text(&seen));
}

/// Starts `kubectl port-forward pod/web PORTS` and returns it with the local address it
/// listens on (read from its "Forwarding from 127.0.0.1:41234 -> 8080" line).
async fn port_forward(
    kubectl: &Kubectl,
    ports: &str,
) -> (tokio::process::Child, std::net::SocketAddr) {
    port_forward_pod(kubectl, "web", ports).await
}

/// Starts `kubectl port-forward pod/POD PORTS`; as [`port_forward`].
pub(crate) async fn port_forward_pod(
    kubectl: &Kubectl,
    pod: &str,
    ports: &str,
) -> (tokio::process::Child, std::net::SocketAddr) {
    let target = format!("pod/{pod}");
    let mut child = kubectl
        .command(&["port-forward", &target, ports])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubectl port-forward starts");
    let mut lines = BufReader::new(child.stdout.take().expect("piped stdout")).lines();
    let line = tokio::time::timeout(LIMIT, lines.next_line())
        .await
        .expect("kubectl says where it listens")
        .expect("readable")
        .unwrap_or_default();
    let local = line
        .strip_prefix("Forwarding from ")
        .and_then(|rest| rest.split(" -> ").next())
        .and_then(|address| address.parse().ok())
        .unwrap_or_else(|| panic!("unexpected kubectl output: {line:?}"));
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, local)
}
