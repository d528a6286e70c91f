//! The TCP connector: direct, or through an HTTP CONNECT proxy chosen by the kubeconfig's
//! `proxy-url` or the `HTTPS_PROXY`/`HTTP_PROXY`/`NO_PROXY` environment (as client-go).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use http::Uri;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::connect::proxy::Tunnel;
use hyper_util::client::proxy::matcher::Matcher;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use crate::error::{Error, Result};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Connects to the API server, through a proxy when one applies.
#[derive(Clone, Debug)]
pub(crate) enum Connector {
    /// A direct TCP connection.
    Direct(HttpConnector),
    /// An HTTP CONNECT tunnel through a proxy.
    Proxied(Tunnel<HttpConnector>),
}

impl Connector {
    /// The connector for `cluster_url`: `proxy_url` if given, else the environment's proxy
    /// for that URL (honouring `NO_PROXY`), else direct.
    pub(crate) fn new(
        http: HttpConnector,
        cluster_url: &Uri,
        proxy_url: Option<&str>,
    ) -> Result<Self> {
        let matcher = match proxy_url.filter(|p| !p.is_empty()) {
            Some(proxy) => Matcher::builder().all(proxy.to_owned()).build(),
            None => Matcher::from_env(),
        };
        let Some(intercept) = matcher.intercept(cluster_url) else {
            return Ok(Connector::Direct(http));
        };
        let proxy = intercept.uri().clone();
        if !matches!(proxy.scheme_str(), Some("http" | "https")) {
            return Err(Error::InvalidRequest(format!(
                "proxy {proxy}: only http:// (CONNECT) proxies are supported; unset it or use an HTTP proxy"
            )));
        }
        let mut tunnel = Tunnel::new(proxy, http);
        if let Some(auth) = intercept.basic_auth() {
            tunnel = tunnel.with_auth(auth.clone());
        }
        Ok(Connector::Proxied(tunnel))
    }
}

impl tower_service::Service<Uri> for Connector {
    type Response = TokioIo<TcpStream>;
    type Error = BoxError;
    type Future =
        Pin<Box<dyn Future<Output = std::result::Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<std::result::Result<(), Self::Error>> {
        match self {
            Connector::Direct(http) => http.poll_ready(cx).map_err(Into::into),
            Connector::Proxied(tunnel) => tunnel.poll_ready(cx).map_err(Into::into),
        }
    }

    fn call(&mut self, destination: Uri) -> Self::Future {
        match self {
            Connector::Direct(http) => {
                let connecting = http.call(destination);
                Box::pin(async move { connecting.await.map_err(Into::into) })
            }
            Connector::Proxied(tunnel) => {
                let connecting = tunnel.call(destination);
                Box::pin(async move { connecting.await.map_err(Into::into) })
            }
        }
    }
}
