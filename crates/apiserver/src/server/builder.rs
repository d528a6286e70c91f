//! [`ApiServerBuilder`]: the options of an [`ApiServer`](super::ApiServer) and their
//! defaults; `start` (in `server.rs`) builds the server from them.

use std::net::SocketAddr;
use std::time::Duration;

use crate::authentication::DEFAULT_SERVICE_ACCOUNT_ISSUER;
use crate::authorization::AuthorizationMode;
use crate::cluster::ClusterOptions;
use crate::state::Limits;
use crate::storage::WatcherLimits;

/// Options for [`ApiServer`](super::ApiServer); see each setter for its default.
///
/// # Examples
///
/// ```no_run
/// # async fn run() -> Result<(), kubeclient_apiserver::StartError> {
/// use kubeclient_apiserver::ApiServer;
///
/// let server = ApiServer::builder().history_window(1000).token("s3cret").tls(true).start().await?;
/// println!("listening on {}", server.url());
/// server.shutdown().await;
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `start` is called"]
pub struct ApiServerBuilder {
    pub(super) listen: SocketAddr,
    pub(super) history_window: usize,
    pub(super) token: Option<String>,
    pub(super) tls: bool,
    pub(super) admin: bool,
    pub(super) bookmark_interval: Duration,
    pub(super) limits: Limits,
    pub(super) legacy_remote_command: bool,
    pub(super) port_forward_allow: Vec<SocketAddr>,
    pub(super) kubelet_port: Option<u16>,
    pub(super) initial_revision: u64,
    pub(super) garbage_collector: bool,
    pub(super) kubernetes_minor_version: u32,
    pub(super) service_account_issuer: String,
    pub(super) api_audiences: Option<Vec<String>>,
    pub(super) authorization_mode: AuthorizationMode,
    pub(super) remote_webhooks: bool,
    /// The deadline of a CRD conversion webhook call.
    pub(super) conversion_timeout: Duration,
    pub(super) cluster: ClusterOptions,
    pub(super) storage: StorageChoice,
}

/// Where the server keeps its objects.
#[derive(Clone, Debug, Default)]
pub(super) enum StorageChoice {
    /// In memory only (the default).
    #[default]
    Memory,
    /// In etcd, with the in-memory store as its watch cache.
    #[cfg(feature = "etcd")]
    Etcd(crate::storage::EtcdConfig),
    /// In a database in this directory, with the in-memory store as its watch cache.
    #[cfg(feature = "disk")]
    Disk(std::path::PathBuf),
}

/// The minor version `/version` reports by default (`v1.37.0`).
pub const DEFAULT_KUBERNETES_MINOR_VERSION: u32 = 37;

impl Default for ApiServerBuilder {
    fn default() -> Self {
        ApiServerBuilder {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            history_window: 10_000,
            token: None,
            tls: false,
            admin: false,
            bookmark_interval: Duration::from_secs(60),
            limits: Limits::default(),
            legacy_remote_command: false,
            port_forward_allow: Vec::new(),
            kubelet_port: None,
            initial_revision: 0,
            garbage_collector: true,
            kubernetes_minor_version: DEFAULT_KUBERNETES_MINOR_VERSION,
            service_account_issuer: DEFAULT_SERVICE_ACCOUNT_ISSUER.to_owned(),
            api_audiences: None,
            authorization_mode: AuthorizationMode::AlwaysAllow,
            remote_webhooks: false,
            conversion_timeout: crate::webhook_client::CONVERSION_TIMEOUT,
            cluster: ClusterOptions::default(),
            storage: StorageChoice::Memory,
        }
    }
}

impl ApiServerBuilder {
    /// The address to listen on. Default `127.0.0.1:0` (a free loopback port).
    pub fn listen(mut self, address: SocketAddr) -> Self {
        self.listen = address;
        self
    }

    /// How many changes per resource are kept to serve watches and lists from older
    /// resourceVersions. Default 10,000. Older versions get 410 Expired.
    pub fn history_window(mut self, changes: usize) -> Self {
        self.history_window = changes;
        self
    }

