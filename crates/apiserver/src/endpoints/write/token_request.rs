//! `POST .../serviceaccounts/{name}/token`: a `TokenRequest` (`kubectl create token`)
//! issues a token for the ServiceAccount that the server then accepts as that
//! ServiceAccount's credentials, for as long as its claims hold: its audiences include
//! one of the API's, it has not expired, and its ServiceAccount (and the Pod or Secret it
//! is bound to, if any) still exists with the same uid.

use super::*;
use crate::authentication::{BoundObject, TokenClaims, now_seconds};
use crate::object::json_type;

/// The shortest token lifetime a TokenRequest may ask for (kube-apiserver's minimum).
const MIN_EXPIRATION_SECONDS: i64 = 600;
/// The longest lifetime a TokenRequest may ask for (kube-apiserver's validation: 2^32 s).
const MAX_REQUESTED_EXPIRATION_SECONDS: i64 = 1 << 32;
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
    check_spec_types(&spec)?;
    let account = call
        .state
        .store
        .get(&call.group_resource(), &call.key_for(&name))
        .ok_or_else(|| call.not_found(&name))?;
    let request_name = meta_str(&Value::Object(object.clone()), "name").to_owned();
    let token_request = |field: &str, message: &str| {
        fail(Status::invalid(
            "authentication.k8s.io",
            "TokenRequest",
            &request_name,
            vec![StatusCause::new("FieldValueInvalid", message, field)],
        ))
    };
    let seconds = match spec.get("expirationSeconds").and_then(Value::as_i64) {
        Some(seconds) if seconds < MIN_EXPIRATION_SECONDS => {
            return Err(token_request(
                "spec.expirationSeconds",
                &format!(
                    "Invalid value: {seconds}: may not specify a duration less than 10 minutes"
                ),
            ));
        }
        Some(seconds) if seconds > MAX_REQUESTED_EXPIRATION_SECONDS => {
            return Err(token_request(
                "spec.expirationSeconds",
                &format!(
                    "Invalid value: {seconds}: may not specify a duration larger than 2^32 seconds"
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
        _ => call.state.config.api_audiences.clone(),
    };
    let service_account = BoundObject {
        kind: "ServiceAccount",
        name: name.clone(),
        uid: meta_str(&account.value, "uid").to_owned(),
    };
    let bound_object = match spec.get("boundObjectRef").filter(|r| !r.is_null()) {
        Some(reference) => Some(bound_object(call, &namespace, &name, reference)?),
        None => None,
    };
    let now = now_seconds();
    let expires = now.saturating_add(seconds);
    let claims = TokenClaims {
        namespace: namespace.clone(),
        service_account,
        bound_object: bound_object.clone(),
        audiences: audiences.clone(),
        issued: now,
        expires,
    };
    let token = call
        .state
        .tokens
        .issue(claims, &call.state.config.service_account_issuer);
    let expiration = jiff::Timestamp::from_second(expires)
        .map(|t| t.to_string())
        .unwrap_or_default();
    let bound_ref = bound_object.map_or(Value::Null, |bound| {
        json!({"kind": bound.kind, "apiVersion": "v1", "name": bound.name, "uid": bound.uid})
    });
    object.insert("kind".to_owned(), json!("TokenRequest"));
    object.insert("apiVersion".to_owned(), json!("authentication.k8s.io/v1"));
    object.insert(
        "metadata".to_owned(),
        json!({"name": name, "namespace": namespace, "creationTimestamp": now_string()}),
    );
    object.insert(
        "spec".to_owned(),
        json!({"audiences": audiences, "expirationSeconds": seconds, "boundObjectRef": bound_ref}),
    );
    object.insert(
        "status".to_owned(),
        json!({"token": token, "expirationTimestamp": expiration}),
    );
    Ok(json(StatusCode::CREATED, &Value::Object(object)))
}

/// 400 for spec fields of the wrong JSON type, worded as kube-apiserver's decoder words
/// them (`"abc"` for `expirationSeconds` is not defaulted: the request is refused).
fn check_spec_types(spec: &Value) -> HandlerResult<()> {
    let wrong = |field: &str, found: String, go_type: &str| {
        fail(Status::bad_request(format!(
            "TokenRequest in version \"v1\" cannot be handled as a TokenRequest: json: cannot unmarshal {found} into Go struct field TokenRequestSpec.spec.{field} of type {go_type}"
        )))
    };
    match spec.get("expirationSeconds") {
        None | Some(Value::Null) => {}
        Some(Value::Number(n)) if n.as_i64().is_some() => {}
        Some(Value::Number(n)) => {
            return Err(wrong("expirationSeconds", format!("number {n}"), "int64"));
        }
        Some(other) => {
            return Err(wrong(
                "expirationSeconds",
                json_type(other).to_owned(),
                "int64",
            ));
        }
    }
    match spec.get("audiences") {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            if let Some(item) = items.iter().find(|item| !item.is_string()) {
                return Err(wrong("audiences", json_type(item).to_owned(), "string"));
            }
        }
        Some(other) => return Err(wrong("audiences", json_type(other).to_owned(), "[]string")),
    }
    Ok(())
}

/// The Pod or Secret a token is to be bound to, as kube-apiserver checks it: it exists
/// (404), has the uid the reference names, if any (409), and a Pod runs as the
/// ServiceAccount (400).
fn bound_object(
    call: &Call,
    namespace: &str,
    account: &str,
    reference: &Value,
) -> HandlerResult<BoundObject> {
    let field = |name: &str| reference.get(name).and_then(Value::as_str).unwrap_or("");
    let (kind, api_version) = (field("kind"), field("apiVersion"));
    let (kind, plural) = match (kind, api_version) {
        ("Pod", "v1") => ("Pod", "pods"),
        ("Secret", "v1") => ("Secret", "secrets"),
        _ => {
            let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
            return Err(fail(Status::bad_request(format!(
                "cannot bind token to object of type {group}/{version}, Kind={kind}"
            ))));
        }
    };
    let name = field("name");
    let resource = GroupResource::new("", plural);
    let stored = call
        .state
        .store
        .get(&resource, &store_key(Some(namespace), name))
        .ok_or_else(|| fail(Status::not_found(&resource, name)))?;
    let uid = meta_str(&stored.value, "uid").to_owned();
    let wanted_uid = field("uid");
    if !wanted_uid.is_empty() && wanted_uid != uid {
        return Err(fail(Status::failure(
            StatusReason::Conflict,
            format!(
                "Operation cannot be fulfilled on {kind} {name:?}: the UID in the bound object reference ({wanted_uid}) does not match the UID in record. The object might have been deleted and then recreated"
            ),
        )));
    }
    if kind == "Pod" {
        let runs_as = stored
            .value
            .pointer("/spec/serviceAccountName")
            .and_then(Value::as_str)
            .unwrap_or("default");
        if runs_as != account {
            return Err(fail(Status::bad_request(format!(
                "cannot bind token for serviceaccount {account:?} to pod running with different serviceaccount name."
            ))));
        }
    }
    Ok(BoundObject {
        kind,
        name: name.to_owned(),
        uid,
    })
}

fn now_string() -> String {
    now()
}
