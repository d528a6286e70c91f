//! The generated encoders: real API server objects and synthesized ones come back equal
//! (`kinds_tests` checks every kind with every field set); values the decoder would change
//! make the encoding inexact instead of being changed silently.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret, Service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, Time};
use proptest::prelude::*;

use super::super::envelope;
use super::super::{Fidelity, decode_message, encode_message};
use crate::manifest_dir;

fn testdata(name: &str) -> Vec<u8> {
    let path = manifest_dir().join("src/protobuf/testdata").join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Encodes `obj`, checks the fidelity, and returns what its bytes decode to.
fn again<K: PartialEq + std::fmt::Debug + 'static>(obj: &K, expected: Fidelity) -> K {
    let mut bytes = Vec::new();
    assert_eq!(encode_message(obj, &mut bytes), Some(expected), "{obj:?}");
    decode_message::<K>(&bytes)
        .expect("the kind has a decoder")
        .unwrap()
}

fn decoded<K: 'static>(file: &str) -> K {
    let bytes = testdata(file);
    let (_, _, raw) = envelope::open(&bytes).unwrap();
    decode_message::<K>(raw).unwrap().unwrap()
}

#[test]
fn objects_from_a_real_server_encode_exactly_and_come_back_equal() {
    let pod: Pod = decoded("namespaces_default_pods_web-0.pb");
    assert!(pod.metadata.managed_fields.is_some());
    assert_eq!(again(&pod, Fidelity::Exact), pod);
    let deployment: Deployment = decoded("apps_v1_namespaces_default_deployments_web.pb");
    assert_eq!(again(&deployment, Fidelity::Exact), deployment);
    let service: Service = decoded("namespaces_default_services_web.pb");
    assert_eq!(again(&service, Fidelity::Exact), service);
    let secret: Secret = decoded("namespaces_default_secrets_s.pb");
    assert_eq!(again(&secret, Fidelity::Exact), secret);
    let lease: Lease = decoded("coordination.k8s.io_v1_namespaces_default_leases_l.pb");
    assert_eq!(again(&lease, Fidelity::Exact), lease);
}

#[test]
fn the_encoding_is_smaller_than_the_servers_and_canonical() {
    // Go writes every non-pointer field, zero or not; the encoder leaves zeros out, so
    // the same Pod takes fewer bytes, and encoding the decoded bytes again changes nothing.
    let bytes = testdata("namespaces_default_pods_web-0.pb");
    let (_, _, raw) = envelope::open(&bytes).unwrap();
    let pod: Pod = decode_message(raw).unwrap().unwrap();
    let mut ours = Vec::new();
    encode_message(&pod, &mut ours);
    assert!(ours.len() < raw.len(), "{} >= {}", ours.len(), raw.len());
    let mut twice = Vec::new();
    encode_message(&decode_message::<Pod>(&ours).unwrap().unwrap(), &mut twice);
    assert_eq!(ours, twice);
}

