//! The `pattern`s of a CRD version's schema, compiled once when the CRD is created or
//! updated and kept with the served version
//! ([`ResourceDef::patterns`](crate::registry::ResourceDef)), so validating an object never compiles a regular expression and takes no lock.
//!
//! kube-apiserver compiles each pattern with Go's `regexp` (RE2 syntax) and refuses the
//! CRD when one does not compile (`apiextensions/validation/validation.go`: "must be a
//! valid regular expression, but isn't: error parsing regexp: ..."). The `regex` engine
//! shares RE2's syntax, with three differences this module removes:
//!
//! - RE2's `\w`, `\d`, `\s` and `\b` are ASCII, the engine's are Unicode: they are
//!   rewritten to their ASCII classes, so `^\w+$` refuses `café` as kube-apiserver does
//!   while non-ASCII literals keep matching;
//! - RE2 has `\Q...\E` literal text, the engine has not: it becomes escaped text;
//! - RE2 reads a `{` that starts no valid repetition (`a{`, `x{,3}`) as a literal, the
//!   engine refuses it: it is escaped.
//!
//! Compiling is bounded per CRD version: at most [`MAX_PATTERNS_PER_VERSION`] distinct
//! patterns, [`MAX_PATTERN_BYTES_PER_VERSION`] bytes of pattern text and
//! [`MAX_COMPILED_BYTES_PER_VERSION`] bytes of compiled automata (the engine's own
//! accounting). Only the forward automata are built (no lazy DFA, which would triple the
//! memory): validation only asks whether short strings match, which they answer in
//! linear time.

use std::collections::HashMap;

use kubeclient_machinery::StatusCause;
use regex_automata::meta::{BuildError, Regex};
use regex_automata::nfa::thompson::WhichCaptures;
use regex_syntax::{ast, hir};
use serde_json::Value;

/// At most this many distinct patterns per CRD version.
pub(crate) const MAX_PATTERNS_PER_VERSION: usize = 1_000;
/// At most this many bytes of pattern text per CRD version (a 1 MB pattern fits).
pub(crate) const MAX_PATTERN_BYTES_PER_VERSION: usize = 2 << 20;
/// At most this many bytes of compiled automata per CRD version, all its patterns
/// together. Unicode classes are large automata here (one instruction in Go): measured,
/// `^\p{L}[\p{L}\p{N}_.]{0,40}$` takes 0.7 MB, `\p{L}{1000}` 15 MB, a 1 MB alternation
/// of literals 1.4 MB; 300 patterns like the first fit.
pub(crate) const MAX_COMPILED_BYTES_PER_VERSION: usize = 256 << 20;

/// The compiled patterns of one CRD version, by their source text.
///
/// Invariant: every `pattern` of the version's schema is here when the CRD was accepted
/// (a CRD with a pattern that does not compile, or over the budget, is refused).
#[derive(Debug, Default)]
pub(crate) struct CompiledPatterns {
    by_source: HashMap<String, Regex>,
}

impl CompiledPatterns {
    /// Whether `text` matches `pattern`. A pattern not compiled here matches nothing, so
    /// no object slips through unchecked.
    pub(crate) fn is_match(&self, pattern: &str, text: &str) -> bool {
        self.by_source
            .get(pattern)
            .is_some_and(|re| re.is_match(text))
    }
}

/// Compiles every pattern of `schema`; `path` is where the schema sits in the CRD
/// (`spec.versions[0].schema.openAPIV3Schema`), for the causes.
///
/// # Errors
///
/// One cause per pattern that does not compile or is over the version's budget.
pub(crate) fn compile(schema: &Value, path: &str) -> Result<CompiledPatterns, Vec<StatusCause>> {
    compile_within(schema, path, MAX_COMPILED_BYTES_PER_VERSION)
}

