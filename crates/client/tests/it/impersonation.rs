//! Impersonation (client-go's `rest.Config.Impersonate`, a kubeconfig user's `as`): a
//! client acting as a ServiceAccount against the embedded server in RBAC mode may do only
//! what that account was granted, over plain requests, watches and exec.

use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret};
use k8s_openapi::api::rbac::v1::{PolicyRule, Role, RoleBinding, RoleRef, Subject};
use kubeclient::api::AttachParams;
use kubeclient::config::{Impersonation, Kubeconfig, KubeconfigOptions};
use kubeclient::{Api, Client, Config, ListParams, PostParams};
use kubeclient_apiserver::{ApiServer, AuthorizationMode};

use crate::support::{config_of, start_with};

const BOT: &str = "system:serviceaccount:default:bot";

async fn grant_config_map_reading(admin: &Client) {
    let mut role = Role::default();
    role.metadata.name = Some("reader".into());
    role.rules = Some(vec![PolicyRule {
        api_groups: Some(vec![String::new()]),
        resources: Some(vec!["configmaps".into()]),
        verbs: vec!["get".into(), "list".into(), "watch".into()],
        ..PolicyRule::default()
    }]);
    Api::<Role>::namespaced(admin.clone(), "default")
        .create(&PostParams::default(), &role)
        .await
        .expect("the role");
    let mut binding = RoleBinding::default();
    binding.metadata.name = Some("bot-reads".into());
    binding.role_ref = RoleRef {
        api_group: Some("rbac.authorization.k8s.io".to_owned()),
        kind: "Role".into(),
        name: "reader".into(),
    };
    binding.subjects = Some(vec![Subject {
        kind: "ServiceAccount".into(),
        name: "bot".into(),
        namespace: Some("default".into()),
        ..Subject::default()
    }]);
    Api::<RoleBinding>::namespaced(admin.clone(), "default")
        .create(&PostParams::default(), &binding)
        .await
        .expect("the binding");
}

#[tokio::test]
async fn a_client_acting_as_a_service_account_gets_only_its_grants() {
    let fixture =
        start_with(ApiServer::builder().authorization_mode(AuthorizationMode::Rbac)).await;
    let mut config = config_of(&fixture.server);
    config.impersonate = Some(Impersonation::user(BOT));
    let bot = Client::new(config).await.expect("a client");

    let maps: Api<ConfigMap> = Api::namespaced(bot.clone(), "default");
    let refused = maps.list(&ListParams::default()).await.unwrap_err();
    assert!(refused.is_forbidden(), "{refused}");
    assert!(
        refused.to_string().contains(&format!(
            r#"User "{BOT}" cannot list resource "configmaps""#
        )),
        "{refused}"
    );

    grant_config_map_reading(&fixture.client).await;
    assert!(maps.list(&ListParams::default()).await.is_ok());
    let secrets: Api<Secret> = Api::namespaced(bot.clone(), "default");
    assert!(
        secrets
            .list(&ListParams::default())
            .await
            .unwrap_err()
            .is_forbidden()
    );
    let pods: Api<Pod> = Api::namespaced(fixture.client.clone(), "default");
    pods.create(
        &PostParams::default(),
        &serde_json::from_value(serde_json::json!({
            "metadata": {"name": "web"}, "spec": {"containers": [{"name": "main", "image": "x"}]}}))
        .expect("a pod"),
    )
    .await
    .expect("the administrator creates the pod");
    let bot_pods: Api<Pod> = Api::namespaced(bot, "default");
    let exec = bot_pods
        .exec("web", ["echo", "hi"], &AttachParams::default())
        .await
        .map(|_| ())
        .unwrap_err();
    assert!(
        exec.to_string().contains("403") || exec.to_string().contains("forbidden"),
        "exec upgrades carry the headers too: {exec}"
    );
}

#[test]
fn a_kubeconfig_user_with_as_impersonates() {
    let kubeconfig = Kubeconfig::from_yaml(
        r#"
apiVersion: v1
kind: Config
current-context: c
contexts: [{name: c, context: {cluster: k, user: u}}]
clusters: [{name: k, cluster: {server: "http://127.0.0.1:1"}}]
users:
- name: u
  user:
    token: t
    as: alice
    as-groups: [dev]
    as-user-extra: {team: [a]}
"#,
    )
    .expect("a kubeconfig");
    let config =
        Config::from_kubeconfig(&kubeconfig, &KubeconfigOptions::default()).expect("a config");
    let impersonate = config.impersonate.expect("impersonation");
    assert_eq!(impersonate.user, "alice");
    assert_eq!(impersonate.groups, ["dev"]);
    assert_eq!(
        impersonate.extra.get("team").map(Vec::as_slice),
        Some(&["a".to_owned()][..])
    );

    let groups_only = Kubeconfig::from_yaml(
        r#"
apiVersion: v1
kind: Config
current-context: c
contexts: [{name: c, context: {cluster: k, user: u}}]
clusters: [{name: k, cluster: {server: "http://127.0.0.1:1"}}]
users: [{name: u, user: {as-groups: [dev]}}]
"#,
    )
    .expect("a kubeconfig");
    let err = Config::from_kubeconfig(&groups_only, &KubeconfigOptions::default()).unwrap_err();
    assert!(err.to_string().contains("users[u].as"), "{err}");
}
