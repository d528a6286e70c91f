//! CronJob schedules as kube-controller-manager and kube-apiserver read them
//! (`robfig/cron/v3`'s `ParseStandard`): five fields (minute, hour, day of month, month,
//! day of week) of `*`, `?`, numbers, names (`jan`, `mon`), ranges, lists and steps; the
//! `@yearly` (`@annually`), `@monthly`, `@weekly`, `@daily` (`@midnight`) and `@hourly`
//! macros; `@every <duration>`; and a leading `TZ=` or `CRON_TZ=` zone. Parse errors carry
//! robfig's messages, which kube-apiserver returns as they are.
//!
//! # Examples
//!
//! ```ignore
//! let schedule = CronSchedule::parse("*/15 9-17 * * mon-fri")?;
//! let next = schedule.next_after(jiff::Timestamp::now(), &jiff::tz::TimeZone::UTC);
//! ```

use std::time::Duration;

use jiff::civil::DateTime;
use jiff::tz::TimeZone;
use jiff::{Timestamp, ToSpan};

/// How many years ahead [`CronSchedule::next_after`] looks before giving up (a schedule
/// such as `0 0 30 2 *` never fires).
const YEARS_AHEAD: i16 = 5;

/// A parsed schedule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum CronSchedule {
    /// The five fields, as bit sets of the values they allow.
    Fields(Fields),
    /// `@every <duration>`: that long after the previous time (whole seconds, at least 1).
    Every(Duration),
}

/// A five-field schedule's allowed values; `*_star` when the day field was `*` or `?`
/// (then the other day field alone decides).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Fields {
    minute: u64,
    hour: u64,
    day_of_month: u64,
    month: u64,
    day_of_week: u64,
    day_of_month_star: bool,
    day_of_week_star: bool,
    /// The zone of a `TZ=` prefix.
    zone: Option<TimeZone>,
}

struct Bounds {
    min: u64,
    max: u64,
    names: &'static [&'static str],
}

const MINUTE: Bounds = Bounds {
    min: 0,
    max: 59,
    names: &[],
};
const HOUR: Bounds = Bounds {
    min: 0,
    max: 23,
    names: &[],
};
const DAY_OF_MONTH: Bounds = Bounds {
    min: 1,
    max: 31,
    names: &[],
};
const MONTH: Bounds = Bounds {
    min: 1,
    max: 12,
    names: &[
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ],
};
const DAY_OF_WEEK: Bounds = Bounds {
    min: 0,
    max: 6,
    names: &["sun", "mon", "tue", "wed", "thu", "fri", "sat"],
};

impl CronSchedule {
    /// Parses `spec` as `cron.ParseStandard` does; `Err` is robfig's message.
    pub(crate) fn parse(spec: &str) -> Result<CronSchedule, String> {
        if spec.is_empty() {
            return Err("empty spec string".to_owned());
        }
        let mut rest = spec;
        let mut zone = None;
        if rest.starts_with("TZ=") || rest.starts_with("CRON_TZ=") {
            let end = rest.find(' ').unwrap_or(rest.len());
            let name = rest[..end].split_once('=').map_or("", |(_, name)| name);
            zone =
                Some(TimeZone::get(name).map_err(|_| {
                    format!("provided bad location {name}: unknown time zone {name}")
                })?);
            rest = rest[end..].trim();
        }
        if rest.starts_with('@') {
            return descriptor(rest, zone);
        }
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.len() != 5 {
            return Err(format!(
                "expected exactly 5 fields, found {}: [{}]",
                fields.len(),
                fields.join(" ")
            ));
        }
        let (day_of_month, day_of_month_star) = field(fields[2], &DAY_OF_MONTH)?;
        let (day_of_week, day_of_week_star) = field(fields[4], &DAY_OF_WEEK)?;
        Ok(CronSchedule::Fields(Fields {
            minute: field(fields[0], &MINUTE)?.0,
            hour: field(fields[1], &HOUR)?.0,
            day_of_month,
            month: field(fields[3], &MONTH)?.0,
            day_of_week,
            day_of_month_star,
            day_of_week_star,
            zone,
        }))
    }

