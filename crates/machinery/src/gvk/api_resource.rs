//! [`ApiResource`]: everything needed to build URLs for a resource and to name its objects.

use k8s_openapi::{ClusterResourceScope, NamespaceResourceScope, SubResourceScope};

use super::{GroupVersion, GroupVersionKind, GroupVersionResource};

/// The verbs a fully featured resource serves, in the order discovery lists them.
const STANDARD_VERBS: [&str; 8] = [
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

/// A description of one API resource, as discovery reports it (Go's `metav1.APIResource`
/// plus the group version it lives in).
///
/// # Examples
///
/// ```
/// use k8s_openapi::api::apps::v1::Deployment;
/// use kubeclient_machinery::ApiResource;
///
/// let deployments = ApiResource::of::<Deployment>();
/// assert_eq!(deployments.plural, "deployments");
/// assert_eq!(deployments.singular, "deployment");
/// assert_eq!(deployments.api_version, "apps/v1");
/// assert!(deployments.namespaced);
/// assert!(deployments.supports("watch"));
///
/// // For a kind known only at run time, guess the plural the way client-go does.
/// let widgets = ApiResource::from_gvk_guessing_plural(
///     &"example.com/v1".parse::<kubeclient_machinery::GroupVersion>().unwrap().with_kind("Policy"),
///     true,
/// );
/// assert_eq!(widgets.plural, "policies");
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ApiResource {
    /// The group; empty for the core group.
    pub group: String,
    /// The version.
    pub version: String,
    /// `apiVersion` of the resource's objects: `v1` or `group/version`.
    pub api_version: String,
    /// The kind of the resource's objects, e.g. `Deployment`.
    pub kind: String,
    /// The resource name used in URLs, lower-case plural, e.g. `deployments`.
    pub plural: String,
    /// The singular name, e.g. `deployment`.
    pub singular: String,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// The verbs the server supports on this resource (`get`, `list`, `watch`, ...).
    pub verbs: Vec<String>,
    /// Short names, e.g. `deploy`.
    pub short_names: Vec<String>,
    /// Categories, e.g. `all`.
    pub categories: Vec<String>,
}

/// Whether a `k8s-openapi` resource scope is namespaced. Implemented for the three scope
/// marker types so [`ApiResource::of`] can read the scope from the type.
pub trait ScopeNamespaced {
    /// `true` for namespaced resources.
    const NAMESPACED: bool;
}

impl ScopeNamespaced for NamespaceResourceScope {
    const NAMESPACED: bool = true;
}

impl ScopeNamespaced for ClusterResourceScope {
    const NAMESPACED: bool = false;
}

/// Subresources are reached through their parent's path; they count as not namespaced.
impl ScopeNamespaced for SubResourceScope {
    const NAMESPACED: bool = false;
}

impl ApiResource {
    /// The resource of a `k8s-openapi` type, with the standard eight verbs (the type alone
    /// does not say which verbs a server serves; discovery does).
    #[must_use]
    pub fn of<K>() -> Self
    where
        K: k8s_openapi::Resource,
        K::Scope: ScopeNamespaced,
    {
        ApiResource {
            group: K::GROUP.to_owned(),
            version: K::VERSION.to_owned(),
            api_version: K::API_VERSION.to_owned(),
            kind: K::KIND.to_owned(),
            plural: K::URL_PATH_SEGMENT.to_owned(),
            singular: K::KIND.to_ascii_lowercase(),
            namespaced: K::Scope::NAMESPACED,
            verbs: STANDARD_VERBS.iter().map(|v| (*v).to_owned()).collect(),
            short_names: Vec::new(),
            categories: Vec::new(),
        }
    }

    /// A resource from its kind and its plural name, with the standard eight verbs.
    #[must_use]
    pub fn from_gvk(gvk: &GroupVersionKind, plural: &str, namespaced: bool) -> Self {
        ApiResource {
            group: gvk.group.clone(),
            version: gvk.version.clone(),
            api_version: gvk.api_version(),
            kind: gvk.kind.clone(),
            plural: plural.to_owned(),
            singular: gvk.kind.to_ascii_lowercase(),
            namespaced,
            verbs: STANDARD_VERBS.iter().map(|v| (*v).to_owned()).collect(),
            short_names: Vec::new(),
            categories: Vec::new(),
        }
    }

    /// A resource from its kind, guessing the plural as client-go's
    /// `UnsafeGuessKindToResource` does (`Policy` → `policies`, `Ingress` → `ingresses`).
    /// Prefer discovery when a server is at hand: guesses are wrong for irregular plurals.
    #[must_use]
    pub fn from_gvk_guessing_plural(gvk: &GroupVersionKind, namespaced: bool) -> Self {
        ApiResource::from_gvk(gvk, &guess_plural(&gvk.kind), namespaced)
    }

    /// The group version.
    #[must_use]
    pub fn group_version(&self) -> GroupVersion {
        GroupVersion::new(&self.group, &self.version)
    }

    /// The group, version and kind.
    #[must_use]
    pub fn gvk(&self) -> GroupVersionKind {
        GroupVersionKind::new(&self.group, &self.version, &self.kind)
    }

    /// The group, version and resource.
    #[must_use]
    pub fn gvr(&self) -> GroupVersionResource {
        GroupVersionResource::new(&self.group, &self.version, &self.plural)
    }

    /// Whether the server lists `verb` for this resource.
    #[must_use]
    pub fn supports(&self, verb: &str) -> bool {
        self.verbs.iter().any(|v| v == verb)
    }
}

/// client-go's plural guess: lower-case the kind, then `s` → `ses`, `y` → `ies`, else add `s`.
fn guess_plural(kind: &str) -> String {
    let singular = kind.to_ascii_lowercase();
    if singular.is_empty() {
        return singular;
    }
    if singular.ends_with('s') {
        format!("{singular}es")
    } else if let Some(stem) = singular.strip_suffix('y') {
        format!("{stem}ies")
    } else {
        format!("{singular}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{Namespace, Pod};

    #[test]
    fn typed_resources_carry_scope_and_names() {
        let pods = ApiResource::of::<Pod>();
        assert_eq!(pods.gvr(), GroupVersionResource::new("", "v1", "pods"));
        assert_eq!(pods.gvk(), GroupVersionKind::new("", "v1", "Pod"));
        assert!(pods.namespaced);
        assert!(!ApiResource::of::<Namespace>().namespaced);
    }

    #[test]
    fn plural_guesses_follow_client_go() {
        for (kind, plural) in [
            ("Pod", "pods"),
            ("Policy", "policies"),
            ("Ingress", "ingresses"),
            ("Endpoints", "endpointses"),
            ("", ""),
        ] {
            assert_eq!(guess_plural(kind), plural, "{kind}");
        }
    }
}
