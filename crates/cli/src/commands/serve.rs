//! `kubeclient serve`: the embedded API server as a command.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use kubeclient_apiserver::storage::EtcdConfig;
use kubeclient_apiserver::{
    ApiServer, AuthorizationMode, DEFAULT_SERVICE_ACCOUNT_ISSUER, Limits, WatcherLimits,
};

/// The environment variable `kubeclient serve` reads its token from when neither
/// `--token` nor `--token-file` is given.
pub(crate) const TOKEN_ENV: &str = "KUBECLIENT_TOKEN";

/// Options of `kubeclient serve`.
#[derive(Debug, clap::Args)]
pub(crate) struct ServeArgs {
    /// Address to listen on; port 0 picks a free port (the real one is printed).
    #[arg(long, default_value = "127.0.0.1:6443")]
    listen: SocketAddr,
    /// Write a kubeconfig for this server to PATH (use it with KUBECONFIG=PATH kubectl ...).
    #[arg(long, value_name = "PATH")]
    write_kubeconfig: Option<PathBuf>,
    /// Changes kept per resource for watches from older resourceVersions (older: 410).
    #[arg(long, default_value_t = 10_000, value_name = "N")]
    history_window: usize,
    /// Serve HTTPS with a generated CA (its certificate goes into the kubeconfig).
    #[arg(long)]
    tls: bool,
    /// The Kubernetes version /version reports, as 1.MINOR (kubectl warns when it is more
    /// than one minor version away from its own).
    #[arg(long, value_name = "1.MINOR", default_value = "1.37", value_parser = parse_kubernetes_version)]
    kubernetes_version: u32,
    /// Do not run the garbage collector (dependents whose owners are gone then stay).
    #[arg(long)]
    no_garbage_collector: bool,
    /// Simulated nodes, each with a kubelet that runs the Pods bound to it; a scheduler
    /// binds Pods to them. 0 runs no cluster: the server binds each Pod to
    /// `kubeclient-node` and nothing runs (a pure API server).
    #[arg(long, value_name = "N", default_value_t = 1)]
    nodes: usize,
    /// Seconds between a kubelet's Lease renewals in kube-node-lease.
    #[arg(long, value_name = "SECONDS", default_value_t = 10.0)]
    node_heartbeat_interval: f64,
    /// Seconds a node's Lease may go unrenewed before the node is NotReady and tainted.
    #[arg(long, value_name = "SECONDS", default_value_t = 50.0)]
    node_monitor_grace_period: f64,
    /// Do not run the scheduler (Pods stay Pending).
    #[arg(long)]
    no_scheduler: bool,
    /// Do not let the kubelets run Pods (bound Pods keep their status).
    #[arg(long)]
    no_kubelets: bool,
    /// Do not run the node lifecycle controller (silent nodes stay Ready).
    #[arg(long)]
    no_node_lifecycle_controller: bool,
    /// Do not run the ReplicaSet controller.
    #[arg(long)]
    no_replicaset_controller: bool,
    /// Do not run the Deployment controller.
    #[arg(long)]
    no_deployment_controller: bool,
    /// Do not run the Job controller.
    #[arg(long)]
    no_job_controller: bool,
    /// Do not run the CronJob controller.
    #[arg(long)]
    no_cronjob_controller: bool,
    /// Do not run the TTL-after-finished controller (finished Jobs stay).
    #[arg(long)]
    no_ttl_after_finished_controller: bool,
    /// Do not run the resource quota controller (ResourceQuotas get no status).
    #[arg(long)]
    no_resourcequota_controller: bool,
    /// Do not run the ReplicationController controller.
    #[arg(long)]
    no_replicationcontroller_controller: bool,
    /// Do not run the PersistentVolume controller (no default StorageClass, claims stay
    /// Pending).
    #[arg(long)]
    no_persistentvolume_controller: bool,
    /// Do not run the StatefulSet controller.
    #[arg(long)]
    no_statefulset_controller: bool,
    /// Do not run the DaemonSet controller.
    #[arg(long)]
    no_daemonset_controller: bool,
    /// Do not run the Endpoints controller (Services get no Endpoints).
    #[arg(long)]
    no_endpoints_controller: bool,
    /// Do not run the EndpointSlice controller (Services get no EndpointSlices).
    #[arg(long)]
    no_endpointslice_controller: bool,
    /// Factor for the simulated cluster's durations (grace periods, restart back-offs,
    /// eviction tolerations): 0 makes them instant, 0.1 ten times faster.
    #[arg(long, value_name = "FACTOR", default_value_t = 1.0)]
    time_scale: f64,
    /// A kwok-style stages file (YAML or JSON `Stage` objects): delays of Pods' start,
    /// readiness, completion and removal, chosen by Pod labels and annotations, scaled by
    /// --time-scale. Default: none.
    #[arg(long, value_name = "FILE")]
    stages: Option<PathBuf>,
    /// Require this bearer token on every request (except health and version). It shows
    /// in `ps`: prefer --token-file or the KUBECLIENT_TOKEN environment variable.
    #[arg(long, value_name = "T", conflicts_with = "token_file")]
    token: Option<String>,
    /// Read the required bearer token from this file (surrounding whitespace is ignored).
    #[arg(long, value_name = "PATH")]
    token_file: Option<PathBuf>,
    /// The issuer (`iss`) of the ServiceAccount tokens TokenRequests get (`kubectl create
    /// token`), as kube-apiserver's flag of that name.
    #[arg(long, value_name = "URL", default_value = DEFAULT_SERVICE_ACCOUNT_ISSUER)]
    service_account_issuer: String,
    /// The audiences the API accepts ServiceAccount tokens for, comma separated (a token
    /// requested for another audience only is refused), as kube-apiserver's flag.
    /// Default: the issuer.
    #[arg(long, value_name = "AUDIENCE,...", value_delimiter = ',')]
    api_audiences: Vec<String>,
    /// Host addresses a Pod's port-forward may dial (what its annotation
    /// `port-forward.kubeclient.dev/<port>` names), comma separated IP:PORT. None by
    /// default: simulated Pods reach nothing on this host unless it is listed here.
    #[arg(long, value_name = "IP:PORT,...", value_delimiter = ',')]
    port_forward_allow: Vec<SocketAddr>,
    /// Also serve a kubelet's own HTTPS port (a node's 10250) on 127.0.0.1:PORT for the
    /// simulated nodes: /exec, /attach, /portForward, /containerLogs and /healthz, with
    /// this server's authentication and a certificate of its own. Off by default.
    #[arg(long, value_name = "PORT")]
    kubelet_port: Option<u16>,
    /// How requests are authorized, as kube-apiserver's flag: AlwaysAllow (every
    /// authenticated user may do everything) or RBAC (Roles, ClusterRoles and their
    /// bindings decide; the server's own token stays in system:masters).
    #[arg(long, value_name = "MODE", default_value = "AlwaysAllow")]
    authorization_mode: AuthorizationMode,
    /// Serve the fault-injection admin paths (POST /_kubeclient/faults/...).
    #[arg(long)]
    enable_faults: bool,
    /// Largest request body in bytes (larger: 413). Default 3 MiB, as kube-apiserver.
    #[arg(long, value_name = "BYTES", default_value_t = Limits::default().max_request_body_bytes)]
    max_request_body_bytes: usize,
    /// Largest encoded object a write may store, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = Limits::default().max_object_bytes)]
    max_object_bytes: usize,
    /// Seconds a client may take to send request headers (or finish TLS); idle
    /// connections are closed after it too.
    #[arg(long, value_name = "SECONDS", default_value_t = Limits::default().header_read_timeout.as_secs())]
    header_read_timeout: u64,
    /// Changes a watcher may fall behind by before its watch is ended (it re-watches).
    #[arg(long, value_name = "N", default_value_t = WatcherLimits::default().max_queued_changes)]
    watch_backlog_changes: usize,
    /// Encoded bytes a watcher may fall behind by before its watch is ended.
    #[arg(long, value_name = "BYTES", default_value_t = WatcherLimits::default().max_queued_bytes)]
    watch_backlog_bytes: usize,
    /// Keep every object in etcd (its members' client URLs, comma separated), under
    /// kube-apiserver's keys and encoding, as kube-apiserver's flag: objects survive
    /// restarts and several servers can share one etcd. Default: in memory only.
    #[arg(long, value_name = "URL,...", value_delimiter = ',')]
    etcd_servers: Vec<String>,
    /// Keep every object in a database in this directory (created when missing), for
    /// this one process: objects survive restarts, every answered write is on disk first.
    /// Default: in memory only.
    #[arg(long, value_name = "DIR", conflicts_with = "etcd_servers")]
    data_dir: Option<PathBuf>,
    /// The prefix of every etcd key.
    #[arg(long, value_name = "PREFIX", default_value = EtcdConfig::DEFAULT_PREFIX, requires = "etcd_servers")]
    etcd_prefix: String,
    /// The CA bundle that signed the etcd members' certificates.
    #[arg(long, value_name = "PATH", requires = "etcd_servers")]
    etcd_cafile: Option<PathBuf>,
    /// The client certificate for etcd (with --etcd-keyfile).
    #[arg(long, value_name = "PATH", requires = "etcd_servers")]
    etcd_certfile: Option<PathBuf>,
    /// The client certificate's private key.
    #[arg(long, value_name = "PATH", requires = "etcd_servers")]
    etcd_keyfile: Option<PathBuf>,
}

