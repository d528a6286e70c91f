//! kubelet's prober (`pkg/kubelet/prober`): a container's readiness, liveness and
//! startup probes, each a worker as kubelet's `worker.doProbe`.
//!
//! - A worker waits `initialDelaySeconds` after the container started, then probes every
//!   `periodSeconds`; a result counts once it repeats `successThreshold` (success) or
//!   `failureThreshold` (failure) times in a row. Defaults as kube-apiserver's: period 10,
//!   timeout 1, success 1, failure 3. Durations are scaled by the time scale; the period
//!   is at least 50 ms and an exec probe's timeout at least 100 ms of real time, so a
//!   time scale of 0 probes on (about) every pass and a quick command is not cut off.
//! - Until the startup probe succeeded the container is not `started` and the other two
//!   do not run; readiness starts as failed (no readiness probe: ready once started),
//!   liveness as succeeded.
//! - A liveness failure, or a startup probe reaching either threshold, holds the worker
//!   until the container is replaced; a failed liveness or startup probe makes the
//!   container be killed (the caller's business).
//! - Exec probes run the command through the [`ContainerRuntime`] without blocking a
//!   pass: the outcome is taken on a later pass. Exit 0 succeeds; another code fails with
//!   the command's output; running past the timeout fails with kubelet's `command "..."
//!   timed out`; a command that is not a built-in counts as succeeding (software the
//!   simulation cannot run is taken to work). HTTP, TCP and gRPC probes succeed unless
//!   their port is closed ([`handler`](super::handler)).
//! - Every failed probe is an `Unhealthy` Warning Event ("Readiness probe failed: ...").

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::handler::{Action, Reach, reach};
use super::runtime::{ContainerRuntime, ExecOutcome, ExecResults, start_exec};
use crate::cluster::cluster_options::ClusterOptions;

/// The shortest real time between two probes of one worker.
const MIN_PERIOD: Duration = Duration::from_millis(50);

/// Which probe a worker runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ProbeType {
    Startup,
    Liveness,
    Readiness,
}

impl ProbeType {
    /// The name kubelet's events use.
    pub(super) fn name(self) -> &'static str {
        match self {
            ProbeType::Startup => "Startup",
            ProbeType::Liveness => "Liveness",
            ProbeType::Readiness => "Readiness",
        }
    }

    fn field(self) -> &'static str {
        match self {
            ProbeType::Startup => "startupProbe",
            ProbeType::Liveness => "livenessProbe",
            ProbeType::Readiness => "readinessProbe",
        }
    }

    /// The result before the first probe counts (kubelet's `initialValue`).
    fn initial(self) -> Option<bool> {
        match self {
            ProbeType::Startup => None,
            ProbeType::Liveness => Some(true),
            ProbeType::Readiness => Some(false),
        }
    }
}

/// A probe as the container's spec gives it, defaulted.
#[derive(Debug)]
pub(super) struct ProbeSpec {
    action: Option<Action>,
    initial_delay: Duration,
    period: Duration,
    timeout: Duration,
    success_threshold: u32,
    failure_threshold: u32,
    /// The probe's own `terminationGracePeriodSeconds` (for the kill a failure causes).
    pub(super) termination_grace: Option<u64>,
}

impl ProbeSpec {
    fn parse(probe: &Value) -> ProbeSpec {
        let number = |field: &str, default: u64| probe[field].as_u64().unwrap_or(default);
        let count = |field: &str, default: u64| {
            u32::try_from(number(field, default).max(1)).unwrap_or(u32::MAX)
        };
        ProbeSpec {
            action: Action::parse(probe),
            initial_delay: Duration::from_secs(number("initialDelaySeconds", 0).min(86_400)),
            period: Duration::from_secs(number("periodSeconds", 10).clamp(1, 86_400)),
            timeout: Duration::from_secs(number("timeoutSeconds", 1).clamp(1, 86_400)),
            success_threshold: count("successThreshold", 1),
            failure_threshold: count("failureThreshold", 3),
            termination_grace: probe["terminationGracePeriodSeconds"].as_u64(),
        }
    }
}

