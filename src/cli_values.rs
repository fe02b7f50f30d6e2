//! Parsers for the numeric flags of the command line, so that every bad value is refused
//! with what to write: clap's own integer parser says only `invalid digit found in string`,
//! and a negative number (`--parallel -3`) was taken for a flag (clap's advice `use '-- -3'`
//! then misleads). The flags using these also set `allow_negative_numbers`, so `-3` reaches
//! the parser and is refused here with the range.

/// A parser of a whole number in `lo..=hi` (decimal, no sign); anything else is refused
/// with `use a whole number <lo>..=<hi>`, which clap prints after the value and the flag.
///
/// # Errors
/// The returned parser fails on text that is not such a number.
pub fn whole_in<T>(
    lo: u64,
    hi: u64,
) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync + 'static
where
    T: TryFrom<u64> + Clone + Send + Sync + 'static,
{
    move |text| {
        text.trim()
            .parse::<u64>()
            .ok()
            .filter(|n| (lo..=hi).contains(n))
            .and_then(|n| T::try_from(n).ok())
            .ok_or_else(|| format!("use a whole number {lo}..={hi}"))
    }
}

/// Seconds of a limit where `0` turns the limit off (`--timeout`, `--idle-timeout`,
/// `--stall-after`, `--check-timeout`).
///
/// # Errors
/// Text that is not a whole number of seconds, with the form to write.
pub fn limit_seconds(text: &str) -> Result<u64, String> {
    text.trim()
        .parse::<u64>()
        .map_err(|_| "use a whole number of seconds, e.g. 600 (0 turns it off)".to_string())
}

/// Seconds of a wait (`--grace`, `--question-timeout`).
///
/// # Errors
/// Text that is not a whole number of seconds, with the form to write.
pub fn seconds(text: &str) -> Result<u64, String> {
    text.trim()
        .parse::<u64>()
        .map_err(|_| "use a whole number of seconds, e.g. 5".to_string())
}

/// A positive, finite amount (`--budget-usd 5`, `0.50`).
///
/// # Errors
/// Text that is not such an amount, with the form to write.
pub fn amount(text: &str) -> Result<f64, String> {
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|a| a.is_finite() && *a > 0.0)
        .ok_or_else(|| "use a positive amount of US dollars, e.g. 5 or 0.50".to_string())
}

/// A positive whole number of tokens (`--budget-tokens 2000000`).
///
/// # Errors
/// Text that is not such a number, with the form to write.
pub fn tokens(text: &str) -> Result<u64, String> {
    text.trim()
        .replace('_', "")
        .parse::<u64>()
        .ok()
        .filter(|n| *n > 0)
        .ok_or_else(|| "use a positive whole number of tokens, e.g. 2000000".to_string())
}

#[cfg(test)]
mod tests {
    use super::{limit_seconds, seconds, whole_in};

    #[test]
    fn a_whole_number_outside_its_range_or_not_a_number_names_the_range() {
        let parallel = whole_in::<usize>(1, 256);
        assert_eq!(parallel("8"), Ok(8));
        assert_eq!(parallel("256"), Ok(256));
        for bad in ["0", "257", "-3", "abc", "1.5", ""] {
            assert_eq!(
                parallel(bad),
                Err("use a whole number 1..=256".into()),
                "{bad}"
            );
        }
    }

    #[test]
    fn seconds_say_the_form_to_write() {
        assert_eq!(limit_seconds("0"), Ok(0));
        assert!(limit_seconds("-5").unwrap_err().contains("0 turns it off"));
        assert!(seconds("soon")
            .unwrap_err()
            .contains("whole number of seconds"));
    }
}
