//! RBAC's escalation and bind checks (kube-apiserver's `pkg/registry/rbac/*/policybased`
//! and `rbac/validation.ConfirmNoEscalation`): a user may write a Role or ClusterRole only
//! with rules it holds itself (or with the `escalate` verb on it), and may bind a role
//! only when it holds all of that role's rules (or has the `bind` verb on it). Members of
//! `system:masters` may do both.

use std::collections::HashMap;

use kubeclient_machinery::{GroupResource, Status};
use serde_json::Value;

use super::attributes::Attributes;
use super::policy_rule::PolicyRule;
use super::rbac::Rbac;
use super::{AuthorizationMode, Decision, MASTERS_GROUP, authorize};
use crate::authentication::UserInfo;
use crate::storage::Store;

const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

/// One write of an RBAC object, to check before it is stored.
pub(crate) struct RbacWrite<'a> {
    /// `roles`, `clusterroles`, `rolebindings` or `clusterrolebindings`.
    pub(crate) resource: &'a str,
    /// The namespace (empty for the cluster-wide kinds).
    pub(crate) namespace: &'a str,
    /// The object as it would be stored.
    pub(crate) object: &'a Value,
}

/// Whether `user` may write `write` under `mode`.
///
/// # Errors
///
/// 403 naming the rules the user does not hold, or 404 for a binding to a missing role.
pub(crate) fn check_rbac_write(
    mode: AuthorizationMode,
    store: &Store,
    user: &UserInfo,
    write: &RbacWrite<'_>,
) -> Result<(), Box<Status>> {
    if mode != AuthorizationMode::Rbac || user.groups.iter().any(|g| g == MASTERS_GROUP) {
        return Ok(());
    }
    let name = write
        .object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let asked = |verb: &str, resource: &str, role: &str| {
        let attributes = Attributes::resource(
            user.clone(),
            verb,
            RBAC_GROUP,
            resource,
            write.namespace,
            role,
        );
        matches!(authorize(mode, store, &attributes), Decision::Allow(_))
    };
    let rules = match write.resource {
        "roles" | "clusterroles" => {
            if asked("escalate", write.resource, name) {
                return Ok(());
            }
            PolicyRule::all_of(write.object)
        }
        "rolebindings" | "clusterrolebindings" => {
            let role_field = |field: &str| {
                write
                    .object
                    .pointer(&format!("/roleRef/{field}"))
                    .and_then(Value::as_str)
                    .unwrap_or("")
            };
            let (role_kind, role_name) = (role_field("kind"), role_field("name"));
            let role_resource = if role_kind == "Role" {
                "roles"
            } else {
                "clusterroles"
            };
            if asked("bind", role_resource, role_name) {
                return Ok(());
            }
            let rbac = Rbac::new(store);
            let rules = if role_kind == "Role" {
                rbac.role_rules(write.namespace, role_name)
            } else {
                rbac.cluster_role_rules(role_name)
            };
            rules.ok_or_else(|| {
                Box::new(Status::not_found(
                    &GroupResource::new(RBAC_GROUP, role_resource),
                    role_name,
                ))
            })?
        }
        _ => return Ok(()),
    };
    let (held, errors) = Rbac::new(store).rules_for(user, write.namespace);
    let groups: Vec<String> = user.groups.iter().map(|g| format!("{g:?}")).collect();
    let who = format!("user {:?} (groups=[{}])", user.username, groups.join(" "));
    let mut why = match missing_rules(&held, &rules) {
        Some(missing) if missing.is_empty() => return Ok(()),
        Some(missing) => format!(
            "{who} is attempting to grant RBAC permissions not currently held:\n{}",
            missing.join("\n")
        ),
        None => format!(
            "{who} is attempting to grant RBAC permissions that cannot be checked: the rules expand to more than {MAX_RULE_ATOMS} verb and resource combinations (split them over several roles)"
        ),
    };
    if !errors.is_empty() {
        why.push_str(&format!("; resolution errors: {errors}"));
    }
    Err(Box::new(Status::forbidden(
        &GroupResource::new(RBAC_GROUP, write.resource),
        name,
        &why,
    )))
}

