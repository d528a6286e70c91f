//! Request routing: from a URL path to what is asked for, as the API server's
//! `RequestInfoFactory` reads paths (apiserver-semantics §1.1).

use percent_encoding::percent_decode_str;

/// What a path names.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Route {
    /// `GET /`: the list of paths.
    Root,
    /// `/version`.
    Version,
    /// `/healthz`, `/livez`, `/readyz` (and their sub-paths).
    Health,
    /// `/api`.
    CoreVersions,
    /// `/apis`.
    GroupList,
    /// `/apis/{group}`.
    Group(String),
    /// `/api/v1`, `/apis/{group}/{version}`.
    ResourceList {
        /// The group.
        group: String,
        /// The version.
        version: String,
    },
    /// `/openapi/v2`.
    OpenApiV2,
    /// `/openapi/v3`.
    OpenApiV3Index,
    /// `/openapi/v3/{api/v1 | apis/g/v}`.
    OpenApiV3Document(String),
    /// The test-fault admin endpoints under `/_kubeclient/`.
    Admin(String),
    /// A resource request.
    Resource(ResourcePath),
    /// Under a known root (`/api/...`, `/apis/{g}/{v}/...`): answered with a NotFound Status.
    UnknownUnderApi,
    /// Anything else: answered with plain-text `404 page not found`.
    Unknown,
}

/// A path under `/api/v1` or `/apis/{g}/{v}` naming a resource.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct ResourcePath {
    /// The group; empty for the core group.
    pub(crate) group: String,
    /// The version.
    pub(crate) version: String,
    /// The namespace, for namespaced paths.
    pub(crate) namespace: Option<String>,
    /// The resource (plural).
    pub(crate) resource: String,
    /// The object name, for item paths.
    pub(crate) name: Option<String>,
    /// The subresource (`status`, `scale`), if any.
    pub(crate) subresource: Option<String>,
    /// Whether the deprecated `/watch/` prefix was used.
    pub(crate) watch_prefix: bool,
}

fn decode(segment: &str) -> String {
    percent_decode_str(segment).decode_utf8_lossy().into_owned()
}

/// Routes a path (without the query string).
pub(crate) fn route(path: &str) -> Route {
    let trimmed = path.trim_end_matches('/');
    let segments: Vec<String> = trimmed.split('/').skip(1).map(decode).collect();
    let parts: Vec<&str> = segments.iter().map(String::as_str).collect();
    match parts.as_slice() {
        [] | [""] => Route::Root,
        ["version"] => Route::Version,
        ["healthz" | "livez" | "readyz", ..] => Route::Health,
        ["openapi", "v2"] => Route::OpenApiV2,
        ["openapi", "v3"] => Route::OpenApiV3Index,
        ["openapi", "v3", rest @ ..] => Route::OpenApiV3Document(rest.join("/")),
        ["_kubeclient", rest @ ..] => Route::Admin(rest.join("/")),
        ["api"] => Route::CoreVersions,
        ["api", "v1"] => Route::ResourceList {
            group: String::new(),
            version: "v1".to_owned(),
        },
        ["api", "v1", rest @ ..] => resource_route("", "v1", rest),
        ["api", ..] => Route::UnknownUnderApi,
        ["apis"] => Route::GroupList,
        ["apis", group] => Route::Group((*group).to_owned()),
        ["apis", group, version] => Route::ResourceList {
            group: (*group).to_owned(),
            version: (*version).to_owned(),
        },
        ["apis", group, version, rest @ ..] => resource_route(group, version, rest),
        _ => Route::Unknown,
    }
}

fn resource_route(group: &str, version: &str, rest: &[&str]) -> Route {
    let (watch_prefix, rest) = match rest {
        ["watch", rest @ ..] => (true, rest),
        _ => (false, rest),
    };
    let mut path = ResourcePath {
        group: group.to_owned(),
        version: version.to_owned(),
        watch_prefix,
        ..ResourcePath::default()
    };
    let rest = match rest {
        // `/namespaces/{ns}` alone, or with a namespace subresource, is the Namespace object.
        ["namespaces", namespace] => {
            path.resource = "namespaces".to_owned();
            path.name = Some((*namespace).to_owned());
            return Route::Resource(path);
        }
        ["namespaces", namespace, sub @ ("status" | "finalize")] => {
            path.resource = "namespaces".to_owned();
            path.name = Some((*namespace).to_owned());
            path.subresource = Some((*sub).to_owned());
            return Route::Resource(path);
        }
        ["namespaces", namespace, rest @ ..] => {
            path.namespace = Some((*namespace).to_owned());
            rest
        }
        rest => rest,
    };
    match rest {
        [resource] => path.resource = (*resource).to_owned(),
        [resource, name] => {
            path.resource = (*resource).to_owned();
            path.name = Some((*name).to_owned());
        }
        [resource, name, subresource] => {
            path.resource = (*resource).to_owned();
            path.name = Some((*name).to_owned());
            path.subresource = Some((*subresource).to_owned());
        }
        _ => return Route::UnknownUnderApi,
    }
    Route::Resource(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resource(path: &str) -> ResourcePath {
        match route(path) {
            Route::Resource(resource) => resource,
            other => panic!("{path} routed to {other:?}"),
        }
    }

    #[test]
    fn namespaced_collections_items_and_subresources() {
        let pods = resource("/api/v1/namespaces/prod/pods");
        assert_eq!(
            (pods.namespace.as_deref(), pods.resource.as_str(), pods.name),
            (Some("prod"), "pods", None)
        );
        let status = resource("/apis/apps/v1/namespaces/prod/deployments/web/status");
        assert_eq!(status.group, "apps");
        assert_eq!(status.name.as_deref(), Some("web"));
        assert_eq!(status.subresource.as_deref(), Some("status"));
    }

    #[test]
    fn namespace_paths_are_the_namespace_object() {
        let ns = resource("/api/v1/namespaces/foo");
        assert_eq!(
            (ns.resource.as_str(), ns.name.as_deref(), ns.namespace),
            ("namespaces", Some("foo"), None)
        );
        let status = resource("/api/v1/namespaces/foo/status");
        assert_eq!(status.subresource.as_deref(), Some("status"));
        let all = resource("/api/v1/namespaces");
        assert_eq!((all.resource.as_str(), all.name), ("namespaces", None));
    }

    #[test]
    fn watch_prefix_and_cluster_scoped_paths() {
        let watch = resource("/api/v1/watch/namespaces/ns/configmaps/a");
        assert!(watch.watch_prefix);
        assert_eq!(watch.name.as_deref(), Some("a"));
        let node = resource("/api/v1/nodes/n1/status");
        assert_eq!((node.resource.as_str(), node.namespace), ("nodes", None));
    }

    #[test]
    fn discovery_and_unknown_paths() {
        assert_eq!(route("/"), Route::Root);
        assert_eq!(route("/apis"), Route::GroupList);
        assert_eq!(route("/apis/apps"), Route::Group("apps".into()));
        assert_eq!(
            route("/openapi/v3/apis/apps/v1"),
            Route::OpenApiV3Document("apis/apps/v1".into())
        );
        assert_eq!(route("/foo"), Route::Unknown);
        assert_eq!(route("/api/v2"), Route::UnknownUnderApi);
        assert_eq!(route("/api/v1/a/b/c/d"), Route::UnknownUnderApi);
        assert_eq!(
            resource("/api/v1/namespaces/ns/configmaps/a%20b")
                .name
                .as_deref(),
            Some("a b")
        );
    }
}
