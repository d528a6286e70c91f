//! What the server's examples share: a plain HTTP/1 client and one request with its answer.
//! Each example uses only some of it.
#![allow(dead_code)]

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

/// The examples' HTTP client.
pub(crate) type HttpClient = Client<HttpConnector, Full<Bytes>>;

/// A new HTTP/1 client.
pub(crate) fn http_client() -> HttpClient {
    Client::builder(TokioExecutor::new()).build_http()
}

/// Sends one request and reads its whole answer.
async fn exchange(
    client: &HttpClient,
    method: &str,
    url: &str,
    content_type: &str,
    body: String,
) -> Result<(u16, Bytes), String> {
    let request = hyper::Request::builder()
        .method(method)
        .uri(url)
        .header("content-type", content_type)
        .body(Full::new(Bytes::from(body)))
        .map_err(|err| err.to_string())?;
    let response = client
        .request(request)
        .await
        .map_err(|err| err.to_string())?;
    let status = response.status().as_u16();
    let body = response
        .into_body()
        .collect()
        .await
        .map(|collected| collected.to_bytes())
        .unwrap_or_default();
    Ok((status, body))
}

/// The status of one request (the answer is read and dropped); 0 when it failed.
pub(crate) async fn send(
    client: &HttpClient,
    method: &str,
    url: &str,
    content_type: &str,
    body: String,
) -> u16 {
    exchange(client, method, url, content_type, body)
        .await
        .map_or(0, |(status, _)| status)
}

/// The status and the text of one answer; 0 and the error when the request failed.
pub(crate) async fn send_for_text(
    client: &HttpClient,
    method: &str,
    url: &str,
    content_type: &str,
    body: String,
) -> (u16, String) {
    match exchange(client, method, url, content_type, body).await {
        Ok((status, body)) => (status, String::from_utf8_lossy(&body).into_owned()),
        Err(err) => (0, err),
    }
}
