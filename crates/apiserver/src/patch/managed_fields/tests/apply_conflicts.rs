//! Server-side apply between managers: who conflicts with whom, the upstream messages,
//! shared ownership and `force`.

use super::*;
use serde_json::json;

#[test]
fn two_managers_applying_different_fields_do_not_conflict() {
    let first = apply_ok(None, &configmap(json!({"a": "1"})), "mgr-a", T1);
    let second = apply_ok(Some(&first), &configmap(json!({"b": "2"})), "mgr-b", T2);
    assert_eq!(second["data"], json!({"a": "1", "b": "2"}));
    assert_eq!(
        owned_by(&second, "mgr-a", Operation::Apply),
        vec![".data.a"]
    );
    assert_eq!(
        owned_by(&second, "mgr-b", Operation::Apply),
        vec![".data.b"]
    );
}

#[test]
fn applying_a_field_another_manager_set_differently_conflicts_with_the_upstream_message() {
    let live = created(configmap(json!({"mode": "a"})), "kubectl-client-side-apply");
    let conflicts = apply_err(&live, &configmap(json!({"mode": "b"})), "my-controller");
    assert_eq!(
        conflicts.message(),
        "Apply failed with 1 conflict: conflict with \"kubectl-client-side-apply\" using v1: .data.mode"
    );
    assert_eq!(
        conflicts.causes(),
        vec![(
            "FieldManagerConflict".to_owned(),
            "conflict with \"kubectl-client-side-apply\" using v1".to_owned(),
            ".data.mode".to_owned(),
        )]
    );
    let expected: Value = serde_json::from_str(
        r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Apply failed with 1 conflict: conflict with \"kubectl-client-side-apply\" using v1: .data.mode","reason":"Conflict","details":{"causes":[{"reason":"FieldManagerConflict","message":"conflict with \"kubectl-client-side-apply\" using v1","field":".data.mode"}]},"code":409}"#,
    )
    .unwrap_or_default();
    assert_eq!(conflicts.to_status(), expected);
    assert_eq!(conflicts.to_string(), conflicts.message());
}

#[test]
fn applying_the_value_another_manager_already_set_shares_ownership() {
    let live = created(configmap(json!({"mode": "a"})), "kubectl-client-side-apply");
    let result = apply_ok(Some(&live), &configmap(json!({"mode": "a"})), "me", T2);
    assert_eq!(
        owned_by(&result, "me", Operation::Apply),
        vec![".data.mode"]
    );
    assert_eq!(
        owned_by(&result, "kubectl-client-side-apply", Operation::Update),
        vec![".data", ".data.mode"]
    );
}

#[test]
fn force_takes_ownership_from_the_other_manager() {
    let live = created(configmap(json!({"mode": "a", "keep": "x"})), "old");
    let result = apply(
        Some(&live),
        &configmap(json!({"mode": "b"})),
        true,
        &ctx("new", T2),
        &merge,
    );
    let Ok(result) = result else {
        panic!("force must not fail");
    };
    assert_eq!(result["data"], json!({"mode": "b", "keep": "x"}));
    assert_eq!(
        owned_by(&result, "new", Operation::Apply),
        vec![".data.mode"]
    );
    assert_eq!(
        owned_by(&result, "old", Operation::Update),
        vec![".data", ".data.keep"]
    );
    // Now the old owner is the one who conflicts.
    let mut edit = result.clone();
    edit["data"]["mode"] = json!("c");
    let mut as_update = edit.clone();
    record_update(Some(&result), &mut as_update, &ctx("old", T3));
    assert_eq!(
        owned_by(&as_update, "new", Operation::Apply),
        Vec::<String>::new()
    );
}

#[test]
fn several_conflicts_are_grouped_by_manager_in_sorted_order() {
    let live = created(
        json!({"metadata": {"name": "o"}, "spec": {"x": 1, "y": 1}}),
        "mgr-b",
    );
    let live = apply_ok(
        Some(&live),
        &json!({"metadata": {"name": "o"}, "spec": {"z": 1}}),
        "mgr-a",
        T2,
    );
    let conflicts = apply_err(
        &live,
        &json!({"metadata": {"name": "o"}, "spec": {"x": 2, "y": 2, "z": 2}}),
        "me",
    );
    assert_eq!(
        conflicts.message(),
        "Apply failed with 3 conflicts: conflicts with \"mgr-a\":\n- .spec.z\nconflicts with \"mgr-b\" using v1:\n- .spec.x\n- .spec.y"
    );
    let fields: Vec<String> = conflicts.causes().into_iter().map(|c| c.2).collect();
    assert_eq!(fields, vec![".spec.z", ".spec.x", ".spec.y"]);
}

#[test]
fn conflict_messages_match_upstream_for_times_and_subresources() {
    let foo = Conflict {
        manager: "foo".into(),
        operation: Operation::Update,
        api_version: "v1".into(),
        time: Some("2001-02-03T04:05:06Z".into()),
        subresource: None,
        field: ".spec.replicas".into(),
    };
    let bar = Conflict {
        manager: "bar".into(),
        operation: Operation::Apply,
        api_version: "v1".into(),
        time: None,
        subresource: None,
        field: ".metadata.labels.app".into(),
    };
    let one = ApplyConflicts {
        conflicts: vec![foo.clone()],
    };
    assert_eq!(
        one.message(),
        "Apply failed with 1 conflict: conflict with \"foo\" using v1 at 2001-02-03T04:05:06Z: .spec.replicas"
    );
    let two = ApplyConflicts {
        conflicts: vec![foo.clone(), bar],
    };
    assert_eq!(
        two.message(),
        "Apply failed with 2 conflicts: conflicts with \"bar\":\n- .metadata.labels.app\nconflicts with \"foo\" using v1 at 2001-02-03T04:05:06Z:\n- .spec.replicas"
    );
    assert_eq!(two.causes()[1].1, "conflict with \"bar\"");
    let scale = ApplyConflicts {
        conflicts: vec![Conflict {
            subresource: Some("scale".into()),
            ..foo
        }],
    };
    assert_eq!(
        scale.causes()[0].1,
        "conflict with \"foo\" with subresource \"scale\" using v1 at 2001-02-03T04:05:06Z"
    );
}
