//! Every built-in kind: an object with every field of its schema set (to depth 6) goes
//! JSON -> typed (`k8s-openapi`) -> protobuf -> typed -> JSON and comes back the same. The
//! objects are synthesized from the schema, so a field whose JSON name or type the schema
//! gets wrong shows up as a difference, and a JSON name k8s-openapi does not know fails
//! the test. The direct decoder ([`from_protobuf`](super::from_protobuf)) must build the
//! same struct, and the generated encoder ([`encode_message`](super::encode_message)) must
//! write bytes that decode to it.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use super::schema::{Label, Message, Scalar, Schema, Type, schema};
use super::special::{Special, special};
use super::{decode, encode};

const MAX_FILL_DEPTH: usize = 6;

fn scalar_value(s: Scalar) -> Value {
    match s {
        Scalar::String => json!("text"),
        Scalar::Bytes => json!("Ynl0ZXM="),
        Scalar::Bool => json!(true),
        Scalar::Int32 | Scalar::Int64 | Scalar::Uint32 | Scalar::Uint64 => json!(7),
        Scalar::Double | Scalar::Float => json!(1.5),
    }
}

fn value_of(schema: &Schema, ty: Type, depth: usize) -> Option<Value> {
    let name = match ty {
        Type::Scalar(s) => return Some(scalar_value(s)),
        Type::Message(name) => name,
    };
    Some(match special(name.name) {
        Some(Special::Time) => json!("2024-05-01T10:00:00Z"),
        Some(Special::MicroTime) => json!("2024-05-01T10:00:00.123456Z"),
        Some(Special::Duration) => json!("1m30s"),
        Some(Special::Quantity) => json!("250m"),
        Some(Special::IntOrString) => json!(8080),
        Some(Special::RawJson) => json!({"raw": [1, "two"]}),
        Some(Special::PropsOrArray) => json!({"type": "string"}),
        Some(Special::PropsOrBool) => json!(true),
        Some(Special::PropsOrStringArray) => json!(["a"]),
        None => {
            if depth >= MAX_FILL_DEPTH {
                return None;
            }
            fill(schema, schema.message(name).ok()?, depth + 1)
        }
    })
}

/// An object of `message` with every field set.
fn fill(schema: &Schema, message: &Message, depth: usize) -> Value {
    let mut object = Map::new();
    fill_into(schema, message, depth, &mut object);
    if message.array {
        return object
            .remove(message.fields.first().map_or("items", |f| f.json))
            .unwrap_or_else(|| json!([]));
    }
    Value::Object(object)
}

fn fill_into(schema: &Schema, message: &Message, depth: usize, object: &mut Map<String, Value>) {
    for field in &message.fields {
        if field.inline {
            if let Label::Optional(Type::Message(name)) = field.label
                && let Ok(nested) = schema.message(name)
            {
                fill_into(schema, nested, depth, object);
            }
            continue;
        }
        let value = match field.label {
            Label::Optional(ty) => value_of(schema, ty, depth),
            Label::Repeated(ty) => value_of(schema, ty, depth).map(|v| json!([v])),
            Label::Map(_, ty) => value_of(schema, ty, depth).map(|v| json!({"key": v})),
        };
        if let Some(value) = value {
            object.insert(field.json.to_owned(), value);
        }
    }
}

fn round_trip<K>()
where
    K: k8s_openapi::Resource + Serialize + DeserializeOwned + PartialEq + std::fmt::Debug + 'static,
{
    let schema = schema().unwrap();
    let message = schema
        .kind(K::API_VERSION, K::KIND)
        .unwrap_or_else(|| panic!("{} {} has a protobuf schema", K::API_VERSION, K::KIND));
    let mut synthesized = fill(schema, message, 0);
    synthesized["apiVersion"] = json!(K::API_VERSION);
    synthesized["kind"] = json!(K::KIND);
    let synthesized_copy = synthesized.clone();
    let typed: K = serde_json::from_value(synthesized).unwrap_or_else(|e| {
        panic!(
            "{}: the synthesized object is a valid {}: {e}",
            K::KIND,
            K::KIND
        )
    });
    let json = serde_json::to_value(&typed).unwrap();
    let mut dropped = Vec::new();
    missing(&synthesized_copy, &json, String::new(), &mut dropped);
    // Every synthesized field is one k8s-openapi knows: the schema's JSON names are right
    // (a wrong one would be dropped here and never reach the round trip).
    assert!(
        dropped.is_empty(),
        "{}: fields k8s-openapi does not know: {dropped:?}",
        K::KIND
    );
    let bytes = encode(&json).unwrap_or_else(|e| panic!("{}: {e:?}", K::KIND));
    let decoded = decode(&bytes).unwrap_or_else(|e| panic!("{}: {e:?}", K::KIND));
    let typed_again: K = serde_json::from_value(decoded).unwrap_or_else(|e| {
        panic!(
            "{}: the decoded object is a valid {}: {e}",
            K::KIND,
            K::KIND
        )
    });
    assert_eq!(
        serde_json::to_value(&typed_again).unwrap(),
        json,
        "{} changed in the round trip",
        K::KIND
    );
    assert_eq!(typed_again, typed);
    // The direct decoder fills the same struct.
    let direct: K = super::from_protobuf(&bytes).unwrap_or_else(|e| panic!("{}: {e:?}", K::KIND));
    assert_eq!(direct, typed, "{}: the direct decoder differs", K::KIND);
    // The generated encoder writes every field, and its bytes decode to the same struct.
    let mut message = Vec::new();
    if let Some(fidelity) = super::encode_message(&typed, &mut message) {
        assert_eq!(fidelity, super::Fidelity::Exact, "{}", K::KIND);
        let again: K = super::decode_message(&message)
            .expect("a kind with an encoder has a decoder")
            .unwrap_or_else(|e| panic!("{}: {e:?}", K::KIND));
        assert_eq!(
            again,
            typed,
            "{}: the generated encoder's bytes differ",
            K::KIND
        );
    }
}

