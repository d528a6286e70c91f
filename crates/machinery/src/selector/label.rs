//! [`LabelSelector`]: the `labelSelector` grammar of Go's `k8s.io/apimachinery/pkg/labels`.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use k8s_openapi::apimachinery::pkg::apis::meta::v1 as metav1;

use super::SelectorError;
use super::lexer::{Token, tokenize};
use super::validation::{label_key_errors, label_value_errors};

/// The operator of a [`Requirement`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operator {
    /// `key=value`: the label exists with that value.
    Equals,
    /// `key==value`: same as [`Operator::Equals`], printed as written.
    DoubleEquals,
    /// `key!=value`: the label is absent or has another value.
    NotEquals,
    /// `key in (a,b)`: the label exists with one of the values.
    In,
    /// `key notin (a,b)`: the label is absent or has none of the values.
    NotIn,
    /// `key`: the label exists.
    Exists,
    /// `!key`: the label is absent.
    DoesNotExist,
    /// `key>5`: the label exists, is an integer, and is greater.
    GreaterThan,
    /// `key<5`: the label exists, is an integer, and is smaller.
    LessThan,
}

impl Operator {
    /// The name Go's `selection.Operator` gives it (`in`, `notin`, `=`, `==`, `!=`, `gt`,
    /// `lt`, `exists`, `!`).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Operator::Equals => "=",
            Operator::DoubleEquals => "==",
            Operator::NotEquals => "!=",
            Operator::In => "in",
            Operator::NotIn => "notin",
            Operator::Exists => "exists",
            Operator::DoesNotExist => "!",
            Operator::GreaterThan => "gt",
            Operator::LessThan => "lt",
        }
    }
}

/// One requirement of a [`LabelSelector`]: a key, an operator and its values.
///
/// Values are kept sorted and without duplicates (a set, as in Go's parser).
///
/// # Examples
///
/// ```
/// use kubeclient_machinery::selector::{Operator, Requirement};
/// let req = Requirement::new("tier", Operator::In, ["web", "api"]).unwrap();
/// assert_eq!(req.to_string(), "tier in (api,web)");
/// assert!(Requirement::new("tier", Operator::In, Vec::<String>::new()).is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Requirement {
    key: String,
    operator: Operator,
    values: Vec<String>,
}

