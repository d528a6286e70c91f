//! A CRD's conversion webhook end to end: `kubeclient::webhook::Conversion` (a hub and a
//! spoke) served by a `WebhookServer`, the CRD made with `merge_crds`, its `caBundle`
//! written by `inject_conversion_ca_bundle`, and the embedded server converting through it
//! on writes, reads, lists, watches and patches; a conversion that fails is the server's
//! 500, and a `Manager` serves the webhooks (issue 28).

use std::time::Duration;

use futures_util::StreamExt;
use kubeclient::customresource::{CustomResourceExt, install_crd, merge_crds};
use kubeclient::machinery::WatchEvent;
use kubeclient::manager::Manager;
use kubeclient::webhook::{
    Conversion, ConversionError, Convertible, WebhookServer, inject_conversion_ca_bundle,
};
use kubeclient::{
    Api, CancellationToken, Client, ListParams, Patch, PatchParams, PostParams, WatchParams,
};
use serde_json::json;

use crate::support::{config_of, scratch, start};

pub(crate) mod v1 {
    #[derive(
        kubeclient::CustomResource,
        Clone,
        Debug,
        PartialEq,
        serde::Serialize,
        serde::Deserialize,
        schemars::JsonSchema,
    )]
    #[kubeclient(
        group = "convert.example.com",
        version = "v1",
        kind = "Gizmo",
        namespaced
    )]
    pub(crate) struct GizmoSpec {
        pub(crate) replicas: i32,
    }
}

pub(crate) mod v1alpha1 {
    #[derive(
        kubeclient::CustomResource,
        Clone,
        Debug,
        PartialEq,
        serde::Serialize,
        serde::Deserialize,
        schemars::JsonSchema,
    )]
    #[kubeclient(
        group = "convert.example.com",
        version = "v1alpha1",
        kind = "Gizmo",
        namespaced
    )]
    pub(crate) struct GizmoSpec {
        /// The replica count as words once allowed it; only digits convert.
        pub(crate) size: String,
    }
}

impl Convertible<v1::Gizmo> for v1alpha1::Gizmo {
    fn convert_to(self) -> Result<v1::Gizmo, ConversionError> {
        let replicas = self
            .spec
            .size
            .parse()
            .map_err(|_| format!("spec.size {:?} is not a number", self.spec.size))?;
        Ok(v1::Gizmo {
            metadata: self.metadata,
            spec: v1::GizmoSpec { replicas },
        })
    }

    fn convert_from(hub: v1::Gizmo) -> Result<Self, ConversionError> {
        Ok(v1alpha1::Gizmo {
            metadata: hub.metadata,
            spec: v1alpha1::GizmoSpec {
                size: hub.spec.replicas.to_string(),
            },
        })
    }
}

pub(crate) fn conversion() -> Conversion<v1::Gizmo> {
    Conversion::<v1::Gizmo>::hub().spoke::<v1alpha1::Gizmo>()
}

/// Installs the two-version CRD (stored as `storage`) converted by the webhook at
/// `https://{address}/convert`, trusting `ca_bundle`.
pub(crate) async fn install(
    client: &Client,
    address: std::net::SocketAddr,
    ca_bundle: &str,
    storage: &str,
) {
    let mut crd = merge_crds(vec![v1::Gizmo::crd(), v1alpha1::Gizmo::crd()], storage).unwrap();
    crd.spec.conversion = Some(
        serde_json::from_value(json!({
            "strategy": "Webhook",
            "webhook": {"conversionReviewVersions": ["v1"],
                        "clientConfig": {"url": format!("https://{address}/convert")}},
        }))
        .unwrap(),
    );
    install_crd(client, &crd, Duration::from_secs(30))
        .await
        .unwrap();
    inject_conversion_ca_bundle(client, ca_bundle, &v1::Gizmo::crd_name())
        .await
        .unwrap();
}

