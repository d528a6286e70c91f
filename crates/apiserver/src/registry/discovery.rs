//! Discovery documents: legacy `/api`, `/apis`, `/apis/{g}`, `/api/v1`, `/apis/{g}/{v}`
//! (apiserver-semantics §2.1), and aggregated discovery (`apidiscovery.k8s.io/v2`) for
//! `/api` and `/apis` when the request asks for it (§2.2).

use serde_json::{Value, json};

use super::kinds::strategy_for;
use super::{Registry, ResourceDef};

/// `GET /api`: the core group's versions.
pub(crate) fn api_versions(server_address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    })
}

fn group_versions(registry: &Registry, group: &str) -> Vec<String> {
    let mut versions: Vec<String> = Vec::new();
    for resource in registry.all().iter().filter(|r| r.group == group) {
        if !versions.contains(&resource.version) {
            versions.push(resource.version.clone());
        }
    }
    versions
}

fn group_document(registry: &Registry, group: &str) -> Value {
    let versions: Vec<Value> = group_versions(registry, group)
        .iter()
        .map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v}))
        .collect();
    let preferred = versions.first().cloned().unwrap_or(Value::Null);
    json!({"name": group, "versions": versions, "preferredVersion": preferred})
}

/// `GET /apis`: every named group.
pub(crate) fn api_group_list(registry: &Registry) -> Value {
    let mut groups: Vec<String> = Vec::new();
    for resource in registry.all().iter().filter(|r| !r.group.is_empty()) {
        if !groups.contains(&resource.group) {
            groups.push(resource.group.clone());
        }
    }
    let groups: Vec<Value> = groups.iter().map(|g| group_document(registry, g)).collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `GET /apis/{group}`.
pub(crate) fn api_group(registry: &Registry, group: &str) -> Value {
    let mut document = group_document(registry, group);
    if let Some(object) = document.as_object_mut() {
        object.insert("kind".to_owned(), json!("APIGroup"));
        object.insert("apiVersion".to_owned(), json!("v1"));
    }
    document
}

fn resource_entry(resource: &ResourceDef) -> Value {
    let mut entry = json!({
        "name": resource.plural,
        "singularName": resource.singular,
        "namespaced": resource.namespaced,
        "kind": resource.kind,
        "verbs": resource.verbs,
    });
    if let Some(object) = entry.as_object_mut() {
        if !resource.short_names.is_empty() {
            object.insert("shortNames".to_owned(), json!(resource.short_names));
        }
        if !resource.categories.is_empty() {
            object.insert("categories".to_owned(), json!(resource.categories));
        }
    }
    entry
}

/// `GET /api/v1` or `GET /apis/{group}/{version}`: the resources and their subresources.
pub(crate) fn api_resource_list(registry: &Registry, group: &str, version: &str) -> Value {
    let group_version = if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    };
    let mut resources = Vec::new();
    for resource in registry
        .all()
        .iter()
        .filter(|r| r.group == group && r.version == version)
    {
        resources.push(resource_entry(resource));
        for sub in strategy_for(resource).subresources() {
            let mut entry = json!({
                "name": format!("{}/{}", resource.plural, sub.name),
                "singularName": "",
                "namespaced": resource.namespaced,
                "kind": sub.kind,
                "verbs": sub.verbs,
            });
            if !sub.group.is_empty() {
                entry["group"] = json!(sub.group);
                entry["version"] = json!(sub.version);
            }
            resources.push(entry);
        }
        if resource.status_subresource {
            resources.push(json!({
                "name": format!("{}/status", resource.plural),
                "singularName": "",
                "namespaced": resource.namespaced,
                "kind": resource.kind,
                "verbs": ["get", "patch", "update"],
            }));
        }
        if resource.scale.is_some() {
            resources.push(json!({
                "name": format!("{}/scale", resource.plural),
                "singularName": "",
                "namespaced": resource.namespaced,
                "group": "autoscaling",
                "version": "v1",
                "kind": "Scale",
                "verbs": ["get", "patch", "update"],
            }));
        }
    }
    let mut document =
        json!({"kind": "APIResourceList", "groupVersion": group_version, "resources": resources});
    if !group.is_empty()
        && let Some(object) = document.as_object_mut()
    {
        object.insert("apiVersion".to_owned(), json!("v1"));
    }
    document
}