impl Requirement {
    /// A validated requirement (Go's `labels.NewRequirement`): the key must be a valid
    /// label key, every value a valid label value, and the number of values must suit the
    /// operator (one for `=`/`==`/`!=`/`>`/`<`, at least one for `in`/`notin`, none for
    /// `exists`/`!`); `>`/`<` need an integer.
    ///
    /// # Errors
    ///
    /// [`SelectorError::Invalid`] listing every problem, in Go's field-error format, e.g.
    /// `values: Invalid value: []: for 'in', 'notin' operators, values set can't be empty`.
    pub fn new<I, S>(key: &str, operator: Operator, values: I) -> Result<Self, SelectorError>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let values: Vec<String> = values.into_iter().map(Into::into).collect();
        Requirement::validated(key, operator, values, "key", false)
    }

    /// The shared validation of `new`, the parser (whose key errors Go reports under the
    /// path `<nil>`) and the `metav1.LabelSelector` conversion (which prints absent values
    /// as `null`).
    fn validated(
        key: &str,
        operator: Operator,
        mut values: Vec<String>,
        key_path: &str,
        empty_values_print_as_null: bool,
    ) -> Result<Self, SelectorError> {
        let mut errors: Vec<String> = Vec::new();
        let key_errors = label_key_errors(key);
        if !key_errors.is_empty() {
            errors.push(format!(
                "{key_path}: Invalid value: {key:?}: {}",
                key_errors.join("; ")
            ));
        }
        let values_json = if values.is_empty() && empty_values_print_as_null {
            "null".to_owned()
        } else {
            serde_json::to_string(&values).unwrap_or_default()
        };
        let count_error = match operator {
            Operator::In | Operator::NotIn if values.is_empty() => {
                Some("for 'in', 'notin' operators, values set can't be empty")
            }
            Operator::Equals | Operator::DoubleEquals | Operator::NotEquals
                if values.len() != 1 =>
            {
                Some("exact-match compatibility requires one single value")
            }
            Operator::Exists | Operator::DoesNotExist if !values.is_empty() => {
                Some("values set must be empty for exists and does not exist")
            }
            Operator::GreaterThan | Operator::LessThan if values.len() != 1 => {
                Some("for 'Gt', 'Lt' operators, exactly one value is required")
            }
            _ => None,
        };
        if let Some(message) = count_error {
            errors.push(format!("values: Invalid value: {values_json}: {message}"));
        }
        if matches!(operator, Operator::GreaterThan | Operator::LessThan) {
            for (i, value) in values.iter().enumerate() {
                if value.parse::<i64>().is_err() {
                    errors.push(format!(
                        "values[{i}]: Invalid value: {value:?}: for 'Gt', 'Lt' operators, the value must be an integer"
                    ));
                }
            }
        }
        for (i, value) in values.iter().enumerate() {
            let value_errors = label_value_errors(value);
            if !value_errors.is_empty() {
                errors.push(format!(
                    "values[{i}][{key}]: Invalid value: {value:?}: {}",
                    value_errors.join("; ")
                ));
            }
        }
        if !errors.is_empty() {
            errors.dedup();
            return Err(SelectorError::Invalid(if errors.len() == 1 {
                errors.remove(0)
            } else {
                format!("[{}]", errors.join(", "))
            }));
        }
        values.sort();
        values.dedup();
        Ok(Requirement {
            key: key.to_owned(),
            operator,
            values,
        })
    }

    /// The label key.
    #[must_use]
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The operator.
    #[must_use]
    pub fn operator(&self) -> Operator {
        self.operator
    }

    /// The values, sorted.
    #[must_use]
    pub fn values(&self) -> &[String] {
        &self.values
    }

    /// Whether `labels` satisfy this requirement (Go's `Requirement.Matches`).
    #[must_use]
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.matches_with(&|key| labels.get(key).map(String::as_str))
    }

    /// [`matches`](Self::matches) over any label source: `label(key)` returns the value
    /// of a label, if set. Lets callers match labels they hold in another form (e.g.
    /// JSON) without building a map.
    #[must_use]
    pub fn matches_with<'a>(&self, label: &dyn Fn(&str) -> Option<&'a str>) -> bool {
        let label = label(&self.key);
        match self.operator {
            Operator::Equals | Operator::DoubleEquals | Operator::In => {
                label.is_some_and(|value| self.has_value(value))
            }
            Operator::NotEquals | Operator::NotIn => {
                label.is_none_or(|value| !self.has_value(value))
            }
            Operator::Exists => label.is_some(),
            Operator::DoesNotExist => label.is_none(),
            Operator::GreaterThan | Operator::LessThan => {
                let (Some(label), [bound]) = (label, self.values.as_slice()) else {
                    return false;
                };
                let (Ok(label), Ok(bound)) = (label.parse::<i64>(), bound.parse::<i64>()) else {
                    return false;
                };
                if self.operator == Operator::GreaterThan {
                    label > bound
                } else {
                    label < bound
                }
            }
        }
    }

    fn has_value(&self, value: &str) -> bool {
        self.values
            .binary_search_by(|v| v.as_str().cmp(value))
            .is_ok()
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let single = self.values.first().map_or("", String::as_str);
        match self.operator {
            Operator::Exists => f.write_str(&self.key),
            Operator::DoesNotExist => write!(f, "!{}", self.key),
            Operator::Equals => write!(f, "{}={single}", self.key),
            Operator::DoubleEquals => write!(f, "{}=={single}", self.key),
            Operator::NotEquals => write!(f, "{}!={single}", self.key),
            Operator::GreaterThan => write!(f, "{}>{single}", self.key),
            Operator::LessThan => write!(f, "{}<{single}", self.key),
            Operator::In => write!(f, "{} in ({})", self.key, self.values.join(",")),
            Operator::NotIn => write!(f, "{} notin ({})", self.key, self.values.join(",")),
        }
    }
}

/// A label selector: requirements that must all hold (Go's `labels.Selector`).
///
/// Parse one from text with [`str::parse`], build one from a map with
/// [`from_set`](Self::from_set) or from the API's `metav1.LabelSelector` with
/// [`from_api`](Self::from_api). It prints in canonical form: requirements sorted by key,
/// values sorted, no spaces except around `in`/`notin`, so printing then parsing gives the
/// same selector back.
///
/// The empty selector matches everything; [`nothing`](Self::nothing) (what a nil
/// `metav1.LabelSelector` converts to) matches nothing.
///
/// # Examples
///
/// ```
/// use std::collections::BTreeMap;
/// use kubeclient_machinery::LabelSelector;
///
/// let selector: LabelSelector = "env notin (dev), tier in (web,api), release".parse().unwrap();
/// assert_eq!(selector.to_string(), "env notin (dev),release,tier in (api,web)");
///
/// let labels = BTreeMap::from([("tier".to_string(), "web".to_string()), ("release".into(), "1".into())]);
/// assert!(selector.matches(&labels));
///
/// let err = "tier in web".parse::<LabelSelector>().unwrap_err();
/// assert_eq!(err.to_string(), "unable to parse requirement: found 'web' expected: '('");
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct LabelSelector {
    /// Sorted by key (stable: equal keys keep their order).
    requirements: Vec<Requirement>,
    /// Set only by [`LabelSelector::nothing`].
    matches_nothing: bool,
}

