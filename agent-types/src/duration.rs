//! Durations in configuration files: a number of milliseconds, or a string
//! with a unit (`"500ms"`, `"30s"`, `"2m"`, `"1h"`, `"30d"`; a bare number
//! string is milliseconds too).

use std::time::Duration;

/// Parse a configured duration; `Err` says what was expected.
///
/// ```
/// use std::time::Duration;
/// use loopwright_types::util::parse_duration;
/// assert_eq!(parse_duration(&serde_json::json!(1500)), Ok(Duration::from_millis(1500)));
/// assert_eq!(parse_duration(&serde_json::json!("30s")), Ok(Duration::from_secs(30)));
/// assert_eq!(parse_duration(&serde_json::json!("1.5m")), Ok(Duration::from_secs(90)));
/// assert_eq!(parse_duration(&serde_json::json!("30d")), Ok(Duration::from_secs(30 * 86_400)));
/// assert!(parse_duration(&serde_json::json!("soon")).is_err());
/// ```
pub fn parse_duration(value: &serde_json::Value) -> Result<Duration, String> {
    const EXPECTED: &str =
        "expected milliseconds or a string such as \"500ms\", \"30s\", \"2m\", \"1h\", \"30d\"";
    if let Some(ms) = value.as_u64() {
        return Ok(Duration::from_millis(ms));
    }
    let Some(text) = value.as_str() else {
        return Err(format!("{EXPECTED}, got {value}"));
    };
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: f64 = number.parse().map_err(|_| format!("{EXPECTED}, got {text:?}"))?;
    let seconds = match unit.trim() {
        "" | "ms" => number / 1000.0,
        "s" | "sec" | "secs" => number,
        "m" | "min" | "mins" => number * 60.0,
        "h" => number * 3600.0,
        "d" | "day" | "days" => number * 86_400.0,
        _ => return Err(format!("{EXPECTED}, got {text:?}")),
    };
    Duration::try_from_secs_f64(seconds).map_err(|_| format!("{EXPECTED}, got {text:?}"))
}
