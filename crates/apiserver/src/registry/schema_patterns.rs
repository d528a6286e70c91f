//! The `pattern`s of a CRD version's schema, compiled once when the CRD is created or
//! updated and kept with the served version ([`ResourceDef::patterns`](super::ResourceDef)),
//! so validating an object never compiles a regular expression.
//!
//! Go's RE2 gives `\w`, `\d`, `\s` and `\b` their ASCII meaning; the `regex` crate gives
//! them Unicode's. [`to_ascii_perl_classes`] rewrites those classes so that `^\w+$`
//! refuses `café` as kube-apiserver does, while non-ASCII literals keep matching.

use std::collections::HashMap;

use kubeclient_machinery::StatusCause;
use serde_json::Value;

/// At most this many distinct patterns per CRD version.
pub(crate) const MAX_PATTERNS_PER_VERSION: usize = 1_000;
/// At most this many bytes of pattern text per CRD version (a 1 MB pattern fits).
pub(crate) const MAX_PATTERN_BYTES_PER_VERSION: usize = 2 << 20;
/// The compiled size one pattern may reach (the `regex` crate's `size_limit`).
const COMPILED_SIZE_LIMIT: usize = 64 << 20;
/// The lazy DFA cache of one pattern (bounds the memory matching may take).
const DFA_SIZE_LIMIT: usize = 256 << 10;

/// The compiled patterns of one CRD version, by their source text.
#[derive(Debug, Default)]
pub(crate) struct CompiledPatterns {
    by_source: HashMap<String, regex::Regex>,
}

impl CompiledPatterns {
    /// Whether `text` matches `pattern`; a pattern not compiled here (none can be, as
    /// the CRD was refused) matches nothing, so no object slips through unchecked.
    pub(crate) fn is_match(&self, pattern: &str, text: &str) -> bool {
        self.by_source
            .get(pattern)
            .is_some_and(|re| re.is_match(text))
    }
}

/// Compiles every pattern of `schema`; `path` is where the schema sits in the CRD
/// (`spec.versions[0].schema.openAPIV3Schema`).
///
/// # Errors
///
/// One cause per pattern that does not compile, or that is over the version's budget.
pub(crate) fn compile(schema: &Value, path: &str) -> Result<CompiledPatterns, Vec<StatusCause>> {
    let mut compiled = CompiledPatterns::default();
    let mut causes = Vec::new();
    let mut bytes = 0usize;
    walk(schema, path, &mut |pattern, at| {
        if compiled.by_source.contains_key(pattern) {
            return;
        }
        bytes = bytes.saturating_add(pattern.len());
        let refusal = if compiled.by_source.len() >= MAX_PATTERNS_PER_VERSION {
            Some(format!(
                "must be a valid regular expression, but isn't: more than {MAX_PATTERNS_PER_VERSION} patterns in one version"
            ))
        } else if bytes > MAX_PATTERN_BYTES_PER_VERSION {
            Some(format!(
                "must be a valid regular expression, but isn't: the version's patterns exceed {MAX_PATTERN_BYTES_PER_VERSION} bytes"
            ))
        } else {
            match build(pattern) {
                Ok(re) => {
                    compiled.by_source.insert(pattern.to_owned(), re);
                    None
                }
                Err(reason) => Some(format!(
                    "must be a valid regular expression, but isn't: error parsing regexp: {reason}"
                )),
            }
        };
        if let Some(reason) = refusal {
            causes.push(StatusCause::new(
                "FieldValueInvalid",
                &format!("Invalid value: {}: {reason}", go_quote(pattern)),
                &format!("{at}.pattern"),
            ));
        }
    });
    if causes.is_empty() {
        Ok(compiled)
    } else {
        Err(causes)
    }
}

/// Every CRD version's patterns that fail, with their paths (for the CRD's validation).
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

