//! The simulated kubelets (`pkg/kubelet`'s pod workers and status manager, without
//! containers): each running kubelet takes the Pods bound to its node and reports them
//! as a real one does.
//!
//! - A new Pod gets an address from the node's Pod CIDR, its init containers run one
//!   after the other (each must exit 0; a failed one restarts with back-off unless the
//!   Pod's `restartPolicy` is `Never`, which fails the Pod), then its containers start:
//!   phase `Running`, conditions `PodReadyToStartContainers`, `Initialized`,
//!   `ContainersReady`, `Ready` and `PodScheduled`, container statuses with
//!   `started`, `ready`, `restartCount`, `state` and `lastState`.
//! - Containers run through a [`ContainerRuntime`] (the server's built-in commands). One
//!   that exits is restarted by the `restartPolicy` (`Always`; `OnFailure` when it
//!   failed) after kubelet's back-off (10 s doubling to 5 min, scaled by the time scale,
//!   shown as `CrashLoopBackOff`); when no container runs or will run again the Pod ends
//!   `Succeeded` (every exit code 0) or `Failed`.
//! - A deleted Pod (its `deletionTimestamp` set, the grace period running) keeps running
//!   for its `deletionGracePeriodSeconds` (scaled by the time scale), its containers'
//!   `preStop` hooks running meanwhile: the simulated processes ignore SIGTERM, so they
//!   are killed (exit code 137) when it ends. The kubelet then reports the final status
//!   and deletes the Pod with a grace period of 0.
//! - Probes ([`prober`]), lifecycle hooks ([`lifecycle`]) and the stages' delays
//!   ([`Stages`](super::stages::Stages)) as their modules say; container Events go through
//!   [`event_recorder`].

mod container;
mod event_recorder;
mod handler;
mod lifecycle;
mod pod_status;
mod prober;
mod runtime;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::Notify;

pub use handler::CLOSED_PORTS_ANNOTATION;
pub(crate) use runtime::{
    ContainerCommand, ContainerKey, ContainerRuntime, ExecOutcome, ExecResults, Exits,
};

use super::cluster_options::ClusterOptions;
use super::node::{NodeInfo, kubelet_writer, pod_ip};
use super::node_lease::Heartbeats;
use super::stages::Transition;
use super::writer::PODS;
use crate::object::now;
use crate::registry::store::GenericStore;
use container::{ContainerRun, ContainerState, PassEnv, Termination};
use event_recorder::{ContainerEvent, EventRecorder};

/// What the kubelets remember between passes.
#[derive(Debug)]
pub(crate) struct KubeletState {
    heartbeats: Heartbeats,
    /// The Pods the kubelets run, by uid.
    pods: HashMap<String, PodRun>,
    /// The uids of `pods` by node (each kubelet's own Pods).
    by_node: HashMap<String, HashSet<String>>,
    exits: Arc<Exits>,
    execs: Arc<ExecResults>,
    events: EventRecorder,
}

impl KubeletState {
    pub(crate) fn new(wake: Arc<Notify>) -> Self {
        KubeletState {
            heartbeats: Heartbeats::default(),
            pods: HashMap::new(),
            by_node: HashMap::new(),
            exits: Arc::new(Exits::new(Arc::clone(&wake))),
            execs: Arc::new(ExecResults::new(wake)),
            events: EventRecorder::default(),
        }
    }

    /// Renews `node`'s Lease if due; how long until the next renewal.
    pub(crate) fn heartbeat(
        &mut self,
        store: &GenericStore<'_>,
        node: &str,
        options: &ClusterOptions,
    ) -> Duration {
        self.heartbeats.beat(store, node, options)
    }

    /// The kubelet of `node` restarts: it renews its Lease at once.
    pub(crate) fn forget_heartbeat(&mut self, node: &str) {
        self.heartbeats.forget(node);
    }

    /// The uids of the Pods whose containers exited since the last pass (their kubelet
    /// has work to do even if the Pod did not change).
    pub(crate) fn exited(&self) -> HashSet<String> {
        self.exits.uids()
    }

