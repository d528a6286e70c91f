//! [`GroupVersion`], [`GroupVersionKind`], [`GroupVersionResource`] and [`GroupResource`].

use std::fmt;
use std::str::FromStr;

/// An API group and version, e.g. `apps/v1`, or `v1` for the core group.
///
/// # Examples
///
/// ```
/// use kubeclient_machinery::GroupVersion;
/// let gv: GroupVersion = "apps/v1".parse().unwrap();
/// assert_eq!((gv.group.as_str(), gv.version.as_str()), ("apps", "v1"));
/// let core: GroupVersion = "v1".parse().unwrap();
/// assert_eq!(core.group, "");
/// assert_eq!(core.to_string(), "v1");
/// assert_eq!(core.api_prefix(), "/api/v1");
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GroupVersion {
    /// The group; empty for the core group.
    pub group: String,
    /// The version, e.g. `v1`.
    pub version: String,
}

/// A string that is not `version` or `group/version`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "unexpected GroupVersion string: {0:?} (expected \"version\" or \"group/version\", e.g. \"v1\" or \"apps/v1\")"
)]
pub struct ParseGroupVersionError(pub String);

impl GroupVersion {
    /// A group and version.
    #[must_use]
    pub fn new(group: &str, version: &str) -> Self {
        GroupVersion {
            group: group.to_owned(),
            version: version.to_owned(),
        }
    }

    /// The `apiVersion` string: `version` for the core group, `group/version` otherwise.
    #[must_use]
    pub fn api_version(&self) -> String {
        self.to_string()
    }

    /// The URL prefix of this group version: `/api/v1` or `/apis/{group}/{version}`.
    #[must_use]
    pub fn api_prefix(&self) -> String {
        if self.group.is_empty() {
            format!("/api/{}", self.version)
        } else {
            format!("/apis/{}/{}", self.group, self.version)
        }
    }

    /// This group version with a kind.
    #[must_use]
    pub fn with_kind(&self, kind: &str) -> GroupVersionKind {
        GroupVersionKind::new(&self.group, &self.version, kind)
    }

    /// This group version with a resource.
    #[must_use]
    pub fn with_resource(&self, resource: &str) -> GroupVersionResource {
        GroupVersionResource::new(&self.group, &self.version, resource)
    }
}

/// Parses like Go's `schema.ParseGroupVersion`: `""` is the empty group version, `v1` is
/// the core group, `apps/v1` a named group; anything with more than one `/` is an error.
impl FromStr for GroupVersion {
    type Err = ParseGroupVersionError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.is_empty() {
            return Ok(GroupVersion::default());
        }
        match s.split_once('/') {
            None => Ok(GroupVersion::new("", s)),
            Some((group, version)) if !version.contains('/') => {
                Ok(GroupVersion::new(group, version))
            }
            Some(_) => Err(ParseGroupVersionError(s.to_owned())),
        }
    }
}

impl fmt::Display for GroupVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.group.is_empty() {
            f.write_str(&self.version)
        } else {
            write!(f, "{}/{}", self.group, self.version)
        }
    }
}

/// A kind in a group version: what an object's `apiVersion` and `kind` name.
///
/// Displays like Go: `apps/v1, Kind=Deployment`.
///
/// # Examples
///
/// ```
/// use kubeclient_machinery::GroupVersionKind;
/// let gvk = GroupVersionKind::from_api_version_kind("apps/v1", "Deployment").unwrap();
/// assert_eq!(gvk.api_version(), "apps/v1");
/// assert_eq!(gvk.to_string(), "apps/v1, Kind=Deployment");
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GroupVersionKind {
    /// The group; empty for the core group.
    pub group: String,
    /// The version.
    pub version: String,
    /// The kind, e.g. `Deployment`.
    pub kind: String,
}

impl GroupVersionKind {
    /// A group, version and kind.
    #[must_use]
    pub fn new(group: &str, version: &str, kind: &str) -> Self {
        GroupVersionKind {
            group: group.to_owned(),
            version: version.to_owned(),
            kind: kind.to_owned(),
        }
    }

    /// From an object's `apiVersion` and `kind`.
    ///
    /// # Errors
    ///
    /// [`ParseGroupVersionError`] when `api_version` has more than one `/`.
    pub fn from_api_version_kind(
        api_version: &str,
        kind: &str,
    ) -> Result<Self, ParseGroupVersionError> {
        Ok(api_version.parse::<GroupVersion>()?.with_kind(kind))
    }

    /// The group version.
    #[must_use]
    pub fn group_version(&self) -> GroupVersion {
        GroupVersion::new(&self.group, &self.version)
    }

    /// The `apiVersion` string.
    #[must_use]
    pub fn api_version(&self) -> String {
        self.group_version().to_string()
    }
}

impl fmt::Display for GroupVersionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}, Kind={}", self.group_version(), self.kind)
    }
}

