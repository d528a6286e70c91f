//! [`Rbac`]: kube-apiserver's RBAC authorizer (`plugin/pkg/auth/authorizer/rbac`) over the
//! stored ClusterRoleBindings, RoleBindings, ClusterRoles and Roles.
//!
//! A request is allowed when a rule of a role bound to the user allows it: every
//! ClusterRoleBinding's ClusterRole, then the RoleBindings of the request's namespace (to a
//! Role of that namespace or a ClusterRole). A binding applies to a user by name, to a
//! group the user is in, or to a ServiceAccount (`system:serviceaccount:<ns>:<name>`; a
//! RoleBinding's ServiceAccount subject without a namespace is in the binding's). A
//! ClusterRole with an `aggregationRule` holds its own rules and those of every ClusterRole
//! its selectors match (what kube-controller-manager's aggregation controller writes into
//! it), so a role labelled `rbac.authorization.k8s.io/aggregate-to-view` extends `view` at
//! once.

use std::collections::BTreeSet;
use std::ops::ControlFlow;

use kubeclient_machinery::GroupResource;
use serde_json::Value;

use super::attributes::Attributes;
use super::policy_rule::PolicyRule;
use crate::authentication::UserInfo;
use crate::object::{label_selector, meta_str, store_key};
use crate::storage::Store;

const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

fn rbac(resource: &str) -> GroupResource {
    GroupResource::new(RBAC_GROUP, resource)
}

/// A binding that gave a rule, for the reason an allowed review reports.
struct Grant<'a> {
    binding: String,
    role: String,
    subject: &'a Value,
}

impl Grant<'_> {
    /// `RBAC: allowed by RoleBinding "rb/team" of Role "reader" to ServiceAccount "bot/team"`.
    fn reason(&self) -> String {
        let kind = self
            .subject
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("");
        let name = self
            .subject
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("");
        let subject = match self.subject.get("namespace").and_then(Value::as_str) {
            Some(namespace) if kind == "ServiceAccount" => format!("{name}/{namespace}"),
            _ => name.to_owned(),
        };
        format!(
            "RBAC: allowed by {} of {} to {kind} {subject:?}",
            self.binding, self.role
        )
    }
}

/// The answer of the RBAC authorizer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum RbacDecision {
    /// A rule allows it; the reason names the binding, the role and the subject.
    Allowed(String),
    /// No rule allows it; the reason lists roles that could not be found (else empty).
    Denied(String),
}

/// The RBAC authorizer over a store.
pub(crate) struct Rbac<'a> {
    store: &'a Store,
}

impl<'a> Rbac<'a> {
    /// The authorizer reading `store`'s RBAC objects.
    pub(crate) fn new(store: &'a Store) -> Self {
        Rbac { store }
    }

