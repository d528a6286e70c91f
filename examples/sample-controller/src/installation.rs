//! The `Installation` custom resource: how many replicas of which image, on which service
//! port; its status says which generation was last reconciled and whether it is ready.
//!
//! Two CEL rules of the CRD: no `:latest` image, and a transition rule that keeps the image
//! once set (the API server checks both, after the defaulting webhook filled the image in).
//!
//! `v1` (this module's [`Installation`]) is the stored version and the conversion hub;
//! [`v1alpha1`] is the older version clients may still use (`size` and `port` where v1
//! says `replicas` and `servicePort`), converted by the webhook of `webhooks.rs`.

use kubeclient::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The desired state of an Installation.
// clippy's `duplicated_attributes` reads two columns of the same `type` as a repeated
// attribute; they are two columns.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kubeclient(
    group = "example.kubeclient.dev",
    version = "v1",
    kind = "Installation",
    namespaced,
    status = "InstallationStatus",
    shortname = "inst"
)]
#[kubeclient(printcolumn(name = "Replicas", type = "integer", json_path = ".spec.replicas"))]
#[kubeclient(printcolumn(name = "Image", type = "string", json_path = ".spec.image"))]
#[kubeclient(printcolumn(name = "Port", type = "integer", json_path = ".spec.servicePort"))]
#[kubeclient(validation(
    rule = "!self.image.endsWith(':latest')",
    message = "pin the image to a version: a :latest tag is not allowed",
    field_path = ".image"
))]
#[kubeclient(validation(
    rule = "self.image == oldSelf.image",
    message = "the image is immutable: create a new Installation",
    field_path = ".image"
))]
#[serde(rename_all = "camelCase")]
pub(crate) struct InstallationSpec {
    /// How many replicas to run.
    pub(crate) replicas: i32,
    /// The container image (the defaulting webhook fills it in when left empty).
    #[serde(default)]
    pub(crate) image: String,
    /// The port the Service exposes.
    pub(crate) service_port: i32,
}

/// What the controller last did.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct InstallationStatus {
    /// The `metadata.generation` the status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) observed_generation: Option<i64>,
    /// The Service's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) service: Option<String>,
    /// `Ready` and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) conditions: Vec<InstallationCondition>,
}

/// One condition (`metav1.Condition`'s shape, trimmed).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct InstallationCondition {
    /// `Ready`.
    #[serde(rename = "type")]
    pub(crate) type_: String,
    /// `True`, `False` or `Unknown`.
    pub(crate) status: String,
    /// A CamelCase reason.
    pub(crate) reason: String,
    /// For humans.
    pub(crate) message: String,
}

/// The first version of the API, still served: converted to and from v1 by the conversion
/// webhook, stored as v1.
pub(crate) mod v1alpha1 {
    use kubeclient::CustomResource;
    use kubeclient::webhook::{ConversionError, Convertible};
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};

    use super::InstallationStatus;

    /// The desired state of an Installation, as v1alpha1 called it.
    #[derive(CustomResource, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
    #[kubeclient(
        group = "example.kubeclient.dev",
        version = "v1alpha1",
        kind = "Installation",
        namespaced,
        status = "InstallationStatus",
        shortname = "inst"
    )]
    #[serde(rename_all = "camelCase")]
    pub(crate) struct InstallationSpec {
        /// How many replicas to run (v1: `replicas`).
        pub(crate) size: i32,
        /// The container image.
        #[serde(default)]
        pub(crate) image: String,
        /// The port the Service exposes (v1: `servicePort`).
        pub(crate) port: i32,
    }

    impl Convertible<super::Installation> for Installation {
        fn convert_to(self) -> Result<super::Installation, ConversionError> {
            Ok(super::Installation {
                metadata: self.metadata,
                spec: super::InstallationSpec {
                    replicas: self.spec.size,
                    image: self.spec.image,
                    service_port: self.spec.port,
                },
                status: self.status,
            })
        }

        fn convert_from(hub: super::Installation) -> Result<Self, ConversionError> {
            Ok(Installation {
                metadata: hub.metadata,
                spec: InstallationSpec {
                    size: hub.spec.replicas,
                    image: hub.spec.image,
                    port: hub.spec.service_port,
                },
                status: hub.status,
            })
        }
    }
}