/// A resource (an HTTP collection, lower-case plural) in a group version.
///
/// Displays like Go: `apps/v1, Resource=deployments`.
///
/// # Examples
///
/// ```
/// use kubeclient_machinery::GroupVersionResource;
/// let gvr = GroupVersionResource::new("apps", "v1", "deployments");
/// assert_eq!(gvr.to_string(), "apps/v1, Resource=deployments");
/// assert_eq!(gvr.group_resource().to_string(), "deployments.apps");
/// let parsed = GroupVersionResource::parse_resource_arg("deployments.v1.apps").unwrap();
/// assert_eq!(parsed, gvr);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GroupVersionResource {
    /// The group; empty for the core group.
    pub group: String,
    /// The version.
    pub version: String,
    /// The resource, e.g. `deployments`.
    pub resource: String,
}

impl GroupVersionResource {
    /// A group, version and resource.
    #[must_use]
    pub fn new(group: &str, version: &str, resource: &str) -> Self {
        GroupVersionResource {
            group: group.to_owned(),
            version: version.to_owned(),
            resource: resource.to_owned(),
        }
    }

    /// The group version.
    #[must_use]
    pub fn group_version(&self) -> GroupVersion {
        GroupVersion::new(&self.group, &self.version)
    }

    /// The group and resource, without the version.
    #[must_use]
    pub fn group_resource(&self) -> GroupResource {
        GroupResource::new(&self.group, &self.resource)
    }

    /// Parses the fully qualified `resource.version.group` form kubectl accepts
    /// (`deployments.v1.apps`, `pods.v1.`); `None` unless there are at least three
    /// dot-separated parts (Go's `schema.ParseResourceArg`).
    #[must_use]
    pub fn parse_resource_arg(arg: &str) -> Option<Self> {
        let mut parts = arg.splitn(3, '.');
        match (parts.next(), parts.next(), parts.next()) {
            (Some(resource), Some(version), Some(group)) => {
                Some(GroupVersionResource::new(group, version, resource))
            }
            _ => None,
        }
    }
}

impl fmt::Display for GroupVersionResource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}, Resource={}", self.group_version(), self.resource)
    }
}

/// A resource and its group, without a version: how error messages name resources
/// (`deployments.apps`, or `configmaps` for the core group).
///
/// # Examples
///
/// ```
/// use kubeclient_machinery::GroupResource;
/// assert_eq!(GroupResource::new("apps", "deployments").to_string(), "deployments.apps");
/// assert_eq!(GroupResource::new("", "configmaps").to_string(), "configmaps");
/// assert_eq!(GroupResource::parse("deployments.apps"), GroupResource::new("apps", "deployments"));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GroupResource {
    /// The group; empty for the core group.
    pub group: String,
    /// The resource, e.g. `deployments`.
    pub resource: String,
}

impl GroupResource {
    /// A group and resource.
    #[must_use]
    pub fn new(group: &str, resource: &str) -> Self {
        GroupResource {
            group: group.to_owned(),
            resource: resource.to_owned(),
        }
    }

    /// Parses `resource` or `resource.group` (split at the first dot, as Go's
    /// `schema.ParseGroupResource`).
    #[must_use]
    pub fn parse(s: &str) -> Self {
        match s.split_once('.') {
            Some((resource, group)) => GroupResource::new(group, resource),
            None => GroupResource::new("", s),
        }
    }
}

impl fmt::Display for GroupResource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.group.is_empty() {
            f.write_str(&self.resource)
        } else {
            write!(f, "{}.{}", self.resource, self.group)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_version_parses_and_prints_core_and_named_groups() {
        for (text, group, version) in [("v1", "", "v1"), ("apps/v1", "apps", "v1"), ("", "", "")] {
            let gv: GroupVersion = text.parse().unwrap();
            assert_eq!(
                (gv.group.as_str(), gv.version.as_str()),
                (group, version),
                "{text}"
            );
            assert_eq!(gv.to_string(), text);
        }
    }

    #[test]
    fn group_version_with_two_slashes_is_an_error_naming_the_input() {
        let err = "a/b/c".parse::<GroupVersion>().unwrap_err();
        assert!(err.to_string().contains(r#""a/b/c""#), "{err}");
    }

    #[test]
    fn api_prefix_distinguishes_core_from_named_groups() {
        assert_eq!(GroupVersion::new("", "v1").api_prefix(), "/api/v1");
        assert_eq!(
            GroupVersion::new("batch", "v1").api_prefix(),
            "/apis/batch/v1"
        );
    }

    #[test]
    fn display_forms_match_go() {
        assert_eq!(
            GroupVersionKind::new("", "v1", "Pod").to_string(),
            "v1, Kind=Pod"
        );
        assert_eq!(
            GroupVersionResource::new("", "v1", "pods").to_string(),
            "v1, Resource=pods"
        );
    }

    #[test]
    fn resource_arg_needs_three_parts() {
        assert_eq!(
            GroupVersionResource::parse_resource_arg("pods.v1."),
            Some(GroupVersionResource::new("", "v1", "pods"))
        );
        assert_eq!(
            GroupVersionResource::parse_resource_arg("cronjobs.v1.batch.example.com"),
            Some(GroupVersionResource::new(
                "batch.example.com",
                "v1",
                "cronjobs"
            ))
        );
        assert_eq!(
            GroupVersionResource::parse_resource_arg("deployments.apps"),
            None
        );
    }
}