/// [`compile`] with `budget` bytes of compiled automata for the version.
fn compile_within(
    schema: &Value,
    path: &str,
    budget: usize,
) -> Result<CompiledPatterns, Vec<StatusCause>> {
    let mut compiled = CompiledPatterns::default();
    let mut causes = Vec::new();
    let (mut text_bytes, mut compiled_bytes) = (0usize, 0usize);
    walk(schema, path, &mut |pattern, at| {
        if compiled.by_source.contains_key(pattern) {
            return;
        }
        text_bytes = text_bytes.saturating_add(pattern.len());
        let outcome = if compiled.by_source.len() >= MAX_PATTERNS_PER_VERSION {
            Err(PatternError::TooMany)
        } else if text_bytes > MAX_PATTERN_BYTES_PER_VERSION {
            Err(PatternError::TextOverBudget)
        } else {
            let room = budget.saturating_sub(compiled_bytes);
            build(pattern, room).and_then(|re| {
                let size = re.memory_usage();
                if size > room {
                    Err(PatternError::CompiledOverBudget(budget))
                } else {
                    compiled_bytes += size;
                    Ok(re)
                }
            })
        };
        match outcome {
            Ok(re) => {
                compiled.by_source.insert(pattern.to_owned(), re);
            }
            Err(reason) => causes.push(StatusCause::new(
                "FieldValueInvalid",
                &format!(
                    "Invalid value: {}: must be a valid regular expression, but isn't: {reason}",
                    go_quote(pattern)
                ),
                &format!("{at}.pattern"),
            )),
        }
    });
    if causes.is_empty() {
        Ok(compiled)
    } else {
        Err(causes)
    }
}

/// The causes of every CRD version's patterns that fail, with their paths (for the
/// CRD's validation).
pub(crate) fn causes(spec: &Value) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    if let Some(schema) = spec.pointer("/validation/openAPIV3Schema") {
        causes.extend(
            compile(schema, "spec.validation.openAPIV3Schema")
                .err()
                .unwrap_or_default(),
        );
    }
    for (index, version) in spec
        .get("versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        if let Some(schema) = version.pointer("/schema/openAPIV3Schema") {
            let path = format!("spec.versions[{index}].schema.openAPIV3Schema");
            causes.extend(compile(schema, &path).err().unwrap_or_default());
        }
    }
    causes
}

/// A pattern quoted as Go's `%q` would, shortened when huge (a 1 MB value must not make
/// a 1 MB answer).
fn go_quote(pattern: &str) -> String {
    const SHOWN: usize = 256;
    match pattern.char_indices().nth(SHOWN) {
        Some((cut, _)) => format!("{:?}...", &pattern[..cut]),
        None => format!("{pattern:?}"),
    }
}

/// Why a pattern is refused; its message is Go's `regexp` text (or the budget's), the
/// parser's or compiler's own error its cause.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PatternError {
    /// Not a regular expression RE2 accepts.
    #[error("{go_message}")]
    Syntax {
        /// What Go's `regexp.Compile` says.
        go_message: String,
        /// What the parser said.
        source: Box<regex_syntax::Error>,
    },
    /// Nested counted repetitions over RE2's limit.
    #[error("error parsing regexp: invalid repeat count: `{0}`")]
    RepeatCount(String),
    /// Its automata do not fit the room left.
    #[error("error parsing regexp: expression too large: `{expression}`")]
    TooLarge {
        /// The pattern, shortened when huge.
        expression: String,
        /// What the compiler said.
        source: Box<BuildError>,
    },
    /// One version has more distinct patterns than allowed.
    #[error("more than {MAX_PATTERNS_PER_VERSION} distinct patterns in one version")]
    TooMany,
    /// One version's patterns are longer than allowed in all.
    #[error("the version's patterns are over {MAX_PATTERN_BYTES_PER_VERSION} bytes")]
    TextOverBudget,
    /// One version's compiled patterns are over the budget (in bytes).
    #[error("the version's patterns compile to over {0} bytes")]
    CompiledOverBudget(usize),
}

impl PatternError {
    fn syntax(source: regex_syntax::Error, pattern: &str) -> Self {
        PatternError::Syntax {
            go_message: go_error(&source, pattern),
            source: Box::new(source),
        }
    }
}

/// Compiles one pattern, its automata within `room` bytes.
///
/// # Errors
///
/// Go's error for the pattern, or the compiled size over `room`.
fn build(pattern: &str, room: usize) -> Result<Regex, PatternError> {
    let rewritten = to_re2_semantics(pattern);
    let tree = ast::parse::Parser::new()
        .parse(&rewritten)
        .map_err(|err| PatternError::syntax(regex_syntax::Error::Parse(err), &rewritten))?;
    if let Some(span) = repetition_over(&tree) {
        let expr = rewritten
            .get(span.start.offset..span.end.offset)
            .unwrap_or("");
        return Err(PatternError::RepeatCount(expr.to_owned()));
    }
    Regex::builder()
        .configure(
            Regex::config()
                .which_captures(WhichCaptures::Implicit)
                .nfa_size_limit(Some(room))
                .onepass(false)
                .hybrid(false),
        )
        .build(&rewritten)
        .map_err(|err: BuildError| match err.syntax_error() {
            Some(syntax) => PatternError::syntax(syntax.clone(), &rewritten),
            None => PatternError::TooLarge {
                expression: shown(&rewritten).to_owned(),
                source: Box::new(err),
            },
        })
}

