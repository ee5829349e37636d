//! Durations in configuration files: a number of milliseconds, or a string
//! with a unit (`"500ms"`, `"30s"`, `"2m"`, `"1h"`, `"30d"`; a bare number
//! string is milliseconds too).

use std::time::Duration;

/// A configured duration that is not one: what was given.
///
/// ```
/// let e = loopwright_types::util::parse_duration(&serde_json::json!("soon")).unwrap_err();
/// assert_eq!(e.got, "\"soon\"");
/// assert!(e.to_string().ends_with("got \"soon\""));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("expected milliseconds or a string such as \"500ms\", \"30s\", \"2m\", \"1h\", \"30d\", got {got}")]
#[non_exhaustive]
pub struct DurationError {
    /// What was given, as JSON (a string quoted).
    pub got: String,
}

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
pub fn parse_duration(value: &serde_json::Value) -> Result<Duration, DurationError> {
    if let Some(ms) = value.as_u64() {
        return Ok(Duration::from_millis(ms));
    }
    let Some(text) = value.as_str() else {
        return Err(DurationError {
            got: value.to_string(),
        });
    };
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: f64 = number.parse().map_err(|_| DurationError {
        got: format!("{text:?}"),
    })?;
    let seconds = match unit.trim() {
        "" | "ms" => number / 1000.0,
        "s" | "sec" | "secs" => number,
        "m" | "min" | "mins" => number * 60.0,
        "h" => number * 3600.0,
        "d" | "day" | "days" => number * 86_400.0,
        _ => {
            return Err(DurationError {
                got: format!("{text:?}"),
            });
        }
    };
    Duration::try_from_secs_f64(seconds).map_err(|_| DurationError {
        got: format!("{text:?}"),
    })
}
