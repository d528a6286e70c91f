use super::*;
use serde_json::json;

/// Applies `patch` to `original` with the built-in table for `kind`.
fn apply(kind: &str, original: Value, patch: Value) -> Result<Value, StrategicMergeError> {
    strategic_merge(&original, &patch, &|path: &[&str]| {
        builtin_list_strategy(kind, path)
    })
}

/// Like [`apply`], for patches that must succeed.
fn patched(kind: &str, original: Value, patch: Value) -> Value {
    match apply(kind, original, patch) {
        Ok(value) => value,
        Err(err) => panic!("patch failed: {err}"),
    }
}

/// Names of the items of a keyed list, in order.
fn names(list: &Value, key: &str) -> Vec<String> {
    list.as_array()
        .map(|items| {
            items
                .iter()
                .map(|item| item[key].as_str().unwrap_or_default().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

fn pod(containers: Value) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web", "labels": {"app": "web", "tier": "front"}},
        "spec": {"containers": containers}
    })
}

#[test]
fn maps_merge_recursively_and_keep_untouched_fields() {
    let out = patched(
        "Pod",
        pod(json!([{"name": "web", "image": "nginx:1"}])),
        json!({"metadata": {"labels": {"tier": "back", "team": "a"}}}),
    );
    assert_eq!(
        out["metadata"]["labels"],
        json!({"app": "web", "tier": "back", "team": "a"})
    );
    assert_eq!(out["metadata"]["name"], "web");
    assert_eq!(out["spec"]["containers"][0]["image"], "nginx:1");
}

#[test]
fn null_deletes_a_key() {
    let out = patched(
        "Pod",
        pod(json!([])),
        json!({"metadata": {"labels": {"tier": null, "absent": null}}}),
    );
    assert_eq!(out["metadata"]["labels"], json!({"app": "web"}));
}

#[test]
fn a_non_map_value_replaces_whatever_was_there() {
    let out = patched(
        "ConfigMap",
        json!({"data": {"a": "1"}, "note": {"x": 1}}),
        json!({"data": "flat", "note": 7}),
    );
    assert_eq!(out, json!({"data": "flat", "note": 7}));
}

#[test]
fn non_object_patch_is_an_error() {
    let err = apply("Pod", pod(json!([])), json!([{"op": "add"}])).unwrap_err();
    assert_eq!(err, StrategicMergeError::PatchNotObject { found: "a list" });
    assert_eq!(
        err.to_string(),
        "strategic merge patch must be a JSON object, got a list"
    );
}

#[test]
fn non_object_original_is_treated_as_empty() {
    let out = patched("Pod", json!("garbage"), json!({"metadata": {"name": "x"}}));
    assert_eq!(out, json!({"metadata": {"name": "x"}}));
}

#[test]
fn lists_without_a_strategy_are_replaced() {
    let original = json!({"spec": {
        "containers": [{"name": "web", "args": ["--a", "--b"]}],
        "tolerations": [{"key": "dedicated", "value": "test-team", "effect": "NoSchedule"}]
    }});
    let out = patched(
        "Pod",
        original,
        json!({"spec": {
            "containers": [{"name": "web", "args": ["--c"]}],
            "tolerations": [{"key": "disktype", "value": "ssd", "effect": "NoSchedule"}]
        }}),
    );
    assert_eq!(out["spec"]["containers"][0]["args"], json!(["--c"]));
    assert_eq!(
        out["spec"]["tolerations"],
        json!([{"key": "disktype", "value": "ssd", "effect": "NoSchedule"}])
    );
}

#[test]
fn container_is_merged_by_name_and_new_one_added_ahead_of_untouched_ones() {
    // The kubectl patch task page: adding `patch-demo-ctr-2` to a Deployment with a plain
    // patch. The API server lists the new container first, then the untouched one.
    let original = json!({"spec": {"template": {"spec": {"containers": [
        {"name": "patch-demo-ctr", "image": "nginx", "imagePullPolicy": "Always"}
    ]}}}});
    let out = patched(
        "Deployment",
        original,
        json!({"spec": {"template": {"spec": {"containers": [
            {"name": "patch-demo-ctr-2", "image": "redis"}
        ]}}}}),
    );
    let containers = &out["spec"]["template"]["spec"]["containers"];
    assert_eq!(
        names(containers, "name"),
        ["patch-demo-ctr-2", "patch-demo-ctr"]
    );
    assert_eq!(containers[1]["imagePullPolicy"], "Always");
    assert_eq!(
        containers[0],
        json!({"name": "patch-demo-ctr-2", "image": "redis"})
    );
}

#[test]
fn kubectl_patch_of_one_container_image_keeps_everything_else() {
    // kubectl patch deploy web -p '{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"nginx:2"}]}}}}'
    let original = json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"replicas": 2, "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [
                {"name": "web", "image": "nginx:1", "ports": [{"containerPort": 80}],
                 "env": [{"name": "MODE", "value": "prod"}]},
                {"name": "sidecar", "image": "envoy:1"}
            ]}
        }}
    });
    let out = patched(
        "Deployment",
        original.clone(),
        json!({"spec":{"template":{"spec":{"containers":[{"name":"web","image":"nginx:2"}]}}}}),
    );
    let mut expected = original;
    expected["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:2");
    assert_eq!(out, expected);
}

