//! HTTP request handling: routing, authentication, content negotiation, and one module
//! per group of verbs.

mod call;
mod field_validation;
mod impersonation;
mod live_uid;
mod negotiate;
mod object;
mod read;
mod request_attributes;
mod route;
mod table;
mod watch;
mod write;

use std::sync::Arc;

use bytes::Bytes;
use http::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, USER_AGENT};
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Limited};
use kubeclient_machinery::protobuf;
use kubeclient_machinery::{ErrorChain, Status, StatusReason};
use serde_json::json;

use crate::authentication::{self, UserInfo};
use crate::authorization::{self, AuthorizationMode, Decision};
use crate::faults::Fault;
use crate::query;
use crate::registry::{ResourceDef, Special, discovery, openapi};
use crate::response::{self, Body, HandlerResult, json, status_response, text};
use crate::state::State;
use call::Call;
use impersonation::ImpersonationError;
use live_uid::live_uid;
use negotiate::Encoding;
use route::{ResourcePath, Route, route};

/// What the endpoints make of a request: their answer, or a Pod stream request for the
/// streams layer (`crate::streams`, the kubelet's part), authenticated, routed and past the
/// test faults. The server hands it over; the endpoints never call the streams.
pub(crate) enum Handled<B> {
    /// The endpoints' answer.
    Answer(Response<Body>),
    /// `.../namespaces/{namespace}/pods/{name}/{log,exec,attach,portforward}`.
    PodStream {
        request: Request<B>,
        namespace: String,
        name: String,
        subresource: String,
    },
    /// `POST /_kubeclient/pods/{namespace}/{name}/log` (admin): log lines to append.
    PodLogAppend {
        request: Request<B>,
        namespace: String,
        name: String,
    },
}

impl<B> From<Response<Body>> for Handled<B> {
    fn from(response: Response<Body>) -> Self {
        Handled::Answer(response)
    }
}

/// Serves one request. `client_certificate` is the user of the client certificate TLS
/// verified against the server's CA, if any.
pub(crate) async fn handle<B>(
    state: Arc<State>,
    mut request: Request<B>,
    client_certificate: Option<&UserInfo>,
) -> Handled<B>
where
    B: hyper::body::Body + Send,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let path = request.uri().path().to_owned();
    let route = route(&path);
    if tracing::enabled!(tracing::Level::DEBUG) {
        tracing::debug!(method = %request.method(), uri = %redacted_uri(request.uri()), "request");
    }
    let public = matches!(route, Route::Health | Route::Version);
    let bearer = request
        .headers()
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let user = {
        let live_uid = live_uid(&state);
        let check = authentication::TokenCheck {
            audiences: &state.config.api_audiences,
            live_uid: &live_uid,
        };
        authentication::authenticate(
            state.config.token.as_deref(),
            &state.tokens,
            &check,
            bearer,
            client_certificate,
        )
    };
    match user {
        Some(user) => {
            let mode = state.config.authorization_mode;
            let user = match impersonation::acting_user(&request, user, mode, &state.store) {
                Ok(user) => user,
                Err(ImpersonationError::NoUser(message)) => {
                    return response::with_body(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        "text/plain; charset=utf-8",
                        response::full(message),
                    )
                    .into();
                }
                Err(ImpersonationError::Forbidden(status)) => {
                    return status_response(&status).into();
                }
            };
            if !public && mode != AuthorizationMode::AlwaysAllow {
                let attributes =
                    request_attributes::request_attributes(&request, &route, user.clone());
                if let Decision::Deny(reason) =
                    authorization::authorize(mode, &state.store, &attributes)
                {
                    return status_response(&attributes.forbidden(&reason)).into();
                }
            }
            request.extensions_mut().insert(user);
        }
        None if !public => {
            return status_response(&Status::failure(StatusReason::Unauthorized, "Unauthorized"))
                .into();
        }
        None => {}
    }
    if let Route::Admin(action) = &route
        && state.config.admin_enabled
        && let Some((namespace, name)) = pod_log_path(action)
    {
        return Handled::PodLogAppend {
            request,
            namespace,
            name,
        };
    }
    if let Route::Resource(path) = route {
        return resource_request(state, request, path).await;
    }
    answer(&state, &request, route).into()
}

