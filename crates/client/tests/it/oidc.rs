//! The kubeconfig's `oidc` auth provider against the embedded server, with an OpenID
//! provider of the test's own (discovery document and token endpoint over real HTTP): an
//! expired id-token is refreshed with the refresh token and written back to the file; the
//! issuer's refusals and missing tokens come back as errors that say what to do.

use std::sync::{Arc, Mutex};

use base64::Engine as _;
use k8s_openapi::api::core::v1::Namespace;
use kubeclient::config::{Kubeconfig, KubeconfigOptions, OidcError};
use kubeclient::machinery::ErrorChain;
use kubeclient::{Api, Client, Config, ListParams};
use kubeclient_apiserver::ApiServer;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::scratch;

/// An unsigned JWT expiring at `exp` (the client reads `exp` only; the API server checks
/// the token itself).
fn jwt(exp: i64) -> String {
    let encode = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s);
    format!(
        "{}.{}.c2ln",
        encode(r#"{"alg":"RS256","kid":"test-idp"}"#),
        encode(&format!(r#"{{"iss":"test","sub":"alice","exp":{exp}}}"#))
    )
}

fn now() -> i64 {
    jiff::Timestamp::now().as_second()
}

/// How the test's token endpoint answers.
#[derive(Clone)]
enum TokenAnswer {
    /// A new id-token and refresh token for the refresh token `expects`; 400 for another.
    Rotate {
        expects: &'static str,
        id_token: String,
        refresh_token: &'static str,
    },
    /// 400 `invalid_grant` to everything.
    Refuse,
    /// An access token but no id-token.
    NoIdToken,
}

/// One request the issuer received: method, path, `Authorization` header, body.
type Seen = (String, String, Option<String>, String);

struct Issuer {
    url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Issuer {
    async fn start(answer: TokenAnswer) -> Issuer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (base, log) = (url.clone(), seen.clone());
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let (base, log, answer) = (base.clone(), log.clone(), answer.clone());
                tokio::spawn(async move {
                    let Some(request) = read_request(&mut stream).await else {
                        return;
                    };
                    let (status, body) = respond(&base, &request, &answer);
                    log.lock().unwrap().push(request);
                    let reply = format!(
                        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = stream.write_all(reply.as_bytes()).await;
                });
            }
        });
        Issuer { url, seen }
    }

    fn token_requests(&self) -> Vec<Seen> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .filter(|(method, path, ..)| method == "POST" && path == "/token")
            .cloned()
            .collect()
    }
}

async fn read_request(stream: &mut tokio::net::TcpStream) -> Option<Seen> {
    let mut bytes = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        let read = stream.read(&mut chunk).await.ok()?;
        if read == 0 {
            return None;
        }
        bytes.extend_from_slice(&chunk[..read]);
        if let Some(end) = bytes.windows(4).position(|w| w == b"\r\n\r\n") {
            break end + 4;
        }
    };
    let head = String::from_utf8_lossy(&bytes[..head_end]).into_owned();
    let header = |name: &str| {
        head.lines().find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.eq_ignore_ascii_case(name)
                .then(|| value.trim().to_owned())
        })
    };
    let length: usize = header("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    while bytes.len() < head_end + length {
        let read = stream.read(&mut chunk).await.ok()?;
        if read == 0 {
            break;
        }
        bytes.extend_from_slice(&chunk[..read]);
    }
    let mut request_line = head.lines().next()?.split(' ');
    let method = request_line.next()?.to_owned();
    let path = request_line.next()?.to_owned();
    let body = String::from_utf8_lossy(&bytes[head_end..]).into_owned();
    Some((method, path, header("authorization"), body))
}