    /// Runs `node`'s kubelet over `pods` (every Pod bound to it); how long until one of
    /// its timers (a back-off, a grace period) ends. A Pod it already runs that did not
    /// change, whose containers did not exit (`exited`) and whose timers did not end is
    /// left as it is: a pass would find nothing to do for it.
    pub(crate) fn sync_pods(
        &mut self,
        store: &GenericStore<'_>,
        node: &NodeInfo,
        pods: &[&Value],
        exited: &HashSet<String>,
        options: &ClusterOptions,
        runtime: &dyn ContainerRuntime,
    ) -> Duration {
        let writer = kubelet_writer(store, &node.name);
        let mut next = Duration::from_secs(3600);
        let mut present: HashSet<&str> = HashSet::with_capacity(pods.len());
        let now_instant = Instant::now();
        // An exec probe or hook that ended is not tied to its Pod here: every Pod is synced.
        let execs_ended = self.execs.any_ended();
        for pod in pods {
            let uid = str_at(pod, "/metadata/uid");
            present.insert(uid);
            if let Some(run) = self.pods.get(uid)
                && !execs_ended
                && run.quiet(pod, now_instant, exited)
            {
                if let Some(due) = run.due {
                    next = next.min(due.saturating_duration_since(now_instant));
                }
                continue;
            }
            let deleting = pod.pointer("/metadata/deletionTimestamp").is_some();
            if !self.pods.contains_key(uid) {
                if deleting {
                    // Never started here: nothing to stop.
                    writer.delete(
                        PODS,
                        Some(str_at(pod, "/metadata/namespace")),
                        str_at(pod, "/metadata/name"),
                        uid,
                        Some(0),
                    );
                    continue;
                }
                if matches!(
                    pod.pointer("/status/phase").and_then(Value::as_str),
                    Some("Succeeded" | "Failed")
                ) {
                    continue;
                }
                let ip = self.free_ip(node, pods);
                let mut run = PodRun::new(pod, node, ip.unwrap_or_default());
                let delay = options.scaled(options.stages.delay(Transition::Create, pod));
                run.hold_until = (!delay.is_zero()).then(|| Instant::now() + delay);
                self.pods.insert(uid.to_owned(), run);
                self.by_node
                    .entry(node.name.clone())
                    .or_default()
                    .insert(uid.to_owned());
            }
            let Some(run) = self.pods.get_mut(uid) else {
                continue;
            };
            let ip = run.ip.clone();
            let env = PassEnv {
                pod,
                pod_ip: &ip,
                grace_seconds: pod
                    .pointer("/spec/terminationGracePeriodSeconds")
                    .and_then(Value::as_u64)
                    .unwrap_or(30),
                restarts_failed: run.restart_policy != "Never",
                options,
                runtime,
                exits: &self.exits,
                execs: &self.execs,
            };
            let wait = if deleting {
                run.terminate(&env)
            } else {
                run.advance(&env)
            };
            self.events
                .record(&writer, pod, std::mem::take(&mut run.events), options);
            if let Some(wait) = wait {
                next = next.min(wait);
            }
            run.seen_version = str_at(pod, "/metadata/resourceVersion").to_owned();
            run.due = wait.map(|wait| Instant::now() + wait);
            let status = pod_status::status(run, pod);
            if pod.get("status") != Some(&status) {
                writer.update(
                    PODS,
                    Some(&run.namespace),
                    &run.name,
                    &run.uid,
                    true,
                    |object| {
                        object.insert("status".to_owned(), status.clone());
                        true
                    },
                );
            }
            if run.finished_deleting {
                writer.delete(PODS, Some(&run.namespace), &run.name, &run.uid, Some(0));
                self.forget(uid, runtime);
            }
        }
        // Pods that left (force-deleted, or bound elsewhere) stop here.
        let gone: Vec<String> = self
            .by_node
            .get(&node.name)
            .into_iter()
            .flatten()
            .filter(|uid| !present.contains(uid.as_str()))
            .cloned()
            .collect();
        for uid in gone {
            self.forget(&uid, runtime);
        }
        next
    }

