//! The controller from the seeds, in kubeclient: an `Installation` custom resource wants a
//! Service; informers watch Installations (dynamic) and Services (typed); their handlers
//! enqueue Installation keys; workers reconcile by reading the listers and create the
//! missing Services.
//!
//! Run it on the embedded API server (no cluster needed):
//!
//! ```text
//! cargo run -p sample-controller
//! ```

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Service;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kubeclient::cache::ResourceEventHandlerFuncs;
use kubeclient::config::{Kubeconfig, KubeconfigOptions};
use kubeclient::informers::SharedInformerFactory;
use kubeclient::machinery::{
    ApiResource, DynamicObject, GroupResource, GroupVersionKind, Object, meta_namespace_key,
};
use kubeclient::workqueue::{QueueConfig, RateLimitingQueue, default_controller_rate_limiter};
use kubeclient::{Api, Client, Config, PostParams};
use kubeclient_apiserver::ApiServer;
use serde_json::json;

fn installations() -> ApiResource {
    ApiResource::from_gvk(
        &GroupVersionKind::new("example.kubeclient.dev", "v1", "Installation"),
        "installations",
        true,
    )
}

/// Makes sure the Installation `key` has its Service. Reads desired state from the cache.
async fn reconcile(
    client: &Client,
    installations: &kubeclient::cache::Lister<DynamicObject>,
    services: &kubeclient::cache::Lister<Service>,
    key: &str,
) -> kubeclient::Result<()> {
    let (namespace, name) = key.split_once('/').unwrap_or(("default", key));
    let Ok(installation) = installations.by_namespace(namespace).get(name) else {
        return Ok(()); // deleted: nothing to do (a real controller would clean up)
    };
    let service_name = format!("{name}-svc");
    if services.by_namespace(namespace).get(&service_name).is_ok() {
        return Ok(());
    }
    let port = installation.data["spec"]["port"].as_i64().unwrap_or(80);
    let service: Service = serde_json::from_value(json!({
        "metadata": {"name": service_name, "labels": {"installation": name}},
        "spec": {"ports": [{"port": port}], "selector": {"app": name}}
    }))
    .map_err(|err| kubeclient::Error::InvalidRequest(err.to_string()))?;
    match Api::<Service>::namespaced(client.clone(), namespace)
        .create(&PostParams::default(), &service)
        .await
    {
        Ok(_) => println!("reconciled {key}: created service {service_name}"),
        Err(err) if err.api().is_some_and(|e| e.is_already_exists()) => {}
        Err(err) => return Err(err),
    }
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The embedded server, unless KUBECONFIG points at a cluster.
    let (server, config) = match std::env::var_os("KUBECONFIG") {
        Some(path) => (
            None,
            Config::from_kubeconfig(&Kubeconfig::read_from(path)?, &KubeconfigOptions::default())?,
        ),
        None => {
            let server = ApiServer::start().await?;
            let config = Config::from_kubeconfig(
                &Kubeconfig::from_yaml(&server.kubeconfig())?,
                &KubeconfigOptions::default(),
            )?;
            (Some(server), config)
        }
    };
    let client = Client::new(config).await?;
    let crd: CustomResourceDefinition = serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "installations.example.kubeclient.dev"},
        "spec": {"group": "example.kubeclient.dev", "scope": "Namespaced",
                 "names": {"plural": "installations", "singular": "installation", "kind": "Installation"},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                               "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}
    }))?;
    if let Err(err) = Api::<CustomResourceDefinition>::all(client.clone())
        .create(&PostParams::default(), &crd)
        .await
        && !err.api().is_some_and(|e| e.is_already_exists())
    {
        return Err(err.into());
    }

    // Informers, listers, and a work queue of Installation keys.
    let factory = SharedInformerFactory::new(client.clone());
    let installation_informer = factory.dynamic_informer(&installations());
    let service_informer = factory.informer::<Service>();
    let queue: RateLimitingQueue<String> = RateLimitingQueue::new(
        default_controller_rate_limiter(),
        QueueConfig::default().name("installations"),
    );
    let (on_add, on_update) = (queue.clone(), queue.clone());
    installation_informer.add_event_handler(
        ResourceEventHandlerFuncs::new()
            .on_add(move |obj: &Arc<DynamicObject>, _| on_add.add(meta_namespace_key(obj.as_ref())))
            .on_update(move |_, obj: &Arc<DynamicObject>| {
                on_update.add(meta_namespace_key(obj.as_ref()))
            }),
    )?;
    // A deleted Service is re-created: enqueue its owner.
    let on_delete = queue.clone();
    service_informer.add_event_handler(ResourceEventHandlerFuncs::new().on_delete(
        move |svc: &kubeclient::machinery::DeletedObject<Service>| {
            if let Some(owner) = svc
                .object()
                .and_then(|s| s.labels().get("installation").cloned())
            {
                on_delete.add(format!("{}/{owner}", svc.object_name().namespace));
            }
        },
    ))?;
    let installation_lister = kubeclient::cache::Lister::new(
        installation_informer.indexer(),
        GroupResource::new("example.kubeclient.dev", "installation"),
    );
    let service_lister = factory.lister::<Service>();
    factory.start();
    factory.wait_for_cache_sync().await;

    let workers: Vec<_> = (0..2)
        .map(|_| {
            let (client, queue, installations, services) = (
                client.clone(),
                queue.clone(),
                installation_lister.clone(),
                service_lister.clone(),
            );
            tokio::spawn(async move {
                while let Some(key) = queue.get().await {
                    match reconcile(&client, &installations, &services, &key).await {
                        Ok(()) => queue.forget(&key),
                        Err(err) => {
                            eprintln!("reconcile {key} failed ({err}); retrying with backoff");
                            queue.add_rate_limited(key.clone());
                        }
                    }
                    queue.done(&key);
                }
            })
        })
        .collect();

    // Three Installations appear; the controller gives each a Service.
    let installs =
        Api::<DynamicObject>::namespaced_with(client.clone(), "default", &installations());
    for (i, name) in ["shop", "blog", "wiki"].iter().enumerate() {
        let mut installation =
            DynamicObject::new("example.kubeclient.dev/v1", "Installation", name);
        installation
            .data
            .insert("spec".into(), json!({"port": 8080 + i}));
        installs
            .create(&PostParams::default(), &installation)
            .await?;
    }
    for _ in 0..100 {
        if service_lister
            .by_namespace("default")
            .list(&kubeclient::machinery::LabelSelector::everything())
            .len()
            == 3
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let services = Api::<Service>::namespaced(client.clone(), "default")
        .list(&kubeclient::ListParams::default())
        .await?;
    let mut names: Vec<String> = services.items.iter().map(|s| s.name().to_owned()).collect();
    names.sort();
    println!("services: {}", names.join(", "));
    queue.shutdown_with_drain().await;
    for worker in workers {
        let _ = worker.await;
    }
    factory.shutdown().await;
    if let Some(server) = server {
        server.shutdown().await;
    }
    if names.len() == 3 {
        println!("every Installation has its Service");
        Ok(())
    } else {
        Err(format!("expected 3 services, found {}", names.len()).into())
    }
}
