//! [`MatchResources`]: what a webhook or a validating admission policy (and its binding) is
//! called for, read leniently from a stored object (its validation ran when it was
//! written): the rules with their operations, groups, versions, resources, scope and
//! (policies) resource names, the excluded rules, `matchPolicy` and the two selectors.
//! [`super::matcher`] decides with it.

use kubeclient_machinery::selector::LabelSelector;
use serde_json::Value;

use crate::object::{label_selector, string_list};

/// One rule: what it names.
#[derive(Clone, Debug, Default)]
pub(crate) struct Rule {
    /// `operations` (`*` for all).
    pub(crate) operations: Vec<String>,
    /// `apiGroups`.
    pub(crate) api_groups: Vec<String>,
    /// `apiVersions`.
    pub(crate) api_versions: Vec<String>,
    /// `resources` (`pods`, `pods/status`, `*`, `*/*`).
    pub(crate) resources: Vec<String>,
    /// `resourceNames` (policies' rules; empty: any name).
    pub(crate) resource_names: Vec<String>,
    /// `scope`: `*` (default), `Cluster` or `Namespaced`.
    pub(crate) scope: String,
}

impl Rule {
    /// The rule naming every operation on every resource and subresource (a binding's
    /// `matchResources` without `resourceRules`).
    fn everything() -> Self {
        let all = vec!["*".to_owned()];
        Rule {
            operations: all.clone(),
            api_groups: all.clone(),
            api_versions: all,
            resources: vec!["*/*".to_owned()],
            resource_names: Vec::new(),
            scope: "*".to_owned(),
        }
    }

    fn read(value: &Value) -> Self {
        let scope = value.get("scope").and_then(Value::as_str).unwrap_or("");
        Rule {
            operations: string_list(value.get("operations")),
            api_groups: string_list(value.get("apiGroups")),
            api_versions: string_list(value.get("apiVersions")),
            resources: string_list(value.get("resources")),
            resource_names: string_list(value.get("resourceNames")),
            scope: if scope.is_empty() { "*" } else { scope }.to_owned(),
        }
    }
}

/// What a webhook, a policy's `matchConstraints` or a binding's `matchResources` names.
#[derive(Clone, Debug)]
pub(crate) struct MatchResources {
    /// The rules, one of which must name the write.
    pub(crate) rules: Vec<Rule>,
    /// The rules none of which may name it (`excludeResourceRules`).
    pub(crate) exclude_rules: Vec<Rule>,
    /// `matchPolicy: Exact` (the default is Equivalent).
    pub(crate) exact_match: bool,
    /// `namespaceSelector`; `Err` with the reason when it does not parse.
    pub(crate) namespace_selector: Result<LabelSelector, String>,
    /// `objectSelector`; `Err` with the reason when it does not parse.
    pub(crate) object_selector: Result<LabelSelector, String>,
}

fn rules(value: &Value, field: &str) -> Vec<Rule> {
    value
        .get(field)
        .and_then(Value::as_array)
        .map(|rules| rules.iter().map(Rule::read).collect())
        .unwrap_or_default()
}

fn selector(value: Option<&Value>) -> Result<LabelSelector, String> {
    label_selector(value).map_err(|err| err.to_string())
}

impl MatchResources {
    fn read(value: &Value, rules: Vec<Rule>) -> Self {
        MatchResources {
            rules,
            exclude_rules: self::rules(value, "excludeResourceRules"),
            exact_match: value.get("matchPolicy").and_then(Value::as_str) == Some("Exact"),
            namespace_selector: selector(value.get("namespaceSelector")),
            object_selector: selector(value.get("objectSelector")),
        }
    }

    /// A webhook's: its `rules` and the selectors and `matchPolicy` beside them.
    pub(crate) fn of_webhook(webhook: &Value) -> Self {
        Self::read(webhook, rules(webhook, "rules"))
    }

    /// A policy's `matchConstraints`.
    pub(crate) fn of_constraints(constraints: &Value) -> Self {
        Self::read(constraints, rules(constraints, "resourceRules"))
    }

    /// A binding's `matchResources`: without `resourceRules` it names every resource (the
    /// policy's constraints still apply).
    pub(crate) fn of_binding(match_resources: &Value) -> Self {
        let mut rules = rules(match_resources, "resourceRules");
        if rules.is_empty() {
            rules.push(Rule::everything());
        }
        Self::read(match_resources, rules)
    }
}