fn respond(base: &str, (method, path, _, body): &Seen, answer: &TokenAnswer) -> (String, String) {
    let ok = "200 OK".to_owned();
    match (method.as_str(), path.as_str()) {
        ("GET", "/.well-known/openid-configuration") => (
            ok,
            format!(r#"{{"issuer":"{base}","token_endpoint":"{base}/token"}}"#),
        ),
        ("POST", "/token") => {
            let form: std::collections::BTreeMap<String, String> =
                form_urlencoded::parse(body.as_bytes())
                    .into_owned()
                    .collect();
            let refused = (
                "400 Bad Request".to_owned(),
                r#"{"error":"invalid_grant","error_description":"the refresh token was revoked"}"#
                    .to_owned(),
            );
            if form.get("grant_type").map(String::as_str) != Some("refresh_token") {
                return refused;
            }
            match answer {
                TokenAnswer::Rotate {
                    expects,
                    id_token,
                    refresh_token,
                } if form.get("refresh_token").map(String::as_str) == Some(*expects) => (
                    ok,
                    format!(
                        r#"{{"access_token":"at","token_type":"Bearer","expires_in":3600,"id_token":"{id_token}","refresh_token":"{refresh_token}"}}"#
                    ),
                ),
                TokenAnswer::NoIdToken => (
                    ok,
                    r#"{"access_token":"at","token_type":"Bearer"}"#.to_owned(),
                ),
                TokenAnswer::Rotate { .. } | TokenAnswer::Refuse => refused,
            }
        }
        _ => ("404 Not Found".to_owned(), "{}".to_owned()),
    }
}

/// A kubeconfig file naming `server` and an oidc user of `issuer`.
fn kubeconfig_file(
    server: &ApiServer,
    issuer: &Issuer,
    id_token: &str,
    refresh: Option<&str>,
) -> std::path::PathBuf {
    let refresh = refresh.map_or(String::new(), |r| format!("        refresh-token: {r}\n"));
    let yaml = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: embedded\n  cluster:\n    server: {}\n\
         contexts:\n- name: embedded\n  context:\n    cluster: embedded\n    user: alice\n\
         current-context: embedded\nusers:\n- name: alice\n  user:\n    auth-provider:\n      name: oidc\n      config:\n\
         \x20       idp-issuer-url: {}\n        client-id: kubeclient\n        client-secret: s3cret\n\
         \x20       id-token: {id_token}\n{refresh}",
        server.url(),
        issuer.url
    );
    let path = scratch("oidc").join("config");
    std::fs::write(&path, yaml).unwrap();
    path
}

fn config_from(path: &std::path::Path) -> Config {
    let kubeconfig = Kubeconfig::read_from(path).unwrap();
    Config::from_kubeconfig(&kubeconfig, &KubeconfigOptions::default()).unwrap()
}

async fn list_namespaces(config: Config) -> kubeclient::Result<usize> {
    let client = Client::new(config).await?;
    Ok(Api::<Namespace>::all(client)
        .list(&ListParams::default())
        .await?
        .items
        .len())
}

/// The oidc settings of the file's user.
fn provider_settings(path: &std::path::Path) -> serde_json::Value {
    let kubeconfig = Kubeconfig::read_from(path).unwrap();
    kubeconfig.auth_infos[0]
        .user
        .as_ref()
        .and_then(|u| u.auth_provider.clone())
        .unwrap()["config"]
        .clone()
}

#[tokio::test]
async fn an_expired_id_token_is_refreshed_and_written_back_to_the_kubeconfig() {
    let valid = jwt(now() + 3600);
    let server = ApiServer::builder().token(&valid).start().await.unwrap();
    let issuer = Issuer::start(TokenAnswer::Rotate {
        expects: "r1",
        id_token: valid.clone(),
        refresh_token: "r2",
    })
    .await;
    let path = kubeconfig_file(&server, &issuer, &jwt(now() - 60), Some("r1"));
    assert_eq!(list_namespaces(config_from(&path)).await.unwrap(), 4);
    let posts = issuer.token_requests();
    assert_eq!(posts.len(), 1, "one refresh: {posts:?}");
    let (_, _, authorization, body) = &posts[0];
    let basic = base64::engine::general_purpose::STANDARD.encode("kubeclient:s3cret");
    assert_eq!(
        authorization.as_deref(),
        Some(format!("Basic {basic}").as_str())
    );
    assert_eq!(body, "grant_type=refresh_token&refresh_token=r1");
    let written = provider_settings(&path);
    assert_eq!(written["id-token"], valid.as_str(), "{written}");
    assert_eq!(written["refresh-token"], "r2", "the rotated refresh token");
    assert_eq!(
        written["client-secret"], "s3cret",
        "the rest of the file stays"
    );
    // A new program starts from the file: no refresh while the id-token is valid.
    assert_eq!(list_namespaces(config_from(&path)).await.unwrap(), 4);
    assert_eq!(issuer.token_requests().len(), 1);
}