    /// The Pod with `uid` left its node: its containers stop and their logs go.
    fn forget(&mut self, uid: &str, runtime: &dyn ContainerRuntime) {
        if let Some(run) = self.pods.remove(uid) {
            if let Some(uids) = self.by_node.get_mut(&run.node) {
                uids.remove(uid);
            }
            run.forget_all(runtime, &self.execs);
        }
        self.events.forget(uid);
    }

    /// The lowest address of the node's Pod CIDR no Pod on it uses.
    fn free_ip(&self, node: &NodeInfo, pods: &[&Value]) -> Option<String> {
        let mut used: HashSet<&str> = pods
            .iter()
            .map(|pod| str_at(pod, "/status/podIP"))
            .filter(|ip| !ip.is_empty())
            .collect();
        used.extend(
            self.by_node
                .get(&node.name)
                .into_iter()
                .flatten()
                .filter_map(|uid| self.pods.get(uid))
                .map(|run| run.ip.as_str()),
        );
        (2..=254u8)
            .filter_map(|offset| pod_ip(&node.pod_cidr, offset))
            .find(|ip| !used.contains(ip.as_str()))
    }
}

/// The string at `pointer` in `object` (`""` when absent).
fn str_at<'a>(object: &'a Value, pointer: &str) -> &'a str {
    object
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn text(object: &Value, pointer: &str) -> String {
    str_at(object, pointer).to_owned()
}

/// A Pod the kubelet runs.
#[derive(Debug)]
pub(super) struct PodRun {
    pub(super) namespace: String,
    pub(super) name: String,
    pub(super) uid: String,
    node: String,
    pub(super) ip: String,
    pub(super) host_ip: String,
    pub(super) start_time: String,
    init_containers: Vec<ContainerRun>,
    containers: Vec<ContainerRun>,
    restart_policy: String,
    /// When the Pod's grace period ends, and the `deletionGracePeriodSeconds` that set it.
    grace_ends: Option<(Instant, u64)>,
    finished_deleting: bool,
    /// An init container failed under `restartPolicy: Never`.
    pub(super) init_failed: bool,
    /// The `pod-create` stage: nothing starts before then.
    hold_until: Option<Instant>,
    /// The `pod-complete` stage: the final phase is reported from then on.
    complete_at: Option<Instant>,
    /// The `pod-delete` stage: the Pod's containers are killed and it is removed then.
    remove_at: Option<Instant>,
    /// Container Events of the last pass, to record.
    events: Vec<ContainerEvent>,
    /// The Pod's resourceVersion when the kubelet last synced it.
    seen_version: String,
    /// When the timer (a back-off, a grace period, a probe, a stage) the last sync
    /// reported ends.
    due: Option<Instant>,
}

