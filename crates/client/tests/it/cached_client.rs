//! The cached client on the embedded server: a first read starts the type's informer;
//! lists select by namespace, labels, `metadata.*` fields and a registered field index;
//! an unindexed field is refused; writes go to the server and reach later reads; a client
//! told not to start informers refuses uncached types.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use kubeclient::informers::SharedInformerFactory;
use kubeclient::machinery::{FieldSelector, Object};
use kubeclient::manager::{CachedClient, CachedClientError, CachedListOptions};
use kubeclient::{Api, PostParams};
use serde_json::json;

use crate::support::{WAIT, start};

fn owned_config_map(namespace: &str, name: &str, tier: &str, owner: &str) -> ConfigMap {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": namespace, "labels": {"tier": tier}},
        "data": {"owner": owner}
    }))
    .expect("a ConfigMap")
}

fn names(objects: &[Arc<ConfigMap>]) -> Vec<String> {
    let mut names: Vec<String> = objects
        .iter()
        .map(|o| format!("{}/{}", o.namespace().unwrap_or(""), o.name()))
        .collect();
    names.sort();
    names
}

fn owner_of(cm: &ConfigMap) -> Vec<String> {
    cm.data
        .as_ref()
        .and_then(|d| d.get("owner").cloned())
        .into_iter()
        .collect()
}

#[tokio::test]
async fn cached_reads_start_the_informer_and_select_by_labels_fields_and_indexes() {
    let fx = start().await;
    let other: Namespace =
        serde_json::from_value(json!({"metadata": {"name": "other"}})).expect("a Namespace");
    Api::<Namespace>::all(fx.client.clone())
        .create(&PostParams::default(), &other)
        .await
        .expect("created");
    for (namespace, name, tier, owner) in [
        ("default", "a", "web", "alice"),
        ("default", "b", "db", "bob"),
        ("other", "c", "web", "alice"),
    ] {
        Api::<ConfigMap>::namespaced(fx.client.clone(), namespace)
            .create(
                &PostParams::default(),
                &owned_config_map(namespace, name, tier, owner),
            )
            .await
            .expect("created");
    }
    let factory = Arc::new(SharedInformerFactory::new(fx.client.clone()));
    let cached = CachedClient::new(fx.client.clone(), factory.clone());
    cached
        .index_field::<ConfigMap>("data.owner", owner_of)
        .expect("a new index");
    assert!(
        matches!(
            cached.index_field::<ConfigMap>("data.owner", owner_of),
            Err(CachedClientError::Cache { .. })
        ),
        "an index registered twice is refused"
    );

    let alice = cached
        .list::<ConfigMap>(&CachedListOptions::default().matching_field("data.owner", "alice"))
        .await
        .expect("the first read starts the informer and waits for its list");
    assert_eq!(names(&alice), ["default/a", "other/c"]);
    assert!(factory.informer::<ConfigMap>().has_synced());

    let alice_here = cached
        .list::<ConfigMap>(
            &CachedListOptions::default()
                .namespace("default")
                .matching_field("data.owner", "alice"),
        )
        .await
        .expect("a list");
    assert_eq!(names(&alice_here), ["default/a"]);

    let web_not_a = cached
        .list::<ConfigMap>(
            &CachedListOptions::default()
                .labels("tier=web".parse().expect("a label selector"))
                .fields(
                    "metadata.name!=a"
                        .parse::<FieldSelector>()
                        .expect("a field selector"),
                ),
        )
        .await
        .expect("a list");
    assert_eq!(names(&web_not_a), ["other/c"]);

    let unindexed = cached
        .list::<ConfigMap>(&CachedListOptions::default().matching_field("data.color", "red"))
        .await;
    assert!(
        matches!(&unindexed, Err(CachedClientError::FieldNotIndexed { field, .. }) if field == "data.color"),
        "{unindexed:?}"
    );

    assert_eq!(
        cached
            .get_opt::<ConfigMap>(Some("other"), "c")
            .await
            .expect("a read")
            .map(|cm| owner_of(&cm)),
        Some(vec!["alice".to_owned()])
    );
    assert!(
        cached
            .get_opt::<ConfigMap>(Some("default"), "missing")
            .await
            .expect("a read")
            .is_none()
    );

    // Writes go to the server; the cache catches up.
    cached
        .api::<ConfigMap>(Some("default"))
        .create(
            &PostParams::default(),
            &owned_config_map("default", "d", "web", "alice"),
        )
        .await
        .expect("created on the server");
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let alice = cached
            .list::<ConfigMap>(&CachedListOptions::default().matching_field("data.owner", "alice"))
            .await
            .expect("a list");
        if names(&alice) == ["default/a", "default/d", "other/c"] {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the write never reached the cache: {:?}",
            names(&alice)
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    factory.shutdown().await;
}

#[tokio::test]
async fn a_client_told_not_to_start_informers_refuses_uncached_types() {
    let fx = start().await;
    let factory = Arc::new(SharedInformerFactory::new(fx.client.clone()));
    let cached = CachedClient::new(fx.client.clone(), factory.clone()).fail_on_uncached(true);
    let refused = cached.get_opt::<Secret>(Some("default"), "token").await;
    assert!(
        matches!(
            refused,
            Err(CachedClientError::NotCached { kind: "Secret" })
        ),
        "{refused:?}"
    );
    assert!(
        !factory.has_informer::<Secret>(),
        "the refused read made no informer"
    );
    let _ = factory.informer::<Secret>();
    assert!(
        cached
            .get_opt::<Secret>(Some("default"), "token")
            .await
            .expect("a cached type is read")
            .is_none()
    );
    factory.shutdown().await;
}
