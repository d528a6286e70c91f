//! The compact codec: objects read back equal, before and after the dictionary, at a
//! fraction of their JSON's size; broken bytes are errors, never panics.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{ConfigMap, Container, Pod, PodSpec};
use proptest::prelude::*;

use super::*;

/// A Pod that looks like one of a Deployment's: what objects of one type share.
fn replica(i: usize) -> Pod {
    let mut pod = Pod::default();
    pod.meta_mut().name = Some(format!("web-7d9f8c6b5-{i:05}"));
    pod.meta_mut().namespace = Some(format!("team-{}", i % 7));
    pod.meta_mut().resource_version = Some((1000 + i).to_string());
    pod.meta_mut().labels = Some(BTreeMap::from([
        ("app".to_owned(), "web".to_owned()),
        ("pod-template-hash".to_owned(), "7d9f8c6b5".to_owned()),
    ]));
    pod.spec = Some(PodSpec {
        node_name: Some(format!("node-{}", i % 31)),
        containers: vec![Container {
            name: "web".to_owned(),
            image: Some("registry.example.com/team/web:1.24.3".to_owned()),
            args: Some(vec![
                "--port=8080".to_owned(),
                "--log-level=info".to_owned(),
            ]),
            ..Container::default()
        }],
        ..PodSpec::default()
    });
    pod
}

fn wait_for_dictionary(codec: &CompactRepr<Pod>) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !codec.has_dictionary() {
        assert!(
            Instant::now() < deadline,
            "the dictionary was never trained"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn objects_read_back_equal_before_and_after_the_dictionary_is_trained() {
    let codec = CompactRepr::<Pod>::new();
    let early = codec.encode(&replica(0)).unwrap();
    assert!(!early.with_dictionary());
    for i in 1..TRAINING_SAMPLES {
        codec.encode(&replica(i)).unwrap();
    }
    wait_for_dictionary(&codec);
    let late = codec.encode(&replica(9999)).unwrap();
    assert!(late.with_dictionary());
    assert_eq!(codec.decode(&early).unwrap(), replica(0));
    assert_eq!(codec.decode(&late).unwrap(), replica(9999));
    assert_eq!(early.resource_version(), "1000");
    assert_eq!(late.resource_version(), "10999");
}

#[test]
fn the_dictionary_makes_objects_of_one_type_far_smaller_than_their_json() {
    let codec = CompactRepr::<Pod>::new();
    let json_len = serde_json::to_vec(&replica(5000)).unwrap().len();
    let mut protobuf = Vec::new();
    kubeclient_machinery::protobuf::encode_message(&replica(5000), &mut protobuf);
    assert!(protobuf.len() < json_len);
    let without = codec.encode(&replica(5000)).unwrap().encoded_len();
    for i in 0..TRAINING_SAMPLES {
        codec.encode(&replica(i)).unwrap();
    }
    wait_for_dictionary(&codec);
    let with = codec.encode(&replica(5000)).unwrap().encoded_len();
    assert!(without < json_len, "{without} >= {json_len}");
    assert!(
        with * 2 < without,
        "with a dictionary {with}, without {without}"
    );
}

#[test]
fn broken_bytes_are_errors_never_panics() {
    let codec = CompactRepr::<Pod>::new();
    let good = codec.encode(&replica(1)).unwrap();
    let rv_end = HEADER + good.resource_version().len();
    // Every truncation and every flipped byte of the frame decodes to an error or to some
    // object (zstd checks the frame; JSON checks the rest): never a panic.
    for cut in rv_end..good.bytes.len() {
        let mut bytes = good.bytes.to_vec();
        bytes.truncate(cut);
        let _ = codec.decode(&CompactObject {
            bytes: bytes.into(),
        });
    }
    for at in rv_end..good.bytes.len() {
        let mut bytes = good.bytes.to_vec();
        bytes[at] ^= 0x5a;
        let _ = codec.decode(&CompactObject {
            bytes: bytes.into(),
        });
    }
    // Claiming a dictionary the codec does not have is refused.
    let mut bytes = good.bytes.to_vec();
    bytes[0] |= WITH_DICTIONARY;
    assert!(matches!(
        codec.decode(&CompactObject {
            bytes: bytes.into()
        }),
        Err(CompactError::MissingDictionary)
    ));
}

#[test]
fn built_in_kinds_are_held_as_protobuf_and_the_rest_as_json() {
    let codec = CompactRepr::<Pod>::new();
    let stored = codec.encode(&replica(3)).unwrap();
    assert!(stored.is_protobuf());
    assert_eq!(codec.decode(&stored).unwrap(), replica(3));

    // A value the protobuf form would not give back (an empty name reads back as none)
    // makes that object JSON, and it still reads back equal.
    let mut odd = replica(4);
    odd.meta_mut().name = Some(String::new());
    let stored = codec.encode(&odd).unwrap();
    assert!(!stored.is_protobuf());
    assert_eq!(codec.decode(&stored).unwrap(), odd);

    let dynamic = CompactRepr::<kubeclient_machinery::DynamicObject>::new();
    let obj = kubeclient_machinery::DynamicObject::new("example.com/v1", "Widget", "w");
    let stored = dynamic.encode(&obj).unwrap();
    assert!(!stored.is_protobuf());
    assert_eq!(dynamic.decode(&stored).unwrap(), obj);
}

#[test]
fn a_json_object_claiming_to_be_protobuf_is_an_error_or_an_object_never_a_panic() {
    let codec = CompactRepr::<ConfigMap>::new();
    let mut cm = ConfigMap::default();
    cm.meta_mut().name = Some(String::new());
    let stored = codec.encode(&cm).unwrap();
    assert!(!stored.is_protobuf());
    let mut bytes = stored.bytes.to_vec();
    bytes[0] |= PROTOBUF;
    let _ = codec.decode(&CompactObject {
        bytes: bytes.into(),
    });
    // A type without a protobuf decoder refuses protobuf-flagged bytes.
    let dynamic = CompactRepr::<kubeclient_machinery::DynamicObject>::new();
    let stored = dynamic
        .encode(&kubeclient_machinery::DynamicObject::new(
            "v1",
            "ConfigMap",
            "c",
        ))
        .unwrap();
    let mut bytes = stored.bytes.to_vec();
    bytes[0] |= PROTOBUF;
    assert!(matches!(
        dynamic.decode(&CompactObject {
            bytes: bytes.into()
        }),
        Err(CompactError::NoProtobufDecoder)
    ));
}

#[test]
fn an_absurd_resource_version_is_refused_not_truncated() {
    let codec = CompactRepr::<ConfigMap>::new();
    let mut cm = ConfigMap::default();
    cm.meta_mut().resource_version = Some("9".repeat(70_000));
    assert!(matches!(
        codec.encode(&cm),
        Err(CompactError::ResourceVersionTooLong(70_000))
    ));
}

proptest! {
    /// Any ConfigMap (names, data, binary data) reads back equal.
    #[test]
    fn any_config_map_round_trips(
        name in "[a-z0-9.-]{0,40}",
        rv in "[0-9]{0,12}",
        data in prop::collection::btree_map(".{0,20}", ".{0,200}", 0..8),
    ) {
        let codec = CompactRepr::<ConfigMap>::new();
        let mut cm = ConfigMap::default();
        cm.meta_mut().name = Some(name);
        cm.meta_mut().resource_version = Some(rv.clone());
        cm.data = Some(data);
        let stored = codec.encode(&cm).unwrap();
        prop_assert_eq!(stored.resource_version(), rv.as_str());
        prop_assert_eq!(codec.decode(&stored).unwrap(), cm);
    }
}