/// What one probe came to.
enum Outcome {
    Success,
    Failure(String),
    /// The probe could not be made; its result is thrown away.
    Error(String),
}

/// One probe of a container (kubelet's probe worker).
#[derive(Debug)]
pub(super) struct Worker {
    pub(super) kind: ProbeType,
    pub(super) spec: ProbeSpec,
    /// The counted result (kubelet's results manager): `None` unknown.
    result: Option<bool>,
    /// The last outcome and how many times in a row it came.
    last: Option<bool>,
    run: u32,
    /// Held after a liveness failure or a startup verdict, until a new container.
    on_hold: bool,
    next_at: Option<Instant>,
    /// The exec probe running, by its [`ExecResults`] id.
    pending: Option<u64>,
}

/// Where a container's probes run: its Pod, address, ports and environment.
pub(super) struct ProbeEnv<'a> {
    pub(super) pod: &'a Value,
    pub(super) pod_ip: &'a str,
    pub(super) ports: &'a [(String, i64)],
    pub(super) env: &'a [String],
    pub(super) options: &'a ClusterOptions,
    pub(super) runtime: &'a dyn ContainerRuntime,
    pub(super) execs: &'a Arc<ExecResults>,
}

/// What a pass of a container's probes asks for.
#[derive(Debug, Default)]
pub(super) struct ProbeStep {
    /// `Unhealthy` Event messages.
    pub(super) unhealthy: Vec<String>,
    /// The probe whose failure means the container is to be killed.
    pub(super) kill: Option<ProbeType>,
    /// How long until a worker is due again.
    pub(super) wait: Option<Duration>,
}

/// The probes of one container.
#[derive(Debug, Default)]
pub(super) struct Probes {
    workers: Vec<Worker>,
}

impl Probes {
    /// The probes `container` (its spec) declares.
    pub(super) fn new(container: &Value) -> Probes {
        let workers = [
            ProbeType::Startup,
            ProbeType::Liveness,
            ProbeType::Readiness,
        ]
        .into_iter()
        .filter_map(|kind| {
            let probe = container.get(kind.field()).filter(|p| p.is_object())?;
            Some(Worker {
                kind,
                spec: ProbeSpec::parse(probe),
                result: kind.initial(),
                last: None,
                run: 0,
                on_hold: false,
                next_at: None,
                pending: None,
            })
        })
        .collect();
        Probes { workers }
    }

    fn worker(&self, kind: ProbeType) -> Option<&Worker> {
        self.workers.iter().find(|w| w.kind == kind)
    }

    /// The probe of `kind`, if the container has one.
    pub(super) fn spec(&self, kind: ProbeType) -> Option<&ProbeSpec> {
        self.worker(kind).map(|w| &w.spec)
    }

    /// Whether the running container counts as started (its startup probe succeeded).
    pub(super) fn started(&self) -> bool {
        self.worker(ProbeType::Startup)
            .is_none_or(|w| w.result == Some(true))
    }

    /// Whether the running, started container counts as ready.
    pub(super) fn ready(&self) -> bool {
        self.worker(ProbeType::Readiness)
            .is_none_or(|w| w.result == Some(true))
    }

    /// A new container started at `started_at`: every worker starts over.
    pub(super) fn restart(
        &mut self,
        started_at: Instant,
        options: &ClusterOptions,
        execs: &ExecResults,
    ) {
        for worker in &mut self.workers {
            if let Some(id) = worker.pending.take() {
                execs.forget(id);
            }
            worker.result = worker.kind.initial();
            worker.last = None;
            worker.run = 0;
            worker.on_hold = false;
            worker.next_at = Some(started_at + options.scaled(worker.spec.initial_delay));
        }
    }

    /// The container stopped: running exec probes are no longer waited for, and it is
    /// not ready.
    pub(super) fn stop(&mut self, execs: &ExecResults) {
        for worker in &mut self.workers {
            if let Some(id) = worker.pending.take() {
                execs.forget(id);
            }
            if worker.kind == ProbeType::Readiness {
                worker.result = Some(false);
            }
        }
    }

