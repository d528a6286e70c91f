//! `kubeclient serve`: the embedded API server as a command.

use std::net::SocketAddr;
use std::path::PathBuf;

use kubeclient_apiserver::ApiServer;

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
    /// Require this bearer token on every request (except health and version).
    #[arg(long, value_name = "T")]
    token: Option<String>,
    /// Serve the fault-injection admin paths (POST /_kubeclient/faults/...).
    #[arg(long)]
    enable_faults: bool,
}

/// Runs the server until Ctrl-C or SIGTERM.
pub(crate) async fn run(args: ServeArgs) -> Result<(), Box<dyn std::error::Error>> {
    let mut builder = ApiServer::builder()
        .listen(args.listen)
        .history_window(args.history_window)
        .tls(args.tls)
        .enable_admin_faults(args.enable_faults);
    if let Some(token) = args.token {
        builder = builder.token(token);
    }
    let server = builder.start().await?;
    println!("kubeclient API server listening on {}", server.url());
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
