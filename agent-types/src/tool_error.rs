//! [`ToolError`]: why a tool call failed, as the loop tells the model.
//!
//! Invariant: any error converts into it with `?`, keeping its causes, so a
//! tool never has to flatten an error to text before the model reads it.

use std::fmt;

/// Why a tool call failed. The agent loop turns it into an error result the
/// model can read.
///
/// `?` converts any `std::error::Error + Send + Sync` into it (as
/// [`ToolError::Other`], keeping the error and its causes), so a tool's body
/// can use `?` on I/O, HTTP or parsing errors alike; a boxed error goes
/// through [`ToolError::boxed`] (`.map_err(ToolError::boxed)?`), an
/// `anyhow::Error` through `.map_err(|e| ToolError::boxed(e.into()))?`. For
/// that reason it is not itself a `std::error::Error` (as with
/// `anyhow::Error`); it converts into `Box<dyn std::error::Error + Send + Sync>`.
///
/// ```
/// use loopwright_types::ToolError;
/// fn read(path: &str) -> Result<String, ToolError> {
///     if path.starts_with('/') {
///         return Err(ToolError::invalid_input("path must be relative"));
///     }
///     Ok(std::fs::read_to_string(path)?) // io::Error -> ToolError
/// }
/// assert_eq!(read("/etc").unwrap_err().to_string(), "invalid input: path must be relative");
/// assert!(read("no/such/file").unwrap_err().to_string().contains("No such file"));
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum ToolError {
    /// The input made no sense to the tool.
    InvalidInput(String),
    /// The tool ran and failed.
    Execution(String),
    /// The call was cancelled.
    Cancelled,
    /// Any other error, with its causes.
    Other(Box<dyn std::error::Error + Send + Sync>),
}

impl ToolError {
    /// An [`ToolError::InvalidInput`].
    pub fn invalid_input(message: impl fmt::Display) -> Self {
        Self::InvalidInput(message.to_string())
    }

    /// An [`ToolError::Execution`].
    ///
    /// ```
    /// let e = loopwright_types::ToolError::execution("disk full");
    /// assert_eq!(e.to_string(), "disk full");
    /// ```
    pub fn execution(message: impl fmt::Display) -> Self {
        Self::Execution(message.to_string())
    }

    /// An [`ToolError::Other`] from a boxed error.
    ///
    /// ```
    /// let boxed: Box<dyn std::error::Error + Send + Sync> = "no route".into();
    /// assert_eq!(loopwright_types::ToolError::boxed(boxed).to_string(), "no route");
    /// ```
    pub fn boxed(error: Box<dyn std::error::Error + Send + Sync>) -> Self {
        Self::Other(error)
    }
}

impl fmt::Display for ToolError {
    /// The message, with an `Other` error's causes after colons.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidInput(m) => write!(f, "invalid input: {m}"),
            Self::Execution(m) => f.write_str(m),
            Self::Cancelled => f.write_str("tool call cancelled"),
            Self::Other(e) => f.write_str(&crate::util::error_chain(e.as_ref())),
        }
    }
}

impl<E: std::error::Error + Send + Sync + 'static> From<E> for ToolError {
    fn from(error: E) -> Self {
        Self::Other(Box::new(error))
    }
}

impl From<ToolError> for Box<dyn std::error::Error + Send + Sync> {
    fn from(error: ToolError) -> Self {
        match error {
            ToolError::Other(e) => e,
            other => other.to_string().into(),
        }
    }
}

impl From<ToolError> for Box<dyn std::error::Error> {
    fn from(error: ToolError) -> Self {
        let sendable: Box<dyn std::error::Error + Send + Sync> = error.into();
        sendable
    }
}
