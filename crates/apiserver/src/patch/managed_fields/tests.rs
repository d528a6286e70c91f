//! The managedFields tests: updates, applies, field sets, subresources and metadata;
//! conflicts between managers are in [`apply_conflicts`].

mod apply_conflicts;

use super::*;
use serde_json::json;

const T1: &str = "2024-05-01T10:00:00Z";
const T2: &str = "2024-05-01T10:05:00Z";
const T3: &str = "2024-05-01T10:10:00Z";

fn list_key(path: &[&str]) -> Option<ListKeys> {
    match path {
        ["spec", "containers"] | ["spec", "template", "spec", "containers"] => Some(&["name"]),
        ["spec", "template", "spec", "containers", "ports"] => Some(&["containerPort"]),
        ["spec", "ports"] => Some(&["port", "protocol"]),
        _ => None,
    }
}

/// No atomic structs (tests that need one say so).
fn atomic(_: &[&str]) -> bool {
    false
}

fn ctx<'a>(manager: &'a str, time: &'a str) -> WriteContext<'a> {
    WriteContext {
        manager,
        api_version: "v1",
        subresource: None,
        time,
        scope: FieldScope::All,
        list_key: &list_key,
        atomic: &atomic,
        custom_resource: false,
    }
}

/// A small strategic-merge stand-in: objects merge, `null` deletes, keyed lists merge
/// by key, other lists are replaced.
fn merge(live: &Value, patch: &Value) -> Value {
    fn at(live: &Value, patch: &Value, names: &mut Vec<String>) -> Value {
        match (live, patch) {
            (Value::Object(live_fields), Value::Object(patch_fields)) => {
                let mut out = live_fields.clone();
                for (field, patch_value) in patch_fields {
                    if patch_value.is_null() {
                        out.remove(field);
                        continue;
                    }
                    names.push(field.clone());
                    let merged = match out.get(field) {
                        Some(live_value) => at(live_value, patch_value, names),
                        None => patch_value.clone(),
                    };
                    names.pop();
                    out.insert(field.clone(), merged);
                }
                Value::Object(out)
            }
            (Value::Array(live_items), Value::Array(patch_items)) => {
                let refs: Vec<&str> = names.iter().map(String::as_str).collect();
                let Some(&[key, ..]) = list_key(&refs) else {
                    return patch.clone();
                };
                let mut out = live_items.clone();
                for patch_item in patch_items {
                    let wanted = patch_item.get(key);
                    match out.iter_mut().find(|item| item.get(key) == wanted) {
                        Some(existing) => *existing = at(existing, patch_item, names),
                        None => out.push(patch_item.clone()),
                    }
                }
                Value::Array(out)
            }
            _ => patch.clone(),
        }
    }
    at(live, patch, &mut Vec::new())
}

fn configmap(data: Value) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "cfg", "namespace": "default"},
        "data": data,
    })
}

fn entries(obj: &Value) -> Vec<ManagedFieldsEntry> {
    read_managed_fields(obj).unwrap_or_default()
}

fn owned_by(obj: &Value, manager: &str, operation: Operation) -> Vec<String> {
    entries(obj)
        .into_iter()
        .find(|e| e.manager == manager && e.operation == operation)
        .map(|e| e.fields.to_path_strings())
        .unwrap_or_default()
}

fn apply_ok(live: Option<&Value>, applied: &Value, manager: &str, time: &str) -> Value {
    match apply(live, applied, false, &ctx(manager, time), &merge) {
        Ok(result) => result,
        Err(conflicts) => panic!("unexpected conflicts: {}", conflicts.message()),
    }
}

fn apply_err(live: &Value, applied: &Value, manager: &str) -> ApplyConflicts {
    match apply(Some(live), applied, false, &ctx(manager, T3), &merge) {
        Ok(result) => panic!("expected conflicts, got {result}"),
        Err(conflicts) => conflicts,
    }
}

fn created(obj: Value, manager: &str) -> Value {
    let mut obj = obj;
    record_update(None, &mut obj, &ctx(manager, T1));
    obj
}

