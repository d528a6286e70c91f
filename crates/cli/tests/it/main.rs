//! The `kubeclient` binary: `serve` and `watch`, driven as a user would.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The kubectl to drive (`KUBECTL`, or the one on PATH).
fn kubectl() -> Command {
    let binary =
        kubeclient_apiserver::testing::kubectl_binary().unwrap_or_else(|why| panic!("{why}"));
    Command::new(binary)
}

fn kubeclient() -> Command {
    Command::new(env!("CARGO_BIN_EXE_kubeclient"))
}

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `kubeclient serve` on a free port; returns the process and its kubeconfig path.
fn serve(dir: &std::path::Path) -> (Killed, String, String) {
    serve_with(dir, &[])
}

/// [`serve`] with more flags.
fn serve_with(dir: &std::path::Path, flags: &[&str]) -> (Killed, String, String) {
    serve_on(dir, "127.0.0.1:0", flags)
}

/// `kubeclient serve` listening on `listen`, as [`serve_with`].
fn serve_on(dir: &std::path::Path, listen: &str, flags: &[&str]) -> (Killed, String, String) {
    let kubeconfig = dir.join("kubeconfig").display().to_string();
    let mut child = kubeclient()
        .args([
            "serve",
            "--listen",
            listen,
            "--write-kubeconfig",
            &kubeconfig,
        ])
        .args(flags)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("kubeclient serve starts");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    let first = lines.next().expect("a line").expect("readable");
    let url = first
        .rsplit(' ')
        .next()
        .expect("the line ends with the URL")
        .to_owned();
    assert!(
        url.starts_with("http://127.0.0.1:") && !url.ends_with(":0"),
        "the real port is printed: {first}"
    );
    let second = lines.next().expect("a second line").expect("readable");
    assert!(second.contains("kubeconfig written to"), "{second}");
    std::thread::spawn(move || for _ in lines {});
    (Killed(child), url, kubeconfig)
}

