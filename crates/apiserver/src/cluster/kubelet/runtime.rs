//! [`ContainerRuntime`]: how a simulated kubelet runs a container's command (the CRI of
//! the simulation). The server hands the cluster one that runs the project's built-in
//! commands (the ones exec runs); a container whose command is not one of them, or that
//! names no command (the image's entrypoint: a server such as nginx), runs until it is
//! stopped.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

/// The container a command runs for.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct ContainerKey {
    pub(crate) namespace: String,
    pub(crate) pod: String,
    /// The Pod's uid (a Pod re-created under the same name is another Pod).
    pub(crate) uid: String,
    pub(crate) container: String,
}

/// What a container runs.
#[derive(Clone, Debug)]
pub(crate) struct ContainerCommand {
    /// `command` followed by `args` (empty: the image's entrypoint).
    pub(crate) argv: Vec<String>,
    /// `NAME=value` lines (`HOSTNAME` and the literal `env` values).
    pub(crate) env: Vec<String>,
}

/// Starts containers' commands; each reports its exit code through [`Exits`].
pub(crate) trait ContainerRuntime: Send + Sync {
    /// Starts `command` for `key`; when it exits, `exits.record(key, code)`. Returns
    /// whether a command runs (`false`: it runs until stopped, nothing to wait for).
    fn start(&self, key: ContainerKey, command: ContainerCommand, exits: Arc<Exits>) -> bool;

    /// Stops the container's command if it still runs (it records no exit then); its
    /// log stays readable.
    fn stop(&self, key: &ContainerKey);

    /// The container's Pod is gone from the node: stops it and drops its log.
    fn forget(&self, key: &ContainerKey);
}

/// The exit codes of commands that ended, until the kubelet's next pass takes them;
/// recording one wakes the cluster.
#[derive(Debug)]
pub(crate) struct Exits {
    codes: Mutex<HashMap<ContainerKey, i32>>,
    wake: Arc<Notify>,
}

impl Exits {
    pub(crate) fn new(wake: Arc<Notify>) -> Self {
        Exits {
            codes: Mutex::new(HashMap::new()),
            wake,
        }
    }

    /// The container's command ended with `code`.
    pub(crate) fn record(&self, key: ContainerKey, code: i32) {
        crate::sync::lock(&self.codes).insert(key, code);
        self.wake.notify_one();
    }

    /// The uids of the Pods with exits not taken yet.
    pub(crate) fn uids(&self) -> std::collections::HashSet<String> {
        crate::sync::lock(&self.codes)
            .keys()
            .map(|key| key.uid.clone())
            .collect()
    }

    /// The exit code of `key`'s command, if it ended since the last take.
    pub(crate) fn take(&self, key: &ContainerKey) -> Option<i32> {
        crate::sync::lock(&self.codes).remove(key)
    }
}
