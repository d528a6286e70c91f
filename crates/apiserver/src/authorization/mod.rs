//! Authorization: who may do what (kube-apiserver's `--authorization-mode`).
//!
//! The default, [`AuthorizationMode::AlwaysAllow`], lets every authenticated user do
//! everything, as a server without authorization does; tests that want no authorization
//! keep it. [`AuthorizationMode::Rbac`] answers from the stored Roles, ClusterRoles and
//! their bindings ([`rbac`]). Members of `system:masters` may do everything in every mode
//! (kube-apiserver's privileged-group authorizer runs first).
//!
//! The endpoints ask before anything else (after authentication and impersonation):
//! a refused request gets the 403 of [`Attributes::forbidden`], whether or not the
//! resource exists.

mod attributes;
mod escalation;
mod policy_rule;
mod rbac;

pub(crate) use attributes::Attributes;
#[cfg(test)]
pub(crate) use attributes::Target;
pub(crate) use escalation::{RbacWrite, check_rbac_write};
pub(crate) use policy_rule::PolicyRule;
pub(crate) use rbac::Rbac;
use rbac::RbacDecision;

use crate::storage::Store;

/// The group whose members may do everything.
pub(crate) const MASTERS_GROUP: &str = "system:masters";

/// How the server decides whether a user may do something (`--authorization-mode`).
///
/// ```
/// use kubeclient_apiserver::AuthorizationMode;
///
/// assert_eq!("RBAC".parse::<AuthorizationMode>(), Ok(AuthorizationMode::Rbac));
/// assert_eq!(AuthorizationMode::default(), AuthorizationMode::AlwaysAllow);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AuthorizationMode {
    /// Every authenticated user may do everything.
    #[default]
    AlwaysAllow,
    /// Roles, ClusterRoles, RoleBindings and ClusterRoleBindings decide.
    Rbac,
}

/// Why a mode name is not one the server knows.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown authorization mode {0:?}: use AlwaysAllow or RBAC")]
pub struct UnknownAuthorizationMode(pub String);

impl std::str::FromStr for AuthorizationMode {
    type Err = UnknownAuthorizationMode;

    fn from_str(mode: &str) -> Result<Self, Self::Err> {
        match mode {
            "AlwaysAllow" => Ok(AuthorizationMode::AlwaysAllow),
            "RBAC" => Ok(AuthorizationMode::Rbac),
            other => Err(UnknownAuthorizationMode(other.to_owned())),
        }
    }
}

/// An authorizer's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Allowed, with the reason a review reports (may be empty).
    Allow(String),
    /// Refused, with the reason appended to the 403 (may be empty).
    Deny(String),
}

impl Decision {
    /// Whether it allows.
    pub(crate) fn allowed(&self) -> bool {
        matches!(self, Decision::Allow(_))
    }
}

/// Whether `attributes.user` may do what it asks, under `mode`.
pub(crate) fn authorize(
    mode: AuthorizationMode,
    store: &Store,
    attributes: &Attributes,
) -> Decision {
    if attributes.user.groups.iter().any(|g| g == MASTERS_GROUP) {
        return Decision::Allow(String::new());
    }
    match mode {
        AuthorizationMode::AlwaysAllow => Decision::Allow(String::new()),
        AuthorizationMode::Rbac => match Rbac::new(store).authorize(attributes) {
            RbacDecision::Allowed(reason) => Decision::Allow(reason),
            RbacDecision::Denied(reason) => Decision::Deny(reason),
        },
    }
}
