//! [`Impersonation`]: acting as another user (client-go's `rest.ImpersonationConfig`,
//! kubectl's `--as`, `--as-group`, `--as-uid`; a kubeconfig user's `as`, `as-groups`,
//! `as-uid`, `as-user-extra`). Every request carries the `Impersonate-*` headers; the
//! server allows it only when the real user may `impersonate` each of them.

use std::collections::BTreeMap;

use http::{HeaderName, HeaderValue};

/// The user (and groups, uid, extra fields) every request acts as.
///
/// ```
/// use kubeclient::config::Impersonation;
///
/// let bot = Impersonation::user("system:serviceaccount:team:bot").with_groups(["system:authenticated"]);
/// let headers = bot.headers()?;
/// assert_eq!(headers[0].0, "impersonate-user");
/// assert_eq!(headers[1].1, "system:authenticated");
/// # Ok::<(), kubeclient::config::ImpersonationError>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Impersonation {
    /// The user name (`Impersonate-User`); required.
    pub user: String,
    /// The user's uid (`Impersonate-Uid`).
    pub uid: Option<String>,
    /// The groups (`Impersonate-Group`, one header each).
    pub groups: Vec<String>,
    /// Extra fields (`Impersonate-Extra-<key>`, one header per value).
    pub extra: BTreeMap<String, Vec<String>>,
}

/// Why impersonation headers cannot be sent.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ImpersonationError {
    /// Groups, a uid or extra fields without a user: the server would refuse them.
    #[error(
        "impersonation needs a user name: set Impersonation::user (kubeconfig `as`) along with groups, uid or extra"
    )]
    NoUser,
    /// A value cannot be an HTTP header value (control characters).
    #[error("the impersonation value {0:?} cannot be sent as a header (use visible characters)")]
    BadValue(String),
}

impl Impersonation {
    /// Acting as `user`.
    #[must_use]
    pub fn user(user: impl Into<String>) -> Self {
        Impersonation {
            user: user.into(),
            ..Impersonation::default()
        }
    }

    /// The same, in `groups` too.
    #[must_use]
    pub fn with_groups<I, S>(mut self, groups: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.groups.extend(groups.into_iter().map(Into::into));
        self
    }

    /// Whether nothing is impersonated.
    pub fn is_empty(&self) -> bool {
        self.user.is_empty()
            && self.uid.is_none()
            && self.groups.is_empty()
            && self.extra.is_empty()
    }

    /// The headers every request carries, in client-go's order (user, groups, uid, extra).
    /// Extra keys are percent-encoded where a header name could not hold them, as
    /// client-go does.
    ///
    /// # Errors
    ///
    /// [`ImpersonationError`] for groups without a user, or a value that is not a header.
    pub fn headers(&self) -> Result<Vec<(HeaderName, HeaderValue)>, ImpersonationError> {
        if self.user.is_empty() {
            return if self.is_empty() {
                Ok(Vec::new())
            } else {
                Err(ImpersonationError::NoUser)
            };
        }
        let value = |text: &str| {
            HeaderValue::from_str(text).map_err(|_| ImpersonationError::BadValue(text.to_owned()))
        };
        let mut headers = vec![(
            HeaderName::from_static("impersonate-user"),
            value(&self.user)?,
        )];
        for group in &self.groups {
            headers.push((HeaderName::from_static("impersonate-group"), value(group)?));
        }
        if let Some(uid) = &self.uid {
            headers.push((HeaderName::from_static("impersonate-uid"), value(uid)?));
        }
        for (key, values) in &self.extra {
            let name = format!("impersonate-extra-{}", escape_header_key(key));
            let name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| ImpersonationError::BadValue(key.clone()))?;
            for extra in values {
                headers.push((name.clone(), value(extra)?));
            }
        }
        Ok(headers)
    }
}

/// `key` with every byte a header name may not hold percent-encoded (lower case: header
/// names are case-insensitive, and the server lower-cases them before decoding).
fn escape_header_key(key: &str) -> String {
    let mut escaped = String::with_capacity(key.len());
    for byte in key.bytes() {
        let token = byte.is_ascii_alphanumeric() || b"!#$&'*+-.^_`|~".contains(&byte);
        if token {
            escaped.push(char::from(byte.to_ascii_lowercase()));
        } else {
            escaped.push_str(&format!("%{byte:02x}"));
        }
    }
    escaped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_follow_client_go() {
        let mut asked = Impersonation::user("alice").with_groups(["dev", "ops"]);
        asked.uid = Some("u-1".to_owned());
        asked.extra.insert(
            "scopes.example.com/a b".to_owned(),
            vec!["x".to_owned(), "y".to_owned()],
        );
        let headers: Vec<(String, String)> = asked
            .headers()
            .expect("headers")
            .into_iter()
            .map(|(name, value)| (name.to_string(), value.to_str().unwrap_or("").to_owned()))
            .collect();
        let pairs: Vec<(&str, &str)> = headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        assert_eq!(
            pairs,
            [
                ("impersonate-user", "alice"),
                ("impersonate-group", "dev"),
                ("impersonate-group", "ops"),
                ("impersonate-uid", "u-1"),
                ("impersonate-extra-scopes.example.com%2fa%20b", "x"),
                ("impersonate-extra-scopes.example.com%2fa%20b", "y"),
            ]
        );
    }

    #[test]
    fn groups_without_a_user_and_bad_values_are_errors() {
        assert_eq!(Impersonation::default().headers(), Ok(Vec::new()));
        let groups_only = Impersonation::default().with_groups(["g"]);
        assert_eq!(groups_only.headers(), Err(ImpersonationError::NoUser));
        let bad = Impersonation::user("a\nb");
        assert!(matches!(
            bad.headers(),
            Err(ImpersonationError::BadValue(_))
        ));
    }
}
