//! [`InvalidValue`]: a configuration value that is wrong, with where it is.

/// A value of a configuration (a JSON object a person wrote) that is
/// wrong: the key path it is at, and what was expected instead.
///
/// ```
/// use loopwright_types::util::InvalidValue;
/// let e = InvalidValue::new("toolOverrides.read.name", "expected a string, got 3");
/// assert_eq!(e.to_string(), "toolOverrides.read.name: expected a string, got 3");
/// assert_eq!(InvalidValue::new("", "must be an object").to_string(), "must be an object");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{message}", if .path.is_empty() { String::new() } else { format!("{}: ", .path) })]
#[non_exhaustive]
pub struct InvalidValue {
    /// Where the value is (`toolOverrides.read.name`); empty for the value
    /// itself.
    pub path: String,
    /// What is wrong, and what was expected.
    pub message: String,
}

impl InvalidValue {
    /// The value at `path` is wrong: `message`.
    ///
    /// ```
    /// let e = loopwright_types::util::InvalidValue::new("grant", "expected a string");
    /// assert_eq!(e.path, "grant");
    /// ```
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            message: message.into(),
        }
    }
}
