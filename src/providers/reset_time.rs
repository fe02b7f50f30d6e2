//! When a provider's usage limit resets, read from the text its CLI prints (the `reset` group
//! of a `limit` rule in `exit_output`): a clock time, with or without a date and a zone, or a
//! wait. The forms are the ones the built-in CLIs print (docs/failures.md "Usage limits"):
//!
//! | CLI (version) | form | e.g. |
//! | --- | --- | --- |
//! | Claude Code 2.1.197 | `resets <h[:mm]am/pm> (<IANA zone>)`, a date first when over 24 h away | `3pm (Europe/Berlin)`, `Dec 4, 3:45pm (UTC)` |
//! | codex-cli 0.171.0 | `try again at <h:mm AM/PM>`, `<Mon d(th)>, <yyyy>` first on another day | `3:04 PM`, `Sep 12th, 2026 3:04 PM` |
//! | gemini-cli 0.61.0 | the API's `Please retry in <n>s` / `<n>ms` | `3600.5s` |
//!
//! A 24-hour `HH:MM[:SS]` and waits such as `in 2h 5m` or `2 hours 3 minutes` are read too.
//! A zone in parentheses is honoured when it is UTC; any other zone is read as this
//! machine's own (the CLI runs beside crewmux and prints its own zone, which is this one's).

use std::sync::LazyLock;

use chrono::{DateTime, Datelike, Duration, Local, NaiveDate, NaiveTime, TimeZone, Utc};
use regex::Regex;

#[allow(
    clippy::expect_used,
    reason = "literal patterns, compiled in the tests"
)]
static WAIT_PART: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)(\d+(?:\.\d+)?)\s*(ms|milliseconds?|s|secs?|seconds?|m|mins?|minutes?|h|hrs?|hours?|d|days?)\b",
    )
    .expect("wait pattern")
});

#[allow(
    clippy::expect_used,
    reason = "literal patterns, compiled in the tests"
)]
static CLOCK: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?ix)^
        (?:(?P<mon>[a-z]{3})[a-z]*\.?\s+(?P<day>\d{1,2})(?:st|nd|rd|th)?,?\s+(?:(?P<year>\d{4}),?\s+)?)?
        (?P<h>\d{1,2})(?::(?P<m>\d{2}))?(?::(?P<s>\d{2}))?\s*(?P<ampm>am|pm)?
        \s*(?:\((?P<zone>[^)]*)\))?\s*\.?$",
    )
    .expect("clock pattern")
});

/// The moment a limit resets, from `text` as printed (`now`: the time it was read). A clock
/// time without a date is its next occurrence after `now` (a minute of slack, as the CLIs
/// print whole minutes); a date without a year is this year's, or next year's when it has
/// passed. `None` when the text is neither a clock time nor a wait.
pub fn parse(text: &str, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    let t = text.trim().trim_end_matches('.').trim();
    let t = t.strip_prefix("in ").unwrap_or(t).trim();
    clock(t, now).or_else(|| wait(t).map(|d| now + d))
}

/// A wait such as `31.2s`, `2h 5m` or `2 hours 3 minutes`: every part of `t` must be one.
fn wait(t: &str) -> Option<Duration> {
    let mut total_ms = 0f64;
    let mut end = 0;
    for c in WAIT_PART.captures_iter(t) {
        let whole = c.get(0)?;
        let between = &t[end..whole.start()];
        if !between.trim().trim_matches(',').trim().is_empty() && between.trim() != "and" {
            return None;
        }
        end = whole.end();
        let n: f64 = c[1].parse().ok()?;
        let unit = c[2].to_ascii_lowercase();
        let ms = match unit.as_str() {
            "ms" | "millisecond" | "milliseconds" => 1.0,
            u if u.starts_with('s') => 1_000.0,
            u if u.starts_with('m') => 60_000.0,
            u if u.starts_with('h') => 3_600_000.0,
            _ => 86_400_000.0,
        };
        total_ms += n * ms;
    }
    (end > 0 && t[end..].trim().is_empty() && total_ms.is_finite())
        .then(|| Duration::milliseconds(total_ms.round() as i64))
}

