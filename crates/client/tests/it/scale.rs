//! The scale client on the embedded server: Deployments, StatefulSets and a custom
//! resource with a scale subresource, found by group and resource through discovery.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec, StatefulSet, StatefulSetSpec};
use k8s_openapi::api::autoscaling::v1::Scale;
use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use kubeclient::customresource::CustomResourceExt;
use kubeclient::customresource::install_crd;
use kubeclient::machinery::GroupResource;
use kubeclient::scale::{ScaleClient, ScaleError};
use kubeclient::{Api, Patch, PostParams};
use serde_json::json;

use crate::custom_resource::{Installation, spec};
use crate::support::start;

fn labels() -> BTreeMap<String, String> {
    BTreeMap::from([("app".to_owned(), "web".to_owned())])
}

fn template() -> PodTemplateSpec {
    PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some(labels()),
            ..ObjectMeta::default()
        }),
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "web".to_owned(),
                image: Some("nginx:1.27".to_owned()),
                ..Container::default()
            }],
            ..PodSpec::default()
        }),
    }
}

fn selector() -> LabelSelector {
    LabelSelector {
        match_labels: Some(labels()),
        ..LabelSelector::default()
    }
}

fn replicas(scale: &Scale) -> Option<i32> {
    scale.spec.as_ref().and_then(|spec| spec.replicas)
}

/// Gets the scale, sets `to` replicas through an update, and checks the object changed.
async fn scale_by_update(
    scales: &ScaleClient,
    resource: &GroupResource,
    name: &str,
    from: i32,
    to: i32,
) -> Scale {
    let mut scale = scales.get("default", resource, name).await.unwrap();
    assert_eq!(scale.metadata.name.as_deref(), Some(name));
    assert_eq!(replicas(&scale), Some(from));
    scale.spec.get_or_insert_default().replicas = Some(to);
    let updated = scales.update("default", resource, &scale).await.unwrap();
    assert_eq!(replicas(&updated), Some(to));
    updated
}

#[tokio::test]
async fn the_scale_client_gets_and_updates_the_replicas_of_a_deployment() {
    let fixture = start().await;
    let deployment = Deployment {
        metadata: ObjectMeta {
            name: Some("web".to_owned()),
            ..ObjectMeta::default()
        },
        spec: DeploymentSpec {
            replicas: Some(1),
            selector: selector(),
            template: template(),
            ..DeploymentSpec::default()
        },
        ..Deployment::default()
    };
    let api = Api::<Deployment>::namespaced(fixture.client.clone(), "default");
    api.create(&PostParams::default(), &deployment)
        .await
        .unwrap();
    let scales = ScaleClient::new(fixture.client.clone());
    let deployments = GroupResource::new("apps", "deployments");

    scale_by_update(&scales, &deployments, "web", 1, 4).await;
    let stored = api.get("web").await.unwrap();
    assert_eq!(stored.spec.replicas, Some(4));

    let patched = scales
        .patch(
            "default",
            &deployments,
            "web",
            &Patch::Merge(json!({"spec": {"replicas": 2}})),
        )
        .await
        .unwrap();
    assert_eq!(replicas(&patched), Some(2));
    assert_eq!(api.get("web").await.unwrap().spec.replicas, Some(2));
}

#[tokio::test]
async fn the_scale_client_updates_a_statefulset_and_refuses_a_stale_scale() {
    let fixture = start().await;
    let statefulset = StatefulSet {
        metadata: ObjectMeta {
            name: Some("db".to_owned()),
            ..ObjectMeta::default()
        },
        spec: StatefulSetSpec {
            replicas: Some(3),
            selector: selector(),
            template: template(),
            service_name: Some("db".to_owned()),
            ..StatefulSetSpec::default()
        },
        ..StatefulSet::default()
    };
    let api = Api::<StatefulSet>::namespaced(fixture.client.clone(), "default");
    api.create(&PostParams::default(), &statefulset)
        .await
        .unwrap();
    let scales = ScaleClient::new(fixture.client.clone());
    let statefulsets = GroupResource::new("apps", "statefulsets");

    let before = scales.get("default", &statefulsets, "db").await.unwrap();
    scale_by_update(&scales, &statefulsets, "db", 3, 1).await;
    assert_eq!(api.get("db").await.unwrap().spec.replicas, Some(1));

    // `before` carries the old resourceVersion: the update conflicts.
    let mut stale = before;
    stale.spec.get_or_insert_default().replicas = Some(7);
    let conflict = scales.update("default", &statefulsets, &stale).await;
    assert!(matches!(
        conflict,
        Err(ScaleError::Client(err)) if err.api().is_some_and(|e| e.is_conflict())
    ));
}

#[tokio::test]
async fn the_scale_client_scales_a_custom_resource_installed_after_it_was_created() {
    let fixture = start().await;
    let scales = ScaleClient::new(fixture.client.clone());
    let installations = GroupResource::new("example.kubeclient.dev", "installations");
    // Discovery is read (and cached) before the CRD exists.
    let unknown = scales.get("default", &installations, "web").await;
    assert!(matches!(unknown, Err(ScaleError::UnknownResource(_))));

    install_crd(
        &fixture.client,
        &Installation::crd(),
        Duration::from_secs(30),
    )
    .await
    .unwrap();
    let api = Api::<Installation>::namespaced(fixture.client.clone(), "default");
    api.create(&PostParams::default(), &Installation::new("web", spec(2)))
        .await
        .unwrap();

    scale_by_update(&scales, &installations, "web", 2, 6).await;
    assert_eq!(api.get("web").await.unwrap().spec.replicas, 6);
}

#[tokio::test]
async fn a_resource_without_a_scale_subresource_is_reported() {
    let fixture = start().await;
    let scales = ScaleClient::new(fixture.client.clone());
    let configmaps = GroupResource::new("", "configmaps");
    let result = scales.get("default", &configmaps, "any").await;
    assert!(matches!(result, Err(ScaleError::NoScaleSubresource(gr)) if gr == configmaps));
    let missing = scales
        .get(
            "default",
            &GroupResource::new("apps", "deployments"),
            "absent",
        )
        .await;
    assert!(matches!(missing, Err(ScaleError::Client(err)) if err.is_not_found()));
}