/// The answer to a request for anything but a resource.
fn answer<B>(state: &State, request: &Request<B>, route: Route) -> Response<Body> {
    let registry = &state.registry;
    match route {
        Route::Root => json(
            StatusCode::OK,
            &json!({"paths": ["/api", "/api/v1", "/apis", "/healthz", "/livez", "/openapi/v2", "/openapi/v3", "/readyz", "/version"]}),
        ),
        Route::Version => json(
            StatusCode::OK,
            &json!({
                "major": "1", "minor": state.config.kubernetes_minor_version.to_string(),
                "gitVersion": format!("v1.{}.0-kubeclient", state.config.kubernetes_minor_version), "gitCommit": "0000000000000000000000000000000000000000",
                "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.25.0", "compiler": "gc",
                "platform": format!("{}/{}", std::env::consts::OS, if cfg!(target_arch = "x86_64") { "amd64" } else { std::env::consts::ARCH }),
            }),
        ),
        Route::Health => text(StatusCode::OK, "ok"),
        Route::CoreVersions | Route::GroupList
            if discovery::wants_aggregated(header_str(request, http::header::ACCEPT)) =>
        {
            aggregated_discovery(
                registry,
                matches!(route, Route::CoreVersions),
                header_str(request, http::header::IF_NONE_MATCH),
            )
        }
        Route::CoreVersions => json(
            StatusCode::OK,
            &discovery::api_versions(&state.config.server_address),
        ),
        Route::GroupList => json(StatusCode::OK, &discovery::api_group_list(registry)),
        Route::Group(group) if registry.serves(&group, None) => {
            json(StatusCode::OK, &discovery::api_group(registry, &group))
        }
        Route::ResourceList { group, version } if registry.serves(&group, Some(&version)) => json(
            StatusCode::OK,
            &discovery::api_resource_list(registry, &group, &version),
        ),
        Route::OpenApiV2 => response::with_body(
            StatusCode::OK,
            "application/com.github.proto-openapi.spec.v2.v1.0+protobuf",
            response::full(Bytes::new()),
        ),
        Route::OpenApiV3Index => json(StatusCode::OK, &openapi::v3_index(registry)),
        Route::OpenApiV3Document(key) => match openapi::v3_document(registry, &key) {
            Some(document) => json(StatusCode::OK, &document),
            None => not_found_text(),
        },
        Route::Admin(action) if state.config.admin_enabled => {
            match admin_count(query::Query::parse(request.uri().query()).get("count")) {
                Ok(count) => admin(state, request.method(), &action, count),
                Err(status) => status_response(&status),
            }
        }
        Route::UnknownUnderApi | Route::Resource(_) => not_found_status(),
        Route::Group(_) | Route::ResourceList { .. } | Route::Admin(_) | Route::Unknown => {
            not_found_text()
        }
    }
}

/// The URI for logs, with the values of token-like query parameters (`token`,
/// `access_token`, `id_token` ...) replaced by `REDACTED`.
fn redacted_uri(uri: &http::Uri) -> String {
    let Some(query) = uri.query() else {
        return uri.to_string();
    };
    let redacted: Vec<String> = query
        .split('&')
        .map(|pair| {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            let decoded = percent_encoding::percent_decode_str(name).decode_utf8_lossy();
            let lower = decoded.to_ascii_lowercase();
            if !value.is_empty()
                && (lower.contains("token")
                    || lower.contains("password")
                    || lower.contains("secret"))
            {
                format!("{name}=REDACTED")
            } else {
                pair.to_owned()
            }
        })
        .collect();
    format!("{}?{}", uri.path(), redacted.join("&"))
}

/// `pods/{namespace}/{name}/log` (an admin path) as namespace and name.
fn pod_log_path(action: &str) -> Option<(String, String)> {
    match action.split('/').collect::<Vec<_>>().as_slice() {
        ["pods", namespace, name, "log"] if !namespace.is_empty() && !name.is_empty() => {
            Some(((*namespace).to_owned(), (*name).to_owned()))
        }
        _ => None,
    }
}

