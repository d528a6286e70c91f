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

/// The issuer ServiceAccount tokens name by default (`kubeclient serve
/// --service-account-issuer`, kube-apiserver's flag of that name), which is also the
/// default API audience (kube-apiserver's `--api-audiences` defaults to the issuer).
pub const DEFAULT_SERVICE_ACCOUNT_ISSUER: &str = "https://kubernetes.default.svc.cluster.local";

/// The most ServiceAccount tokens kept at once; issuing more drops the one closest to
/// expiry, so that TokenRequests cannot grow memory without bound.
const MAX_ISSUED_TOKENS: usize = 10_000;

/// The JOSE header of every token the server issues: what marks a bearer token as one of
/// ours, to be checked (and refused when it no longer holds) rather than ignored.
const TOKEN_HEADER: &str = r#"{"alg":"none","kid":"kubeclient"}"#;

/// An authenticated user (`authentication.k8s.io/v1` `UserInfo`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct UserInfo {
    pub(crate) username: String,
    pub(crate) uid: String,
    pub(crate) groups: Vec<String>,
    /// `extra`: what an authenticator (or `Impersonate-Extra-*`) adds, by key.
    pub(crate) extra: std::collections::BTreeMap<String, Vec<String>>,
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
            ..UserInfo::default()
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
            ..UserInfo::default()
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
            ..UserInfo::default()
        }
    }

    /// As JSON (`UserInfo`), without empty fields.
    pub(crate) fn to_json(&self) -> Value {
        let mut user = json!({"username": self.username, "groups": self.groups});
        if !self.uid.is_empty() {
            user["uid"] = json!(self.uid);
        }
        if !self.extra.is_empty() {
            user["extra"] = json!(self.extra);
        }
        user
    }
}

/// An object a token is bound to: its ServiceAccount, and the Pod or Secret it was
/// requested for. The token is only as alive as they are: the same name *and* uid.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct BoundObject {
    /// `ServiceAccount`, `Pod` or `Secret`.
    pub(crate) kind: &'static str,
    /// Its name (in the token's namespace).
    pub(crate) name: String,
    /// Its uid when the token was issued.
    pub(crate) uid: String,
}

/// What a ServiceAccount token claims (the JWT claims kube-apiserver signs: `aud`,
/// `exp`, `iat`, and `kubernetes.io` with the namespace, ServiceAccount and bound
/// object).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TokenClaims {
    /// The ServiceAccount's namespace.
    pub(crate) namespace: String,
    /// The ServiceAccount (kind `ServiceAccount`).
    pub(crate) service_account: BoundObject,
    /// The Pod or Secret the token was bound to, if any.
    pub(crate) bound_object: Option<BoundObject>,
    /// Who the token is for (`aud`).
    pub(crate) audiences: Vec<String>,
    /// Unix seconds (`iat`).
    pub(crate) issued: i64,
    /// Unix seconds (`exp`).
    pub(crate) expires: i64,
}

/// Why an issued token is not accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum TokenRejection {
    /// Not a token this server issued (or one it forgot, being over its bound).
    #[error("invalid bearer token")]
    Unknown,
    /// Past its `exp`.
    #[error("token has expired")]
    Expired,
    /// Issued for other audiences than the ones asked for (the API's, by default).
    #[error("token audiences do not match")]
    Audience,
    /// Its ServiceAccount, Pod or Secret is gone, or was re-created (another uid).
    #[error("the object the token is bound to is gone or was re-created")]
    Unbound,
}

impl TokenClaims {
    /// The user the token authenticates.
    pub(crate) fn user(&self) -> UserInfo {
        UserInfo::service_account(
            &self.namespace,
            &self.service_account.name,
            &self.service_account.uid,
        )
    }

    /// Checks the token at `now` for `audiences` (any one of them must be among the
    /// token's); `live_uid(kind, namespace, name)` is the uid of the object as stored now.
    /// The audiences both sides share, when the token holds.
    ///
    /// # Errors
    ///
    /// [`TokenRejection`] saying which check failed.
    pub(crate) fn verify(
        &self,
        now: i64,
        audiences: &[String],
        live_uid: &dyn Fn(&str, &str, &str) -> Option<String>,
    ) -> Result<Vec<String>, TokenRejection> {
        if now >= self.expires {
            return Err(TokenRejection::Expired);
        }
        let shared: Vec<String> = audiences
            .iter()
            .filter(|a| self.audiences.contains(a))
            .cloned()
            .collect();
        if shared.is_empty() {
            return Err(TokenRejection::Audience);
        }
        let alive = |object: &BoundObject| {
            live_uid(object.kind, &self.namespace, &object.name).as_deref() == Some(&object.uid)
        };
        if !alive(&self.service_account) || self.bound_object.as_ref().is_some_and(|o| !alive(o)) {
            return Err(TokenRejection::Unbound);
        }
        Ok(shared)
    }