/// RE2 allows at most this many copies of the innermost thing under nested counted
/// repetitions (`(x{100}){10}` is fine, `(x{1000}){2}` is not).
const MAX_REPEAT: u32 = 1_000;

/// The first counted repetition (innermost first, as Go parses) that, with the ones
/// inside it, repeats something more than [`MAX_REPEAT`] times.
fn repetition_over(tree: &ast::Ast) -> Option<ast::Span> {
    let inner = match tree {
        ast::Ast::Repetition(rep) => repetition_over(&rep.ast),
        ast::Ast::Group(group) => repetition_over(&group.ast),
        ast::Ast::Alternation(alt) => alt.asts.iter().find_map(repetition_over),
        ast::Ast::Concat(concat) => concat.asts.iter().find_map(repetition_over),
        _ => None,
    };
    inner.or_else(|| match tree {
        ast::Ast::Repetition(rep)
            if matches!(rep.op.kind, ast::RepetitionKind::Range(_))
                && !repeat_is_valid(tree, MAX_REPEAT) =>
        {
            Some(rep.op.span)
        }
        _ => None,
    })
}

/// Go's `repeatIsValid` (`regexp/syntax/parse.go`): whether the counted repetitions in
/// `tree` repeat their innermost thing at most `n` times.
fn repeat_is_valid(tree: &ast::Ast, n: u32) -> bool {
    match tree {
        ast::Ast::Repetition(rep) => {
            let mut n = n;
            if let ast::RepetitionKind::Range(range) = &rep.op.kind {
                let m = match *range {
                    ast::RepetitionRange::Exactly(m) | ast::RepetitionRange::AtLeast(m) => m,
                    ast::RepetitionRange::Bounded(_, max) => max,
                };
                if m == 0 {
                    return true;
                }
                if m > n {
                    return false;
                }
                n /= m;
            }
            repeat_is_valid(&rep.ast, n)
        }
        ast::Ast::Group(group) => repeat_is_valid(&group.ast, n),
        ast::Ast::Alternation(alt) => alt.asts.iter().all(|a| repeat_is_valid(a, n)),
        ast::Ast::Concat(concat) => concat.asts.iter().all(|a| repeat_is_valid(a, n)),
        _ => true,
    }
}

/// At most the first 256 characters of `text`.
fn shown(text: &str) -> &str {
    match text.char_indices().nth(256) {
        Some((cut, _)) => &text[..cut],
        None => text,
    }
}

/// Go's `regexp/syntax` wording of a syntax error: `error parsing regexp: <code>: `expr``.
fn go_error(err: &regex_syntax::Error, pattern: &str) -> String {
    let (code, expr) = match err {
        regex_syntax::Error::Parse(parse) => {
            let span = parse.span();
            let (start, end) = (span.start.offset, span.end.offset);
            // The text at the error, at least its first character.
            let at = |start: usize, end: usize| {
                let end = end.max(
                    pattern
                        .get(start..)
                        .and_then(|rest| rest.chars().next())
                        .map_or(start, |c| start + c.len_utf8()),
                );
                pattern.get(start..end).unwrap_or(pattern)
            };
            use ast::ErrorKind as K;
            match parse.kind() {
                K::ClassUnclosed => ("missing closing ]", at(start, pattern.len())),
                K::GroupUnclosed => ("missing closing )", pattern),
                K::GroupUnopened => ("unexpected )", pattern),
                K::ClassRangeInvalid | K::ClassRangeLiteral | K::UnicodeClassInvalid => {
                    ("invalid character class range", at(start, end))
                }
                K::EscapeUnexpectedEof => ("trailing backslash at end of expression", ""),
                K::ClassEscapeInvalid
                | K::EscapeHexEmpty
                | K::EscapeHexInvalid
                | K::EscapeHexInvalidDigit
                | K::EscapeUnrecognized
                | K::UnsupportedBackreference
                | K::SpecialWordBoundaryUnclosed
                | K::SpecialWordBoundaryUnrecognized
                | K::SpecialWordOrRepetitionUnexpectedEof => {
                    ("invalid escape sequence", at(start, end))
                }
                K::GroupNameDuplicate { .. }
                | K::GroupNameEmpty
                | K::GroupNameInvalid
                | K::GroupNameUnexpectedEof => ("invalid named capture", at(start, end)),
                K::RepetitionMissing => ("missing argument to repetition operator", at(start, end)),
                K::RepetitionCountInvalid
                | K::RepetitionCountDecimalEmpty
                | K::RepetitionCountUnclosed
                | K::DecimalEmpty
                | K::DecimalInvalid => ("invalid repeat count", at(start, end)),
                K::NestLimitExceeded(_) => ("expression nests too deeply", pattern),
                K::CaptureLimitExceeded => ("expression too large", pattern),
                _ => ("invalid or unsupported Perl syntax", at(start, end)),
            }
        }
        regex_syntax::Error::Translate(translate) => {
            let span = translate.span();
            let at = pattern
                .get(span.start.offset..span.end.offset)
                .unwrap_or(pattern);
            match translate.kind() {
                hir::ErrorKind::InvalidUtf8 => ("invalid UTF-8", at),
                hir::ErrorKind::UnicodePropertyNotFound
                | hir::ErrorKind::UnicodePropertyValueNotFound => {
                    ("invalid character class range", at)
                }
                _ => ("invalid or unsupported Perl syntax", at),
            }
        }
        _ => ("invalid or unsupported Perl syntax", pattern),
    };
    format!("error parsing regexp: {code}: `{}`", shown(expr))
}

