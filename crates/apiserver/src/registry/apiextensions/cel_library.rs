//! The CEL environment of CRD validation rules: the `cel` crate's standard library and
//! its `strings` and `math` extensions, plus the Kubernetes libraries of
//! `k8s.io/apiserver/pkg/cel/library` that are implemented here:
//!
//! - lists: `isSorted()`, `sum()`, `min()`, `max()`;
//! - regex: `find(pattern)`, `findAll(pattern)`, `findAll(pattern, n)`;
//! - URLs: `url()`, `isURL()`, `getScheme()`, `getHost()`, `getHostname()`, `getPort()`,
//!   `getEscapedPath()`, `getQuery()` (`cel_net.rs`);
//! - IP addresses and CIDRs: `ip()`, `isIP()`, `ip.isCanonical()`, `family()`, `isUnspecified()`,
//!   `isLoopback()`, `isLinkLocalMulticast()`, `isLinkLocalUnicast()`, `isGlobalUnicast()`,
//!   `cidr()`, `isCIDR()`, `containsIP()`, `containsCIDR()`,
//!   `prefixLength()`, `masked()`, `cidr.ip()` (`cel_net.rs`);
//! - quantities: `quantity()`, `isQuantity()`, `sign()`, `isInteger()`, `asInteger()`,
//!   `asApproximateFloat()`, `compareTo()`, `isGreaterThan()`, `isLessThan()`, `add()`,
//!   `sub()` (`cel_quantity.rs`);
//! - sets: `sets.contains()`, `sets.equivalent()`, `sets.intersects()`;
//! - formats: `format.named()`, `format.dns1123Label()` and the other named formats,
//!   `validate()` (`cel_format.rs`).
//!
//! Not available (the crate or this server lacks them; a rule using one fails when it
//! runs, with `undeclared reference` / `no such overload`): `semver`, the lists library's
//! `indexOf`/`lastIndexOf` on lists (the names are the strings extension's), `timestamp`
//! and `duration` (the crate's `chrono` feature is off), `authorizer`, and
//! `cel.bind`.

use std::sync::{Arc, OnceLock};

use cel::extractors::{Arguments, This};
use cel::{Context, Env, ExecutionError, ResolveResult, Value};

use super::cel_args::{list_of, no_overload, string_arg};
use super::{cel_format, cel_net, cel_quantity};

/// The variable bound to the value a rule is declared on.
pub(crate) const SELF: &str = "self";
/// The variable bound to the value's previous state (transition rules).
pub(crate) const OLD_SELF: &str = "oldSelf";

/// The environment rules compile and run in (built once).
pub(crate) fn environment() -> Arc<Env> {
    static ENV: OnceLock<Arc<Env>> = OnceLock::new();
    ENV.get_or_init(|| {
        let mut env = Env::stdlib();
        // Both extensions only declare overloads; a clash would be a bug of the crate,
        // and a rule using the missing function then fails at run time.
        let _ = env.add_extension(cel::extensions::strings);
        let _ = env.add_extension(cel::extensions::math);
        Arc::new(env)
    })
    .clone()
}

/// A root context with the Kubernetes functions, for one object's rules.
pub(crate) fn context() -> Context<'static, 'static> {
    let mut context = Context::with_env(environment());
    // A name the environment already declares is left to it (`add_function` refuses it).
    let _ = context.add_function("isSorted", is_sorted);
    let _ = context.add_function("sum", sum);
    let _ = context.add_function("min", min);
    let _ = context.add_function("max", max);
    let _ = context.add_function("find", find);
    let _ = context.add_function("findAll", find_all);
    let _ = context.add_function("sets.contains", |a: Value, b: Value| -> ResolveResult {
        Ok(Value::Bool(contains_all("sets.contains", &a, &b)?))
    });
    let _ = context.add_function("sets.equivalent", |a: Value, b: Value| -> ResolveResult {
        Ok(Value::Bool(
            contains_all("sets.equivalent", &a, &b)? && contains_all("sets.equivalent", &b, &a)?,
        ))
    });
    let _ = context.add_function("sets.intersects", |a: Value, b: Value| -> ResolveResult {
        let (left, right) = (
            list_of("sets.intersects", &a)?,
            list_of("sets.intersects", &b)?,
        );
        Ok(Value::Bool(left.iter().any(|x| right.contains(x))))
    });
    cel_net::register(&mut context);
    cel_quantity::register(&mut context);
    cel_format::register(&mut context);
    context
}

/// Whether every element of `b` is in `a` (`sets.contains`).
fn contains_all(function: &str, a: &Value, b: &Value) -> Result<bool, ExecutionError> {
    let (left, right) = (list_of(function, a)?, list_of(function, b)?);
    Ok(right.iter().all(|x| left.contains(x)))
}

/// `list.isSorted()`: whether the elements are in ascending order.
fn is_sorted(This(this): This<Value>) -> ResolveResult {
    let items = list_of("isSorted", &this)?;
    for pair in items.windows(2) {
        match pair[0].partial_cmp(&pair[1]) {
            Some(std::cmp::Ordering::Greater) => return Ok(Value::Bool(false)),
            Some(_) => {}
            None => {
                return Err(ExecutionError::ValuesNotComparable(
                    pair[0].clone(),
                    pair[1].clone(),
                ));
            }
        }
    }
    Ok(Value::Bool(true))
}

