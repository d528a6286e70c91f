//! Aggregated discovery (`apidiscovery.k8s.io/v2`, `APIGroupDiscoveryList`).

use kubeclient_machinery::{ApiResource, GroupVersion};
use serde::Deserialize;

use super::ApiGroup;
use crate::error::Result;
use crate::rest::decode;

/// Whether a Content-Type is the aggregated discovery document: base `application/json`
/// with `g=apidiscovery.k8s.io`, `v=v2` and `as=APIGroupDiscoveryList`, in any order
/// (client-go's rule; extra parameters allowed).
pub(crate) fn is_aggregated_content_type(content_type: &str) -> bool {
    let mut parts = content_type.split(';').map(str::trim);
    if parts.next() != Some("application/json") {
        return false;
    }
    let params: Vec<(&str, &str)> = parts.filter_map(|p| p.split_once('=')).collect();
    let has = |name: &str, value: &str| {
        params
            .iter()
            .any(|(n, v)| n.trim() == name && v.trim() == value)
    };
    has("g", "apidiscovery.k8s.io") && has("v", "v2") && has("as", "APIGroupDiscoveryList")
}

#[derive(Deserialize)]
struct DiscoveryList {
    #[serde(default)]
    items: Vec<GroupItem>,
}

#[derive(Deserialize)]
struct GroupItem {
    #[serde(default)]
    metadata: Metadata,
    #[serde(default)]
    versions: Vec<VersionItem>,
}

#[derive(Default, Deserialize)]
struct Metadata {
    #[serde(default)]
    name: String,
}

#[derive(Deserialize)]
struct VersionItem {
    version: String,
    #[serde(default)]
    resources: Vec<ResourceItem>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ResourceItem {
    resource: String,
    #[serde(default)]
    response_kind: Option<ResponseKind>,
    #[serde(default)]
    scope: String,
    #[serde(default)]
    singular_resource: String,
    #[serde(default)]
    verbs: Vec<String>,
    #[serde(default)]
    short_names: Vec<String>,
    #[serde(default)]
    categories: Vec<String>,
}

#[derive(Deserialize)]
struct ResponseKind {
    #[serde(default)]
    kind: String,
}

/// Parses an `APIGroupDiscoveryList`; versions come in preference order.
pub(crate) fn parse(url: &str, body: &[u8]) -> Result<Vec<ApiGroup>> {
    let list: DiscoveryList = decode(url, body)?;
    Ok(list
        .items
        .into_iter()
        .map(|item| {
            let name = item.metadata.name;
            let versions: Vec<String> = item.versions.iter().map(|v| v.version.clone()).collect();
            let resources = item
                .versions
                .into_iter()
                .flat_map(|version| {
                    let gv = GroupVersion::new(&name, &version.version);
                    version.resources.into_iter().map(move |r| ApiResource {
                        group: gv.group.clone(),
                        version: gv.version.clone(),
                        api_version: gv.to_string(),
                        kind: r.response_kind.map(|k| k.kind).unwrap_or_default(),
                        singular: r.singular_resource,
                        plural: r.resource,
                        namespaced: r.scope == "Namespaced",
                        verbs: r.verbs,
                        short_names: r.short_names,
                        categories: r.categories,
                    })
                })
                .collect();
            ApiGroup {
                preferred_version: versions.first().cloned().unwrap_or_default(),
                name,
                versions,
                resources,
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_type_decides_with_parameters_in_any_order() {
        assert!(is_aggregated_content_type(
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
        ));
        assert!(is_aggregated_content_type(
            "application/json; as=APIGroupDiscoveryList; charset=utf-8; v=v2; g=apidiscovery.k8s.io"
        ));
        assert!(!is_aggregated_content_type("application/json"));
        assert!(!is_aggregated_content_type(
            "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
        ));
    }

    #[test]
    fn the_reference_document_parses() {
        let body = br#"{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","metadata":{},"items":[
          {"metadata":{"name":"apps"},"versions":[{"version":"v1","resources":[
            {"resource":"deployments","responseKind":{"group":"apps","version":"v1","kind":"Deployment"},"scope":"Namespaced",
             "singularResource":"deployment","verbs":["get","list","watch"],"shortNames":["deploy"],"categories":["all"],
             "subresources":[{"subresource":"scale","responseKind":{"group":"autoscaling","version":"v1","kind":"Scale"},"verbs":["get"]}]}
          ],"freshness":"Current"}]}]}"#;
        let groups = parse("/apis", body).unwrap();
        let deployments = &groups[0].resources[0];
        assert_eq!(
            (
                deployments.kind.as_str(),
                deployments.plural.as_str(),
                deployments.api_version.as_str()
            ),
            ("Deployment", "deployments", "apps/v1")
        );
        assert!(deployments.namespaced);
        assert_eq!(groups[0].preferred_version, "v1");
    }
}