#[test]
fn kubectl_apply_patch_changes_an_image_and_adds_an_env_var() {
    // What `kubectl apply` sends after the manifest bumps the image and adds FEATURE_X:
    // changed fields only, plus `$setElementOrder` lists and the new last-applied note.
    // `log-shipper` was injected by someone else and is not in the manifest.
    let live = json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "annotations": {
            "kubectl.kubernetes.io/last-applied-configuration": "{\"old\":true}\n"
        }},
        "spec": {"replicas": 3, "template": {"spec": {"containers": [
            {"name": "web", "image": "nginx:1.25", "imagePullPolicy": "IfNotPresent",
             "env": [{"name": "LOG_LEVEL", "value": "info"}],
             "terminationMessagePath": "/dev/termination-log"},
            {"name": "log-shipper", "image": "fluent-bit:3"}
        ]}}}
    });
    let patch = json!({
        "metadata": {"annotations": {
            "kubectl.kubernetes.io/last-applied-configuration": "{\"new\":true}\n"
        }},
        "spec": {"template": {"spec": {
            "$setElementOrder/containers": [{"name": "web"}],
            "containers": [{
                "$setElementOrder/env": [{"name": "LOG_LEVEL"}, {"name": "FEATURE_X"}],
                "env": [{"name": "FEATURE_X", "value": "on"}],
                "image": "nginx:1.26",
                "name": "web"
            }]
        }}}
    });
    let out = patched("Deployment", live, patch);
    let containers = &out["spec"]["template"]["spec"]["containers"];
    assert_eq!(
        containers,
        &json!([
            {"name": "web", "image": "nginx:1.26", "imagePullPolicy": "IfNotPresent",
             "env": [{"name": "LOG_LEVEL", "value": "info"}, {"name": "FEATURE_X", "value": "on"}],
             "terminationMessagePath": "/dev/termination-log"},
            {"name": "log-shipper", "image": "fluent-bit:3"}
        ])
    );
    assert_eq!(
        out["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"],
        "{\"new\":true}\n"
    );
    assert_eq!(out["spec"]["replicas"], 3);
}

#[test]
fn env_vars_merge_by_name_inside_a_container() {
    let out = patched(
        "Pod",
        pod(json!([{"name": "web", "env": [
            {"name": "A", "value": "1"},
            {"name": "B", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}
        ]}])),
        json!({"spec": {"containers": [{"name": "web", "env": [
            {"name": "B", "value": "2", "valueFrom": null}
        ]}]}}),
    );
    assert_eq!(
        out["spec"]["containers"][0]["env"],
        json!([{"name": "A", "value": "1"}, {"name": "B", "value": "2"}])
    );
}

#[test]
fn patch_order_wins_over_server_order_without_set_element_order() {
    let out = patched(
        "Pod",
        pod(json!([{"name": "a"}, {"name": "b"}, {"name": "c"}])),
        json!({"spec": {"containers": [{"name": "c", "image": "x"}, {"name": "a", "image": "y"}]}}),
    );
    assert_eq!(names(&out["spec"]["containers"], "name"), ["b", "c", "a"]);
}

#[test]
fn empty_patch_list_leaves_a_merging_list_alone() {
    let out = patched(
        "Pod",
        pod(json!([{"name": "a"}, {"name": "b"}])),
        json!({"spec": {"containers": []}}),
    );
    assert_eq!(names(&out["spec"]["containers"], "name"), ["a", "b"]);
}

