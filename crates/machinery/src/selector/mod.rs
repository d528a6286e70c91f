//! Label and field selectors: parse, print in canonical form, match.
//!
//! - [`LabelSelector`]: the full grammar of `labelSelector` (`=`, `==`, `!=`, `in`,
//!   `notin`, `key`, `!key`, and `>`/`<` on integers), the semantics of Go's
//!   `k8s.io/apimachinery/pkg/labels`, and conversion from the API's
//!   `metav1.LabelSelector` (`matchLabels` / `matchExpressions`).
//! - [`FieldSelector`]: `fieldSelector` terms (`=`, `==`, `!=`, comma-joined, with `\,`,
//!   `\=` and `\\` escapes), matched through a [`FieldLookup`]; [`builtin_field_selectors`]
//!   lists the fields each built-in resource supports and where they live in the object.
//!
//! Parse errors carry client-go's messages, which name the offending token.

mod field;
mod label;
mod lexer;
mod validation;

pub use field::{
    FieldLookup, FieldOperator, FieldSelector, FieldSpec, FieldTerm, JsonFields,
    builtin_field_selectors,
};
pub use label::{LabelSelector, Operator, Requirement};

/// A selector that could not be parsed or built. The message follows client-go's and
/// names the offending token or value.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SelectorError {
    /// The text does not follow the selector grammar, e.g.
    /// `unable to parse requirement: found '(', expected: identifier`.
    #[error("{0}")]
    Syntax(String),
    /// A requirement is well formed but invalid: a bad label key or value, or the wrong
    /// number of values for its operator.
    #[error("{0}")]
    Invalid(String),
    /// A field selector names a field the resource does not support:
    /// `field label not supported: spec.foo`.
    #[error("field label not supported: {0}")]
    UnsupportedField(String),
}
