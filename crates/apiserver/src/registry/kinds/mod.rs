//! What the server does for particular kinds, one file per kind (kube-apiserver's
//! `pkg/registry/<group>/<kind>/`): each holds the kind's [`Strategy`](super::strategy::Strategy)
//! and what else belongs to it. A kind not named here gets the generic strategy
//! ([`strategy_for`] says which kind has which).

pub(crate) mod admission_policy;
pub(crate) mod certificate_signing_request;
pub(crate) mod component_status;
pub(crate) mod config_map;
pub(crate) mod custom_resource;
pub(crate) mod custom_resource_definition;
pub(crate) mod event;
pub(crate) mod job;
pub(crate) mod namespace;
pub(crate) mod node;
pub(crate) mod persistent_volume;
pub(crate) mod pod;
pub(crate) mod pod_binding;
pub(crate) mod pod_template;
pub(crate) mod secret;
pub(crate) mod service;
pub(crate) mod service_account;
pub(crate) mod simple;
pub(crate) mod webhook_configuration;
pub(crate) mod workloads;

use super::ResourceDef;
use super::strategy::Strategy;

/// The strategy of `resource`: its kind's, a custom resource's, or the generic one.
pub(crate) fn strategy_for(resource: &ResourceDef) -> &'static dyn Strategy {
    if !resource.builtin {
        return &custom_resource::CustomResourceStrategy;
    }
    match (resource.group.as_str(), resource.kind.as_str()) {
        ("", "Pod") => &pod::PodStrategy,
        ("", "PodTemplate") => &pod_template::PodTemplateStrategy,
        ("", "Service") => &service::ServiceStrategy,
        ("", "ServiceAccount") => &service_account::ServiceAccountStrategy,
        ("", "Namespace") => &namespace::NamespaceStrategy,
        ("", "ConfigMap") => &config_map::ConfigMapStrategy,
        ("", "Secret") => &secret::SecretStrategy,
        ("", "Event") => &event::EventStrategy,
        ("events.k8s.io", "Event") => &event::EventsV1Strategy,
        ("", "PersistentVolumeClaim") => &persistent_volume::PersistentVolumeClaimStrategy,
        ("", "PersistentVolume") => &persistent_volume::PersistentVolumeStrategy,
        ("", "Node") => &node::NodeStrategy,
        ("certificates.k8s.io", "CertificateSigningRequest") => {
            &certificate_signing_request::CertificateSigningRequestStrategy
        }
        ("", "ComponentStatus") => &component_status::ComponentStatusStrategy,
        ("", "ReplicationController") => &workloads::REPLICATION_CONTROLLER,
        ("apps", "Deployment") => &workloads::DEPLOYMENT,
        ("apps", "ReplicaSet") => &workloads::REPLICA_SET,
        ("apps", "StatefulSet") => &workloads::STATEFUL_SET,
        ("apps", "DaemonSet") => &workloads::DAEMON_SET,
        ("batch", "Job") => &job::JobStrategy,
        ("batch", "CronJob") => &job::CronJobStrategy,
        ("apiextensions.k8s.io", "CustomResourceDefinition") => {
            &custom_resource_definition::CustomResourceDefinitionStrategy
        }
        ("", "ResourceQuota") => &simple::RESOURCE_QUOTA,
        ("", "Endpoints") => &simple::ENDPOINTS,
        ("discovery.k8s.io", "EndpointSlice") => &simple::ENDPOINT_SLICE,
        ("", "LimitRange") => &simple::LIMIT_RANGE,
        ("coordination.k8s.io", "Lease") => &simple::LEASE,
        ("rbac.authorization.k8s.io", "Role" | "ClusterRole") => &simple::RBAC_ROLE,
        ("rbac.authorization.k8s.io", "RoleBinding" | "ClusterRoleBinding") => {
            &simple::RBAC_BINDING
        }
        ("admissionregistration.k8s.io", "MutatingWebhookConfiguration") => {
            &webhook_configuration::MUTATING
        }
        ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration") => {
            &webhook_configuration::VALIDATING
        }
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy") => &admission_policy::POLICY,
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding") => {
            &admission_policy::BINDING
        }
        _ => &crate::registry::strategy::GenericStrategy,
    }
}