#[test]
fn patch_delete_directive_removes_a_keyed_item() {
    let out = patched(
        "Pod",
        pod(json!([{"name": "a"}, {"name": "b"}, {"name": "c"}])),
        json!({"spec": {"containers": [{"name": "b", "$patch": "delete"}]}}),
    );
    assert_eq!(names(&out["spec"]["containers"], "name"), ["a", "c"]);
}

#[test]
fn patch_replace_element_replaces_the_whole_list() {
    let out = patched(
        "Pod",
        pod(json!([{"name": "a", "image": "old"}, {"name": "b"}])),
        json!({"spec": {"containers": [
            {"$patch": "replace"},
            {"name": "z", "image": "new"}
        ]}}),
    );
    assert_eq!(
        out["spec"]["containers"],
        json!([{"name": "z", "image": "new"}])
    );
}

#[test]
fn patch_replace_in_a_map_replaces_the_map() {
    let out = patched(
        "Pod",
        pod(json!([])),
        json!({"metadata": {"labels": {"$patch": "replace", "only": "this"}}}),
    );
    assert_eq!(out["metadata"]["labels"], json!({"only": "this"}));
}

#[test]
fn patch_delete_in_a_map_removes_the_map() {
    let out = patched(
        "Pod",
        pod(json!([])),
        json!({"metadata": {"labels": {"$patch": "delete", "ignored": "x"}}}),
    );
    assert!(out["metadata"].get("labels").is_none());
    assert_eq!(out["metadata"]["name"], "web");
}

#[test]
fn set_element_order_reorders_containers() {
    let out = patched(
        "Pod",
        pod(json!([{"name": "a"}, {"name": "b"}, {"name": "c"}])),
        json!({"spec": {"$setElementOrder/containers": [
            {"name": "c"}, {"name": "b"}, {"name": "a"}
        ]}}),
    );
    assert_eq!(names(&out["spec"]["containers"], "name"), ["c", "b", "a"]);
}

#[test]
fn set_element_order_appends_a_new_container_where_the_manifest_puts_it() {
    let out = patched(
        "Pod",
        pod(json!([{"name": "a"}, {"name": "b"}])),
        json!({"spec": {
            "$setElementOrder/containers": [{"name": "a"}, {"name": "b"}, {"name": "new"}],
            "containers": [{"name": "new", "image": "busybox"}]
        }}),
    );
    assert_eq!(names(&out["spec"]["containers"], "name"), ["a", "b", "new"]);
}

#[test]
fn set_element_order_keeps_unnamed_items_at_their_server_position() {
    // `sidecar` is not named; it stays ahead of `c`, which followed it on the server.
    let out = patched(
        "Pod",
        pod(json!([{"name": "a"}, {"name": "sidecar"}, {"name": "c"}])),
        json!({"spec": {"$setElementOrder/containers": [{"name": "c"}, {"name": "a"}]}}),
    );
    assert_eq!(
        names(&out["spec"]["containers"], "name"),
        ["sidecar", "c", "a"]
    );
}

#[test]
fn set_element_order_that_disagrees_with_the_patch_is_an_error() {
    let err = apply(
        "Pod",
        pod(json!([{"name": "a"}, {"name": "b"}])),
        json!({"spec": {
            "$setElementOrder/containers": [{"name": "a"}],
            "containers": [{"name": "b", "image": "x"}]
        }}),
    )
    .unwrap_err();
    assert_eq!(
        err,
        StrategicMergeError::ElementOrderMismatch {
            path: "spec.containers".to_owned()
        }
    );
}

#[test]
fn retain_keys_drops_unlisted_fields() {
    // Switching a Deployment from RollingUpdate to Recreate, as on the kubectl patch page.
    let original = json!({"spec": {"strategy": {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}
    }}});
    let out = patched(
        "Deployment",
        original,
        json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}),
    );
    assert_eq!(out, json!({"spec": {"strategy": {"type": "Recreate"}}}));
}

#[test]
fn retain_keys_rejects_a_patch_setting_an_unlisted_field() {
    let err = apply(
        "Deployment",
        json!({}),
        json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate",
                                      "rollingUpdate": {"maxSurge": 1}}}}),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "field `rollingUpdate` at spec.strategy is set by the patch but not listed in `$retainKeys`"
    );
}

