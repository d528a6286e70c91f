//! OpenAPI documents, just enough for kubectl: a v3 index and per-group-version documents
//! whose PATCH operations declare the `fieldValidation` parameter and their
//! `x-kubernetes-group-version-kind`, so kubectl relies on server-side validation
//! (apiserver-semantics §2.3), and component schemas of the built-in kinds (from
//! `k8s-openapi`'s schemas, under kube-apiserver's names) so `kubectl explain` works.
//! Custom resources get no schema here: kubectl computes their client-side apply patches
//! as merge patches, exactly as it does when a schema is absent.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use serde_json::{Map, Value, json};

use super::{BuiltinType, Registry, WithType, builtin_type};

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
        // The hash covers the paths and the (static, cached) schemas of the group version.
        let hash = match document_paths(registry, &key) {
            Some((paths, group, version)) => {
                let (_, schemas_hash) = builtin_schemas(&group, &version);
                content_hash(&format!("{paths}{schemas_hash}"))
            }
            None => content_hash(""),
        };
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
    let (paths, group, version) = document_paths(registry, key)?;
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.37.0"},
        "paths": paths,
        "components": {"schemas": builtin_schemas(&group, &version).0},
    }))
}

/// The paths of a group version's document, with its group and version.
fn document_paths(registry: &Registry, key: &str) -> Option<(Value, String, String)> {
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
    Some((Value::Object(paths), group, version))
}

/// The component schemas of a group version's built-in kinds (and every type they use),
/// named as kube-apiserver names them (`io.k8s.api.core.v1.Pod`), each kind's marked with
/// its `x-kubernetes-group-version-kind` (what `kubectl explain` looks up), with their
/// hash. Computed once per group version.
fn builtin_schemas(group: &str, version: &str) -> (Value, String) {
    static CACHE: OnceLock<Mutex<SchemaCache>> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    let key = (group.to_owned(), version.to_owned());
    if let Some(schemas) = crate::sync::lock(cache).get(&key) {
        return schemas.clone();
    }
    let mut generator = schemars::generate::SchemaSettings::openapi3().into_generator();
    let mut kinds = Vec::new();
    for resource in super::builtin::builtin_resources()
        .into_iter()
        .filter(|r| r.group == group && r.version == version)
    {
        if let Some(name) = builtin_type(group, &resource.kind, SchemaOf(&mut generator)) {
            kinds.push((name, resource.kind.clone()));
        }
    }
    let mut schemas = generator.take_definitions(true);
    for (name, kind) in kinds {
        if let Some(Value::Object(schema)) = schemas.get_mut(&name) {
            schema.insert(
                "x-kubernetes-group-version-kind".to_owned(),
                json!([{"group": group, "version": version, "kind": kind}]),
            );
        }
    }
    let schemas = Value::Object(schemas.into_iter().collect());
    let hash = content_hash(&schemas.to_string());
    crate::sync::lock(cache).insert(key, (schemas.clone(), hash.clone()));
    (schemas, hash)
}

/// The component schemas of a built-in kind's group version and the name of the kind's
/// own schema among them (`io.k8s.api.apps.v1.Deployment`); `None` for kinds without a
/// `k8s-openapi` type.
pub(crate) fn kind_schemas(group: &str, version: &str, kind: &str) -> Option<(Value, String)> {
    let name = builtin_type(group, kind, SchemaName)?;
    Some((builtin_schemas(group, version).0, name))
}

/// The name of a type's schema.
struct SchemaName;

impl WithType for SchemaName {
    type Output = String;

    fn with<T: BuiltinType>(self) -> String {
        T::schema_name().into_owned()
    }
}

/// Component schemas and their hash, by group and version.
type SchemaCache = HashMap<(String, String), (Value, String)>;

/// Adds a type's schema to the generator's definitions; gives its name.
struct SchemaOf<'a>(&'a mut schemars::SchemaGenerator);

impl WithType for SchemaOf<'_> {
    type Output = String;

    fn with<T: BuiltinType>(self) -> String {
        self.0.subschema_for::<T>();
        T::schema_name().into_owned()
    }
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

    #[test]
    fn documents_carry_the_schemas_of_their_kinds() {
        let registry = Registry::new();
        let core = v3_document(&registry, "api/v1").unwrap();
        let pod = &core["components"]["schemas"]["io.k8s.api.core.v1.Pod"];
        assert_eq!(
            pod["x-kubernetes-group-version-kind"],
            json!([{"group": "", "version": "v1", "kind": "Pod"}])
        );
        assert!(
            core["components"]["schemas"]["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
                .is_object()
        );
        let apps = v3_document(&registry, "apis/apps/v1").unwrap();
        assert!(apps["components"]["schemas"]["io.k8s.api.apps.v1.Deployment"].is_object());
    }
}
