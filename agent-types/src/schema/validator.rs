//! [`Validator`]: a JSON Schema compiled within [`SchemaLimits`].
//!
//! Invariants: no schema is compiled before its size and the subschemas
//! that can apply at one place of a value ([`SchemaLimits::max_visits`])
//! passed; a valid value is found with a check that stops at the first
//! failure, and only an invalid one has its errors (at most
//! [`MAX_ERRORS`]) gathered; [`Validator::check_async`] validates a value
//! whose check could be slow on a blocking thread, and gives up on it at
//! [`SchemaLimits::deadline`].

use std::sync::Arc;
use std::time::Duration;

use jsonschema::PatternOptions;
use serde_json::Value;

use super::bounds::analyse;

/// Errors listed for an invalid value at most (the rest are left out).
pub const MAX_ERRORS: usize = 10;

/// What an invalid value is told when the validator gave no error of its own.
const NO_MATCH: &str = "the value does not match the schema";

/// Why a value did not pass a [`Validator`] (or an output schema). Its
/// text is what the model is told: the errors joined by `; `.
///
/// ```
/// use loopwright_types::schema::CheckError;
/// let e = CheckError::Invalid { errors: vec!["\"a\" is a required property".into()] };
/// assert_eq!(e.to_string(), "\"a\" is a required property");
/// let slow = CheckError::TimedOut { after: std::time::Duration::from_secs(2) };
/// assert_eq!(slow.to_string(), "validating the value took longer than 2000 ms; send a smaller one");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CheckError {
    /// The value does not match: its first errors (at most
    /// [`MAX_ERRORS`]), each with the place in the value it is about.
    #[error("{}", .errors.join("; "))]
    Invalid {
        /// The errors, in the validator's order.
        errors: Vec<String>,
    },
    /// Checking took longer than the limits' deadline
    /// ([`SchemaLimits::deadline`]).
    #[error("validating the value took longer than {} ms; send a smaller one", .after.as_millis())]
    TimedOut {
        /// The deadline.
        after: Duration,
    },
    /// The check's thread failed.
    #[error("the value could not be validated: {reason}")]
    Failed {
        /// What the thread said.
        reason: String,
    },
    /// The schema itself cannot be used (an output schema refused when it
    /// was given), so no value passes.
    #[error("{0}")]
    Schema(SchemaError),
}

impl CheckError {
    fn invalid(message: impl Into<String>) -> Self {
        Self::Invalid {
            errors: vec![message.into()],
        }
    }
}

/// Backtracking steps a `pattern` may take on one string before it fails.
const PATTERN_BACKTRACK_LIMIT: usize = 100_000;

/// Estimated checks (subschema visits times the value's nodes) done on the
/// async worker itself; a costlier check goes to a blocking thread.
const INLINE_CHECKS: u64 = 20_000;

/// What a schema from outside may be.
///
/// ```
/// use loopwright_types::schema::SchemaLimits;
/// let mut limits = SchemaLimits::default();
/// assert_eq!(limits.max_bytes, 1024 * 1024);
/// limits.max_visits = 256;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct SchemaLimits {
    /// The largest schema, as compact JSON, in bytes (default 1 MiB).
    pub max_bytes: usize,
    /// The most subschemas that may apply at one place of a value
    /// (default 4,096).
    pub max_visits: u64,
    /// How long [`Validator::check_async`] waits for one value (default
    /// 2 s).
    pub deadline: Duration,
}

impl Default for SchemaLimits {
    fn default() -> Self {
        Self {
            max_bytes: 1024 * 1024,
            max_visits: 4096,
            deadline: Duration::from_secs(2),
        }
    }
}

/// Why a schema was not compiled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaError {
    /// Larger than [`SchemaLimits::max_bytes`].
    #[error("the schema is larger than {limit} bytes")]
    TooLarge {
        /// The limit.
        limit: usize,
    },
    /// More subschemas can apply at one place of a value than
    /// [`SchemaLimits::max_visits`].
    #[error(
        "the schema is too complex: {visits} or more subschemas can apply at one place {} of a value \
         (the limit is {limit}); unions (anyOf, oneOf, allOf) of references multiply at each level",
        place(*depth)
    )]
    TooComplex {
        /// The count found (the limit plus one when it was stopped there).
        visits: u64,
        /// The limit.
        limit: u64,
        /// How deep in the value that place is (0: the value itself).
        depth: usize,
    },
    /// Too many subschemas and references to count in time.
    #[error("the schema is too complex to check: too many subschemas and references")]
    TooComplexToCheck,
    /// A reference cycle that never descends into the value.
    #[error("the schema's reference at {at} leads back to itself without descending into the value")]
    RefCycle {
        /// The JSON pointer of a subschema on the cycle.
        at: String,
    },
    /// A reference to another document (nothing is fetched).
    #[error(
        "the schema's reference {reference} at {at} names another document; only references within it are followed"
    )]
    ExternalRef {
        /// The reference.
        reference: String,
        /// The JSON pointer of the subschema holding it.
        at: String,
    },
    /// The validator refused it.
    #[error("invalid JSON Schema: {0}")]
    Invalid(String),
}

