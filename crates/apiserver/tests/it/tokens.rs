//! Regression tests of issue 24, item 2: a TokenRequest token authenticates only for the
//! API's audiences, until it expires, and while its ServiceAccount (and bound object)
//! lives with the uid it was issued for.

use base64::Engine as _;
use kubeclient_apiserver::ApiServer;
use serde_json::{Value, json};

use crate::support::{TestServer, with_bearer};

const ADMIN: &str = "admin-secret";
const ACCOUNTS: &str = "/api/v1/namespaces/default/serviceaccounts";
const SECRETS: &str = "/api/v1/namespaces/kube-system/secrets";

async fn admin(t: &TestServer, method: &str, path: &str, body: Value) -> (u16, Value) {
    with_bearer(t, method, path.to_owned(), ADMIN.to_owned(), body).await
}

/// Creates ServiceAccount `name` in `default`.
async fn create_account(t: &TestServer, name: &str) {
    let (status, body) = admin(t, "POST", ACCOUNTS, json!({"metadata": {"name": name}})).await;
    assert_eq!(status, 201, "{body}");
}

/// A token for ServiceAccount `name` with `spec`; the TokenRequest answer.
async fn request_token(t: &TestServer, name: &str, spec: Value) -> (u16, Value) {
    admin(
        t,
        "POST",
        &format!("{ACCOUNTS}/{name}/token"),
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}),
    )
    .await
}

async fn issued(t: &TestServer, name: &str, spec: Value) -> String {
    let (status, answer) = request_token(t, name, spec).await;
    assert_eq!(status, 201, "{answer}");
    answer["status"]["token"]
        .as_str()
        .expect("a token")
        .to_owned()
}

/// The status of listing kube-system Secrets with `token`.
async fn read_secrets(t: &TestServer, token: &str) -> u16 {
    with_bearer(t, "GET", SECRETS.to_owned(), token.to_owned(), Value::Null)
        .await
        .0
}

async fn review(t: &TestServer, token: &str, audiences: Value) -> Value {
    let (status, answer) = admin(
        t,
        "POST",
        "/apis/authentication.k8s.io/v1/tokenreviews",
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
            "spec": {"token": token, "audiences": audiences}}),
    )
    .await;
    assert_eq!(status, 201, "{answer}");
    answer["status"].clone()
}

#[tokio::test]
async fn token_for_another_audience_cannot_read_secrets() {
    let t = TestServer::start_with(ApiServer::builder().token(ADMIN)).await;
    create_account(&t, "reader").await;
    let vault = issued(
        &t,
        "reader",
        json!({"audiences": ["https://vault.example.com"]}),
    )
    .await;
    assert_eq!(read_secrets(&t, &vault).await, 401);
    let api = issued(&t, "reader", json!({})).await;
    assert_eq!(read_secrets(&t, &api).await, 200);
    assert_eq!(review(&t, &vault, json!([])).await["authenticated"], false);
    let for_vault = review(&t, &vault, json!(["https://vault.example.com"])).await;
    assert_eq!(for_vault["authenticated"], true, "{for_vault}");
    assert_eq!(for_vault["audiences"], json!(["https://vault.example.com"]));
}

#[tokio::test]
async fn token_of_a_deleted_or_recreated_service_account_is_refused() {
    let t = TestServer::start_with(ApiServer::builder().token(ADMIN)).await;
    create_account(&t, "builder").await;
    let token = issued(&t, "builder", json!({})).await;
    assert_eq!(read_secrets(&t, &token).await, 200);
    let (status, _) = admin(&t, "DELETE", &format!("{ACCOUNTS}/builder"), Value::Null).await;
    assert_eq!(status, 200);
    assert_eq!(read_secrets(&t, &token).await, 401, "the account is gone");
    create_account(&t, "builder").await;
    assert_eq!(
        read_secrets(&t, &token).await,
        401,
        "the account was re-created with another uid"
    );
    assert_eq!(review(&t, &token, json!([])).await["authenticated"], false);
}

#[tokio::test]
async fn token_of_a_deleted_service_account_is_refused_even_without_a_server_token() {
    let t = TestServer::start().await;
    create_account(&t, "builder").await;
    let token = issued(&t, "builder", json!({})).await;
    let (status, _) = admin(&t, "DELETE", &format!("{ACCOUNTS}/builder"), Value::Null).await;
    assert_eq!(status, 200);
    assert_eq!(read_secrets(&t, &token).await, 401);
}

