//! kube-apiserver's etcd key layout: `<prefix>/<resource prefix>/<namespace>/<name>`
//! (`<prefix>/<resource prefix>/<name>` for cluster-scoped objects), where the resource
//! prefix is the resource's name for the built-in groups (with a few historical names),
//! and `<group>/<resource>` for custom resources and the two groups served by their own
//! servers (apiextensions and the aggregator). The etcd and disk backends both keep their
//! objects under these keys.

use std::borrow::Cow;

use kubeclient_machinery::GroupResource;

/// Resources whose etcd prefix is not their name (kube-apiserver's
/// `specialDefaultResourcePrefixes`).
const SPECIAL_PREFIXES: [(&str, &str, &str); 7] = [
    ("", "replicationcontrollers", "controllers"),
    ("", "endpoints", "services/endpoints"),
    ("", "nodes", "minions"),
    ("", "services", "services/specs"),
    ("extensions", "ingresses", "ingress"),
    ("networking.k8s.io", "ingresses", "ingress"),
    ("policy", "podsecuritypolicies", "podsecuritypolicy"),
];

/// Groups served by their own servers, stored under `<group>/<resource>` and in JSON.
const OWN_SERVER_GROUPS: [&str; 2] = ["apiextensions.k8s.io", "apiregistration.k8s.io"];

/// Whether a group is one of Kubernetes' own (a built-in API group): the core group,
/// a group without a dot (`apps`, `batch`, ...), or one under `.k8s.io`.
pub(crate) fn is_builtin_group(group: &str) -> bool {
    group.is_empty() || !group.contains('.') || group.ends_with(".k8s.io")
}

/// Whether objects of `group` are stored as JSON even when they are built-in types.
pub(crate) fn stored_as_json(group: &str) -> bool {
    OWN_SERVER_GROUPS.contains(&group) || !is_builtin_group(group)
}

/// The part of a key that names the resource: `pods`, `services/specs`,
/// `example.com/widgets`.
pub(crate) fn resource_prefix(resource: &GroupResource) -> Cow<'_, str> {
    let special = SPECIAL_PREFIXES
        .iter()
        .find(|(group, name, _)| *group == resource.group && *name == resource.resource);
    if let Some((_, _, prefix)) = special {
        return Cow::Borrowed(prefix);
    }
    if stored_as_json(&resource.group) {
        Cow::Owned(format!("{}/{}", resource.group, resource.resource))
    } else {
        Cow::Borrowed(&resource.resource)
    }
}

/// The key of everything of one resource, ending in `/`: `/registry/pods/`.
pub(crate) fn resource_root(prefix: &str, resource: &GroupResource) -> String {
    let prefix = prefix.trim_end_matches('/');
    if prefix.is_empty() {
        format!("{}/", resource_prefix(resource))
    } else {
        format!("{prefix}/{}/", resource_prefix(resource))
    }
}

/// The resource and object key of a key below the prefix (what follows `<prefix>/`):
/// `(group, resource, key)`, where the group is the key's own for the groups stored under
/// `<group>/<resource>` and `None` for the built-in ones, whose keys do not name it (it is
/// the stored object's). `None` for a key that names no object.
pub(crate) fn parse(relative: &str) -> Option<(Option<&str>, &str, &str)> {
    let special = SPECIAL_PREFIXES.iter().find_map(|(_, name, prefix)| {
        let key = relative.strip_prefix(prefix)?.strip_prefix('/')?;
        Some((None, *name, key))
    });
    let (group, resource, key) = match special {
        Some(found) => found,
        None => {
            let (first, rest) = relative.split_once('/')?;
            if first.contains('.') {
                let (resource, key) = rest.split_once('/')?;
                (Some(first), resource, key)
            } else {
                (None, first, rest)
            }
        }
    };
    (!resource.is_empty() && !key.is_empty() && !key.ends_with('/'))
        .then_some((group, resource, key))
}