/// `list.sum()`: the sum of a list of ints, uints or doubles (0 when empty).
fn sum(This(this): This<Value>) -> ResolveResult {
    let items = list_of("sum", &this)?;
    let mut total = match items.first() {
        Some(Value::Float(_)) => Value::Float(0.0),
        Some(Value::UInt(_)) => Value::UInt(0),
        _ => Value::Int(0),
    };
    for item in items {
        total = match (&total, item) {
            (Value::Int(a), Value::Int(b)) => Value::Int(
                a.checked_add(*b)
                    .ok_or_else(|| ExecutionError::function_error("sum", "integer overflow"))?,
            ),
            (Value::UInt(a), Value::UInt(b)) => Value::UInt(
                a.checked_add(*b)
                    .ok_or_else(|| ExecutionError::function_error("sum", "integer overflow"))?,
            ),
            (Value::Float(a), Value::Float(b)) => Value::Float(a + b),
            (_, other) => return Err(no_overload("sum", &[&this, other])),
        };
    }
    Ok(total)
}

fn extreme(function: &str, this: &Value, keep: std::cmp::Ordering) -> ResolveResult {
    let items = list_of(function, this)?;
    let Some(mut best) = items.first() else {
        return Err(ExecutionError::function_error(
            function,
            format!("{function}(list) called on an empty list"),
        ));
    };
    for item in &items[1..] {
        match item.partial_cmp(best) {
            Some(ordering) if ordering == keep => best = item,
            Some(_) => {}
            None => {
                return Err(ExecutionError::ValuesNotComparable(
                    best.clone(),
                    item.clone(),
                ));
            }
        }
    }
    Ok(best.clone())
}

/// `list.min()`.
fn min(This(this): This<Value>) -> ResolveResult {
    extreme("min", &this, std::cmp::Ordering::Less)
}

/// `list.max()`.
fn max(This(this): This<Value>) -> ResolveResult {
    extreme("max", &this, std::cmp::Ordering::Greater)
}

/// The regex of a `find`/`findAll` pattern, within the size the `matches` function allows.
fn regex_of(function: &str, pattern: &str) -> Result<regex::Regex, ExecutionError> {
    regex::RegexBuilder::new(pattern)
        .size_limit(1 << 20)
        .build()
        .map_err(|e| ExecutionError::function_error(function, e))
}

/// `string.find(pattern)`: the first match, or `""`.
fn find(This(this): This<Value>, pattern: Value) -> ResolveResult {
    let text = string_arg("find", &this)?;
    let regex = regex_of("find", string_arg("find", &pattern)?)?;
    Ok(Value::from(
        regex.find(text).map_or("", |m| m.as_str()).to_owned(),
    ))
}

/// `string.findAll(pattern)` and `string.findAll(pattern, limit)`: the matches, at most
/// `limit` when it is not negative.
fn find_all(This(this): This<Value>, Arguments(args): Arguments) -> ResolveResult {
    let text = string_arg("findAll", &this)?;
    let pattern = args
        .first()
        .ok_or_else(|| ExecutionError::invalid_argument_count(1, 0))?;
    let regex = regex_of("findAll", string_arg("findAll", pattern)?)?;
    let limit = match args.get(1) {
        None => usize::MAX,
        Some(Value::Int(n)) if *n < 0 => usize::MAX,
        Some(Value::Int(n)) => usize::try_from(*n).unwrap_or(usize::MAX),
        Some(other) => return Err(no_overload("findAll", &[&this, pattern, other])),
    };
    let found: Vec<Value> = regex
        .find_iter(text)
        .take(limit)
        .map(|m| Value::from(m.as_str().to_owned()))
        .collect();
    Ok(Value::List(Arc::new(found)))
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn eval(source: &str) -> ResolveResult {
        let program = environment().compile(source).unwrap();
        program.execute(&context())
    }

    #[test]
    fn list_and_regex_functions() {
        for rule in [
            "[1, 2, 3].isSorted() && ![2, 1].isSorted()",
            "[1, 2, 3].sum() == 6 && [1.5, 2.5].sum() == 4.0",
            "[3, 1, 2].min() == 1 && [3, 1, 2].max() == 3",
            "'abc 123 def 456'.find('[0-9]+') == '123'",
            "'abc 123 def 456'.findAll('[0-9]+') == ['123', '456']",
            "'abc 123 def 456'.findAll('[0-9]+', 1) == ['123']",
            "'TacoCat'.lowerAscii() == 'tacocat' && 'a,b'.split(',') == ['a', 'b']",
            "'hello'.matches('^h.*o$') && 'abc'.startsWith('a')",
            "[1, 2].all(x, x > 0) && [1, 2].exists_one(x, x == 2)",
            "sets.contains([1, 2, 3], [3, 1]) && !sets.contains([1], [2])",
            "sets.equivalent([1, 2, 2], [2, 1]) && sets.intersects([1, 2], [2, 5])",
        ] {
            assert_eq!(eval(rule), Ok(Value::Bool(true)), "{rule}");
        }
        assert!(eval("[].min()").is_err());
    }
}