    /// Runs the workers that are due over the running container.
    pub(super) fn step(&mut self, env: &ProbeEnv<'_>) -> ProbeStep {
        let mut step = ProbeStep::default();
        // The startup worker first: the others wait for its verdict.
        for index in 0..self.workers.len() {
            let started = self.started();
            let worker = &mut self.workers[index];
            if worker.on_hold {
                continue;
            }
            let gated = match worker.kind {
                ProbeType::Startup => started,
                _ => !started,
            };
            let outcome = match worker.pending {
                Some(id) => match env.execs.take(id) {
                    Some(outcome) => {
                        worker.pending = None;
                        exec_outcome(outcome, &worker.spec)
                    }
                    None => continue,
                },
                None if gated => continue,
                None => {
                    let now = Instant::now();
                    let due = worker.next_at.unwrap_or(now);
                    if due > now {
                        note(&mut step.wait, due - now);
                        continue;
                    }
                    let period = env.options.scaled(worker.spec.period).max(MIN_PERIOD);
                    worker.next_at = Some(now + period);
                    note(&mut step.wait, period);
                    match worker.probe(env) {
                        Some(outcome) => outcome,
                        None => continue,
                    }
                }
            };
            if let Some(message) = worker.count(outcome) {
                step.unhealthy.push(message);
            }
            let counted_failure = worker.result == Some(false) && worker.on_hold;
            if counted_failure && step.kill.is_none() {
                step.kill = Some(worker.kind);
            }
        }
        step
    }
}

impl Worker {
    /// Starts a probe: the outcome at once, or `None` for an exec probe now running.
    fn probe(&mut self, env: &ProbeEnv<'_>) -> Option<Outcome> {
        let timeout = env.options.scaled(self.spec.timeout);
        let Some(action) = &self.spec.action else {
            return Some(Outcome::Error(format!(
                "missing probe handler for {}",
                self.kind.field()
            )));
        };
        if let Action::Exec(argv) = action {
            self.pending = Some(start_exec(env.runtime, env.execs, argv, env.env, timeout));
            return None;
        }
        Some(
            match reach(action, env.pod, env.ports, env.pod_ip, self.spec.timeout) {
                Some(Reach::Answered) | None => Outcome::Success,
                Some(Reach::Refused(message)) => Outcome::Failure(message),
                Some(Reach::Error(message)) => Outcome::Error(message),
            },
        )
    }

    /// Counts an outcome against the thresholds; the `Unhealthy` message, if it failed.
    fn count(&mut self, outcome: Outcome) -> Option<String> {
        let kind = self.kind.name();
        let (success, message) = match outcome {
            Outcome::Success => (true, None),
            Outcome::Failure(output) => (false, Some(format!("{kind} probe failed: {output}"))),
            Outcome::Error(error) => return Some(format!("{kind} probe errored: {error}")),
        };
        if self.last == Some(success) {
            self.run = self.run.saturating_add(1);
        } else {
            self.last = Some(success);
            self.run = 1;
        }
        let threshold = if success {
            self.spec.success_threshold
        } else {
            self.spec.failure_threshold
        };
        if self.run >= threshold {
            self.result = Some(success);
            if (self.kind == ProbeType::Liveness && !success) || self.kind == ProbeType::Startup {
                self.on_hold = true;
                self.run = 0;
            }
        }
        message
    }
}

/// What an exec probe's command came to.
fn exec_outcome(outcome: ExecOutcome, spec: &ProbeSpec) -> Outcome {
    match outcome {
        ExecOutcome::Exited { code: 0, .. } | ExecOutcome::NotBuiltin => Outcome::Success,
        ExecOutcome::Exited { output, .. } => Outcome::Failure(output),
        ExecOutcome::TimedOut => {
            let command = match &spec.action {
                Some(Action::Exec(argv)) => argv.join(" "),
                _ => String::new(),
            };
            Outcome::Failure(format!("command {command:?} timed out"))
        }
    }
}

fn note(wait: &mut Option<Duration>, d: Duration) {
    *wait = Some(wait.map_or(d, |w| w.min(d)));
}
