//! Round trips of every special type, and hostile bytes.

use serde_json::{Value, json};

use super::*;

fn round_trip(value: &Value) -> Value {
    let bytes = encode(value).unwrap();
    decode(&bytes).unwrap()
}

pub(crate) fn pod() -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": "web-0", "namespace": "prod", "uid": "6f0e5c0e-9d1c-4f3e-9a57-2f7c3b1f0a11",
            "resourceVersion": "42", "generation": 3,
            "creationTimestamp": "2024-05-01T10:00:00Z",
            "deletionTimestamp": "2024-05-01T11:00:00Z", "deletionGracePeriodSeconds": 0,
            "labels": {"app": "web", "tier": ""}, "annotations": {"note": "x"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web",
                "uid": "u", "controller": true, "blockOwnerDeletion": false}],
            "finalizers": ["a/b"],
            "managedFields": [{"manager": "kubectl", "operation": "Apply", "apiVersion": "v1",
                "time": "2024-05-01T10:00:00Z", "fieldsType": "FieldsV1",
                "fieldsV1": {"f:metadata": {"f:labels": {"f:app": {}}}}}]
        },
        "spec": {
            "containers": [{
                "name": "app", "image": "nginx:1.27", "args": ["-g", "daemon off;"],
                "ports": [{"containerPort": 80, "protocol": "TCP"}],
                "env": [{"name": "A", "value": "1"}, {"name": "B", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
                "resources": {"limits": {"cpu": "500m", "memory": "128Mi"}, "requests": {"cpu": "1"}},
                "livenessProbe": {"httpGet": {"path": "/", "port": 8080}, "periodSeconds": 10},
                "readinessProbe": {"tcpSocket": {"port": "http"}},
                "securityContext": {"runAsNonRoot": false, "runAsUser": 0}
            }],
            "volumes": [
                {"name": "cfg", "configMap": {"name": "cfg", "defaultMode": 420}},
                {"name": "scratch", "emptyDir": {"sizeLimit": "1Gi"}}
            ],
            "terminationGracePeriodSeconds": 30,
            "nodeSelector": {"disk": "ssd"},
            "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": -1}],
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]}]}}}
        },
        "status": {
            "phase": "Running", "podIP": "10.0.0.1", "startTime": "2024-05-01T10:00:01Z",
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2024-05-01T10:00:05Z"}],
            "containerStatuses": [{"name": "app", "ready": true, "restartCount": 2, "image": "nginx", "imageID": "sha",
                "state": {"running": {"startedAt": "2024-05-01T10:00:02Z"}}}]
        }
    })
}

#[test]
fn a_pod_with_every_special_type_round_trips() {
    let pod = pod();
    assert_eq!(round_trip(&pod), pod);
}

#[test]
fn volume_sources_are_inlined_in_json_and_nested_on_the_wire() {
    let pod = pod();
    let bytes = encode(&pod).unwrap();
    let decoded = decode(&bytes).unwrap();
    assert_eq!(
        decoded["spec"]["volumes"][0]["configMap"]["defaultMode"],
        420
    );
    assert!(decoded["spec"]["volumes"][0].get("volumeSource").is_none());
}

#[test]
fn secret_bytes_are_base64_in_json_and_raw_on_the_wire() {
    let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
        "type": "Opaque", "data": {"password": "c2VjcmV0", "empty": ""}, "immutable": false});
    let bytes = encode(&secret).unwrap();
    assert!(
        bytes.windows(6).any(|w| w == b"secret"),
        "the raw bytes are on the wire"
    );
    assert_eq!(decode(&bytes).unwrap(), secret);
    let bad = json!({"apiVersion": "v1", "kind": "Secret", "data": {"a": "%%%"}});
    assert!(encode(&bad).is_err());
}

#[test]
fn zero_values_survive_for_pointers_and_drop_for_omitempty_values() {
    // replicas is a pointer: 0 means zero replicas. minReadySeconds is omitempty: 0 is unset.
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d", "generateName": ""},
        "spec": {"replicas": 0, "minReadySeconds": 0, "paused": false,
                 "selector": {"matchLabels": {"app": "d"}},
                 "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 0}},
                 "template": {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}});
    let decoded = round_trip(&deployment);
    assert_eq!(decoded["spec"]["replicas"], 0);
    assert!(decoded["spec"].get("minReadySeconds").is_none());
    assert!(decoded["spec"].get("paused").is_none());
    assert!(decoded["metadata"].get("generateName").is_none());
    assert_eq!(
        decoded["spec"]["strategy"]["rollingUpdate"]["maxSurge"],
        "25%"
    );
    assert_eq!(
        decoded["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"],
        0
    );
}

#[test]
fn micro_times_durations_and_raw_extensions_round_trip() {
    let lease = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"},
        "spec": {"holderIdentity": "me", "leaseDurationSeconds": 15,
                 "renewTime": "2024-05-01T10:00:00.123456Z", "acquireTime": "2024-05-01T09:00:00.000000Z"}});
    assert_eq!(round_trip(&lease), lease);
    let revision = json!({"apiVersion": "apps/v1", "kind": "ControllerRevision", "metadata": {"name": "r"},
        "revision": 2, "data": {"spec": {"template": {"a": [1, 2.5, null, true]}}}});
    assert_eq!(round_trip(&revision), revision);
}

