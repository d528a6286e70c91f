//! The kubeconfig the server writes: mode 0600, through a new file renamed into place
//! (issue 12).

use crate::support::TestServer;
use kubeclient_apiserver::ApiServer;

const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

#[cfg(unix)]
#[tokio::test]
async fn kubeconfig_is_written_0600_and_a_planted_symlink_is_replaced_not_followed() {
    use std::os::unix::fs::PermissionsExt;
    let t = TestServer::start_with(ApiServer::builder().token("s3cret")).await;
    let dir = std::env::temp_dir().join(format!("kubeclient-kubeconfig-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let victim = dir.join("victim");
    std::fs::write(&victim, "precious").unwrap();
    let path = dir.join("kubeconfig");
    std::os::unix::fs::symlink(&victim, &path).unwrap();
    t.server.write_kubeconfig(&path).unwrap();
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    let metadata = std::fs::symlink_metadata(&path).unwrap();
    assert!(
        metadata.file_type().is_file(),
        "the link was replaced by a file"
    );
    assert_eq!(metadata.permissions().mode() & 0o777, 0o600);
    assert!(
        std::fs::read_to_string(&path)
            .unwrap()
            .contains("token: s3cret")
    );
    let leftovers = std::fs::read_dir(&dir).unwrap().count();
    assert_eq!(leftovers, 2, "no temporary file left behind");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_server_side_applies_creating_one_object_all_succeed_instead_of_already_exists()
{
    let t = std::sync::Arc::new(TestServer::start().await);
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..8 {
        let t = t.clone();
        tasks.spawn(async move {
            // Enough data that computing the apply takes a while: the creates overlap.
            let data: String = (0..3000).map(|k| format!("  k{k}: \"{i}\"\n")).collect();
            let body =
                format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: raced\ndata:\n{data}");
            t.patch(
                &format!("{CONFIGMAPS}/raced?fieldManager=demo&force=true"),
                "application/apply-patch+yaml",
                &body,
            )
            .await
        });
    }
    while let Some(reply) = tasks.join_next().await {
        let reply = reply.unwrap();
        assert!(
            reply.status == 200 || reply.status == 201,
            "{}: {}",
            reply.status,
            String::from_utf8_lossy(&reply.body)
        );
    }
}
