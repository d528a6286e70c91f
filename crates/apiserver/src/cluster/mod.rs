//! The simulated cluster: what makes the embedded server run Pods instead of only
//! storing them. N simulated nodes, each with a kubelet that registers its Node,
//! renews its Lease in `kube-node-lease` and runs the Pods bound to it; a scheduler that
//! binds pending Pods to nodes (kube-scheduler's default plugins that matter for a
//! simulated cluster); and kube-controller-manager's node lifecycle controller, which
//! marks a node whose heartbeats stopped `NotReady` and taints it.
//!
//! Everything runs on one task, woken by the generic store's write hook (a Pod or Node
//! written) and by its own timers (heartbeats, grace periods), and writes through the
//! generic store like any client: as `system:node:<name>` / `kubelet`, as
//! `system:kube-scheduler` / `kube-scheduler`, as `system:kube-controller-manager` /
//! `kube-controller-manager`. Each part has an off switch ([`ClusterOptions`]).
//!
//! With no nodes (the library's default) none of it runs, and the server binds Pods
//! itself at create, as before.

mod changed_inputs;
mod cluster_options;
mod controller_history;
mod controller_utils;
mod cron_job_controller;
mod daemon_set_controller;
mod deployment_controller;
mod endpoint_slice_controller;
mod endpoint_util;
mod endpoints_controller;
mod job_backoff;
mod job_controller;
mod kubelet;
mod node;
mod node_lease;
mod node_lifecycle_controller;
mod persistent_volume_controller;
mod pod_failure_policy;
mod replica_set_controller;
mod replication_controller;
mod resource_quota_controller;
mod scheduler;
mod stages;
mod stateful_set_controller;
mod ttl_after_finished_controller;
mod writer;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{Notify, watch};

pub(crate) use cluster_options::ClusterOptions;
pub use kubelet::CLOSED_PORTS_ANNOTATION;
pub(crate) use kubelet::{
    ContainerCommand, ContainerKey, ContainerRuntime, ExecOutcome, ExecResults, Exits,
};
pub use stages::{Stages, StagesError};

use crate::registry::ResourceDef;
use crate::registry::store::{Committed, GenericStore, WriteHook};

/// The most simulated nodes a server runs: each takes a `/24` Pod CIDR from
/// `10.244.0.0/16` up to `10.254.255.0/24`.
pub const MAX_NODES: usize = 11 * 256;

/// The simulated cluster of a running server: its nodes, and the switches tests use
/// to make a node fail.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let server = kubeclient_apiserver::ApiServer::builder().nodes(2).start().await?;
/// assert_eq!(server.cluster().node_names(), ["node-1", "node-2"]);
/// // The node's heartbeats stop; the node lifecycle controller marks it NotReady.
/// assert!(server.cluster().stop_kubelet("node-2"));
/// server.shutdown().await;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct SimulatedCluster {
    options: ClusterOptions,
    wake: Arc<Notify>,
    stopped_kubelets: Mutex<HashSet<String>>,
    /// The per-task state the passes keep between runs (heartbeat times, Pods started).
    state: Mutex<kubelet::KubeletState>,
    /// When the cluster started: where the CronJobs' schedule clock starts.
    started: jiff::Timestamp,
    /// Which inputs were written since the last pass.
    changed: changed_inputs::ChangedInputs,
    /// The nodes as the last pass read them (read again when a Node was written).
    nodes: Mutex<Arc<node::NodeSet>>,
    /// The scheduler's place between passes.
    scheduler: Mutex<scheduler::SchedulerState>,
    /// Whether the last quota pass saw a ResourceQuota: then a write to any namespaced
    /// object may change a quota's usage and wakes the cluster.
    quotas_exist: AtomicBool,
}

impl SimulatedCluster {
    pub(crate) fn new(options: ClusterOptions) -> Self {
        let wake = Arc::new(Notify::new());
        SimulatedCluster {
            options,
            state: Mutex::new(kubelet::KubeletState::new(Arc::clone(&wake))),
            wake,
            stopped_kubelets: Mutex::new(HashSet::new()),
            started: jiff::Timestamp::now(),
            changed: changed_inputs::ChangedInputs::default(),
            nodes: Mutex::new(Arc::default()),
            scheduler: Mutex::new(scheduler::SchedulerState::default()),
            quotas_exist: AtomicBool::new(false),
        }
    }