fn header_str<B>(request: &Request<B>, name: http::header::HeaderName) -> Option<&str> {
    request.headers().get(name).and_then(|v| v.to_str().ok())
}

/// The aggregated discovery document, with its GVK echoed in the Content-Type (the only
/// endpoint that does so), an ETag, and 304 when the client already has it.
fn aggregated_discovery(
    registry: &crate::registry::Registry,
    core: bool,
    if_none_match: Option<&str>,
) -> Response<Body> {
    let body = discovery::aggregated(registry, core).to_string();
    let etag = format!("\"{}\"", openapi::content_hash(&body));
    let mut response = if if_none_match == Some(etag.as_str()) {
        let mut response = Response::new(response::full(bytes::Bytes::new()));
        *response.status_mut() = StatusCode::NOT_MODIFIED;
        response
    } else {
        response::with_body(
            StatusCode::OK,
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
            response::full(body),
        )
    };
    let headers = response.headers_mut();
    if let Ok(value) = http::HeaderValue::from_str(&etag) {
        headers.insert(http::header::ETAG, value);
    }
    headers.insert(http::header::VARY, http::HeaderValue::from_static("Accept"));
    headers.insert(
        http::header::CACHE_CONTROL,
        http::HeaderValue::from_static("public"),
    );
    response
}

fn not_found_text() -> Response<Body> {
    text(StatusCode::NOT_FOUND, "404 page not found\n")
}

fn not_found_status() -> Response<Body> {
    status_response(&Status::failure(
        StatusReason::NotFound,
        "the server could not find the requested resource",
    ))
}

/// The `count` of an admin fault request: 1 when absent, else a whole number from 0 to
/// [`MAX_FAULT_COUNT`](crate::faults::MAX_FAULT_COUNT).
fn admin_count(raw: Option<&str>) -> Result<usize, Box<Status>> {
    let Some(raw) = raw else { return Ok(1) };
    raw.parse::<u64>()
        .ok()
        .filter(|count| *count <= crate::faults::MAX_FAULT_COUNT)
        .and_then(|count| usize::try_from(count).ok())
        .ok_or_else(|| {
            Box::new(Status::bad_request(format!(
                "count must be a whole number from 0 to {}, not {raw:?}",
                crate::faults::MAX_FAULT_COUNT
            )))
        })
}

/// `POST /_kubeclient/faults/{kind}?count=N` and friends, for `kubeclient serve --enable-faults`.
fn admin(state: &State, method: &Method, action: &str, count: usize) -> Response<Body> {
    if method != Method::POST {
        return status_response(&Status::failure(
            StatusReason::MethodNotAllowed,
            "admin paths accept POST only",
        ));
    }
    match action {
        "faults/drop-watches" => state.store.drop_watchers(),
        "faults/compact" => state.store.compact(),
        "faults/clear" => state.faults.clear(),
        "faults/too-many-requests" => state.faults.fail_next(
            count,
            Fault::TooManyRequests {
                retry_after_seconds: 1,
            },
        ),
        "faults/internal-error" => state.faults.fail_next(count, Fault::InternalError),
        "faults/expired" => state.faults.fail_next(count, Fault::Expired),
        _ => return not_found_text(),
    }
    json(StatusCode::OK, &json!({"done": action}))
}

