//! CEL work on a thread of its own with a large stack. The `cel` crate's parser and
//! interpreter recurse once per level of an expression's nesting, and a stack overflow
//! aborts the process (no `catch_unwind` stops it), so rules are parsed and evaluated on a
//! thread whose stack holds the deepest expression [`check_nesting`] lets through, many
//! times over; the server's own threads keep their small stacks.

/// The stack of a CEL thread: reserved address space, touched only as deep as used.
const STACK_BYTES: usize = 256 * 1024 * 1024;

/// The deepest bracket nesting, and the most `?` operators, a rule may have (the
/// parser's own recursion limit is lower: this only keeps its grammar recursion, which
/// comes before that check, within [`STACK_BYTES`]).
pub(crate) const MAX_NESTING: usize = 250;

/// The most operator characters (`+ - * / % = ! < > & | . ?` and brackets) outside string
/// literals a rule may have: the parser recurses once per binary operator of a chain
/// (`1 + 1 + ...`), some 13 KiB of stack each in a debug build.
pub(crate) const MAX_OPERATORS: usize = 5_000;

/// The longest expression compiled, in bytes (cel-go's parser limit is 100,000 code
/// points).
pub(crate) const MAX_EXPRESSION_BYTES: usize = 100_000;

/// Runs `work` on a thread with a [`STACK_BYTES`] stack; `None` if the thread could not
/// be started or `work` panicked.
pub(crate) fn on_large_stack<T: Send>(work: impl FnOnce() -> T + Send) -> Option<T> {
    std::thread::scope(|scope| {
        let handle = std::thread::Builder::new()
            .name("cel".to_owned())
            .stack_size(STACK_BYTES)
            .spawn_scoped(scope, work)
            .ok()?;
        handle.join().ok()
    })
}

/// Why `source` is too deep or too long to parse safely, if it is.
pub(crate) fn check_nesting(source: &str) -> Option<String> {
    if source.len() > MAX_EXPRESSION_BYTES {
        return Some(format!(
            "expression code point size exceeds limit: size: {}, limit {MAX_EXPRESSION_BYTES}",
            source.chars().count()
        ));
    }
    let (mut depth, mut deepest, mut conditionals, mut operators) =
        (0usize, 0usize, 0usize, 0usize);
    let mut quote: Option<char> = None;
    let mut chars = source.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(_), '\\') => {
                chars.next();
            }
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '+' | '-' | '*' | '/' | '%' | '=' | '!' | '<' | '>' | '&' | '|' | '.') => {
                operators += 1;
            }
            (None, '(' | '[' | '{') => {
                operators += 1;
                depth += 1;
                deepest = deepest.max(depth);
            }
            (None, ')' | ']' | '}') => depth = depth.saturating_sub(1),
            (None, '?') => {
                operators += 1;
                conditionals += 1;
            }
            _ => {}
        }
    }
    if deepest > MAX_NESTING || conditionals > MAX_NESTING {
        return Some(format!(
            "expression nesting exceeds the limit of {MAX_NESTING}"
        ));
    }
    (operators > MAX_OPERATORS)
        .then(|| format!("expression has more than {MAX_OPERATORS} operators"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deep_or_long_expressions_are_refused_before_parsing() {
        assert!(check_nesting("self.a && (self.b || [1, 2].all(x, x > 0))").is_none());
        assert!(check_nesting(&format!("{}1{}", "(".repeat(300), ")".repeat(300))).is_some());
        assert!(check_nesting(&"true ? ".repeat(300)).is_some());
        assert!(check_nesting(&format!("'{}' == ''", "(".repeat(300))).is_none());
        assert!(check_nesting(&"a".repeat(MAX_EXPRESSION_BYTES + 1)).is_some());
        assert!(check_nesting(&"1 + ".repeat(MAX_OPERATORS + 1)).is_some());
    }

    #[test]
    fn the_parser_and_interpreter_survive_the_deepest_accepted_shapes() {
        let env = super::super::cel_library::environment();
        let shapes = [
            format!(
                "{}1{} == 1",
                "(".repeat(MAX_NESTING),
                ")".repeat(MAX_NESTING)
            ),
            format!("{}1{}", "[".repeat(MAX_NESTING), "]".repeat(MAX_NESTING)),
            format!(
                "{}true",
                "true ? ".repeat(MAX_NESTING) + &"true : ".repeat(0)
            ),
            format!("1{} == 1", " + 1".repeat(4_990)),
            format!("true{}", " && true".repeat(2_490)),
            format!("true{}", " || true".repeat(2_490)),
            format!("{}true", "!".repeat(4_990)),
            format!("{}1", "-".repeat(4_990)),
            format!("self{}", ".a".repeat(4_990)),
            format!("[1]{}", "[0]".repeat(2_490)),
            format!("f(1){}", ".f()".repeat(1_660)),
        ];
        for shape in shapes {
            let outcome = on_large_stack(|| {
                env.compile(&shape)
                    .map(|p| p.execute(&super::super::cel_library::context()).is_ok())
                    .is_ok()
            });
            // Compiled or refused, but never a crash (an overflow would abort the test).
            assert!(outcome.is_some());
        }
    }
}