fn build(pattern: &str) -> Result<regex::Regex, String> {
    regex::RegexBuilder::new(&to_ascii_perl_classes(pattern))
        .size_limit(COMPILED_SIZE_LIMIT)
        .dfa_size_limit(DFA_SIZE_LIMIT)
        .build()
        .map_err(|e| match e {
            regex::Error::Syntax(text) => text
                .lines()
                .rev()
                .find_map(|line| line.strip_prefix("error: "))
                .unwrap_or("invalid syntax")
                .to_owned(),
            regex::Error::CompiledTooBig(limit) => {
                format!("expression too large (over {limit} bytes compiled)")
            }
            _ => "invalid pattern".to_owned(),
        })
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

/// Rewrites the Perl classes `\w \W \d \D \s \S` and the boundaries `\b \B` to RE2's
/// ASCII meaning, inside and outside bracket classes; everything else is kept as is.
pub(crate) fn to_ascii_perl_classes(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len() + 16);
    let mut chars = pattern.chars().peekable();
    let mut in_class = false;
    // Right after `[` or `[^`, a `]` is a literal.
    let mut class_start = false;
    while let Some(c) = chars.next() {
        let at_start = std::mem::take(&mut class_start);
        match c {
            '\\' => {
                let Some(next) = chars.next() else {
                    out.push('\\');
                    break;
                };
                if next == 'Q' {
                    // RE2's literal text up to `\E`, which the regex crate spells escaped.
                    let mut literal = String::new();
                    while let Some(q) = chars.next() {
                        if q == '\\' && chars.peek() == Some(&'E') {
                            chars.next();
                            break;
                        }
                        literal.push(q);
                    }
                    out.push_str(&regex::escape(&literal));
                    continue;
                }
                out.push_str(
                    ascii_class(next, in_class)
                        .unwrap_or_else(|| out_escape(next))
                        .as_str(),
                );
            }
            '[' if !in_class => {
                in_class = true;
                class_start = true;
                out.push('[');
                if chars.peek() == Some(&'^') {
                    chars.next();
                    out.push('^');
                }
            }
            '[' if in_class && chars.peek() == Some(&':') => {
                // A POSIX class `[:name:]`, copied whole.
                out.push('[');
                for p in chars.by_ref() {
                    out.push(p);
                    if p == ']' {
                        break;
                    }
                }
            }
            '[' => out.push_str("\\["),
            ']' if in_class && !at_start => {
                in_class = false;
                out.push(']');
            }
            other => out.push(other),
        }
    }
    out
}

fn out_escape(next: char) -> String {
    let mut s = String::with_capacity(2);
    s.push('\\');
    s.push(next);
    s
}

/// RE2's ASCII form of a Perl class escape, as it must be written in (`in_class`) or out of
/// a bracket class; `None` for any other escape.
fn ascii_class(escape: char, in_class: bool) -> Option<String> {
    let (inside, negated) = match escape {
        'w' => ("0-9A-Za-z_", false),
        'W' => ("0-9A-Za-z_", true),
        'd' => ("0-9", false),
        'D' => ("0-9", true),
        's' => ("\\t\\n\\x0C\\r ", false),
        'S' => ("\\t\\n\\x0C\\r ", true),
        'b' if !in_class => return Some("(?-u:\\b)".to_owned()),
        'B' if !in_class => return Some("(?-u:\\B)".to_owned()),
        _ => return None,
    };
    Some(match (in_class, negated) {
        (false, false) => format!("[{inside}]"),
        (false, true) => format!("[^{inside}]"),
        (true, false) => inside.to_owned(),
        // A negated class inside a bracket class: the regex crate's nested class.
        (true, true) => format!("[^{inside}]"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(pattern: &str, text: &str) -> bool {
        build(pattern).map(|re| re.is_match(text)).unwrap_or(false)
    }

    #[test]
    fn perl_classes_are_ascii_as_in_re2_and_literals_stay_unicode() {
        assert!(!matches(r"^\w+$", "café"));
        assert!(matches(r"^\w+$", "cafe_1"));
        assert!(!matches(r"^[\w-]+$", "é-a"));
        assert!(matches(r"^[\w-]+$", "a-b"));
        assert!(!matches(r"^\d+$", "٣"));
        assert!(!matches(r"^\s$", "\u{a0}"));
        assert!(matches(r"^[^\W]+$", "ab"));
        assert!(matches(r"^café$", "café"));
        assert!(matches(r"^[é]+$", "éé"));
        assert!(
            !matches(r"\bé", "é"),
            "é is no ASCII word character: no boundary"
        );
        assert!(matches(r"^\Q\w\E$", r"\w"));
        assert!(matches(r"^[]a]+$", "]a"));
        assert!(matches(r"^[[:alpha:]]+$", "ab"));
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
}