async fn resource_request<B>(
    state: Arc<State>,
    request: Request<B>,
    path: ResourcePath,
) -> Handled<B>
where
    B: hyper::body::Body + Send,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let Some(resource) = state
        .registry
        .lookup(&path.group, &path.version, &path.resource)
    else {
        return if state.registry.serves(&path.group, Some(&path.version)) {
            not_found_status()
        } else {
            not_found_text()
        }
        .into();
    };
    if (path.namespace.is_some() && !resource.namespaced)
        || path
            .subresource
            .as_deref()
            .is_some_and(|sub| !serves_subresource(&resource, sub))
    {
        return not_found_status().into();
    }
    let mut request = request;
    if let Some(accept) = request
        .headers()
        .get(ACCEPT)
        .and_then(|v| v.to_str().ok())
        .and_then(|accept| state.faults.rewrite_accept(accept))
        .and_then(|accept| http::HeaderValue::from_str(&accept).ok())
    {
        request.headers_mut().insert(ACCEPT, accept);
    }
    let query = query::Query::parse(request.uri().query());
    let is_watch = query.flag("watch") || path.watch_prefix;
    let routed = Routed {
        resource,
        path,
        query,
        is_watch,
    };
    let path = &routed.path;
    let user_agent = request
        .headers()
        .get(USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let is_get = *request.method() == Method::GET;
    state.faults.count_request(
        is_get && path.name.is_none() && path.subresource.is_none(),
        is_get && is_watch,
    );
    if let Some(fault) = state
        .faults
        .for_user_agent(user_agent)
        .or_else(|| state.faults.take())
    {
        return if is_watch && fault == Fault::Expired && *request.method() == Method::GET {
            watch::error_stream(fault.status())
        } else {
            status_response(&fault.status())
        }
        .into();
    }
    let delay = state.faults.delay();
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    if let (true, Some(namespace), Some(name), Some(subresource)) = (
        path.group.is_empty() && path.resource == "pods",
        path.namespace.as_deref(),
        path.name.as_deref(),
        path.subresource.as_deref(),
    ) && POD_STREAMS.contains(&subresource)
    {
        return Handled::PodStream {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            subresource: subresource.to_owned(),
            request,
        };
    }
    match resource_call(state, request, routed).await {
        Ok(response) | Err(response) => response.into(),
    }
}

/// The Pod subresources the streams layer serves (the kubelet's part).
const POD_STREAMS: &[&str] = &["log", "exec", "attach", "portforward"];

/// What routing found for a resource request.
struct Routed {
    resource: Arc<ResourceDef>,
    path: ResourcePath,
    query: query::Query,
    is_watch: bool,
}

/// The object verbs of a resource request (everything but the Pod streams), answered in
/// the negotiated encoding.
async fn resource_call<B>(
    state: Arc<State>,
    request: Request<B>,
    routed: Routed,
) -> Result<Response<Body>, Response<Body>>
where
    B: hyper::body::Body + Send,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let (resource, is_watch) = (&routed.resource, routed.is_watch);
    // Watches frame their events themselves.
    let target = if *request.method() == Method::GET && routed.path.name.is_none() {
        negotiate::Target::List
    } else {
        negotiate::Target::Object
    };
    let encoding = if is_watch {
        Encoding::Json
    } else {
        response_encoding(
            header_str(&request, http::header::ACCEPT),
            target,
            resource.builtin,
        )
    };
    // Writes answer PartialObjectMetadata too when asked (GETs do it themselves).
    let metadata_only = !is_watch
        && *request.method() != Method::GET
        && matches!(
            negotiate::negotiate_encoding(
                header_str(&request, http::header::ACCEPT),
                negotiate::Target::Object,
                resource.builtin,
            ),
            Ok((negotiate::Output::PartialObjectMetadata, _))
        );
    let deprecation = resource.deprecation_warning.clone();
    let mut answer = json_resource_call(state, request, routed).await;
    if let Some(warning) = deprecation {
        let warn = |response| response::with_warnings(response, std::slice::from_ref(&warning));
        answer = answer.map(warn).map_err(warn);
    }
    if metadata_only && let Ok(response) = answer {
        answer = Ok(metadata_of_response(response).await);
    }
    match (answer, encoding) {
        (answer, Encoding::Json) => answer,
        (Ok(response), Encoding::Protobuf) => Ok(encode_response(response).await),
        (Err(response), Encoding::Protobuf) => Err(encode_response(response).await),
    }
}

