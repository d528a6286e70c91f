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
//!   for its `deletionGracePeriodSeconds` (scaled by the time scale): the simulated
//!   processes ignore SIGTERM, so they are killed (exit code 137) when it ends. The
//!   kubelet then reports the final status and deletes the Pod with a grace period of 0.

mod pod_status;
mod runtime;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::Notify;

pub(crate) use runtime::{ContainerCommand, ContainerKey, ContainerRuntime, Exits};

use super::cluster_options::ClusterOptions;
use super::node::{NodeInfo, kubelet_writer, pod_ip};
use super::node_lease::Heartbeats;
use super::writer::PODS;
use crate::object::now;
use crate::registry::store::GenericStore;

/// kubelet's first back-off before restarting a container, and its cap.
const INITIAL_BACKOFF: Duration = Duration::from_secs(10);
const MAX_BACKOFF: Duration = Duration::from_secs(300);

/// The exit code of a process killed with SIGKILL when its grace period ended.
const KILLED_EXIT_CODE: i32 = 137;

/// What the kubelets remember between passes.
#[derive(Debug)]
pub(crate) struct KubeletState {
    heartbeats: Heartbeats,
    /// The Pods the kubelets run, by uid.
    pods: HashMap<String, PodRun>,
    /// The uids of `pods` by node (each kubelet's own Pods).
    by_node: HashMap<String, HashSet<String>>,
    exits: Arc<Exits>,
}

impl KubeletState {
    pub(crate) fn new(wake: Arc<Notify>) -> Self {
        KubeletState {
            heartbeats: Heartbeats::default(),
            pods: HashMap::new(),
            by_node: HashMap::new(),
            exits: Arc::new(Exits::new(wake)),
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
        for pod in pods {
            let uid = str_at(pod, "/metadata/uid");
            present.insert(uid);
            if let Some(run) = self.pods.get(uid)
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
                self.pods.insert(
                    uid.to_owned(),
                    PodRun::new(pod, node, ip.unwrap_or_default()),
                );
                self.by_node
                    .entry(node.name.clone())
                    .or_default()
                    .insert(uid.to_owned());
            }
            let Some(run) = self.pods.get_mut(uid) else {
                continue;
            };
            let wait = if deleting {
                run.terminate(pod, options, runtime, &self.exits)
            } else {
                run.advance(options, runtime, &self.exits)
            };
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
            run.forget_all(runtime);
        }
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
    restart_at: Option<Instant>,
}

impl ContainerRun {
    fn new(spec: &Value, pod_name: &str) -> ContainerRun {
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
        }
    }

    fn running(&self) -> bool {
        matches!(self.state, ContainerState::Running { .. })
    }

    fn exit_code(&self) -> Option<i32> {
        match &self.state {
            ContainerState::Terminated(t) => Some(t.exit_code),
            _ => None,
        }
    }
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
    pub(super) init_containers: Vec<ContainerRun>,
    pub(super) containers: Vec<ContainerRun>,
    restart_policy: String,
    /// When the Pod's grace period ends, and the `deletionGracePeriodSeconds` that set it.
    grace_ends: Option<(Instant, u64)>,
    finished_deleting: bool,
    /// An init container failed under `restartPolicy: Never`.
    pub(super) init_failed: bool,
    /// The Pod's resourceVersion when the kubelet last synced it.
    seen_version: String,
    /// When the timer (a back-off, a grace period) the last sync reported ends.
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