fn place(depth: usize) -> String {
    match depth {
        0 => "at the top".to_owned(),
        1 => "one level into".to_owned(),
        n => format!("{n} levels into"),
    }
}

/// A compiled JSON Schema whose errors name the place in the value they are
/// about: what the loop checks tool calls and answers with, for other
/// crates that check input the same way (a served agent's MCP arguments).
///
/// ```
/// let v = loopwright_types::schema::Validator::new(&serde_json::json!({
///     "type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]
/// })).unwrap();
/// assert!(v.check(&serde_json::json!({"n": 1})).is_ok());
/// assert!(v.check(&serde_json::json!({"n": "one"})).unwrap_err().to_string().contains("/n"));
/// ```
#[derive(Clone)]
pub struct Validator {
    inner: Arc<jsonschema::Validator>,
    /// The most subschemas that apply at one place of a value.
    visits: u64,
    deadline: Duration,
}

impl std::fmt::Debug for Validator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Validator")
            .field("visits", &self.visits)
            .finish_non_exhaustive()
    }
}

impl Validator {
    /// Compile `schema` within the default [`SchemaLimits`].
    ///
    /// ```
    /// use loopwright_types::schema::{SchemaError, Validator};
    /// // Twenty levels of "anyOf two references to the next level".
    /// let mut defs = serde_json::Map::new();
    /// for i in 0..20 {
    ///     let next = serde_json::json!({"$ref": format!("#/$defs/l{}", i + 1)});
    ///     defs.insert(format!("l{i}"), serde_json::json!({"anyOf": [next.clone(), next]}));
    /// }
    /// defs.insert("l20".into(), serde_json::json!(false));
    /// let schema = serde_json::json!({"$ref": "#/$defs/l0", "$defs": defs});
    /// assert!(matches!(Validator::new(&schema), Err(SchemaError::TooComplex { .. })));
    /// ```
    pub fn new(schema: &Value) -> Result<Self, SchemaError> {
        Self::with_limits(schema, &SchemaLimits::default())
    }

    /// Compile `schema` within `limits`.
    ///
    /// ```
    /// use loopwright_types::schema::{SchemaError, SchemaLimits, Validator};
    /// let schema = serde_json::json!({"type": "string", "description": "x".repeat(100)});
    /// let mut small = SchemaLimits::default();
    /// small.max_bytes = 64;
    /// assert_eq!(Validator::with_limits(&schema, &small).unwrap_err(), SchemaError::TooLarge { limit: 64 });
    /// ```
    pub fn with_limits(schema: &Value, limits: &SchemaLimits) -> Result<Self, SchemaError> {
        if !fits(schema, limits.max_bytes) {
            return Err(SchemaError::TooLarge {
                limit: limits.max_bytes,
            });
        }
        let analysis = analyse(schema, limits)?;
        let inner = jsonschema::options()
            .with_pattern_options(PatternOptions::fancy_regex().backtrack_limit(PATTERN_BACKTRACK_LIMIT))
            .build(schema)
            .map_err(|e| SchemaError::Invalid(e.to_string()))?;
        Ok(Self {
            inner: Arc::new(inner),
            visits: analysis.visits.max(1),
            deadline: limits.deadline,
        })
    }

