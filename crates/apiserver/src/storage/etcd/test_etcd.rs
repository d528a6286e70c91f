//! [`TestEtcd`], a real etcd for tests: Debian's `etcd` binary (or `$KUBECLIENT_ETCD`) on free loopback
//! ports with a fresh data directory, stopped and removed when dropped. Tests that need
//! it skip, saying so, when no binary is there — unless `KUBECLIENT_REQUIRE_ETCD` is set
//! (as `.ci/run` sets it), which turns a missing binary into a failure.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use super::{EtcdBackend, EtcdConfig};

/// A running etcd member.
pub struct TestEtcd {
    child: Child,
    /// Its data directory and certificates, removed on drop.
    dir: PathBuf,
    /// Its client URL.
    pub url: String,
    /// The client's TLS files, for a member that requires client certificates.
    tls: Option<ClientFiles>,
}

/// The files a client of a TLS member needs: kube-apiserver's `--etcd-cafile`,
/// `--etcd-certfile` and `--etcd-keyfile`.
#[derive(Clone, Debug)]
pub struct ClientFiles {
    /// `--etcd-cafile`.
    pub ca: PathBuf,
    /// `--etcd-certfile`.
    pub cert: PathBuf,
    /// `--etcd-keyfile`.
    pub key: PathBuf,
}

impl TestEtcd {
    /// Starts one, or `None` (with a message) when there is no etcd binary to start.
    ///
    /// # Panics
    ///
    /// When etcd cannot be started or does not answer (a test failure), or when it is
    /// missing and `KUBECLIENT_REQUIRE_ETCD` is set.
    pub async fn start(test: &str) -> Option<TestEtcd> {
        TestEtcd::start_with(test, false).await
    }

    /// Starts one that serves HTTPS and requires client certificates signed by its CA.
    ///
    /// # Panics
    ///
    /// As [`start`](Self::start).
    pub async fn start_tls(test: &str) -> Option<TestEtcd> {
        TestEtcd::start_with(test, true).await
    }

    async fn start_with(test: &str, tls: bool) -> Option<TestEtcd> {
        let binary = etcd_binary_or_skip(test)?;
        let [client_port, peer_port] = free_ports();
        let dir =
            std::env::temp_dir().join(format!("kubeclient-etcd-{}", uuid::Uuid::new_v4().simple()));
        let scheme = if tls { "https" } else { "http" };
        let url = format!("{scheme}://127.0.0.1:{client_port}");
        let peer = format!("http://127.0.0.1:{peer_port}");
        let mut command = member_command(&binary, "test", &dir.join("data"), &url, &peer);
        command.arg(format!("--initial-cluster=test={peer}"));
        let client_files = tls.then(|| {
            let files = write_certificates(&dir.join("pki"));
            command
                .arg(format!("--cert-file={}", files.server_cert.display()))
                .arg(format!("--key-file={}", files.server_key.display()))
                .arg(format!("--trusted-ca-file={}", files.client.ca.display()))
                .arg("--client-cert-auth");
            files.client
        });
        let child = command
            .spawn()
            .unwrap_or_else(|error| panic!("{test}: starting {}: {error}", binary.display()));
        let etcd = TestEtcd {
            child,
            dir,
            url,
            tls: client_files,
        };
        etcd.wait_until_ready(test).await;
        Some(etcd)
    }

    /// The configuration of a client of this member (with its TLS files, if any).
    pub fn config(&self) -> EtcdConfig {
        let mut config = EtcdConfig::new([self.url.clone()]);
        if let Some(files) = &self.tls {
            config.ca_file = Some(files.ca.clone());
            config.cert_file = Some(files.cert.clone());
            config.key_file = Some(files.key.clone());
        }
        config
    }

    /// The client's TLS files, for a member started with [`start_tls`](Self::start_tls).
    pub fn client_files(&self) -> Option<&ClientFiles> {
        self.tls.as_ref()
    }

    /// The backend over this member under `prefix`.
    pub async fn backend(&self, prefix: &str) -> EtcdBackend {
        EtcdBackend::connect(self.config().with_prefix(prefix))
            .await
            .unwrap_or_else(|error| panic!("connecting to the test etcd: {error}"))
    }

