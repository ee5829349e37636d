//! `${VAR}` and `${VAR:-default}` in configuration values: the one expander
//! the configuration file, providers (`Providers::from_config`) and MCP
//! servers (`env`, `headers`, OAuth settings) all use, so a value means the
//! same wherever it is written.
//!
//! The rules are [`expand_vars`]'s.
//!
//! Invariant: the work is linear in the text's length (each byte is looked
//! at most [`NESTING_LIMIT`] + 1 times) and the recursion at most
//! [`NESTING_LIMIT`] deep, whatever the text holds.

/// How deep references may nest inside defaults
/// (`${A:-${B:-${C}}}` is two levels below the outer one); deeper text is
/// kept as written.
///
/// ```
/// use loopwright_types::util::{NESTING_LIMIT, expand_vars};
/// let nested = |levels: usize| format!("{}x{}", "${A:-".repeat(levels), "}".repeat(levels));
/// assert_eq!(expand_vars(&nested(NESTING_LIMIT + 1), &|_| None).unwrap(), "x");
/// let too_deep = nested(NESTING_LIMIT + 2);
/// assert_eq!(expand_vars(&too_deep, &|_| None).unwrap(), too_deep);
/// ```
pub const NESTING_LIMIT: usize = 8;

/// A `${NAME}` whose variable is not set and which has no default.
///
/// ```
/// let lookup = |_: &str| None;
/// let err = loopwright_types::util::expand_vars("Bearer ${TOKEN}", &lookup).unwrap_err();
/// assert_eq!(err.name, "TOKEN");
/// assert_eq!(err.to_string(), "environment variable TOKEN is not set");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("environment variable {name} is not set")]
#[non_exhaustive]
pub struct UnsetVariable {
    /// The variable's name, as written.
    pub name: String,
}

