//! The output of the simulated kubelets' containers (issue 26): `pods/log` and `kubectl
//! logs` show what a container's command wrote (stdout and stderr, `sh -c` scripts), the
//! run before a restart with `--previous`, `-f` ends with the container, and a Job's
//! Pods' output through `kubectl logs job/...`.

use serde_json::json;

use crate::cluster::{cluster, cluster_at, container, create_pod, eventually, pod, pod_path};
use crate::kubectl::Kubectl;

fn shell(script: &str) -> serde_json::Value {
    let mut main = container(&["sh", "-c", script]);
    main["env"] = json!([{"name": "GREETING", "value": "hello"}]);
    main
}

#[tokio::test]
async fn a_finished_pods_log_is_its_commands_output() {
    let t = cluster(1).await;
    let script = r#"for i in 1 2 3; do echo "$GREETING $i"; done; echo "on $HOSTNAME" >&2; exit 0"#;
    create_pod(
        &t,
        pod(
            "counter",
            json!({"restartPolicy": "Never", "containers": [shell(script)]}),
        ),
    )
    .await;
    eventually(&t, &pod_path("counter"), "the Pod succeeds", |p| {
        p["status"]["phase"] == "Succeeded"
    })
    .await;
    let log = t.get(&format!("{}/log", pod_path("counter"))).await;
    assert_eq!(log.status, 200);
    assert_eq!(
        String::from_utf8_lossy(&log.body),
        "hello 1\nhello 2\nhello 3\non counter\n"
    );
    let kubectl = Kubectl::for_server(&t);
    let tail = kubectl.ok(&["logs", "counter", "--tail=1"]).await;
    assert_eq!(tail, "on counter\n");
    // A script's failing command: the shell's message, its exit code.
    create_pod(
        &t,
        pod(
            "missing",
            json!({"restartPolicy": "Never", "containers": [shell("echo before; no-such-tool --flag")]}),
        ),
    )
    .await;
    let failed = eventually(&t, &pod_path("missing"), "the Pod fails", |p| {
        p["status"]["phase"] == "Failed"
    })
    .await;
    assert_eq!(
        failed["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"],
        127
    );
    let log = kubectl.ok(&["logs", "missing"]).await;
    assert_eq!(log, "before\nsh: no-such-tool: not found\n");
    // Never restarted: no previous run.
    let previous = t
        .get(&format!("{}/log?previous=true", pod_path("counter")))
        .await;
    previous.assert_status_message(
        400,
        "previous terminated container \"main\" in pod \"counter\" not found",
    );
}

#[tokio::test]
async fn a_restarted_container_keeps_its_previous_run_and_follow_ends_with_the_container() {
    let t = cluster_at(1, 0.01).await;
    create_pod(
        &t,
        pod(
            "crash",
            json!({"containers": [shell("echo run started; exit 1")]}),
        ),
    )
    .await;
    eventually(&t, &pod_path("crash"), "the container restarted", |p| {
        p["status"]["containerStatuses"][0]["restartCount"]
            .as_u64()
            .is_some_and(|n| n >= 1)
    })
    .await;
    let kubectl = Kubectl::for_server(&t);
    let previous = kubectl.ok(&["logs", "crash", "--previous"]).await;
    assert_eq!(previous, "run started\n");
    // `-f` on a container that writes, waits, writes and exits ends when it exits.
    create_pod(
        &t,
        pod(
            "slow",
            json!({"restartPolicy": "Never", "containers": [shell("echo first; sleep 0.5; echo second")]}),
        ),
    )
    .await;
    eventually(&t, &pod_path("slow"), "the container started", |p| {
        p["status"]["containerStatuses"][0]["state"]["running"].is_object()
            || p["status"]["phase"] == "Succeeded"
    })
    .await;
    let followed = kubectl.ok(&["logs", "-f", "slow"]).await;
    assert_eq!(followed, "first\nsecond\n");
    // Deleted, the Pod's logs go with it: a new Pod of that name starts empty.
    kubectl
        .ok(&["delete", "pod", "slow", "--wait=true", "--timeout=20s"])
        .await;
    create_pod(
        &t,
        pod(
            "slow",
            json!({"restartPolicy": "Never", "containers": [shell("echo again")]}),
        ),
    )
    .await;
    eventually(&t, &pod_path("slow"), "the new Pod succeeds", |p| {
        p["status"]["phase"] == "Succeeded"
    })
    .await;
    assert_eq!(kubectl.ok(&["logs", "slow"]).await, "again\n");
}

#[tokio::test]
async fn kubectl_logs_of_a_job_shows_its_pods_output() {
    let t = cluster(2).await;
    let kubectl = Kubectl::for_server(&t);
    kubectl
        .ok(&[
            "create",
            "job",
            "hello",
            "--image=busybox",
            "--",
            "sh",
            "-c",
            "echo hello from $HOSTNAME; echo done",
        ])
        .await;
    kubectl
        .ok(&[
            "wait",
            "--for=condition=complete",
            "job/hello",
            "--timeout=20s",
        ])
        .await;
    let pod_name = kubectl
        .ok(&[
            "get",
            "pods",
            "-l",
            "job-name=hello",
            "-o",
            "jsonpath={.items[0].metadata.name}",
        ])
        .await;
    assert!(pod_name.starts_with("hello-"), "{pod_name}");
    let log = kubectl.ok(&["logs", "job/hello"]).await;
    assert_eq!(log, format!("hello from {pod_name}\ndone\n"));
}

#[tokio::test]
async fn kubectl_exec_runs_sh_scripts_in_a_running_pod() {
    let t = cluster(1).await;
    create_pod(
        &t,
        pod(
            "shell",
            json!({"containers": [shell("while true; do sleep 1; done")]}),
        ),
    )
    .await;
    eventually(&t, &pod_path("shell"), "the Pod runs", |p| {
        p["status"]["phase"] == "Running"
    })
    .await;
    let kubectl = Kubectl::for_server(&t);
    let output = kubectl
        .run(&[
            "exec",
            "shell",
            "--",
            "sh",
            "-c",
            "if true; then echo \"$GREETING from $HOSTNAME\"; fi; exit 3",
        ])
        .await;
    assert_eq!(output.status.code(), Some(3));
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "hello from shell\n"
    );
    let refused = kubectl
        .run(&["exec", "shell", "--", "sh", "-c", "echo a > /tmp/file"])
        .await;
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("redirections"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
}
