//! What a running simulated Pod answers through `kubectl port-forward` and `kubectl exec`
//! (issue 26), as other clients' e2e suites expect of a running Pod: nginx's welcome page
//! on port 80 of an nginx container, echo on the ports a container listens on, nothing on
//! the others; shell pipelines and command substitution inside `exec`.

use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::cluster::{cluster, create_pod, eventually, pod, pod_path};
use crate::kubectl::Kubectl;
use crate::kubectl_streams::port_forward_pod;

const LIMIT: Duration = Duration::from_secs(20);

#[tokio::test]
async fn port_forward_reaches_the_stand_ins_of_what_a_running_pod_listens_on() {
    let t = cluster(1).await;
    create_pod(
        &t,
        pod(
            "web",
            json!({"containers": [{"name": "nginx", "image": "nginx:1.27"}]}),
        ),
    )
    .await;
    create_pod(
        &t,
        pod(
            "server",
            json!({"containers": [{"name": "server", "image": "python",
                                   "command": ["python", "-u", "/opt/server.py", "1234"]}]}),
        ),
    )
    .await;
    for name in ["web", "server"] {
        eventually(&t, &pod_path(name), "the Pod runs", |p| {
            p["status"]["phase"] == "Running"
        })
        .await;
    }
    let kubectl = Kubectl::for_server(&t);

    let (mut nginx, local) = port_forward_pod(&kubectl, "web", ":80").await;
    let mut connection = tokio::net::TcpStream::connect(local)
        .await
        .expect("connect");
    connection
        .write_all(b"GET / HTTP/1.1\r\nHost: web\r\nConnection: close\r\n\r\n")
        .await
        .expect("send");
    let mut page = String::new();
    tokio::time::timeout(LIMIT, connection.read_to_string(&mut page))
        .await
        .expect("the page within the limit")
        .expect("read");
    assert!(page.starts_with("HTTP/1.1 200 OK\r\n"), "{page}");
    assert!(page.contains("<h1>Welcome to nginx!</h1>"), "{page}");
    nginx.kill().await.expect("stop kubectl");

    let (mut echo, local) = port_forward_pod(&kubectl, "server", ":1234").await;
    let mut connection = tokio::net::TcpStream::connect(local)
        .await
        .expect("connect");
    connection.write_all(b"round trip").await.expect("send");
    let mut echoed = [0u8; 10];
    tokio::time::timeout(LIMIT, connection.read_exact(&mut echoed))
        .await
        .expect("the echo within the limit")
        .expect("read");
    assert_eq!(&echoed, b"round trip");
    echo.kill().await.expect("stop kubectl");

    // A port nothing listens on: the kubelet's error, the connection closed.
    let (mut nothing, local) = port_forward_pod(&kubectl, "server", ":1236").await;
    let mut connection = tokio::net::TcpStream::connect(local)
        .await
        .expect("connect");
    let _ = connection.write_all(b"anyone?").await;
    let mut rest = Vec::new();
    let read = tokio::time::timeout(LIMIT, connection.read_to_end(&mut rest))
        .await
        .expect("closed within the limit");
    assert!(read.is_err() || rest.is_empty(), "{rest:?}");
    nothing.kill().await.expect("stop kubectl");
}

#[tokio::test]
async fn exec_runs_pipelines_and_command_substitution() {
    let t = cluster(1).await;
    create_pod(
        &t,
        pod(
            "shell",
            json!({"containers": [{"name": "main", "image": "busybox",
                                             "command": ["sleep", "3600"]}]}),
        ),
    )
    .await;
    eventually(&t, &pod_path("shell"), "the Pod runs", |p| {
        p["status"]["phase"] == "Running"
    })
    .await;
    let kubectl = Kubectl::for_server(&t);
    let output = kubectl
        .ok(&[
            "exec",
            "shell",
            "--",
            "sh",
            "-c",
            "echo -n 'a test string' | gzip | gunzip; echo; for i in $(seq 2 2 6); do echo \"n=$i\"; done; ls / | cat | cat",
        ])
        .await;
    assert!(
        output.starts_with("a test string\nn=2\nn=4\nn=6\nbin\ndev\n"),
        "{output}"
    );
    let uptime = kubectl.ok(&["exec", "shell", "--", "uptime"]).await;
    assert_eq!(uptime.lines().count(), 1, "{uptime}");
    assert!(uptime.contains(" up "), "{uptime}");
}