    /// The JWT claims, as kube-apiserver writes them.
    fn to_json(&self, issuer: &str) -> Value {
        let reference = |object: &BoundObject| json!({"name": object.name, "uid": object.uid});
        let mut kubernetes = json!({
            "namespace": self.namespace,
            "serviceaccount": reference(&self.service_account),
        });
        if let Some(bound) = &self.bound_object {
            kubernetes[bound.kind.to_ascii_lowercase()] = reference(bound);
        }
        json!({
            "aud": self.audiences, "exp": self.expires, "iat": self.issued, "iss": issuer,
            "kubernetes.io": kubernetes, "nbf": self.issued,
            "sub": self.user().username,
        })
    }
}

/// The ServiceAccount tokens the server issued.
#[derive(Default)]
pub(crate) struct TokenRegistry {
    tokens: Mutex<HashMap<String, TokenClaims>>,
}

impl std::fmt::Debug for TokenRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenRegistry")
            .field("issued", &lock(&self.tokens).len())
            .finish()
    }
}

fn encode_segment(text: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(text.as_bytes())
}

impl TokenRegistry {
    /// Issues a token with `claims`, naming `issuer`. The token is shaped like a JWT (its
    /// claims readable, as clients sometimes decode them); the server recognizes it by
    /// value, not by signature.
    pub(crate) fn issue(&self, claims: TokenClaims, issuer: &str) -> String {
        let secret =
            uuid::Uuid::new_v4().simple().to_string() + &uuid::Uuid::new_v4().simple().to_string();
        let token = format!(
            "{}.{}.{secret}",
            encode_segment(TOKEN_HEADER),
            encode_segment(&claims.to_json(issuer).to_string())
        );
        let now = claims.issued;
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
        tokens.insert(token.clone(), claims);
        token
    }

    /// The claims of an issued token (expired or not: [`TokenClaims::verify`] judges).
    ///
    /// # Errors
    ///
    /// [`TokenRejection::Unknown`] for a token the server does not hold.
    pub(crate) fn lookup(&self, token: &str) -> Result<TokenClaims, TokenRejection> {
        lock(&self.tokens)
            .get(token)
            .cloned()
            .ok_or(TokenRejection::Unknown)
    }

    /// Whether `token` has the shape of the tokens this server issues (held or not).
    pub(crate) fn looks_issued(token: &str) -> bool {
        token
            .split('.')
            .next()
            .is_some_and(|head| head == encode_segment(TOKEN_HEADER))
    }
}

/// The current time in Unix seconds.
pub(crate) fn now_seconds() -> i64 {
    jiff::Timestamp::now().as_second()
}

/// How the server judges ServiceAccount tokens: the API audiences (a token must be
/// for one of them) and the live uid of an object (`kind`, `namespace`, `name`).
pub(crate) struct TokenCheck<'a> {
    /// The API audiences (`--api-audiences`).
    pub(crate) audiences: &'a [String],
    /// The uid of a stored ServiceAccount, Pod or Secret.
    pub(crate) live_uid: &'a dyn Fn(&str, &str, &str) -> Option<String>,
}

