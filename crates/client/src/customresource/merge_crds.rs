//! [`merge_crds`]: one CustomResourceDefinition serving several versions, from the
//! single-version CRDs that `#[derive(CustomResource)]` gives each version's type.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

/// Why CRDs cannot be merged.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MergeCrdsError {
    /// No CRD was given.
    #[error("no CustomResourceDefinition to merge")]
    Empty,
    /// Two CRDs are not of the same resource (group, names or scope differ).
    #[error(
        "the CustomResourceDefinition of version {version} differs from the first one in its {field}: all must be of one group, kind, names and scope"
    )]
    Mismatch {
        /// The version whose CRD differs.
        version: String,
        /// What differs (`group`, `names`, `scope`).
        field: &'static str,
    },
    /// A version appears twice.
    #[error("version {0} is given twice")]
    DuplicateVersion(String),
    /// The storage version is not among the versions.
    #[error("the storage version {storage} is not one of the versions {versions:?}")]
    UnknownStorageVersion {
        /// The storage version asked for.
        storage: String,
        /// The versions given.
        versions: Vec<String>,
    },
}

/// Merges the CRDs of one kind's versions (each from its type's
/// [`CustomResourceExt::crd`](super::CustomResourceExt::crd)) into one that serves them
/// all and stores `storage_version` (kube-rs' `merge_crds`). Keep the versions' order
/// as given: it is the order `kubectl` shows. Set `spec.conversion` afterwards for a
/// conversion webhook.
///
/// # Errors
///
/// [`MergeCrdsError`] when the CRDs are not of one resource, a version is repeated or the
/// storage version is missing.
///
/// # Examples
///
/// ```
/// use kubeclient::customresource::{CustomResourceExt, merge_crds};
///
/// mod v1 {
///     #[derive(kubeclient::CustomResource, Clone, Debug, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
///     #[kubeclient(group = "example.com", version = "v1", kind = "Widget", namespaced)]
///     pub struct WidgetSpec { pub replicas: i32 }
/// }
/// mod v1alpha1 {
///     #[derive(kubeclient::CustomResource, Clone, Debug, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
///     #[kubeclient(group = "example.com", version = "v1alpha1", kind = "Widget", namespaced)]
///     pub struct WidgetSpec { pub size: String }
/// }
///
/// let crd = merge_crds(vec![v1::Widget::crd(), v1alpha1::Widget::crd()], "v1").unwrap();
/// let versions: Vec<(&str, bool)> = crd.spec.versions.iter().map(|v| (v.name.as_str(), v.storage)).collect();
/// assert_eq!(versions, [("v1", true), ("v1alpha1", false)]);
/// ```
pub fn merge_crds(
    crds: Vec<CustomResourceDefinition>,
    storage_version: &str,
) -> Result<CustomResourceDefinition, MergeCrdsError> {
    let mut crds = crds.into_iter();
    let mut merged = crds.next().ok_or(MergeCrdsError::Empty)?;
    for crd in crds {
        let version = crd
            .spec
            .versions
            .first()
            .map(|v| v.name.clone())
            .unwrap_or_default();
        let mismatch = |field| MergeCrdsError::Mismatch {
            version: version.clone(),
            field,
        };
        if crd.spec.group != merged.spec.group {
            return Err(mismatch("group"));
        }
        if crd.spec.names != merged.spec.names {
            return Err(mismatch("names"));
        }
        if crd.spec.scope != merged.spec.scope {
            return Err(mismatch("scope"));
        }
        for added in crd.spec.versions {
            if merged.spec.versions.iter().any(|v| v.name == added.name) {
                return Err(MergeCrdsError::DuplicateVersion(added.name));
            }
            merged.spec.versions.push(added);
        }
    }
    if !merged
        .spec
        .versions
        .iter()
        .any(|v| v.name == storage_version)
    {
        return Err(MergeCrdsError::UnknownStorageVersion {
            storage: storage_version.to_owned(),
            versions: merged
                .spec
                .versions
                .iter()
                .map(|v| v.name.clone())
                .collect(),
        });
    }
    for version in &mut merged.spec.versions {
        version.served = true;
        version.storage = version.name == storage_version;
    }
    Ok(merged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn crd(version: &str, kind: &str) -> CustomResourceDefinition {
        serde_json::from_value(json!({
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                     "names": {"plural": "widgets", "kind": kind},
                     "versions": [{"name": version, "served": true, "storage": true}]},
        }))
        .unwrap()
    }

    #[test]
    fn merges_versions_with_one_storage_version() {
        let merged = merge_crds(vec![crd("v1", "Widget"), crd("v2", "Widget")], "v2").unwrap();
        let storage: Vec<bool> = merged.spec.versions.iter().map(|v| v.storage).collect();
        assert_eq!(storage, [false, true]);
    }

    #[test]
    fn refuses_other_kinds_repeats_and_missing_storage() {
        assert_eq!(
            merge_crds(vec![crd("v1", "Widget"), crd("v2", "Gadget")], "v1"),
            Err(MergeCrdsError::Mismatch {
                version: "v2".to_owned(),
                field: "names"
            })
        );
        assert_eq!(
            merge_crds(vec![crd("v1", "Widget"), crd("v1", "Widget")], "v1"),
            Err(MergeCrdsError::DuplicateVersion("v1".to_owned()))
        );
        assert!(matches!(
            merge_crds(vec![crd("v1", "Widget")], "v3"),
            Err(MergeCrdsError::UnknownStorageVersion { .. })
        ));
        assert_eq!(merge_crds(Vec::new(), "v1"), Err(MergeCrdsError::Empty));
    }
}
