//! OpenAPI documents, just enough for kubectl: a v3 index and per-group-version documents
//! whose PATCH operations declare the `fieldValidation` parameter and their
//! `x-kubernetes-group-version-kind`, so kubectl relies on server-side validation
//! (apiserver-semantics §2.3). No schemas are served: `kubectl explain` does not work, and
//! kubectl computes client-side apply patches from its compiled-in types (built-ins) or as
//! merge patches (custom resources), exactly as it does when a schema is absent.

use serde_json::{Map, Value, json};

use super::Registry;

/// The `/openapi/v3` index: one entry per group version, with a content hash so clients
/// refetch when resources change.
pub(crate) fn v3_index(registry: &Registry) -> Value {
    let mut paths = Map::new();
    for resource in registry.all() {
        let key = if resource.group.is_empty() {
            format!("api/{}", resource.version)
        } else {
            format!("apis/{}/{}", resource.group, resource.version)
        };
        if paths.contains_key(&key) {
            continue;
        }
        let document = v3_document(registry, &key).unwrap_or(Value::Null);
        let hash = content_hash(&document.to_string());
        paths.insert(
            key.clone(),
            json!({"serverRelativeURL": format!("/openapi/v3/{key}?hash={hash}")}),
        );
    }
    json!({"paths": paths})
}

/// The document for one group version (`api/v1` or `apis/{g}/{v}`), or `None` if nothing
/// is served there.
pub(crate) fn v3_document(registry: &Registry, key: &str) -> Option<Value> {
    let (group, version) = match key.split('/').collect::<Vec<_>>().as_slice() {
        ["api", version] => (String::new(), (*version).to_owned()),
        ["apis", group, version] => ((*group).to_owned(), (*version).to_owned()),
        _ => return None,
    };
    let mut paths = Map::new();
    let prefix = format!("/{key}");
    for resource in registry
        .all()
        .iter()
        .filter(|r| r.group == group && r.version == version)
    {
        let item_path = if resource.namespaced {
            format!(
                "{prefix}/namespaces/{{namespace}}/{}/{{name}}",
                resource.plural
            )
        } else {
            format!("{prefix}/{}/{{name}}", resource.plural)
        };
        let gvk =
            json!({"group": resource.group, "version": resource.version, "kind": resource.kind});
        let operation = |id: &str| {
            json!({
                "operationId": format!("{id}{}", resource.kind),
                "x-kubernetes-group-version-kind": gvk,
                "parameters": [
                    {"name": "dryRun", "in": "query", "schema": {"type": "string", "uniqueItems": true}},
                    {"name": "fieldManager", "in": "query", "schema": {"type": "string", "uniqueItems": true}},
                    {"name": "fieldValidation", "in": "query", "schema": {"type": "string", "uniqueItems": true}},
                ],
                "responses": {"200": {"description": "OK"}},
            })
        };
        let mut patch = operation("patch");
        if let Some(params) = patch["parameters"].as_array_mut() {
            params.push(json!({"name": "force", "in": "query", "schema": {"type": "boolean", "uniqueItems": true}}));
        }
        patch["requestBody"] = json!({"content": {
            "application/json-patch+json": {"schema": {"type": "object"}},
            "application/merge-patch+json": {"schema": {"type": "object"}},
            "application/apply-patch+yaml": {"schema": {"type": "object"}},
        }});
        paths.insert(
            item_path,
            json!({"get": operation("read"), "put": operation("replace"), "patch": patch, "delete": operation("delete")}),
        );
    }
    if paths.is_empty() {
        return None;
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.37.0"},
        "paths": paths,
        "components": {"schemas": {}},
    }))
}

/// A stable hex hash (FNV-1a 64) of a document: the OpenAPI index's `hash` parameter and
/// the aggregated discovery ETag.
pub(crate) fn content_hash(text: &str) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in text.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{hash:016X}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_lists_every_group_version_with_a_hash() {
        let index = v3_index(&Registry::new());
        let url = index["paths"]["apis/apps/v1"]["serverRelativeURL"]
            .as_str()
            .unwrap();
        assert!(url.starts_with("/openapi/v3/apis/apps/v1?hash="));
        assert!(index["paths"]["api/v1"].is_object());
    }

    #[test]
    fn patch_operations_declare_field_validation_and_their_kind() {
        let document = v3_document(&Registry::new(), "apis/apps/v1").unwrap();
        let patch =
            &document["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"];
        assert_eq!(
            patch["x-kubernetes-group-version-kind"]["kind"],
            "Deployment"
        );
        assert!(
            patch["parameters"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["name"] == "fieldValidation")
        );
        assert!(v3_document(&Registry::new(), "apis/nosuch/v1").is_none());
    }
}
