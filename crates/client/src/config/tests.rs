//! Kubeconfig shapes from real tools, merging and precedence, in-cluster configuration.

use std::path::PathBuf;

use super::*;

fn scratch(label: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("kubeclient-config-{}-{label}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

const EKS: &str = r#"
apiVersion: v1
kind: Config
clusters:
- cluster:
    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUMKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo=
    server: https://ABCDEF0123456789.gr7.us-west-2.eks.amazonaws.com
  name: arn:aws:eks:us-west-2:123456789012:cluster/prod
contexts:
- context:
    cluster: arn:aws:eks:us-west-2:123456789012:cluster/prod
    user: arn:aws:eks:us-west-2:123456789012:cluster/prod
  name: arn:aws:eks:us-west-2:123456789012:cluster/prod
current-context: arn:aws:eks:us-west-2:123456789012:cluster/prod
preferences: {}
users:
- name: arn:aws:eks:us-west-2:123456789012:cluster/prod
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: aws
      args: [--region, us-west-2, eks, get-token, --cluster-name, prod, --output, json]
      env:
      - name: AWS_PROFILE
        value: prod
      interactiveMode: IfAvailable
      provideClusterInfo: false
"#;

const GKE: &str = r#"
apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUMKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo=
    server: https://34.1.2.3
  name: gke_proj_us-central1_web
contexts:
- context:
    cluster: gke_proj_us-central1_web
    user: gke_proj_us-central1_web
  name: gke_proj_us-central1_web
current-context: gke_proj_us-central1_web
kind: Config
preferences: {}
users:
- name: gke_proj_us-central1_web
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: gke-gcloud-auth-plugin
      installHint: Install gke-gcloud-auth-plugin for use with kubectl by following
        https://cloud.google.com/kubernetes-engine/docs/how-to/cluster-access-for-kubectl#install_plugin
      provideClusterInfo: true
"#;

const KIND: &str = r#"
apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUMKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo=
    server: https://127.0.0.1:35213
  name: kind-kind
contexts:
- context:
    cluster: kind-kind
    user: kind-kind
  name: kind-kind
current-context: kind-kind
kind: Config
preferences: {}
users:
- name: kind-kind
  user:
    client-certificate-data: Y2VydA==
    client-key-data: a2V5
"#;

const MINIKUBE: &str = r#"
apiVersion: v1
clusters:
- cluster:
    certificate-authority: ca.crt
    extensions:
    - extension: {provider: minikube.sigs.k8s.io, version: v1.33.0}
      name: cluster_info
    server: https://192.168.49.2:8443
  name: minikube
contexts:
- context:
    cluster: minikube
    namespace: default
    user: minikube
  name: minikube
current-context: minikube
kind: Config
preferences: {}
users:
- name: minikube
  user:
    client-certificate: profiles/minikube/client.crt
    client-key: profiles/minikube/client.key
"#;

#[test]
fn eks_exec_plugin_config_is_read() {
    let config = Config::from_kubeconfig(
        &Kubeconfig::from_yaml(EKS).unwrap(),
        &KubeconfigOptions::default(),
    )
    .unwrap();
    assert_eq!(
        config.cluster_url.host(),
        Some("ABCDEF0123456789.gr7.us-west-2.eks.amazonaws.com")
    );
    let Credentials::Exec(exec) = &config.credentials else {
        panic!("expected exec, got {:?}", config.credentials)
    };
    assert_eq!(exec.command, "aws");
    assert_eq!(exec.args[2], "eks");
    assert_eq!(exec.env[0].name, "AWS_PROFILE");
    assert_eq!(
        exec.api_version.as_deref(),
        Some("client.authentication.k8s.io/v1beta1")
    );
    assert!(
        String::from_utf8(config.root_certificates_pem)
            .unwrap()
            .starts_with("-----BEGIN CERTIFICATE-----")
    );
}

#[test]
fn gke_plugin_config_asks_for_cluster_info() {
    let config = Config::from_kubeconfig(
        &Kubeconfig::from_yaml(GKE).unwrap(),
        &KubeconfigOptions::default(),
    )
    .unwrap();
    let Credentials::Exec(exec) = &config.credentials else {
        panic!("expected exec")
    };
    assert!(exec.provide_cluster_info);
    assert!(
        exec.install_hint
            .as_deref()
            .unwrap()
            .contains("gke-gcloud-auth-plugin")
    );
}

#[test]
fn kind_client_certificate_data_becomes_the_client_identity() {
    let config = Config::from_kubeconfig(
        &Kubeconfig::from_yaml(KIND).unwrap(),
        &KubeconfigOptions::default(),
    )
    .unwrap();
    let identity = config.client_identity.as_ref().unwrap();
    assert_eq!(
        (
            identity.certificate_pem.as_slice(),
            identity.key_pem.as_slice()
        ),
        (b"cert".as_slice(), b"key".as_slice())
    );
    assert_eq!(config.credentials, Credentials::None);
    assert!(
        !format!("{config:?}").contains("key\""),
        "the key never shows in Debug"
    );
}

#[test]
fn minikube_certificate_files_resolve_relative_to_the_kubeconfig() {
    let dir = scratch("minikube");
    std::fs::create_dir_all(dir.join("profiles/minikube")).unwrap();
    std::fs::write(dir.join("ca.crt"), "CA").unwrap();
    std::fs::write(dir.join("profiles/minikube/client.crt"), "CRT").unwrap();
    std::fs::write(dir.join("profiles/minikube/client.key"), "KEY").unwrap();
    std::fs::write(dir.join("config"), MINIKUBE).unwrap();
    let kubeconfig = Kubeconfig::read_from(dir.join("config")).unwrap();
    let config = Config::from_kubeconfig(&kubeconfig, &KubeconfigOptions::default()).unwrap();
    assert_eq!(config.root_certificates_pem, b"CA");
    assert_eq!(config.client_identity.unwrap().key_pem, b"KEY");
    assert_eq!(config.default_namespace, "default");
}

#[test]
fn kubeconfig_list_merges_with_the_first_file_winning() {
    let dir = scratch("merge");
    std::fs::write(
        dir.join("a"),
        KIND.replace("https://127.0.0.1:35213", "https://first:1"),
    )
    .unwrap();
    std::fs::write(
        dir.join("b"),
        format!(
            "{}\n",
            KIND.replace("https://127.0.0.1:35213", "https://second:2")
                .replace("current-context: kind-kind", "current-context: other")
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("c"),
        MINIKUBE.replace(
            "certificate-authority: ca.crt",
            "insecure-skip-tls-verify: true",
        ),
    )
    .unwrap();
    let list = std::env::join_paths([
        dir.join("missing"),
        dir.join("a"),
        dir.join("b"),
        dir.join("c"),
    ])
    .unwrap();
    let merged = Kubeconfig::from_locations(Some(&list), None)
        .unwrap()
        .unwrap();
    assert_eq!(
        merged.current_context.as_deref(),
        Some("kind-kind"),
        "the first current-context wins"
    );
    assert_eq!(
        merged.clusters.len(),
        2,
        "kind-kind from a (not b), minikube from c"
    );
    let kind = merged
        .clusters
        .iter()
        .find(|c| c.name == "kind-kind")
        .unwrap();
    assert_eq!(
        kind.cluster.as_ref().unwrap().server.as_deref(),
        Some("https://first:1")
    );
    assert_eq!(merged.sources.len(), 3, "the missing file is skipped");
    let minikube = Config::from_kubeconfig(
        &merged,
        &KubeconfigOptions {
            context: Some("minikube".into()),
            ..KubeconfigOptions::default()
        },
    );
    // minikube's client certificate files are relative to c's directory, which has none.
    let err = minikube.unwrap_err().to_string();
    assert!(
        err.contains("users[minikube].client-certificate") && err.contains("cannot read"),
        "{err}"
    );
}

#[test]
fn without_kubeconfig_env_the_home_config_is_used() {
    let home = scratch("home");
    std::fs::create_dir_all(home.join(".kube")).unwrap();
    std::fs::write(home.join(".kube/config"), KIND).unwrap();
    let found = Kubeconfig::from_locations(None, Some(&home))
        .unwrap()
        .unwrap();
    assert_eq!(found.current_context.as_deref(), Some("kind-kind"));
    assert!(
        Kubeconfig::from_locations(None, Some(&scratch("empty-home")))
            .unwrap()
            .is_none()
    );
}

#[test]
fn context_override_and_missing_entries_give_clear_errors() {
    let kubeconfig = Kubeconfig::from_yaml(KIND).unwrap();
    let err = Config::from_kubeconfig(
        &kubeconfig,
        &KubeconfigOptions {
            context: Some("prod".into()),
            ..Default::default()
        },
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "the kubeconfig: context \"prod\" not found (known: kind-kind); check the name or run `kubectl config get-contexts`"
    );
    let no_current = Kubeconfig::from_yaml("apiVersion: v1\nkind: Config\n").unwrap();
    assert!(matches!(
        Config::from_kubeconfig(&no_current, &KubeconfigOptions::default()),
        Err(ConfigError::NoCurrentContext { .. })
    ));
    let bad_base64 = KIND.replace("Y2VydA==", "not*base64");
    let err = Config::from_kubeconfig(
        &Kubeconfig::from_yaml(&bad_base64).unwrap(),
        &KubeconfigOptions::default(),
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("users[kind-kind].client-certificate-data: not valid base64"),
        "{err}"
    );
    let no_server = KIND.replace("server: https://127.0.0.1:35213", "server: \"\"");
    let err = Config::from_kubeconfig(
        &Kubeconfig::from_yaml(&no_server).unwrap(),
        &KubeconfigOptions::default(),
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("clusters[kind-kind].server: missing"),
        "{err}"
    );
}

#[test]
fn unreadable_and_malformed_files_name_the_file() {
    let dir = scratch("bad");
    std::fs::write(dir.join("config"), "clusters: {not: [a list").unwrap();
    let err = Kubeconfig::read_from(dir.join("config"))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(&dir.join("config").display().to_string()),
        "{err}"
    );
    let err = Kubeconfig::read_from(dir.join("absent"))
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("cannot read kubeconfig"), "{err}");
}

#[test]
fn tokens_and_token_files_and_basic_auth() {
    let with = |user: &str| {
        let yaml = KIND.replace(
            "    client-certificate-data: Y2VydA==\n    client-key-data: a2V5\n",
            user,
        );
        Config::from_kubeconfig(
            &Kubeconfig::from_yaml(&yaml).unwrap(),
            &KubeconfigOptions::default(),
        )
        .unwrap()
        .credentials
    };
    assert_eq!(with("    token: abc\n"), Credentials::Token("abc".into()));
    assert_eq!(
        with("    tokenFile: /var/token\n"),
        Credentials::TokenFile("/var/token".into())
    );
    assert_eq!(
        with("    username: u\n    password: p\n"),
        Credentials::Basic {
            username: "u".into(),
            password: "p".into()
        }
    );
    assert_eq!(
        format!("{:?}", with("    token: abc\n")),
        "Token(<redacted>)"
    );
}

#[test]
fn in_cluster_config_reads_the_service_account() {
    let dir = scratch("sa");
    std::fs::write(dir.join("token"), "t0k3n").unwrap();
    std::fs::write(dir.join("ca.crt"), "CA").unwrap();
    std::fs::write(dir.join("namespace"), "prod\n").unwrap();
    let config = Config::incluster_from("10.96.0.1", "443", &dir).unwrap();
    assert_eq!(config.cluster_url.to_string(), "https://10.96.0.1:443/");
    assert_eq!(config.default_namespace, "prod");
    assert_eq!(
        config.credentials,
        Credentials::TokenFile(dir.join("token"))
    );
    let v6 = Config::incluster_from("fd00::1", "443", &dir).unwrap();
    assert_eq!(v6.cluster_url.host(), Some("[fd00::1]"));
    assert!(Config::incluster_from("h", "1", &scratch("no-sa")).is_err());
}

use proptest::strategy::Strategy as _;

proptest::proptest! {
    /// Fuzzing: no kubeconfig text, however broken, panics the loader or the resolver.
    #[test]
    fn fuzz_kubeconfig_yaml_never_panics(
        text in proptest::prop_oneof![
            "\\PC{0,200}",
            proptest::collection::vec(
                proptest::sample::select(vec!["apiVersion: v1\n", "clusters:\n", "- cluster:\n", "    server: ", "https://x\n", "contexts:\n", "- context:\n", "    cluster: a\n", "  name: a\n", "users:\n", "- user:\n", "    token: t\n", "current-context: a\n", "    exec:\n", "      command: x\n", "{", "[", "&a ", "*a\n", ": ", "\t", "- ", "'", "\""]),
                0..40,
            ).prop_map(|parts| parts.concat()),
        ]
    ) {
        if let Ok(kubeconfig) = Kubeconfig::from_yaml(&text) {
            let _ = Config::from_kubeconfig(&kubeconfig, &KubeconfigOptions::default());
        }
    }

    /// Fuzzing: no exec plugin output, however broken, panics the parser; an accepted
    /// credential always carries a token or a client certificate.
    #[test]
    fn fuzz_exec_plugin_output_never_panics(
        text in proptest::prop_oneof![
            "\\PC{0,200}",
            proptest::collection::vec(
                proptest::sample::select(vec!["{", "}", "[", "]", ",", ":", "\"kind\"", "\"ExecCredential\"", "\"status\"", "\"token\"", "\"t\"", "\"expirationTimestamp\"", "\"2026-01-01T00:00:00Z\"", "\"clientCertificateData\"", "null", "1e999", "\"\\ud800\""]),
                0..30,
            ).prop_map(|parts| parts.concat()),
        ]
    ) {
        if let Ok(credential) = crate::config::exec::parse_exec_output("plugin", text.as_bytes()) {
            proptest::prop_assert!(credential.token.is_some() || credential.client_certificate_data.is_some());
            let _ = credential.expires_at();
        }
    }
}
