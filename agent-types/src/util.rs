//! Small helpers shared by the crates: times, sizes, durations, error
//! chains, output truncation and `${VAR}` expansion.

use std::time::{SystemTime, UNIX_EPOCH};

pub use crate::duration::{DurationError, parse_duration};
pub use crate::invalid::InvalidValue;
pub use crate::truncate::truncate_output;
pub use crate::vars::{NESTING_LIMIT, UnsetVariable, expand_vars};

/// An error and its causes, joined by `: ` (`error sending request: tcp
/// connect error: Connection refused`). A cause whose text the message
/// already contains is not repeated.
///
/// ```
/// let e = loopwright_types::ModelError::network("request failed").with_source(std::io::Error::other("connection refused"));
/// assert_eq!(loopwright_types::util::error_chain(&e), "network error: request failed: connection refused");
/// // A cause the message already quotes is said once.
/// let inner = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
/// assert_eq!(loopwright_types::util::error_chain(&std::io::Error::other(inner)), "refused");
/// ```
pub fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let piece = cause.to_string();
        if !text.contains(&piece) {
            text.push_str(": ");
            text.push_str(&piece);
        }
        source = cause.source();
    }
    text
}

/// A byte count for people: `10 B`, `1.2 KB`, `3.0 MB`.
///
/// ```
/// assert_eq!(loopwright_types::util::human_size(1229), "1.2 KB");
/// assert_eq!(loopwright_types::util::human_size(10), "10 B");
/// ```
pub fn human_size(bytes: usize) -> String {
    const KB: usize = 1024;
    if bytes < KB {
        format!("{bytes} B")
    } else if bytes < KB * KB {
        format!("{:.1} KB", bytes as f64 / KB as f64)
    } else {
        format!("{:.1} MB", bytes as f64 / (KB * KB) as f64)
    }
}

/// Now as RFC 3339 in UTC with milliseconds, such as `2026-11-22T05:59:01.123Z`.
///
/// ```
/// let t = loopwright_types::util::rfc3339_now();
/// assert_eq!(t.len(), 24);
/// assert!(t.ends_with('Z'));
/// ```
pub fn rfc3339_now() -> String {
    let since = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60,
        since.subsec_millis()
    )
}

/// Days since 1970-01-01 to (year, month, day), after Howard Hinnant's
/// `civil_from_days`.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// Merge `options` into the entry for `provider`: objects key by key (a key
/// given again replaces the earlier value), anything else replaces what was
/// there.
pub fn merge_provider_options(
    map: &mut std::collections::BTreeMap<String, serde_json::Value>,
    provider: String,
    options: serde_json::Value,
) {
    let slot = map.entry(provider).or_insert(serde_json::Value::Null);
    match (slot, options) {
        (serde_json::Value::Object(existing), serde_json::Value::Object(more)) => existing.extend(more),
        (slot, options) => *slot = options,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(19_723), (2024, 1, 1));
        assert_eq!(civil_from_days(20_514), (2026, 3, 2));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    }
}