#[test]
fn values_the_decoder_would_change_make_the_encoding_inexact() {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("cfg".into());
    assert_eq!(again(&cm, Fidelity::Exact), cm);

    // A zero value in a field JSON omits when empty reads back as absent.
    let mut empty_name = cm.clone();
    empty_name.metadata.name = Some(String::new());
    assert_eq!(again(&empty_name, Fidelity::Inexact), ConfigMap::default());
    // An empty list or map that is `Some` reads back as `None`.
    let mut empty_finalizers = cm.clone();
    empty_finalizers.metadata.finalizers = Some(Vec::new());
    assert_eq!(again(&empty_finalizers, Fidelity::Inexact), cm);
    let mut empty_data = cm.clone();
    empty_data.data = Some(BTreeMap::new());
    assert_eq!(again(&empty_data, Fidelity::Inexact), cm);

    // Time keeps whole seconds, MicroTime microseconds.
    let mut subsecond = cm.clone();
    let at = jiff::Timestamp::new(1_714_557_600, 500_000_000).unwrap();
    subsecond.metadata.creation_timestamp = Some(Time(at));
    let back = again(&subsecond, Fidelity::Inexact);
    assert_eq!(
        back.metadata.creation_timestamp,
        Some(Time(jiff::Timestamp::new(1_714_557_600, 0).unwrap()))
    );
    let mut whole = cm.clone();
    whole.metadata.creation_timestamp = Some(Time(jiff::Timestamp::new(1_714_557_600, 0).unwrap()));
    assert_eq!(again(&whole, Fidelity::Exact), whole);
    // The Unix epoch is Go's zero time: it reads back as no time.
    let mut epoch = cm.clone();
    epoch.metadata.creation_timestamp = Some(Time(jiff::Timestamp::UNIX_EPOCH));
    assert_eq!(again(&epoch, Fidelity::Inexact), cm);

    let micro = jiff::Timestamp::new(1_714_557_600, 123_456_000).unwrap();
    let mut lease = Lease {
        spec: Some(LeaseSpec {
            renew_time: Some(MicroTime(micro)),
            ..Default::default()
        }),
        ..Default::default()
    };
    assert_eq!(again(&lease, Fidelity::Exact), lease);
    if let Some(spec) = lease.spec.as_mut() {
        spec.renew_time = Some(MicroTime(
            jiff::Timestamp::new(1_714_557_600, 123_456_789).unwrap(),
        ));
    }
    let _ = again(&lease, Fidelity::Inexact);
}

#[test]
fn pointer_fields_keep_their_zero_values() {
    // `Some(0)` in pointer fields (Go's `*int32`) is meaningful and comes back.
    let mut deployment = Deployment::default();
    deployment.spec.replicas = Some(0);
    deployment.spec.progress_deadline_seconds = Some(0);
    assert_eq!(again(&deployment, Fidelity::Exact), deployment);
    // `paused` is a plain Go bool that JSON omits when false: `Some(false)` cannot come back.
    deployment.spec.paused = Some(false);
    assert_eq!(again(&deployment, Fidelity::Inexact).spec.paused, None);
}

#[test]
fn types_without_a_generated_encoder_are_told_apart() {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    assert_eq!(
        encode_message(&CustomResourceDefinition::default(), &mut Vec::new()),
        None
    );
    assert_eq!(encode_message(&42_u8, &mut Vec::new()), None);
}

proptest! {
    /// Any ConfigMap or Secret: when the encoder says exact, the bytes decode to an equal
    /// object; when it says inexact, they still decode (to the object without the values
    /// it could not carry).
    #[test]
    fn any_config_map_or_secret_round_trips_when_exact(
        name in proptest::option::of("[a-z0-9.-]{0,12}"),
        labels in proptest::option::of(prop::collection::btree_map("[a-z]{0,6}", ".{0,8}", 0..4)),
        data in proptest::option::of(prop::collection::btree_map(".{0,8}", ".{0,40}", 0..4)),
        binary in proptest::option::of(prop::collection::vec(any::<u8>(), 0..40)),
        immutable in proptest::option::of(any::<bool>()),
        seconds in proptest::option::of(-1_000_000_000_i64..4_000_000_000),
    ) {
        let mut cm = ConfigMap::default();
        cm.metadata.name = name.clone();
        cm.metadata.labels = labels.clone();
        cm.metadata.creation_timestamp =
            seconds.and_then(|s| jiff::Timestamp::new(s, 0).ok()).map(Time);
        cm.data = data.clone();
        cm.immutable = immutable;
        let mut bytes = Vec::new();
        let fidelity = encode_message(&cm, &mut bytes).unwrap();
        let back: ConfigMap = decode_message(&bytes).unwrap().unwrap();
        if fidelity == Fidelity::Exact {
            prop_assert_eq!(back, cm);
        }

        let mut secret = Secret::default();
        secret.metadata.name = name;
        secret.data = binary.map(|b| BTreeMap::from([("k".to_owned(), k8s_openapi::ByteString(b))]));
        secret.string_data = data;
        let mut bytes = Vec::new();
        let fidelity = encode_message(&secret, &mut bytes).unwrap();
        let back: Secret = decode_message(&bytes).unwrap().unwrap();
        if fidelity == Fidelity::Exact {
            prop_assert_eq!(back, secret);
        }
    }
}
