//! [`RestMapper`]: the discovered resources and the mapping from kinds and kubectl's
//! names to resources (client-go's `RESTMapper`).

use kubeclient_machinery::ApiResource;

use super::ApiGroup;

/// What the server serves, with lookups by kind and by the names kubectl accepts
/// (client-go's `RESTMapper` over discovery). Get one from
/// [`Discovery::resources`](super::Discovery::resources).
#[doc(alias = "RESTMapper")]
#[derive(Clone, Debug, Default)]
pub struct RestMapper {
    groups: Vec<ApiGroup>,
}

impl RestMapper {
    pub(crate) fn new(groups: Vec<ApiGroup>) -> Self {
        RestMapper { groups }
    }

    /// The groups, core first.
    #[must_use]
    pub fn groups(&self) -> &[ApiGroup] {
        &self.groups
    }

    /// Every resource of every version.
    pub fn all(&self) -> impl Iterator<Item = &ApiResource> {
        self.groups.iter().flat_map(|g| g.resources.iter())
    }

    fn preferred(&self) -> impl Iterator<Item = &ApiResource> {
        self.groups.iter().flat_map(|g| {
            g.resources
                .iter()
                .filter(move |r| r.version == g.preferred_version)
        })
    }

    /// The resource of a kind in a group, in the preferred version unless `version` is given.
    #[must_use]
    pub fn resource_for_kind(
        &self,
        group: &str,
        version: Option<&str>,
        kind: &str,
    ) -> Option<ApiResource> {
        let group = self.groups.iter().find(|g| g.name == group)?;
        let version = version.unwrap_or(&group.preferred_version);
        group
            .resources
            .iter()
            .find(|r| r.version == version && r.kind == kind)
            .cloned()
    }

    /// Resolves a name as kubectl does: `deploy`, `deployments`, `deployment`,
    /// `Deployment`, `deployments.apps` or `deployments.v1.apps`, preferring the core
    /// group and preferred versions on ties.
    #[must_use]
    pub fn resolve(&self, name: &str) -> Option<ApiResource> {
        if let Some((resource, rest)) = name.split_once('.') {
            if let Some((version, group)) = rest.split_once('.')
                && let Some(found) = self
                    .all()
                    .find(|r| r.plural == resource && r.version == version && r.group == group)
            {
                return Some(found.clone());
            }
            return self
                .preferred()
                .find(|r| (r.plural == resource || r.singular == resource) && r.group == rest)
                .cloned();
        }
        let lower = name.to_ascii_lowercase();
        self.preferred()
            .find(|r| {
                r.plural == lower
                    || r.singular == lower
                    || r.short_names.contains(&lower)
                    || r.kind == name
            })
            .cloned()
    }
}
