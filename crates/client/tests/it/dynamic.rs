//! The dynamic client on a custom resource, and discovery.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kubeclient::discovery::Discovery;
use kubeclient::{Api, DeleteParams, Deleted, ListParams, Patch, PatchParams, PostParams};
use kubeclient_machinery::{DynamicObject, Object};
use serde_json::json;

use crate::support::start;

fn widget_crd() -> CustomResourceDefinition {
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"]},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                               "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
                               "subresources": {"status": {}}}]}
    }))
    .unwrap()
}

#[tokio::test]
async fn the_dynamic_client_serves_a_custom_resource_found_by_discovery() {
    let f = start().await;
    let crds: Api<CustomResourceDefinition> = Api::all(f.client.clone());
    crds.create(&PostParams::default(), &widget_crd())
        .await
        .unwrap();

    let discovery = Discovery::new(f.client.clone());
    let version = discovery.server_version().await.unwrap();
    assert_eq!(version.major, "1");
    let resources = discovery.resources().await.unwrap();
    let widgets = resources.resolve("wd").expect("the short name resolves");
    assert_eq!(
        (widgets.kind.as_str(), widgets.api_version.as_str()),
        ("Widget", "example.com/v1")
    );
    assert_eq!(
        resources.resolve("deployments.apps").unwrap().kind,
        "Deployment"
    );
    assert_eq!(resources.resolve("deploy").unwrap().plural, "deployments");
    assert_eq!(resources.resolve("ConfigMap").unwrap().plural, "configmaps");
    assert_eq!(
        resources
            .resource_for_kind("apps", None, "Deployment")
            .unwrap()
            .version,
        "v1"
    );
    assert!(resources.resolve("nosuchthing").is_none());

    let api = Api::<DynamicObject>::namespaced_with(f.client.clone(), "default", &widgets);
    let mut widget = DynamicObject::new("example.com/v1", "Widget", "w1");
    widget.data.insert("spec".into(), json!({"size": 3}));
    let created = api.create(&PostParams::default(), &widget).await.unwrap();
    assert_eq!(created.data["spec"]["size"], 3);
    let patched = api
        .patch(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"size": 4}})),
        )
        .await
        .unwrap();
    assert_eq!(patched.data["spec"]["size"], 4);
    assert_eq!(patched.generation(), 2);
    let status = api
        .patch_status(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"ready": true}})),
        )
        .await
        .unwrap();
    assert_eq!(status.data["status"]["ready"], true);
    let strategic = api
        .patch("w1", &PatchParams::default(), &Patch::Strategic(json!({})))
        .await
        .unwrap_err();
    assert_eq!(strategic.api().unwrap().code(), 415);
    assert_eq!(
        api.list(&ListParams::default()).await.unwrap().items.len(),
        1
    );
    match api.delete("w1", &DeleteParams::default()).await.unwrap() {
        Deleted::Status(status) => {
            assert_eq!(status.details.map(|d| d.name), Some("w1".to_owned()));
        }
        Deleted::Object(_) => {
            panic!("a custom resource's DELETE answers a Status, as kube-apiserver's")
        }
    }
    let all = Api::<DynamicObject>::all_with(f.client.clone(), &widgets);
    assert!(
        all.list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
}