    /// Require `Authorization: Bearer <token>` (or a client certificate, with TLS) on every
    /// request but `/healthz`, `/livez`, `/readyz` and `/version`. Default: no auth.
    pub fn token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }

    /// Keep every object in etcd, as kube-apiserver does (`--etcd-servers`, `--etcd-prefix`
    /// and the TLS files of [`EtcdConfig`](crate::storage::EtcdConfig)): objects survive
    /// restarts, several servers can share one etcd, and a real kube-apiserver on the
    /// same etcd and prefix serves the same objects. The in-memory store becomes the
    /// watch cache (reads and watches are served from it; writes commit to etcd first).
    /// resourceVersions are etcd revisions; [`initial_revision`](Self::initial_revision)
    /// does not apply. Default: in memory only.
    #[cfg(feature = "etcd")]
    pub fn etcd(mut self, config: crate::storage::EtcdConfig) -> Self {
        self.storage = StorageChoice::Etcd(config);
        self
    }

    /// Keep every object in a database in `dir` (created when missing), for one server
    /// process (`kubeclient serve --data-dir`): objects survive restarts, every answered
    /// write is on disk first, and resourceVersions keep growing across restarts (watches
    /// from before one get 410 Gone and relist). A second server on the same directory is
    /// refused at [`start`](Self::start). The in-memory store becomes the watch cache, as
    /// with [`etcd`](Self::etcd); [`initial_revision`](Self::initial_revision) does not
    /// apply. Default: in memory only.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), kubeclient_apiserver::StartError> {
    /// let server = kubeclient_apiserver::ApiServer::builder()
    ///     .data_dir("/var/lib/kubeclient")
    ///     .start()
    ///     .await?;
    /// # Ok(()) }
    /// ```
    #[cfg(feature = "disk")]
    pub fn data_dir(mut self, dir: impl Into<std::path::PathBuf>) -> Self {
        self.storage = StorageChoice::Disk(dir.into());
        self
    }

    /// Serve HTTPS with a freshly generated CA and certificate. Default: plain HTTP.
    pub fn tls(mut self, enabled: bool) -> Self {
        self.tls = enabled;
        self
    }

    /// Serve the fault-injection admin paths under `/_kubeclient/`. Default: off (use
    /// [`ApiServer::faults`](super::ApiServer::faults) in-process).
    pub fn enable_admin_faults(mut self, enabled: bool) -> Self {
        self.admin = enabled;
        self
    }

    /// How often watches that allow bookmarks get one. Default 60 s (as upstream).
    pub fn bookmark_interval(mut self, interval: Duration) -> Self {
        self.bookmark_interval = interval;
        self
    }

    /// The largest request body (every verb and content type). Default 3 MiB, as
    /// kube-apiserver; larger bodies get 413 RequestEntityTooLarge.
    pub fn max_request_body_bytes(mut self, bytes: usize) -> Self {
        self.limits.max_request_body_bytes = bytes;
        self
    }

    /// The largest encoded object a write may store, managedFields included. Default
    /// 8 MiB; larger results get 413 RequestEntityTooLarge.
    pub fn max_object_bytes(mut self, bytes: usize) -> Self {
        self.limits.max_object_bytes = bytes;
        self
    }

    /// How long a client may take to send request headers (and to finish a TLS
    /// handshake), and how long an idle keep-alive connection stays open. Default 32 s.
    /// Slow-loris connections are closed after it.
    pub fn header_read_timeout(mut self, timeout: Duration) -> Self {
        self.limits.header_read_timeout = timeout;
        self
    }

    /// How far one watcher may fall behind before its watch is ended (the client then
    /// re-watches). Default 10,000 changes or 64 MiB.
    pub fn watcher_limits(mut self, limits: WatcherLimits) -> Self {
        self.limits.watcher = limits;
        self
    }

    /// Starts the resourceVersions after `revision`, with everything before it forgotten
    /// (a watch or an exact list from an older resourceVersion gets 410). Use it to restart
    /// a server that clients were watching: etcd's revisions never go back, and a restarted
    /// server numbering from 1 again would look to a resuming client like the old history.
    /// Default 0.
    pub fn initial_revision(mut self, revision: u64) -> Self {
        self.initial_revision = revision;
        self
    }

    /// The most encoded bytes of objects kept in one resource's change history (besides
    /// the [`history_window`](Self::history_window) count). Default 64 MiB.
    pub fn history_bytes(mut self, bytes: usize) -> Self {
        self.limits.history_bytes = bytes;
        self
    }

    /// Make exec and attach speak only `v4.channel.k8s.io`, as API servers before 1.30
    /// did (no way to signal stdin EOF), to test a client's fallback from
    /// `v5.channel.k8s.io`. Default: both, v5 preferred.
    pub fn legacy_remote_command(mut self, enabled: bool) -> Self {
        self.legacy_remote_command = enabled;
        self
    }

    /// Host addresses a Pod's port-forward may dial (the `host:port` its annotation
    /// `port-forward.kubeclient.dev/<port>` names). None by default: a simulated Pod
    /// reaches nothing on the host unless the operator says so, since anyone who may
    /// create a Pod could otherwise reach every service on it. More can be allowed while
    /// the server runs ([`ApiServer::allow_port_forward`](super::ApiServer::allow_port_forward)).
    ///
    /// ```
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// let server = kubeclient_apiserver::ApiServer::builder()
    ///     .port_forward_allow(["127.0.0.1:8080".parse()?])
    ///     .start()
    ///     .await?;
    /// # server.shutdown().await;
    /// # Ok(())
    /// # }
    /// ```
    pub fn port_forward_allow(mut self, addresses: impl IntoIterator<Item = SocketAddr>) -> Self {
        self.port_forward_allow.extend(addresses);
        self
    }

    /// Serve a kubelet's own HTTPS port (10250 on a node) on `127.0.0.1:port` (0: a free
    /// one): its `/exec`, `/attach`, `/portForward`, `/containerLogs` and `/healthz`
    /// paths, answered by the simulated kubelets' streams after the API server's
    /// authentication, over TLS with a certificate of its own
    /// ([`ApiServer::kubelet_address`](super::ApiServer::kubelet_address),
    /// [`ApiServer::kubelet_ca_pem`](super::ApiServer::kubelet_ca_pem)). Off by default.
    ///
    /// ```
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// let server = kubeclient_apiserver::ApiServer::builder()
    ///     .nodes(1)
    ///     .kubelet_port(0)
    ///     .start()
    ///     .await?;
    /// assert!(server.kubelet_address().is_some());
    /// # server.shutdown().await;
    /// # Ok(())
    /// # }
    /// ```
    pub fn kubelet_port(mut self, port: u16) -> Self {
        self.kubelet_port = Some(port);
        self
    }

    /// How requests are authorized (kube-apiserver's `--authorization-mode`): the
    /// default [`AuthorizationMode::AlwaysAllow`] lets every authenticated user do
    /// everything; [`AuthorizationMode::Rbac`] answers from Roles, ClusterRoles and their
    /// bindings, so a ServiceAccount (or `kubectl --as`) may do only what it was granted.
    /// The server's own token and client certificates without a subject stay in
    /// `system:masters`, which may do everything.
    ///
    /// ```
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// use kubeclient_apiserver::{ApiServer, AuthorizationMode};
    ///
    /// let server = ApiServer::builder()
    ///     .authorization_mode(AuthorizationMode::Rbac)
    ///     .start()
    ///     .await?;
    /// # server.shutdown().await;
    /// # Ok(())
    /// # }
    /// ```
    pub fn authorization_mode(mut self, mode: AuthorizationMode) -> Self {
        self.authorization_mode = mode;
        self
    }

    /// Run the garbage collector (default on), as kube-controller-manager does: objects
    /// whose owners (`metadata.ownerReferences`, by uid) are all gone are deleted, and
    /// `propagationPolicy` `Foreground` and `Orphan` deletes are finished. Turn it off to
    /// store objects whose owners the server never holds (a benchmark's Pods owned by
    /// ReplicaSets it does not create) without having them collected.
    ///
    /// ```
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// let server = kubeclient_apiserver::ApiServer::builder()
    ///     .garbage_collector(false)
    ///     .start()
    ///     .await?;
    /// # server.shutdown().await;
    /// # Ok(())
    /// # }
    /// ```
    pub fn garbage_collector(mut self, enabled: bool) -> Self {
        self.garbage_collector = enabled;
        self
    }

    /// The Kubernetes version `/version` reports, as its minor number (`1.<minor>`);
    /// default 37, the API the server's types come from. kubectl warns (`kubectl version`)
    /// when the server is more than one minor version away from it: match your kubectl
    /// to silence that (`kubeclient serve --kubernetes-version 1.33`).
    ///
    /// ```
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// let server = kubeclient_apiserver::ApiServer::builder()
    ///     .kubernetes_minor_version(33)
    ///     .start()
    ///     .await?;
    /// # server.shutdown().await;
    /// # Ok(())
    /// # }
    /// ```
    pub fn kubernetes_minor_version(mut self, minor: u32) -> Self {
        self.kubernetes_minor_version = minor;
        self
    }

    /// The issuer (`iss`) of the ServiceAccount tokens `TokenRequest` issues, as
    /// kube-apiserver's `--service-account-issuer`. Default
    /// `https://kubernetes.default.svc.cluster.local`.
    pub fn service_account_issuer(mut self, issuer: impl Into<String>) -> Self {
        self.service_account_issuer = issuer.into();
        self
    }

    /// The audiences the API accepts ServiceAccount tokens for, as kube-apiserver's
    /// `--api-audiences`: a token requested for other audiences only (`kubectl create
    /// token --audience https://vault.example.com`) does not authenticate requests.
    /// TokenRequests that name no audience get these. Default: the
    /// [issuer](Self::service_account_issuer) alone.
    ///
    /// ```
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// let server = kubeclient_apiserver::ApiServer::builder()
    ///     .service_account_issuer("https://issuer.example")
    ///     .api_audiences(["https://issuer.example", "api"])
    ///     .start()
    ///     .await?;
    /// # server.shutdown().await;
    /// # Ok(())
    /// # }
    /// ```
    pub fn api_audiences<I, S>(mut self, audiences: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.api_audiences = Some(audiences.into_iter().map(Into::into).collect());
        self
    }

    /// Whether admission webhooks whose `clientConfig.url` resolves off loopback may be
    /// called (default: no; such a call fails, and the webhook's `failurePolicy`
    /// decides). The embedded server is for tests on one machine: a configuration copied
    /// from a cluster should not make it call out.
    pub fn allow_remote_webhooks(mut self, allow: bool) -> Self {
        self.remote_webhooks = allow;
        self
    }

    /// The deadline of a CRD conversion webhook call (default 30 s, which kube-apiserver
    /// fixes): a test of a webhook that hangs need not wait that long.
    pub fn conversion_webhook_timeout(mut self, timeout: Duration) -> Self {
        self.conversion_timeout = timeout;
        self
    }

    /// Run a simulated cluster of `count` nodes (`node-1` ... `node-N`): each has a
    /// kubelet that registers its Node (4 CPUs, 16 GiB, 110 Pods), renews its Lease in
    /// `kube-node-lease` and runs the Pods bound to it (phases, addresses, conditions,
    /// container statuses; commands are the built-in ones exec runs); a scheduler binds
    /// pending Pods; the node lifecycle controller marks silent nodes `NotReady`.
    /// Default 0: no cluster, and the server binds each new Pod to `kubeclient-node`
    /// itself (`kubeclient serve` defaults to 1). See [`ApiServer::cluster`](super::ApiServer::cluster).
    /// At most [`MAX_NODES`](crate::MAX_NODES); a larger count is lowered to it.
    ///
    /// ```
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// let server = kubeclient_apiserver::ApiServer::builder().nodes(3).start().await?;
    /// assert_eq!(server.cluster().node_names().len(), 3);
    /// # server.shutdown().await;
    /// # Ok(())
    /// # }
    /// ```
    pub fn nodes(mut self, count: usize) -> Self {
        self.cluster.nodes = count.min(crate::MAX_NODES);
        self
    }

    /// How often each simulated kubelet renews its node's Lease. Default 10 s (the
    /// kubelet's: a quarter of the 40 s lease).
    pub fn node_heartbeat_interval(mut self, interval: Duration) -> Self {
        self.cluster.heartbeat_interval = interval.max(Duration::from_millis(10));
        self
    }

    /// How long a node's Lease may go unrenewed before the node lifecycle controller
    /// sets its conditions `Unknown` (`kubectl get nodes`: `NotReady`) and taints it
    /// `node.kubernetes.io/unreachable`. Default 50 s, kube-controller-manager's
    /// `--node-monitor-grace-period`.
    pub fn node_monitor_grace_period(mut self, grace: Duration) -> Self {
        self.cluster.node_monitor_grace_period = grace;
        self
    }

    /// Run the simulated cluster's scheduler (default on). Off, Pods stay `Pending`
    /// until something else sets their `spec.nodeName`.
    pub fn scheduler(mut self, enabled: bool) -> Self {
        self.cluster.scheduler = enabled;
        self
    }

    /// Let the simulated kubelets run Pods (default on). Off, the nodes still register
    /// and heartbeat, but bound Pods keep the status they were created with.
    pub fn kubelets(mut self, enabled: bool) -> Self {
        self.cluster.kubelets = enabled;
        self
    }

    /// Run the node lifecycle controller (default on): silent nodes become `NotReady`
    /// and tainted, and their Pods are evicted once their tolerations end.
    pub fn node_lifecycle_controller(mut self, enabled: bool) -> Self {
        self.cluster.node_lifecycle_controller = enabled;
        self
    }

    /// Run the simulated cluster's ReplicaSet controller (default on): each ReplicaSet
    /// keeps `spec.replicas` Pods from its template.
    pub fn replica_set_controller(mut self, enabled: bool) -> Self {
        self.cluster.replica_set_controller = enabled;
        self
    }

    /// Run the simulated cluster's Deployment controller (default on): ReplicaSets per
    /// template with `pod-template-hash`, rolling updates, revisions, status.
    pub fn deployment_controller(mut self, enabled: bool) -> Self {
        self.cluster.deployment_controller = enabled;
        self
    }

    /// Run the simulated cluster's Job controller (default on): Pods up to
    /// `parallelism` until `completions` succeeded, `backoffLimit`, indexed Jobs, the
    /// `Complete` and `Failed` conditions.
    pub fn job_controller(mut self, enabled: bool) -> Self {
        self.cluster.job_controller = enabled;
        self
    }

    /// Run the simulated cluster's CronJob controller (default on): a Job per schedule
    /// time, by `concurrencyPolicy`, within `startingDeadlineSeconds`, history limits. Its
    /// schedules run `1/time_scale` times as fast as the wall clock (at most 1,000 times).
    ///
    /// ```
    /// let builder = kubeclient_apiserver::ApiServer::builder()
    ///     .nodes(1)
    ///     .cron_job_controller(false);
    /// # drop(builder);
    /// ```
    pub fn cron_job_controller(mut self, enabled: bool) -> Self {
        self.cluster.cron_job_controller = enabled;
        self
    }

    /// Run the simulated cluster's TTL-after-finished controller (default on): a finished
    /// Job with `ttlSecondsAfterFinished` is deleted that long (scaled) after it finished.
    pub fn ttl_after_finished_controller(mut self, enabled: bool) -> Self {
        self.cluster.ttl_after_finished_controller = enabled;
        self
    }

    /// Run the simulated cluster's resource quota controller (default on): each
    /// ResourceQuota's `status.hard` and `status.used` follow its namespace's objects.
    /// Quota admission runs regardless (it is the API server's).
    pub fn resource_quota_controller(mut self, enabled: bool) -> Self {
        self.cluster.resource_quota_controller = enabled;
        self
    }

    /// Run the simulated cluster's PersistentVolume controller (default on): the cluster
    /// gets a default StorageClass `standard`, and each pending claim of it a host-path
    /// PersistentVolume `pvc-<uid>`, both `Bound`.
    pub fn persistent_volume_controller(mut self, enabled: bool) -> Self {
        self.cluster.persistent_volume_controller = enabled;
        self
    }

    /// Run the simulated cluster's ReplicationController controller (default on): each
    /// ReplicationController keeps `spec.replicas` Pods, as the ReplicaSet controller does.
    pub fn replication_controller(mut self, enabled: bool) -> Self {
        self.cluster.replication_controller = enabled;
        self
    }

    /// Run the simulated cluster's StatefulSet controller (default on): Pods `<name>-0`
    /// ... in ordinal order, one at a time (or in parallel), their claims from
    /// `volumeClaimTemplates`, rolling updates from the highest ordinal down.
    pub fn stateful_set_controller(mut self, enabled: bool) -> Self {
        self.cluster.stateful_set_controller = enabled;
        self
    }

    /// Run the simulated cluster's DaemonSet controller (default on): one Pod of each
    /// DaemonSet on every node its selector, affinity and tolerations allow, rolled out
    /// node by node when its template changes.
    pub fn daemon_set_controller(mut self, enabled: bool) -> Self {
        self.cluster.daemon_set_controller = enabled;
        self
    }

    /// Run the simulated cluster's Endpoints controller (default on): an Endpoints object
    /// per Service with a selector, listing its ready and not-ready Pods and their ports.
    pub fn endpoints_controller(mut self, enabled: bool) -> Self {
        self.cluster.endpoints_controller = enabled;
        self
    }

    /// Run the simulated cluster's EndpointSlice controller (default on):
    /// `discovery.k8s.io/v1` EndpointSlices per Service with a selector, with each Pod's
    /// `ready`, `serving` and `terminating` conditions.
    pub fn endpoint_slice_controller(mut self, enabled: bool) -> Self {
        self.cluster.endpoint_slice_controller = enabled;
        self
    }

    /// How long the simulated kubelets take over Pods' steps (start, readiness,
    /// completion, removal), by Pod labels and annotations: kwok-style [`Stages`]
    /// (`kubeclient serve --stages FILE`). Default: none, every step at once.
    ///
    /// [`Stages`]: crate::Stages
    pub fn stages(mut self, stages: crate::Stages) -> Self {
        self.cluster.stages = stages;
        self
    }

    /// The factor the simulated cluster's durations are multiplied by: Pods' grace
    /// periods, container restart back-offs, eviction tolerations. Default 1.0; 0 makes
    /// them instant, 0.1 ten times faster.
    pub fn time_scale(mut self, factor: f64) -> Self {
        self.cluster.time_scale = if factor.is_finite() && factor >= 0.0 {
            factor
        } else {
            1.0
        };
        self
    }
}