    /// Whether a bound rule allows the request.
    pub(crate) fn authorize(&self, attributes: &Attributes) -> RbacDecision {
        let mut allowed = None;
        let errors = self.visit(
            &attributes.user,
            attributes.namespace(),
            &mut |grant, rule| {
                if rule.allows(attributes) {
                    allowed = Some(grant.reason());
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            },
        );
        match allowed {
            Some(reason) => RbacDecision::Allowed(reason),
            None => RbacDecision::Denied(errors_reason(&errors)),
        }
    }

    /// Every rule bound to `user` cluster-wide and in `namespace` (empty: cluster-wide
    /// only), and the roles that could not be found (`SelfSubjectRulesReview`).
    pub(crate) fn rules_for(&self, user: &UserInfo, namespace: &str) -> (Vec<PolicyRule>, String) {
        let mut rules: Vec<PolicyRule> = Vec::new();
        let errors = self.visit(user, namespace, &mut |_, rule| {
            if !rules.contains(rule) {
                rules.push(rule.clone());
            }
            ControlFlow::Continue(())
        });
        (rules, errors_reason(&errors))
    }

    /// Calls `visit` with each rule bound to `user` (cluster-wide, then in `namespace`)
    /// until it breaks; returns the roles that could not be found.
    fn visit(
        &self,
        user: &UserInfo,
        namespace: &str,
        visit: &mut dyn FnMut(&Grant<'_>, &PolicyRule) -> ControlFlow<()>,
    ) -> Vec<String> {
        let mut errors = Vec::new();
        let cluster_bindings = self.store.snapshot(&rbac("clusterrolebindings"), "");
        for binding in &cluster_bindings.objects {
            let binding = &binding.value;
            let Some(subject) = applying_subject(binding, user, "") else {
                continue;
            };
            let role_name = role_ref(binding, "name");
            if role_ref(binding, "kind") != "ClusterRole" {
                continue;
            }
            let Some(rules) = self.cluster_role_rules(role_name) else {
                errors.push(format!("clusterrole.{RBAC_GROUP} {role_name:?} not found"));
                continue;
            };
            let grant = Grant {
                binding: format!("ClusterRoleBinding {:?}", meta_str(binding, "name")),
                role: format!("ClusterRole {role_name:?}"),
                subject,
            };
            if rules.iter().any(|rule| visit(&grant, rule).is_break()) {
                return errors;
            }
        }
        if namespace.is_empty() {
            return errors;
        }
        let bindings = self
            .store
            .snapshot(&rbac("rolebindings"), &format!("{namespace}/"));
        for binding in &bindings.objects {
            let binding = &binding.value;
            let Some(subject) = applying_subject(binding, user, namespace) else {
                continue;
            };
            let role_name = role_ref(binding, "name");
            let (rules, role) = match role_ref(binding, "kind") {
                "ClusterRole" => (
                    self.cluster_role_rules(role_name),
                    format!("ClusterRole {role_name:?}"),
                ),
                "Role" => (
                    self.role_rules(namespace, role_name),
                    format!("Role {role_name:?}"),
                ),
                _ => continue,
            };
            let Some(rules) = rules else {
                let kind = role_ref(binding, "kind").to_ascii_lowercase();
                errors.push(format!("{kind}.{RBAC_GROUP} {role_name:?} not found"));
                continue;
            };
            let grant = Grant {
                binding: format!("RoleBinding \"{}/{namespace}\"", meta_str(binding, "name")),
                role,
                subject,
            };
            if rules.iter().any(|rule| visit(&grant, rule).is_break()) {
                return errors;
            }
        }
        errors
    }

    /// A Role's rules; `None` when it does not exist.
    pub(crate) fn role_rules(&self, namespace: &str, name: &str) -> Option<Vec<PolicyRule>> {
        self.store
            .get(&rbac("roles"), &store_key(Some(namespace), name))
            .map(|role| PolicyRule::all_of(&role.value))
    }

    /// A ClusterRole's rules, with those its `aggregationRule` selects; `None` when it
    /// does not exist.
    pub(crate) fn cluster_role_rules(&self, name: &str) -> Option<Vec<PolicyRule>> {
        let role = self.store.get(&rbac("clusterroles"), name)?;
        let mut rules = PolicyRule::all_of(&role.value);
        let mut seen = BTreeSet::from([name.to_owned()]);
        self.aggregate(&role.value, &mut rules, &mut seen);
        Some(rules)
    }

    /// Adds the rules of the ClusterRoles `role`'s aggregation selectors match (and,
    /// for aggregated ones among them, theirs), each role once.
    fn aggregate(&self, role: &Value, rules: &mut Vec<PolicyRule>, seen: &mut BTreeSet<String>) {
        let Some(selectors) = role
            .pointer("/aggregationRule/clusterRoleSelectors")
            .and_then(Value::as_array)
        else {
            return;
        };
        let selectors: Vec<_> = selectors
            .iter()
            .filter_map(|selector| label_selector(Some(selector)).ok())
            .filter(|selector| !selector.is_empty())
            .collect();
        if selectors.is_empty() {
            return;
        }
        let all = self.store.snapshot(&rbac("clusterroles"), "");
        for candidate in &all.objects {
            let candidate = &candidate.value;
            let name = meta_str(candidate, "name");
            let labels = candidate.pointer("/metadata/labels");
            let label = |key: &str| labels.and_then(|l| l.get(key)).and_then(Value::as_str);
            if seen.contains(name) || !selectors.iter().any(|s| s.matches_with(&label)) {
                continue;
            }
            seen.insert(name.to_owned());
            for rule in PolicyRule::all_of(candidate) {
                if !rules.contains(&rule) {
                    rules.push(rule);
                }
            }
            self.aggregate(candidate, rules, seen);
        }
    }
}

fn role_ref<'v>(binding: &'v Value, field: &str) -> &'v str {
    binding
        .pointer(&format!("/roleRef/{field}"))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// The first subject of `binding` that is `user` (kube-apiserver's `appliesToUser`).
fn applying_subject<'v>(binding: &'v Value, user: &UserInfo, namespace: &str) -> Option<&'v Value> {
    binding
        .get("subjects")
        .and_then(Value::as_array)?
        .iter()
        .find(|subject| applies_to(subject, user, namespace))
}

fn applies_to(subject: &Value, user: &UserInfo, binding_namespace: &str) -> bool {
    let field = |name: &str| subject.get(name).and_then(Value::as_str).unwrap_or("");
    let name = field("name");
    match field("kind") {
        "User" => user.username == name,
        "Group" => user.groups.iter().any(|group| group == name),
        "ServiceAccount" => {
            let namespace = match field("namespace") {
                "" => binding_namespace,
                namespace => namespace,
            };
            !namespace.is_empty()
                && user.username == format!("system:serviceaccount:{namespace}:{name}")
        }
        _ => false,
    }
}

/// `RBAC: a` for one error, `RBAC: [a, b]` for several, empty for none.
fn errors_reason(errors: &[String]) -> String {
    match errors {
        [] => String::new(),
        [one] => format!("RBAC: {one}"),
        many => format!("RBAC: [{}]", many.join(", ")),
    }
}