/// A write's JSON answer as PartialObjectMetadata (a Status stays as it is).
async fn metadata_of_response(response: Response<Body>) -> Response<Body> {
    let (parts, body) = response.into_parts();
    let Ok(collected) = body.collect().await;
    let bytes = collected.to_bytes();
    match serde_json::from_slice::<serde_json::Value>(&bytes) {
        Ok(object) if object.get("kind").and_then(|k| k.as_str()) != Some("Status") => {
            let status = parts.status;
            let mut converted = json(status, &table::partial_object_metadata(&object));
            for (name, value) in &parts.headers {
                if name != CONTENT_TYPE && name != http::header::CONTENT_LENGTH {
                    converted.headers_mut().append(name, value.clone());
                }
            }
            converted
        }
        _ => Response::from_parts(parts, response::full(bytes)),
    }
}

/// The encoding of an object, list, PartialObjectMetadata or Status response (Tables stay
/// JSON).
fn response_encoding(accept: Option<&str>, target: negotiate::Target, builtin: bool) -> Encoding {
    match negotiate::negotiate_encoding(accept, target, builtin) {
        Ok((negotiate::Output::Table, _)) | Err(_) => Encoding::Json,
        Ok((_, encoding)) => encoding,
    }
}

/// Re-encodes a JSON object, list or Status response as protobuf (apiserver-semantics
/// §8.3). A body that has no protobuf form is left as JSON, which the client also accepts.
async fn encode_response(response: Response<Body>) -> Response<Body> {
    let is_json = response
        .headers()
        .get(CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes() == b"application/json");
    if !is_json {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let Ok(collected) = body.collect().await;
    let bytes = collected.to_bytes();
    let encoded = serde_json::from_slice::<serde_json::Value>(&bytes)
        .map_err(|err| err.to_string())
        .and_then(|value| protobuf::encode(&value).map_err(|err| ErrorChain(&err).to_string()));
    match encoded {
        Ok(encoded) => {
            parts.headers.insert(
                CONTENT_TYPE,
                http::HeaderValue::from_static(protobuf::MEDIA_TYPE),
            );
            parts.headers.remove(http::header::CONTENT_LENGTH);
            Response::from_parts(parts, response::full(encoded))
        }
        Err(err) => {
            tracing::warn!(%err, "a response has no protobuf form; sent as JSON");
            Response::from_parts(parts, response::full(bytes))
        }
    }
}

/// The object verbs of a resource request, answered in JSON.
async fn json_resource_call<B>(
    state: Arc<State>,
    request: Request<B>,
    routed: Routed,
) -> Result<Response<Body>, Response<Body>>
where
    B: hyper::body::Body + Send,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let Routed {
        resource,
        path,
        query,
        is_watch,
    } = routed;
    let header = |name| {
        request
            .headers()
            .get(name)
            .and_then(|v: &http::HeaderValue| v.to_str().ok())
            .map(str::to_owned)
    };
    let accept = header(http::header::ACCEPT);
    let content_type = header(CONTENT_TYPE).unwrap_or_default();
    let user_agent = header(USER_AGENT).unwrap_or_default();
    let user = request
        .extensions()
        .get::<UserInfo>()
        .cloned()
        .unwrap_or_else(UserInfo::admin);
    let method = request.method().clone();
    let limit = state.config.limits.max_request_body_bytes;
    let too_large = || {
        status_response(&Status::failure(
            StatusReason::RequestEntityTooLarge,
            format!("Request entity too large: limit is {limit}"),
        ))
    };
    // Refuse an announced oversized body before reading any of it: hyper sends
    // `100 Continue` only when the body is first read.
    let announced = request
        .headers()
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if announced.is_some_and(|length| length > limit as u64) {
        return Err(too_large());
    }
    let body = match Limited::new(request.into_body(), limit).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(err) if err.is::<http_body_util::LengthLimitError>() => return Err(too_large()),
        Err(err) => {
            return Err(status_response(&Status::bad_request(format!(
                "unable to read the request body: {err}"
            ))));
        }
    };
    let call = Call {
        state,
        resource,
        path,
        query,
        accept,
        content_type,
        user_agent,
        body,
        user,
    };
    let has_name = call.path.name.is_some();
    // Verbs a resource does not list (reviews are create-only, componentstatuses
    // read-only) are refused as kube-apiserver refuses them.
    let verb = match (&method, has_name) {
        (&Method::GET | &Method::HEAD, _) if is_watch => "watch",
        (&Method::GET | &Method::HEAD, true) => "get",
        (&Method::GET | &Method::HEAD, false) => "list",
        (&Method::POST, _) => "create",
        (&Method::PUT, _) => "update",
        (&Method::PATCH, _) => "patch",
        (&Method::DELETE, true) => "delete",
        (&Method::DELETE, false) => "deletecollection",
        _ => "",
    };
    if call.path.subresource.is_none() && !call.resource.verbs.iter().any(|v| v == verb) {
        return Err(status_response(&Status::failure(
            StatusReason::MethodNotAllowed,
            "the server does not allow this method on the requested resource",
        )));
    }
    let writer: fn(&Call) -> HandlerResult<Response<Body>> = match (method, has_name) {
        (Method::GET | Method::HEAD, _) if is_watch => {
            return watch::watch(call).await.map_err(|s| status_response(&s));
        }
        (Method::GET | Method::HEAD, true) => {
            return read::get(&call).await.map_err(|s| status_response(&s));
        }
        (Method::GET | Method::HEAD, false) => {
            return read::list(&call).await.map_err(|s| status_response(&s));
        }
        (Method::POST, _) if call.resource.special == Special::Review => write::review,
        (Method::POST, false) => write::create,
        (Method::POST, true) if call.path.subresource.as_deref() == Some("token") => {
            write::token_request
        }
        (Method::POST, true) if call.path.subresource.as_deref() == Some("eviction") => {
            write::evict
        }
        (Method::POST, true) if call.path.subresource.as_deref() == Some("binding") => {
            write::bind_pod
        }
        (Method::PUT, true) => write::update,
        (Method::PATCH, true) => write::patch,
        (Method::DELETE, true) => write::delete,
        (Method::DELETE, false) => write::delete_collection,
        _ => {
            return Err(status_response(&Status::failure(
                StatusReason::MethodNotAllowed,
                "the server does not allow this method on the requested resource",
            )));
        }
    };
    // Writes decode, merge, validate and encode whole objects (seconds for a huge one):
    // they run on the blocking pool so the async workers keep serving reads meanwhile.
    match tokio::task::spawn_blocking(move || writer(&call)).await {
        Ok(result) => result.map_err(|status| status_response(&status)),
        Err(err) => {
            tracing::error!(%err, "a write handler panicked");
            Err(status_response(&Status::internal_error(
                "the write failed unexpectedly (a bug in the server; see its log)",
            )))
        }
    }
}

