//! [`ContainerRuntime`]: how a simulated kubelet runs a container's command (the CRI of
//! the simulation). The server hands the cluster one that runs the project's built-in
//! commands (the ones exec runs); a container whose command is not one of them, or that
//! names no command (the image's entrypoint: a server such as nginx), runs until it is
//! stopped. Exec probes and lifecycle hooks run commands in a container the same way,
//! their outcome reported through [`ExecResults`].

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

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

    /// Runs `command` in a container (an exec probe or hook: its output is not the
    /// container's log) for at most `timeout`; its outcome goes to `results` under `id`.
    /// Returns at once.
    fn exec(
        &self,
        command: ContainerCommand,
        timeout: Duration,
        id: u64,
        results: Arc<ExecResults>,
    );
}

/// The shortest real time a command run in a container (an exec probe or hook) is
/// allowed, so a quick command is not cut off at a time scale of 0.
const MIN_EXEC_TIMEOUT: Duration = Duration::from_millis(100);

/// Runs `argv` (with the container's `env`) in a container through `runtime` for at most
/// `timeout` (but at least 100 ms); its outcome comes to `execs` under the id returned.
pub(crate) fn start_exec(
    runtime: &dyn ContainerRuntime,
    execs: &Arc<ExecResults>,
    argv: &[String],
    env: &[String],
    timeout: Duration,
) -> u64 {
    let id = execs.begin();
    let command = ContainerCommand {
        argv: argv.to_vec(),
        env: env.to_vec(),
    };
    runtime.exec(
        command,
        timeout.max(MIN_EXEC_TIMEOUT),
        id,
        Arc::clone(execs),
    );
    id
}

/// How a command run in a container ([`ContainerRuntime::exec`]) ended.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum ExecOutcome {
    /// It exited with `code`, having written `output` (stdout and stderr, the first 10 KiB).
    Exited { code: i32, output: String },
    /// It ran past its timeout and was stopped.
    TimedOut,
    /// It names no built-in command: software the simulation cannot run, taken to work.
    NotBuiltin,
}

/// The outcomes of commands run in containers, until the kubelet takes them; recording
/// one wakes the cluster. Only outcomes the kubelet still waits for are kept (one that
/// arrives after [`forget`](Self::forget) is dropped), so the map stays as small as the
/// number of commands running.
#[derive(Debug)]
pub(crate) struct ExecResults {
    /// By id: `None` while the command runs.
    outcomes: Mutex<HashMap<u64, Option<ExecOutcome>>>,
    next_id: AtomicU64,
    wake: Arc<Notify>,
}

impl ExecResults {
    pub(crate) fn new(wake: Arc<Notify>) -> Self {
        ExecResults {
            outcomes: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            wake,
        }
    }

    /// A new id to run a command under; its outcome is awaited.
    pub(crate) fn begin(&self) -> u64 {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        crate::sync::lock(&self.outcomes).insert(id, None);
        id
    }

    /// The command `id` ended (ignored when nobody waits for it any more).
    pub(crate) fn record(&self, id: u64, outcome: ExecOutcome) {
        if let Some(slot) = crate::sync::lock(&self.outcomes).get_mut(&id) {
            *slot = Some(outcome);
            self.wake.notify_one();
        }
    }

    /// The outcome of `id`, once it ended (then forgotten).
    pub(crate) fn take(&self, id: u64) -> Option<ExecOutcome> {
        let mut outcomes = crate::sync::lock(&self.outcomes);
        let outcome = outcomes.get_mut(&id)?.take()?;
        outcomes.remove(&id);
        Some(outcome)
    }

    /// Whether a command ended whose outcome the kubelet has not taken yet (the Pods
    /// waiting for one must be synced even if nothing else changed).
    pub(crate) fn any_ended(&self) -> bool {
        crate::sync::lock(&self.outcomes)
            .values()
            .any(Option::is_some)
    }

    /// Nobody waits for `id` any more.
    pub(crate) fn forget(&self, id: u64) {
        crate::sync::lock(&self.outcomes).remove(&id);
    }
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