impl LabelSelector {
    /// The selector that matches everything (no requirements).
    #[must_use]
    pub fn everything() -> Self {
        LabelSelector::default()
    }

    /// The selector that matches nothing (Go's `labels.Nothing()`). It prints as `""`,
    /// like Go's, so it does not survive a print-then-parse round trip.
    #[must_use]
    pub fn nothing() -> Self {
        LabelSelector {
            requirements: Vec::new(),
            matches_nothing: true,
        }
    }

    /// A selector from requirements.
    #[must_use]
    pub fn from_requirements(mut requirements: Vec<Requirement>) -> Self {
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        LabelSelector {
            requirements,
            matches_nothing: false,
        }
    }

    /// `key=value` for every entry of a map, without validation (Go's
    /// `labels.SelectorFromSet`): what an object's labels or a `matchLabels` select.
    #[must_use]
    pub fn from_set(labels: &BTreeMap<String, String>) -> Self {
        LabelSelector::from_requirements(
            labels
                .iter()
                .map(|(key, value)| Requirement {
                    key: key.clone(),
                    operator: Operator::Equals,
                    values: vec![value.clone()],
                })
                .collect(),
        )
    }

    /// Converts the API's `metav1.LabelSelector` (Go's `metav1.LabelSelectorAsSelector`):
    /// `None` selects nothing, an empty selector everything; `matchLabels` become `=`
    /// requirements and `matchExpressions` use `In`, `NotIn`, `Exists`, `DoesNotExist`.
    ///
    /// # Errors
    ///
    /// [`SelectorError::Invalid`] for an unknown operator (`"Foo" is not a valid label
    /// selector operator`) or an invalid requirement.
    ///
    /// # Examples
    ///
    /// ```
    /// use k8s_openapi::apimachinery::pkg::apis::meta::v1 as metav1;
    /// use kubeclient_machinery::LabelSelector;
    ///
    /// let api: metav1::LabelSelector = serde_json::from_str(
    ///     r#"{"matchLabels":{"app":"web"},"matchExpressions":[{"key":"tier","operator":"NotIn","values":["db"]}]}"#,
    /// ).unwrap();
    /// assert_eq!(LabelSelector::from_api(Some(&api)).unwrap().to_string(), "app=web,tier notin (db)");
    /// ```
    pub fn from_api(selector: Option<&metav1::LabelSelector>) -> Result<Self, SelectorError> {
        let Some(selector) = selector else {
            return Ok(LabelSelector::nothing());
        };
        let mut requirements = Vec::new();
        for (key, value) in selector.match_labels.iter().flatten() {
            requirements.push(Requirement::validated(
                key,
                Operator::Equals,
                vec![value.clone()],
                "key",
                false,
            )?);
        }
        for expression in selector.match_expressions.iter().flatten() {
            let operator = match expression.operator.as_str() {
                "In" => Operator::In,
                "NotIn" => Operator::NotIn,
                "Exists" => Operator::Exists,
                "DoesNotExist" => Operator::DoesNotExist,
                other => {
                    return Err(SelectorError::Invalid(format!(
                        "{other:?} is not a valid label selector operator"
                    )));
                }
            };
            let values = expression.values.clone().unwrap_or_default();
            requirements.push(Requirement::validated(
                &expression.key,
                operator,
                values,
                "key",
                true,
            )?);
        }
        Ok(LabelSelector::from_requirements(requirements))
    }