    /// The names of the simulated nodes (`node-1` ... `node-N`).
    pub fn node_names(&self) -> Vec<String> {
        (1..=self.options.nodes).map(node::node_name).collect()
    }

    /// Stops the kubelet of `node`, as if its machine went away: no more heartbeats, no
    /// more Pod status. Whether the node exists (and its kubelet ran).
    pub fn stop_kubelet(&self, node: &str) -> bool {
        if !self.node_names().iter().any(|n| n == node) {
            return false;
        }
        let stopped = crate::sync::lock(&self.stopped_kubelets).insert(node.to_owned());
        self.wake.notify_one();
        stopped
    }

    /// Starts the kubelet of `node` again (after [`stop_kubelet`](Self::stop_kubelet)): it
    /// renews its Lease at once. Whether it was stopped.
    pub fn start_kubelet(&self, node: &str) -> bool {
        let started = crate::sync::lock(&self.stopped_kubelets).remove(node);
        if started {
            crate::sync::lock(&self.state).forget_heartbeat(node);
        }
        self.wake.notify_one();
        started
    }

    fn kubelet_stopped(&self, node: &str) -> bool {
        crate::sync::lock(&self.stopped_kubelets).contains(node)
    }

    /// Registers the nodes and their Leases, and the scheduler's Lease (bootstrap of the
    /// cluster, before the server answers).
    pub(crate) fn register(&self, store: &GenericStore<'_>) {
        for index in 1..=self.options.nodes {
            node::register(store, index);
        }
        if self.options.scheduler {
            scheduler::hold_lease(store);
        }
        if self.options.persistent_volume_controller {
            persistent_volume_controller::register_default_class(&controller_manager(store));
        }
    }

    /// One pass of every part over `store`; how long the next may wait at most.
    pub(crate) fn sync_once(
        &self,
        store: &GenericStore<'_>,
        runtime: &dyn ContainerRuntime,
    ) -> Duration {
        let mut next = self.options.heartbeat_interval;
        let changed = self.changed.take();
        let nodes = {
            let mut cached = crate::sync::lock(&self.nodes);
            if changed.nodes {
                *cached = Arc::new(node::NodeSet::load(store));
            }
            Arc::clone(&cached)
        };
        {
            let mut state = crate::sync::lock(&self.state);
            for node in &nodes.nodes {
                if self.kubelet_stopped(&node.name) {
                    continue;
                }
                next = next.min(state.heartbeat(store, &node.name, &self.options));
            }
        }
        if self.options.node_lifecycle_controller {
            next = next.min(node_lifecycle_controller::sync(
                store,
                &nodes,
                &self.options,
            ));
        }
        next = next.min(self.sync_workloads(store));
        if self.options.daemon_set_controller {
            self.sync_daemon_sets(store, &nodes);
        }
        if self.options.stateful_set_controller {
            self.sync_stateful_sets(store);
        }
        if changed.pods || changed.services || changed.nodes {
            self.sync_service_endpoints(store, &nodes);
        }
        if self.options.persistent_volume_controller {
            self.sync_persistent_volumes(store);
        }
        if self.options.resource_quota_controller && changed.anything {
            self.sync_resource_quotas(store);
        }
        if self.options.scheduler {
            scheduler::hold_lease(store);
            let mut state = crate::sync::lock(&self.scheduler);
            // With the same Pods, nodes and namespaces it would decide the same, unless
            // the last pass left Pods untried.
            if changed.pods || changed.nodes || changed.namespaces || state.more {
                scheduler::sync(store, &nodes, &mut state);
            }
            if state.more {
                next = Duration::ZERO;
            }
        }
        if self.options.kubelets {
            let pods = store
                .storage
                .snapshot(&kubeclient_machinery::GroupResource::new("", "pods"), "");
            let mut by_node: HashMap<&str, Vec<&serde_json::Value>> = HashMap::new();
            for pod in &pods.objects {
                if let Some(node) = pod.value.pointer("/spec/nodeName").and_then(|n| n.as_str()) {
                    by_node.entry(node).or_default().push(&pod.value);
                }
            }
            let mut state = crate::sync::lock(&self.state);
            let exited = state.exited();
            for node in &nodes.nodes {
                if self.kubelet_stopped(&node.name) {
                    continue;
                }
                let on_node = by_node
                    .get(node.name.as_str())
                    .map(Vec::as_slice)
                    .unwrap_or_default();
                next = next.min(state.sync_pods(
                    store,
                    node,
                    on_node,
                    &exited,
                    &self.options,
                    runtime,
                ));
            }
        }
        next.max(Duration::from_millis(10))
    }

