//! The review resources, answered at once and never stored: access reviews
//! (`SelfSubjectAccessReview` for `kubectl auth can-i`, `SubjectAccessReview`,
//! `LocalSubjectAccessReview`), `SelfSubjectRulesReview`, `SelfSubjectReview`
//! (`kubectl auth whoami`) and `TokenReview`. Access and rules reviews answer from the
//! server's authorizer: with `AlwaysAllow` everything is allowed, with RBAC the bound
//! rules decide (and the review names the binding that allowed it).

use super::*;
use crate::authentication::{UserInfo, now_seconds};
use crate::authorization::{self, Attributes, AuthorizationMode, Decision, PolicyRule, Rbac};
use crate::object::string_list;

/// POST of a review: the request object with its `status` filled in, 201.
pub(crate) fn review(call: &Call) -> HandlerResult<Response<Body>> {
    let mut object = as_object(call.decode_body()?)?;
    call.check_type_meta(&mut object)?;
    let resource = &call.resource;
    let spec = object.get("spec").cloned().unwrap_or(Value::Null);
    let status = match resource.kind.as_str() {
        "SelfSubjectAccessReview" | "SubjectAccessReview" | "LocalSubjectAccessReview" => {
            check_access_review(call, &object, &spec)?;
            access_review_status(call, &object, &spec)
        }
        "SelfSubjectRulesReview" => rules_review_status(call, &spec),
        "SelfSubjectReview" => json!({"userInfo": call.user.to_json()}),
        "TokenReview" => token_review(call, &spec)?,
        other => {
            return Err(fail(Status::internal_error(&format!(
                "no review handler for {other}"
            ))));
        }
    };
    object.entry("metadata").or_insert_with(|| json!({}));
    object.insert("status".to_owned(), status);
    Ok(json(StatusCode::CREATED, &Value::Object(object)))
}

/// The validation kube-apiserver applies to access reviews.
fn check_access_review(
    call: &Call,
    object: &Map<String, Value>,
    spec: &Value,
) -> HandlerResult<()> {
    let resource = &call.resource;
    let present = |field: &str| spec.get(field).is_some_and(|v| !v.is_null());
    // kube-apiserver names no kind here (it validates the internal object, whose kind is
    // empty): `.authorization.k8s.io "" is invalid: ...`.
    let reject = |field: &str, message: &str| {
        fail(Status::invalid(
            &resource.group,
            "",
            "",
            vec![StatusCause::new("FieldValueInvalid", message, field)],
        ))
    };
    if present("resourceAttributes") == present("nonResourceAttributes") {
        return Err(reject(
            "spec.resourceAttributes",
            "Invalid value: \"null\": exactly one of nonResourceAttributes or resourceAttributes must be specified",
        ));
    }
    if resource.kind == "SubjectAccessReview"
        && !present("user")
        && spec
            .get("groups")
            .and_then(Value::as_array)
            .is_none_or(Vec::is_empty)
    {
        return Err(reject(
            "spec.user,spec.groups",
            "Invalid value: \"null\": at least one of user or group must be specified",
        ));
    }
    if resource.kind == "LocalSubjectAccessReview" {
        let namespace = object
            .get("metadata")
            .and_then(|m| m.get("namespace"))
            .and_then(Value::as_str)
            .or(call.path.namespace.as_deref())
            .unwrap_or("");
        let asked = spec
            .pointer("/resourceAttributes/namespace")
            .and_then(Value::as_str)
            .unwrap_or("");
        if present("resourceAttributes") && asked != namespace {
            return Err(reject(
                "spec.resourceAttributes.namespace",
                &format!("Invalid value: {asked:?}: must match metadata.namespace"),
            ));
        }
    }
    Ok(())
}