fn deployment(containers: Value) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"template": {"spec": {"containers": containers}}},
    })
}

#[test]
fn create_via_update_records_every_set_field_in_the_upstream_wire_shape() {
    let mut cm = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "cfg", "namespace": "default", "uid": "u-1",
            "resourceVersion": "7", "creationTimestamp": T1, "generation": 1,
            "labels": {"app": "web"},
        },
        "data": {"mode": "a", "level": "1"},
    });
    record_update(None, &mut cm, &ctx("kubectl-create", T1));
    assert_eq!(
        cm["metadata"]["managedFields"],
        json!([{
            "manager": "kubectl-create",
            "operation": "Update",
            "apiVersion": "v1",
            "time": T1,
            "fieldsType": "FieldsV1",
            "fieldsV1": {
                "f:data": {".": {}, "f:level": {}, "f:mode": {}},
                "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
            },
        }])
    );
}

#[test]
fn update_moves_changed_fields_to_the_writer_and_drops_emptied_entries() {
    let old = created(
        json!({"metadata": {"name": "d"}, "spec": {"replicas": 1}}),
        "a",
    );
    let mut new = old.clone();
    new["spec"]["replicas"] = json!(3);
    record_update(Some(&old), &mut new, &ctx("b", T2));
    let all = entries(&new);
    assert_eq!(all.len(), 1, "a's entry became empty and is dropped");
    assert_eq!(all[0].manager, "b");
    assert_eq!(all[0].fields.to_path_strings(), vec![".spec.replicas"]);
}

#[test]
fn update_that_changes_nothing_keeps_the_writers_entry_and_time() {
    let old = created(configmap(json!({"a": "1"})), "a");
    let mut new = old.clone();
    record_update(Some(&old), &mut new, &ctx("a", T2));
    assert_eq!(new, old);
    let mut again = old.clone();
    record_update(Some(&old), &mut again, &ctx("b", T2));
    assert_eq!(again, old, "a no-op write by someone else adds no entry");
}

#[test]
fn update_that_removes_a_field_releases_it_from_every_owner() {
    let old = created(configmap(json!({"a": "1", "b": "2"})), "a");
    let mut new = configmap(json!({"a": "1"}));
    if let Some(meta) = new["metadata"].as_object_mut() {
        meta.insert(
            "managedFields".into(),
            old["metadata"]["managedFields"].clone(),
        );
    }
    record_update(Some(&old), &mut new, &ctx("b", T2));
    assert_eq!(
        owned_by(&new, "a", Operation::Update),
        vec![".data", ".data.a"]
    );
    assert!(owned_by(&new, "b", Operation::Update).is_empty());
}

#[test]
fn dropping_a_field_from_the_apply_config_removes_it_when_nobody_else_owns_it() {
    let mut first = configmap(json!({"a": "1", "b": "2"}));
    first["metadata"]["labels"] = json!({"team": "x"});
    let live = apply_ok(None, &first, "me", T1);
    let result = apply_ok(Some(&live), &configmap(json!({"a": "1"})), "me", T2);
    assert_eq!(result["data"], json!({"a": "1"}));
    assert_eq!(
        result["metadata"].get("labels"),
        None,
        "labels emptied by the removal go too"
    );
    assert_eq!(owned_by(&result, "me", Operation::Apply), vec![".data.a"]);
}

#[test]
fn dropping_a_field_keeps_it_when_another_manager_owns_it() {
    // "editor" owns b through an update, "other" co-owns a through an apply.
    let live = created(configmap(json!({"b": "2"})), "editor");
    let live = apply_ok(
        Some(&live),
        &configmap(json!({"a": "1", "b": "2"})),
        "me",
        T1,
    );
    let live = apply_ok(Some(&live), &configmap(json!({"a": "1"})), "other", T2);
    let result = apply_ok(Some(&live), &configmap(json!({})), "me", T3);
    assert_eq!(result["data"], json!({"a": "1", "b": "2"}));
    assert!(owned_by(&result, "me", Operation::Apply).is_empty());
    assert_eq!(
        owned_by(&result, "other", Operation::Apply),
        vec![".data.a"]
    );
    assert_eq!(
        owned_by(&result, "editor", Operation::Update),
        vec![".data", ".data.b"]
    );
}

