//! Helpers for tests that drive real clients against the embedded server.

use std::path::{Path, PathBuf};

#[cfg(feature = "etcd")]
pub use crate::storage::test_etcd::{ClientFiles, TestEtcd, TestEtcdCluster};

/// The kubectl build the interop tests prefer where several are installed.
pub const PREFERRED_KUBECTL: &str = "kubectl.1.33";

/// Why [`kubectl_binary`] found no kubectl.
///
/// ```
/// use kubeclient_apiserver::testing::KubectlNotFound;
/// assert!(KubectlNotFound::NotOnPath.to_string().contains("set KUBECTL"));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KubectlNotFound {
    /// `KUBECTL` names a file that does not exist.
    #[error("KUBECTL is set to {}, which does not exist", .0.display())]
    MissingKubectlEnv(PathBuf),
    /// No `kubectl` on `PATH` and no `KUBECTL`.
    #[error(
        "kubectl not found: install it (https://kubernetes.io/docs/tasks/tools/) or set KUBECTL to a kubectl binary"
    )]
    NotOnPath,
}

/// The kubectl binary to test with: `KUBECTL` if set; else, next to the `kubectl` found on
/// `PATH` (following its symlink), a versioned build [`PREFERRED_KUBECTL`] when present
/// (the `kubectl` of some SDKs is a dispatcher that picks a version per server); else that
/// `kubectl` itself.
///
/// # Errors
///
/// [`KubectlNotFound`], whose message says how to install kubectl or point `KUBECTL` at
/// one.
///
/// # Examples
///
/// ```no_run
/// let kubectl = kubeclient_apiserver::testing::kubectl_binary().unwrap_or_else(|why| panic!("{why}"));
/// let status = std::process::Command::new(kubectl).arg("version").arg("--client").status();
/// ```
pub fn kubectl_binary() -> Result<PathBuf, KubectlNotFound> {
    if let Some(binary) = std::env::var_os("KUBECTL") {
        let binary = PathBuf::from(binary);
        return if binary.exists() {
            Ok(binary)
        } else {
            Err(KubectlNotFound::MissingKubectlEnv(binary))
        };
    }
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
        .map(|dir| dir.join("kubectl"))
        .find(|candidate| candidate.is_file());
    let Some(kubectl) = on_path else {
        return Err(KubectlNotFound::NotOnPath);
    };
    let versioned = std::fs::canonicalize(&kubectl)
        .ok()
        .and_then(|real| real.parent().map(|dir| dir.join(PREFERRED_KUBECTL)))
        .filter(|candidate| Path::is_file(candidate));
    Ok(versioned.unwrap_or(kubectl))
}
