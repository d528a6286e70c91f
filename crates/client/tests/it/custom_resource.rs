//! A typed custom resource from `#[derive(CustomResource)]` end to end on the embedded
//! server: its CRD installs, `Api`, the factory's informer and lister work as for built-in
//! types, the status subresource keeps status and spec apart, and the server validates
//! objects against the generated schema.

use std::time::Duration;

use kubeclient::customresource::{CustomResourceExt, install_crd};
use kubeclient::informers::SharedInformerFactory;
use kubeclient::machinery::{DynamicObject, Object};
use kubeclient::{Api, CustomResource, Patch, PatchParams, PostParams};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::support::{start, until};

/// The seeds' Installation: a replica count, an image and a service port.
#[derive(CustomResource, Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[kubeclient(
    group = "example.kubeclient.dev",
    version = "v1",
    kind = "Installation",
    namespaced,
    status = "InstallationStatus",
    shortname = "inst",
    category = "all",
    printcolumn(name = "Replicas", type = "integer", json_path = ".spec.replicas"),
    printcolumn(
        name = "Image",
        type = "string",
        json_path = ".spec.image",
        priority = 1
    ),
    scale(
        spec_replicas_path = ".spec.replicas",
        status_replicas_path = ".status.replicas"
    )
)]
#[serde(rename_all = "camelCase")]
pub(crate) struct InstallationSpec {
    pub(crate) replicas: i32,
    pub(crate) image: String,
    pub(crate) service_port: i32,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct InstallationStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) observed_generation: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) replicas: Option<i32>,
}

pub(crate) fn spec(replicas: i32) -> InstallationSpec {
    InstallationSpec {
        replicas,
        image: "nginx:1.27".to_owned(),
        service_port: 80,
    }
}

#[test]
fn the_generated_crd_describes_names_scope_subresources_columns_and_schema() {
    let crd = Installation::crd();
    assert_eq!(
        Installation::crd_name(),
        "installations.example.kubeclient.dev"
    );
    let value = serde_json::to_value(&crd).expect("serializes");
    let version = &value["spec"]["versions"][0];
    assert_eq!(value["spec"]["scope"], "Namespaced");
    assert_eq!(value["spec"]["names"]["shortNames"], json!(["inst"]));
    assert_eq!(value["spec"]["names"]["categories"], json!(["all"]));
    assert_eq!(version["subresources"]["status"], json!({}));
    assert_eq!(
        version["subresources"]["scale"]["specReplicasPath"],
        ".spec.replicas"
    );
    assert_eq!(version["additionalPrinterColumns"][1]["priority"], 1);
    let schema = &version["schema"]["openAPIV3Schema"];
    assert_eq!(schema["required"], json!(["spec"]));
    let spec = &schema["properties"]["spec"];
    assert_eq!(spec["type"], "object");
    assert_eq!(
        spec["properties"]["servicePort"],
        json!({"type": "integer", "format": "int32"})
    );
    assert_eq!(
        spec["required"],
        json!(["replicas", "image", "servicePort"])
    );
    assert_eq!(
        schema["properties"]["status"]["properties"]["observedGeneration"]["nullable"],
        true
    );
}

#[tokio::test]
async fn a_typed_custom_resource_works_with_api_informer_lister_and_status() {
    let fx = start().await;
    install_crd(&fx.client, &Installation::crd(), Duration::from_secs(30))
        .await
        .expect("the CRD installs and is established");
    let api: Api<Installation> = Api::namespaced(fx.client.clone(), "default");
    let created = api
        .create(&PostParams::default(), &Installation::new("web", spec(2)))
        .await
        .expect("created");
    assert_eq!(created.spec, spec(2));
    assert_eq!(created.kind(), "Installation");
    assert!(created.status.is_none());

    let factory = SharedInformerFactory::new(fx.client.clone());
    let lister = factory.lister::<Installation>();
    factory.start();
    assert!(factory.wait_for_cache_sync().await);
    assert_eq!(
        lister
            .by_namespace("default")
            .get("web")
            .expect("cached")
            .spec
            .replicas,
        2
    );

    // Status through the subresource: the spec is untouched.
    let mut with_status = created.clone();
    with_status.status = Some(InstallationStatus {
        observed_generation: Some(created.generation()),
        replicas: Some(2),
    });
    let updated = api
        .replace_status("web", &PostParams::default(), &with_status)
        .await
        .expect("status written");
    assert_eq!(updated.status.as_ref().and_then(|s| s.replicas), Some(2));
    // A spec change through the main resource bumps the generation and keeps the status.
    let patched = api
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 3}, "status": {"replicas": 99}})),
        )
        .await
        .expect("patched");
    assert_eq!(patched.spec.replicas, 3);
    assert_eq!(patched.generation(), created.generation() + 1);
    assert_eq!(
        patched.status.as_ref().and_then(|s| s.replicas),
        Some(2),
        "the main resource ignores status"
    );
    until("the informer sees the new spec", || {
        lister
            .by_namespace("default")
            .get("web")
            .is_ok_and(|i| i.spec.replicas == 3 && i.status.is_some())
    })
    .await;
    factory.shutdown().await;
}

