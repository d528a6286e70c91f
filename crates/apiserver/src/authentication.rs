//! Who a request comes from: the server's own bearer token (or anyone when no token is
//! required) is the cluster administrator, a client certificate the server's CA verified
//! is the user its subject names (common name, organizations as groups, as
//! kube-apiserver's x509 authenticator), and ServiceAccount tokens the server issued
//! through `TokenRequest` are their ServiceAccount. The server authorizes every authenticated user for everything (as
//! kube-apiserver's `AlwaysAllow`); the identity shows in `SelfSubjectReview`
//! (`kubectl auth whoami`) and `TokenReview`.

use std::collections::HashMap;
use std::sync::Mutex;

use base64::Engine as _;
use serde_json::{Value, json};

use crate::sync::lock;

/// The audience tokens are issued for by default (kube-apiserver's `--api-audiences`
/// default, the issuer URL).
pub(crate) const DEFAULT_AUDIENCE: &str = "https://kubernetes.default.svc.cluster.local";

/// The most ServiceAccount tokens kept at once; issuing more drops the one closest to
/// expiry, so that TokenRequests cannot grow memory without bound.
const MAX_ISSUED_TOKENS: usize = 10_000;

/// An authenticated user (`authentication.k8s.io/v1` `UserInfo`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct UserInfo {
    pub(crate) username: String,
    pub(crate) uid: String,
    pub(crate) groups: Vec<String>,
}

impl UserInfo {
    /// The administrator: the server's token, or any request when it requires no token.
    pub(crate) fn admin() -> Self {
        UserInfo {
            username: "kubeclient-admin".to_owned(),
            uid: String::new(),
            groups: vec![
                "system:masters".to_owned(),
                "system:authenticated".to_owned(),
            ],
        }
    }

    /// The user of a verified client certificate (DER): its subject's common name, and
    /// its organizations as groups. A certificate whose subject cannot be read (or has no
    /// common name) is the administrator, as before this server read subjects.
    pub(crate) fn from_client_certificate(der: &[u8]) -> Self {
        let Ok((_, certificate)) = x509_parser::parse_x509_certificate(der) else {
            return UserInfo::admin();
        };
        let subject = certificate.subject();
        let Some(username) = subject
            .iter_common_name()
            .find_map(|name| name.as_str().ok())
            .map(str::to_owned)
        else {
            return UserInfo::admin();
        };
        let mut groups: Vec<String> = subject
            .iter_organization()
            .filter_map(|org| org.as_str().ok())
            .map(str::to_owned)
            .collect();
        groups.push("system:authenticated".to_owned());
        UserInfo {
            username,
            uid: String::new(),
            groups,
        }
    }

    /// A ServiceAccount's user.
    pub(crate) fn service_account(namespace: &str, name: &str, uid: &str) -> Self {
        UserInfo {
            username: format!("system:serviceaccount:{namespace}:{name}"),
            uid: uid.to_owned(),
            groups: vec![
                "system:serviceaccounts".to_owned(),
                format!("system:serviceaccounts:{namespace}"),
                "system:authenticated".to_owned(),
            ],
        }
    }

    /// As JSON (`UserInfo`), without empty fields.
    pub(crate) fn to_json(&self) -> Value {
        let mut user = json!({"username": self.username, "groups": self.groups});
        if !self.uid.is_empty() {
            user["uid"] = json!(self.uid);
        }
        user
    }
}

struct IssuedToken {
    user: UserInfo,
    audiences: Vec<String>,
    /// Unix seconds.
    expires: i64,
}

/// The ServiceAccount tokens the server issued.
#[derive(Default)]
pub(crate) struct TokenRegistry {
    tokens: Mutex<HashMap<String, IssuedToken>>,
}

impl std::fmt::Debug for TokenRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenRegistry")
            .field("issued", &lock(&self.tokens).len())
            .finish()
    }
}