    /// The workload controllers' pass: Deployments, then ReplicaSets and
    /// ReplicationControllers, then CronJobs, Jobs and finished Jobs' TTLs; how soon the
    /// next is needed.
    fn sync_workloads(&self, store: &GenericStore<'_>) -> Duration {
        let options = &self.options;
        let (deployments, replica_sets, jobs) = (
            options.deployment_controller,
            options.replica_set_controller,
            options.job_controller,
        );
        let mut next = Duration::MAX;
        if !deployments
            && !replica_sets
            && !jobs
            && !options.replication_controller
            && !options.cron_job_controller
            && !options.ttl_after_finished_controller
        {
            return next;
        }
        let writer = writer::Writer::new(
            store,
            "system:kube-controller-manager".to_owned(),
            &[],
            "kube-controller-manager",
        );
        let snapshot = |group: &str, plural: &str| {
            store
                .storage
                .snapshot(&kubeclient_machinery::GroupResource::new(group, plural), "")
                .objects
        };
        if deployments {
            let deployment_objects = snapshot("apps", "deployments");
            let replica_set_objects = snapshot("apps", "replicasets");
            let deployments: Vec<&serde_json::Value> =
                deployment_objects.iter().map(|o| &o.value).collect();
            let owned: Vec<&serde_json::Value> =
                replica_set_objects.iter().map(|o| &o.value).collect();
            deployment_controller::sync(&writer, &deployments, &owned);
        }
        let replica_set_objects = if replica_sets {
            snapshot("apps", "replicasets")
        } else {
            Vec::new()
        };
        if !replica_set_objects.is_empty() {
            let pod_objects = snapshot("", "pods");
            let replica_sets: Vec<&serde_json::Value> =
                replica_set_objects.iter().map(|o| &o.value).collect();
            let pods: Vec<&serde_json::Value> = pod_objects.iter().map(|o| &o.value).collect();
            replica_set_controller::sync(
                &writer,
                &replica_set_controller::REPLICA_SET,
                &replica_sets,
                &pods,
            );
        }
        if options.replication_controller {
            let controller_objects = snapshot("", "replicationcontrollers");
            if !controller_objects.is_empty() {
                let pod_objects = snapshot("", "pods");
                let controllers: Vec<&serde_json::Value> =
                    controller_objects.iter().map(|o| &o.value).collect();
                let pods: Vec<&serde_json::Value> = pod_objects.iter().map(|o| &o.value).collect();
                replica_set_controller::sync(
                    &writer,
                    &replication_controller::REPLICATION_CONTROLLER,
                    &controllers,
                    &pods,
                );
            }
        }
        if options.cron_job_controller {
            let cron_job_objects = snapshot("batch", "cronjobs");
            if !cron_job_objects.is_empty() {
                let job_objects = snapshot("batch", "jobs");
                let cron_jobs: Vec<&serde_json::Value> =
                    cron_job_objects.iter().map(|o| &o.value).collect();
                let jobs: Vec<&serde_json::Value> = job_objects.iter().map(|o| &o.value).collect();
                let clock =
                    cron_job_controller::ScheduleClock::new(self.started, options.time_scale);
                next = next.min(cron_job_controller::sync(&writer, &cron_jobs, &jobs, clock));
            }
        }
        if jobs || options.ttl_after_finished_controller {
            let job_objects = snapshot("batch", "jobs");
            let jobs_seen: Vec<&serde_json::Value> = job_objects.iter().map(|o| &o.value).collect();
            if jobs && !jobs_seen.is_empty() {
                let pod_objects = snapshot("", "pods");
                let pods: Vec<&serde_json::Value> = pod_objects.iter().map(|o| &o.value).collect();
                next = next.min(job_controller::sync(&writer, &jobs_seen, &pods, options));
            }
            if options.ttl_after_finished_controller {
                next = next.min(ttl_after_finished_controller::sync(
                    &writer, &jobs_seen, options,
                ));
            }
        }
        next
    }