#[tokio::test]
async fn the_server_rejects_objects_that_break_the_generated_schema() {
    let fx = start().await;
    install_crd(&fx.client, &Installation::crd(), Duration::from_secs(30))
        .await
        .expect("installed");
    let dynamic: Api<DynamicObject> =
        Api::namespaced_with(fx.client.clone(), "default", &Installation::api_resource());
    let mut bad = DynamicObject::new("example.kubeclient.dev/v1", "Installation", "bad");
    bad.data.insert(
        "spec".to_owned(),
        json!({"replicas": "three", "servicePort": 80}),
    );
    let err = dynamic
        .create(&PostParams::default(), &bad)
        .await
        .expect_err("a string replica count and a missing image are refused");
    let status = &err.api().expect("a Status").status;
    assert_eq!(status.code, 422);
    let causes: Vec<(&str, &str)> = status
        .details
        .as_ref()
        .map(|d| {
            d.causes
                .iter()
                .map(|c| (c.field.as_str(), c.reason.as_str()))
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(
        causes,
        [
            ("spec.replicas", "FieldValueInvalid"),
            ("spec.image", "FieldValueRequired"),
            // the scale subresource reads replicas there (kube-apiserver's accessor error)
            (".spec.replicas", "FieldValueInvalid"),
        ]
    );
    assert!(
        status
            .message
            .contains("spec.replicas in body must be of type integer: \"string\""),
        "{}",
        status.message
    );
    // A valid object passes, and so does an update that keeps it valid.
    let api: Api<Installation> = Api::namespaced(fx.client.clone(), "default");
    api.create(&PostParams::default(), &Installation::new("good", spec(1)))
        .await
        .expect("valid");
    let err = api
        .patch(
            "good",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"servicePort": "http"}})),
        )
        .await
        .expect_err("a patch that breaks the schema is refused");
    assert_eq!(err.api().map(|e| e.status.code), Some(422));
}

/// A spec whose CEL rules come from the derive's `validation(...)` attribute.
#[derive(CustomResource, Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[kubeclient(
    group = "rules.kubeclient.dev",
    version = "v1",
    kind = "Ruled",
    namespaced,
    validation(
        rule = "self.replicas <= self.maxReplicas",
        message = "replicas above maxReplicas"
    ),
    validation(
        rule = "self.image == oldSelf.image",
        message = "the image is immutable",
        field_path = ".image",
        reason = "FieldValueForbidden"
    )
)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RuledSpec {
    pub(crate) replicas: i32,
    pub(crate) max_replicas: i32,
    pub(crate) image: String,
}

fn ruled(replicas: i32, image: &str) -> Ruled {
    Ruled::new(
        "r",
        RuledSpec {
            replicas,
            max_replicas: 3,
            image: image.to_owned(),
        },
    )
}

#[tokio::test]
async fn the_derives_cel_rules_are_enforced_by_the_server_and_checked_locally_alike() {
    let crd = serde_json::to_value(Ruled::crd()).unwrap();
    let object = |r: &Ruled| {
        let mut value = serde_json::to_value(r).unwrap();
        value["metadata"]["namespace"] = json!("default");
        value
    };

    // Locally, with the server's own code and no server.
    let local = kubeclient_apiserver::validate_custom_resource(&crd, &object(&ruled(5, "a")), None)
        .unwrap_err();
    assert_eq!(local.code, 422);
    assert_eq!(
        local.message,
        r#"Ruled.rules.kubeclient.dev "r" is invalid: spec: Invalid value: "object": replicas above maxReplicas"#
    );
    let old = object(&ruled(1, "a"));
    let changed =
        kubeclient_apiserver::validate_custom_resource(&crd, &object(&ruled(1, "b")), Some(&old))
            .unwrap_err();
    assert_eq!(
        changed.message,
        r#"Ruled.rules.kubeclient.dev "r" is invalid: spec.image: Forbidden: the image is immutable"#
    );
    assert!(
        kubeclient_apiserver::validate_custom_resource(&crd, &object(&ruled(2, "a")), None).is_ok()
    );

    // The embedded server answers the same.
    let fixture = start().await;
    install_crd(&fixture.client, &Ruled::crd(), Duration::from_secs(30))
        .await
        .unwrap();
    let api: Api<Ruled> = Api::namespaced(fixture.client.clone(), "default");
    let refused = api
        .create(&PostParams::default(), &ruled(5, "a"))
        .await
        .unwrap_err();
    assert_eq!(
        refused.api().map(|e| e.status.message.clone()),
        Some(local.message)
    );
    api.create(&PostParams::default(), &ruled(1, "a"))
        .await
        .unwrap();
    let refused = api
        .patch(
            "r",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"image": "b"}})),
        )
        .await
        .unwrap_err();
    assert_eq!(
        refused.api().map(|e| e.status.message.clone()),
        Some(changed.message)
    );
}
