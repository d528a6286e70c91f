//! Authentication against the embedded server: TLS with its CA plus a token, client
//! certificates, exec plugins, rotated token files.

use k8s_openapi::api::core::v1::Namespace;
use kubeclient::config::{ClientIdentity, Credentials, ExecConfig, ExecEnvVar};
use kubeclient::{Api, Client, ListParams};
use kubeclient_apiserver::ApiServer;

use crate::support::{config_of, scratch, start_with};

fn plugin() -> String {
    crate::support::manifest_dir()
        .join("tests/it/fixtures/exec-plugin.sh")
        .display()
        .to_string()
}

async fn namespace_count(client: &Client) -> kubeclient::Result<usize> {
    Ok(Api::<Namespace>::all(client.clone())
        .list(&ListParams::default())
        .await?
        .items
        .len())
}

#[tokio::test]
async fn tls_with_the_servers_ca_and_a_bearer_token() {
    let f = start_with(ApiServer::builder().tls(true).token("s3cret")).await;
    assert!(f.client.base_url().starts_with("https://"));
    assert_eq!(namespace_count(&f.client).await.unwrap(), 4);

    let mut anonymous = config_of(&f.server);
    anonymous.credentials = Credentials::None;
    let err = namespace_count(&Client::new(anonymous).await.unwrap())
        .await
        .unwrap_err();
    assert!(err.api().unwrap().is_unauthorized(), "{err}");

    let mut untrusted = config_of(&f.server);
    untrusted.root_certificates_pem = ApiServer::builder()
        .tls(true)
        .start()
        .await
        .unwrap()
        .ca_certificate_pem()
        .unwrap()
        .as_bytes()
        .to_vec();
    let err = namespace_count(&Client::new(untrusted).await.unwrap())
        .await
        .unwrap_err();
    assert!(
        matches!(err, kubeclient::Error::Transport { .. }),
        "a server certificate from another CA is refused: {err}"
    );
}

#[tokio::test]
async fn a_client_certificate_user() {
    let f = start_with(ApiServer::builder().tls(true).token("s3cret")).await;
    let pair = f
        .server
        .issue_client_certificate("alice", &["dev"])
        .unwrap()
        .unwrap();
    let mut config = config_of(&f.server);
    config.credentials = Credentials::None;
    config.client_identity = Some(ClientIdentity {
        certificate_pem: pair.certificate_pem.into_bytes(),
        key_pem: pair.key_pem.into_bytes(),
    });
    assert!(
        !format!("{config:?}").contains("PRIVATE KEY"),
        "keys never appear in Debug"
    );
    assert_eq!(
        namespace_count(&Client::new(config).await.unwrap())
            .await
            .unwrap(),
        4
    );
}

#[tokio::test]
async fn an_exec_plugin_is_cached_and_refreshed_after_a_401() {
    let f = start_with(ApiServer::builder().token("s3cret")).await;
    let count_file = scratch("exec").join("count");
    let mut config = config_of(&f.server);
    config.credentials = Credentials::Exec(Box::new(ExecConfig {
        api_version: Some("client.authentication.k8s.io/v1".to_owned()),
        command: plugin(),
        env: vec![
            ExecEnvVar {
                name: "COUNT_FILE".to_owned(),
                value: count_file.display().to_string(),
            },
            ExecEnvVar {
                name: "GOOD_TOKEN".to_owned(),
                value: "s3cret".to_owned(),
            },
        ],
        ..ExecConfig::default()
    }));
    let client = Client::new(config).await.unwrap();
    assert_eq!(
        namespace_count(&client).await.unwrap(),
        4,
        "the 401 from the first token triggers a refresh"
    );
    assert_eq!(namespace_count(&client).await.unwrap(), 4);
    let runs = std::fs::read_to_string(&count_file).unwrap();
    assert_eq!(
        runs.trim(),
        "2",
        "run once, refreshed once after the 401, then cached"
    );
}

#[tokio::test]
async fn a_missing_exec_plugin_names_the_command_and_the_install_hint() {
    let f = start_with(ApiServer::builder().token("s3cret")).await;
    let mut config = config_of(&f.server);
    config.credentials = Credentials::Exec(Box::new(ExecConfig {
        command: "kubeclient-no-such-plugin".to_owned(),
        install_hint: Some("install it from example.com".to_owned()),
        ..ExecConfig::default()
    }));
    let err = namespace_count(&Client::new(config).await.unwrap())
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("kubeclient-no-such-plugin") && err.contains("install it from example.com"),
        "{err}"
    );
}

#[tokio::test]
async fn a_rotated_token_file_is_read_again() {
    let f = start_with(ApiServer::builder().token("s3cret")).await;
    let token_file = scratch("token").join("token");
    std::fs::write(&token_file, "old-token\n").unwrap();
    let mut config = config_of(&f.server);
    config.credentials = Credentials::TokenFile(token_file.clone());
    let client = Client::new(config).await.unwrap();
    assert!(
        namespace_count(&client)
            .await
            .unwrap_err()
            .api()
            .unwrap()
            .is_unauthorized()
    );
    std::fs::write(&token_file, "s3cret\n").unwrap();
    assert_eq!(namespace_count(&client).await.unwrap(), 4);
}