    /// The first time after `after` the schedule fires, read in `zone` (a `TZ=` prefix
    /// wins); `None` when it fires in none of the next five years.
    pub(crate) fn next_after(&self, after: Timestamp, zone: &TimeZone) -> Option<Timestamp> {
        match self {
            CronSchedule::Every(every) => {
                let whole = after
                    .as_second()
                    .checked_add(i64::try_from(every.as_secs()).ok()?)?;
                Timestamp::from_second(whole).ok()
            }
            CronSchedule::Fields(fields) => fields.next_after(after, zone),
        }
    }
}

impl Fields {
    fn next_after(&self, after: Timestamp, zone: &TimeZone) -> Option<Timestamp> {
        let zone = self.zone.as_ref().unwrap_or(zone);
        let start = after.to_zoned(zone.clone()).datetime();
        // The next whole minute.
        let mut t = start
            .with()
            .second(0)
            .subsec_nanosecond(0)
            .build()
            .ok()?
            .checked_add(1.minute())
            .ok()?;
        let limit = start.year().saturating_add(YEARS_AHEAD);
        'wrap: loop {
            if t.year() > limit {
                return None;
            }
            while !has(self.month, t.month()) {
                t = DateTime::new(t.year(), t.month(), 1, 0, 0, 0, 0)
                    .ok()?
                    .checked_add(1.month())
                    .ok()?;
                if t.month() == 1 {
                    continue 'wrap;
                }
            }
            while !self.day_matches(t) {
                t = t
                    .date()
                    .checked_add(1.day())
                    .ok()?
                    .to_datetime(jiff::civil::Time::midnight());
                if t.day() == 1 {
                    continue 'wrap;
                }
            }
            while !has(self.hour, t.hour()) {
                t = t
                    .with()
                    .minute(0)
                    .build()
                    .ok()?
                    .checked_add(1.hour())
                    .ok()?;
                if t.hour() == 0 {
                    continue 'wrap;
                }
            }
            while !has(self.minute, t.minute()) {
                t = t.checked_add(1.minute()).ok()?;
                if t.minute() == 0 {
                    continue 'wrap;
                }
            }
            let at = t.to_zoned(zone.clone()).ok()?.timestamp();
            // A time a DST change skipped lands later; one not after `after` is passed.
            if at > after {
                return Some(at);
            }
            t = t.checked_add(1.minute()).ok()?;
        }
    }

    /// Both day fields must match, unless one is `*` (then the other decides) — or
    /// either, when neither is.
    fn day_matches(&self, t: DateTime) -> bool {
        let by_month = has(self.day_of_month, t.day());
        let by_week = has(self.day_of_week, t.weekday().to_sunday_zero_offset());
        if self.day_of_month_star || self.day_of_week_star {
            by_month && by_week
        } else {
            by_month || by_week
        }
    }
}

fn has(bits: u64, value: i8) -> bool {
    u32::try_from(value).is_ok_and(|v| v < 64 && bits & (1 << v) != 0)
}

/// The macros, and `@every`.
fn descriptor(spec: &str, zone: Option<TimeZone>) -> Result<CronSchedule, String> {
    let fields = |minute: u64,
                  hour: u64,
                  day_of_month: Option<u64>,
                  month: Option<u64>,
                  day_of_week: Option<u64>| {
        CronSchedule::Fields(Fields {
            minute,
            hour,
            day_of_month: day_of_month.unwrap_or_else(|| bits(1, 31, 1)),
            month: month.unwrap_or_else(|| bits(1, 12, 1)),
            day_of_week: day_of_week.unwrap_or_else(|| bits(0, 6, 1)),
            day_of_month_star: day_of_month.is_none(),
            day_of_week_star: day_of_week.is_none(),
            zone: zone.clone(),
        })
    };
    // The bit of the first value: minute 0, hour 0, day 1, January, Sunday.
    let (minute0, hour0, day1, january, sunday) = (1 << 0, 1 << 0, 1 << 1, 1 << 1, 1 << 0);
    match spec {
        "@yearly" | "@annually" => Ok(fields(minute0, hour0, Some(day1), Some(january), None)),
        "@monthly" => Ok(fields(minute0, hour0, Some(day1), None, None)),
        "@weekly" => Ok(fields(minute0, hour0, None, None, Some(sunday))),
        "@daily" | "@midnight" => Ok(fields(minute0, hour0, None, None, None)),
        "@hourly" => Ok(fields(minute0, bits(0, 23, 1), None, None, None)),
        _ => match spec.strip_prefix("@every ") {
            Some(duration) => {
                let parsed = go_duration(duration)
                    .map_err(|err| format!("failed to parse duration {spec}: {err}"))?;
                // robfig rounds down to whole seconds, at least one.
                Ok(CronSchedule::Every(Duration::from_secs(
                    parsed.as_secs().max(1),
                )))
            }
            None => Err(format!("unrecognized descriptor: {spec}")),
        },
    }
}

