//! `kubeclient watch RESOURCE`: an informer-backed live view of one resource.

use std::path::PathBuf;
use std::sync::Arc;

use futures_util::StreamExt;
use kubeclient::cache::Notification;
use kubeclient::config::{Kubeconfig, KubeconfigOptions};
use kubeclient::discovery::Discovery;
use kubeclient::informers::SharedInformerFactory;
use kubeclient::machinery::{Object, meta_namespace_key};
use kubeclient::{Client, Config};

/// Options of `kubeclient watch`.
#[derive(Debug, clap::Args)]
pub(crate) struct WatchArgs {
    /// What to watch, as kubectl names it: `pods`, `deploy`, `deployments.apps`, `widgets`.
    resource: String,
    /// Only this namespace (default: all namespaces).
    #[arg(short, long)]
    namespace: Option<String>,
    /// A label selector, e.g. `app=web`.
    #[arg(short = 'l', long)]
    selector: Option<String>,
    /// The kubeconfig (default: KUBECONFIG, then ~/.kube/config). For the embedded server,
    /// start `kubeclient serve --write-kubeconfig PATH` and pass PATH.
    #[arg(long, value_name = "PATH")]
    kubeconfig: Option<PathBuf>,
    /// The context to use.
    #[arg(long)]
    context: Option<String>,
}

/// Prints every add, update and delete until Ctrl-C.
pub(crate) async fn run(args: WatchArgs) -> Result<(), Box<dyn std::error::Error>> {
    let options = KubeconfigOptions {
        context: args.context.clone(),
        ..KubeconfigOptions::default()
    };
    let kubeconfig = match &args.kubeconfig {
        Some(path) => Kubeconfig::read_from(path)?,
        None => Kubeconfig::from_default_locations()?.ok_or(
            "no kubeconfig: pass --kubeconfig, set KUBECONFIG, or start `kubeclient serve --write-kubeconfig PATH`",
        )?,
    };
    let client = Client::new(Config::from_kubeconfig(&kubeconfig, &options)?).await?;
    let resources = Discovery::new(client.clone()).resources().await?;
    let resource = resources.resolve(&args.resource).ok_or_else(|| {
        format!(
            "the server has no resource {:?} (try `kubectl api-resources` for the names)",
            args.resource
        )
    })?;
    let mut factory = SharedInformerFactory::new(client);
    if let Some(namespace) = &args.namespace {
        factory = factory.namespace(namespace);
    }
    if let Some(selector) = args.selector.clone() {
        factory = factory.tweak_list_options(Arc::new(move |list, watch| {
            list.label_selector = Some(selector.clone());
            watch.label_selector = Some(selector.clone());
        }));
    }
    let informer = factory.dynamic_informer(&resource);
    let (_registration, mut notifications) = informer.notifications()?;
    factory.start();
    eprintln!("watching {} (Ctrl-C to stop)", resource.gvr());
    // Say when the initial list is in (the EXISTS lines), so a person or a script knows
    // that what follows are changes. The stream is read meanwhile, so this never blocks it.
    let sync_watcher = informer.clone();
    tokio::spawn(async move {
        if sync_watcher
            .wait_for_cache_sync(&kubeclient::CancellationToken::new())
            .await
        {
            eprintln!("synced: the lines after the EXISTS ones are changes");
        }
    });
    loop {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => break,
            notification = notifications.next() => match notification {
                Some(Notification::Add { obj, is_in_initial_list }) => {
                    let tag = if is_in_initial_list { "EXISTS " } else { "ADDED  " };
                    println!("{tag} {} rv={}", meta_namespace_key(obj.as_ref()), obj.resource_version());
                }
                Some(Notification::Update { old, new }) if old.resource_version() != new.resource_version() => {
                    println!("UPDATED {} rv={}", meta_namespace_key(new.as_ref()), new.resource_version());
                }
                Some(Notification::Update { .. }) => {}
                Some(Notification::Delete(deleted)) => println!("DELETED {}", deleted.key()),
                None => break,
            },
        }
    }
    factory.shutdown().await;
    Ok(())
}