/// The question an access review asks, of the authorizer.
fn access_review_attributes(call: &Call, object: &Map<String, Value>, spec: &Value) -> Attributes {
    let user = if call.resource.kind == "SelfSubjectAccessReview" {
        call.user.clone()
    } else {
        UserInfo {
            username: spec
                .get("user")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned(),
            uid: spec
                .get("uid")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned(),
            groups: string_list(spec.get("groups")),
            extra: spec
                .get("extra")
                .and_then(Value::as_object)
                .map(|extra| {
                    extra
                        .iter()
                        .map(|(key, values)| (key.clone(), string_list(Some(values))))
                        .collect()
                })
                .unwrap_or_default(),
        }
    };
    let field = |at: &Value, name: &str| {
        at.get(name)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    if let Some(path) = spec.get("nonResourceAttributes").filter(|v| !v.is_null()) {
        return Attributes::path(user, &field(path, "verb"), &field(path, "path"));
    }
    let asked = spec
        .get("resourceAttributes")
        .cloned()
        .unwrap_or(Value::Null);
    let namespace = if call.resource.kind == "LocalSubjectAccessReview" {
        object
            .get("metadata")
            .and_then(|m| m.get("namespace"))
            .and_then(Value::as_str)
            .map(str::to_owned)
            .or_else(|| call.path.namespace.clone())
            .unwrap_or_default()
    } else {
        field(&asked, "namespace")
    };
    Attributes::resource(
        user,
        &field(&asked, "verb"),
        &field(&asked, "group"),
        &field(&asked, "resource"),
        &namespace,
        &field(&asked, "name"),
    )
    .with_subresource(&field(&asked, "subresource"))
}

/// `status` of an access review: `allowed`, and the authorizer's reason when it gave one.
fn access_review_status(call: &Call, object: &Map<String, Value>, spec: &Value) -> Value {
    let attributes = access_review_attributes(call, object, spec);
    let decision = authorization::authorize(
        call.state.config.authorization_mode,
        &call.state.store,
        &attributes,
    );
    let mut status = json!({"allowed": decision.allowed()});
    let (Decision::Allow(reason) | Decision::Deny(reason)) = decision;
    if !reason.is_empty() {
        status["reason"] = json!(reason);
    }
    status
}

/// `status` of a `SelfSubjectRulesReview` (`kubectl auth can-i --list`): the rules bound to
/// the user cluster-wide and in `spec.namespace`, split into resource and non-resource
/// rules; everything when nothing is authorized.
fn rules_review_status(call: &Call, spec: &Value) -> Value {
    if call.state.config.authorization_mode == AuthorizationMode::AlwaysAllow {
        return json!({
            "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
            "incomplete": false,
        });
    }
    let namespace = spec.get("namespace").and_then(Value::as_str).unwrap_or("");
    let (rules, errors) = Rbac::new(&call.state.store).rules_for(&call.user, namespace);
    let (paths, resources): (Vec<&PolicyRule>, Vec<&PolicyRule>) = rules
        .iter()
        .partition(|rule| !rule.non_resource_urls.is_empty());
    let mut status = json!({
        "resourceRules": resources.iter().map(|rule| rule.to_json()).collect::<Vec<_>>(),
        "nonResourceRules": paths.iter().map(|rule| rule.to_json()).collect::<Vec<_>>(),
        "incomplete": !errors.is_empty(),
    });
    if !errors.is_empty() {
        status["evaluationError"] = json!(errors);
    }
    status
}

/// Whether `spec.token` is the server's token or one it issued, and whose.
fn token_review(call: &Call, spec: &Value) -> HandlerResult<Value> {
    let token = spec.get("token").and_then(Value::as_str).unwrap_or("");
    if token.is_empty() {
        return Err(invalid(
            &call.resource,
            "",
            "spec.token",
            "FieldValueRequired",
            "Required value",
        ));
    }
    let wanted: Vec<String> = spec
        .get("audiences")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|a| a.as_str().map(str::to_owned))
        .collect();
    // The audiences asked for, or the API's; a token must be for one of them.
    let wanted = if wanted.is_empty() {
        call.state.config.api_audiences.clone()
    } else {
        wanted
    };
    let (user, audiences) = match call.state.tokens.lookup(token) {
        Ok(claims) => {
            let live_uid = crate::endpoints::live_uid::live_uid(&call.state);
            match claims.verify(now_seconds(), &wanted, &live_uid) {
                Ok(audiences) => (claims.user(), audiences),
                Err(rejection) => {
                    return Ok(
                        json!({"authenticated": false, "user": {}, "error": rejection.to_string()}),
                    );
                }
            }
        }
        // The server's own token is audience-agnostic, as kube-apiserver's static tokens.
        Err(_) if call.state.config.token.as_deref() == Some(token) => (UserInfo::admin(), wanted),
        Err(rejection) => {
            return Ok(json!({"authenticated": false, "user": {}, "error": rejection.to_string()}));
        }
    };
    Ok(json!({"authenticated": true, "user": user.to_json(), "audiences": audiences}))
}