/// A clock time, maybe with a date and a zone (see the module's table).
fn clock(t: &str, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    let c = CLOCK.captures(t)?;
    let mut h: u32 = c.name("h")?.as_str().parse().ok()?;
    let m: u32 = c.name("m").map_or(Some(0), |m| m.as_str().parse().ok())?;
    let s: u32 = c.name("s").map_or(Some(0), |s| s.as_str().parse().ok())?;
    match c.name("ampm").map(|a| a.as_str().to_ascii_lowercase()) {
        Some(_) if !(1..=12).contains(&h) => return None,
        Some(a) if a == "pm" && h != 12 => h += 12,
        Some(a) if a == "am" && h == 12 => h = 0,
        Some(_) => {}
        // A bare number is no clock time (it may be a count of anything).
        None if c.name("m").is_none() => return None,
        None => {}
    }
    let time = NaiveTime::from_hms_opt(h, m, s)?;
    let utc = c
        .name("zone")
        .is_some_and(|z| matches!(z.as_str().trim(), "UTC" | "Etc/UTC" | "GMT" | "Z"));
    let in_zone = |date: NaiveDate| -> Option<DateTime<Utc>> {
        let at = date.and_time(time);
        if utc {
            Some(Utc.from_utc_datetime(&at))
        } else {
            Local
                .from_local_datetime(&at)
                .earliest()
                .map(|d| d.with_timezone(&Utc))
        }
    };
    let today = if utc {
        now.date_naive()
    } else {
        now.with_timezone(&Local).date_naive()
    };
    let slack = Duration::minutes(1);
    match c.name("mon") {
        None => {
            let at = in_zone(today)?;
            if at + slack >= now {
                Some(at)
            } else {
                in_zone(today.succ_opt()?)
            }
        }
        Some(mon) => {
            let month = month_number(mon.as_str())?;
            let day: u32 = c.name("day")?.as_str().parse().ok()?;
            match c.name("year") {
                Some(y) => in_zone(NaiveDate::from_ymd_opt(
                    y.as_str().parse().ok()?,
                    month,
                    day,
                )?),
                None => {
                    let this = in_zone(NaiveDate::from_ymd_opt(today.year(), month, day)?)?;
                    if this + Duration::days(1) >= now {
                        Some(this)
                    } else {
                        in_zone(NaiveDate::from_ymd_opt(today.year() + 1, month, day)?)
                    }
                }
            }
        }
    }
}

/// 1–12 for an English month name's first three letters.
fn month_number(name: &str) -> Option<u32> {
    const MONTHS: [&str; 12] = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ];
    let key = name.get(..3)?.to_ascii_lowercase();
    MONTHS
        .iter()
        .position(|m| *m == key)
        .and_then(|i| u32::try_from(i + 1).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn waits_as_gemini_and_people_write_them() {
        let now = at("2026-12-03T10:00:00Z");
        assert_eq!(
            parse("3600.5s", now),
            Some(now + Duration::milliseconds(3_600_500))
        );
        assert_eq!(parse("250ms", now), Some(now + Duration::milliseconds(250)));
        assert_eq!(parse("in 5s", now), Some(now + Duration::seconds(5)));
        assert_eq!(
            parse("2 hours 3 minutes", now),
            Some(now + Duration::minutes(123))
        );
        assert_eq!(parse("in 2h 5m.", now), Some(now + Duration::minutes(125)));
        assert_eq!(
            parse("1 day, 2 hours", now),
            Some(now + Duration::hours(26))
        );
        assert_eq!(parse("soon", now), None);
        assert_eq!(parse("5 apples", now), None);
        assert_eq!(parse("", now), None);
    }

    #[test]
    fn a_utc_clock_time_is_its_next_occurrence() {
        let now = at("2026-12-03T10:00:00Z");
        assert_eq!(parse("3pm (UTC)", now), Some(at("2026-12-03T15:00:00Z")));
        assert_eq!(parse("3:45pm (UTC)", now), Some(at("2026-12-03T15:45:00Z")));
        assert_eq!(parse("12am (UTC)", now), Some(at("2026-12-04T00:00:00Z")));
        assert_eq!(parse("12pm (UTC)", now), Some(at("2026-12-03T12:00:00Z")));
        // Passed today (beyond a minute's slack): tomorrow's.
        assert_eq!(
            parse("9:30 AM (UTC)", now),
            Some(at("2026-12-04T09:30:00Z"))
        );
        assert_eq!(
            parse("9:59 AM (UTC)", now),
            Some(at("2026-12-03T09:59:00Z"))
        );
        assert_eq!(
            parse("10:00:05 (UTC)", now),
            Some(at("2026-12-03T10:00:05Z"))
        );
        assert_eq!(parse("13pm (UTC)", now), None);
        assert_eq!(parse("25:00 (UTC)", now), None);
        assert_eq!(parse("42", now), None);
    }

    #[test]
    fn a_date_first_as_claude_and_codex_print_it_on_another_day() {
        let now = at("2026-12-03T10:00:00Z");
        assert_eq!(
            parse("Dec 4, 3:45pm (UTC)", now),
            Some(at("2026-12-04T15:45:00Z"))
        );
        assert_eq!(
            parse("Sep 12th, 2027 3:04 PM (UTC)", now),
            Some(at("2027-09-12T15:04:00Z"))
        );
        // A date without its year that has passed is next year's.
        assert_eq!(
            parse("Jan 2, 3pm (UTC)", now),
            Some(at("2027-01-02T15:00:00Z"))
        );
        assert_eq!(parse("Foo 2, 3pm (UTC)", now), None);
    }

    #[test]
    fn a_zone_other_than_utc_is_this_machines_own() {
        let now = Utc::now();
        let got = parse("3pm (Europe/Berlin)", now).unwrap();
        let local = got.with_timezone(&Local);
        assert_eq!((local.format("%H:%M").to_string()), "15:00");
        assert!(
            got + Duration::minutes(1) >= now
                && got <= now + Duration::days(1) + Duration::hours(1)
        );
    }
}
