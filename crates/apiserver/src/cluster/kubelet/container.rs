//! One container of a Pod a simulated kubelet runs: its state as the status reports it,
//! starting it (with its `postStart` hook and fresh probe workers), taking its exit,
//! killing it (a failed liveness or startup probe or `postStart` hook: a `Killing`
//! Event, its `preStop` hook, the kill when the grace period ends) and the restart
//! back-off.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::event_recorder::ContainerEvent;
use super::handler::{Action, container_ports};
use super::lifecycle::{HookEnv, HookRun, Stopping};
use super::prober::{ProbeEnv, ProbeType, Probes};
use super::runtime::{ContainerCommand, ContainerKey, ContainerRuntime, ExecResults, Exits};
use crate::cluster::cluster_options::ClusterOptions;
use crate::cluster::stages::Transition;
use crate::object::now;

/// kubelet's first back-off before restarting a container, and its cap.
const INITIAL_BACKOFF: Duration = Duration::from_secs(10);
const MAX_BACKOFF: Duration = Duration::from_secs(300);

/// The exit code of a process killed with SIGKILL when its grace period ended.
pub(super) const KILLED_EXIT_CODE: i32 = 137;

/// kubelet's `minimumGracePeriodInSeconds`: a killed container always gets this long.
const MINIMUM_GRACE_SECONDS: u64 = 2;

/// How long a `postStart` exec hook may run (kubelet gives it no timeout; the built-in
/// `sleep` ends within a day anyway).
const POST_START_TIMEOUT: Duration = Duration::from_secs(86_400);

/// A container's state, as the status reports it.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum ContainerState {
    Waiting { reason: String, message: String },
    Running { started_at: String },
    Terminated(Termination),
}

/// How a container's run ended.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Termination {
    pub(super) exit_code: i32,
    pub(super) reason: &'static str,
    pub(super) started_at: String,
    pub(super) finished_at: String,
    pub(super) container_id: String,
}

/// What a container's pass works with: its Pod (the stored object), its address and
/// grace period, and the machinery.
pub(super) struct PassEnv<'a> {
    pub(super) pod: &'a Value,
    pub(super) pod_ip: &'a str,
    /// The Pod's `terminationGracePeriodSeconds` (default 30).
    pub(super) grace_seconds: u64,
    /// Whether the `restartPolicy` restarts a failed container.
    pub(super) restarts_failed: bool,
    pub(super) options: &'a ClusterOptions,
    pub(super) runtime: &'a dyn ContainerRuntime,
    pub(super) exits: &'a Arc<Exits>,
    pub(super) execs: &'a Arc<ExecResults>,
}

impl PassEnv<'_> {
    /// The scaled delay the stages give the Pod's `transition`.
    pub(super) fn stages_delay(&self, transition: Transition) -> Duration {
        self.options
            .scaled(self.options.stages.delay(transition, self.pod))
    }
}

/// One container of a Pod the kubelet runs.
#[derive(Debug)]
pub(super) struct ContainerRun {
    pub(super) name: String,
    pub(super) image: String,
    pub(super) container_id: String,
    pub(super) state: ContainerState,
    pub(super) last_termination: Option<Termination>,
    pub(super) restart_count: u32,
    command: ContainerCommand,
    pub(super) restart_at: Option<Instant>,
    ports: Vec<(String, i64)>,
    probes: Probes,
    post_start_action: Option<Action>,
    pre_stop_action: Option<Action>,
    /// The `postStart` hook running: the container is not reported started until it ends.
    pub(super) post_start: Option<HookRun>,
    /// The container is being killed.
    stopping: Option<Stopping>,
    /// When the `pod-ready` stage lets the started container count as ready.
    ready_at: Option<Instant>,
}

impl ContainerRun {
    pub(super) fn new(spec: &Value, pod_name: &str) -> ContainerRun {
        let strings = |field: &str| -> Vec<String> {
            spec[field]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        };
        let mut argv = strings("command");
        if !argv.is_empty() {
            argv.extend(strings("args"));
        }
        let mut env = vec![format!("HOSTNAME={pod_name}")];
        for var in spec["env"].as_array().into_iter().flatten() {
            if let (Some(name), Some(value)) = (var["name"].as_str(), var["value"].as_str()) {
                env.push(format!("{name}={value}"));
            }
        }
        let hook = |name: &str| {
            spec.pointer(&format!("/lifecycle/{name}"))
                .and_then(Action::parse)
        };
        ContainerRun {
            name: spec["name"].as_str().unwrap_or("").to_owned(),
            image: spec["image"].as_str().unwrap_or("").to_owned(),
            container_id: String::new(),
            state: ContainerState::Waiting {
                reason: "PodInitializing".to_owned(),
                message: String::new(),
            },
            last_termination: None,
            restart_count: 0,
            command: ContainerCommand { argv, env },
            restart_at: None,
            ports: container_ports(spec),
            probes: Probes::new(spec),
            post_start_action: hook("postStart"),
            pre_stop_action: hook("preStop"),
            post_start: None,
            stopping: None,
            ready_at: None,
        }
    }