#[test]
fn finalizers_merge_as_a_set() {
    let out = patched(
        "Namespace",
        json!({"metadata": {"finalizers": ["a", "b"]}}),
        json!({"metadata": {"finalizers": ["b", "c"]}}),
    );
    // Same order the API server produces: `a` (server only, before `b` on the server),
    // then the patch's `b`, `c`.
    assert_eq!(out["metadata"]["finalizers"], json!(["a", "b", "c"]));
}

#[test]
fn delete_from_primitive_list_removes_values() {
    let out = patched(
        "Pod",
        json!({"metadata": {"finalizers": ["a", "b", "c"]}}),
        json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["b", "zzz"]}}),
    );
    assert_eq!(out["metadata"]["finalizers"], json!(["a", "c"]));
}

#[test]
fn item_without_merge_key_is_an_error() {
    let err = apply(
        "Pod",
        pod(json!([{"name": "web"}])),
        json!({"spec": {"containers": [{"image": "nginx:2"}]}}),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "item in list spec.containers is missing its merge key `name`"
    );
}

#[test]
fn keyed_list_item_that_is_not_an_object_is_an_error() {
    let err = apply(
        "Pod",
        pod(json!([])),
        json!({"spec": {"containers": ["web"]}}),
    )
    .unwrap_err();
    assert!(matches!(
        err,
        StrategicMergeError::ItemNotObject {
            key: "name",
            found: "a string",
            ..
        }
    ));
}

#[test]
fn unknown_directive_is_an_error() {
    let err = apply(
        "Pod",
        pod(json!([])),
        json!({"metadata": {"$frobnicate": true}}),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "unknown patch directive `$frobnicate` at metadata"
    );
}

#[test]
fn invalid_patch_directive_value_is_an_error() {
    let err = apply(
        "Pod",
        pod(json!([{"name": "a"}])),
        json!({"spec": {"containers": [{"name": "a", "$patch": "merge"}]}}),
    )
    .unwrap_err();
    assert_eq!(
        err,
        StrategicMergeError::InvalidPatchValue {
            path: "spec.containers".to_owned(),
            value: "\"merge\"".to_owned()
        }
    );
}

#[test]
fn directives_never_reach_the_result() {
    // Everything below lands on fields the original lacks, which upstream copies verbatim.
    let out = patched(
        "Pod",
        pod(json!([{"name": "web"}])),
        json!({
            "metadata": {"annotations": {"$retainKeys": ["a"], "a": "1", "b": null}},
            "spec": {
                "containers": [{"name": "debug", "env": [
                    {"name": "X", "value": "1"},
                    {"name": "Y", "$patch": "delete"}
                ], "securityContext": {"$patch": "replace", "runAsUser": 1000}}],
                "tolerations": [{"$patch": "replace"}, {"key": "k", "operator": "Exists"}]
            }
        }),
    );
    assert!(!out.to_string().contains('$'), "{out}");
    assert_eq!(out["metadata"]["annotations"], json!({"a": "1"}));
    assert_eq!(
        out["spec"]["containers"][0],
        json!({"name": "debug", "env": [{"name": "X", "value": "1"}],
               "securityContext": {"runAsUser": 1000}})
    );
    assert_eq!(
        out["spec"]["tolerations"],
        json!([{"key": "k", "operator": "Exists"}])
    );
}

#[test]
fn service_ports_merge_by_port_and_numbers_match_across_representations() {
    let out = patched(
        "Service",
        json!({"spec": {"ports": [{"port": 80, "targetPort": 8080}, {"port": 443}]}}),
        json!({"spec": {"ports": [{"port": 80.0, "targetPort": 9090}]}}),
    );
    // The item matched despite `80` vs `80.0`; the patch's spelling then wins.
    assert_eq!(
        out["spec"]["ports"],
        json!([{"port": 80.0, "targetPort": 9090}, {"port": 443}])
    );
}

#[test]
fn node_conditions_and_addresses_merge_by_type() {
    let out = patched(
        "Node",
        json!({"status": {
            "conditions": [{"type": "Ready", "status": "False"}, {"type": "DiskPressure", "status": "False"}],
            "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}]
        }}),
        json!({"status": {
            "conditions": [{"type": "Ready", "status": "True"}],
            "addresses": [{"type": "Hostname", "address": "node-1"}]
        }}),
    );
    assert_eq!(
        out["status"]["conditions"],
        json!([{"type": "Ready", "status": "True"}, {"type": "DiskPressure", "status": "False"}])
    );
    assert_eq!(
        names(&out["status"]["addresses"], "type"),
        ["Hostname", "InternalIP"]
    );
}