/// The etcd configuration of `--etcd-*`, when `--etcd-servers` is given.
fn etcd_config(args: &ServeArgs) -> Option<EtcdConfig> {
    let servers: Vec<&String> = args.etcd_servers.iter().filter(|s| !s.is_empty()).collect();
    if servers.is_empty() {
        return None;
    }
    let mut config = EtcdConfig::new(servers.into_iter().cloned()).with_prefix(&args.etcd_prefix);
    config.ca_file = args.etcd_cafile.clone();
    config.cert_file = args.etcd_certfile.clone();
    config.key_file = args.etcd_keyfile.clone();
    Some(config)
}

/// Why `--token-file` gives no token.
#[derive(Debug, thiserror::Error)]
enum TokenFileError {
    /// The file cannot be read.
    #[error("cannot read the token file {}", .path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file holds only whitespace.
    #[error("the token file {} is empty; put the token in it, or drop --token-file", .0.display())]
    Empty(PathBuf),
}

/// The token from `--token`, `--token-file` or `KUBECLIENT_TOKEN`, in that order.
fn token(args: &ServeArgs) -> Result<Option<String>, TokenFileError> {
    if let Some(token) = &args.token {
        return Ok(Some(token.clone()));
    }
    if let Some(path) = &args.token_file {
        return read_token_file(path).map(Some);
    }
    match std::env::var(TOKEN_ENV) {
        Ok(token) if !token.trim().is_empty() => Ok(Some(token.trim().to_owned())),
        _ => Ok(None),
    }
}