impl TokenRegistry {
    /// Issues a token for `user`, valid for `audiences` until `expires` (Unix seconds).
    /// The token is shaped like a JWT (its claims readable, as clients sometimes decode
    /// them); the server recognizes it by value, not by signature.
    pub(crate) fn issue(
        &self,
        user: &UserInfo,
        audiences: &[String],
        now: i64,
        expires: i64,
    ) -> String {
        let encode = |value: &Value| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(value.to_string().as_bytes())
        };
        let header = json!({"alg": "none", "kid": "kubeclient"});
        let claims = json!({
            "iss": DEFAULT_AUDIENCE, "sub": user.username, "aud": audiences,
            "iat": now, "nbf": now, "exp": expires,
        });
        let secret =
            uuid::Uuid::new_v4().simple().to_string() + &uuid::Uuid::new_v4().simple().to_string();
        let token = format!("{}.{}.{secret}", encode(&header), encode(&claims));
        let mut tokens = lock(&self.tokens);
        tokens.retain(|_, issued| issued.expires > now);
        if tokens.len() >= MAX_ISSUED_TOKENS
            && let Some(soonest) = tokens
                .iter()
                .min_by_key(|(_, issued)| issued.expires)
                .map(|(token, _)| token.clone())
        {
            tokens.remove(&soonest);
        }
        tokens.insert(
            token.clone(),
            IssuedToken {
                user: user.clone(),
                audiences: audiences.to_vec(),
                expires,
            },
        );
        token
    }

    /// The user and audiences of an issued, unexpired token.
    pub(crate) fn lookup(&self, token: &str, now: i64) -> Option<(UserInfo, Vec<String>)> {
        let tokens = lock(&self.tokens);
        let issued = tokens.get(token).filter(|issued| issued.expires > now)?;
        Some((issued.user.clone(), issued.audiences.clone()))
    }
}

/// The current time in Unix seconds.
pub(crate) fn now_seconds() -> i64 {
    jiff::Timestamp::now().as_second()
}

/// The user presenting `bearer` (if any): `None` when the request must be refused.
pub(crate) fn authenticate(
    required_token: Option<&str>,
    tokens: &TokenRegistry,
    bearer: Option<&str>,
    client_certificate: Option<&UserInfo>,
) -> Option<UserInfo> {
    if let Some(presented) = bearer
        && let Some((user, _)) = tokens.lookup(presented, now_seconds())
    {
        return Some(user);
    }
    match required_token {
        None => Some(UserInfo::admin()),
        Some(token) if bearer == Some(token) => Some(UserInfo::admin()),
        Some(_) if client_certificate.is_some() => client_certificate.cloned(),
        Some(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_certificate_is_the_user_its_subject_names() {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "alice");
        params
            .distinguished_name
            .push(rcgen::DnType::OrganizationName, "dev");
        let key = rcgen::KeyPair::generate().unwrap();
        let certificate = params.self_signed(&key).unwrap();
        let user = UserInfo::from_client_certificate(certificate.der());
        assert_eq!(user.username, "alice");
        assert_eq!(user.groups, ["dev", "system:authenticated"]);
        assert_eq!(
            UserInfo::from_client_certificate(b"not DER"),
            UserInfo::admin()
        );
        let registry = TokenRegistry::default();
        assert_eq!(
            authenticate(Some("t"), &registry, None, Some(&user)),
            Some(user.clone()),
            "a verified certificate authenticates without the token"
        );
    }

    #[test]
    fn issued_tokens_authenticate_until_they_expire() {
        let registry = TokenRegistry::default();
        let user = UserInfo::service_account("default", "builder", "u1");
        let token = registry.issue(&user, &[DEFAULT_AUDIENCE.to_owned()], 100, 200);
        assert_eq!(token.split('.').count(), 3);
        assert_eq!(
            registry.lookup(&token, 150).map(|(u, _)| u),
            Some(user.clone())
        );
        assert!(registry.lookup(&token, 200).is_none());
        assert!(registry.lookup("forged", 150).is_none());
        assert_eq!(
            authenticate(Some("admin-token"), &registry, Some("admin-token"), None),
            Some(UserInfo::admin())
        );
        assert_eq!(
            authenticate(Some("admin-token"), &registry, Some("nope"), None),
            None
        );
        assert_eq!(
            authenticate(None, &registry, None, None),
            Some(UserInfo::admin())
        );
    }

    #[test]
    fn the_registry_stays_bounded() {
        let registry = TokenRegistry::default();
        let user = UserInfo::admin();
        for i in 0..(MAX_ISSUED_TOKENS + 5) {
            let expires = 1_000 + i64::try_from(i).unwrap();
            registry.issue(&user, &[], 0, expires);
        }
        assert_eq!(lock(&registry.tokens).len(), MAX_ISSUED_TOKENS);
    }
}
