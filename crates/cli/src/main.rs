//! The `kubeclient` command.
//!
//! Exit codes: 0 success, 1 the command failed, 2 bad usage.

mod commands;
mod terminal;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// kubeclient: client-go for Rust, with an embedded Kubernetes API server.
#[derive(Debug, Parser)]
#[command(name = "kubeclient", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// The main job: informers against the embedded server under load and faults, then a
    /// convergence check (prints `converged`; exit code 1 if a cache differs).
    Demo(commands::demo::DemoArgs),
    /// Watch one resource through an informer: prints adds, updates and deletes.
    Watch(commands::watch::WatchArgs),
    /// Run the embedded Kubernetes-compatible API server until Ctrl-C.
    Serve(Box<commands::serve::ServeArgs>),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("KUBECLIENT_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(terminal::stderr_allows_ansi())
        .init();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("kubeclient: cannot start the async runtime: {err}");
            return ExitCode::from(1);
        }
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::Serve(args) => commands::serve::run(*args).await.map(|()| true),
            Command::Demo(args) => commands::demo::run(args).await,
            Command::Watch(args) => commands::watch::run(args).await.map(|()| true),
        }
    });
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(err) => {
            eprintln!("kubeclient: {err}");
            let mut cause = err.source();
            while let Some(err) = cause {
                eprintln!("  caused by: {err}");
                cause = err.source();
            }
            ExitCode::from(1)
        }
    }
}