#[test]
fn keyed_list_items_are_owned_separately_so_two_managers_can_own_different_containers() {
    let live = apply_ok(
        None,
        &deployment(json!([{"name": "web", "image": "nginx:1"}])),
        "team-web",
        T1,
    );
    let live = apply_ok(
        Some(&live),
        &deployment(json!([{"name": "sidecar", "image": "envoy:1"}])),
        "team-mesh",
        T2,
    );
    assert_eq!(
        live["spec"]["template"]["spec"]["containers"],
        json!([{"name": "web", "image": "nginx:1"}, {"name": "sidecar", "image": "envoy:1"}])
    );
    assert_eq!(
        owned_by(&live, "team-mesh", Operation::Apply),
        vec![
            ".spec.template.spec.containers[name=\"sidecar\"]",
            ".spec.template.spec.containers[name=\"sidecar\"].image",
            ".spec.template.spec.containers[name=\"sidecar\"].name",
        ]
    );
    // Each team changes its own container freely ...
    let live = apply_ok(
        Some(&live),
        &deployment(json!([{"name": "web", "image": "nginx:2"}])),
        "team-web",
        T3,
    );
    // ... but not the other's.
    let conflicts = apply_err(
        &live,
        &deployment(json!([{"name": "web", "image": "evil:1"}])),
        "team-mesh",
    );
    // Only the changed image conflicts; co-applying the item itself does not.
    assert_eq!(
        conflicts.message(),
        "Apply failed with 1 conflict: conflict with \"team-web\": .spec.template.spec.containers[name=\"web\"].image"
    );
}

#[test]
fn dropping_a_container_from_the_apply_config_removes_only_that_item() {
    let live = apply_ok(
        None,
        &deployment(json!([{"name": "web", "image": "a"}, {"name": "old", "image": "b"}])),
        "me",
        T1,
    );
    let live = apply_ok(
        Some(&live),
        &deployment(json!([{"name": "mine", "image": "c"}])),
        "other",
        T2,
    );
    let result = apply_ok(
        Some(&live),
        &deployment(json!([{"name": "web", "image": "a"}])),
        "me",
        T3,
    );
    assert_eq!(
        result["spec"]["template"]["spec"]["containers"],
        json!([{"name": "web", "image": "a"}, {"name": "mine", "image": "c"}])
    );
}

#[test]
fn fields_v1_round_trips_through_field_sets() {
    let doc = json!({
        "f:data": {".": {}, "f:mode": {}},
        "f:metadata": {
            "f:annotations": {
                ".": {},
                "f:kubectl.kubernetes.io/last-applied-configuration": {},
            },
            "f:finalizers": {".": {}, "v:\"example.com/x\"": {}},
        },
        "f:spec": {
            "f:containers": {
                "k:{\"name\":\"c1\"}": {".": {}, "f:image": {}, "f:name": {}},
                "k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {},
            },
            "f:args": {"i:0": {}},
        },
    });
    let set = FieldSet::from_fields_v1(&doc).unwrap_or_default();
    assert_eq!(set.len(), 11);
    assert!(set.contains(&[
        PathElement::Field("spec".into()),
        PathElement::Field("containers".into()),
        PathElement::key("name", &json!("c1")),
    ]));
    assert_eq!(set.to_fields_v1(), doc);
    assert_eq!(FieldSet::new().to_fields_v1(), json!({}));
    assert!(
        set.to_path_strings()
            .contains(&".spec.containers[containerPort=80,protocol=\"TCP\"]".to_owned())
    );
    assert!(
        set.to_path_strings()
            .contains(&".metadata.finalizers[=\"example.com/x\"]".to_owned())
    );
}