    /// Whether its process runs.
    pub(super) fn running(&self) -> bool {
        matches!(self.state, ContainerState::Running { .. })
    }

    /// Whether it runs, its `postStart` hook returned and its startup probe succeeded.
    pub(super) fn started(&self) -> bool {
        self.running() && self.post_start.is_none() && self.probes.started()
    }

    /// Whether it is started and ready: its readiness probe succeeded and the
    /// `pod-ready` stage's delay passed.
    pub(super) fn ready(&self) -> bool {
        self.started() && self.probes.ready() && self.ready_at.is_none_or(|at| at <= Instant::now())
    }

    pub(super) fn exit_code(&self) -> Option<i32> {
        match &self.state {
            ContainerState::Terminated(t) => Some(t.exit_code),
            _ => None,
        }
    }

    fn hook_env<'a>(&'a self, env: &'a PassEnv<'a>) -> HookEnv<'a> {
        HookEnv {
            pod: env.pod,
            pod_ip: env.pod_ip,
            ports: &self.ports,
            env: &self.command.env,
            runtime: env.runtime,
            execs: env.execs,
        }
    }

    /// Starts the container's command; a main container (`main`) also starts its
    /// `postStart` hook, its probes and its `pod-ready` stage.
    pub(super) fn start(&mut self, key: ContainerKey, env: &PassEnv<'_>, main: bool) {
        self.container_id = format!("containerd://{}", uuid::Uuid::new_v4().simple());
        self.state = ContainerState::Running { started_at: now() };
        self.restart_at = None;
        env.runtime
            .start(key, self.command.clone(), Arc::clone(env.exits));
        if !main {
            return;
        }
        let started = Instant::now();
        self.probes.restart(started, env.options, env.execs);
        let delay = env.stages_delay(Transition::Ready);
        self.ready_at = (!delay.is_zero()).then(|| started + delay);
        if let Some(action) = &self.post_start_action {
            let hook = HookRun::start(action, &self.hook_env(env), POST_START_TIMEOUT, |d| {
                env.options.scaled(d)
            });
            self.post_start = Some(hook);
        }
    }

    /// Takes the exit of the running container, if its command ended.
    pub(super) fn collect_exit(
        &mut self,
        key: &ContainerKey,
        exits: &Exits,
        execs: &ExecResults,
    ) -> bool {
        let ContainerState::Running { started_at } = &self.state else {
            return false;
        };
        let Some(code) = exits.take(key) else {
            return false;
        };
        self.state = ContainerState::Terminated(Termination {
            exit_code: code,
            reason: if code == 0 { "Completed" } else { "Error" },
            started_at: started_at.clone(),
            finished_at: now(),
            container_id: self.container_id.clone(),
        });
        self.end_hooks(execs);
        true
    }

    /// Kills the running container (SIGKILL: exit 137).
    pub(super) fn kill(
        &mut self,
        key: &ContainerKey,
        runtime: &dyn ContainerRuntime,
        execs: &ExecResults,
    ) {
        if let ContainerState::Running { started_at } = &self.state {
            self.state = ContainerState::Terminated(Termination {
                exit_code: KILLED_EXIT_CODE,
                reason: "Error",
                started_at: started_at.clone(),
                finished_at: now(),
                container_id: self.container_id.clone(),
            });
        }
        runtime.stop(key);
        self.end_hooks(execs);
    }

    /// Its process is gone: hooks and probes are no longer waited for.
    fn end_hooks(&mut self, execs: &ExecResults) {
        self.probes.stop(execs);
        if let Some(hook) = self.post_start.take() {
            hook.abandon(execs);
        }
        if let Some(Stopping {
            pre_stop: Some(hook),
            ..
        }) = self.stopping.take()
        {
            hook.abandon(execs);
        }
    }

    /// Starts killing the container: a `Killing` Event with `message`, its `preStop`
    /// hook, the kill `grace_seconds` later (scaled; at least kubelet's 2 s).
    fn begin_stop(
        &mut self,
        message: String,
        grace_seconds: u64,
        env: &PassEnv<'_>,
        events: &mut Vec<ContainerEvent>,
    ) {
        events.push(self.event("Normal", "Killing", message));
        let grace = env.options.scaled(Duration::from_secs(grace_seconds));
        let pre_stop = self
            .pre_stop_action
            .as_ref()
            .filter(|_| grace_seconds > 0)
            .map(|action| {
                HookRun::start(action, &self.hook_env(env), grace, |d| {
                    env.options.scaled(d)
                })
            });
        let kill_after = grace_seconds.max(MINIMUM_GRACE_SECONDS);
        self.stopping = Some(Stopping {
            kill_at: Instant::now() + env.options.scaled(Duration::from_secs(kill_after)),
            pre_stop,
        });
    }

    /// The Pod is being deleted: the running container's `preStop` hook starts, allowed
    /// until the grace period ends at `ends` (`grace`, scaled, from now).
    pub(super) fn begin_pre_stop(&mut self, ends: Instant, grace: Duration, env: &PassEnv<'_>) {
        if !self.running() || self.stopping.is_some() {
            return;
        }
        let pre_stop = self.pre_stop_action.as_ref().map(|action| {
            HookRun::start(action, &self.hook_env(env), grace, |d| {
                env.options.scaled(d)
            })
        });
        self.stopping = Some(Stopping {
            kill_at: ends,
            pre_stop,
        });
    }

    /// Follows a running `preStop` hook: a failure is a `FailedPreStopHook` Event. How
    /// long until a sleep hook ends.
    pub(super) fn follow_pre_stop(
        &mut self,
        execs: &ExecResults,
        events: &mut Vec<ContainerEvent>,
    ) -> Option<Duration> {
        let stopping = self.stopping.as_mut()?;
        let hook = stopping.pre_stop.as_mut()?;
        let Some(outcome) = hook.poll(execs) else {
            return hook.wait();
        };
        stopping.pre_stop = None;
        if outcome.is_err() {
            // kubelet leaves the hook's message out, so no secret leaks through Events.
            events.push(self.event(
                "Warning",
                "FailedPreStopHook",
                "PreStopHook failed".to_owned(),
            ));
        }
        None
    }

    /// One pass over the running container: its `postStart` hook, a kill under way, its
    /// probes. How long until something of it is due.
    pub(super) fn tend(
        &mut self,
        key: &ContainerKey,
        env: &PassEnv<'_>,
        events: &mut Vec<ContainerEvent>,
    ) -> Option<Duration> {
        if let Some(hook) = self.post_start.as_mut() {
            match hook.poll(env.execs) {
                None => return hook.wait(),
                Some(Ok(())) => self.post_start = None,
                Some(Err(_)) => {
                    self.post_start = None;
                    events.push(self.event(
                        "Warning",
                        "FailedPostStartHook",
                        "PostStartHook failed".to_owned(),
                    ));
                    self.begin_stop(
                        "FailedPostStartHook".to_owned(),
                        env.grace_seconds,
                        env,
                        events,
                    );
                }
            }
        }
        if let Some(kill_at) = self.stopping.as_ref().map(|s| s.kill_at) {
            let now = Instant::now();
            if kill_at <= now {
                // A hook still running is cut off, unreported.
                self.kill(key, env.runtime, env.execs);
                // The restart is the next pass's.
                return Some(Duration::ZERO);
            }
            let wait = kill_at - now;
            let hook_wait = self.follow_pre_stop(env.execs, events);
            return Some(hook_wait.map_or(wait, |h| h.min(wait)));
        }
        let step = self.probes.step(&ProbeEnv {
            pod: env.pod,
            pod_ip: env.pod_ip,
            ports: &self.ports,
            env: &self.command.env,
            options: env.options,
            runtime: env.runtime,
            execs: env.execs,
        });
        for message in step.unhealthy {
            events.push(self.event("Warning", "Unhealthy", message));
        }
        if let Some(kind) = step.kill {
            let probe = match kind {
                ProbeType::Liveness => "liveness",
                ProbeType::Startup => "startup",
                ProbeType::Readiness => "readiness",
            };
            let mut message = format!("Container {} failed {probe} probe", self.name);
            if env.restarts_failed {
                message.push_str(", will be restarted");
            }
            let grace = self
                .probes
                .spec(kind)
                .and_then(|s| s.termination_grace)
                .unwrap_or(env.grace_seconds);
            self.begin_stop(message, grace, env, events);
            return self
                .stopping
                .as_ref()
                .map(|s| s.kill_at.saturating_duration_since(Instant::now()));
        }
        let until_ready = self
            .ready_at
            .map(|at| at.saturating_duration_since(Instant::now()))
            .filter(|d| !d.is_zero());
        match (step.wait, until_ready) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn event(&self, kind: &'static str, reason: &'static str, message: String) -> ContainerEvent {
        ContainerEvent {
            container: self.name.clone(),
            kind,
            reason,
            message,
        }
    }

    /// Puts the container that ended into `CrashLoopBackOff` for kubelet's back-off, or
    /// returns `None` when the back-off already passed (it restarts now).
    pub(super) fn back_off(
        &mut self,
        termination: Termination,
        pod: &str,
        namespace: &str,
        uid: &str,
        options: &ClusterOptions,
    ) -> Option<Duration> {
        if self.restart_at.is_none() {
            // The first restart comes at once as well, as kubelet's.
            if self.restart_count == 0 && self.last_termination.is_none() {
                self.last_termination = Some(termination);
                self.restart_count += 1;
                return None;
            }
            let doublings = self.restart_count.saturating_sub(1).min(16);
            let delay = (INITIAL_BACKOFF * 2u32.pow(doublings)).min(MAX_BACKOFF);
            self.restart_at = Some(Instant::now() + options.scaled(delay));
            self.last_termination = Some(termination);
            self.restart_count += 1;
            self.state = ContainerState::Waiting {
                reason: "CrashLoopBackOff".to_owned(),
                message: format!(
                    "back-off {}s restarting failed container={} pod={pod}_{namespace}({uid})",
                    delay.as_secs(),
                    self.name
                ),
            };
        }
        let at = self.restart_at?;
        let now = Instant::now();
        (at > now).then(|| at - now)
    }
}
