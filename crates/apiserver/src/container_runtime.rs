//! [`BuiltinRuntime`]: the simulated kubelets' container runtime, running containers'
//! commands as the server's built-in commands (the ones exec and attach run: `echo`,
//! `sleep`, `exit`, `true`, `false` ...). Each runs on its own task; its exit code goes
//! back to the kubelet. A container whose command is not a built-in (or that has none:
//! the image's entrypoint) runs until its Pod stops. Their output is not kept yet (see
//! docs/APISERVER.md, "Simulated cluster").

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::runtime::Handle;
use tokio::sync::watch;
use tokio::task::AbortHandle;

use crate::cluster::{ContainerCommand, ContainerKey, ContainerRuntime, Exits};
use crate::streams::builtin_commands::{self, Output, Stdio};

/// Runs containers' commands on the server's runtime.
#[derive(Debug)]
pub(crate) struct BuiltinRuntime {
    handle: Handle,
    running: Arc<Mutex<HashMap<ContainerKey, AbortHandle>>>,
}

impl BuiltinRuntime {
    /// A runtime spawning on the current Tokio runtime.
    pub(crate) fn new(handle: Handle) -> Self {
        BuiltinRuntime {
            handle,
            running: Arc::default(),
        }
    }
}

impl ContainerRuntime for BuiltinRuntime {
    fn start(&self, key: ContainerKey, command: ContainerCommand, exits: Arc<Exits>) -> bool {
        if command.argv.is_empty() {
            return false;
        }
        let running = Arc::clone(&self.running);
        let task_key = key.clone();
        let task = self.handle.spawn(async move {
            let (_size_sender, size) = watch::channel(None);
            let mut stdio = Stdio {
                stdin: None,
                stdout: Output {
                    writer: None,
                    channel: 1,
                },
                stderr: Output {
                    writer: None,
                    channel: 2,
                },
                size,
                env: command.env,
                tty: false,
            };
            match builtin_commands::run(&command.argv, &mut stdio).await {
                Ok(code) => {
                    crate::sync::lock(&running).remove(&task_key);
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
    }
}