/// `text` with every `${NAME}` and `${NAME:-DEFAULT}` replaced by what
/// `lookup` gives; `Err` names the first variable (from the left) that is
/// unset and has no default.
///
/// The rules:
/// - `${NAME}` is NAME's value (empty when NAME is set to the empty
///   string); an unset NAME is an [`UnsetVariable`] naming it.
/// - `${NAME:-DEFAULT}` is NAME's value when it is set and not empty, else
///   DEFAULT. DEFAULT may itself hold references
///   (`${KEY:-${FALLBACK_KEY}}`), expanded only when it is used, so an
///   unset variable in an unused default is no error.
/// - NAME is the text up to the first `:-` or the closing brace, as written:
///   it is neither trimmed nor expanded.
/// - A reference ends at the `}` that balances its `${` (every `${` inside
///   it opens one more level; a `{` alone does not). A `${` that is never
///   balanced, or nested more than [`NESTING_LIMIT`] levels deep, is not a
///   reference: it and the rest of the text are kept as written.
/// - There is no escape: `$`, `\` and `{` are text unless `$` is directly
///   followed by `{`, and a literal `${` cannot be written. (Some values are
///   read twice, by the configuration file and again by the provider or
///   MCP server it configures, so an escape would be undone by the first
///   reading and expanded by the second.)
/// - A variable's value is not expanded again by the same call (a value
///   read twice, as above, is by the second reading).
///
/// ```
/// use loopwright_types::util::expand_vars;
/// let lookup = |name: &str| match name {
///     "TOKEN" => Some("s3cret".to_string()),
///     "EMPTY" => Some(String::new()),
///     _ => None,
/// };
/// assert_eq!(expand_vars("Bearer ${TOKEN}", &lookup).unwrap(), "Bearer s3cret");
/// assert_eq!(expand_vars("${MODE:-ro} ${EMPTY:-x} ${EMPTY}", &lookup).unwrap(), "ro x ");
/// assert_eq!(expand_vars("${KEY:-${TOKEN}}", &lookup).unwrap(), "s3cret");
/// assert_eq!(expand_vars("$TOKEN ${TOKEN", &lookup).unwrap(), "$TOKEN ${TOKEN");
/// assert_eq!(expand_vars("${NOPE}", &lookup).unwrap_err().name, "NOPE");
/// ```
pub fn expand_vars(text: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String, UnsetVariable> {
    expand_at(text, lookup, 0)
}

/// [`expand_vars`] for text `level` references deep.
fn expand_at(
    text: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
    level: usize,
) -> Result<String, UnsetVariable> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let inner_start = &rest[start + 2..];
        let Some(end) = closing_brace(inner_start, NESTING_LIMIT.saturating_sub(level)) else {
            out.push_str(&rest[start..]);
            return Ok(out);
        };
        out.push_str(&resolve(&inner_start[..end], lookup, level)?);
        rest = &inner_start[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The value of one reference, `inner` being what is between `${` and
/// its `}`.
fn resolve(
    inner: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
    level: usize,
) -> Result<String, UnsetVariable> {
    let (name, default) = match inner.split_once(":-") {
        Some((name, default)) => (name, Some(default)),
        None => (inner, None),
    };
    match (lookup(name), default) {
        (Some(value), Some(default)) if value.is_empty() => expand_at(default, lookup, level + 1),
        (Some(value), _) => Ok(value),
        (None, Some(default)) => expand_at(default, lookup, level + 1),
        (None, None) => Err(UnsetVariable {
            name: name.to_owned(),
        }),
    }
}

/// The index in `text` (what follows a `${`) of the `}` that closes it,
/// with at most `room` more `${` levels open inside; `None` when there is
/// no such `}`.
fn closing_brace(text: &str, room: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut open = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'$' if bytes.get(i + 1) == Some(&b'{') => {
                if open == room {
                    return None;
                }
                open += 1;
                i += 1;
            }
            b'}' if open == 0 => return Some(i),
            b'}' => open -= 1,
            _ => {}
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn lookup(name: &str) -> Option<String> {
        match name {
            "A" => Some("alpha".into()),
            "EMPTY" => Some(String::new()),
            "NESTED" => Some("${A}".into()),
            "SPACED " => Some("odd".into()),
            _ => None,
        }
    }

    fn expand(text: &str) -> Result<String, UnsetVariable> {
        expand_vars(text, &lookup)
    }

    fn unset(name: &str) -> Result<String, UnsetVariable> {
        Err(UnsetVariable { name: name.into() })
    }

    #[test]
    fn plain_references_are_replaced_and_repeated_ones_each_time() {
        assert_eq!(expand("x${A}y").unwrap(), "xalphay");
        assert_eq!(expand("k-${A}-${A}").unwrap(), "k-alpha-alpha");
        assert_eq!(expand("plain").unwrap(), "plain");
        assert_eq!(expand("").unwrap(), "");
        assert_eq!(expand("${EMPTY}").unwrap(), "");
    }

    #[test]
    fn an_unset_variable_without_a_default_is_named() {
        assert_eq!(expand("${B}"), unset("B"));
        assert_eq!(expand("a ${MISSING} b ${OTHER}"), unset("MISSING"));
        assert_eq!(expand("${}"), unset(""));
    }

    #[test]
    fn a_default_is_used_when_the_variable_is_unset_or_empty() {
        assert_eq!(expand("${B:-bee}").unwrap(), "bee");
        assert_eq!(expand("${A:-bee}").unwrap(), "alpha");
        assert_eq!(expand("${EMPTY:-d}").unwrap(), "d");
        assert_eq!(expand("${B:-}").unwrap(), "");
        // Only the first `:-` splits; the rest is the default.
        assert_eq!(expand("${B:-x:-y}").unwrap(), "x:-y");
        // The name is taken as written.
        assert_eq!(expand("${SPACED :-d}").unwrap(), "odd");
        assert_eq!(expand("${ A :-d}").unwrap(), "d");
    }

    #[test]
    fn defaults_may_hold_references_expanded_only_when_used() {
        assert_eq!(expand("${B:-${A}}").unwrap(), "alpha");
        assert_eq!(expand("${B:-pre-${C:-${A}}-post}!").unwrap(), "pre-alpha-post!");
        assert_eq!(expand("${A:-${NOPE}}").unwrap(), "alpha");
        assert_eq!(expand("${B:-${NOPE}}"), unset("NOPE"));
        // A brace alone does not nest.
        assert_eq!(expand(r#"${B:-{"k": 1}}"#).unwrap(), r#"{"k": 1}"#);
    }

    #[test]
    fn values_are_not_expanded_again() {
        assert_eq!(expand("${NESTED}").unwrap(), "${A}");
        assert_eq!(expand("${B:-${NESTED}}").unwrap(), "${A}");
    }

    #[test]
    fn there_is_no_escape() {
        assert_eq!(expand("$A $$ $").unwrap(), "$A $$ $");
        assert_eq!(expand("$${A}").unwrap(), "$alpha");
        assert_eq!(expand(r"\${A}").unwrap(), r"\alpha");
        assert_eq!(expand("{A}").unwrap(), "{A}");
    }

    #[test]
    fn an_unbalanced_reference_and_the_rest_are_kept_as_written() {
        assert_eq!(expand("$A ${A").unwrap(), "$A ${A");
        assert_eq!(expand("${A} and ${A ${B}").unwrap(), "alpha and ${A ${B}");
        assert_eq!(expand("${B:-${A}").unwrap(), "${B:-${A}");
        assert_eq!(expand("${").unwrap(), "${");
    }

    #[test]
    fn nesting_beyond_the_limit_is_kept_as_written() {
        let deep = |levels: usize| format!("{}x{}", "${B:-".repeat(levels), "}".repeat(levels));
        assert_eq!(expand(&deep(NESTING_LIMIT + 1)).unwrap(), "x");
        let too_deep = deep(NESTING_LIMIT + 2);
        assert_eq!(expand(&too_deep).unwrap(), too_deep);
        // Hostile text costs time linear in its length, and little stack.
        let hostile = "${B:-".repeat(100_000);
        assert_eq!(expand(&hostile).unwrap(), hostile);
    }
}
