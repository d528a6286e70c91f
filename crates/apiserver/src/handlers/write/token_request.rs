//! `POST .../serviceaccounts/{name}/token`: a `TokenRequest` (`kubectl create token`)
//! issues a token for the ServiceAccount that the server then accepts as that
//! ServiceAccount's credentials.

use super::*;
use crate::authentication::{DEFAULT_AUDIENCE, UserInfo, now_seconds};

/// The shortest token lifetime a TokenRequest may ask for (kube-apiserver's minimum).
const MIN_EXPIRATION_SECONDS: i64 = 600;
/// The lifetime when a TokenRequest asks for none.
const DEFAULT_EXPIRATION_SECONDS: i64 = 3600;
/// The longest lifetime given (longer requests are capped, as with
/// `--service-account-max-token-expiration`).
const MAX_EXPIRATION_SECONDS: i64 = 48 * 3600;

/// POST of a TokenRequest for an existing ServiceAccount: 201 with the token.
pub(crate) fn token_request(call: &Call) -> HandlerResult<Response<Body>> {
    let name = call.name().to_owned();
    let namespace = call.path.namespace.clone().unwrap_or_default();
    let body = call.decode_body()?;
    let mut object = as_object(body)?;
    let spec = object.get("spec").cloned().unwrap_or_else(|| json!({}));
    let account = call
        .state
        .store
        .get(&call.group_resource(), &call.key_for(&name))
        .ok_or_else(|| call.not_found(&name))?;
    let requested = spec.get("expirationSeconds").and_then(Value::as_i64);
    let token_request = |field: &str, message: &str| {
        fail(Status::invalid(
            "authentication.k8s.io",
            "TokenRequest",
            &name,
            vec![StatusCause::new("FieldValueInvalid", message, field)],
        ))
    };
    let seconds = match requested {
        Some(seconds) if seconds < MIN_EXPIRATION_SECONDS => {
            return Err(token_request(
                "spec.expirationSeconds",
                &format!(
                    "Invalid value: {seconds}: may not specify a duration less than 10 minutes"
                ),
            ));
        }
        Some(seconds) => seconds.min(MAX_EXPIRATION_SECONDS),
        None => DEFAULT_EXPIRATION_SECONDS,
    };
    let audiences: Vec<String> = match spec.get("audiences").and_then(Value::as_array) {
        Some(list) if !list.is_empty() => list
            .iter()
            .filter_map(|a| a.as_str().map(str::to_owned))
            .collect(),
        _ => vec![DEFAULT_AUDIENCE.to_owned()],
    };
    let user = UserInfo::service_account(&namespace, &name, meta_str(&account.value, "uid"));
    let now = now_seconds();
    let expires = now.saturating_add(seconds);
    let token = call.state.tokens.issue(&user, &audiences, now, expires);
    let expiration = jiff::Timestamp::from_second(expires)
        .map(|t| t.to_string())
        .unwrap_or_default();
    object.insert("kind".to_owned(), json!("TokenRequest"));
    object.insert("apiVersion".to_owned(), json!("authentication.k8s.io/v1"));
    object.insert(
        "metadata".to_owned(),
        json!({"name": name, "namespace": namespace, "creationTimestamp": now_string()}),
    );
    object.insert(
        "spec".to_owned(),
        json!({"audiences": audiences, "expirationSeconds": seconds, "boundObjectRef": spec.get("boundObjectRef").cloned().unwrap_or(Value::Null)}),
    );
    object.insert(
        "status".to_owned(),
        json!({"token": token, "expirationTimestamp": expiration}),
    );
    Ok(json(StatusCode::CREATED, &Value::Object(object)))
}

fn now_string() -> String {
    now()
}