#[test]
fn custom_resource_definitions_round_trip_with_their_schema_unions() {
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object",
                    "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                        "properties": {"size": {"type": "integer", "default": 3, "minimum": 1.0},
                                       "tags": {"type": "array", "items": {"type": "string"}},
                                       "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                                       "extra": {"type": "object", "additionalProperties": false},
                                       "mode": {"type": "string", "enum": ["a", "b"]}},
                        "required": ["size"]}}}}}]}});
    assert_eq!(round_trip(&crd), crd);
}

#[test]
fn lists_and_status_round_trip_and_status_has_the_documented_prefix() {
    let list = json!({"apiVersion": "v1", "kind": "ConfigMapList",
        "metadata": {"resourceVersion": "7", "continue": "abc", "remainingItemCount": 3},
        "items": [{"metadata": {"name": "a"}, "data": {"k": "v"}}, {"metadata": {"name": "b"}}]});
    assert_eq!(round_trip(&list), list);
    let status = json!({"apiVersion": "v1", "kind": "Status", "metadata": {}, "status": "Failure",
        "message": "configmaps \"x\" not found", "reason": "NotFound",
        "details": {"name": "x", "kind": "configmaps"}, "code": 404});
    let bytes = encode(&status).unwrap();
    assert_eq!(
        &bytes[..19],
        &[
            0x6b, 0x38, 0x73, 0x00, 0x0a, 0x0c, 0x0a, 0x02, 0x76, 0x31, 0x12, 0x06, 0x53, 0x74,
            0x61, 0x74, 0x75, 0x73, 0x12
        ]
    );
    assert_eq!(decode(&bytes).unwrap(), status);
}

#[test]
fn custom_resources_and_untyped_objects_have_no_protobuf_form() {
    let widget =
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}});
    assert!(matches!(
        encode(&widget),
        Err(ProtobufError::UnknownKind { .. })
    ));
    assert!(matches!(
        encode(&json!({"metadata": {}})),
        Err(ProtobufError::MissingTypeMeta)
    ));
    let wrong = json!({"apiVersion": "v1", "kind": "ConfigMap", "data": ["not", "a", "map"]});
    let err = encode(&wrong).unwrap_err();
    assert!(
        matches!(err, ProtobufError::InField { field: "data", .. }),
        "{err:?}"
    );
}

#[test]
fn hostile_bytes_give_errors_never_panics() {
    let bytes = encode(&pod()).unwrap();
    assert!(matches!(decode(b"k8s"), Err(ProtobufError::MissingMagic)));
    assert!(matches!(
        decode(b"{\"kind\":\"Pod\"}"),
        Err(ProtobufError::MissingMagic)
    ));
    assert!(decode(b"k8s\0\xff\xff\xff").is_err());
    // Every truncation is an error (or, where the cut falls on a field boundary of the
    // envelope, a shorter object), never a panic.
    for end in 0..bytes.len() {
        let _ = decode(&bytes[..end]);
    }
    assert!(decode(&bytes[..bytes.len() / 2]).is_err());
    // A length prefix of 2^40 for the raw object: truncation, not an allocation.
    let mut huge = MAGIC.to_vec();
    huge.extend_from_slice(&[0x12, 0x80, 0x80, 0x80, 0x80, 0x80, 0x20]);
    assert!(matches!(decode(&huge), Err(ProtobufError::Truncated)));
    // Messages nested beyond the limit.
    let mut deep = json!({"type": "object"});
    for _ in 0..150 {
        deep = json!({"type": "object", "properties": {"a": deep}});
    }
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "spec": {"versions": [{"schema": {"openAPIV3Schema": deep}}]}});
    assert!(encode(&crd).is_err());
}

#[test]
fn a_watch_body_split_at_every_byte_decodes() {
    let mut body = Vec::new();
    let mut expected = Vec::new();
    for (i, kind) in ["ADDED", "MODIFIED", "DELETED"].iter().enumerate() {
        let mut pod = pod();
        pod["metadata"]["resourceVersion"] = json!(format!("{}", 100 + i));
        body.extend(encode_watch_event(kind, &pod).unwrap());
        expected.push(json!({"type": kind, "object": pod}));
    }
    for split in 0..=body.len() {
        let mut decoder = WatchFrameDecoder::new();
        let mut events = Vec::new();
        for chunk in [&body[..split], &body[split..]] {
            decoder.push(chunk);
            while let Some(event) = decoder.next_event() {
                events.push(event.unwrap());
            }
        }
        decoder.finish().unwrap();
        assert_eq!(events, expected, "split at {split}");
    }
    // Byte by byte.
    let mut decoder = WatchFrameDecoder::new();
    let mut count = 0;
    for byte in &body {
        decoder.push(std::slice::from_ref(byte));
        while let Some(event) = decoder.next_event() {
            event.unwrap();
            count += 1;
        }
    }
    assert_eq!(count, 3);
}