    /// The StatefulSet controller's pass.
    fn sync_stateful_sets(&self, store: &GenericStore<'_>) {
        let snapshot = |group: &str, plural: &str| {
            store
                .storage
                .snapshot(&kubeclient_machinery::GroupResource::new(group, plural), "")
                .objects
        };
        let set_objects = snapshot("apps", "statefulsets");
        if set_objects.is_empty() {
            return;
        }
        let pod_objects = snapshot("", "pods");
        let claim_objects = snapshot("", "persistentvolumeclaims");
        let revision_objects = snapshot("apps", "controllerrevisions");
        let revisions: Vec<&serde_json::Value> =
            revision_objects.iter().map(|o| &o.value).collect();
        let sets: Vec<&serde_json::Value> = set_objects.iter().map(|o| &o.value).collect();
        let pods: Vec<&serde_json::Value> = pod_objects.iter().map(|o| &o.value).collect();
        let claims: Vec<&serde_json::Value> = claim_objects.iter().map(|o| &o.value).collect();
        let writer = writer::Writer::new(
            store,
            "system:kube-controller-manager".to_owned(),
            &[],
            "kube-controller-manager",
        );
        stateful_set_controller::sync(&writer, &sets, &pods, &claims, &revisions);
    }

    /// The DaemonSet controller's pass.
    fn sync_daemon_sets(&self, store: &GenericStore<'_>, nodes: &node::NodeSet) {
        let snapshot = |group: &str, plural: &str| {
            store
                .storage
                .snapshot(&kubeclient_machinery::GroupResource::new(group, plural), "")
                .objects
        };
        let daemon_set_objects = snapshot("apps", "daemonsets");
        if daemon_set_objects.is_empty() {
            return;
        }
        let pod_objects = snapshot("", "pods");
        let revision_objects = snapshot("apps", "controllerrevisions");
        let revisions: Vec<&serde_json::Value> =
            revision_objects.iter().map(|o| &o.value).collect();
        let daemon_sets: Vec<&serde_json::Value> =
            daemon_set_objects.iter().map(|o| &o.value).collect();
        let pods: Vec<&serde_json::Value> = pod_objects.iter().map(|o| &o.value).collect();
        let writer = writer::Writer::new(
            store,
            "system:kube-controller-manager".to_owned(),
            &[],
            "kube-controller-manager",
        );
        daemon_set_controller::sync(&writer, &daemon_sets, &pods, nodes, &revisions);
    }

    /// The PersistentVolume controller's pass.
    fn sync_persistent_volumes(&self, store: &GenericStore<'_>) {
        let snapshot = |group: &str, plural: &str| {
            store
                .storage
                .snapshot(&kubeclient_machinery::GroupResource::new(group, plural), "")
                .objects
        };
        let claim_objects = snapshot("", "persistentvolumeclaims");
        let volume_objects = snapshot("", "persistentvolumes");
        if claim_objects.is_empty() && volume_objects.is_empty() {
            return;
        }
        let class_objects = snapshot("storage.k8s.io", "storageclasses");
        let claims: Vec<&serde_json::Value> = claim_objects.iter().map(|o| &o.value).collect();
        let volumes: Vec<&serde_json::Value> = volume_objects.iter().map(|o| &o.value).collect();
        let classes: Vec<&serde_json::Value> = class_objects.iter().map(|o| &o.value).collect();
        persistent_volume_controller::sync(&controller_manager(store), &claims, &volumes, &classes);
    }

    /// The resource quota controller's pass (nothing to do without ResourceQuotas).
    fn sync_resource_quotas(&self, store: &GenericStore<'_>) {
        let quota_objects = store
            .storage
            .snapshot(
                &kubeclient_machinery::GroupResource::new("", "resourcequotas"),
                "",
            )
            .objects;
        self.quotas_exist
            .store(!quota_objects.is_empty(), Ordering::Release);
        if quota_objects.is_empty() {
            return;
        }
        let quotas: Vec<&serde_json::Value> = quota_objects.iter().map(|o| &o.value).collect();
        resource_quota_controller::sync(&controller_manager(store), &quotas);
    }