fn scratch(label: &str) -> std::path::PathBuf {
    let dir =
        std::env::temp_dir().join(format!("kubeclient-cli-it-{}-{label}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch dir");
    dir
}

#[test]
fn serve_prints_its_url_writes_a_kubeconfig_and_stops_on_sigterm() {
    let dir = scratch("serve");
    let (mut server, _url, kubeconfig) = serve(&dir);
    let output = kubectl()
        .args([
            &format!("--kubeconfig={kubeconfig}"),
            &format!("--cache-dir={}", dir.join("cache").display()),
            "get",
            "namespaces",
        ])
        .output()
        .expect("kubectl runs");
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("kube-system"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let pid = server.0.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("kill runs")
            .success()
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(status) = server.0.try_wait().expect("waitable") {
            assert!(status.success(), "a clean shutdown exits 0: {status}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "kubeclient serve stops on SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn watch_prints_changes_of_a_resource() {
    let dir = scratch("watch");
    let (_server, _url, kubeconfig) = serve(&dir);
    let mut watcher = Killed(
        kubeclient()
            .args([
                "watch",
                "configmaps",
                "--kubeconfig",
                &kubeconfig,
                "-n",
                "default",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("kubeclient watch starts"),
    );
    let stdout = watcher.0.stdout.take().expect("stdout");
    let stderr = watcher.0.stderr.take().expect("stderr");
    // Read stderr to its end (a closed pipe would fail the watcher's later logging) and
    // say when the watcher reports its cache synced.
    let (synced_tx, synced) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if line.starts_with("synced") {
                let _ = synced_tx.send(());
            }
        }
    });
    synced
        .recv_timeout(Duration::from_secs(30))
        .expect("kubeclient watch says when its cache synced");
    let manifest = dir.join("cm.yaml");
    std::fs::write(
        &manifest,
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: watched, namespace: default}\n",
    )
    .expect("write");
    let kubectl = |args: &[&str]| {
        let output = kubectl()
            .arg(format!("--kubeconfig={kubeconfig}"))
            .arg(format!("--cache-dir={}", dir.join("cache").display()))
            .args(args)
            .output()
            .expect("kubectl runs");
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    };
    kubectl(&["apply", "-f", &manifest.display().to_string()]);
    kubectl(&["delete", "configmap", "watched"]);
    let mut lines = BufReader::new(stdout).lines();
    let added = lines.next().expect("a line").expect("readable");
    assert!(
        added.starts_with("ADDED") && added.contains("default/watched"),
        "{added}"
    );
    let deleted = lines.next().expect("a line").expect("readable");
    assert_eq!(deleted, "DELETED default/watched");
}

#[test]
fn demo_with_rate_u32_max_writes_concurrently_instead_of_panicking() {
    let output = kubeclient()
        .args(["demo", "--duration", "2", "--rate", "4294967295"])
        .env_remove("KUBECONFIG")
        .output()
        .expect("kubeclient demo runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "exit {:?}\n{stdout}\n{stderr}",
        output.status
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    let summary = stdout
        .lines()
        .find(|l| l.starts_with("writes "))
        .expect("a writes line");
    let written: u64 = summary
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .expect("a count");
    assert!(written > 0, "{summary}");
    assert!(summary.contains("panicked 0"), "{summary}");
    assert!(stdout.contains("converged"), "{stdout}");
}

#[test]
fn serve_reads_its_token_from_a_file_and_warns_beyond_loopback_without_one() {
    let dir = scratch("token");
    let token_file = dir.join("token");
    std::fs::write(&token_file, "file-s3cret\n").expect("write the token file");
    let kubeconfig = dir.join("kubeconfig");
    let child = kubeclient()
        .args(["serve", "--listen", "127.0.0.1:0", "--token-file"])
        .arg(&token_file)
        .arg("--write-kubeconfig")
        .arg(&kubeconfig)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("kubeclient serve starts");
    let mut server = Killed(child);
    let stdout = server.0.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    let _url = lines.next().expect("a line").expect("readable");
    let _written = lines.next().expect("a line").expect("readable");
    let written = std::fs::read_to_string(&kubeconfig).expect("the kubeconfig");
    assert!(written.contains("token: file-s3cret"), "{written}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&kubeconfig)
            .expect("metadata")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    drop(server);

    // Beyond loopback with no token: a warning on stderr.
    let mut child = kubeclient()
        .args(["serve", "--listen", "0.0.0.0:0"])
        .env_remove("KUBECLIENT_TOKEN")
        .env("KUBECLIENT_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubeclient serve starts");
    let stderr = child.stderr.take().expect("stderr");
    let mut server = Killed(child);
    let first = BufReader::new(stderr)
        .lines()
        .next()
        .expect("a warning")
        .expect("readable");
    assert!(first.contains("without a token"), "{first}");
    let _ = server.0.kill();
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 26: a stages file that is not valid stops `serve` before it listens, with an
/// error naming the file and the field; a valid one is taken.
#[test]
fn serve_refuses_a_bad_stages_file_naming_the_file_and_the_field() {
    let dir = scratch("stages");
    let bad = dir.join("bad-stages.yaml");
    std::fs::write(
        &bad,
        "apiVersion: kwok.x-k8s.io/v1alpha1\nkind: Stage\nmetadata: {name: pod-ready}\nspec:\n  resourceRef: {kind: Pod}\n  delay: {durationMilliseconds: -5}\n",
    )
    .expect("write the stages file");
    let output = kubeclient()
        .args(["serve", "--listen", "127.0.0.1:0", "--stages"])
        .arg(&bad)
        .output()
        .expect("kubeclient serve runs");
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains(&bad.display().to_string()), "{stderr}");
    assert!(
        stderr.contains("document 1 (Stage \"pod-ready\"): spec.delay.durationMilliseconds"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    let missing = kubeclient()
        .args(["serve", "--listen", "127.0.0.1:0", "--stages"])
        .arg(dir.join("missing.yaml"))
        .output()
        .expect("kubeclient serve runs");
    assert_eq!(missing.status.code(), Some(1), "{missing:?}");
    assert!(String::from_utf8_lossy(&missing.stderr).contains("cannot read the stages file"));

    let good = dir.join("stages.yaml");
    std::fs::write(
        &good,
        "kind: Stage\nmetadata: {name: pod-create}\nspec:\n  resourceRef: {kind: Pod}\n  delay: {durationMilliseconds: 10}\n",
    )
    .expect("write the stages file");
    let good = good.display().to_string();
    let (_server, _url, _kubeconfig) = serve_with(&dir, &["--stages", &good]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 24: the ServiceAccount token issuer and the API audiences are flags, as
/// kube-apiserver's; a token for another audience does not authenticate.
#[test]
fn serve_takes_the_service_account_issuer_and_api_audiences_as_flags() {
    use base64::Engine as _;
    let dir = scratch("audiences");
    let (_server, url, kubeconfig) = serve_with(
        &dir,
        &[
            "--service-account-issuer",
            "https://issuer.example",
            "--api-audiences",
            "https://api.example,second",
        ],
    );
    let kubectl_with = |args: &[&str]| {
        kubectl()
            .arg(format!("--kubeconfig={kubeconfig}"))
            .arg(format!("--cache-dir={}", dir.join("cache").display()))
            .args(args)
            .output()
            .expect("kubectl runs")
    };
    let token_for = |audience: &str| {
        let output = kubectl_with(&["create", "token", "default", "--audience", audience]);
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).trim().to_owned()
    };
    let token = token_for("second");
    let claims = token.split('.').nth(1).expect("a JWT");
    let claims: serde_json::Value = serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(claims)
            .expect("base64url"),
    )
    .expect("JSON claims");
    assert_eq!(claims["iss"], "https://issuer.example");
    // kubectl sends no bearer token to a plain-HTTP server: ask directly.
    let read = |token: &str| {
        use std::io::{Read as _, Write as _};
        let address = url.trim_start_matches("http://");
        let mut connection = std::net::TcpStream::connect(address).expect("the server accepts");
        write!(
            connection,
            "GET /api/v1/namespaces/kube-system/secrets HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n"
        )
        .expect("the request is sent");
        let mut answer = String::new();
        let _ = connection.read_to_string(&mut answer);
        answer.lines().next().unwrap_or_default().to_owned()
    };
    assert!(
        read(&token).contains(" 200 "),
        "an API audience authenticates"
    );
    let other = read(&token_for("https://vault.example.com"));
    assert!(other.contains(" 401 "), "{other}");
}

/// `kubeclient demo`'s stderr, run briefly with `configure` applied to the command.
fn demo_stderr(configure: impl FnOnce(&mut Command) -> &mut Command) -> Vec<u8> {
    let mut command = kubeclient();
    command
        .args(["demo", "--duration", "1", "--rate", "10"])
        .env_remove("KUBECONFIG")
        .env_remove("NO_COLOR")
        .env("KUBECLIENT_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let output = configure(&mut command)
        .output()
        .expect("kubeclient demo runs");
    assert!(output.status.success(), "exit {:?}", output.status);
    output.stderr
}

/// What is left of `text` once the demo's own progress-line clearing (`\r ESC[K`, written
/// only on a terminal) is taken out: any ESC that remains belongs to a log line.
fn without_line_clearing(text: &[u8]) -> String {
    String::from_utf8_lossy(text).replace("\x1b[K", "")
}

/// Issue 25: log lines carried ANSI colour escapes into files and pipes
/// (`kubeclient demo 2>log` started with `ESC[2m2026-...`).
#[test]
fn logs_are_plain_text_when_stderr_is_a_pipe() {
    let stderr = demo_stderr(|command| command);
    let text = String::from_utf8_lossy(&stderr);
    assert!(text.contains(" INFO "), "a log line was written: {text}");
    assert!(!stderr.contains(&0x1b), "no ESC byte on a pipe: {text:?}");
}

/// On a terminal (a pseudo-terminal from util-linux `script`) log lines are coloured,
/// unless `NO_COLOR` is set to a non-empty value.
#[test]
fn logs_are_coloured_on_a_terminal_unless_no_color_is_set() {
    let on_terminal = |no_color: Option<&str>| {
        let mut command = Command::new("script");
        command
            .args(["-qec"])
            .arg(format!(
                "'{}' demo --duration 1 --rate 10",
                env!("CARGO_BIN_EXE_kubeclient")
            ))
            .arg("/dev/null")
            .env_remove("KUBECONFIG")
            .env_remove("NO_COLOR")
            .env("KUBECLIENT_LOG", "info")
            .stdin(Stdio::null())
            .stderr(Stdio::inherit());
        if let Some(value) = no_color {
            command.env("NO_COLOR", value);
        }
        match command.output() {
            Ok(output) => {
                assert!(output.status.success(), "exit {:?}", output.status);
                Some(output.stdout)
            }
            Err(err) => {
                eprintln!(
                    "skipped: util-linux `script` (a pseudo-terminal) is not available: {err}"
                );
                None
            }
        }
    };
    let Some(coloured) = on_terminal(None) else {
        return;
    };
    let coloured = without_line_clearing(&coloured);
    assert!(
        coloured.contains("\x1b[32m INFO"),
        "a terminal gets colour: {coloured:?}"
    );
    let plain = on_terminal(Some("1")).map(|out| without_line_clearing(&out));
    let plain = plain.expect("script ran the first time");
    assert!(
        plain.contains(" INFO "),
        "a log line was written: {plain:?}"
    );
    assert!(
        !plain.contains('\x1b'),
        "NO_COLOR=1 turns colour off: {plain:?}"
    );
    let empty = on_terminal(Some("")).map(|out| without_line_clearing(&out));
    assert!(
        empty.expect("script ran").contains("\x1b[32m INFO"),
        "an empty NO_COLOR does not turn colour off"
    );
}

/// Issue 25: under `NO_COLOR` the demo's progress goes out as plain lines, without the
/// `\r ESC[K` that redraws it in place on a terminal.
#[test]
fn demo_progress_is_plain_lines_under_no_color_on_a_terminal() {
    let mut command = Command::new("script");
    command
        .args(["-qec"])
        .arg(format!(
            "'{}' demo --duration 2 --rate 10",
            env!("CARGO_BIN_EXE_kubeclient")
        ))
        .arg("/dev/null")
        .env_remove("KUBECONFIG")
        .env("NO_COLOR", "1")
        .env("KUBECLIENT_LOG", "info")
        .stdin(Stdio::null())
        .stderr(Stdio::inherit());
    let output = match command.output() {
        Ok(output) => output,
        Err(err) => {
            eprintln!("skipped: util-linux `script` (a pseudo-terminal) is not available: {err}");
            return;
        }
    };
    assert!(output.status.success(), "exit {:?}", output.status);
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        text.contains("writes"),
        "a progress line was written: {text:?}"
    );
    assert!(!text.contains('\x1b'), "no escape under NO_COLOR: {text:?}");
    // A terminal turns each "\n" into "\r\n"; a bare "\r" would be a redraw.
    assert!(
        !text.replace("\r\n", "\n").contains('\r'),
        "no carriage return but at line ends: {text:?}"
    );
}

#[test]
fn serve_runs_a_simulated_cluster_of_the_nodes_asked_for() {
    let dir = scratch("serve-nodes");
    let kubectl_in = |kubeconfig: &str, args: &[&str]| {
        let output = kubectl()
            .args([
                &format!("--kubeconfig={kubeconfig}"),
                &format!("--cache-dir={}", dir.join("cache").display()),
            ])
            .args(args)
            .output()
            .expect("kubectl runs");
        assert!(
            output.status.success(),
            "kubectl {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    let (_server, _url, kubeconfig) = serve_with(&dir, &["--nodes", "2", "--time-scale", "0"]);
    let nodes = kubectl_in(&kubeconfig, &["get", "nodes", "--no-headers"]);
    assert_eq!(
        nodes.lines().filter(|l| l.contains(" Ready ")).count(),
        2,
        "{nodes}"
    );
    kubectl_in(&kubeconfig, &["run", "one", "--image=nginx"]);
    kubectl_in(
        &kubeconfig,
        &[
            "wait",
            "--for=jsonpath={.status.phase}=Running",
            "pod/one",
            "--timeout=20s",
        ],
    );
    drop(_server);
    let dir0 = dir.join("zero");
    std::fs::create_dir_all(&dir0).expect("a scratch dir");
    let (_plain, _url, kubeconfig) = serve_with(&dir0, &["--nodes", "0"]);
    let nodes = kubectl_in(&kubeconfig, &["get", "nodes", "-o", "name"]);
    assert_eq!(nodes.trim(), "", "{nodes}");
}

/// A free loopback port (nothing listens on it once this returns).
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().expect("its address").port()
}

#[test]
fn serve_with_an_unreachable_etcd_exits_non_zero_naming_the_endpoint() {
    let endpoint = format!("http://127.0.0.1:{}", free_port());
    let output = kubeclient()
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--etcd-servers",
            &endpoint,
        ])
        .output()
        .expect("kubeclient serve runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("cannot open the storage backend"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&endpoint),
        "the endpoint is named: {stderr}"
    );
}

/// One raw HTTP request (`Connection: close`); the status code, 0 when the connection
/// failed or broke.
fn http(address: &str, method: &str, path: &str, body: &str) -> u16 {
    use std::io::{Read as _, Write as _};
    let Ok(mut connection) = std::net::TcpStream::connect(address) else {
        return 0;
    };
    let _ = connection.set_read_timeout(Some(Duration::from_secs(10)));
    let sent = write!(
        connection,
        "{method} {path} HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    if sent.is_err() {
        return 0;
    }
    let mut answer = String::new();
    let _ = connection.read_to_string(&mut answer);
    answer
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or(0)
}

#[test]
fn kill_9_during_a_write_storm_loses_no_acknowledged_write_and_an_informer_converges() {
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let Some(etcd) = runtime.block_on(kubeclient_apiserver::testing::TestEtcd::start(
        "kill_9_during_a_write_storm",
    )) else {
        return;
    };
    let dir = scratch("kill-9");
    kill_9_during_a_write_storm(&dir, &["--etcd-servers", etcd.url.as_str(), "--nodes", "0"]);
    drop(etcd);
}

#[test]
fn kill_9_during_a_write_storm_on_disk_loses_no_acknowledged_write_and_an_informer_converges() {
    let dir = scratch("kill-9-disk");
    let data = dir.join("data").display().to_string();
    kill_9_during_a_write_storm(&dir, &["--data-dir", data.as_str(), "--nodes", "0"]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Starts `kubeclient serve` with `flags` and an informer of the project on its
/// ConfigMaps, creates ConfigMaps from 4 writers, kills the server with SIGKILL mid-storm,
/// restarts it with the same flags on the same port and checks that every write answered
/// 201 is there, and that the informer (which knew nothing of the restart) resumes from
/// its last resourceVersion, or relists after 410, and converges on the server's state.
fn kill_9_during_a_write_storm(dir: &std::path::Path, flags: &[&str]) {
    let (mut server, url, kubeconfig) = serve_with(dir, flags);
    let address = url.trim_start_matches("http://").to_owned();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let informer = runtime.block_on(informer::start(&kubeconfig));
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writers: Vec<_> = (0..4)
        .map(|writer| {
            let (address, stop) = (address.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut acknowledged = Vec::new();
                for i in 0.. {
                    if stop.load(std::sync::atomic::Ordering::Relaxed) {
                        break;
                    }
                    let name = format!("storm-{writer}-{i}");
                    let body =
                        format!(r#"{{"metadata":{{"name":"{name}"}},"data":{{"i":"{i}"}}}}"#);
                    match http(
                        &address,
                        "POST",
                        "/api/v1/namespaces/default/configmaps",
                        &body,
                    ) {
                        201 => acknowledged.push(name),
                        0 => break,
                        code => panic!("a write answered {code}"),
                    }
                }
                acknowledged
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(1500));
    server.0.kill().expect("SIGKILL"); // Child::kill is SIGKILL on Unix
    let _ = server.0.wait();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let acknowledged: Vec<String> = writers
        .into_iter()
        .flat_map(|writer| writer.join().expect("a writer"))
        .collect();
    assert!(
        acknowledged.len() > 10,
        "the storm wrote: {}",
        acknowledged.len()
    );
    let (_restarted, _, _) = serve_on(dir, &address, flags);
    for name in &acknowledged {
        let path = format!("/api/v1/namespaces/default/configmaps/{name}");
        assert_eq!(
            http(&address, "GET", &path, ""),
            200,
            "{name} was acknowledged"
        );
    }
    // A write after the restart, which the informer must see too.
    let body = r#"{"metadata":{"name":"after-restart"}}"#;
    assert_eq!(
        http(
            &address,
            "POST",
            "/api/v1/namespaces/default/configmaps",
            body
        ),
        201
    );
    runtime.block_on(informer.converges());
}

/// The project's informer (crates/client) on the ConfigMaps of `default`.
mod informer {
    use std::sync::Arc;
    use std::time::Duration;

    use k8s_openapi::api::core::v1::ConfigMap;
    use kubeclient::cache::{ApiListWatch, InformerOptions, SharedIndexInformer, Store as _};
    use kubeclient::config::{Kubeconfig, KubeconfigOptions};
    use kubeclient::machinery::{Object, meta_namespace_key};
    use kubeclient::{Api, Client, Config, ListParams};
    use tokio_util::sync::CancellationToken;

    /// A running informer and the client it lists with.
    pub(super) struct Running {
        informer: SharedIndexInformer<ConfigMap>,
        api: Api<ConfigMap>,
        stop: CancellationToken,
    }

    /// Starts one on the server of `kubeconfig` and waits until it synced.
    pub(super) async fn start(kubeconfig: &str) -> Running {
        let yaml = std::fs::read_to_string(kubeconfig).expect("the kubeconfig");
        let kubeconfig = Kubeconfig::from_yaml(&yaml).expect("a kubeconfig");
        let config = Config::from_kubeconfig(&kubeconfig, &KubeconfigOptions::default())
            .expect("a client configuration");
        let client = Client::new(config).await.expect("a client");
        let api = Api::<ConfigMap>::namespaced(client, "default");
        let options = InformerOptions {
            name: "configmaps".to_owned(),
            ..InformerOptions::default()
        };
        let informer = SharedIndexInformer::new(Arc::new(ApiListWatch::new(api.clone())), options);
        let stop = CancellationToken::new();
        let running = informer.clone();
        let token = stop.clone();
        tokio::spawn(async move { running.run(token).await });
        tokio::time::timeout(Duration::from_secs(30), informer.wait_for_cache_sync(&stop))
            .await
            .expect("the informer syncs");
        Running {
            informer,
            api,
            stop,
        }
    }

    impl Running {
        /// Waits (60 s at most) until the cache holds exactly the server's objects at
        /// their resourceVersions.
        pub(super) async fn converges(self) {
            let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
            loop {
                let server = self.api.list_all(&ListParams::default()).await.map(|list| {
                    list.items
                        .iter()
                        .map(|cm| (meta_namespace_key(cm), cm.resource_version().to_owned()))
                        .collect::<std::collections::BTreeMap<_, _>>()
                });
                let cache: std::collections::BTreeMap<_, _> = self
                    .informer
                    .indexer()
                    .list()
                    .iter()
                    .map(|cm| {
                        (
                            meta_namespace_key(cm.as_ref()),
                            cm.resource_version().to_owned(),
                        )
                    })
                    .collect();
                if server.as_ref().is_ok_and(|server| *server == cache) {
                    self.stop.cancel();
                    return;
                }
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "the informer converges on the restarted server within 60 s: {} cached, server {:?}",
                    cache.len(),
                    server.map(|s| s.len())
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

#[test]
fn serve_on_a_data_dir_in_use_exits_non_zero_naming_it() {
    let dir = scratch("locked-data-dir");
    let data = dir.join("data").display().to_string();
    let (_first, _, _) = serve_with(&dir, &["--data-dir", data.as_str(), "--nodes", "0"]);
    let output = kubeclient()
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--data-dir",
            data.as_str(),
        ])
        .output()
        .expect("kubeclient serve runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("cannot open the storage backend"),
        "{stderr}"
    );
    assert!(stderr.contains(&data), "the directory is named: {stderr}");
    assert!(stderr.contains("in use by another process"), "{stderr}");
}

#[test]
fn serve_on_a_data_dir_whose_database_is_garbage_exits_non_zero_naming_it() {
    let dir = scratch("garbage-data-dir");
    let data = dir.join("data");
    std::fs::create_dir_all(&data).expect("a data dir");
    let file = data.join("kubeclient.redb");
    std::fs::write(&file, vec![0x5a; 64 * 1024]).expect("a garbage database");
    let output = kubeclient()
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(&data)
        .output()
        .expect("kubeclient serve runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(&file.display().to_string()), "{stderr}");
    assert!(stderr.contains("corrupted"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}