/// The most verb-and-resource combinations a write's rules may expand to: the check below
/// is linear in them, and a 3 MiB body could otherwise ask for trillions.
const MAX_RULE_ATOMS: usize = 10_000;

/// A resource rule's API groups, resources and resource names: what merges its verbs.
type ResourceKey = (Vec<String>, Vec<String>, Vec<String>);

/// How many one-verb rules `rule` breaks down to (saturating).
fn atom_count(rule: &PolicyRule) -> usize {
    let names = rule.resource_names.len().max(1);
    let resources = rule
        .api_groups
        .len()
        .saturating_mul(rule.resources.len())
        .saturating_mul(names);
    rule.verbs
        .len()
        .saturating_mul(resources.saturating_add(rule.non_resource_urls.len()))
}

/// The requested rules `held` does not cover, broken down to one verb of one resource (or
/// URL) each, merged again per resource and printed as kube-apiserver's `CompactString`,
/// sorted and without duplicates; `None` when they break down to more than
/// [`MAX_RULE_ATOMS`].
fn missing_rules(held: &[PolicyRule], requested: &[PolicyRule]) -> Option<Vec<String>> {
    let atoms = requested
        .iter()
        .fold(0usize, |total, rule| total.saturating_add(atom_count(rule)));
    if atoms > MAX_RULE_ATOMS {
        return None;
    }
    let mut missing: Vec<PolicyRule> = Vec::new();
    // Resource atoms merge per (groups, resources, names): where each one went.
    let mut merged_at: HashMap<ResourceKey, usize> = HashMap::new();
    for rule in requested {
        for atom in breakdown(rule) {
            if held.iter().any(|owner| covers(owner, &atom)) {
                continue;
            }
            if !atom.non_resource_urls.is_empty() {
                missing.push(atom);
                continue;
            }
            let key = (
                atom.api_groups.clone(),
                atom.resources.clone(),
                atom.resource_names.clone(),
            );
            match merged_at.get(&key) {
                Some(&index) => {
                    let merged = &mut missing[index];
                    if !merged.verbs.contains(&atom.verbs[0]) {
                        merged.verbs.push(atom.verbs[0].clone());
                    }
                }
                None => {
                    merged_at.insert(key, missing.len());
                    missing.push(atom);
                }
            }
        }
    }
    let mut printed: Vec<String> = missing.iter().map(compact_string).collect();
    printed.sort();
    printed.dedup();
    Some(printed)
}

/// One rule per verb and resource (and resource name), or per verb and URL.
fn breakdown(rule: &PolicyRule) -> Vec<PolicyRule> {
    let mut atoms = Vec::new();
    for verb in &rule.verbs {
        for group in &rule.api_groups {
            for resource in &rule.resources {
                let names: Vec<Vec<String>> = if rule.resource_names.is_empty() {
                    vec![Vec::new()]
                } else {
                    rule.resource_names
                        .iter()
                        .map(|n| vec![n.clone()])
                        .collect()
                };
                for resource_names in names {
                    atoms.push(PolicyRule {
                        verbs: vec![verb.clone()],
                        api_groups: vec![group.clone()],
                        resources: vec![resource.clone()],
                        resource_names,
                        non_resource_urls: Vec::new(),
                    });
                }
            }
        }
        for url in &rule.non_resource_urls {
            atoms.push(PolicyRule {
                verbs: vec![verb.clone()],
                non_resource_urls: vec![url.clone()],
                ..PolicyRule::default()
            });
        }
    }
    atoms
}

fn has_or_star(items: &[String], wanted: &str) -> bool {
    items.iter().any(|item| item == "*" || item == wanted)
}

