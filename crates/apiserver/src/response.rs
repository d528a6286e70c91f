//! Response building: JSON bodies, Status errors (with `Retry-After`), plain text, and
//! streaming bodies for watches.

use crate::storage::TypeMetaFirst;
use std::convert::Infallible;

use bytes::Bytes;
use http::header::{CONTENT_TYPE, HeaderValue, RETRY_AFTER};
use http::{Response, StatusCode};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Frame;
use kubeclient_machinery::Status;
use serde::Serialize;
use tokio::sync::mpsc;

/// The body type of every response.
pub(crate) type Body = BoxBody<Bytes, Infallible>;

/// A request failure: the Status to answer with.
pub(crate) type HandlerResult<T> = Result<T, Box<Status>>;

/// A full body.
pub(crate) fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into()).boxed()
}

/// A streaming body fed by a channel of chunks; the body ends when the sender is dropped.
pub(crate) fn streaming(chunks: mpsc::Receiver<Bytes>) -> Body {
    let stream = futures_util::stream::unfold(chunks, |mut chunks| async move {
        let chunk = chunks.recv().await?;
        Some((Ok::<_, Infallible>(Frame::data(chunk)), chunks))
    });
    BodyExt::boxed(StreamBody::new(stream))
}

/// A response with a body and content type.
pub(crate) fn with_body(
    status: StatusCode,
    content_type: &'static str,
    body: Body,
) -> Response<Body> {
    let mut response = Response::new(body);
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

/// A JSON response from bytes already encoded.
pub(crate) fn json_bytes(status: StatusCode, bytes: impl Into<Bytes>) -> Response<Body> {
    let bytes: Bytes = bytes.into();
    // kube-apiserver's JSON encoder ends every body with a newline.
    let body = if bytes.ends_with(b"\n") {
        bytes
    } else {
        let mut terminated = Vec::with_capacity(bytes.len() + 1);
        terminated.extend_from_slice(&bytes);
        terminated.push(b'\n');
        Bytes::from(terminated)
    };
    with_body(status, "application/json", full(body))
}

/// Adds a `Warning: 299 - "<text>"` header per warning (RFC 7234 warn-code 299, as the
/// API server sends them; kubectl prints each as `Warning: <text>`).
pub(crate) fn with_warnings(mut response: Response<Body>, warnings: &[String]) -> Response<Body> {
    for warning in warnings {
        if let Ok(value) = HeaderValue::from_str(&format!("299 - {warning:?}")) {
            response.headers_mut().append(http::header::WARNING, value);
        }
    }
    response
}

/// A JSON response in kube-apiserver's field order: a JSON value with `kind` and
/// `apiVersion` first; a typed value (a `Status`) in its declared field order, which is
/// Go's.
pub(crate) fn json<T: Serialize + 'static>(status: StatusCode, value: &T) -> Response<Body> {
    let encoded = match (value as &dyn std::any::Any).downcast_ref::<serde_json::Value>() {
        Some(value) => serde_json::to_vec(&TypeMetaFirst(value)),
        None => serde_json::to_vec(value),
    };
    match encoded {
        Ok(bytes) => json_bytes(status, bytes),
        Err(err) => status_response(&Status::internal_error(&err.to_string())),
    }
}

/// A plain-text response.
pub(crate) fn text(status: StatusCode, body: &'static str) -> Response<Body> {
    with_body(status, "text/plain; charset=utf-8", full(body))
}

/// A Status response: the HTTP code is the Status code (500 if absent), and a positive
/// `retryAfterSeconds` becomes a `Retry-After` header.
pub(crate) fn status_response(status: &Status) -> Response<Body> {
    let code = StatusCode::from_u16(status.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = json(code, status);
    if let Some(seconds) = status
        .details
        .as_ref()
        .map(|d| d.retry_after_seconds)
        .filter(|s| *s > 0)
        && let Ok(value) = HeaderValue::from_str(&seconds.to_string())
    {
        response.headers_mut().insert(RETRY_AFTER, value);
    }
    response
}

/// Boxes a Status as a handler error.
pub(crate) fn fail(status: Status) -> Box<Status> {
    Box::new(status)
}