#[tokio::test]
async fn objects_convert_through_the_webhook_on_writes_reads_lists_watches_and_patches() {
    let fixture = start().await;
    let client = fixture.client.clone();
    let webhooks = WebhookServer::builder()
        .address("127.0.0.1:0".parse().unwrap())
        .cert_dir(scratch("conversion").join("certs"))
        .self_signed(&["gizmo-webhook.default.svc"])
        .conversion("/convert", conversion())
        .start()
        .await
        .unwrap();
    install(
        &client,
        webhooks.local_addr(),
        webhooks.ca_bundle().unwrap(),
        "v1",
    )
    .await;
    let old: Api<v1alpha1::Gizmo> = Api::namespaced(client.clone(), "default");
    let new: Api<v1::Gizmo> = Api::namespaced(client.clone(), "default");

    // Written as v1alpha1, stored as v1 (converted), answered as v1alpha1 (converted back).
    let created = old
        .create(
            &PostParams::default(),
            &v1alpha1::Gizmo::new(
                "a",
                v1alpha1::GizmoSpec {
                    size: "3".to_owned(),
                },
            ),
        )
        .await
        .unwrap();
    assert_eq!(created.spec.size, "3");
    assert_eq!(new.get("a").await.unwrap().spec.replicas, 3);
    new.create(
        &PostParams::default(),
        &v1::Gizmo::new("b", v1::GizmoSpec { replicas: 7 }),
    )
    .await
    .unwrap();

    // A list through v1alpha1 converts every item in one review.
    let sizes: Vec<String> = old
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|g| g.spec.size)
        .collect();
    assert_eq!(sizes, ["3", "7"]);

    // A watch through v1alpha1 sees writes made through v1, converted.
    let mut events = old.watch(&WatchParams::default(), "0").await.unwrap();
    new.patch(
        "b",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicas": 8}})),
    )
    .await
    .unwrap();
    let mut seen = Vec::new();
    while !seen.contains(&"8".to_owned()) {
        let event = tokio::time::timeout(Duration::from_secs(10), events.next())
            .await
            .expect("a watch event within 10 s")
            .expect("the watch goes on")
            .unwrap();
        if let WatchEvent::Added(g) | WatchEvent::Modified(g) = event {
            seen.push(g.spec.size.clone());
        }
    }

    // A patch through v1alpha1 applies to the v1alpha1 form, then stores v1.
    old.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"size": "5"}})),
    )
    .await
    .unwrap();
    assert_eq!(new.get("a").await.unwrap().spec.replicas, 5);
}

#[tokio::test]
async fn a_failing_conversion_is_a_500_and_a_manager_serves_the_webhook() {
    let fixture = start().await;
    let client = fixture.client.clone();
    let manager = Manager::builder(config_of(&fixture.server))
        .webhook_server(
            WebhookServer::builder()
                .address("127.0.0.1:0".parse().unwrap())
                .cert_dir(scratch("conversion-manager").join("certs"))
                .self_signed(&["gizmo-webhook.default.svc"])
                .conversion("/convert", conversion()),
        )
        .build()
        .await
        .unwrap();
    let webhooks = manager.webhook_server().unwrap();
    install(
        &client,
        webhooks.local_addr(),
        webhooks.ca_bundle().unwrap(),
        "v1",
    )
    .await;
    let stop = CancellationToken::new();
    let running = tokio::spawn(manager.start(stop.clone()));

    let old: Api<v1alpha1::Gizmo> = Api::namespaced(client.clone(), "default");
    let error = old
        .create(
            &PostParams::default(),
            &v1alpha1::Gizmo::new(
                "many",
                v1alpha1::GizmoSpec {
                    size: "many".to_owned(),
                },
            ),
        )
        .await
        .unwrap_err();
    let status = &error.api().expect("an API error").status;
    assert_eq!(status.code, 500, "{status:?}");
    assert!(
        status.message.contains("conversion webhook for")
            && status
                .message
                .contains("spec.size \"many\" is not a number"),
        "{}",
        status.message
    );
    // Nothing was stored, and the server still converts what does convert.
    old.create(
        &PostParams::default(),
        &v1alpha1::Gizmo::new(
            "two",
            v1alpha1::GizmoSpec {
                size: "2".to_owned(),
            },
        ),
    )
    .await
    .unwrap();
    let names: Vec<String> = old
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|g| g.metadata.name.unwrap_or_default())
        .collect();
    assert_eq!(names, ["two"]);

    // Once the manager stops, so does its webhook server: conversions fail.
    stop.cancel();
    running.await.unwrap().unwrap();
    let error = old.get("two").await.unwrap_err();
    assert_eq!(error.api().map(|e| e.status.code), Some(500), "{error}");
}
