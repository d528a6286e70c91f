//! A real etcd for tests: Debian's `etcd` binary (or `$KUBECLIENT_ETCD`) on free loopback
//! ports with a fresh data directory, stopped and removed when dropped. Tests that need
//! it skip, saying so, when no binary is there — unless `KUBECLIENT_REQUIRE_ETCD` is set
//! (as `.ci/run` sets it), which turns a missing binary into a failure.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use super::{EtcdBackend, EtcdConfig};

/// A running etcd member.
pub(crate) struct TestEtcd {
    child: Child,
    data_dir: PathBuf,
    /// Its client URL.
    pub(crate) url: String,
}

impl TestEtcd {
    /// Starts one, or `None` (with a message) when there is no etcd binary to start.
    ///
    /// # Panics
    ///
    /// When etcd cannot be started or does not answer (a test failure), or when it is
    /// missing and `KUBECLIENT_REQUIRE_ETCD` is set.
    pub(crate) async fn start(test: &str) -> Option<TestEtcd> {
        let Some(binary) = etcd_binary() else {
            assert!(
                std::env::var_os("KUBECLIENT_REQUIRE_ETCD").is_none(),
                "{test}: KUBECLIENT_REQUIRE_ETCD is set but no etcd binary was found \
                 (install Debian's etcd-server, or set KUBECLIENT_ETCD)"
            );
            eprintln!(
                "{test}: skipped: no etcd binary (install Debian's etcd-server, or set KUBECLIENT_ETCD)"
            );
            return None;
        };
        let [client_port, peer_port] = free_ports();
        let data_dir =
            std::env::temp_dir().join(format!("kubeclient-etcd-{}", uuid::Uuid::new_v4().simple()));
        let url = format!("http://127.0.0.1:{client_port}");
        let peer = format!("http://127.0.0.1:{peer_port}");
        let child = Command::new(&binary)
            .arg("--name=test")
            .arg(format!("--data-dir={}", data_dir.display()))
            .arg(format!("--listen-client-urls={url}"))
            .arg(format!("--advertise-client-urls={url}"))
            .arg(format!("--listen-peer-urls={peer}"))
            .arg(format!("--initial-advertise-peer-urls={peer}"))
            .arg(format!("--initial-cluster=test={peer}"))
            .arg("--log-level=error")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|error| panic!("{test}: starting {}: {error}", binary.display()));
        let etcd = TestEtcd {
            child,
            data_dir,
            url,
        };
        etcd.wait_until_ready(test).await;
        Some(etcd)
    }

    /// The backend over this member under `prefix`.
    pub(crate) async fn backend(&self, prefix: &str) -> EtcdBackend {
        EtcdBackend::connect(EtcdConfig::new([self.url.clone()]).with_prefix(prefix))
            .await
            .unwrap_or_else(|error| panic!("connecting to the test etcd: {error}"))
    }

    /// Waits for the member to answer (a start-up wait, not a timed assertion: a member
    /// that never answers within a minute is broken).
    async fn wait_until_ready(&self, test: &str) {
        let mut config = EtcdConfig::new([self.url.clone()]);
        config.connect_timeout = Duration::from_millis(500);
        for _ in 0..240 {
            if EtcdBackend::connect(config.clone()).await.is_ok() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        panic!("{test}: the test etcd at {} never answered", self.url);
    }
}

impl Drop for TestEtcd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.data_dir);
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

/// Two distinct free loopback ports (both held until both are known).
pub(crate) fn free_ports() -> [u16; 2] {
    let bind = || {
        TcpListener::bind("127.0.0.1:0")
            .unwrap_or_else(|error| panic!("no free loopback port: {error}"))
    };
    let (first, second) = (bind(), bind());
    let port = |listener: &TcpListener| {
        listener
            .local_addr()
            .map(|address| address.port())
            .unwrap_or_else(|error| panic!("no local address: {error}"))
    };
    [port(&first), port(&second)]
}