    /// The Endpoints and EndpointSlice controllers' pass, over every Service.
    fn sync_service_endpoints(&self, store: &GenericStore<'_>, nodes: &node::NodeSet) {
        let (endpoints, slices) = (
            self.options.endpoints_controller,
            self.options.endpoint_slice_controller,
        );
        if !endpoints && !slices {
            return;
        }
        let snapshot = |group: &str, plural: &str| {
            store
                .storage
                .snapshot(&kubeclient_machinery::GroupResource::new(group, plural), "")
                .objects
        };
        let service_objects = snapshot("", "services");
        let services: Vec<&serde_json::Value> = service_objects.iter().map(|o| &o.value).collect();
        // Only the Pods of namespaces where a Service selects Pods are read.
        let selecting = endpoint_util::selecting_namespaces(&services);
        let pod_objects = if selecting.is_empty() {
            Vec::new()
        } else {
            snapshot("", "pods")
        };
        let pods: Vec<&serde_json::Value> = pod_objects
            .iter()
            .map(|o| &o.value)
            .filter(|pod| selecting.contains(controller_utils::meta(pod, "namespace")))
            .collect();
        let pods = endpoint_util::by_namespace(&pods);
        let writer = writer::Writer::new(
            store,
            "system:kube-controller-manager".to_owned(),
            &[],
            "kube-controller-manager",
        );
        if endpoints {
            let objects = snapshot("", "endpoints");
            let current: Vec<&serde_json::Value> = objects.iter().map(|o| &o.value).collect();
            endpoints_controller::sync(&writer, &services, &pods, &current);
        }
        if slices {
            let objects = snapshot("discovery.k8s.io", "endpointslices");
            let current: Vec<&serde_json::Value> = objects.iter().map(|o| &o.value).collect();
            endpoint_slice_controller::sync(&writer, &services, &pods, &current, nodes);
        }
    }

    /// Asks for a pass soon.
    pub(crate) fn wake(&self) {
        self.wake.notify_one();
    }
}

impl WriteHook for SimulatedCluster {
    fn committed(&self, resource: &ResourceDef, _: Committed<'_>) {
        self.changed.note(resource);
        let concerns = match resource.group.as_str() {
            "" => matches!(
                resource.plural.as_str(),
                "pods"
                    | "nodes"
                    | "services"
                    | "endpoints"
                    | "replicationcontrollers"
                    | "persistentvolumeclaims"
                    | "persistentvolumes"
                    | "resourcequotas"
            ),
            "discovery.k8s.io" => resource.plural == "endpointslices",
            "apps" => matches!(
                resource.plural.as_str(),
                "replicasets" | "deployments" | "daemonsets" | "statefulsets"
            ),
            "batch" => matches!(resource.plural.as_str(), "jobs" | "cronjobs"),
            _ => false,
        };
        if concerns || (resource.namespaced && self.quotas_exist.load(Ordering::Acquire)) {
            self.wake();
        }
    }
}

/// The controller manager's writer.
fn controller_manager<'a>(store: &'a GenericStore<'a>) -> writer::Writer<'a> {
    writer::Writer::new(
        store,
        "system:kube-controller-manager".to_owned(),
        &[],
        "kube-controller-manager",
    )
}

/// Runs the cluster until `stopped` turns true: a pass (on the blocking pool) after each
/// wake-up, and at the latest when the last pass asked to be run again.
pub(crate) async fn run(
    cluster: Arc<SimulatedCluster>,
    pass: impl Fn() -> Duration + Send + Sync + 'static,
    mut stopped: watch::Receiver<bool>,
) {
    let pass = Arc::new(pass);
    let mut wait = Duration::ZERO;
    loop {
        tokio::select! {
            () = cluster.wake.notified() => {}
            () = tokio::time::sleep(wait) => {}
            changed = stopped.changed() => {
                if changed.is_err() || *stopped.borrow() {
                    return;
                }
                continue;
            }
        }
        let pass = Arc::clone(&pass);
        match tokio::task::spawn_blocking(move || pass()).await {
            Ok(next) => wait = next,
            Err(err) => {
                tracing::error!(error = %err, "a cluster pass failed; it runs again soon");
                wait = Duration::from_secs(1);
            }
        }
    }
}