/// Aggregated discovery (`apidiscovery.k8s.io/v2` `APIGroupDiscoveryList`) for `/api`
/// (`core: true`, the core group) or `/apis` (every named group), versions in preference
/// order (apiserver-semantics §2.2).
pub(crate) fn aggregated(registry: &Registry, core: bool) -> Value {
    let mut groups: Vec<String> = Vec::new();
    for resource in registry.all().iter() {
        if (resource.group.is_empty() == core) && !groups.contains(&resource.group) {
            groups.push(resource.group.clone());
        }
    }
    let items: Vec<Value> = groups
        .iter()
        .map(|group| {
            let versions: Vec<Value> = group_versions(registry, group)
                .iter()
                .map(|version| {
                    let resources: Vec<Value> = registry
                        .all()
                        .iter()
                        .filter(|r| &r.group == group && &r.version == version)
                        .map(|r| aggregated_resource(r))
                        .collect();
                    json!({"version": version, "resources": resources, "freshness": "Current"})
                })
                .collect();
            let metadata = if group.is_empty() {
                json!({})
            } else {
                json!({"name": group})
            };
            json!({"metadata": metadata, "versions": versions})
        })
        .collect();
    json!({"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {}, "items": items})
}

fn aggregated_resource(resource: &ResourceDef) -> Value {
    let kind = json!({"group": resource.group, "version": resource.version, "kind": resource.kind});
    let mut subresources = Vec::new();
    for sub in strategy_for(resource).subresources() {
        let version = if sub.version.is_empty() {
            "v1"
        } else {
            sub.version
        };
        subresources.push(json!({"subresource": sub.name, "responseKind": {"group": sub.group, "version": version, "kind": sub.kind}, "verbs": sub.verbs}));
    }
    if resource.status_subresource {
        subresources.push(json!({"subresource": "status", "responseKind": kind, "verbs": ["get", "patch", "update"]}));
    }
    if resource.scale.is_some() {
        subresources.push(json!({"subresource": "scale", "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"}, "verbs": ["get", "patch", "update"]}));
    }
    let mut entry = json!({
        "resource": resource.plural,
        "responseKind": kind,
        "scope": if resource.namespaced { "Namespaced" } else { "Cluster" },
        "singularResource": resource.singular,
        "verbs": resource.verbs,
    });
    if let Some(object) = entry.as_object_mut() {
        if !resource.short_names.is_empty() {
            object.insert("shortNames".to_owned(), json!(resource.short_names));
        }
        if !resource.categories.is_empty() {
            object.insert("categories".to_owned(), json!(resource.categories));
        }
        if !subresources.is_empty() {
            object.insert("subresources".to_owned(), json!(subresources));
        }
    }
    entry
}

/// Whether an `Accept` header asks for aggregated discovery `v2` (any clause naming
/// `as=APIGroupDiscoveryList`, `g=apidiscovery.k8s.io`, `v=v2`).
pub(crate) fn wants_aggregated(accept: Option<&str>) -> bool {
    accept.is_some_and(|accept| {
        accept.split(',').any(|clause| {
            let params: Vec<&str> = clause.split(';').map(str::trim).collect();
            params.first().is_some_and(|m| *m == "application/json")
                && params.contains(&"as=APIGroupDiscoveryList")
                && params.contains(&"g=apidiscovery.k8s.io")
                && params.contains(&"v=v2")
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_resource_list_has_subresources_and_no_api_version() {
        let list = api_resource_list(&Registry::new(), "", "v1");
        assert!(list.get("apiVersion").is_none());
        let names: Vec<&str> = list["resources"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|r| r["name"].as_str())
            .collect();
        assert!(names.contains(&"pods") && names.contains(&"pods/status"));
        assert!(names.contains(&"pods/exec") && names.contains(&"pods/log"));
        let pods = &list["resources"][names.iter().position(|n| *n == "pods").unwrap()];
        assert_eq!(pods["shortNames"], json!(["po"]));
        assert_eq!(pods["categories"], json!(["all"]));
    }

    #[test]
    fn group_list_names_every_group_with_its_preferred_version() {
        let list = api_group_list(&Registry::new());
        let apps = list["groups"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["name"] == "apps")
            .unwrap();
        assert_eq!(apps["preferredVersion"]["groupVersion"], "apps/v1");
        assert!(
            list["groups"]
                .as_array()
                .unwrap()
                .iter()
                .all(|g| g["name"] != "")
        );
    }

    #[test]
    fn scale_subresources_name_the_autoscaling_kind() {
        let list = api_resource_list(&Registry::new(), "apps", "v1");
        let scale = list["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == "deployments/scale")
            .unwrap();
        assert_eq!(scale["kind"], "Scale");
        assert_eq!(scale["group"], "autoscaling");
    }

    /// The first object under `value` whose `key` is `name`.
    fn find<'a>(value: &'a Value, key: &str, name: &str) -> Option<&'a Value> {
        match value {
            Value::Object(map) if map.get(key).is_some_and(|v| v == name) => Some(value),
            Value::Object(map) => map.values().find_map(|v| find(v, key, name)),
            Value::Array(items) => items.iter().find_map(|v| find(v, key, name)),
            _ => None,
        }
    }

    #[test]
    fn kinds_list_their_own_subresources_in_both_discovery_forms() {
        let registry = Registry::new();
        let core = api_resource_list(&registry, "", "v1");
        let eviction = find(&core, "name", "pods/eviction").expect("pods/eviction");
        assert_eq!(
            (&eviction["kind"], &eviction["group"], &eviction["version"]),
            (&json!("Eviction"), &json!("policy"), &json!("v1"))
        );
        assert_eq!(eviction["verbs"], json!(["create"]));
        let exec = find(&core, "name", "pods/exec").expect("pods/exec");
        assert_eq!(exec["kind"], "PodExecOptions");
        assert!(exec.get("group").is_none(), "{exec}");
        let token = find(&core, "name", "serviceaccounts/token").expect("token");
        assert_eq!(
            (&token["kind"], &token["group"], &token["verbs"]),
            (
                &json!("TokenRequest"),
                &json!("authentication.k8s.io"),
                &json!(["create"])
            )
        );
        let certificates = api_resource_list(&registry, "certificates.k8s.io", "v1");
        let approval =
            find(&certificates, "name", "certificatesigningrequests/approval").expect("approval");
        assert_eq!(approval["verbs"], json!(["get", "patch", "update"]));
        assert!(find(&core, "name", "configmaps/exec").is_none());

        let aggregated = aggregated(&registry, true);
        let pods = find(&aggregated, "resource", "pods").expect("pods");
        let names: Vec<&str> = pods["subresources"]
            .as_array()
            .expect("subresources")
            .iter()
            .filter_map(|s| s["subresource"].as_str())
            .collect();
        assert_eq!(
            names,
            [
                "attach",
                "binding",
                "ephemeralcontainers",
                "eviction",
                "exec",
                "log",
                "portforward",
                "status"
            ]
        );
        let exec = find(pods, "subresource", "exec").expect("exec");
        assert_eq!(
            exec["responseKind"],
            json!({"group": "", "version": "v1", "kind": "PodExecOptions"})
        );
    }
}
