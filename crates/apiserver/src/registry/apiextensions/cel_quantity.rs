//! The Kubernetes CEL quantity library (`k8s.io/apiserver/pkg/cel/library/quantity.go`):
//! `resource.Quantity` strings (`500m`, `1.5Gi`, `2e3`) as opaque CEL values, compared
//! exactly in nano units (`i128`, smaller parts rounded up as Kubernetes does) when both
//! fit, else by their `f64` value.

use std::cmp::Ordering;
use std::sync::Arc;

use cel::extractors::This;
use cel::objects::Opaque;
use cel::{Context, ExecutionError, ResolveResult, Value};

use super::cel_args::{no_overload, string_arg};

/// A parsed quantity.
#[derive(Debug, Clone, Copy)]
struct Quantity {
    /// The value in units of 10^-9 (rounded up below a nano, as Kubernetes does), when
    /// within `i128`.
    nanos: Option<i128>,
    /// The value, approximately.
    approx: f64,
}

impl PartialEq for Quantity {
    fn eq(&self, other: &Self) -> bool {
        self.compare(other) == Ordering::Equal
    }
}

impl Eq for Quantity {}

impl Opaque for Quantity {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.Quantity"
    }
}

impl Quantity {
    fn compare(&self, other: &Quantity) -> Ordering {
        match (self.nanos, other.nanos) {
            (Some(a), Some(b)) => a.cmp(&b),
            _ => self
                .approx
                .partial_cmp(&other.approx)
                .unwrap_or(Ordering::Equal),
        }
    }

    fn from_nanos(nanos: Option<i128>, approx: f64) -> Quantity {
        Quantity { nanos, approx }
    }
}

/// Parses a quantity as `resource.ParseQuantity` accepts it.
fn parse(text: &str) -> Option<Quantity> {
    let (negative, rest) = match text.as_bytes().first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    let number_end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rest.len());
    let (number, suffix) = rest.split_at(number_end);
    if number.is_empty() || number == "." || number.matches('.').count() > 1 {
        return None;
    }
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    let (exp10, pow2): (i32, u32) = match suffix {
        "" => (0, 0),
        "n" => (-9, 0),
        "u" => (-6, 0),
        "m" => (-3, 0),
        "k" => (3, 0),
        "M" => (6, 0),
        "G" => (9, 0),
        "T" => (12, 0),
        "P" => (15, 0),
        "E" => (18, 0),
        "Ki" => (0, 10),
        "Mi" => (0, 20),
        "Gi" => (0, 30),
        "Ti" => (0, 40),
        "Pi" => (0, 50),
        "Ei" => (0, 60),
        other => {
            let exponent = other.strip_prefix(['e', 'E'])?;
            let digits = exponent.strip_prefix(['+', '-']).unwrap_or(exponent);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            (exponent.parse().ok()?, 0)
        }
    };
    let digits = format!("{whole}{fraction}");
    // An exponent too large for this arithmetic is not a quantity (kube-apiserver refuses
    // such values as out of range too).
    let scale = 9i32
        .checked_add(exp10)?
        .checked_sub(i32::try_from(fraction.len()).ok()?)?;
    let mantissa: Option<i128> = digits.parse().ok();
    let nanos = mantissa.and_then(|m| {
        let scaled = if scale >= 0 {
            m.checked_mul(10i128.checked_pow(u32::try_from(scale).ok()?)?)?
        } else {
            // Below a nano, Kubernetes rounds up to the next nano.
            match 10i128.checked_pow(scale.unsigned_abs()) {
                Some(divisor) => m / divisor + i128::from(m % divisor != 0),
                None => i128::from(m != 0),
            }
        };
        scaled.checked_mul(1i128.checked_shl(pow2)?)
    });
    let approx =
        format!("{whole}.{fraction}0e{exp10}").parse::<f64>().ok()? * 2f64.powi(pow2 as i32);
    let (sign, float_sign) = if negative { (-1, -1.0) } else { (1, 1.0) };
    Some(Quantity::from_nanos(
        nanos.map(|n| n * sign),
        approx * float_sign,
    ))
}

fn quantity_of<'a>(function: &str, value: &'a Value) -> Result<&'a Quantity, ExecutionError> {
    match value {
        Value::Opaque(o) => o
            .downcast_ref::<Quantity>()
            .ok_or_else(|| no_overload(function, &[value])),
        other => Err(no_overload(function, &[other])),
    }
}