#[test]
fn malformed_fields_v1_documents_are_rejected() {
    for bad in [
        json!([]),
        json!({"x:foo": {}}),
        json!({"k:not-json": {}}),
        json!({"k:[1]": {}}),
        json!({"i:minus": {}}),
        json!({"f:a": 3}),
    ] {
        assert!(
            FieldSet::from_fields_v1(&bad).is_err(),
            "{bad} must be rejected"
        );
    }
}

#[test]
fn managed_fields_reset_marker_clears_tracking_before_recording_the_write() {
    let old = created(configmap(json!({"a": "1"})), "a");
    let mut new = old.clone();
    new["metadata"]["managedFields"] = json!([{}]);
    record_update(Some(&old), &mut new, &ctx("b", T2));
    assert_eq!(new["metadata"].get("managedFields"), None);

    let mut changed = old.clone();
    changed["metadata"]["managedFields"] = json!([{}]);
    changed["data"]["c"] = json!("3");
    record_update(Some(&old), &mut changed, &ctx("b", T2));
    let all = entries(&changed);
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].fields.to_path_strings(), vec![".data.c"]);
}

#[test]
fn managed_fields_sent_by_a_client_are_kept_and_an_empty_list_is_not_a_reset() {
    let old = created(configmap(json!({"a": "1"})), "a");
    let custom = json!([{
        "manager": "someone", "operation": "Apply", "apiVersion": "v1", "time": T1,
        "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:a": {}}},
    }]);
    let mut new = old.clone();
    new["metadata"]["managedFields"] = custom.clone();
    record_update(Some(&old), &mut new, &ctx("b", T2));
    assert_eq!(new["metadata"]["managedFields"], custom);

    let mut emptied = old.clone();
    emptied["metadata"]["managedFields"] = json!([]);
    record_update(Some(&old), &mut emptied, &ctx("b", T2));
    assert_eq!(emptied, old);
}

#[test]
fn status_subresource_writes_own_only_status_and_are_named_by_subresource() {
    let old = created(
        json!({"metadata": {"name": "p"}, "spec": {"x": 1}, "status": {"phase": "Pending"}}),
        "creator",
    );
    let mut new = old.clone();
    new["status"]["phase"] = json!("Running");
    new["spec"]["x"] = json!(2);
    let status_ctx = WriteContext {
        subresource: Some("status"),
        scope: FieldScope::OnlyStatus,
        ..ctx("kubelet", T2)
    };
    record_update(Some(&old), &mut new, &status_ctx);
    let kubelet: Vec<ManagedFieldsEntry> = entries(&new)
        .into_iter()
        .filter(|e| e.manager == "kubelet")
        .collect();
    assert_eq!(kubelet.len(), 1);
    assert_eq!(kubelet[0].subresource.as_deref(), Some("status"));
    assert_eq!(kubelet[0].fields.to_path_strings(), vec![".status.phase"]);
    assert_eq!(
        owned_by(&new, "creator", Operation::Update),
        vec![".spec.x"],
        "spec.x changed outside the scope, so its owner keeps it"
    );

    let conflicts = apply_err(
        &new,
        &json!({"metadata": {"name": "p"}, "status": {"phase": "Failed"}}),
        "me",
    );
    assert_eq!(
        conflicts.message(),
        "Apply failed with 1 conflict: conflict with \"kubelet\" with subresource \"status\" using v1: .status.phase"
    );

    let mut main = json!({"metadata": {"name": "q"}, "spec": {"x": 1}, "status": {"y": 1}});
    let main_ctx = WriteContext {
        scope: FieldScope::ExcludeStatus,
        ..ctx("creator", T1)
    };
    record_update(None, &mut main, &main_ctx);
    assert_eq!(
        owned_by(&main, "creator", Operation::Update),
        vec![".spec.x"]
    );
}