fn missing(expected: &Value, actual: &Value, path: String, out: &mut Vec<String>) {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => {
            for (k, v) in e {
                match a.get(k) {
                    Some(av) => missing(v, av, format!("{path}.{k}"), out),
                    None => out.push(format!("{path}.{k}")),
                }
            }
        }
        (Value::Array(e), Value::Array(a)) => {
            if let (Some(e), Some(a)) = (e.first(), a.first()) {
                missing(e, a, path, out);
            }
        }
        _ => {}
    }
}

macro_rules! every_kind {
    ($($name:ident: $ty:ty,)*) => {
        $(
            #[test]
            fn $name() {
                round_trip::<$ty>();
            }
        )*
    };
}

use k8s_openapi::api;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiextensions;

every_kind! {
    pod: api::core::v1::Pod,
    pod_list: k8s_openapi::List<api::core::v1::Pod>,
    pod_template: api::core::v1::PodTemplate,
    service: api::core::v1::Service,
    endpoints: api::core::v1::Endpoints,
    config_map: api::core::v1::ConfigMap,
    secret: api::core::v1::Secret,
    service_account: api::core::v1::ServiceAccount,
    core_event: api::core::v1::Event,
    node: api::core::v1::Node,
    namespace: api::core::v1::Namespace,
    persistent_volume: api::core::v1::PersistentVolume,
    persistent_volume_claim: api::core::v1::PersistentVolumeClaim,
    replication_controller: api::core::v1::ReplicationController,
    resource_quota: api::core::v1::ResourceQuota,
    limit_range: api::core::v1::LimitRange,
    binding: api::core::v1::Binding,
    deployment: api::apps::v1::Deployment,
    replica_set: api::apps::v1::ReplicaSet,
    stateful_set: api::apps::v1::StatefulSet,
    daemon_set: api::apps::v1::DaemonSet,
    controller_revision: api::apps::v1::ControllerRevision,
    job: api::batch::v1::Job,
    cron_job: api::batch::v1::CronJob,
    lease: api::coordination::v1::Lease,
    role: api::rbac::v1::Role,
    role_binding: api::rbac::v1::RoleBinding,
    cluster_role: api::rbac::v1::ClusterRole,
    cluster_role_binding: api::rbac::v1::ClusterRoleBinding,
    ingress: api::networking::v1::Ingress,
    ingress_class: api::networking::v1::IngressClass,
    network_policy: api::networking::v1::NetworkPolicy,
    pod_disruption_budget: api::policy::v1::PodDisruptionBudget,
    eviction: api::policy::v1::Eviction,
    scale: api::autoscaling::v1::Scale,
    hpa_v1: api::autoscaling::v1::HorizontalPodAutoscaler,
    hpa_v2: api::autoscaling::v2::HorizontalPodAutoscaler,
    storage_class: api::storage::v1::StorageClass,
    csi_driver: api::storage::v1::CSIDriver,
    csi_node: api::storage::v1::CSINode,
    volume_attachment: api::storage::v1::VolumeAttachment,
    priority_class: api::scheduling::v1::PriorityClass,
    endpoint_slice: api::discovery::v1::EndpointSlice,
    events_event: api::events::v1::Event,
    validating_webhook_configuration: api::admissionregistration::v1::ValidatingWebhookConfiguration,
    mutating_webhook_configuration: api::admissionregistration::v1::MutatingWebhookConfiguration,
    certificate_signing_request: api::certificates::v1::CertificateSigningRequest,
    runtime_class: api::node::v1::RuntimeClass,
    token_request: api::authentication::v1::TokenRequest,
    subject_access_review: api::authorization::v1::SubjectAccessReview,
    flow_schema: api::flowcontrol::v1::FlowSchema,
    custom_resource_definition: apiextensions::CustomResourceDefinition,
}