impl PodRun {
    fn new(pod: &Value, node: &NodeInfo, ip: String) -> PodRun {
        let name = text(pod, "/metadata/name");
        let containers = |field: &str| -> Vec<ContainerRun> {
            pod.pointer(&format!("/spec/{field}"))
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|spec| ContainerRun::new(spec, &name))
                .collect()
        };
        let restart_policy = pod
            .pointer("/spec/restartPolicy")
            .and_then(Value::as_str)
            .unwrap_or("Always")
            .to_owned();
        let init_containers = containers("initContainers");
        let containers = containers("containers");
        PodRun {
            namespace: text(pod, "/metadata/namespace"),
            uid: text(pod, "/metadata/uid"),
            name,
            node: node.name.clone(),
            ip,
            host_ip: node.internal_ip.clone(),
            start_time: now(),
            init_containers,
            containers,
            restart_policy,
            grace_ends: None,
            finished_deleting: false,
            init_failed: false,
            hold_until: None,
            complete_at: None,
            remove_at: None,
            events: Vec::new(),
            seen_version: String::new(),
            due: None,
        }
    }

    /// Whether a sync of `pod` would find nothing to do: the kubelet synced it at its
    /// current resourceVersion, no container of it exited since and its timer has not
    /// ended.
    fn quiet(&self, pod: &Value, now: Instant, exited: &HashSet<String>) -> bool {
        self.seen_version == str_at(pod, "/metadata/resourceVersion")
            && self.due.is_none_or(|due| due > now)
            && !exited.contains(&self.uid)
    }

    fn key(&self, container: &str) -> ContainerKey {
        ContainerKey {
            namespace: self.namespace.clone(),
            pod: self.name.clone(),
            uid: self.uid.clone(),
            container: container.to_owned(),
        }
    }

    /// Whether every init container completed.
    pub(super) fn initialized(&self) -> bool {
        self.init_containers
            .iter()
            .all(|c| c.exit_code() == Some(0))
    }

    /// Whether a container that ended with `code` runs again.
    fn restarts(&self, code: i32) -> bool {
        match self.restart_policy.as_str() {
            "Never" => false,
            "OnFailure" => code != 0,
            _ => true,
        }
    }

    /// The phase the containers make (a final one held back by the `pod-complete` stage).
    pub(super) fn phase(&self) -> &'static str {
        let phase = self.container_phase();
        let held = self.complete_at.is_none_or(|at| at > Instant::now());
        if matches!(phase, "Succeeded" | "Failed")
            && !self.init_failed
            && held
            && self.grace_ends.is_none()
        {
            return "Running";
        }
        phase
    }

    fn container_phase(&self) -> &'static str {
        if self.init_failed {
            return "Failed";
        }
        if !self.initialized() {
            return "Pending";
        }
        let settled: Vec<i32> = self
            .containers
            .iter()
            .filter_map(|c| {
                c.exit_code()
                    .filter(|code| !self.restarts(*code) || self.grace_ends.is_some())
            })
            .collect();
        if settled.len() == self.containers.len() && !self.containers.is_empty() {
            if settled.iter().all(|code| *code == 0) {
                "Succeeded"
            } else {
                "Failed"
            }
        } else if self
            .containers
            .iter()
            .any(|c| c.container_id.is_empty() || c.post_start.is_some())
        {
            "Pending"
        } else {
            "Running"
        }
    }

    /// Moves the Pod on: exits taken, back-offs ended, init containers in turn, then
    /// the containers (each waiting for the one before's `postStart` hook), their hooks
    /// and probes. How long until something is due.
    fn advance(&mut self, env: &PassEnv<'_>) -> Option<Duration> {
        if let Some(at) = self.hold_until {
            let now = Instant::now();
            if at > now {
                return Some(at - now);
            }
            self.hold_until = None;
        }
        let mut wait: Option<Duration> = None;
        let mut note = |d: Duration| wait = Some(wait.map_or(d, |w| w.min(d)));
        let keys: Vec<ContainerKey> = self
            .init_containers
            .iter()
            .map(|c| self.key(&c.name))
            .collect();
        // Init containers, one at a time.
        for (index, key) in keys.into_iter().enumerate() {
            let policy_restarts = self.restart_policy != "Never";
            let container = &mut self.init_containers[index];
            container.collect_exit(&key, env.exits, env.execs);
            match container.state.clone() {
                ContainerState::Terminated(t) if t.exit_code == 0 => continue,
                ContainerState::Terminated(t) => {
                    if !policy_restarts {
                        self.init_failed = true;
                        return None;
                    }
                    if let Some(d) =
                        container.back_off(t, &self.name, &self.namespace, &self.uid, env.options)
                    {
                        note(d);
                        return wait;
                    }
                    container.start(key, env, false);
                    return wait;
                }
                ContainerState::Running { .. } => return None,
                ContainerState::Waiting { .. } => {
                    if let Some(at) = container.restart_at {
                        let now = Instant::now();
                        if at > now {
                            note(at - now);
                            return wait;
                        }
                    }
                    container.start(key, env, false);
                    return None;
                }
            }
        }
        // Every init container completed: the containers.
        let keys: Vec<ContainerKey> = self.containers.iter().map(|c| self.key(&c.name)).collect();
        // A container's postStart hook holds the start of the ones after it.
        let mut blocked = false;
        for (index, key) in keys.into_iter().enumerate() {
            let restarts = |code: i32| match self.restart_policy.as_str() {
                "Never" => false,
                "OnFailure" => code != 0,
                _ => true,
            };
            let container = &mut self.containers[index];
            container.collect_exit(&key, env.exits, env.execs);
            match container.state.clone() {
                ContainerState::Running { .. } => {
                    if let Some(d) = container.tend(&key, env, &mut self.events) {
                        note(d);
                    }
                }
                ContainerState::Terminated(t) => {
                    if restarts(t.exit_code) && !blocked {
                        match container.back_off(
                            t,
                            &self.name,
                            &self.namespace,
                            &self.uid,
                            env.options,
                        ) {
                            Some(d) => note(d),
                            None => container.start(key, env, true),
                        }
                    }
                }
                ContainerState::Waiting { .. } if blocked => {}
                ContainerState::Waiting { .. } => match container.restart_at {
                    Some(at) if at > Instant::now() => note(at - Instant::now()),
                    _ => container.start(key, env, true),
                },
            }
            if container.post_start.is_some() {
                // Its hook may end at once (an HTTP hook): look again soon.
                note(Duration::ZERO);
                blocked = true;
            }
        }
        if self.complete_at.is_none() && matches!(self.container_phase(), "Succeeded" | "Failed") {
            let delay = env.stages_delay(Transition::Complete);
            self.complete_at = Some(Instant::now() + delay);
            if !delay.is_zero() {
                note(delay);
            }
        }
        wait
    }

    /// The Pod is being deleted: its containers' `preStop` hooks run, then once its
    /// grace period ended (and the `pod-delete` stage's delay after it) its containers
    /// are killed and it is marked to be removed. How long until then.
    fn terminate(&mut self, env: &PassEnv<'_>) -> Option<Duration> {
        let now_instant = Instant::now();
        // Commands that end by themselves meanwhile end the wait sooner.
        self.each_container(|container, key| {
            container.collect_exit(key, env.exits, env.execs);
        });
        let seconds = env
            .pod
            .pointer("/metadata/deletionGracePeriodSeconds")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        let by_now = now_instant + env.options.scaled(Duration::from_secs(seconds));
        // A DELETE with a shorter grace period while this one runs shortens it.
        let ends = match self.grace_ends {
            Some((ends, seen)) if seen <= seconds => ends,
            Some((ends, _)) => ends.min(by_now),
            None => {
                // The grace period starts: the preStop hooks with it.
                for container in &mut self.containers {
                    container.begin_pre_stop(by_now, by_now - now_instant, env);
                }
                by_now
            }
        };
        self.grace_ends = Some((ends, seconds));
        if ends > now_instant && !self.settled() {
            // Hooks still running when the grace period ends are cut off, unreported.
            let mut wait = ends - now_instant;
            for container in &mut self.containers {
                if let Some(d) = container.follow_pre_stop(env.execs, &mut self.events) {
                    wait = wait.min(d);
                }
            }
            return Some(wait);
        }
        // The pod-delete stage: the kubelet's last steps (the kill, the final status,
        // the removal) come that much later.
        let remove_at = *self
            .remove_at
            .get_or_insert_with(|| now_instant + env.stages_delay(Transition::Delete));
        if remove_at > now_instant {
            return Some(remove_at - now_instant);
        }
        self.each_container(|container, key| container.kill(key, env.runtime, env.execs));
        self.finished_deleting = true;
        None
    }

    /// Whether nothing runs any more (a finished Pod goes at once when deleted).
    fn settled(&self) -> bool {
        !self
            .init_containers
            .iter()
            .chain(self.containers.iter())
            .any(ContainerRun::running)
    }

    /// The Pod left the node: its containers stop and their logs go.
    fn forget_all(mut self, runtime: &dyn ContainerRuntime, execs: &ExecResults) {
        self.each_container(|container, key| {
            container.kill(key, runtime, execs);
            runtime.forget(key);
        });
    }

    /// Runs `f` over every container (init containers first) with its key.
    fn each_container(&mut self, mut f: impl FnMut(&mut ContainerRun, &ContainerKey)) {
        let keys: Vec<ContainerKey> = self
            .init_containers
            .iter()
            .chain(self.containers.iter())
            .map(|c| self.key(&c.name))
            .collect();
        for (container, key) in self
            .init_containers
            .iter_mut()
            .chain(self.containers.iter_mut())
            .zip(&keys)
        {
            f(container, key);
        }
    }
}
