//! Lifecycle hooks (`pkg/kubelet/lifecycle`, kuberuntime's `startContainer` and
//! `killContainer`): `postStart` runs once a container started, and the container is
//! not reported (nor the next containers started) until it returns; if it fails the
//! container is killed (`FailedPostStartHook`). `preStop` runs when a container is
//! killed (its Pod deleted, a failed liveness probe), within the grace period: a hook
//! still running when the grace period ends is cut off. A failed one is a
//! `FailedPreStopHook` Event.
//!
//! Exec hooks run the command through the [`ContainerRuntime`] (exit 0 succeeds; a
//! command that is not a built-in counts as succeeding); HTTP hooks succeed unless
//! their port is closed ([`handler`](super::handler)); `sleep` hooks wait their
//! (scaled) seconds.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::handler::{Action, Reach, reach};
use super::runtime::{ContainerRuntime, ExecOutcome, ExecResults, start_exec};

/// A hook that runs.
#[derive(Debug)]
pub(super) enum HookRun {
    /// An exec hook, by its [`ExecResults`] id.
    Exec(u64),
    /// A sleep hook, until then.
    Sleep(Instant),
    /// A hook that ended at once (HTTP): its outcome.
    Done(Result<(), String>),
}

/// Where a hook runs: its container's environment, ports, Pod and address.
pub(super) struct HookEnv<'a> {
    pub(super) pod: &'a serde_json::Value,
    pub(super) pod_ip: &'a str,
    pub(super) ports: &'a [(String, i64)],
    pub(super) env: &'a [String],
    pub(super) runtime: &'a dyn ContainerRuntime,
    pub(super) execs: &'a Arc<ExecResults>,
}

impl HookRun {
    /// Starts `action`, allowed `timeout` (already scaled); `sleep` sleeps `scaled(seconds)`.
    pub(super) fn start(
        action: &Action,
        env: &HookEnv<'_>,
        timeout: Duration,
        scale: impl Fn(Duration) -> Duration,
    ) -> HookRun {
        match action {
            Action::Exec(argv) => {
                HookRun::Exec(start_exec(env.runtime, env.execs, argv, env.env, timeout))
            }
            Action::Sleep(seconds) => HookRun::Sleep(Instant::now() + scale(*seconds)),
            other => HookRun::Done(
                match reach(other, env.pod, env.ports, env.pod_ip, timeout) {
                    Some(Reach::Refused(message) | Reach::Error(message)) => Err(message),
                    Some(Reach::Answered) | None => Ok(()),
                },
            ),
        }
    }

    /// The hook's outcome once it ended (`Err`: it failed, with why).
    pub(super) fn poll(&mut self, execs: &ExecResults) -> Option<Result<(), String>> {
        match self {
            HookRun::Exec(id) => match execs.take(*id)? {
                ExecOutcome::Exited { code: 0, .. } | ExecOutcome::NotBuiltin => Some(Ok(())),
                ExecOutcome::Exited { code, output } => Some(Err(format!(
                    "command exited with {code}, message: {output:?}"
                ))),
                ExecOutcome::TimedOut => Some(Err("command timed out".to_owned())),
            },
            HookRun::Sleep(until) => (Instant::now() >= *until).then_some(Ok(())),
            HookRun::Done(outcome) => Some(outcome.clone()),
        }
    }

    /// How long until a sleep hook ends (others report through the wake-up).
    pub(super) fn wait(&self) -> Option<Duration> {
        match self {
            HookRun::Sleep(until) => Some(until.saturating_duration_since(Instant::now())),
            _ => None,
        }
    }

    /// The hook is no longer waited for.
    pub(super) fn abandon(self, execs: &ExecResults) {
        if let HookRun::Exec(id) = self {
            execs.forget(id);
        }
    }
}

/// A container being killed (a failed liveness, startup or postStart hook): its preStop
/// hook runs, then it is killed when the grace period ends (the simulated processes
/// ignore SIGTERM).
#[derive(Debug)]
pub(super) struct Stopping {
    pub(super) kill_at: Instant,
    pub(super) pre_stop: Option<HookRun>,
}