/// One comma-separated field: its bits, and whether it was `*`/`?` (without a step).
fn field(text: &str, bounds: &Bounds) -> Result<(u64, bool), String> {
    let mut all = 0;
    let mut star = false;
    for expr in text.split(',') {
        let (value, is_star) = range(expr, bounds)?;
        all |= value;
        star |= is_star;
    }
    Ok((all, star))
}

/// `*`, `N`, `N-M`, with an optional `/step` (`N/step` means `N-max/step`).
fn range(expr: &str, bounds: &Bounds) -> Result<(u64, bool), String> {
    let range_and_step: Vec<&str> = expr.split('/').collect();
    let low_and_high: Vec<&str> = range_and_step[0].split('-').collect();
    let single = low_and_high.len() == 1;
    let (start, mut end, mut star) = if low_and_high[0] == "*" || low_and_high[0] == "?" {
        (bounds.min, bounds.max, true)
    } else {
        let start = int_or_name(low_and_high[0], bounds.names)?;
        let end = match low_and_high.len() {
            1 => start,
            2 => int_or_name(low_and_high[1], bounds.names)?,
            _ => return Err(format!("too many hyphens: {expr}")),
        };
        (start, end, false)
    };
    let step = match range_and_step.len() {
        1 => 1,
        2 => {
            let step = non_negative_int(range_and_step[1])?;
            if single {
                end = bounds.max;
            }
            if step > 1 {
                star = false;
            }
            step
        }
        _ => return Err(format!("too many slashes: {expr}")),
    };
    if start < bounds.min {
        return Err(format!(
            "beginning of range ({start}) below minimum ({}): {expr}",
            bounds.min
        ));
    }
    if end > bounds.max {
        return Err(format!(
            "end of range ({end}) above maximum ({}): {expr}",
            bounds.max
        ));
    }
    if start > end {
        return Err(format!(
            "beginning of range ({start}) beyond end of range ({end}): {expr}"
        ));
    }
    if step == 0 {
        return Err(format!("step of range should be a positive number: {expr}"));
    }
    Ok((bits(start, end, step), star))
}

/// The bits `start`, `start + step` ... up to `end` (all at most 63).
fn bits(start: u64, end: u64, step: u64) -> u64 {
    let mut value = 0;
    let mut bit = start;
    while bit <= end && bit < 64 {
        value |= 1 << bit;
        bit = bit.saturating_add(step.max(1));
    }
    value
}

fn int_or_name(text: &str, names: &[&str]) -> Result<u64, String> {
    let lower = text.to_ascii_lowercase();
    if let Some(index) = names.iter().position(|name| *name == lower) {
        // Months count from 1, weekdays from 0 (Sunday).
        let offset = if names.len() == 12 { 1 } else { 0 };
        return Ok(u64::try_from(index).unwrap_or(0) + offset);
    }
    non_negative_int(text)
}

/// `strconv.Atoi`, refusing negative numbers, with robfig's messages.
fn non_negative_int(text: &str) -> Result<u64, String> {
    let number: i64 = text.parse().map_err(|err: std::num::ParseIntError| {
        let why = match err.kind() {
            std::num::IntErrorKind::PosOverflow | std::num::IntErrorKind::NegOverflow => {
                "value out of range"
            }
            _ => "invalid syntax",
        };
        format!("failed to parse int from {text}: strconv.Atoi: parsing {text:?}: {why}")
    })?;
    u64::try_from(number).map_err(|_| format!("negative number ({number}) not allowed: {text}"))
}