/// The token in the file at `path`, without surrounding whitespace.
fn read_token_file(path: &Path) -> Result<String, TokenFileError> {
    let text = std::fs::read_to_string(path).map_err(|source| TokenFileError::Unreadable {
        path: path.to_owned(),
        source,
    })?;
    let token = text.trim();
    if token.is_empty() {
        return Err(TokenFileError::Empty(path.to_owned()));
    }
    Ok(token.to_owned())
}

/// The minor number of a `1.MINOR` (or `v1.MINOR`, `1.MINOR.PATCH`) version.
fn parse_kubernetes_version(text: &str) -> Result<u32, String> {
    let text = text.strip_prefix('v').unwrap_or(text);
    let mut parts = text.split('.');
    let minor = match (parts.next(), parts.next()) {
        (Some("1"), Some(minor)) => minor.parse::<u32>().ok(),
        _ => None,
    };
    minor.filter(|m| *m <= 999).ok_or_else(|| {
        format!("{text:?} is not a Kubernetes 1.x version: write it as 1.MINOR, e.g. 1.33")
    })
}

/// A positive number of seconds (at most a day) as a duration.
fn seconds(value: f64, flag: &str) -> Result<Duration, String> {
    if value.is_finite() && value > 0.0 && value <= 86_400.0 {
        Ok(Duration::from_secs_f64(value))
    } else {
        Err(format!(
            "{flag} takes a number of seconds above 0 and at most 86400, not {value}"
        ))
    }
}

