//! [`PolicyRule`]: one rule of a Role or ClusterRole, and whether it allows a request
//! (kube-apiserver's `rbac.RuleAllows`: verbs, API groups, resources with subresources
//! and `*/sub`, resource names, and non-resource URLs with a trailing `*`).

use serde_json::Value;

use super::attributes::{Attributes, Target};
use crate::object::string_list;

/// A `rbac.authorization.k8s.io/v1` `PolicyRule`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct PolicyRule {
    pub(crate) verbs: Vec<String>,
    pub(crate) api_groups: Vec<String>,
    pub(crate) resources: Vec<String>,
    pub(crate) resource_names: Vec<String>,
    pub(crate) non_resource_urls: Vec<String>,
}

fn has(items: &[String], wanted: &str) -> bool {
    items.iter().any(|item| item == "*" || item == wanted)
}

impl PolicyRule {
    /// The rule in a stored role's `rules` entry (missing fields are empty lists).
    pub(crate) fn from_json(rule: &Value) -> Self {
        PolicyRule {
            verbs: string_list(rule.get("verbs")),
            api_groups: string_list(rule.get("apiGroups")),
            resources: string_list(rule.get("resources")),
            resource_names: string_list(rule.get("resourceNames")),
            non_resource_urls: string_list(rule.get("nonResourceURLs")),
        }
    }

    /// The rules of a stored Role or ClusterRole.
    pub(crate) fn all_of(role: &Value) -> Vec<PolicyRule> {
        role.get("rules")
            .and_then(Value::as_array)
            .map(|rules| rules.iter().map(PolicyRule::from_json).collect())
            .unwrap_or_default()
    }

    /// As JSON, in the API's field order, without empty lists but `verbs`.
    pub(crate) fn to_json(&self) -> Value {
        let mut rule = serde_json::Map::new();
        rule.insert("verbs".to_owned(), self.verbs.clone().into());
        for (field, items) in [
            ("apiGroups", &self.api_groups),
            ("resources", &self.resources),
            ("resourceNames", &self.resource_names),
            ("nonResourceURLs", &self.non_resource_urls),
        ] {
            if !items.is_empty() {
                rule.insert(field.to_owned(), items.clone().into());
            }
        }
        Value::Object(rule)
    }

    /// Whether this rule allows the request.
    pub(crate) fn allows(&self, attributes: &Attributes) -> bool {
        if !has(&self.verbs, &attributes.verb) {
            return false;
        }
        match &attributes.target {
            Target::Path(path) => self.allows_path(path),
            Target::Resource {
                group,
                resource,
                subresource,
                name,
                ..
            } => {
                has(&self.api_groups, group)
                    && self.allows_resource(resource, subresource)
                    && (self.resource_names.is_empty()
                        || (!name.is_empty() && self.resource_names.contains(name)))
            }
        }
    }

    fn allows_resource(&self, resource: &str, subresource: &str) -> bool {
        let combined = if subresource.is_empty() {
            resource.to_owned()
        } else {
            format!("{resource}/{subresource}")
        };
        self.resources.iter().any(|rule| {
            rule == "*"
                || *rule == combined
                || (!subresource.is_empty() && rule.strip_prefix("*/") == Some(subresource))
        })
    }

    fn allows_path(&self, path: &str) -> bool {
        self.non_resource_urls.iter().any(|rule| {
            rule == "*"
                || rule == path
                || rule
                    .strip_suffix('*')
                    .is_some_and(|prefix| path.starts_with(prefix))
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::authentication::UserInfo;

    fn ask(verb: &str, group: &str, resource: &str, sub: &str, name: &str) -> Attributes {
        Attributes::resource(UserInfo::admin(), verb, group, resource, "ns", name)
            .with_subresource(sub)
    }

    #[test]
    fn rules_match_verbs_groups_resources_subresources_and_names() {
        let rule = PolicyRule::from_json(&json!({
            "verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods", "pods/log"]}));
        assert!(rule.allows(&ask("get", "", "pods", "", "web")));
        assert!(rule.allows(&ask("list", "", "pods", "", "")));
        assert!(rule.allows(&ask("get", "", "pods", "log", "web")));
        assert!(
            !rule.allows(&ask("get", "", "pods", "exec", "web")),
            "another subresource"
        );
        assert!(
            !rule.allows(&ask("delete", "", "pods", "", "web")),
            "another verb"
        );
        assert!(
            !rule.allows(&ask("get", "apps", "pods", "", "web")),
            "another group"
        );

        let status = PolicyRule::from_json(&json!({
            "verbs": ["*"], "apiGroups": ["*"], "resources": ["*/status"]}));
        assert!(status.allows(&ask("update", "apps", "deployments", "status", "web")));
        assert!(!status.allows(&ask("update", "apps", "deployments", "", "web")));

        let named = PolicyRule::from_json(&json!({
            "verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["settings"]}));
        assert!(named.allows(&ask("get", "", "configmaps", "", "settings")));
        assert!(!named.allows(&ask("get", "", "configmaps", "", "other")));
        assert!(
            !named.allows(&ask("get", "", "configmaps", "", "")),
            "a list names nothing"
        );
    }

    #[test]
    fn non_resource_urls_match_exactly_or_by_a_trailing_star() {
        let rule = PolicyRule::from_json(&json!({
            "verbs": ["get"], "nonResourceURLs": ["/api", "/api/*", "/healthz"]}));
        let get = |path: &str| Attributes::path(UserInfo::admin(), "get", path);
        assert!(rule.allows(&get("/api")));
        assert!(rule.allows(&get("/api/v1")));
        assert!(rule.allows(&get("/healthz")));
        assert!(!rule.allows(&get("/healthz/etcd")));
        assert!(!rule.allows(&get("/apis")));
        assert!(!rule.allows(&Attributes::path(UserInfo::admin(), "post", "/api")));
        assert!(
            !rule.allows(&ask("get", "", "pods", "", "")),
            "a URL rule allows no resource"
        );
    }
}
