//! Resource quantities (`resource.Quantity`: `100m`, `2`, `1.5Gi`, `1e3`, `500M`) as
//! numbers, for the scheduler's arithmetic on requests and allocatable and for quota usage.

use serde_json::Value;

/// The value of a quantity (`"250m"` is 0.25), or `None` when it is not one.
///
/// ```ignore
/// assert_eq!(parse("250m"), Some(0.25));
/// assert_eq!(parse("1Gi"), Some(1073741824.0));
/// ```
pub(crate) fn parse(text: &str) -> Option<f64> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+' || c == '-'))
        .unwrap_or(text.len());
    let (number, suffix) = text.split_at(split);
    let number: f64 = number.parse().ok()?;
    let factor = match suffix {
        "" => 1.0,
        "n" => 1e-9,
        "u" => 1e-6,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        "Ki" => 1024.0,
        "Mi" => 1024f64.powi(2),
        "Gi" => 1024f64.powi(3),
        "Ti" => 1024f64.powi(4),
        "Pi" => 1024f64.powi(5),
        "Ei" => 1024f64.powi(6),
        exponent => {
            let digits = exponent
                .strip_prefix('e')
                .or_else(|| exponent.strip_prefix('E'))?;
            10f64.powi(digits.parse::<i32>().ok()?)
        }
    };
    let value = number * factor;
    value.is_finite().then_some(value)
}

/// A quantity in JSON: a string, or a bare number as clients sometimes send.
pub(crate) fn from_json(value: &Value) -> Option<f64> {
    match value {
        Value::String(text) => parse(text),
        Value::Number(number) => number.as_f64(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn quantities_parse_with_their_suffixes() {
        assert_eq!(parse("250m"), Some(0.25));
        assert_eq!(parse("2"), Some(2.0));
        assert_eq!(parse("1Gi"), Some(1_073_741_824.0));
        assert_eq!(parse("1.5k"), Some(1500.0));
        assert_eq!(parse("1e3"), Some(1000.0));
        assert_eq!(parse("128974848"), Some(128_974_848.0));
        assert_eq!(parse("12Q"), None);
        assert_eq!(parse(""), None);
        assert_eq!(parse("Gi"), None);
    }
}
