//! Query parameters, with the API server's boolean rule: present and not `0`/`false` is true.

use std::collections::HashMap;

use kubeclient_machinery::Status;

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

    /// An integer parameter (`limit`, `timeoutSeconds`, `gracePeriodSeconds`), read as the
    /// API server reads it (Go's `strconv.ParseInt`, base 10, 64 bits); absent or empty is
    /// `None`.
    ///
    /// # Errors
    ///
    /// 400 BadRequest with Go's message (`strconv.ParseInt: parsing "abc": invalid syntax`,
    /// `... value out of range`), as the API server answers.
    pub(crate) fn int64(&self, name: &str) -> Result<Option<i64>, Box<Status>> {
        let Some(text) = self.non_empty(name) else {
            return Ok(None);
        };
        text.parse::<i64>().map(Some).map_err(|err| {
            let why = match err.kind() {
                std::num::IntErrorKind::PosOverflow | std::num::IntErrorKind::NegOverflow => {
                    "value out of range"
                }
                _ => "invalid syntax",
            };
            Box::new(Status::bad_request(format!(
                "strconv.ParseInt: parsing {text:?}: {why}"
            )))
        })
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
    fn timeout_seconds_abc_and_out_of_range_are_bad_requests() {
        let query = Query::parse(Some(
            "timeoutSeconds=abc&b=18446744073709551615&c=-1&d=&e=1.5&f=%2B7",
        ));
        let abc = query.int64("timeoutSeconds").unwrap_err();
        assert_eq!(
            (abc.code, abc.message.as_str()),
            (400, "strconv.ParseInt: parsing \"abc\": invalid syntax")
        );
        let huge = query.int64("b").unwrap_err();
        assert_eq!(
            huge.message,
            "strconv.ParseInt: parsing \"18446744073709551615\": value out of range"
        );
        assert_eq!(query.int64("c").unwrap(), Some(-1));
        assert_eq!(query.int64("d").unwrap(), None);
        assert!(query.int64("e").is_err());
        assert_eq!(query.int64("f").unwrap(), Some(7));
        assert_eq!(query.int64("absent").unwrap(), None);
    }

    #[test]
    fn values_are_url_decoded() {
        let query = Query::parse(Some("labelSelector=app%3Dweb%2Ctier+in+%28a%29"));
        assert_eq!(query.get("labelSelector"), Some("app=web,tier in (a)"));
    }
}