/// Runs the server until Ctrl-C or SIGTERM.
pub(crate) async fn run(args: ServeArgs) -> Result<(), Box<dyn std::error::Error>> {
    if !(args.time_scale.is_finite() && args.time_scale >= 0.0) {
        return Err(format!(
            "--time-scale takes a factor of 0 or more, not {}",
            args.time_scale
        )
        .into());
    }
    if args.nodes > kubeclient_apiserver::MAX_NODES {
        return Err(format!(
            "--nodes takes at most {} nodes (each gets a /24 Pod CIDR in 10.244-10.254), not {}",
            kubeclient_apiserver::MAX_NODES,
            args.nodes
        )
        .into());
    }
    let stages = match &args.stages {
        Some(path) => kubeclient_apiserver::Stages::load(path)?,
        None => kubeclient_apiserver::Stages::default(),
    };
    let mut builder = ApiServer::builder()
        .stages(stages)
        .listen(args.listen)
        .history_window(args.history_window)
        .tls(args.tls)
        .kubernetes_minor_version(args.kubernetes_version)
        .garbage_collector(!args.no_garbage_collector)
        .nodes(args.nodes)
        .node_heartbeat_interval(seconds(
            args.node_heartbeat_interval,
            "--node-heartbeat-interval",
        )?)
        .node_monitor_grace_period(seconds(
            args.node_monitor_grace_period,
            "--node-monitor-grace-period",
        )?)
        .scheduler(!args.no_scheduler)
        .kubelets(!args.no_kubelets)
        .node_lifecycle_controller(!args.no_node_lifecycle_controller)
        .replica_set_controller(!args.no_replicaset_controller)
        .deployment_controller(!args.no_deployment_controller)
        .job_controller(!args.no_job_controller)
        .cron_job_controller(!args.no_cronjob_controller)
        .ttl_after_finished_controller(!args.no_ttl_after_finished_controller)
        .resource_quota_controller(!args.no_resourcequota_controller)
        .replication_controller(!args.no_replicationcontroller_controller)
        .persistent_volume_controller(!args.no_persistentvolume_controller)
        .stateful_set_controller(!args.no_statefulset_controller)
        .daemon_set_controller(!args.no_daemonset_controller)
        .endpoints_controller(!args.no_endpoints_controller)
        .endpoint_slice_controller(!args.no_endpointslice_controller)
        .time_scale(args.time_scale)
        .port_forward_allow(args.port_forward_allow.iter().copied())
        .authorization_mode(args.authorization_mode)
        .enable_admin_faults(args.enable_faults)
        .service_account_issuer(args.service_account_issuer.clone())
        .max_request_body_bytes(args.max_request_body_bytes)
        .max_object_bytes(args.max_object_bytes)
        .header_read_timeout(Duration::from_secs(args.header_read_timeout.max(1)))
        .watcher_limits(WatcherLimits {
            max_queued_changes: args.watch_backlog_changes,
            max_queued_bytes: args.watch_backlog_bytes,
        });
    let audiences: Vec<&String> = args
        .api_audiences
        .iter()
        .filter(|a| !a.is_empty())
        .collect();
    if !audiences.is_empty() {
        builder = builder.api_audiences(audiences);
    }
    if let Some(token) = token(&args)? {
        builder = builder.token(token);
    }
    let etcd = etcd_config(&args);
    if let Some(etcd) = &etcd {
        builder = builder.etcd(etcd.clone());
    }
    if let Some(dir) = &args.data_dir {
        builder = builder.data_dir(dir);
    }
    if let Some(port) = args.kubelet_port {
        builder = builder.kubelet_port(port);
    }
    let server = builder.start().await?;
    println!("kubeclient API server listening on {}", server.url());
    if let Some(address) = server.kubelet_address() {
        println!("kubelet port listening on https://{address}");
    }
    if let Some(path) = &args.write_kubeconfig {
        server
            .write_kubeconfig(path)
            .map_err(|err| format!("cannot write the kubeconfig to {}: {err}", path.display()))?;
        println!(
            "kubeconfig written to {} (try: KUBECONFIG={} kubectl get namespaces)",
            path.display(),
            path.display()
        );
    }
    if args.nodes > 0 {
        println!(
            "simulated cluster: {} node(s) ({}), scheduler {}, kubelets {}",
            args.nodes,
            server.cluster().node_names().join(", "),
            if args.no_scheduler { "off" } else { "on" },
            if args.no_kubelets { "off" } else { "on" },
        );
    }
    if let Some(etcd) = &etcd {
        println!(
            "objects are stored in etcd at {} under {}",
            etcd.servers.join(","),
            etcd.prefix
        );
    }
    if let Some(dir) = &args.data_dir {
        println!("objects are stored in {}", dir.display());
    }
    wait_for_stop_signal().await;
    println!("shutting down");
    server.shutdown().await;
    Ok(())
}

async fn wait_for_stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut terminate) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = terminate.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_file_is_read_trimmed_and_an_empty_one_is_an_error() {
        let dir = std::env::temp_dir().join(format!("kubeclient-token-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("token");
        std::fs::write(&file, "  s3cret\n").unwrap();
        assert_eq!(read_token_file(&file).unwrap(), "s3cret");
        std::fs::write(&file, "\n").unwrap();
        assert!(
            read_token_file(&file)
                .unwrap_err()
                .to_string()
                .contains("is empty")
        );
        let absent = read_token_file(&dir.join("absent")).unwrap_err();
        assert!(absent.to_string().starts_with("cannot read the token file"));
        // The I/O error is the cause, not part of the message.
        assert!(std::error::Error::source(&absent).is_some());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
