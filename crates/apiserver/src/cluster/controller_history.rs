//! ControllerRevisions, the template history of StatefulSets and DaemonSets
//! (kube-controller-manager's `pkg/controller/history`): one apps/v1 ControllerRevision
//! `<owner>-<hash>` per template the owner has had, controlled by it, labelled with the
//! template's labels plus the hash label, annotated as the owner is, with `data` the
//! strategic merge patch that restores the template (`{"spec":{"template":{..., "$patch":
//! "replace"}}}`, what `kubectl rollout undo` applies) and `revision` numbers counting up.
//! Going back to an earlier template gives its revision the next number; the oldest
//! revisions no Pod runs are deleted beyond `revisionHistoryLimit` (10).

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use super::controller_utils::{controller_ref, meta, owned_by};
use super::writer::{CONTROLLER_REVISIONS, Writer};

/// The revision to record for an owner's current template.
pub(super) struct Revision<'a> {
    /// The StatefulSet or DaemonSet.
    pub(super) owner: &'a Value,
    /// Its name, `<owner>-<hash>`.
    pub(super) name: &'a str,
    /// The label naming the hash (`controller.kubernetes.io/hash` for StatefulSets,
    /// `controller-revision-hash` for DaemonSets) and its value.
    pub(super) hash_label: (&'static str, &'a str),
}

/// The patch that restores `owner`'s template (`getPatch`).
fn patch(owner: &Value) -> Value {
    let mut template = owner
        .pointer("/spec/template")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    template.insert("$patch".to_owned(), json!("replace"));
    json!({"spec": {"template": template}})
}

fn number(revision: &Value) -> i64 {
    revision
        .get("revision")
        .and_then(Value::as_i64)
        .unwrap_or(0)
}

/// Makes `current` the owner's newest revision (creating it, or renumbering an earlier
/// one with the same template), then deletes the oldest revisions beyond the history
/// limit that are neither current nor named in `live` (those Pods run).
pub(super) fn record(
    writer: &Writer<'_>,
    current: &Revision<'_>,
    revisions: &[&Value],
    live: &BTreeSet<String>,
) {
    let owner = current.owner;
    let namespace = meta(owner, "namespace");
    let owned = owned_by(owner, revisions);
    let data = patch(owner);
    let newest = owned.iter().map(|r| number(r)).max().unwrap_or(0);
    match owned.iter().find(|r| r.get("data") == Some(&data)) {
        Some(same) if number(same) < newest => {
            writer.update(
                CONTROLLER_REVISIONS,
                Some(namespace),
                meta(same, "name"),
                meta(same, "uid"),
                false,
                |object| {
                    object.insert("revision".to_owned(), json!(newest + 1));
                    true
                },
            );
        }
        Some(_) => {}
        None => {
            let mut labels = owner
                .pointer("/spec/template/metadata/labels")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            labels.insert(current.hash_label.0.to_owned(), json!(current.hash_label.1));
            let mut metadata = Map::new();
            metadata.insert("name".to_owned(), json!(current.name));
            metadata.insert("namespace".to_owned(), json!(namespace));
            metadata.insert("labels".to_owned(), Value::Object(labels));
            if let Some(annotations) = owner.pointer("/metadata/annotations") {
                metadata.insert("annotations".to_owned(), annotations.clone());
            }
            metadata.insert("ownerReferences".to_owned(), json!([controller_ref(owner)]));
            let revision = json!({
                "apiVersion": "apps/v1", "kind": "ControllerRevision",
                "metadata": metadata, "data": data, "revision": newest + 1,
            });
            writer.create(CONTROLLER_REVISIONS, Some(namespace), revision);
        }
    }
    truncate(writer, owner, &owned, current.name, live);
}

/// Deletes the oldest revisions neither current nor live beyond `revisionHistoryLimit`.
fn truncate(
    writer: &Writer<'_>,
    owner: &Value,
    owned: &[&Value],
    current: &str,
    live: &BTreeSet<String>,
) {
    let limit = owner
        .pointer("/spec/revisionHistoryLimit")
        .and_then(Value::as_u64)
        .unwrap_or(10);
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    let mut old: Vec<&Value> = owned
        .iter()
        .copied()
        .filter(|r| meta(r, "name") != current && !live.contains(meta(r, "name")))
        .collect();
    if old.len() <= limit {
        return;
    }
    old.sort_by_key(|r| number(r));
    let surplus = old.len() - limit;
    for revision in &old[..surplus] {
        writer.delete(
            CONTROLLER_REVISIONS,
            Some(meta(revision, "namespace")),
            meta(revision, "name"),
            meta(revision, "uid"),
            None,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_patch_replaces_the_template() {
        let set =
            json!({"spec": {"replicas": 3, "template": {"metadata": {"labels": {"a": "b"}}}}});
        assert_eq!(
            patch(&set),
            json!({"spec": {"template": {"$patch": "replace", "metadata": {"labels": {"a": "b"}}}}})
        );
    }
}
