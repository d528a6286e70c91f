//! The official Python client (`pip install kubernetes`) against the server.

use std::time::Duration;

use kubeclient_apiserver::ApiServer;

use crate::kubectl::scratch_dir;
use crate::support::TestServer;

fn scenarios() -> String {
    crate::support::manifest_dir()
        .join("tests/python/client_scenarios.py")
        .display()
        .to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn python_client_scenarios_pass() {
    let t = TestServer::start_with(ApiServer::builder().enable_admin_faults(true)).await;
    let dir = scratch_dir("python");
    let kubeconfig = dir.join("kubeconfig");
    t.server
        .write_kubeconfig(&kubeconfig)
        .expect("write the kubeconfig");
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let output = tokio::time::timeout(
        Duration::from_secs(120),
        tokio::process::Command::new(&python)
            .arg(scenarios())
            .env("KUBECONFIG", &kubeconfig)
            .env("KUBECLIENT_URL", t.server.url())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("the Python scenarios finish within 120 s")
    .unwrap_or_else(|err| panic!("{python} runs: {err}"));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "Python scenarios failed (is `pip install kubernetes` done?)\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    for scenario in [
        "pagination",
        "watch_resume",
        "expired_after_compaction",
        "stale_update_conflict",
    ] {
        assert!(
            stdout.contains(&format!("ok {scenario}")),
            "{scenario} ran:\n{stdout}"
        );
    }
}
