//! The authorization question a request asks (kube-apiserver's `RequestInfoFactory` and
//! `GetAuthorizerAttributes`): the verb from the method, the name and the `watch` query;
//! the resource, subresource, namespace and name from the path; or the path itself for
//! requests that name no resource (`/api`, `/apis/apps/v1`, `/version`, `/foo`).

use http::{Method, Request};

use super::route::{ResourcePath, Route};
use crate::authentication::UserInfo;
use crate::authorization::Attributes;
use crate::query::Query;

/// The Pod subresources a WebSocket `GET` opens, authorized as `create` (current
/// kube-apiserver: a WebSocket upgrade needs the same permission as the SPDY `POST`).
const POD_CONNECT_SUBRESOURCES: &[&str] = &["exec", "attach", "portforward"];

/// What `request` (routed to `route`) asks of the authorizer, for `user`.
pub(crate) fn request_attributes<B>(
    request: &Request<B>,
    route: &Route,
    user: UserInfo,
) -> Attributes {
    match route {
        Route::Resource(path) => resource_attributes(request, path, user),
        _ => Attributes::path(
            user,
            &request.method().as_str().to_ascii_lowercase(),
            request.uri().path(),
        ),
    }
}

fn resource_attributes<B>(request: &Request<B>, path: &ResourcePath, user: UserInfo) -> Attributes {
    let query = Query::parse(request.uri().query());
    let watch = path.watch_prefix || query.flag("watch");
    let mut name = path.name.clone().unwrap_or_default();
    let subresource = path.subresource.as_deref().unwrap_or("");
    let method = request.method();
    let verb = if (*method == Method::GET || *method == Method::HEAD)
        && path.group.is_empty()
        && path.resource == "pods"
        && POD_CONNECT_SUBRESOURCES.contains(&subresource)
    {
        "create".to_owned()
    } else {
        match *method {
            Method::GET | Method::HEAD if watch => "watch".to_owned(),
            Method::GET | Method::HEAD if name.is_empty() => "list".to_owned(),
            Method::GET | Method::HEAD => "get".to_owned(),
            Method::POST => "create".to_owned(),
            Method::PUT => "update".to_owned(),
            Method::PATCH => "patch".to_owned(),
            Method::DELETE if name.is_empty() => "deletecollection".to_owned(),
            Method::DELETE => "delete".to_owned(),
            ref other => other.as_str().to_ascii_lowercase(),
        }
    };
    // A list or watch of one object by `metadata.name` asks about that object.
    if name.is_empty()
        && (verb == "list" || verb == "watch")
        && let Some(selected) = query
            .get("fieldSelector")
            .and_then(|selector| selector.strip_prefix("metadata.name="))
            .filter(|selected| !selected.contains(','))
    {
        selected.clone_into(&mut name);
    }
    // A Namespace is in itself: a RoleBinding in `team` may grant `get` on Namespace `team`.
    let namespace = match &path.namespace {
        Some(namespace) => namespace.clone(),
        None if path.group.is_empty() && path.resource == "namespaces" => name.clone(),
        None => String::new(),
    };
    Attributes::resource(user, &verb, &path.group, &path.resource, &namespace, &name)
        .with_subresource(subresource)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authorization::Target;
    use crate::endpoints::route::route;

    fn ask(method: Method, uri: &str) -> Attributes {
        let request = Request::builder()
            .method(method)
            .uri(uri)
            .body(())
            .expect("a request");
        let routed = route(request.uri().path());
        request_attributes(&request, &routed, UserInfo::admin())
    }

    fn resource(attributes: &Attributes) -> (&str, &str, &str, &str, &str, &str) {
        match &attributes.target {
            Target::Resource {
                group,
                resource,
                subresource,
                namespace,
                name,
            } => (
                attributes.verb.as_str(),
                group.as_str(),
                resource.as_str(),
                subresource.as_str(),
                namespace.as_str(),
                name.as_str(),
            ),
            Target::Path(path) => panic!("a path: {path}"),
        }
    }

    #[test]
    fn verbs_follow_method_name_and_watch() {
        let cases = [
            (
                Method::GET,
                "/api/v1/namespaces/a/pods",
                ("list", "", "pods", "", "a", ""),
            ),
            (
                Method::GET,
                "/api/v1/namespaces/a/pods/p",
                ("get", "", "pods", "", "a", "p"),
            ),
            (
                Method::GET,
                "/api/v1/namespaces/a/pods?watch=true",
                ("watch", "", "pods", "", "a", ""),
            ),
            (
                Method::GET,
                "/api/v1/watch/namespaces/a/pods",
                ("watch", "", "pods", "", "a", ""),
            ),
            (
                Method::GET,
                "/api/v1/namespaces/a/secrets?fieldSelector=metadata.name%3Dtoken",
                ("list", "", "secrets", "", "a", "token"),
            ),
            (
                Method::POST,
                "/apis/apps/v1/namespaces/a/deployments",
                ("create", "apps", "deployments", "", "a", ""),
            ),
            (
                Method::PUT,
                "/apis/apps/v1/namespaces/a/deployments/d/scale",
                ("update", "apps", "deployments", "scale", "a", "d"),
            ),
            (
                Method::PATCH,
                "/api/v1/nodes/n/status",
                ("patch", "", "nodes", "status", "", "n"),
            ),
            (
                Method::DELETE,
                "/api/v1/namespaces/a/pods",
                ("deletecollection", "", "pods", "", "a", ""),
            ),
            (
                Method::DELETE,
                "/api/v1/namespaces/a/pods/p",
                ("delete", "", "pods", "", "a", "p"),
            ),
            (
                Method::GET,
                "/api/v1/namespaces/a/pods/p/log",
                ("get", "", "pods", "log", "a", "p"),
            ),
            (
                Method::GET,
                "/api/v1/namespaces/a/pods/p/exec?command=ls",
                ("create", "", "pods", "exec", "a", "p"),
            ),
            (
                Method::GET,
                "/api/v1/namespaces/team",
                ("get", "", "namespaces", "", "team", "team"),
            ),
        ];
        for (method, uri, expected) in cases {
            let attributes = ask(method, uri);
            assert_eq!(resource(&attributes), expected, "{uri}");
        }
    }

    #[test]
    fn paths_that_name_no_resource_are_asked_as_paths() {
        for uri in [
            "/api",
            "/api/v1",
            "/apis/apps/v1",
            "/version",
            "/foo",
            "/openapi/v3",
        ] {
            let attributes = ask(Method::GET, uri);
            assert_eq!(attributes.verb, "get");
            let path = uri.split('?').next().unwrap_or(uri);
            assert_eq!(attributes.target, Target::Path(path.to_owned()), "{uri}");
        }
    }
}
