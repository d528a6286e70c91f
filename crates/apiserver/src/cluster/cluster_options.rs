//! [`ClusterOptions`]: how the simulated cluster runs (its size, each part's off switch,
//! the time scale); set through the server's builder.

use std::time::Duration;

/// How the simulated cluster runs; set through the server's builder.
#[derive(Clone, Debug)]
pub(crate) struct ClusterOptions {
    /// How many nodes (each with a kubelet); 0 runs no cluster at all.
    pub(crate) nodes: usize,
    /// How often each kubelet renews its Lease (kubelet: a quarter of the 40 s lease).
    pub(crate) heartbeat_interval: Duration,
    /// How long a Lease may go unrenewed before the node is `NotReady`
    /// (kube-controller-manager's `--node-monitor-grace-period`).
    pub(crate) node_monitor_grace_period: Duration,
    /// Whether the scheduler runs.
    pub(crate) scheduler: bool,
    /// Whether the kubelets run Pods (they register nodes and heartbeat regardless).
    pub(crate) kubelets: bool,
    /// Whether the node lifecycle controller runs.
    pub(crate) node_lifecycle_controller: bool,
    /// Whether the ReplicaSet controller runs.
    pub(crate) replica_set_controller: bool,
    /// Whether the Deployment controller runs.
    pub(crate) deployment_controller: bool,
    /// Whether the Job controller runs.
    pub(crate) job_controller: bool,
    /// Whether the CronJob controller runs.
    pub(crate) cron_job_controller: bool,
    /// Whether the TTL-after-finished controller runs (finished Jobs with
    /// `ttlSecondsAfterFinished` deleted).
    pub(crate) ttl_after_finished_controller: bool,
    /// Whether the ReplicationController controller runs.
    pub(crate) replication_controller: bool,
    /// Whether the PersistentVolume controller runs (with the default StorageClass).
    pub(crate) persistent_volume_controller: bool,
    /// Whether the resource quota controller runs (ResourceQuotas' `status`).
    pub(crate) resource_quota_controller: bool,
    /// Whether the StatefulSet controller runs.
    pub(crate) stateful_set_controller: bool,
    /// Whether the DaemonSet controller runs.
    pub(crate) daemon_set_controller: bool,
    /// Whether the Endpoints controller runs.
    pub(crate) endpoints_controller: bool,
    /// Whether the EndpointSlice controller runs.
    pub(crate) endpoint_slice_controller: bool,
    /// The factor simulated durations (grace periods, back-offs, deadlines, TTLs) are
    /// multiplied by; CronJob schedules run `1/time_scale` times as fast.
    pub(crate) time_scale: f64,
    /// The delays of Pods' steps (none by default).
    pub(crate) stages: super::stages::Stages,
}

impl Default for ClusterOptions {
    fn default() -> Self {
        ClusterOptions {
            nodes: 0,
            heartbeat_interval: Duration::from_secs(10),
            node_monitor_grace_period: Duration::from_secs(50),
            scheduler: true,
            kubelets: true,
            node_lifecycle_controller: true,
            replica_set_controller: true,
            deployment_controller: true,
            job_controller: true,
            cron_job_controller: true,
            ttl_after_finished_controller: true,
            replication_controller: true,
            persistent_volume_controller: true,
            daemon_set_controller: true,
            resource_quota_controller: true,
            stateful_set_controller: true,
            endpoints_controller: true,
            endpoint_slice_controller: true,
            time_scale: 1.0,
            stages: super::stages::Stages::default(),
        }
    }
}

impl ClusterOptions {
    /// `duration` scaled by the time scale (never negative, at most a day).
    pub(crate) fn scaled(&self, duration: Duration) -> Duration {
        let scale = if self.time_scale.is_finite() && self.time_scale >= 0.0 {
            self.time_scale
        } else {
            1.0
        };
        Duration::from_secs_f64((duration.as_secs_f64() * scale).min(86_400.0))
    }
}
