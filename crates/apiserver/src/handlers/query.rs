//! Query parameters, with the API server's boolean rule: present and not `0`/`false` is true.

use std::collections::HashMap;

/// The decoded query string of a request.
#[derive(Debug, Default)]
pub(crate) struct Query {
    params: HashMap<String, String>,
}

impl Query {
    /// Parses a raw query string (`a=1&b=2`).
    pub(crate) fn parse(raw: Option<&str>) -> Self {
        let params = raw
            .map(|raw| {
                form_urlencoded::parse(raw.as_bytes())
                    .into_owned()
                    .collect()
            })
            .unwrap_or_default();
        Query { params }
    }

    /// A parameter's value (the last one if repeated).
    pub(crate) fn get(&self, name: &str) -> Option<&str> {
        self.params.get(name).map(String::as_str)
    }

    /// A non-empty parameter.
    pub(crate) fn non_empty(&self, name: &str) -> Option<&str> {
        self.get(name).filter(|v| !v.is_empty())
    }

    /// A boolean parameter: true when present with any value but `0` or `false`.
    pub(crate) fn flag(&self, name: &str) -> bool {
        self.get(name)
            .is_some_and(|v| v != "0" && !v.eq_ignore_ascii_case("false"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn booleans_follow_the_api_server_rule() {
        let query = Query::parse(Some("watch=&a=1&b=yes&c=0&d=False&e=true"));
        assert!(query.flag("watch") && query.flag("a") && query.flag("b") && query.flag("e"));
        assert!(!query.flag("c") && !query.flag("d") && !query.flag("absent"));
    }

    #[test]
    fn values_are_url_decoded() {
        let query = Query::parse(Some("labelSelector=app%3Dweb%2Ctier+in+%28a%29"));
        assert_eq!(query.get("labelSelector"), Some("app=web,tier in (a)"));
    }
}