fn serves_subresource(resource: &ResourceDef, subresource: &str) -> bool {
    match subresource {
        "status" => resource.status_subresource,
        "scale" => resource.scale.is_some(),
        "log"
        | "exec"
        | "attach"
        | "portforward"
        | "eviction"
        | "ephemeralcontainers"
        | "binding" => resource.group.is_empty() && resource.plural == "pods",
        "token" => resource.group.is_empty() && resource.plural == "serviceaccounts",
        "approval" => {
            resource.group == "certificates.k8s.io"
                && resource.plural == "certificatesigningrequests"
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_in_query_string_is_redacted_in_debug_logs() {
        let uri: http::Uri = "/api/v1/pods?watch=1&access_token=s3cret&Token=x&tok=y"
            .parse()
            .unwrap();
        assert_eq!(
            redacted_uri(&uri),
            "/api/v1/pods?watch=1&access_token=REDACTED&Token=REDACTED&tok=y"
        );
        let plain: http::Uri = "/api/v1/pods".parse().unwrap();
        assert_eq!(redacted_uri(&plain), "/api/v1/pods");
    }

    #[test]
    fn admin_count_is_bounded() {
        assert_eq!(admin_count(None).unwrap(), 1);
        assert_eq!(admin_count(Some("1000000")).unwrap(), 1_000_000);
        assert!(admin_count(Some("18446744073709551615")).is_err());
        assert!(admin_count(Some("1000001")).is_err());
    }
}
