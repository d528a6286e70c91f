//! The Rust types of the built-in kinds: the `k8s-openapi` struct each one decodes into,
//! for validation (does an object decode?), field validation (which fields does it
//! ignore?) and the OpenAPI schemas `kubectl explain` reads.

/// What a built-in kind's type provides: decoding and its JSON schema.
pub(crate) trait BuiltinType: serde::de::DeserializeOwned + schemars::JsonSchema {}

impl<T: serde::de::DeserializeOwned + schemars::JsonSchema> BuiltinType for T {}

/// Something done with the `k8s-openapi` type of a built-in kind: see [`builtin_type`].
pub(crate) trait WithType {
    /// What it gives.
    type Output;
    /// Does it with type `T`.
    fn with<T: BuiltinType>(self) -> Self::Output;
}

/// Runs `decoder` with the `k8s-openapi` type of a built-in kind; `None` for kinds
/// without one here.
pub(crate) fn builtin_type<D: WithType>(group: &str, kind: &str, decoder: D) -> Option<D::Output> {
    use k8s_openapi::api::{
        admissionregistration, apps, authentication, authorization, autoscaling, batch,
        certificates, coordination, core, discovery, events, networking, policy, rbac, scheduling,
        storage,
    };
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions;

    Some(match (group, kind) {
        ("", "Namespace") => decoder.with::<core::v1::Namespace>(),
        ("", "Pod") => decoder.with::<core::v1::Pod>(),
        ("", "PodTemplate") => decoder.with::<core::v1::PodTemplate>(),
        ("", "Service") => decoder.with::<core::v1::Service>(),
        ("", "Endpoints") => decoder.with::<core::v1::Endpoints>(),
        ("", "ConfigMap") => decoder.with::<core::v1::ConfigMap>(),
        ("", "Secret") => decoder.with::<core::v1::Secret>(),
        ("", "Event") => decoder.with::<core::v1::Event>(),
        ("", "ServiceAccount") => decoder.with::<core::v1::ServiceAccount>(),
        ("", "Node") => decoder.with::<core::v1::Node>(),
        ("", "PersistentVolumeClaim") => decoder.with::<core::v1::PersistentVolumeClaim>(),
        ("", "PersistentVolume") => decoder.with::<core::v1::PersistentVolume>(),
        ("", "ReplicationController") => decoder.with::<core::v1::ReplicationController>(),
        ("", "ResourceQuota") => decoder.with::<core::v1::ResourceQuota>(),
        ("", "LimitRange") => decoder.with::<core::v1::LimitRange>(),
        ("apps", "Deployment") => decoder.with::<apps::v1::Deployment>(),
        ("apps", "ReplicaSet") => decoder.with::<apps::v1::ReplicaSet>(),
        ("apps", "StatefulSet") => decoder.with::<apps::v1::StatefulSet>(),
        ("apps", "DaemonSet") => decoder.with::<apps::v1::DaemonSet>(),
        ("apps", "ControllerRevision") => decoder.with::<apps::v1::ControllerRevision>(),
        ("batch", "Job") => decoder.with::<batch::v1::Job>(),
        ("batch", "CronJob") => decoder.with::<batch::v1::CronJob>(),
        ("coordination.k8s.io", "Lease") => decoder.with::<coordination::v1::Lease>(),
        ("rbac.authorization.k8s.io", "Role") => decoder.with::<rbac::v1::Role>(),
        ("rbac.authorization.k8s.io", "RoleBinding") => decoder.with::<rbac::v1::RoleBinding>(),
        ("rbac.authorization.k8s.io", "ClusterRole") => decoder.with::<rbac::v1::ClusterRole>(),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding") => {
            decoder.with::<rbac::v1::ClusterRoleBinding>()
        }
        ("networking.k8s.io", "Ingress") => decoder.with::<networking::v1::Ingress>(),
        ("networking.k8s.io", "NetworkPolicy") => decoder.with::<networking::v1::NetworkPolicy>(),
        ("policy", "PodDisruptionBudget") => decoder.with::<policy::v1::PodDisruptionBudget>(),
        ("autoscaling", "HorizontalPodAutoscaler") => {
            decoder.with::<autoscaling::v2::HorizontalPodAutoscaler>()
        }
        ("storage.k8s.io", "StorageClass") => decoder.with::<storage::v1::StorageClass>(),
        ("scheduling.k8s.io", "PriorityClass") => decoder.with::<scheduling::v1::PriorityClass>(),
        ("discovery.k8s.io", "EndpointSlice") => decoder.with::<discovery::v1::EndpointSlice>(),
        ("events.k8s.io", "Event") => decoder.with::<events::v1::Event>(),
        ("", "ComponentStatus") => decoder.with::<core::v1::ComponentStatus>(),
        ("certificates.k8s.io", "CertificateSigningRequest") => {
            decoder.with::<certificates::v1::CertificateSigningRequest>()
        }
        ("apiregistration.k8s.io", "APIService") => {
            decoder
                .with::<k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService>()
        }
        ("authorization.k8s.io", "SelfSubjectAccessReview") => {
            decoder.with::<authorization::v1::SelfSubjectAccessReview>()
        }
        ("authorization.k8s.io", "SelfSubjectRulesReview") => {
            decoder.with::<authorization::v1::SelfSubjectRulesReview>()
        }
        ("authorization.k8s.io", "SubjectAccessReview") => {
            decoder.with::<authorization::v1::SubjectAccessReview>()
        }
        ("authorization.k8s.io", "LocalSubjectAccessReview") => {
            decoder.with::<authorization::v1::LocalSubjectAccessReview>()
        }
        ("authentication.k8s.io", "SelfSubjectReview") => {
            decoder.with::<authentication::v1::SelfSubjectReview>()
        }
        ("authentication.k8s.io", "TokenReview") => {
            decoder.with::<authentication::v1::TokenReview>()
        }
        ("admissionregistration.k8s.io", "MutatingWebhookConfiguration") => {
            decoder.with::<admissionregistration::v1::MutatingWebhookConfiguration>()
        }
        ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration") => {
            decoder.with::<admissionregistration::v1::ValidatingWebhookConfiguration>()
        }
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy") => {
            decoder.with::<admissionregistration::v1::ValidatingAdmissionPolicy>()
        }
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding") => {
            decoder.with::<admissionregistration::v1::ValidatingAdmissionPolicyBinding>()
        }
        ("apiextensions.k8s.io", "CustomResourceDefinition") => {
            decoder.with::<apiextensions::v1::CustomResourceDefinition>()
        }
        _ => return None,
    })
}