/// Whether `owner` covers the one-verb rule `atom` (kube-apiserver's `ruleCovers`).
fn covers(owner: &PolicyRule, atom: &PolicyRule) -> bool {
    let verb = &atom.verbs[0];
    if !has_or_star(&owner.verbs, verb) {
        return false;
    }
    if let Some(url) = atom.non_resource_urls.first() {
        return owner.non_resource_urls.iter().any(|held| {
            held == "*"
                || held == url
                || held
                    .strip_suffix('*')
                    .is_some_and(|prefix| url.starts_with(prefix))
        });
    }
    let (group, resource) = (&atom.api_groups[0], &atom.resources[0]);
    let resource_held = owner.resources.iter().any(|held| {
        held == "*"
            || held == resource
            || resource
                .split_once('/')
                .is_some_and(|(_, sub)| held.strip_prefix("*/") == Some(sub))
    });
    has_or_star(&owner.api_groups, group)
        && resource_held
        && (owner.resource_names.is_empty()
            || atom
                .resource_names
                .first()
                .is_some_and(|name| owner.resource_names.contains(name)))
}

/// `{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}`, Go's `%q` of each list.
fn compact_string(rule: &PolicyRule) -> String {
    let quoted = |items: &[String]| {
        let parts: Vec<String> = items.iter().map(|i| format!("{i:?}")).collect();
        format!("[{}]", parts.join(" "))
    };
    let mut parts = Vec::new();
    for (label, items) in [
        ("APIGroups", &rule.api_groups),
        ("Resources", &rule.resources),
        ("NonResourceURLs", &rule.non_resource_urls),
        ("ResourceNames", &rule.resource_names),
        ("Verbs", &rule.verbs),
    ] {
        if !items.is_empty() {
            parts.push(format!("{label}:{}", quoted(items)));
        }
    }
    format!("{{{}}}", parts.join(", "))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn rule(value: Value) -> PolicyRule {
        PolicyRule::from_json(&value)
    }

    #[test]
    fn missing_rules_are_broken_down_merged_and_printed_as_kube_apiserver() {
        let held = [rule(
            json!({"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods", "pods/log"]}),
        )];
        let asked = [
            rule(
                json!({"verbs": ["get", "delete", "list"], "apiGroups": [""], "resources": ["pods", "secrets"]}),
            ),
            rule(json!({"verbs": ["get"], "nonResourceURLs": ["/metrics"]})),
        ];
        assert_eq!(
            missing_rules(&held, &asked).expect("few rules"),
            [
                r#"{APIGroups:[""], Resources:["pods"], Verbs:["delete"]}"#,
                r#"{APIGroups:[""], Resources:["secrets"], Verbs:["get" "delete" "list"]}"#,
                r#"{NonResourceURLs:["/metrics"], Verbs:["get"]}"#,
            ]
        );
        let star = [rule(
            json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}),
        )];
        assert_eq!(missing_rules(&star, &asked[..1]), Some(Vec::new()));
        let named = [rule(
            json!({"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["a"]}),
        )];
        let asked_named = [rule(
            json!({"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["a", "b"]}),
        )];
        assert_eq!(
            missing_rules(&named, &asked_named).expect("few rules"),
            [r#"{APIGroups:[""], Resources:["configmaps"], ResourceNames:["b"], Verbs:["get"]}"#]
        );
        let status = [rule(
            json!({"verbs": ["update"], "apiGroups": ["apps"], "resources": ["*/status"]}),
        )];
        let asked_status = [rule(
            json!({"verbs": ["update"], "apiGroups": ["apps"], "resources": ["deployments/status"]}),
        )];
        assert_eq!(missing_rules(&status, &asked_status), Some(Vec::new()));
    }

    /// A hostile body: 3 lists of 1,000 strings would break down to 10^9 rules.
    #[test]
    fn rules_that_expand_too_far_are_not_broken_down() {
        let many =
            |prefix: &str| -> Vec<String> { (0..1000).map(|i| format!("{prefix}{i}")).collect() };
        let huge = PolicyRule {
            verbs: many("v"),
            api_groups: many("g"),
            resources: many("r"),
            ..PolicyRule::default()
        };
        assert_eq!(atom_count(&huge), 1_000_000_000);
        assert_eq!(
            missing_rules(&[], &[huge]),
            None,
            "refused before any breakdown"
        );
    }
}