#[test]
fn watch_frames_refuse_huge_prefixes_and_report_truncation() {
    let mut decoder = WatchFrameDecoder::with_max_frame_bytes(1024);
    decoder.push(&[0xff, 0xff, 0xff, 0xff, 1, 2, 3]);
    assert!(matches!(
        decoder.next_event(),
        Some(Err(ProtobufError::FrameTooLarge {
            len: 4_294_967_295,
            max: 1024
        }))
    ));
    assert!(
        decoder.next_event().is_none(),
        "a broken stream yields nothing more"
    );
    let frame = encode_watch_event("ADDED", &pod()).unwrap();
    let mut decoder = WatchFrameDecoder::new();
    decoder.push(&frame[..frame.len() - 1]);
    assert!(decoder.next_event().is_none());
    assert!(matches!(decoder.finish(), Err(ProtobufError::Truncated)));
    // A frame whose object is garbage is an error for that event only.
    let mut decoder = WatchFrameDecoder::new();
    decoder.push(&[0, 0, 0, 3, 0x0a, 0x01, b'X']);
    decoder.push(&frame);
    assert!(decoder.next_event().unwrap().is_err());
    assert_eq!(decoder.next_event().unwrap().unwrap()["type"], "ADDED");
}

/// Bodies captured from a real kube-apiserver (v1.20): each protobuf
/// body decodes to the JSON the same server answered for the same URL.
#[test]
fn bodies_from_a_real_api_server_decode_to_its_json() {
    let dir = crate::manifest_dir().join("src/protobuf/testdata");
    let mut checked = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "pb") || path.to_string_lossy().contains("watch") {
            continue;
        }
        let bytes = std::fs::read(&path).unwrap();
        let expected: Value =
            serde_json::from_slice(&std::fs::read(path.with_extension("json")).unwrap()).unwrap();
        let decoded = decode(&bytes).unwrap_or_else(|e| panic!("{}: {e:?}", path.display()));
        assert_eq!(decoded, without_zero_times(expected), "{}", path.display());
        checked += 1;
    }
    assert!(checked >= 10, "{checked} fixtures");
}

/// Go writes a zero `metav1.Time` as `null` in JSON; the codec leaves it out.
fn without_zero_times(mut value: Value) -> Value {
    fn walk(value: &mut Value) {
        match value {
            Value::Object(map) => {
                map.retain(|_, v| !v.is_null());
                map.values_mut().for_each(walk);
            }
            Value::Array(items) => items.iter_mut().for_each(walk),
            _ => {}
        }
    }
    walk(&mut value);
    value
}

#[test]
fn a_watch_body_from_a_real_api_server_decodes_to_its_json_events() {
    let dir = crate::manifest_dir().join("src/protobuf/testdata");
    let body = std::fs::read(dir.join("watch_configmaps.pb")).unwrap();
    let lines = std::fs::read_to_string(dir.join("watch_configmaps.json")).unwrap();
    let expected: Vec<Value> = lines
        .lines()
        .map(|line| without_zero_times(serde_json::from_str(line).unwrap()))
        .collect();
    let mut decoder = WatchFrameDecoder::new();
    decoder.push(&body);
    let mut events = Vec::new();
    while let Some(event) = decoder.next_event() {
        events.push(event.unwrap());
    }
    decoder.finish().unwrap();
    assert!(!events.is_empty());
    assert_eq!(events, expected);
}

#[test]
fn the_direct_decoder_fills_structs_and_can_skip_managed_fields() {
    use k8s_openapi::api::core::v1::Pod;
    let pod_json = pod();
    let bytes = encode(&pod_json).unwrap();
    let through_json: Pod = serde_json::from_value(pod_json).unwrap();
    let direct: Pod = from_protobuf(&bytes).unwrap();
    assert_eq!(direct, through_json);
    let stripped: Pod = from_protobuf_with(&bytes, true).unwrap();
    assert!(stripped.metadata.managed_fields.is_none());
    assert_eq!(stripped.spec, through_json.spec);
    // Hostile bytes: errors, never panics.
    for end in 0..bytes.len() {
        let _ = from_protobuf::<Pod>(&bytes[..end]);
    }
    assert!(from_protobuf::<Pod>(&bytes[..bytes.len() / 2]).is_err());
    assert!(matches!(
        from_protobuf::<Pod>(b"nope"),
        Err(ProtobufError::MissingMagic)
    ));
    // The wrong type for the kind in the envelope is an error.
    assert!(from_protobuf::<k8s_openapi::api::core::v1::ConfigMap>(&bytes).is_err());
}

#[test]
fn real_api_server_bodies_decode_directly_as_through_json() {
    use k8s_openapi::api::core::v1::Pod;
    let dir = crate::manifest_dir().join("src/protobuf/testdata");
    let bytes = std::fs::read(dir.join("namespaces_default_pods_web-0.pb")).unwrap();
    let through_json: Pod = serde_json::from_value(decode(&bytes).unwrap()).unwrap();
    let direct: Pod = from_protobuf(&bytes).unwrap();
    assert_eq!(direct, through_json);
    assert!(direct.spec.is_some());
}
