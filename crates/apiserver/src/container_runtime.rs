//! [`BuiltinRuntime`]: the simulated kubelets' container runtime, running containers'
//! commands as the server's built-in commands (the ones exec and attach run: `echo`,
//! `sleep`, `exit`, `sh -c` ...). Each runs on its own task; its stdout and stderr go to
//! the container's log (what `kubectl logs` reads, the run before a restart what
//! `--previous` reads), its exit code back to the kubelet. A container whose command is
//! not a built-in (or that has none: the image's entrypoint) runs until its Pod stops.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use kubeclient_machinery::stream_protocol::TerminalSize;
use tokio::runtime::Handle;
use tokio::sync::watch;
use tokio::task::AbortHandle;

use std::time::Duration;

use crate::cluster::{
    ContainerCommand, ContainerKey, ContainerRuntime, ExecOutcome, ExecResults, Exits,
};
use crate::pod_logs::{ContainerLogWriter, PodLogs};
use crate::streams::builtin_commands::{self, Capture, Output, Stdio};

/// Runs containers' commands on the server's runtime, their output into `logs`.
#[derive(Debug)]
pub(crate) struct BuiltinRuntime {
    handle: Handle,
    logs: Arc<PodLogs>,
    running: Arc<Mutex<HashMap<ContainerKey, AbortHandle>>>,
    /// Which Pod (by uid) owns each container log (namespace, Pod name, container), so a
    /// Pod re-created under the same name starts with an empty log and the old one's
    /// removal leaves the new one's alone.
    log_owners: Mutex<HashMap<(String, String, String), String>>,
}

impl BuiltinRuntime {
    /// A runtime spawning on `handle`, writing containers' output to `logs`.
    pub(crate) fn new(handle: Handle, logs: Arc<PodLogs>) -> Self {
        BuiltinRuntime {
            handle,
            logs,
            running: Arc::default(),
            log_owners: Mutex::default(),
        }
    }

    /// The container's log starts: empty for a new container, the last run kept as the
    /// previous one for a restart.
    fn open_log(&self, key: &ContainerKey) {
        let log = (
            key.namespace.clone(),
            key.pod.clone(),
            key.container.clone(),
        );
        let mut owners = crate::sync::lock(&self.log_owners);
        if owners.get(&log) == Some(&key.uid) {
            self.logs.restart(&key.namespace, &key.pod, &key.container);
        } else {
            self.logs
                .remove_container(&key.namespace, &key.pod, &key.container);
            owners.insert(log, key.uid.clone());
        }
    }
}

impl ContainerRuntime for BuiltinRuntime {
    fn start(&self, key: ContainerKey, command: ContainerCommand, exits: Arc<Exits>) -> bool {
        self.open_log(&key);
        if command.argv.is_empty() {
            return false;
        }
        let running = Arc::clone(&self.running);
        let logs = Arc::clone(&self.logs);
        let task_key = key.clone();
        let task = self.handle.spawn(async move {
            let key = &task_key;
            let log = ContainerLogWriter::new(logs, &key.namespace, &key.pod, &key.container);
            let (_size_sender, mut stdio) = command_stdio(Output::Log(log.clone()), command.env);
            match builtin_commands::run(&command.argv, &mut stdio).await {
                Ok(code) => {
                    log.flush();
                    log.finish();
                    crate::sync::lock(&running).remove(key);
                    exits.record(task_key, code);
                }
                // Not a built-in: it runs until stopped.
                Err(_) => std::future::pending::<()>().await,
            }
        });
        if let Some(previous) = crate::sync::lock(&self.running).insert(key, task.abort_handle()) {
            previous.abort();
        }
        true
    }

    fn stop(&self, key: &ContainerKey) {
        if let Some(task) = crate::sync::lock(&self.running).remove(key) {
            task.abort();
        }
        // Followers of the log end with the container.
        if crate::sync::lock(&self.log_owners).get(&(
            key.namespace.clone(),
            key.pod.clone(),
            key.container.clone(),
        )) == Some(&key.uid)
        {
            self.logs.finish(&key.namespace, &key.pod, &key.container);
        }
    }

    fn forget(&self, key: &ContainerKey) {
        self.stop(key);
        let log = (
            key.namespace.clone(),
            key.pod.clone(),
            key.container.clone(),
        );
        let mut owners = crate::sync::lock(&self.log_owners);
        if owners.get(&log) == Some(&key.uid) {
            owners.remove(&log);
            self.logs
                .remove_container(&key.namespace, &key.pod, &key.container);
        }
    }

    fn exec(
        &self,
        command: ContainerCommand,
        timeout: Duration,
        id: u64,
        results: Arc<ExecResults>,
    ) {
        self.handle.spawn(async move {
            let output = Capture::default();
            let (_size_sender, mut stdio) =
                command_stdio(Output::Capture(output.clone()), command.env);
            let run = builtin_commands::run(&command.argv, &mut stdio);
            let outcome = match tokio::time::timeout(timeout, run).await {
                Ok(Ok(code)) => ExecOutcome::Exited {
                    code,
                    output: output.text(),
                },
                Ok(Err(_)) => ExecOutcome::NotBuiltin,
                Err(_) => ExecOutcome::TimedOut,
            };
            results.record(id, outcome);
        });
    }
}

/// The stdio of a container's command: no stdin, stdout and stderr both to `output`, no
/// terminal (the size sender must live as long as the command).
fn command_stdio(output: Output, env: Vec<String>) -> (watch::Sender<Option<TerminalSize>>, Stdio) {
    let (size_sender, size) = watch::channel(None);
    let stdio = Stdio {
        stdin: None,
        stdout: output.clone(),
        stderr: output,
        size,
        env,
        tty: false,
    };
    (size_sender, stdio)
}
