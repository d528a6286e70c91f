//! Impersonation (kube-apiserver's `WithImpersonation` filter): a request with
//! `Impersonate-User` (and optionally `Impersonate-Group`, `Impersonate-Uid`) acts as that
//! user, if its real user may `impersonate` each of them (`users`, `groups`,
//! `serviceaccounts` in the account's namespace, `uids` in `authentication.k8s.io`). This
//! is how `kubectl --as NAME --as-group GROUP` works. The impersonated user is in
//! `system:authenticated`, and a ServiceAccount impersonated without groups in its
//! ServiceAccount groups. `Impersonate-Extra-<key>` headers give it `extra` values, each
//! needing `impersonate` on `userextras/<key>` in `authentication.k8s.io` named by the
//! value (the key is percent-decoded, as kube-apiserver's `unescapeExtraKey`).

use http::Request;
use kubeclient_machinery::Status;

use crate::authentication::UserInfo;
use crate::authorization::{Attributes, AuthorizationMode, Decision, authorize};
use crate::storage::Store;

const USER_HEADER: &str = "impersonate-user";
const GROUP_HEADER: &str = "impersonate-group";
const UID_HEADER: &str = "impersonate-uid";
/// The prefix of `Impersonate-Extra-<key>` (header names arrive in lower case).
const EXTRA_PREFIX: &str = "impersonate-extra-";

/// Why a request may not impersonate.
#[derive(Debug)]
pub(crate) enum ImpersonationError {
    /// Groups or a uid without a user: kube-apiserver's 500.
    NoUser(String),
    /// The real user may not impersonate one of them: a 403.
    Forbidden(Box<Status>),
}

fn header_values<'r, B>(request: &'r Request<B>, name: &str) -> Vec<&'r str> {
    request
        .headers()
        .get_all(name)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .collect()
}

/// The `Impersonate-Extra-*` headers: each key (percent-decoded; kept as sent when it
/// does not decode) with its values, in order.
fn extras<B>(request: &Request<B>) -> std::collections::BTreeMap<String, Vec<String>> {
    let mut extras: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for (name, value) in request.headers() {
        let Some(key) = name.as_str().strip_prefix(EXTRA_PREFIX) else {
            continue;
        };
        let Ok(value) = value.to_str() else {
            continue;
        };
        let key = percent_encoding::percent_decode_str(key)
            .decode_utf8()
            .map_or_else(|_| key.to_owned(), |k| k.into_owned());
        extras.entry(key).or_default().push(value.to_owned());
    }
    extras
}

/// The user `request` acts as: `requester`, or the one it impersonates.
///
/// # Errors
///
/// [`ImpersonationError`] when the headers ask for groups without a user, or the
/// requester may not impersonate what they ask for.
pub(crate) fn acting_user<B>(
    request: &Request<B>,
    requester: UserInfo,
    mode: AuthorizationMode,
    store: &Store,
) -> Result<UserInfo, ImpersonationError> {
    let users = header_values(request, USER_HEADER);
    let groups = header_values(request, GROUP_HEADER);
    let uids = header_values(request, UID_HEADER);
    let extra = extras(request);
    let Some(username) = users.first().copied() else {
        if groups.is_empty() && uids.is_empty() && extra.is_empty() {
            return Ok(requester);
        }
        return Err(ImpersonationError::NoUser(format!(
            "Internal Server Error: {:?}: requested groups {groups:?} without impersonating a user",
            request.uri().path()
        )));
    };
    let service_account = username
        .strip_prefix("system:serviceaccount:")
        .and_then(|rest| rest.split_once(':'))
        .filter(|(namespace, name)| !namespace.is_empty() && !name.is_empty());
    let mut asked = vec![match service_account {
        Some((namespace, name)) => Attributes::resource(
            requester.clone(),
            "impersonate",
            "",
            "serviceaccounts",
            namespace,
            name,
        ),
        None => Attributes::resource(requester.clone(), "impersonate", "", "users", "", username),
    }];
    asked.extend(groups.iter().map(|group| {
        Attributes::resource(requester.clone(), "impersonate", "", "groups", "", group)
    }));
    asked.extend(uids.iter().map(|uid| {
        Attributes::resource(
            requester.clone(),
            "impersonate",
            "authentication.k8s.io",
            "uids",
            "",
            uid,
        )
    }));
    for (key, values) in &extra {
        asked.extend(values.iter().map(|value| {
            Attributes::resource(
                requester.clone(),
                "impersonate",
                "authentication.k8s.io",
                "userextras",
                "",
                value,
            )
            .with_subresource(key)
        }));
    }
    for attributes in &asked {
        if let Decision::Deny(reason) = authorize(mode, store, attributes) {
            return Err(ImpersonationError::Forbidden(Box::new(
                attributes.forbidden(&reason),
            )));
        }
    }
    let mut impersonated: Vec<String> = groups.iter().map(|g| (*g).to_owned()).collect();
    if impersonated.is_empty()
        && let Some((namespace, _)) = service_account
    {
        impersonated.push("system:serviceaccounts".to_owned());
        impersonated.push(format!("system:serviceaccounts:{namespace}"));
    }
    let everyone = if username == "system:anonymous" {
        "system:unauthenticated"
    } else {
        "system:authenticated"
    };
    if !impersonated.iter().any(|g| g == everyone) {
        impersonated.push(everyone.to_owned());
    }
    Ok(UserInfo {
        username: username.to_owned(),
        uid: uids
            .first()
            .map(|uid| (*uid).to_owned())
            .unwrap_or_default(),
        groups: impersonated,
        extra,
    })
}