#[tokio::test]
async fn token_bound_to_a_secret_ends_with_the_secret() {
    let t = TestServer::start_with(ApiServer::builder().token(ADMIN)).await;
    create_account(&t, "bound").await;
    let secrets = "/api/v1/namespaces/default/secrets";
    let (status, secret) = admin(&t, "POST", secrets, json!({"metadata": {"name": "s1"}})).await;
    assert_eq!(status, 201);
    let uid = secret["metadata"]["uid"].as_str().unwrap().to_owned();
    let reference = json!({"kind": "Secret", "apiVersion": "v1", "name": "s1"});
    let token = issued(&t, "bound", json!({"boundObjectRef": reference})).await;
    assert_eq!(read_secrets(&t, &token).await, 200);

    let (status, answer) = request_token(
        &t,
        "bound",
        json!({"boundObjectRef": {"kind": "Secret", "apiVersion": "v1", "name": "s1", "uid": "other"}}),
    )
    .await;
    assert_eq!(status, 409, "{answer}");
    assert_eq!(
        answer["message"],
        "Operation cannot be fulfilled on Secret \"s1\": the UID in the bound object reference (other) does not match the UID in record. The object might have been deleted and then recreated"
    );
    let (status, answer) = request_token(
        &t,
        "bound",
        json!({"boundObjectRef": {"kind": "ConfigMap", "apiVersion": "v1", "name": "c"}}),
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(
        answer["message"],
        "cannot bind token to object of type /v1, Kind=ConfigMap"
    );
    let (status, _) = request_token(
        &t,
        "bound",
        json!({"boundObjectRef": {"kind": "Secret", "apiVersion": "v1", "name": "missing"}}),
    )
    .await;
    assert_eq!(status, 404);

    let (status, _) = admin(&t, "DELETE", &format!("{secrets}/s1"), Value::Null).await;
    assert_eq!(status, 200);
    assert_eq!(
        read_secrets(&t, &token).await,
        401,
        "the bound Secret {uid} is gone"
    );
}

#[tokio::test]
async fn expiration_seconds_over_2_to_the_32_is_422_and_a_string_is_400() {
    let t = TestServer::start_with(ApiServer::builder().token(ADMIN)).await;
    create_account(&t, "timed").await;
    let (status, answer) =
        request_token(&t, "timed", json!({"expirationSeconds": 4_294_967_297_i64})).await;
    assert_eq!(status, 422, "{answer}");
    assert_eq!(
        answer["message"],
        "TokenRequest.authentication.k8s.io \"\" is invalid: spec.expirationSeconds: Invalid value: 4294967297: may not specify a duration larger than 2^32 seconds"
    );
    let (status, answer) = request_token(&t, "timed", json!({"expirationSeconds": "abc"})).await;
    assert_eq!(status, 400, "{answer}");
    assert_eq!(
        answer["message"],
        "TokenRequest in version \"v1\" cannot be handled as a TokenRequest: json: cannot unmarshal string into Go struct field TokenRequestSpec.spec.expirationSeconds of type int64"
    );
    let (status, _) =
        request_token(&t, "timed", json!({"expirationSeconds": 4_294_967_296_i64})).await;
    assert_eq!(status, 201, "2^32 itself is allowed (and capped)");
}

#[tokio::test]
async fn service_account_issuer_and_api_audiences_are_configurable() {
    let t = TestServer::start_with(
        ApiServer::builder()
            .token(ADMIN)
            .service_account_issuer("https://issuer.example")
            .api_audiences(["https://api.example", "second"]),
    )
    .await;
    create_account(&t, "ci").await;
    let (status, answer) = request_token(&t, "ci", json!({})).await;
    assert_eq!(status, 201);
    assert_eq!(
        answer["spec"]["audiences"],
        json!(["https://api.example", "second"])
    );
    let token = answer["status"]["token"].as_str().unwrap().to_owned();
    let claims = token.split('.').nth(1).unwrap();
    let claims: Value = serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(claims)
            .unwrap(),
    )
    .unwrap();
    assert_eq!(claims["iss"], "https://issuer.example");
    assert_eq!(claims["kubernetes.io"]["serviceaccount"]["name"], "ci");
    assert_eq!(read_secrets(&t, &token).await, 200);
    let second = issued(&t, "ci", json!({"audiences": ["second"]})).await;
    assert_eq!(
        read_secrets(&t, &second).await,
        200,
        "any API audience will do"
    );
    let default_audience = issued(
        &t,
        "ci",
        json!({"audiences": ["https://kubernetes.default.svc.cluster.local"]}),
    )
    .await;
    assert_eq!(
        read_secrets(&t, &default_audience).await,
        401,
        "the default audience is not one of this server's"
    );
}
