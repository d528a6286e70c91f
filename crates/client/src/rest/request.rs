//! [`Request`]: one HTTP request to the API, before authentication and rate limiting.

use bytes::Bytes;
use http::Method;
use kubeclient_machinery::ApiResource;

/// `application/json`.
pub const JSON: &str = "application/json";

/// A request: method, path with query, body and media types. Cheap to clone (the body is
/// shared), so it can be retried.
///
/// # Examples
///
/// ```
/// use kubeclient::rest::Request;
/// use kubeclient_machinery::ApiResource;
/// use k8s_openapi::api::apps::v1::Deployment;
///
/// let path = Request::resource_path(&ApiResource::of::<Deployment>(), Some("prod"), Some("web"), Some("scale"));
/// assert_eq!(path, "/apis/apps/v1/namespaces/prod/deployments/web/scale");
/// let request = Request::get(path).query(&[("pretty", "false")]);
/// assert_eq!(request.path, "/apis/apps/v1/namespaces/prod/deployments/web/scale?pretty=false");
/// ```
#[derive(Clone, Debug)]
#[must_use]
pub struct Request {
    /// The HTTP method.
    pub method: Method,
    /// Path and query, starting with `/`.
    pub path: String,
    /// The body (empty for none).
    pub body: Bytes,
    /// The body's media type.
    pub content_type: Option<&'static str>,
    /// The `Accept` header (default `application/json`).
    pub accept: Option<String>,
    /// A long-running request (watch): no timeout applies.
    pub streaming: bool,
}

impl Request {
    /// A request with no body.
    pub fn new(method: Method, path: impl Into<String>) -> Self {
        Request {
            method,
            path: path.into(),
            body: Bytes::new(),
            content_type: None,
            accept: None,
            streaming: false,
        }
    }

    /// A GET.
    pub fn get(path: impl Into<String>) -> Self {
        Request::new(Method::GET, path)
    }

    /// This request with a body of a media type.
    pub fn body(mut self, body: impl Into<Bytes>, content_type: &'static str) -> Self {
        self.body = body.into();
        self.content_type = Some(content_type);
        self
    }

    /// This request with an `Accept` header.
    pub fn accept(mut self, accept: impl Into<String>) -> Self {
        self.accept = Some(accept.into());
        self
    }

    /// Marks the request long-running (a watch): the client timeout does not apply.
    pub fn streaming(mut self) -> Self {
        self.streaming = true;
        self
    }

    /// Appends query parameters (URL-encoded); empty values are kept.
    pub fn query(mut self, params: &[(&str, &str)]) -> Self {
        if params.is_empty() {
            return self;
        }
        let mut serializer = form_urlencoded::Serializer::new(String::new());
        for (name, value) in params {
            serializer.append_pair(name, value);
        }
        let separator = if self.path.contains('?') { '&' } else { '?' };
        self.path.push(separator);
        self.path.push_str(&serializer.finish());
        self
    }

    /// The URL path of a resource: its collection, or an object (and a subresource).
    #[must_use]
    pub fn resource_path(
        resource: &ApiResource,
        namespace: Option<&str>,
        name: Option<&str>,
        subresource: Option<&str>,
    ) -> String {
        let mut path = resource.group_version().api_prefix();
        if let Some(namespace) = namespace.filter(|_| resource.namespaced) {
            path.push_str("/namespaces/");
            path.push_str(&encode_segment(namespace));
        }
        path.push('/');
        path.push_str(&resource.plural);
        if let Some(name) = name {
            path.push('/');
            path.push_str(&encode_segment(name));
            if let Some(subresource) = subresource {
                path.push('/');
                path.push_str(subresource);
            }
        }
        path
    }
}

fn encode_segment(segment: &str) -> String {
    const SEGMENT: &percent_encoding::AsciiSet = &percent_encoding::CONTROLS
        .add(b' ')
        .add(b'/')
        .add(b'?')
        .add(b'#')
        .add(b'%')
        .add(b'"');
    percent_encoding::utf8_percent_encode(segment, SEGMENT).to_string()
}
