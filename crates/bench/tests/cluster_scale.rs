//! The simulated-cluster benchmark at a tiny size (a few seconds): the runner starts its
//! server process, creates Pods over HTTP, sees them all Running through its informer,
//! and the informer's cache matches the server's list.

use std::process::Command;

#[test]
fn the_cluster_scenario_runs_pods_and_keeps_the_informer_in_sync() {
    let output = Command::new(env!("CARGO_BIN_EXE_kubeclient-bench"))
        .args([
            "--cluster",
            "--nodes",
            "3",
            "--pods",
            "60",
            "--concurrency",
            "4",
        ])
        .args(["--hold-seconds", "1"])
        .output()
        .expect("the runner starts");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the scenario failed:\n{stdout}\n{stderr}"
    );
    assert!(
        stdout.contains("| Pods created | 60 in"),
        "every Pod created:\n{stdout}"
    );
    assert!(
        stdout.contains("| Pods Running (seen by the informer) | 60 in"),
        "every Pod Running:\n{stdout}"
    );
    assert!(
        stdout.contains("60 Pods cached, server lists 60; 0 list/watch errors"),
        "the informer in sync:\n{stdout}"
    );
}