    /// The requirements, sorted by key.
    #[must_use]
    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    /// Whether this selector has no requirements (and so matches everything).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty() && !self.matches_nothing
    }

    /// Whether `labels` satisfy every requirement.
    #[must_use]
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.matches_with(&|key| labels.get(key).map(String::as_str))
    }

    /// [`matches`](Self::matches) over any label source: `label(key)` returns the value
    /// of a label, if set.
    ///
    /// # Examples
    ///
    /// ```
    /// use kubeclient_machinery::LabelSelector;
    /// let labels = serde_json::json!({"app": "web"});
    /// let selector: LabelSelector = "app=web".parse().unwrap();
    /// assert!(selector.matches_with(&|key| labels.get(key).and_then(|v| v.as_str())));
    /// ```
    #[must_use]
    pub fn matches_with<'a>(&self, label: &dyn Fn(&str) -> Option<&'a str>) -> bool {
        !self.matches_nothing && self.requirements.iter().all(|req| req.matches_with(label))
    }

    /// The single value `key` must have, if the selector pins it (`key=v`, `key==v` or
    /// `key in (v)`): lets a lister use an index instead of a scan.
    #[must_use]
    pub fn requires_exact_match(&self, key: &str) -> Option<&str> {
        let requirement = self.requirements.iter().find(|req| req.key == key)?;
        match (requirement.operator, requirement.values.as_slice()) {
            (Operator::Equals | Operator::DoubleEquals | Operator::In, [value]) => Some(value),
            _ => None,
        }
    }
}

impl fmt::Display for LabelSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, requirement) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{requirement}")?;
        }
        Ok(())
    }
}

impl FromStr for LabelSelector {
    type Err = SelectorError;

    /// Parses the `labelSelector` grammar with client-go's error messages.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let mut parser = Parser {
            tokens: tokenize(text),
            pos: 0,
        };
        Ok(LabelSelector::from_requirements(parser.parse()?))
    }
}

/// Whether `in`/`notin` are keywords (only where an operator is expected) or plain
/// identifiers (everywhere else, so `in` can be a key or a value).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Context {
    KeyAndOperator,
    Values,
}

/// A recursive-descent parser over the token list (Go's `labels.Parser`).
struct Parser<'a> {
    tokens: Vec<Token<'a>>,
    pos: usize,
}

fn syntax(message: String) -> SelectorError {
    SelectorError::Syntax(message)
}

impl<'a> Parser<'a> {
    fn in_context(token: Token<'a>, context: Context) -> Token<'a> {
        match (token, context) {
            (Token::In | Token::NotIn, Context::Values) => Token::Identifier(token.literal()),
            _ => token,
        }
    }

    fn lookahead(&self, context: Context) -> Token<'a> {
        let token = self.tokens.get(self.pos).copied().unwrap_or(Token::End);
        Parser::in_context(token, context)
    }