/// Go's `time.ParseDuration` for what `@every` needs: a sequence of decimal numbers with
/// units `ns`, `us`, `µs`, `ms`, `s`, `m`, `h` (no sign).
fn go_duration(text: &str) -> Result<Duration, String> {
    let invalid = || format!("time: invalid duration {text:?}");
    if text == "0" {
        return Ok(Duration::ZERO);
    }
    if text.is_empty() {
        return Err(invalid());
    }
    let mut rest = text;
    let mut total = 0f64;
    while !rest.is_empty() {
        let number_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(|| format!("time: missing unit in duration {text:?}"))?;
        let number: f64 = rest[..number_end].parse().map_err(|_| invalid())?;
        rest = &rest[number_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let nanos_per_unit = match &rest[..unit_end] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            unit => return Err(format!("time: unknown unit {unit:?} in duration {text:?}")),
        };
        total += number * nanos_per_unit;
        rest = &rest[unit_end..];
    }
    if !total.is_finite() || total > 9.2e18 {
        return Err(invalid());
    }
    Ok(Duration::from_nanos(total as u64))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn at(text: &str) -> Timestamp {
        text.parse().expect("a timestamp")
    }

    fn next(spec: &str, after: &str) -> Option<String> {
        CronSchedule::parse(spec)
            .expect("a schedule")
            .next_after(at(after), &TimeZone::UTC)
            .map(|t| t.to_string())
    }

    #[test]
    fn schedules_fire_when_their_fields_match() {
        assert_eq!(
            next("* * * * *", "2026-01-01T10:00:30Z").as_deref(),
            Some("2026-01-01T10:01:00Z")
        );
        assert_eq!(
            next("*/15 9-17 * * mon-fri", "2026-12-05T12:00:00Z").as_deref(),
            Some("2026-12-07T09:00:00Z")
        );
        assert_eq!(
            next("@hourly", "2026-01-01T10:00:00Z").as_deref(),
            Some("2026-01-01T11:00:00Z")
        );
        assert_eq!(
            next("@yearly", "2026-03-01T00:00:00Z").as_deref(),
            Some("2027-01-01T00:00:00Z")
        );
        assert_eq!(
            next("0 0 29 2 *", "2026-03-01T00:00:00Z").as_deref(),
            Some("2028-02-29T00:00:00Z")
        );
        // Day of month or day of week when neither is `*`.
        assert_eq!(
            next("0 0 13 * fri", "2026-12-05T00:00:00Z").as_deref(),
            Some("2026-12-11T00:00:00Z")
        );
        assert_eq!(next("0 0 30 2 *", "2026-01-01T00:00:00Z"), None);
        assert_eq!(
            next("@every 90s", "2026-01-01T00:00:00Z").as_deref(),
            Some("2026-01-01T00:01:30Z")
        );
        let paris = TimeZone::get("Europe/Paris").expect("the zone");
        let nightly = CronSchedule::parse("0 3 * * *").expect("a schedule");
        assert_eq!(
            nightly
                .next_after(at("2026-07-01T00:00:00Z"), &paris)
                .map(|t| t.to_string())
                .as_deref(),
            Some("2026-07-01T01:00:00Z")
        );
    }

    #[test]
    fn bad_schedules_get_robfigs_messages() {
        let error = |spec: &str| CronSchedule::parse(spec).expect_err("an error");
        assert_eq!(
            error("61 * * * *"),
            "end of range (61) above maximum (59): 61"
        );
        assert_eq!(
            error("* * *"),
            "expected exactly 5 fields, found 3: [* * *]"
        );
        assert_eq!(error(""), "empty spec string");
        assert_eq!(error("@often"), "unrecognized descriptor: @often");
        assert_eq!(
            error("x * * * *"),
            "failed to parse int from x: strconv.Atoi: parsing \"x\": invalid syntax"
        );
        assert_eq!(
            error("*/0 * * * *"),
            "step of range should be a positive number: */0"
        );
        assert_eq!(
            error("5-2 * * * *"),
            "beginning of range (5) beyond end of range (2): 5-2"
        );
        assert_eq!(
            error("* * 0 * *"),
            "beginning of range (0) below minimum (1): 0"
        );
        assert_eq!(
            error("-1 * * * *"),
            "failed to parse int from : strconv.Atoi: parsing \"\": invalid syntax"
        );
        assert_eq!(error("1-2-3 * * * *"), "too many hyphens: 1-2-3");
    }

    proptest! {
        #[test]
        fn no_schedule_string_panics(spec in "\\PC{0,40}", fields in "([0-9*?/,a-z-]{1,6} ){4}[0-9*?/,a-z-]{1,6}") {
            for text in [spec.as_str(), fields.as_str()] {
                if let Ok(schedule) = CronSchedule::parse(text) {
                    let _ = schedule.next_after(at("2026-01-01T00:00:00Z"), &TimeZone::UTC);
                }
            }
        }
    }
}