#[test]
fn identifying_and_server_controlled_metadata_is_never_owned() {
    let obj = json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {
            "name": "s", "namespace": "n", "uid": "u", "resourceVersion": "1",
            "generation": 2, "creationTimestamp": T1, "selfLink": "/x",
            "managedFields": [{"manager": "x"}],
            "labels": {"a": "b"}, "finalizers": ["f"],
        },
        "type": "Opaque",
    });
    let fields = fields_of(&obj, &list_key);
    assert_eq!(
        fields.to_path_strings(),
        vec![
            ".metadata.finalizers[=\"f\"]",
            ".metadata.labels.a",
            ".type"
        ],
        "finalizers are a set: each member is owned by value"
    );
}

#[test]
fn non_object_and_malformed_inputs_are_treated_as_empty_without_panicking() {
    for junk in [
        json!(3),
        json!("s"),
        json!(null),
        json!([1, 2]),
        json!({"metadata": 5}),
    ] {
        assert!(fields_of(&junk, &list_key).is_empty());
        let mut target = junk.clone();
        record_update(Some(&junk), &mut target, &ctx("m", T1));
        if !junk.is_object() {
            assert_eq!(target, junk, "non-objects are left untouched");
        }
        // A non-object config is an empty config; a non-object live object is absent.
        let result = apply(Some(&junk), &junk, false, &ctx("m", T1), &merge);
        assert!(result.is_ok());
    }
    let mut live = configmap(json!({"a": "1"}));
    live["metadata"]["managedFields"] = json!([
        {"manager": "x", "operation": "Bogus", "apiVersion": "v1", "fieldsType": "FieldsV1"},
        "not an entry",
    ]);
    assert!(read_managed_fields(&live).is_err());
    let result = apply_ok(Some(&live), &configmap(json!({"a": "2"})), "me", T2);
    assert_eq!(owned_by(&result, "me", Operation::Apply), vec![".data.a"]);
    live["metadata"]["managedFields"] = json!("nope");
    assert_eq!(
        read_managed_fields(&live),
        Err(ManagedFieldsError::NotAList)
    );
    let result = apply_ok(Some(&live), &configmap(json!({"a": "2"})), "me", T2);
    assert_eq!(entries(&result).len(), 1);
}

#[test]
fn lists_without_usable_keys_are_owned_as_one_atomic_leaf() {
    let obj = deployment(json!([{"image": "no-name"}, {"name": "x"}]));
    assert_eq!(
        fields_of(&obj, &list_key).to_path_strings(),
        vec![".spec.template.spec.containers"]
    );
    let duplicates = deployment(json!([{"name": "x"}, {"name": "x"}]));
    assert_eq!(fields_of(&duplicates, &list_key).len(), 1);
    let plain = json!({"spec": {"args": ["a", "b"]}});
    assert_eq!(
        fields_of(&plain, &list_key).to_path_strings(),
        vec![".spec.args"]
    );
}

#[test]
fn entries_are_one_per_manager_operation_and_subresource_sorted_like_upstream() {
    let mut obj = configmap(json!({"a": "1"}));
    let beta = WriteContext {
        api_version: "v1beta1",
        ..ctx("zed", T1)
    };
    record_update(None, &mut obj, &beta);
    let old = obj.clone();
    obj["data"]["b"] = json!("2");
    record_update(Some(&old), &mut obj, &ctx("zed", T2));
    let result = apply_ok(Some(&obj), &configmap(json!({"c": "3"})), "applier", T3);
    let all = entries(&result);
    let summary: Vec<(&str, Operation, &str)> = all
        .iter()
        .map(|e| (e.manager.as_str(), e.operation, e.api_version.as_str()))
        .collect();
    assert_eq!(
        summary,
        vec![
            ("applier", Operation::Apply, "v1"),
            ("zed", Operation::Update, "v1")
        ]
    );
    assert_eq!(all[1].time.as_deref(), Some(T2));
}

#[test]
fn a_managers_own_update_entry_counts_as_another_owner_like_upstream() {
    let live = created(configmap(json!({"a": "1"})), "kubectl");
    let conflicts = apply_err(&live, &configmap(json!({"a": "2"})), "kubectl");
    assert_eq!(
        conflicts.message(),
        "Apply failed with 1 conflict: conflict with \"kubectl\" using v1: .data.a"
    );
}