#[test]
fn owner_references_merge_by_uid() {
    let out = patched(
        "ReplicaSet",
        json!({"metadata": {"ownerReferences": [{"uid": "1", "name": "d1"}]}}),
        json!({"metadata": {"ownerReferences": [{"uid": "1", "controller": true}]}}),
    );
    assert_eq!(
        out["metadata"]["ownerReferences"],
        json!([{"uid": "1", "name": "d1", "controller": true}])
    );
}

#[test]
fn builtin_table_follows_upstream_struct_tags() {
    use ListStrategy::{MergeByKey, MergePrimitives, Replace};
    let cases: &[(&str, &[&str], ListStrategy)] = &[
        ("Pod", &["spec", "containers"], MergeByKey("name")),
        (
            "Pod",
            &["spec", "initContainers", "ports"],
            MergeByKey("containerPort"),
        ),
        (
            "Pod",
            &["spec", "ephemeralContainers", "volumeMounts"],
            MergeByKey("mountPath"),
        ),
        (
            "Pod",
            &["spec", "containers", "volumeDevices"],
            MergeByKey("devicePath"),
        ),
        ("Pod", &["spec", "containers", "envFrom"], Replace),
        ("Pod", &["spec", "containers", "resizePolicy"], Replace),
        ("Pod", &["spec", "tolerations"], Replace),
        ("Pod", &["spec", "hostAliases"], MergeByKey("ip")),
        ("Pod", &["status", "podIPs"], MergeByKey("ip")),
        (
            "Deployment",
            &["spec", "template", "spec", "volumes"],
            MergeByKey("name"),
        ),
        (
            "StatefulSet",
            &["spec", "template", "spec", "topologySpreadConstraints"],
            MergeByKey("topologyKey"),
        ),
        (
            "CronJob",
            &[
                "spec",
                "jobTemplate",
                "spec",
                "template",
                "spec",
                "containers",
                "env",
            ],
            MergeByKey("name"),
        ),
        (
            "PodTemplate",
            &["template", "spec", "imagePullSecrets"],
            MergeByKey("name"),
        ),
        (
            "Job",
            &["spec", "template", "spec", "schedulingGates"],
            MergeByKey("name"),
        ),
        (
            "DaemonSet",
            &["spec", "template", "spec", "resourceClaims"],
            MergeByKey("name"),
        ),
        (
            "Deployment",
            &["spec", "template", "metadata", "finalizers"],
            MergePrimitives,
        ),
        ("Deployment", &["status", "conditions"], MergeByKey("type")),
        (
            "Secret",
            &["metadata", "ownerReferences"],
            MergeByKey("uid"),
        ),
        ("Node", &["spec", "podCIDRs"], MergePrimitives),
        ("Node", &["spec", "taints"], Replace),
        ("ConfigMap", &["spec", "containers"], Replace),
        ("Widget", &["status", "conditions"], Replace),
    ];
    for (kind, path, expected) in cases {
        assert_eq!(
            builtin_list_strategy(kind, path),
            *expected,
            "{kind} {}",
            path.join(".")
        );
    }
}

#[test]
fn a_custom_strategy_callback_decides_list_merging() {
    let original = json!({"items": [{"id": 1, "v": "a"}], "tags": ["x"]});
    let patch = json!({"items": [{"id": 1, "v": "b"}], "tags": ["y"]});
    let strategy = |path: &[&str]| match path {
        ["items"] => ListStrategy::MergeByKey("id"),
        ["tags"] => ListStrategy::MergePrimitives,
        _ => ListStrategy::Replace,
    };
    let out = strategic_merge(&original, &patch, &strategy).unwrap();
    assert_eq!(
        out,
        json!({"items": [{"id": 1, "v": "b"}], "tags": ["y", "x"]})
    );
}

#[test]
fn absurdly_deep_patches_are_rejected_instead_of_overflowing_the_stack() {
    let mut patch = json!({"leaf": true});
    for _ in 0..(MAX_DEPTH + 10) {
        patch = json!({ "nested": patch });
    }
    let err = apply("Pod", json!({}), patch).unwrap_err();
    assert!(matches!(err, StrategicMergeError::TooDeep { .. }));
}