    /// Waits for the member to answer (a start-up wait, not a timed assertion: a member
    /// that never answers within a minute is broken).
    async fn wait_until_ready(&self, test: &str) {
        wait_until_answers(test, self.config()).await;
    }
}

/// Waits until a client of `config` reads (a linearizable read: the member has a
/// leader); panics after a minute.
async fn wait_until_answers(test: &str, mut config: EtcdConfig) {
    config.connect_timeout = Duration::from_millis(500);
    for _ in 0..240 {
        if EtcdBackend::connect(config.clone()).await.is_ok() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    panic!(
        "{test}: the test etcd at {:?} never answered",
        config.servers
    );
}

/// The command that starts member `name` of a cluster, without its `--initial-cluster`.
fn member_command(
    binary: &std::path::Path,
    name: &str,
    data: &std::path::Path,
    client_url: &str,
    peer_url: &str,
) -> Command {
    let mut command = Command::new(binary);
    command
        .arg(format!("--name={name}"))
        .arg(format!("--data-dir={}", data.display()))
        .arg(format!("--listen-client-urls={client_url}"))
        .arg(format!("--advertise-client-urls={client_url}"))
        .arg(format!("--listen-peer-urls={peer_url}"))
        .arg(format!("--initial-advertise-peer-urls={peer_url}"))
        .arg("--log-level=error")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    command
}

/// The etcd binary, or `None` (saying why) when there is none and tests may skip.
///
/// # Panics
///
/// When there is none and `KUBECLIENT_REQUIRE_ETCD` is set.
fn etcd_binary_or_skip(test: &str) -> Option<PathBuf> {
    let binary = etcd_binary();
    if binary.is_none() {
        assert!(
            std::env::var_os("KUBECLIENT_REQUIRE_ETCD").is_none(),
            "{test}: KUBECLIENT_REQUIRE_ETCD is set but no etcd binary was found \
             (install Debian's etcd-server, or set KUBECLIENT_ETCD)"
        );
        eprintln!(
            "{test}: skipped: no etcd binary (install Debian's etcd-server, or set KUBECLIENT_ETCD)"
        );
    }
    binary
}

/// A cluster of etcd members on loopback ports (each with its own client and peer
/// port and data directory), whose members tests stop and start again; stopped and
/// removed when dropped.
pub struct TestEtcdCluster {
    binary: PathBuf,
    dir: PathBuf,
    members: Vec<ClusterMember>,
    /// `name=peer,...`: every member's `--initial-cluster`.
    initial_cluster: String,
}

struct ClusterMember {
    name: String,
    client_url: String,
    peer_url: String,
    child: Option<Child>,
}

impl TestEtcdCluster {
    /// Starts `size` members (6 at most) and waits until the cluster has a leader, or `None` (with a
    /// message) when there is no etcd binary.
    ///
    /// # Panics
    ///
    /// As [`TestEtcd::start`].
    pub async fn start(test: &str, size: usize) -> Option<TestEtcdCluster> {
        let binary = etcd_binary_or_skip(test)?;
        let dir = std::env::temp_dir().join(format!(
            "kubeclient-etcd-cluster-{}",
            uuid::Uuid::new_v4().simple()
        ));
        let ports: [u16; 12] = free_ports();
        let members: Vec<ClusterMember> = (0..size.min(6))
            .map(|i| {
                let (client, peer) = (ports[2 * i], ports[2 * i + 1]);
                ClusterMember {
                    name: format!("member{i}"),
                    client_url: format!("http://127.0.0.1:{client}"),
                    peer_url: format!("http://127.0.0.1:{peer}"),
                    child: None,
                }
            })
            .collect();
        let initial_cluster = members
            .iter()
            .map(|m| format!("{}={}", m.name, m.peer_url))
            .collect::<Vec<_>>()
            .join(",");
        let mut cluster = TestEtcdCluster {
            binary,
            dir,
            members,
            initial_cluster,
        };
        for member in 0..size {
            cluster.spawn(test, member);
        }
        wait_until_answers(test, cluster.config()).await;
        Some(cluster)
    }

    /// Every member's client URL, in order.
    pub fn urls(&self) -> Vec<String> {
        self.members.iter().map(|m| m.client_url.clone()).collect()
    }

    /// The configuration of a client of every member.
    pub fn config(&self) -> EtcdConfig {
        EtcdConfig::new(self.urls())
    }

    /// Kills member `member` (SIGKILL); its data stays for [`resume`](Self::resume).
    pub fn stop(&mut self, member: usize) {
        if let Some(mut child) = self.members.get_mut(member).and_then(|m| m.child.take()) {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts member `member` again on its data, after [`stop`](Self::stop).
    ///
    /// # Panics
    ///
    /// When etcd cannot be started.
    pub fn resume(&mut self, test: &str, member: usize) {
        if self.members.get(member).is_some_and(|m| m.child.is_none()) {
            self.spawn(test, member);
        }
    }

    fn spawn(&mut self, test: &str, index: usize) {
        let Some(member) = self.members.get_mut(index) else {
            return;
        };
        let data = self.dir.join(&member.name);
        let child = member_command(
            &self.binary,
            &member.name,
            &data,
            &member.client_url,
            &member.peer_url,
        )
        .arg(format!("--initial-cluster={}", self.initial_cluster))
        .arg("--initial-cluster-state=new")
        .arg("--initial-cluster-token=kubeclient-test")
        .spawn()
        .unwrap_or_else(|error| panic!("{test}: starting {}: {error}", self.binary.display()));
        member.child = Some(child);
    }
}

impl Drop for TestEtcdCluster {
    fn drop(&mut self) {
        for member in 0..self.members.len() {
            self.stop(member);
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Drop for TestEtcd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `$KUBECLIENT_ETCD`, else `etcd` on the PATH.
fn etcd_binary() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("KUBECLIENT_ETCD") {
        return Some(PathBuf::from(path));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("etcd"))
        .find(|candidate| candidate.is_file())
}

/// `N` distinct free loopback ports (all held until all are known).
pub(crate) fn free_ports<const N: usize>() -> [u16; N] {
    let listeners: [TcpListener; N] = std::array::from_fn(|_| {
        TcpListener::bind("127.0.0.1:0")
            .unwrap_or_else(|error| panic!("no free loopback port: {error}"))
    });
    listeners.map(|listener| {
        listener
            .local_addr()
            .map(|address| address.port())
            .unwrap_or_else(|error| panic!("no local address: {error}"))
    })
}

/// A member's serving certificate and the client's files.
struct Certificates {
    server_cert: PathBuf,
    server_key: PathBuf,
    client: ClientFiles,
}

/// A new CA, a serving certificate for 127.0.0.1 and a client certificate, as PEM files
/// in `dir`.
fn write_certificates(dir: &std::path::Path) -> Certificates {
    use rcgen::{
        BasicConstraints, CertificateParams, CertifiedIssuer, ExtendedKeyUsagePurpose, IsCa,
        KeyPair,
    };
    let generated = (|| -> Result<_, rcgen::Error> {
        let mut ca = CertificateParams::new(Vec::<String>::new())?;
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let issuer = CertifiedIssuer::self_signed(ca, KeyPair::generate()?)?;
        let leaf = |names: Vec<String>, usage| -> Result<(String, String), rcgen::Error> {
            let mut params = CertificateParams::new(names)?;
            params.extended_key_usages = vec![usage];
            let key = KeyPair::generate()?;
            Ok((params.signed_by(&key, &issuer)?.pem(), key.serialize_pem()))
        };
        let server = leaf(
            vec!["127.0.0.1".to_owned(), "localhost".to_owned()],
            ExtendedKeyUsagePurpose::ServerAuth,
        )?;
        let client = leaf(Vec::new(), ExtendedKeyUsagePurpose::ClientAuth)?;
        Ok((issuer.pem(), server, client))
    })();
    let (ca, server, client) =
        generated.unwrap_or_else(|error| panic!("generating test certificates: {error}"));
    std::fs::create_dir_all(dir).unwrap_or_else(|error| panic!("creating {dir:?}: {error}"));
    let write = |name: &str, pem: &str| {
        let path = dir.join(name);
        std::fs::write(&path, pem).unwrap_or_else(|error| panic!("writing {path:?}: {error}"));
        path
    };
    Certificates {
        server_cert: write("server.pem", &server.0),
        server_key: write("server-key.pem", &server.1),
        client: ClientFiles {
            ca: write("ca.pem", &ca),
            cert: write("client.pem", &client.0),
            key: write("client-key.pem", &client.1),
        },
    }
}
