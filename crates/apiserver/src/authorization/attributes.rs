//! [`Attributes`]: what a request asks to do, as kube-apiserver's `authorizer.Attributes`
//! (who, which verb, on which resource or path), and the 403 it gets when refused.

use kubeclient_machinery::{GroupResource, Status};

use crate::authentication::UserInfo;

/// What a request is about: a resource (of a group, maybe namespaced, maybe named, maybe
/// a subresource) or a non-resource path (`/healthz`, `/api`, `/version`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    /// A resource request.
    Resource {
        /// The API group; empty for the core group.
        group: String,
        /// The resource (plural), e.g. `pods`.
        resource: String,
        /// The subresource, e.g. `log` or `status`; empty for none.
        subresource: String,
        /// The namespace; empty for cluster-scoped requests.
        namespace: String,
        /// The object's name; empty for collections.
        name: String,
    },
    /// A request for a path that is not a resource.
    Path(String),
}

/// One authorization question: may `user` do `verb` to `target`?
#[derive(Clone, Debug)]
pub(crate) struct Attributes {
    /// Who asks.
    pub(crate) user: UserInfo,
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`,
    /// `impersonate`, ... (for paths: the lower-case HTTP method).
    pub(crate) verb: String,
    /// What it is asked for.
    pub(crate) target: Target,
}

impl Attributes {
    /// A question about a resource.
    pub(crate) fn resource(
        user: UserInfo,
        verb: &str,
        group: &str,
        resource: &str,
        namespace: &str,
        name: &str,
    ) -> Self {
        Attributes {
            user,
            verb: verb.to_owned(),
            target: Target::Resource {
                group: group.to_owned(),
                resource: resource.to_owned(),
                subresource: String::new(),
                namespace: namespace.to_owned(),
                name: name.to_owned(),
            },
        }
    }

    /// The same question about a subresource.
    #[must_use]
    pub(crate) fn with_subresource(mut self, sub: &str) -> Self {
        if let Target::Resource { subresource, .. } = &mut self.target {
            sub.clone_into(subresource);
        }
        self
    }

    /// A question about a non-resource path.
    pub(crate) fn path(user: UserInfo, verb: &str, path: &str) -> Self {
        Attributes {
            user,
            verb: verb.to_owned(),
            target: Target::Path(path.to_owned()),
        }
    }

    /// The namespace the question is in; empty when cluster-wide or a path.
    pub(crate) fn namespace(&self) -> &str {
        match &self.target {
            Target::Resource { namespace, .. } => namespace,
            Target::Path(_) => "",
        }
    }

    /// The 403 kube-apiserver answers when the question is refused (its
    /// `forbiddenMessage`, then `NewForbidden`), with the authorizer's `reason` appended
    /// when it gave one.
    ///
    /// `pods "web" is forbidden: User "bob" cannot get resource "pods/log" in API group ""
    /// in the namespace "team"`.
    pub(crate) fn forbidden(&self, reason: &str) -> Status {
        let user = &self.user.username;
        let verb = &self.verb;
        let (resource, name, why) = match &self.target {
            Target::Path(path) => (
                GroupResource::new("", ""),
                "",
                format!("User {user:?} cannot {verb} path {path:?}"),
            ),
            Target::Resource {
                group,
                resource,
                subresource,
                namespace,
                name,
            } => {
                let asked = if subresource.is_empty() {
                    resource.clone()
                } else {
                    format!("{resource}/{subresource}")
                };
                let scope = if namespace.is_empty() {
                    "at the cluster scope".to_owned()
                } else {
                    format!("in the namespace {namespace:?}")
                };
                (
                    GroupResource::new(group, resource),
                    name.as_str(),
                    format!(
                        "User {user:?} cannot {verb} resource {asked:?} in API group {group:?} {scope}"
                    ),
                )
            }
        };
        let why = if reason.is_empty() {
            why
        } else {
            format!("{why}: {reason}")
        };
        Status::forbidden(&resource, name, &why)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bot() -> UserInfo {
        UserInfo::service_account("team", "bot", "")
    }

    /// The texts of a real kube-apiserver v1.20 run with `--authorization-mode=RBAC`.
    #[test]
    fn forbidden_texts_are_kube_apiservers() {
        let list = Attributes::resource(bot(), "list", "", "pods", "team", "");
        assert_eq!(
            list.forbidden("").message,
            r#"pods is forbidden: User "system:serviceaccount:team:bot" cannot list resource "pods" in API group "" in the namespace "team""#
        );
        let log =
            Attributes::resource(bot(), "get", "", "pods", "team", "web").with_subresource("log");
        let status = log.forbidden("");
        assert_eq!(
            status.message,
            r#"pods "web" is forbidden: User "system:serviceaccount:team:bot" cannot get resource "pods/log" in API group "" in the namespace "team""#
        );
        let details = status.details.expect("details");
        assert_eq!(
            (details.name.as_str(), details.kind.as_str()),
            ("web", "pods")
        );
        let cluster = Attributes::resource(bot(), "list", "nope.io", "things", "", "");
        let status = cluster.forbidden("");
        assert_eq!(
            status.message,
            r#"things.nope.io is forbidden: User "system:serviceaccount:team:bot" cannot list resource "things" in API group "nope.io" at the cluster scope"#
        );
        assert_eq!(status.details.expect("details").group, "nope.io");
        let path = Attributes::path(bot(), "get", "/foo");
        assert_eq!(
            path.forbidden("").message,
            r#"forbidden: User "system:serviceaccount:team:bot" cannot get path "/foo""#
        );
        assert!(
            list.forbidden(r#"RBAC: role.rbac.authorization.k8s.io "x" not found"#)
                .message
                .ends_with(
                    r#"in the namespace "team": RBAC: role.rbac.authorization.k8s.io "x" not found"#
                )
        );
    }
}