    /// Check `value` here and now: `Ok`, or [`CheckError::Invalid`] with its
    /// first errors (at most [`MAX_ERRORS`]; the first alone for a value
    /// large enough that listing them could take long), each with the place
    /// in the value it is about.
    ///
    /// ```
    /// use loopwright_types::schema::{CheckError, Validator};
    /// let v = Validator::new(&serde_json::json!({"type": "integer"})).unwrap();
    /// let Err(CheckError::Invalid { errors }) = v.check(&serde_json::json!("x")) else { panic!() };
    /// assert_eq!(errors.len(), 1);
    /// ```
    pub fn check(&self, value: &Value) -> Result<(), CheckError> {
        if self.inner.is_valid(value) {
            return Ok(());
        }
        let describe = |e: jsonschema::ValidationError<'_>| {
            let path = e.instance_path().to_string();
            if path.is_empty() {
                e.to_string()
            } else {
                format!("{e} (at {path})")
            }
        };
        if !nodes_within(value, INLINE_CHECKS / self.visits) {
            // Listing every error of a large value can cost far more than
            // finding one: the first is enough to fix.
            return match self.inner.validate(value) {
                Err(e) => Err(CheckError::invalid(describe(e))),
                Ok(()) => Err(CheckError::invalid(NO_MATCH)),
            };
        }
        let messages: Vec<String> = self
            .inner
            .iter_errors(value)
            .take(MAX_ERRORS)
            .map(describe)
            .collect();
        if messages.is_empty() {
            return Err(CheckError::invalid(NO_MATCH));
        }
        Err(CheckError::Invalid { errors: messages })
    }

    /// [`Self::check`], on a blocking thread when it could be slow (a large
    /// value against a schema of many subschemas), given up after the
    /// limits' deadline with an error saying so.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let v = loopwright_types::schema::Validator::new(&serde_json::json!({"type": "array"})).unwrap();
    /// assert!(v.check_async(&serde_json::json!([1, 2, 3])).await.is_ok());
    /// assert!(v.check_async(&serde_json::json!("no")).await.is_err());
    /// # }
    /// ```
    pub async fn check_async(&self, value: &Value) -> Result<(), CheckError> {
        let budget = INLINE_CHECKS / self.visits;
        if nodes_within(value, budget) {
            return self.check(value);
        }
        let this = self.clone();
        let owned = value.clone();
        let checked = tokio::task::spawn_blocking(move || this.check(&owned));
        match tokio::time::timeout(self.deadline, checked).await {
            Ok(Ok(result)) => result,
            Ok(Err(e)) => Err(CheckError::Failed {
                reason: e.to_string(),
            }),
            Err(_) => Err(CheckError::TimedOut { after: self.deadline }),
        }
    }
}

/// Whether `value` serialises to at most `limit` bytes (stops counting
/// there).
fn fits(value: &Value, limit: usize) -> bool {
    struct Count {
        left: usize,
    }
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.left = self
                .left
                .checked_sub(buf.len())
                .ok_or_else(|| std::io::Error::other("over the limit"))?;
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    serde_json::to_writer(&mut Count { left: limit }, value).is_ok()
}

/// Whether `value` has at most `budget` nodes (stops counting there).
fn nodes_within(value: &Value, budget: u64) -> bool {
    fn count(value: &Value, left: &mut u64) -> bool {
        if *left == 0 {
            return false;
        }
        *left -= 1;
        match value {
            Value::Array(items) => items.iter().all(|v| count(v, left)),
            Value::Object(members) => members.values().all(|v| count(v, left)),
            _ => true,
        }
    }
    let mut left = budget;
    count(value, &mut left)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn errors_are_listed_up_to_the_cap() {
        let v = Validator::new(&json!({"type": "array", "items": {"type": "integer"}})).unwrap();
        let bad: Vec<Value> = (0..50).map(|i| json!(format!("s{i}"))).collect();
        let err = v.check(&Value::Array(bad)).unwrap_err();
        let CheckError::Invalid { errors } = &err else {
            panic!("{err}")
        };
        assert_eq!(errors.len(), MAX_ERRORS, "{err}");
    }

    #[test]
    fn counting_stops_at_the_budget() {
        assert!(nodes_within(&json!([1, 2, 3]), 4));
        assert!(!nodes_within(&json!([1, 2, 3]), 3));
        assert!(fits(&json!("abc"), 5));
        assert!(!fits(&json!("abc"), 4));
    }

    #[tokio::test]
    async fn a_slow_check_is_given_up_at_the_deadline() {
        // Valid, so every item is checked against every branch: big enough
        // to go to a blocking thread and to take far longer than 1 ms there.
        let v = Validator::with_limits(
            &json!({"type": "array", "items": {"anyOf": (0..1000).map(|i| json!({"const": i})).collect::<Vec<_>>()}}),
            &SchemaLimits {
                deadline: Duration::from_millis(1),
                ..SchemaLimits::default()
            },
        )
        .unwrap();
        let value = Value::Array((0..100_000).map(|_| json!(999)).collect());
        let err = v.check_async(&value).await.unwrap_err();
        assert_eq!(
            err,
            CheckError::TimedOut {
                after: Duration::from_millis(1)
            }
        );
        assert!(err.to_string().contains("took longer than 1 ms"), "{err}");
    }
}