/// The resource of an object stored under a key that [`parse`]d into `named_group` and
/// `resource`: the key's group, or (for built-in resources, whose keys do not name it) the
/// group of the object's `apiVersion` (`""` for `v1`).
pub(crate) fn group_resource(
    named_group: Option<&str>,
    resource: &str,
    object: &serde_json::Value,
) -> GroupResource {
    let group = named_group.unwrap_or_else(|| {
        let api_version = object
            .get("apiVersion")
            .and_then(serde_json::Value::as_str)
            .unwrap_or("");
        api_version.rsplit_once('/').map_or("", |(group, _)| group)
    });
    GroupResource::new(group, resource)
}

/// The first key after every key that starts with `prefix` (etcd's range end for a
/// prefix); empty (all keys to the end) when there is none.
#[cfg_attr(not(feature = "etcd"), allow(dead_code))]
pub(crate) fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root(group: &str, resource: &str) -> String {
        resource_root("/registry", &GroupResource::new(group, resource))
    }

    #[test]
    fn keys_follow_kube_apiserver() {
        assert_eq!(root("", "pods"), "/registry/pods/");
        assert_eq!(root("apps", "deployments"), "/registry/deployments/");
        assert_eq!(root("", "services"), "/registry/services/specs/");
        assert_eq!(root("", "endpoints"), "/registry/services/endpoints/");
        assert_eq!(root("", "nodes"), "/registry/minions/");
        assert_eq!(root("networking.k8s.io", "ingresses"), "/registry/ingress/");
        assert_eq!(
            root("rbac.authorization.k8s.io", "roles"),
            "/registry/roles/"
        );
        assert_eq!(
            root("apiextensions.k8s.io", "customresourcedefinitions"),
            "/registry/apiextensions.k8s.io/customresourcedefinitions/"
        );
        assert_eq!(
            root("example.com", "widgets"),
            "/registry/example.com/widgets/"
        );
        assert_eq!(
            root("kwok.x-k8s.io", "stages"),
            "/registry/kwok.x-k8s.io/stages/"
        );
        let bare = resource_root("", &GroupResource::new("", "pods"));
        assert_eq!(bare, "pods/");
        let trailing = resource_root("/other/", &GroupResource::new("", "pods"));
        assert_eq!(trailing, "/other/pods/");
    }

    #[test]
    fn keys_parse_back_into_resources() {
        for (group, resource) in [
            ("", "pods"),
            ("apps", "deployments"),
            ("", "services"),
            ("", "endpoints"),
            ("", "nodes"),
            ("", "replicationcontrollers"),
            ("networking.k8s.io", "ingresses"),
            ("apiextensions.k8s.io", "customresourcedefinitions"),
            ("example.com", "widgets"),
        ] {
            let root = root(group, resource);
            let relative = root.strip_prefix("/registry/").expect("under the prefix");
            let named = keys_group(group);
            assert_eq!(
                parse(&format!("{relative}ns/a")),
                Some((named, resource, "ns/a")),
                "{root}"
            );
        }
        assert_eq!(
            parse("namespaces/default"),
            Some((None, "namespaces", "default"))
        );
        assert_eq!(parse("compact_rev_key"), None);
        assert_eq!(parse("example.com/widgets"), None);
        assert_eq!(parse("pods/"), None);
    }

    /// The group a key names: its own for `<group>/<resource>` keys.
    fn keys_group(group: &str) -> Option<&str> {
        stored_as_json(group).then_some(group)
    }

    #[test]
    fn built_in_keys_take_the_group_of_the_object() {
        let deployment = serde_json::json!({"apiVersion": "apps/v1", "kind": "Deployment"});
        let named = group_resource(None, "deployments", &deployment);
        assert_eq!(named, GroupResource::new("apps", "deployments"));
        let core = group_resource(None, "pods", &serde_json::json!({"apiVersion": "v1"}));
        assert_eq!(core, GroupResource::new("", "pods"));
        let custom = group_resource(Some("example.com"), "widgets", &deployment);
        assert_eq!(custom, GroupResource::new("example.com", "widgets"));
    }

    #[test]
    fn prefix_end_is_the_next_key() {
        assert_eq!(prefix_end(b"/registry/pods/"), b"/registry/pods0");
        assert_eq!(prefix_end(b"a\xff"), b"b");
        assert_eq!(prefix_end(b"\xff\xff"), vec![0]);
    }
}