/// Registers the functions on a rule context.
pub(crate) fn register(context: &mut Context<'static, 'static>) {
    let _ = context.add_function("quantity", quantity);
    let _ = context.add_function("isQuantity", |v: Value| -> ResolveResult {
        Ok(Value::Bool(parse(string_arg("isQuantity", &v)?).is_some()))
    });
    let _ = context.add_function("sign", |This(v): This<Value>| -> ResolveResult {
        let q = quantity_of("sign", &v)?;
        Ok(Value::Int(
            match q.compare(&Quantity::from_nanos(Some(0), 0.0)) {
                Ordering::Less => -1,
                Ordering::Equal => 0,
                Ordering::Greater => 1,
            },
        ))
    });
    let _ = context.add_function("isInteger", |This(v): This<Value>| -> ResolveResult {
        Ok(Value::Bool(
            as_integer(quantity_of("isInteger", &v)?).is_some(),
        ))
    });
    let _ = context.add_function("asInteger", |This(v): This<Value>| -> ResolveResult {
        as_integer(quantity_of("asInteger", &v)?)
            .map(Value::Int)
            .ok_or_else(|| {
                ExecutionError::function_error("asInteger", "cannot convert value to integer")
            })
    });
    let _ = context.add_function(
        "asApproximateFloat",
        |This(v): This<Value>| -> ResolveResult {
            Ok(Value::Float(quantity_of("asApproximateFloat", &v)?.approx))
        },
    );
    let _ = context.add_function(
        "compareTo",
        |This(v): This<Value>, o: Value| -> ResolveResult {
            let ordering = quantity_of("compareTo", &v)?.compare(quantity_of("compareTo", &o)?);
            Ok(Value::Int(ordering as i64))
        },
    );
    let _ = context.add_function(
        "isGreaterThan",
        |This(v): This<Value>, o: Value| -> ResolveResult {
            let ordering =
                quantity_of("isGreaterThan", &v)?.compare(quantity_of("isGreaterThan", &o)?);
            Ok(Value::Bool(ordering == Ordering::Greater))
        },
    );
    let _ = context.add_function(
        "isLessThan",
        |This(v): This<Value>, o: Value| -> ResolveResult {
            let ordering = quantity_of("isLessThan", &v)?.compare(quantity_of("isLessThan", &o)?);
            Ok(Value::Bool(ordering == Ordering::Less))
        },
    );
    let _ = context.add_function("add", |This(v): This<Value>, o: Value| -> ResolveResult {
        arithmetic("add", &v, &o, 1)
    });
    let _ = context.add_function("sub", |This(v): This<Value>, o: Value| -> ResolveResult {
        arithmetic("sub", &v, &o, -1)
    });
}

fn quantity(value: Value) -> ResolveResult {
    let text = string_arg("quantity", &value)?;
    parse(text)
        .map(|q| Value::Opaque(Arc::new(q)))
        .ok_or_else(|| ExecutionError::function_error("quantity", "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"))
}

fn as_integer(q: &Quantity) -> Option<i64> {
    let nanos = q.nanos?;
    if nanos % 1_000_000_000 != 0 {
        return None;
    }
    i64::try_from(nanos / 1_000_000_000).ok()
}

fn arithmetic(function: &str, this: &Value, other: &Value, sign: i128) -> ResolveResult {
    let left = quantity_of(function, this)?;
    let right = match other {
        Value::Int(n) => Quantity::from_nanos(i128::from(*n).checked_mul(1_000_000_000), *n as f64),
        value => *quantity_of(function, value)?,
    };
    let nanos = match (left.nanos, right.nanos) {
        (Some(a), Some(b)) => b.checked_mul(sign).and_then(|b| a.checked_add(b)),
        _ => None,
    };
    let approx = left.approx + right.approx * sign as f64;
    Ok(Value::Opaque(Arc::new(Quantity::from_nanos(nanos, approx))))
}

#[cfg(test)]
mod tests {
    use super::super::cel_library::{context, environment};
    use cel::Value;

    fn eval(source: &str) -> Result<Value, cel::ExecutionError> {
        environment().compile(source).unwrap().execute(&context())
    }

    #[test]
    fn quantities_parse_compare_and_add() {
        for rule in [
            "isQuantity('500m') && isQuantity('1.5Gi') && isQuantity('2e3') && !isQuantity('1.5.2')",
            "quantity('1') == quantity('1000m') && quantity('1Ki') == quantity('1024')",
            "quantity('2Gi').isGreaterThan(quantity('2G')) && quantity('100m').isLessThan(quantity('1'))",
            "quantity('1.5').compareTo(quantity('1500m')) == 0 && quantity('-1').sign() == -1",
            "quantity('2k').asInteger() == 2000 && !quantity('1500m').isInteger()",
            "quantity('1').add(quantity('500m')) == quantity('1.5') && quantity('1').sub(1).sign() == 0",
            "quantity('1e3').asApproximateFloat() == 1000.0",
        ] {
            assert_eq!(eval(rule), Ok(Value::Bool(true)), "{rule}");
        }
        assert!(eval("quantity('abc') == quantity('1')").is_err());
        assert_eq!(eval("isQuantity('1e2147483647')"), Ok(Value::Bool(false)));
        // A tiny one is (about) zero, not a crash.
        assert_eq!(eval("quantity('1e-2147483648').sign()"), Ok(Value::Int(1)));
    }
}