#[tokio::test]
async fn without_a_refresh_token_an_expired_id_token_says_to_log_in_again() {
    let server = ApiServer::builder().token("unused").start().await.unwrap();
    let issuer = Issuer::start(TokenAnswer::Refuse).await;
    let path = kubeconfig_file(&server, &issuer, &jwt(now() - 60), None);
    let err = list_namespaces(config_from(&path)).await.unwrap_err();
    assert!(
        matches!(err, kubeclient::Error::Oidc(OidcError::NoRefreshToken)),
        "{err:?}"
    );
    assert!(err.to_string().contains("log in again"), "{err}");
    assert!(
        issuer.seen.lock().unwrap().is_empty(),
        "the issuer is never asked"
    );
}

#[tokio::test]
async fn a_refused_refresh_keeps_the_issuers_reason_and_tries_the_form_too() {
    let server = ApiServer::builder().token("unused").start().await.unwrap();
    let issuer = Issuer::start(TokenAnswer::Refuse).await;
    let path = kubeconfig_file(&server, &issuer, &jwt(now() - 60), Some("r1"));
    let err = list_namespaces(config_from(&path)).await.unwrap_err();
    let chain = ErrorChain(&err).to_string();
    assert!(
        chain.contains(
            "refused to refresh the id-token: 400 invalid_grant (the refresh token was revoked); log in again"
        ),
        "the issuer's reason and what to do: {chain}"
    );
    assert!(
        matches!(err, kubeclient::Error::Oidc(OidcError::Refused { .. })),
        "{err:?}"
    );
    let posts = issuer.token_requests();
    assert_eq!(
        posts.len(),
        2,
        "basic auth, then the client in the form: {posts:?}"
    );
    assert_eq!(posts[1].2, None);
    assert_eq!(
        posts[1].3,
        "grant_type=refresh_token&refresh_token=r1&client_id=kubeclient&client_secret=s3cret"
    );
    assert!(
        provider_settings(&path)["refresh-token"] == "r1",
        "nothing is written after a failure"
    );
}

#[tokio::test]
async fn a_token_response_without_an_id_token_is_an_error_naming_the_scope() {
    let server = ApiServer::builder().token("unused").start().await.unwrap();
    let issuer = Issuer::start(TokenAnswer::NoIdToken).await;
    let path = kubeconfig_file(&server, &issuer, &jwt(now() - 60), Some("r1"));
    let err = list_namespaces(config_from(&path)).await.unwrap_err();
    assert!(
        matches!(err, kubeclient::Error::Oidc(OidcError::NoIdToken { .. })),
        "{err:?}"
    );
    assert!(err.to_string().contains("\"openid\""), "{err}");
}

#[test]
fn other_auth_providers_and_incomplete_oidc_settings_are_refused_by_name() {
    let yaml = |provider: &str| {
        format!(
            "clusters:\n- name: c\n  cluster:\n    server: http://127.0.0.1:1\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\n\
             current-context: c\nusers:\n- name: u\n  user:\n    auth-provider:\n{provider}"
        )
    };
    let error_of = |provider: &str| {
        let kubeconfig = Kubeconfig::from_yaml(&yaml(provider)).unwrap();
        Config::from_kubeconfig(&kubeconfig, &KubeconfigOptions::default())
            .unwrap_err()
            .to_string()
    };
    let gcp = error_of("      name: gcp\n");
    assert!(gcp.contains("exec plugin"), "{gcp}");
    let missing = error_of("      name: oidc\n      config:\n        client-id: k\n");
    assert!(missing.contains("idp-issuer-url"), "{missing}");
}