#[test]
fn apply_create_returns_the_applied_object_with_its_apply_entry() {
    let applied = configmap(json!({"a": "1"}));
    let result = apply_ok(None, &applied, "me", T1);
    let mut expected = applied.clone();
    expected["metadata"]["managedFields"] = json!([{
        "manager": "me", "operation": "Apply", "apiVersion": "v1", "time": T1,
        "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:a": {}}},
    }]);
    assert_eq!(result, expected);
}

#[test]
fn manager_names_are_quoted_like_go() {
    assert_eq!(go_quote("a\"b\\c\n\u{1}é"), "\"a\\\"b\\\\c\\n\\x01é\"");
}

/// kube-apiserver v1.20 for a custom resource created with `spec: {name, any: {a}}`:
/// `{"f:spec":{".":{},"f:any":{".":{},"f:a":{}},"f:name":{}}}`; a built-in's `spec` is a
/// struct and gets no `"."`.
#[test]
fn a_custom_resources_spec_is_owned_as_a_node_by_the_write_that_creates_it() {
    let widget = json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w"}, "spec": {"name": "abc", "any": {"a": "1"}}});
    let custom = WriteContext {
        custom_resource: true,
        ..ctx("curl", T1)
    };
    let mut created = widget.clone();
    record_update(None, &mut created, &custom);
    assert_eq!(
        created["metadata"]["managedFields"][0]["fieldsV1"],
        json!({"f:spec": {".": {}, "f:any": {".": {}, "f:a": {}}, "f:name": {}}})
    );
    let mut changed = created.clone();
    changed["spec"]["name"] = json!("xyz");
    record_update(Some(&created), &mut changed, &ctx("other", T2));
    let other: Vec<ManagedFieldsEntry> = entries(&changed)
        .into_iter()
        .filter(|e| e.manager == "other")
        .collect();
    assert_eq!(
        other[0].fields.to_fields_v1(),
        json!({"f:spec": {"f:name": {}}}),
        "an existing spec is not created again"
    );
    let mut builtin = widget;
    record_update(None, &mut builtin, &ctx("curl", T1));
    assert_eq!(
        builtin["metadata"]["managedFields"][0]["fieldsV1"],
        json!({"f:spec": {"f:any": {".": {}, "f:a": {}}, "f:name": {}}})
    );
}

/// kube-apiserver keys a Service port applied without `protocol` by its default, TCP, and
/// the applier owns it (`k:{"port":80,"protocol":"TCP"}`), before defaulting fills it in.
#[test]
fn an_applied_port_without_protocol_is_owned_under_its_default_key() {
    let service = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
        "spec": {"ports": [{"port": 80, "name": "http"}]}});
    let applied = apply_ok(None, &service, "alice", T1);
    assert_eq!(
        applied["metadata"]["managedFields"][0]["fieldsV1"],
        json!({"f:spec": {"f:ports": {"k:{\"port\":80,\"protocol\":\"TCP\"}": {
            ".": {}, "f:name": {}, "f:port": {}}}}})
    );
}

/// kube-apiserver owns an atomic struct (a LabelSelector) whole, `"f:selector":{}`, and an
/// atomic list item (an OwnerReference) as `k:{"uid":...}:{}`.
#[test]
fn atomic_structs_are_owned_whole() {
    let atomic = |path: &[&str]| matches!(path, ["spec", "selector"]);
    let context = WriteContext {
        atomic: &atomic,
        ..ctx("kubectl", T1)
    };
    let mut created = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"selector": {"matchLabels": {"app": "d"}}, "replicas": 1}});
    record_update(None, &mut created, &context);
    assert_eq!(
        created["metadata"]["managedFields"][0]["fieldsV1"],
        json!({"f:spec": {"f:replicas": {}, "f:selector": {}}})
    );
    let applied = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"selector": {"matchLabels": {"app": "other"}}}});
    let conflicts = match apply(
        Some(&created),
        &applied,
        false,
        &WriteContext {
            atomic: &atomic,
            ..ctx("applier", T2)
        },
        &merge,
    ) {
        Ok(result) => panic!("expected a conflict, got {result}"),
        Err(conflicts) => conflicts,
    };
    assert_eq!(
        conflicts.message(),
        "Apply failed with 1 conflict: conflict with \"kubectl\" using v1: .spec.selector"
    );
}

