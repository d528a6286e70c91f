//! The real kubectl against the server: `KUBECTL`, else kubectl 1.33 beside the `kubectl` on PATH, else that one.

use std::path::PathBuf;
use std::process::Output;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::io::AsyncBufReadExt;

use crate::support::TestServer;

static NEXT_DIR: AtomicUsize = AtomicUsize::new(0);

/// A fresh directory for one test's kubeconfig and kubectl cache.
pub(crate) fn scratch_dir(label: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "kubeclient-it-{}-{label}-{}",
        std::process::id(),
        NEXT_DIR.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).expect("create a scratch directory");
    dir
}

pub(crate) struct Kubectl {
    binary: std::path::PathBuf,
    kubeconfig: PathBuf,
    cache: PathBuf,
    dir: PathBuf,
}

impl Kubectl {
    pub(crate) fn for_server(t: &TestServer) -> Self {
        let dir = scratch_dir("kubectl");
        let kubeconfig = dir.join("kubeconfig");
        t.server
            .write_kubeconfig(&kubeconfig)
            .expect("write the kubeconfig");
        let binary =
            kubeclient_apiserver::testing::kubectl_binary().unwrap_or_else(|why| panic!("{why}"));
        Kubectl {
            binary,
            kubeconfig,
            cache: dir.join("cache"),
            dir,
        }
    }

    /// Another kubectl build beside the one found (`kubectl.1.27` ...), if there is one.
    pub(crate) fn other_version(&self, name: &str) -> Option<Self> {
        let binary = std::fs::canonicalize(&self.binary)
            .ok()?
            .parent()?
            .join(name);
        binary.is_file().then(|| Kubectl {
            binary,
            kubeconfig: self.kubeconfig.clone(),
            cache: self.dir.join(format!("cache-{name}")),
            dir: self.dir.clone(),
        })
    }

    /// The full command line (binary and arguments) kubectl runs with for `args`.
    pub(crate) fn argv(&self, args: &[&str]) -> Vec<String> {
        let mut argv = vec![
            self.binary.display().to_string(),
            format!("--kubeconfig={}", self.kubeconfig.display()),
            format!("--cache-dir={}", self.cache.display()),
        ];
        argv.extend(args.iter().map(|a| (*a).to_owned()));
        argv
    }

    pub(crate) fn command(&self, args: &[&str]) -> tokio::process::Command {
        let mut command = tokio::process::Command::new(&self.binary);
        command
            .arg(format!("--kubeconfig={}", self.kubeconfig.display()))
            .arg(format!("--cache-dir={}", self.cache.display()))
            .args(args)
            .kill_on_drop(true);
        command
    }

    pub(crate) async fn run(&self, args: &[&str]) -> Output {
        tokio::time::timeout(Duration::from_secs(60), self.command(args).output())
            .await
            .unwrap_or_else(|_| panic!("kubectl {args:?} finished within 60 s"))
            .expect("kubectl runs")
    }

    /// Runs and requires success; returns stdout.
    pub(crate) async fn ok(&self, args: &[&str]) -> String {
        let output = self.run(args).await;
        assert!(
            output.status.success(),
            "kubectl {args:?} failed:\nstdout: {}\nstderr: {}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    pub(crate) fn write(&self, name: &str, contents: &str) -> String {
        let path = self.dir.join(name);
        std::fs::write(&path, contents).expect("write a manifest");
        path.display().to_string()
    }
}

const MANIFEST: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wd]}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
    additionalPrinterColumns:
    - {name: Size, type: integer, jsonPath: .spec.size}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: app-config, namespace: default}
data: {mode: fast}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default, labels: {app: web}}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: web, image: "nginx:1"}
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: w1, namespace: default}
spec: {size: 3}
"#;