    /// The phase the containers make.
    pub(super) fn phase(&self) -> &'static str {
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
        } else if self.containers.iter().any(|c| c.container_id.is_empty()) {
            "Pending"
        } else {
            "Running"
        }
    }

    /// Starts `container`'s command.
    fn start(
        container: &mut ContainerRun,
        key: ContainerKey,
        runtime: &dyn ContainerRuntime,
        exits: &Arc<Exits>,
    ) {
        container.container_id = format!("containerd://{}", uuid::Uuid::new_v4().simple());
        container.state = ContainerState::Running { started_at: now() };
        container.restart_at = None;
        runtime.start(key, container.command.clone(), Arc::clone(exits));
    }

    /// Takes the exit of a running container, if its command ended.
    fn collect_exit(container: &mut ContainerRun, key: &ContainerKey, exits: &Exits) -> bool {
        let ContainerState::Running { started_at } = &container.state else {
            return false;
        };
        let Some(code) = exits.take(key) else {
            return false;
        };
        container.state = ContainerState::Terminated(Termination {
            exit_code: code,
            reason: if code == 0 { "Completed" } else { "Error" },
            started_at: started_at.clone(),
            finished_at: now(),
            container_id: container.container_id.clone(),
        });
        true
    }

    /// Moves the Pod on: exits taken, back-offs ended, init containers in turn, then
    /// the containers. How long until a back-off ends, if one runs.
    fn advance(
        &mut self,
        options: &ClusterOptions,
        runtime: &dyn ContainerRuntime,
        exits: &Arc<Exits>,
    ) -> Option<Duration> {
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
            Self::collect_exit(container, &key, exits);
            match container.state.clone() {
                ContainerState::Terminated(t) if t.exit_code == 0 => continue,
                ContainerState::Terminated(t) => {
                    if !policy_restarts {
                        self.init_failed = true;
                        return None;
                    }
                    if let Some(d) = back_off(
                        container,
                        t,
                        &self.name,
                        &self.namespace,
                        &self.uid,
                        options,
                    ) {
                        note(d);
                        return wait;
                    }
                    Self::start(container, key, runtime, exits);
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
                    Self::start(container, key, runtime, exits);
                    return None;
                }
            }
        }
        // Every init container completed: the containers.
        let keys: Vec<ContainerKey> = self.containers.iter().map(|c| self.key(&c.name)).collect();
        for (index, key) in keys.into_iter().enumerate() {
            let restarts = |code: i32| match self.restart_policy.as_str() {
                "Never" => false,
                "OnFailure" => code != 0,
                _ => true,
            };
            let container = &mut self.containers[index];
            Self::collect_exit(container, &key, exits);
            match container.state.clone() {
                ContainerState::Running { .. } => {}
                ContainerState::Terminated(t) => {
                    if restarts(t.exit_code) {
                        match back_off(
                            container,
                            t,
                            &self.name,
                            &self.namespace,
                            &self.uid,
                            options,
                        ) {
                            Some(d) => note(d),
                            None => Self::start(container, key, runtime, exits),
                        }
                    }
                }
                ContainerState::Waiting { .. } => match container.restart_at {
                    Some(at) if at > Instant::now() => note(at - Instant::now()),
                    _ => Self::start(container, key, runtime, exits),
                },
            }
        }
        wait
    }

    /// The Pod is being deleted: once its grace period ended, its containers are killed
    /// and it is marked to be removed. How long until then.
    fn terminate(
        &mut self,
        pod: &Value,
        options: &ClusterOptions,
        runtime: &dyn ContainerRuntime,
        exits: &Exits,
    ) -> Option<Duration> {
        // Commands that end by themselves meanwhile end the wait sooner.
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
            Self::collect_exit(container, key, exits);
        }
        let now_instant = Instant::now();
        let seconds = pod
            .pointer("/metadata/deletionGracePeriodSeconds")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        let by_now = now_instant + options.scaled(Duration::from_secs(seconds));
        // A DELETE with a shorter grace period while this one runs shortens it.
        let ends = match self.grace_ends {
            Some((ends, seen)) if seen <= seconds => ends,
            Some((ends, _)) => ends.min(by_now),
            None => by_now,
        };
        self.grace_ends = Some((ends, seconds));
        if ends > now_instant && !self.settled() {
            return Some(ends - now_instant);
        }
        let finished = now();
        for container in self
            .init_containers
            .iter_mut()
            .chain(self.containers.iter_mut())
        {
            if let ContainerState::Running { started_at } = &container.state {
                container.state = ContainerState::Terminated(Termination {
                    exit_code: KILLED_EXIT_CODE,
                    reason: "Error",
                    started_at: started_at.clone(),
                    finished_at: finished.clone(),
                    container_id: container.container_id.clone(),
                });
            }
        }
        let keys: Vec<ContainerKey> = self
            .init_containers
            .iter()
            .chain(self.containers.iter())
            .map(|c| self.key(&c.name))
            .collect();
        for key in &keys {
            runtime.stop(key);
        }
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
    fn forget_all(&self, runtime: &dyn ContainerRuntime) {
        for container in self.init_containers.iter().chain(self.containers.iter()) {
            runtime.forget(&self.key(&container.name));
        }
    }
}

/// Puts a container that ended into `CrashLoopBackOff` for kubelet's back-off, or
/// returns `None` when the back-off already passed (it restarts now).
fn back_off(
    container: &mut ContainerRun,
    termination: Termination,
    pod: &str,
    namespace: &str,
    uid: &str,
    options: &ClusterOptions,
) -> Option<Duration> {
    if container.restart_at.is_none() {
        // The first restart comes at once as well, as kubelet's.
        if container.restart_count == 0 && container.last_termination.is_none() {
            container.last_termination = Some(termination);
            container.restart_count += 1;
            return None;
        }
        let doublings = container.restart_count.saturating_sub(1).min(16);
        let delay = (INITIAL_BACKOFF * 2u32.pow(doublings)).min(MAX_BACKOFF);
        container.restart_at = Some(Instant::now() + options.scaled(delay));
        container.last_termination = Some(termination);
        container.restart_count += 1;
        container.state = ContainerState::Waiting {
            reason: "CrashLoopBackOff".to_owned(),
            message: format!(
                "back-off {}s restarting failed container={} pod={pod}_{namespace}({uid})",
                delay.as_secs(),
                container.name
            ),
        };
    }
    let at = container.restart_at?;
    let now = Instant::now();
    (at > now).then(|| at - now)
}
