//! `POST serviceaccounts/{name}/token` (TokenRequest, what `kubectl create token` sends,
//! as protobuf): answers a token for the ServiceAccount. The embedded server does not sign
//! or verify service-account tokens; the token is JWT-shaped (header, claims, and a
//! placeholder signature) so tools that print or parse it work.

use base64::Engine as _;
use http::{Response, StatusCode};
use kubeclient_machinery::Status;
use serde_json::{Value, json};

use super::Call;
use super::object::store_key;
use super::response::{Body, HandlerResult, fail, json};

/// kube-apiserver's default: one hour.
const DEFAULT_EXPIRATION_SECONDS: i64 = 3600;
/// kube-apiserver's minimum: ten minutes.
const MIN_EXPIRATION_SECONDS: i64 = 600;
/// Two days at most, so the expiry time never overflows.
const MAX_EXPIRATION_SECONDS: i64 = 48 * 3600;
const DEFAULT_AUDIENCE: &str = "https://kubernetes.default.svc.cluster.local";

/// Creates a token for the ServiceAccount named in the path (201, as kube-apiserver).
pub(crate) fn create(call: &Call) -> HandlerResult<Response<Body>> {
    let namespace = call.path.namespace.as_deref().unwrap_or("");
    let name = call.path.name.as_deref().unwrap_or("");
    let account = call
        .state
        .store
        .get(&call.group_resource(), &store_key(Some(namespace), name))
        .ok_or_else(|| call.not_found(name))?;
    let request = call.decode_body()?;
    if request
        .get("kind")
        .and_then(Value::as_str)
        .is_some_and(|k| k != "TokenRequest")
    {
        return Err(fail(Status::bad_request("the body must be a TokenRequest")));
    }
    let spec = request.get("spec").cloned().unwrap_or_else(|| json!({}));
    let seconds = spec
        .get("expirationSeconds")
        .and_then(Value::as_i64)
        .unwrap_or(DEFAULT_EXPIRATION_SECONDS);
    if seconds < MIN_EXPIRATION_SECONDS {
        return Err(fail(Status::bad_request(format!(
            "spec.expirationSeconds: Invalid value: {seconds}: may not specify a duration less than 10 minutes"
        ))));
    }
    let seconds = seconds.min(MAX_EXPIRATION_SECONDS);
    let audiences = match spec.get("audiences").and_then(Value::as_array) {
        Some(list) if !list.is_empty() => Value::Array(list.clone()),
        _ => json!([DEFAULT_AUDIENCE]),
    };
    let now = jiff::Timestamp::now().as_second();
    let expires = now.saturating_add(seconds);
    let uid = account
        .value
        .get("metadata")
        .and_then(|m| m.get("uid"))
        .cloned()
        .unwrap_or(Value::Null);
    let claims = json!({
        "aud": audiences, "exp": expires, "iat": now, "nbf": now,
        "iss": "https://kubernetes.default.svc.cluster.local",
        "sub": format!("system:serviceaccount:{namespace}:{name}"),
        "kubernetes.io": {"namespace": namespace, "serviceaccount": {"name": name, "uid": uid}},
    });
    let encode =
        |value: &Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(value.to_string());
    let token = format!(
        "{}.{}.{}",
        encode(&json!({"alg": "none", "kid": "kubeclient-embedded"})),
        encode(&claims),
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode("unsigned")
    );
    let expiration = jiff::Timestamp::from_second(expires)
        .map(|t| t.to_string())
        .unwrap_or_default();
    let mut spec = spec;
    spec["audiences"] = audiences;
    spec["expirationSeconds"] = json!(seconds);
    Ok(json(
        StatusCode::CREATED,
        &json!({
            "kind": "TokenRequest", "apiVersion": "authentication.k8s.io/v1",
            "metadata": {"name": name, "namespace": namespace, "creationTimestamp": null},
            "spec": spec,
            "status": {"token": token, "expirationTimestamp": expiration},
        }),
    ))
}