/// The user presenting `bearer` (if any): `None` when the request must be refused. A
/// token this server issued must hold ([`TokenClaims::verify`]) even when the server
/// requires no token: it is refused, not taken for the administrator.
pub(crate) fn authenticate(
    required_token: Option<&str>,
    tokens: &TokenRegistry,
    check: &TokenCheck<'_>,
    bearer: Option<&str>,
    client_certificate: Option<&UserInfo>,
) -> Option<UserInfo> {
    if let Some(presented) = bearer
        && (TokenRegistry::looks_issued(presented) || tokens.lookup(presented).is_ok())
    {
        let claims = tokens.lookup(presented).ok()?;
        return match claims.verify(now_seconds(), check.audiences, check.live_uid) {
            Ok(_) => Some(claims.user()),
            Err(rejection) => {
                tracing::debug!(%rejection, "a ServiceAccount token was refused");
                None
            }
        };
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

    const NO_OBJECTS: &dyn Fn(&str, &str, &str) -> Option<String> = &|_, _, _| None;

    fn claims(audiences: &[&str], expires: i64) -> TokenClaims {
        TokenClaims {
            namespace: "default".to_owned(),
            service_account: BoundObject {
                kind: "ServiceAccount",
                name: "builder".to_owned(),
                uid: "u1".to_owned(),
            },
            bound_object: None,
            audiences: audiences.iter().map(|a| (*a).to_owned()).collect(),
            issued: 100,
            expires,
        }
    }

    fn api() -> Vec<String> {
        vec![DEFAULT_SERVICE_ACCOUNT_ISSUER.to_owned()]
    }

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
        let check = TokenCheck {
            audiences: &api(),
            live_uid: NO_OBJECTS,
        };
        assert_eq!(
            authenticate(Some("t"), &registry, &check, None, Some(&user)),
            Some(user.clone()),
            "a verified certificate authenticates without the token"
        );
    }

    #[test]
    fn issued_tokens_hold_for_their_audience_until_expiry_while_their_account_lives() {
        let token_claims = claims(&[DEFAULT_SERVICE_ACCOUNT_ISSUER], 200);
        let live: &dyn Fn(&str, &str, &str) -> Option<String> = &|kind, namespace, name| {
            ((kind, namespace, name) == ("ServiceAccount", "default", "builder"))
                .then(|| "u1".to_owned())
        };
        assert_eq!(token_claims.verify(150, &api(), live), Ok(api()));
        assert_eq!(
            token_claims.verify(200, &api(), live),
            Err(TokenRejection::Expired)
        );
        assert_eq!(
            token_claims.verify(150, &["https://vault.example.com".to_owned()], live),
            Err(TokenRejection::Audience)
        );
        assert_eq!(
            token_claims.verify(150, &api(), NO_OBJECTS),
            Err(TokenRejection::Unbound),
            "the ServiceAccount is gone"
        );
        let recreated: &dyn Fn(&str, &str, &str) -> Option<String> =
            &|_, _, _| Some("u2".to_owned());
        assert_eq!(
            token_claims.verify(150, &api(), recreated),
            Err(TokenRejection::Unbound),
            "the ServiceAccount was re-created"
        );
        let mut bound = token_claims.clone();
        bound.bound_object = Some(BoundObject {
            kind: "Pod",
            name: "web".to_owned(),
            uid: "p1".to_owned(),
        });
        assert_eq!(
            bound.verify(150, &api(), live),
            Err(TokenRejection::Unbound),
            "the bound Pod is gone"
        );
    }

    #[test]
    fn tokens_are_jwt_shaped_and_refused_once_forgotten_or_invalid() {
        let registry = TokenRegistry::default();
        let now = now_seconds();
        let token = registry.issue(claims(&["a"], now + 100), "https://issuer.example");
        assert_eq!(token.split('.').count(), 3);
        let payload = token.split('.').nth(1).unwrap();
        let decoded = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(payload)
            .unwrap();
        let decoded: Value = serde_json::from_slice(&decoded).unwrap();
        assert_eq!(decoded["iss"], "https://issuer.example");
        assert_eq!(decoded["kubernetes.io"]["serviceaccount"]["uid"], "u1");
        assert!(TokenRegistry::looks_issued(&token));
        let live: &dyn Fn(&str, &str, &str) -> Option<String> = &|_, _, _| Some("u1".to_owned());
        let check = TokenCheck {
            audiences: &["a".to_owned()],
            live_uid: live,
        };
        assert!(authenticate(None, &registry, &check, Some(&token), None).is_some());
        let other = TokenCheck {
            audiences: &["b".to_owned()],
            live_uid: live,
        };
        assert_eq!(
            authenticate(None, &registry, &other, Some(&token), None),
            None,
            "refused even by a server that requires no token"
        );
        let forgotten = TokenRegistry::default();
        assert_eq!(
            authenticate(None, &forgotten, &check, Some(&token), None),
            None
        );
        assert_eq!(
            authenticate(
                Some("admin-token"),
                &registry,
                &check,
                Some("admin-token"),
                None
            ),
            Some(UserInfo::admin())
        );
        assert_eq!(
            authenticate(Some("admin-token"), &registry, &check, Some("nope"), None),
            None
        );
        assert_eq!(
            authenticate(None, &registry, &check, None, None),
            Some(UserInfo::admin())
        );
    }

    #[test]
    fn the_registry_stays_bounded() {
        let registry = TokenRegistry::default();
        for i in 0..(MAX_ISSUED_TOKENS + 5) {
            let expires = 1_000 + i64::try_from(i).unwrap();
            let mut token_claims = claims(&[], expires);
            token_claims.issued = 0;
            registry.issue(token_claims, "");
        }
        assert_eq!(lock(&registry.tokens).len(), MAX_ISSUED_TOKENS);
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_bearer_tokens_never_panic_or_pass_for_an_issued_one(
            bearer in "[A-Za-z0-9._-]{0,80}",
            header in proptest::prelude::any::<bool>(),
        ) {
            let registry = TokenRegistry::default();
            let issued = registry.issue(claims(&["a"], now_seconds() + 100), "");
            // Half the cases carry our header, as a forged token would.
            let bearer = if header {
                format!("{}.{bearer}", encode_segment(TOKEN_HEADER))
            } else {
                bearer
            };
            let live: &dyn Fn(&str, &str, &str) -> Option<String> = &|_, _, _| Some("u1".to_owned());
            let check = TokenCheck { audiences: &["a".to_owned()], live_uid: live };
            let user = authenticate(Some("admin"), &registry, &check, Some(&bearer), None);
            proptest::prop_assert_eq!(user.is_some(), bearer == issued || bearer == "admin");
        }
    }
}