/// Applies of a list-map, a second manager taking some items, and a re-apply that drops
/// and changes items give the same outcome for 4 items (the scanned path) and 600 (the
/// indexed one), entry for entry, the outcome a reader of the rules expects.
#[test]
fn a_list_map_of_many_items_applies_as_a_small_one_does() {
    for n in [4u32, 600] {
        let port = |i: u32, host: Option<&str>| match host {
            Some(host) => json!({"containerPort": 1000 + i, "hostPort": host}),
            None => json!({"containerPort": 1000 + i}),
        };
        let container = |ports: Vec<Value>| deployment(json!([{"name": "main", "ports": ports}]));
        let alice_first = container((0..n).map(|i| port(i, Some("v"))).collect());
        let live = apply_ok(None, &alice_first, "alice", T1);
        let bob: Vec<Value> = (0..n).step_by(3).map(|i| port(i, Some("b"))).collect();
        let live = match apply(Some(&live), &container(bob), true, &ctx("bob", T2), &merge) {
            Ok(result) => result,
            Err(conflicts) => panic!("forced: {}", conflicts.message()),
        };
        // Alice drops every 4th port, changes every 5th, and leaves bob's values alone.
        let kept = |i: &u32| !i.is_multiple_of(4);
        let alice_again = container(
            (0..n)
                .filter(kept)
                .map(|i| match (i % 3, i % 5) {
                    (0, _) => port(i, None),
                    (_, 0) => port(i, Some("w")),
                    _ => port(i, Some("v")),
                })
                .collect(),
        );
        let result = apply_ok(Some(&live), &alice_again, "alice", T3);

        let expected_ports: Vec<Value> = (0..n)
            .filter(|i| kept(i) || i % 3 == 0)
            .map(|i| match (i % 3, i % 5) {
                (0, _) => port(i, Some("b")),
                (_, 0) => port(i, Some("w")),
                _ => port(i, Some("v")),
            })
            .collect();
        assert_eq!(
            result["spec"]["template"]["spec"]["containers"][0]["ports"],
            Value::Array(expected_ports),
            "{n} items"
        );
        let under = ".spec.template.spec.containers[name=\"main\"]";
        let item = |i: u32| format!("{under}.ports[containerPort={}]", 1000 + i);
        let mut alice: Vec<String> = vec![under.to_owned(), format!("{under}.name")];
        for i in (0..n).filter(kept) {
            alice.push(item(i));
            alice.push(format!("{}.containerPort", item(i)));
            if i % 3 != 0 {
                alice.push(format!("{}.hostPort", item(i)));
            }
        }
        let mut bob: Vec<String> = vec![under.to_owned(), format!("{under}.name")];
        for i in (0..n).step_by(3) {
            bob.extend([
                item(i),
                format!("{}.containerPort", item(i)),
                format!("{}.hostPort", item(i)),
            ]);
        }
        for (manager, mut expected) in [("alice", alice), ("bob", bob)] {
            let mut owned = owned_by(&result, manager, Operation::Apply);
            owned.sort();
            expected.sort();
            assert_eq!(owned, expected, "{manager}, {n} items");
        }
    }
}

#[test]
fn finalizers_are_recorded_member_by_member_as_upstream_writes_them() {
    let obj = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c", "finalizers": ["example.com/a", "example.com/b"]}});
    let fields = fields_of(&obj, &list_key);
    assert_eq!(
        fields.to_path_strings(),
        vec![
            ".metadata.finalizers[=\"example.com/a\"]",
            ".metadata.finalizers[=\"example.com/b\"]"
        ]
    );
    let encoded = fields.to_fields_v1();
    assert!(
        encoded["f:metadata"]["f:finalizers"]
            .get("v:\"example.com/a\"")
            .is_some(),
        "{encoded}"
    );
}