    fn consume(&mut self, context: Context) -> Token<'a> {
        let token = self.lookahead(context);
        if self.pos < self.tokens.len() {
            self.pos += 1;
        }
        token
    }

    fn parse(&mut self) -> Result<Vec<Requirement>, SelectorError> {
        let mut requirements = Vec::new();
        loop {
            match self.lookahead(Context::Values) {
                Token::Identifier(_) | Token::DoesNotExist => {
                    let requirement = self.parse_requirement().map_err(|err| match err {
                        SelectorError::Invalid(message) => SelectorError::Invalid(format!(
                            "unable to parse requirement: {message}"
                        )),
                        other => syntax(format!("unable to parse requirement: {other}")),
                    })?;
                    requirements.push(requirement);
                    match self.consume(Context::Values) {
                        Token::End => return Ok(requirements),
                        Token::Comma => {
                            let next = self.lookahead(Context::Values);
                            if !matches!(next, Token::Identifier(_) | Token::DoesNotExist) {
                                return Err(syntax(format!(
                                    "found '{}', expected: identifier after ','",
                                    next.literal()
                                )));
                            }
                        }
                        other => {
                            return Err(syntax(format!(
                                "found '{}', expected: ',' or 'end of string'",
                                other.literal()
                            )));
                        }
                    }
                }
                Token::End => return Ok(requirements),
                other => {
                    return Err(syntax(format!(
                        "found '{}', expected: !, identifier, or 'end of string'",
                        other.literal()
                    )));
                }
            }
        }
    }

    fn parse_requirement(&mut self) -> Result<Requirement, SelectorError> {
        let (key, mut operator) = self.parse_key_and_infer_operator()?;
        if let Some(op @ (Operator::Exists | Operator::DoesNotExist)) = operator {
            return Requirement::validated(key, op, Vec::new(), "<nil>", false);
        }
        let op = match operator.take() {
            Some(op) => op,
            None => self.parse_operator()?,
        };
        let values = match op {
            Operator::In | Operator::NotIn => self.parse_values()?,
            _ => self.parse_exact_value()?,
        };
        Requirement::validated(key, op, values, "<nil>", false)
    }

    /// The key, and the operator when the key alone decides it (`!key`, or `key` followed
    /// by `,` or the end).
    fn parse_key_and_infer_operator(
        &mut self,
    ) -> Result<(&'a str, Option<Operator>), SelectorError> {
        let mut operator = None;
        let mut token = self.consume(Context::Values);
        if token == Token::DoesNotExist {
            operator = Some(Operator::DoesNotExist);
            token = self.consume(Context::Values);
        }
        let Token::Identifier(key) = token else {
            return Err(syntax(format!(
                "found '{}', expected: identifier",
                token.literal()
            )));
        };
        let key_errors = label_key_errors(key);
        if !key_errors.is_empty() {
            return Err(SelectorError::Invalid(format!(
                "<nil>: Invalid value: {key:?}: {}",
                key_errors.join("; ")
            )));
        }
        if operator.is_none()
            && matches!(self.lookahead(Context::Values), Token::End | Token::Comma)
        {
            operator = Some(Operator::Exists);
        }
        Ok((key, operator))
    }

    fn parse_operator(&mut self) -> Result<Operator, SelectorError> {
        match self.consume(Context::KeyAndOperator) {
            Token::In => Ok(Operator::In),
            Token::Equals => Ok(Operator::Equals),
            Token::DoubleEquals => Ok(Operator::DoubleEquals),
            Token::GreaterThan => Ok(Operator::GreaterThan),
            Token::LessThan => Ok(Operator::LessThan),
            Token::NotIn => Ok(Operator::NotIn),
            Token::NotEquals => Ok(Operator::NotEquals),
            other => Err(syntax(format!(
                "found '{}', expected: in, notin, =, ==, !=, gt, lt",
                other.literal()
            ))),
        }
    }

    /// `( v1, v2, ... )`; `()` is the set `{""}`.
    fn parse_values(&mut self) -> Result<Vec<String>, SelectorError> {
        let token = self.consume(Context::Values);
        if token != Token::OpenPar {
            return Err(syntax(format!("found '{}' expected: '('", token.literal())));
        }
        match self.lookahead(Context::Values) {
            Token::Identifier(_) | Token::Comma => {
                let values = self.parse_identifiers_list()?;
                // parse_identifiers_list only returns after seeing `)`.
                self.consume(Context::Values);
                Ok(values)
            }
            Token::ClosedPar => {
                self.consume(Context::Values);
                Ok(vec![String::new()])
            }
            other => Err(syntax(format!(
                "found '{}', expected: ',', ')' or identifier",
                other.literal()
            ))),
        }
    }

    /// The values inside parentheses; empty entries (`(a,)`, `(,a)`, `(a,,b)`) are `""`.
    fn parse_identifiers_list(&mut self) -> Result<Vec<String>, SelectorError> {
        let mut values: Vec<String> = Vec::new();
        loop {
            match self.consume(Context::Values) {
                Token::Identifier(value) => {
                    values.push(value.to_owned());
                    match self.lookahead(Context::Values) {
                        Token::Comma => {}
                        Token::ClosedPar => return Ok(values),
                        other => {
                            return Err(syntax(format!(
                                "found '{}', expected: ',' or ')'",
                                other.literal()
                            )));
                        }
                    }
                }
                Token::Comma => {
                    if values.is_empty() {
                        values.push(String::new());
                    }
                    match self.lookahead(Context::Values) {
                        Token::ClosedPar => {
                            values.push(String::new());
                            return Ok(values);
                        }
                        Token::Comma => {
                            self.consume(Context::Values);
                            values.push(String::new());
                        }
                        _ => {}
                    }
                }
                other => {
                    return Err(syntax(format!(
                        "found '{}', expected: ',', or identifier",
                        other.literal()
                    )));
                }
            }
        }
    }

    /// The value after `=`, `==`, `!=`, `>` or `<`; nothing before `,` or the end is `""`.
    fn parse_exact_value(&mut self) -> Result<Vec<String>, SelectorError> {
        if matches!(self.lookahead(Context::Values), Token::End | Token::Comma) {
            return Ok(vec![String::new()]);
        }
        match self.consume(Context::Values) {
            Token::Identifier(value) => Ok(vec![value.to_owned()]),
            other => Err(syntax(format!(
                "found '{}', expected: identifier",
                other.literal()
            ))),
        }
    }
}

#[cfg(test)]
mod tests;