#[tokio::test(flavor = "multi_thread")]
async fn api_resources_and_version_work() {
    let t = TestServer::start().await;
    let kubectl = Kubectl::for_server(&t);
    let resources = kubectl.ok(&["api-resources"]).await;
    for expected in [
        "deployments",
        "configmaps",
        "customresourcedefinitions",
        "leases",
    ] {
        assert!(
            resources.contains(expected),
            "api-resources lists {expected}:\n{resources}"
        );
    }
    assert!(
        kubectl
            .ok(&["version", "-o", "json"])
            .await
            .contains("\"gitVersion\"")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn apply_of_a_manifest_with_a_crd_and_a_custom_resource() {
    let t = TestServer::start().await;
    let kubectl = Kubectl::for_server(&t);
    let manifest = kubectl.write("manifest.yaml", MANIFEST);
    // Like against a real cluster, kubectl maps every document before the CRD exists, so
    // the first apply creates the CRD and reports the Widget as unknown; the second applies it.
    let first = kubectl.run(&["apply", "-f", &manifest]).await;
    if !first.status.success() {
        let stderr = String::from_utf8_lossy(&first.stderr);
        assert!(
            stderr.contains("ensure CRDs are installed first"),
            "unexpected apply failure: {stderr}"
        );
    }
    let second = kubectl.ok(&["apply", "-f", &manifest]).await;
    assert!(second.contains("widget.example.com/w1"), "{second}");
    let widgets = kubectl.ok(&["get", "wd"]).await;
    // Exactly the CRD's columns after the name: apiextensions-apiserver adds `Age` only
    // to CRDs that name no columns.
    let header: Vec<&str> = widgets
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(header, ["NAME", "SIZE"], "{widgets}");
    assert!(widgets.contains("w1"), "{widgets}");
    let yaml = kubectl
        .ok(&["get", "deployment", "web", "-o", "yaml"])
        .await;
    assert!(
        yaml.contains("image: nginx:1") && yaml.contains("generation: 1"),
        "{yaml}"
    );
    // Re-applying a changed manifest sends a strategic merge patch.
    let changed = kubectl.write("changed.yaml", &MANIFEST.replace("nginx:1", "nginx:2"));
    kubectl.ok(&["apply", "-f", &changed]).await;
    let image = kubectl
        .ok(&[
            "get",
            "deployment",
            "web",
            "-o",
            "jsonpath={.spec.template.spec.containers[0].image} {.metadata.generation}",
        ])
        .await;
    assert_eq!(image, "nginx:2 2");
}

#[tokio::test(flavor = "multi_thread")]
async fn label_and_every_patch_type() {
    let t = TestServer::start().await;
    let kubectl = Kubectl::for_server(&t);
    kubectl
        .ok(&[
            "apply",
            "-f",
            &kubectl.write(
                "cm.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {a: '1'}\n",
            ),
        ])
        .await;
    kubectl
        .ok(&["label", "configmap", "cm", "tier=backend"])
        .await;
    kubectl
        .ok(&[
            "patch",
            "configmap",
            "cm",
            "--type=json",
            "-p",
            r#"[{"op":"add","path":"/data/j","value":"2"}]"#,
        ])
        .await;
    kubectl
        .ok(&[
            "patch",
            "configmap",
            "cm",
            "--type=merge",
            "-p",
            r#"{"data":{"m":"3"}}"#,
        ])
        .await;
    kubectl
        .ok(&[
            "patch",
            "configmap",
            "cm",
            "--type=strategic",
            "-p",
            r#"{"data":{"s":"4"}}"#,
        ])
        .await;
    let state = kubectl
        .ok(&[
            "get",
            "configmap",
            "cm",
            "-o",
            "jsonpath={.metadata.labels.tier} {.data}",
        ])
        .await;
    assert_eq!(state, r#"backend {"a":"1","j":"2","m":"3","s":"4"}"#);
    let ssa = kubectl.write(
        "ssa.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {a: 'changed'}\n",
    );
    let conflict = kubectl
        .run(&[
            "apply",
            "--server-side",
            "--field-manager=other",
            "-f",
            &ssa,
        ])
        .await;
    assert!(
        !conflict.status.success(),
        "a conflicting server-side apply fails"
    );
    assert!(String::from_utf8_lossy(&conflict.stderr).contains("conflict"));
    kubectl
        .ok(&[
            "apply",
            "--server-side",
            "--field-manager=other",
            "--force-conflicts",
            "-f",
            &ssa,
        ])
        .await;
    assert_eq!(
        kubectl
            .ok(&["get", "configmap", "cm", "-o", "jsonpath={.data.a}"])
            .await,
        "changed"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn get_watch_sees_a_later_change() {
    let t = TestServer::start().await;
    let kubectl = Kubectl::for_server(&t);
    kubectl
        .ok(&[
            "apply",
            "-f",
            &kubectl.write(
                "cm.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: first}\n",
            ),
        ])
        .await;
    let mut watcher = kubectl
        .command(&["get", "configmaps", "--watch", "--request-timeout=0"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("kubectl get -w starts");
    let stdout = watcher.stdout.take().expect("kubectl's piped stdout");
    configmap_watch_opened(&t).await;
    kubectl
        .ok(&[
            "apply",
            "-f",
            &kubectl.write(
                "cm2.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: second}\n",
            ),
        ])
        .await;
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    let mut seen = Vec::new();
    let printed_both = tokio::time::timeout(Duration::from_secs(20), async {
        while let Ok(Some(line)) = lines.next_line().await {
            seen.push(line);
            let all = seen.join("\n");
            if all.contains("first") && all.contains("second") {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(
        printed_both,
        Ok(true),
        "kubectl get -w prints both ConfigMaps; watch output:\n{}",
        seen.join("\n")
    );
    t.server.drop_watches(); // kubectl get -w exits when its stream ends
    tokio::time::timeout(Duration::from_secs(20), watcher.wait())
        .await
        .expect("kubectl get -w exits after the stream ends")
        .expect("kubectl get -w status");
}

#[tokio::test(flavor = "multi_thread")]
async fn delete_waits_for_a_finalizer_and_wait_for_delete_returns() {
    let t = TestServer::start().await;
    let kubectl = Kubectl::for_server(&t);
    let manifest =
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: held, finalizers: [example.com/hold]}\n";
    kubectl
        .ok(&["apply", "-f", &kubectl.write("held.yaml", manifest)])
        .await;
    kubectl
        .ok(&["delete", "configmap", "held", "--wait=false"])
        .await;
    let deletion = kubectl
        .ok(&[
            "get",
            "configmap",
            "held",
            "-o",
            "jsonpath={.metadata.deletionTimestamp}",
        ])
        .await;
    assert!(!deletion.is_empty(), "the object is marked for deletion");
    let waiter = kubectl
        .command(&["wait", "--for=delete", "configmap/held", "--timeout=30s"])
        .output();
    let releaser = async {
        configmap_watch_opened(&t).await;
        kubectl
            .ok(&[
                "patch",
                "configmap",
                "held",
                "--type=json",
                "-p",
                r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
            ])
            .await
    };
    let (waited, _) = tokio::join!(waiter, releaser);
    let waited = waited.expect("kubectl wait runs");
    assert!(
        waited.status.success(),
        "kubectl wait: {}",
        String::from_utf8_lossy(&waited.stderr)
    );
    let gone = kubectl.run(&["get", "configmap", "held"]).await;
    assert!(String::from_utf8_lossy(&gone.stderr).contains("NotFound"));
}

#[tokio::test(flavor = "multi_thread")]
async fn tls_with_the_generated_ca_and_a_token_or_a_client_certificate() {
    use base64::Engine as _;
    let t = TestServer::start_with(
        kubeclient_apiserver::ApiServer::builder()
            .tls(true)
            .token("s3cret"),
    )
    .await;
    assert!(t.server.url().starts_with("https://"));
    let kubectl = Kubectl::for_server(&t);
    assert!(
        kubectl
            .ok(&["get", "namespaces"])
            .await
            .contains("kube-system")
    );

    // A client certificate signed by the server's CA authenticates without the token.
    let pair = t
        .server
        .issue_client_certificate("alice", &["developers"])
        .expect("a client certificate")
        .expect("TLS is on");
    let b64 = |text: &str| base64::engine::general_purpose::STANDARD.encode(text);
    let ca = t.server.ca_certificate_pem().expect("a CA");
    let kubeconfig = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {}\n    certificate-authority-data: {}\ncontexts:\n- name: c\n  context: {{cluster: c, user: alice}}\ncurrent-context: c\nusers:\n- name: alice\n  user:\n    client-certificate-data: {}\n    client-key-data: {}\n",
        t.server.url(),
        b64(ca),
        b64(&pair.certificate_pem),
        b64(&pair.key_pem)
    );
    let path = kubectl.write("cert-kubeconfig", &kubeconfig);
    let output = kubectl
        .run(&[&format!("--kubeconfig={path}"), "get", "namespaces"])
        .await;
    assert!(
        output.status.success(),
        "client certificate auth: {}",
        String::from_utf8_lossy(&output.stderr)
    );

    // Without credentials the API answers 401 (kubectl then prompts for a username, and
    // with no terminal reads EOF).
    let anonymous = kubectl.write(
        "anonymous-kubeconfig",
        &format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {}\n    certificate-authority-data: {}\ncontexts:\n- name: c\n  context: {{cluster: c, user: nobody}}\ncurrent-context: c\nusers:\n- name: nobody\n  user: {{}}\n",
            t.server.url(),
            b64(ca)
        ),
    );
    let denied = kubectl
        .run(&[&format!("--kubeconfig={anonymous}"), "get", "namespaces"])
        .await;
    assert!(!denied.status.success());
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&denied.stdout),
        String::from_utf8_lossy(&denied.stderr)
    );
    assert!(
        said.contains("Unauthorized") || said.contains("Username"),
        "{said}"
    );
}

/// Waits until some client (kubectl) has a ConfigMap watch open on the server.
async fn configmap_watch_opened(t: &TestServer) {
    let configmaps = kubeclient_machinery::GroupResource::new("", "configmaps");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while t.server.store().watcher_count(&configmaps) == 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "kubectl never opened its watch"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_diff_of_an_applied_manifest_shows_no_change_and_a_real_change_shows() {
    let t = TestServer::start().await;
    let kubectl = Kubectl::for_server(&t);
    let manifest = kubectl.write(
        "diff.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: diffed, namespace: default}\ndata: {a: \"1\"}\n",
    );
    kubectl.ok(&["apply", "-f", &manifest]).await;
    // Exit 0: no differences (a dry-run answer without the live resourceVersion used to
    // show a spurious `- resourceVersion` line and exit 1).
    let same = kubectl.run(&["diff", "-f", &manifest]).await;
    assert!(
        same.status.success(),
        "no diff expected:\n{}",
        String::from_utf8_lossy(&same.stdout)
    );
    let changed = kubectl.write(
        "diff2.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: diffed, namespace: default}\ndata: {a: \"2\"}\n",
    );
    let different = kubectl.run(&["diff", "-f", &changed]).await;
    assert_eq!(different.status.code(), Some(1), "a real change is a diff");
    let text = String::from_utf8_lossy(&different.stdout);
    assert!(
        text.contains("-  a: \"1\"") && text.contains("+  a: \"2\""),
        "{text}"
    );
    assert!(!text.contains("resourceVersion"), "{text}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_reported_kubernetes_version_is_configurable_so_kubectl_sees_no_skew() {
    let t = TestServer::start_with(
        kubeclient_apiserver::ApiServer::builder().kubernetes_minor_version(33),
    )
    .await;
    let kubectl = Kubectl::for_server(&t);
    let output = kubectl.run(&["version"]).await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("Server Version: v1.33.0"), "{stdout}");
    let client_minor = stdout
        .lines()
        .find_map(|l| l.strip_prefix("Client Version: v1."))
        .and_then(|rest| rest.split('.').next())
        .and_then(|minor| minor.parse::<i64>().ok())
        .expect("kubectl prints its own version");
    let skew_warning = stderr.contains("exceeds the supported minor version skew");
    assert_eq!(skew_warning, (client_minor - 33).abs() > 1, "{stderr}");
}

const TYPO_DEPLOYMENT: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata: {name: typo, namespace: default}
spec:
  replicsa: 2
  selector: {matchLabels: {app: typo}}
  template:
    metadata: {labels: {app: typo}}
    spec:
      containers:
      - {name: web, image: "nginx:1", imagee: x}
"#;

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_strict_validation_rejects_unknown_fields_and_warn_drops_them() {
    let t = TestServer::start().await;
    let kubectl = Kubectl::for_server(&t);
    let manifest = kubectl.write("typo.yaml", TYPO_DEPLOYMENT);
    let refused = kubectl.run(&["apply", "-f", &manifest]).await;
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains(
            r#"Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: unknown field "spec.replicsa", unknown field "spec.template.spec.containers[0].imagee""#
        ),
        "{stderr}"
    );
    assert_eq!(
        t.get("/apis/apps/v1/namespaces/default/deployments/typo")
            .await
            .status,
        404
    );

    let server_side = kubectl
        .run(&["apply", "--server-side", "-f", &manifest])
        .await;
    assert!(!server_side.status.success());
    let stderr = String::from_utf8_lossy(&server_side.stderr);
    assert!(
        stderr.contains(".spec.replicsa: field not declared in schema"),
        "{stderr}"
    );

    let warned = kubectl
        .run(&["apply", "--validate=warn", "-f", &manifest])
        .await;
    let stderr = String::from_utf8_lossy(&warned.stderr);
    assert!(warned.status.success(), "{stderr}");
    assert!(
        stderr.contains(r#"Warning: unknown field "spec.replicsa""#),
        "{stderr}"
    );
    let stored = t
        .get("/apis/apps/v1/namespaces/default/deployments/typo")
        .await
        .json();
    assert!(
        stored["spec"].get("replicsa").is_none(),
        "unknown fields are dropped: {stored}"
    );
    assert!(
        stored["spec"]["template"]["spec"]["containers"][0]
            .get("imagee")
            .is_none()
    );
    assert_eq!(
        stored["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:1"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_get_prints_the_real_columns_of_built_in_kinds() {
    let t = TestServer::start().await;
    let kubectl = Kubectl::for_server(&t);
    let manifest = kubectl.write(
        "web.yaml",
        &TYPO_DEPLOYMENT
            .replace("replicsa", "replicas")
            .replace(", imagee: x", "")
            .replace("typo", "web"),
    );
    kubectl.ok(&["apply", "-f", &manifest]).await;
    let deployments = kubectl.ok(&["get", "deployments", "-o", "wide"]).await;
    let header: Vec<&str> = deployments
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    assert_eq!(
        header,
        [
            "NAME",
            "READY",
            "UP-TO-DATE",
            "AVAILABLE",
            "AGE",
            "CONTAINERS",
            "IMAGES",
            "SELECTOR"
        ]
    );
    let row: Vec<&str> = deployments
        .lines()
        .nth(1)
        .unwrap_or("")
        .split_whitespace()
        .collect();
    assert_eq!(
        (row[0], row[1], row[5], row[6], row[7]),
        ("web", "0/2", "web", "nginx:1", "app=web")
    );

    let services = kubectl.ok(&["get", "services"]).await;
    let row: Vec<&str> = services
        .lines()
        .nth(1)
        .unwrap_or("")
        .split_whitespace()
        .collect();
    assert_eq!(
        &row[..5],
        ["kubernetes", "ClusterIP", "10.96.0.1", "<none>", "443/TCP"]
    );

    kubectl.ok(&["run", "p1", "--image=nginx"]).await;
    let pods = kubectl.ok(&["get", "pods", "-o", "wide"]).await;
    let header: Vec<&str> = pods
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    assert_eq!(
        &header[..6],
        ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP"]
    );
    assert!(
        pods.lines().nth(1).unwrap_or("").starts_with("p1 "),
        "{pods}"
    );
    let config = kubectl.write(
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: two}\ndata: {a: '1', b: '2'}\n",
    );
    kubectl.ok(&["apply", "-f", &config]).await;
    let configmaps = kubectl.ok(&["get", "configmaps", "-A"]).await;
    assert!(configmaps.contains(" two "), "{configmaps}");
    assert!(configmaps.starts_with("NAMESPACE"), "{configmaps}");
    assert!(
        configmaps.lines().next().unwrap_or("").contains("DATA"),
        "{configmaps}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_explain_prints_field_descriptions_of_built_in_kinds() {
    let t = TestServer::start().await;
    let kubectl = Kubectl::for_server(&t);
    let explained = kubectl
        .ok(&["explain", "pod.spec.containers.imagePullPolicy"])
        .await;
    assert!(
        explained.contains("FIELD: imagePullPolicy <string>"),
        "{explained}"
    );
    assert!(explained.contains("Image pull policy."), "{explained}");
    let strategy = kubectl.ok(&["explain", "deployments.spec.strategy"]).await;
    assert!(strategy.contains("GROUP:      apps"), "{strategy}");
    assert!(strategy.contains("rollingUpdate"), "{strategy}");
}

#[tokio::test(flavor = "multi_thread")]
async fn get_events_prints_when_what_why_and_about_which_object() {
    let t = TestServer::start().await;
    let kubectl = Kubectl::for_server(&t);
    let manifest = r#"apiVersion: v1
kind: Event
metadata: {name: web.18ed1706, namespace: default}
type: Warning
reason: SyncFailed
message: the image does not exist
count: 3
involvedObject: {kind: Installation, name: web, namespace: default, apiVersion: example.kubeclient.dev/v1}
source: {component: sample-controller}
firstTimestamp: "2026-01-01T00:00:00Z"
lastTimestamp: "2026-01-01T00:00:00Z"
"#;
    kubectl
        .ok(&["apply", "-f", &kubectl.write("event.yaml", manifest)])
        .await;
    let table = kubectl.ok(&["get", "events"]).await;
    let header: Vec<&str> = table
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    assert_eq!(
        header,
        ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"],
        "{table}"
    );
    let row = table.lines().nth(1).unwrap_or("");
    for cell in [
        "Warning",
        "SyncFailed",
        "installation/web",
        "the image does not exist",
    ] {
        assert!(row.contains(cell), "{cell} in {table}");
    }
    let wide = kubectl.ok(&["get", "events", "-o", "wide"]).await;
    assert!(
        wide.contains("sample-controller") && wide.contains("web.18ed1706"),
        "{wide}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_auth_can_i_whoami_and_create_token_work() {
    let t = TestServer::start().await;
    let newest = Kubectl::for_server(&t);
    let mut kubectls = vec![newest];
    match kubectls[0].other_version("kubectl.1.27") {
        Some(older) => kubectls.push(older),
        None => eprintln!("kubectl.1.27 is not beside kubectl: checked with one kubectl"),
    }
    for kubectl in &kubectls {
        assert_eq!(
            kubectl
                .ok(&["auth", "can-i", "create", "pods"])
                .await
                .trim(),
            "yes"
        );
        // kubectl 1.27 asks for the v1beta1 SelfSubjectReview, newer ones for v1.
        let whoami = kubectl.ok(&["auth", "whoami"]).await;
        assert!(whoami.contains("kubeclient-admin"), "{whoami}");
        let token = kubectl.ok(&["create", "token", "default"]).await;
        assert_eq!(
            token.trim().split('.').count(),
            3,
            "a JWT-shaped token: {token}"
        );
    }
}