/// Calls `visit(pattern, path)` for each `pattern` in `schema` and its subschemas.
fn walk(schema: &Value, path: &str, visit: &mut dyn FnMut(&str, &str)) {
    let Some(object) = schema.as_object() else {
        return;
    };
    if let Some(pattern) = object.get("pattern").and_then(Value::as_str) {
        visit(pattern, path);
    }
    for key in [
        "properties",
        "patternProperties",
        "definitions",
        "dependencies",
    ] {
        if let Some(children) = object.get(key).and_then(Value::as_object) {
            for (name, child) in children {
                walk(child, &format!("{path}.{key}[{name}]"), visit);
            }
        }
    }
    for key in ["items", "additionalProperties", "additionalItems", "not"] {
        match object.get(key) {
            Some(Value::Array(children)) => {
                for (i, child) in children.iter().enumerate() {
                    walk(child, &format!("{path}.{key}[{i}]"), visit);
                }
            }
            Some(child) => walk(child, &format!("{path}.{key}"), visit),
            None => {}
        }
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        if let Some(children) = object.get(key).and_then(Value::as_array) {
            for (i, child) in children.iter().enumerate() {
                walk(child, &format!("{path}.{key}[{i}]"), visit);
            }
        }
    }
}

/// Rewrites an RE2 pattern into the engine's syntax with the same meaning: the Perl
/// classes `\w \W \d \D \s \S` and the boundaries `\b \B` become ASCII (in and out of
/// bracket classes), `\Q...\E` becomes escaped text, and a `{` that starts no
/// repetition becomes `\{`. Everything else is kept as is.
pub(crate) fn to_re2_semantics(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len() + 16);
    let mut chars = pattern.char_indices().peekable();
    let mut in_class = false;
    // Right after `[` or `[^`, a `]` is a literal.
    let mut class_start = false;
    while let Some((at, c)) = chars.next() {
        let at_start = std::mem::take(&mut class_start);
        match c {
            '\\' => {
                let Some((_, next)) = chars.next() else {
                    out.push('\\');
                    break;
                };
                if next == 'Q' && !in_class {
                    let mut literal = String::new();
                    while let Some((_, q)) = chars.next() {
                        if q == '\\' && chars.peek().is_some_and(|&(_, e)| e == 'E') {
                            chars.next();
                            break;
                        }
                        literal.push(q);
                    }
                    out.push_str(&regex_syntax::escape(&literal));
                    continue;
                }
                match ascii_class(next, in_class) {
                    Some(class) => out.push_str(class),
                    None => {
                        out.push('\\');
                        out.push(next);
                        // `\p{Greek}`, `\x{263a}`: the braces belong to the escape.
                        if matches!(next, 'p' | 'P' | 'x')
                            && chars.peek().is_some_and(|&(_, b)| b == '{')
                        {
                            for (_, b) in chars.by_ref() {
                                out.push(b);
                                if b == '}' {
                                    break;
                                }
                            }
                        }
                    }
                }
            }
            '[' if !in_class => {
                in_class = true;
                class_start = true;
                out.push('[');
                if chars.peek().is_some_and(|&(_, n)| n == '^') {
                    chars.next();
                    out.push('^');
                }
            }
            '[' if chars.peek().is_some_and(|&(_, n)| n == ':') => {
                // A POSIX class `[:name:]`, copied whole.
                out.push('[');
                for (_, p) in chars.by_ref() {
                    out.push(p);
                    if p == ']' {
                        break;
                    }
                }
            }
            // RE2 reads a `[` inside a class as a literal; the engine would nest a class.
            '[' => out.push_str("\\["),
            ']' if in_class && !at_start => {
                in_class = false;
                out.push(']');
            }
            '{' if !in_class && !starts_repetition(&pattern[at..]) => out.push_str("\\{"),
            other => out.push(other),
        }
    }
    out
}

/// Whether `text` (which starts with `{`) starts RE2's `{n}`, `{n,}` or `{n,m}`.
fn starts_repetition(text: &str) -> bool {
    let Some(body) = text.strip_prefix('{') else {
        return false;
    };
    let Some(end) = body.find('}') else {
        return false;
    };
    let (min, max) = match body[..end].split_once(',') {
        Some((min, max)) => (min, Some(max)),
        None => (&body[..end], None),
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    digits(min) && max.is_none_or(|m| m.is_empty() || digits(m))
}

/// RE2's ASCII form of a Perl class escape, as it must be written in (`in_class`) or out
/// of a bracket class; `None` for any other escape.
fn ascii_class(escape: char, in_class: bool) -> Option<&'static str> {
    Some(match (escape, in_class) {
        ('w', false) => "[0-9A-Za-z_]",
        ('w', true) => "0-9A-Za-z_",
        ('W', _) => "[^0-9A-Za-z_]",
        ('d', false) => "[0-9]",
        ('d', true) => "0-9",
        ('D', _) => "[^0-9]",
        ('s', false) => "[\\t\\n\\x0C\\r ]",
        ('s', true) => "\\t\\n\\x0C\\r ",
        ('S', _) => "[^\\t\\n\\x0C\\r ]",
        ('b', false) => "(?-u:\\b)",
        ('B', false) => "(?-u:\\B)",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(pattern: &str, text: &str) -> bool {
        build(pattern, MAX_COMPILED_BYTES_PER_VERSION)
            .map(|re| re.is_match(text))
            .unwrap_or(false)
    }

    fn error_of(pattern: &str) -> String {
        build(pattern, MAX_COMPILED_BYTES_PER_VERSION)
            .err()
            .map(|err| err.to_string())
            .unwrap_or_default()
    }

    #[test]
    fn perl_classes_are_ascii_as_in_re2_and_literals_stay_unicode() {
        assert!(!matches(r"^\w+$", "café"));
        assert!(matches(r"^\w+$", "cafe_1"));
        assert!(!matches(r"^[\w-]+$", "é-a"));
        assert!(matches(r"^[\w-]+$", "a-b"));
        assert!(!matches(r"^\d+$", "٣"));
        assert!(!matches(r"^\s$", "\u{a0}"));
        assert!(matches(r"^\W$", "é"), "é is not an ASCII word character");
        assert!(matches(r"^[^\W]+$", "ab"));
        assert!(matches(r"^café$", "café"));
        assert!(matches(r"^[é]+$", "éé"));
        assert!(matches(r"^\p{L}+$", "café"), "\\p classes stay Unicode");
        assert!(
            !matches(r"\bé", "é"),
            "é is no ASCII word character: no boundary"
        );
        assert!(matches(r"^[]a]+$", "]a"));
        assert!(matches(r"^[[:alpha:]]+$", "ab"));
        assert!(matches(r"^a\\w$", r"a\w"), "an escaped backslash stays one");
    }

    #[test]
    fn re2_literal_text_and_literal_braces_are_kept_literal() {
        assert!(matches(r"^\Q\w.*\E$", r"\w.*"));
        assert!(!matches(r"^\Q\w.*\E$", "ab"));
        assert!(matches(r"^\Qa.b", "a.b"), "\\Q without \\E runs to the end");
        assert!(matches(r"^a{$", "a{"));
        assert!(matches(r"^x{,3}$", "x{,3}"));
        assert!(matches(r"^a{2}$", "aa"));
        assert!(matches(r"^a{2,}$", "aaa"));
        assert!(!matches(r"^a{2,3}$", "aaaa"));
    }

    #[test]
    fn compile_errors_read_as_go_regexp_syntax_errors() {
        assert_eq!(
            error_of("(["),
            "error parsing regexp: missing closing ]: `[`"
        );
        assert_eq!(
            error_of("(a"),
            "error parsing regexp: missing closing ): `(a`"
        );
        assert_eq!(error_of("a)"), "error parsing regexp: unexpected ): `a)`");
        assert_eq!(
            error_of("+"),
            "error parsing regexp: missing argument to repetition operator: `+`"
        );
        assert_eq!(
            error_of("(?=x)"),
            "error parsing regexp: invalid or unsupported Perl syntax: `(?=`"
        );
        assert_eq!(
            error_of(r"(a)\1"),
            "error parsing regexp: invalid escape sequence: `\\1`"
        );
        assert_eq!(
            error_of(r"a\"),
            "error parsing regexp: trailing backslash at end of expression: ``"
        );
    }

    #[test]
    fn patterns_that_do_not_compile_are_causes_with_their_paths() {
        let schema = serde_json::json!({"properties": {
            "a": {"type": "string", "pattern": "(["},
            "b": {"type": "array", "items": {"type": "string", "pattern": "(?=x)"}},
            "c": {"type": "string", "pattern": "^ok$"}}});
        let causes = compile(&schema, "spec.versions[0].schema.openAPIV3Schema")
            .err()
            .unwrap_or_default();
        let fields: Vec<_> = causes.iter().map(|c| c.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "spec.versions[0].schema.openAPIV3Schema.properties[a].pattern",
                "spec.versions[0].schema.openAPIV3Schema.properties[b].items.pattern"
            ]
        );
    }

    #[test]
    fn the_budget_counts_patterns_text_and_compiled_bytes() {
        let many: serde_json::Map<String, Value> = (0..=MAX_PATTERNS_PER_VERSION)
            .map(|i| {
                (
                    format!("f{i}"),
                    serde_json::json!({"pattern": format!("^{i}$")}),
                )
            })
            .collect();
        let causes = compile(&serde_json::json!({"properties": many}), "s")
            .err()
            .unwrap_or_default();
        assert_eq!(causes.len(), 1, "only the 1,001st pattern is refused");
        assert!(
            causes[0]
                .message
                .contains("more than 1000 distinct patterns")
        );

        // RE2 refuses nested repetitions over 1,000 copies.
        let nested = serde_json::json!({"pattern": "^(?:[a-z]{100}){11}$"});
        let causes = compile(&nested, "s").err().unwrap_or_default();
        assert_eq!(causes.len(), 1);
        assert!(
            causes[0]
                .message
                .ends_with("error parsing regexp: invalid repeat count: `{11}`"),
            "{}",
            causes[0].message
        );
        assert!(compile(&serde_json::json!({"pattern": "^(?:[a-z]{100}){10}$"}), "s").is_ok());

        // Small texts, big automata: the compiled budget refuses the pattern that would go
        // over it, whatever the engine's own limit.
        let unicode: serde_json::Map<String, Value> = (0..4)
            .map(|i| {
                let pattern = format!("^\\p{{L}}{{200}}{i}$");
                (format!("f{i}"), serde_json::json!({"pattern": pattern}))
            })
            .collect();
        let schema = serde_json::json!({"properties": unicode});
        let one = build("^\\p{L}{200}0$", usize::MAX).map_or(0, |re| re.memory_usage());
        assert!(one > 0);
        let causes = compile_within(&schema, "s", one * 5 / 2)
            .err()
            .unwrap_or_default();
        assert_eq!(causes.len(), 2, "two fit, two do not: {causes:?}");
        assert!(
            causes[0].message.contains("expression too large")
                || causes[0].message.contains("compile to over"),
            "{}",
            causes[0].message
        );
    }

    #[test]
    fn a_one_megabyte_pattern_compiles_within_the_budget_and_is_enforced() {
        let words: Vec<String> = (0..120_000).map(|i| format!("w{i:07}")).collect();
        let pattern = format!("^(?:{})$", words.join("|"));
        assert!(pattern.len() > 1_000_000);
        let compiled = compile(&serde_json::json!({"pattern": pattern}), "s");
        let Ok(compiled) = compiled else {
            panic!("a 1 MB pattern must compile: {compiled:?}");
        };
        assert!(compiled.is_match(&pattern, "w0119999"));
        assert!(!compiled.is_match(&pattern, "w0120000"));
    }
}
