//! `${VAR}` / `${VAR:-default}` interpolation (loopwright-types' one
//! expander, with the server's name in its error) and the environment a
//! stdio server is started with.
//!
//! Invariant: a server gets only the variables its config names plus
//! [`SAFE_BASE_ENV`]; secrets of the host process never leak to it.

use std::collections::BTreeMap;

use crate::error::McpError;

/// Host variables every stdio server inherits: what a program needs to find
/// executables, its home, its locale and a temp dir. Nothing secret.
pub const SAFE_BASE_ENV: &[&str] = &[
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TMPDIR", "TZ",
];

/// Replace `${VAR}` and `${VAR:-default}` in `text` using `lookup`, by
/// the one set of rules every configuration of the workspace uses (the
/// configuration file's and providers' too).
///
/// A variable that is unset (and, with `:-`, also an empty one) takes the
/// default, which may hold references itself; without a default that is
/// [`McpError::MissingVariable`]. Text that is not a complete `${...}` is
/// kept as it is, and there is no escape.
///
/// ```
/// let lookup = |name: &str| (name == "TOKEN").then(|| "s3cret".to_string());
/// let out = loopwright_mcp::interpolate("gh", "Bearer ${TOKEN} ${MODE:-ro}", &lookup).unwrap();
/// assert_eq!(out, "Bearer s3cret ro");
/// let err = loopwright_mcp::interpolate("gh", "${NOPE}", &lookup).unwrap_err();
/// assert_eq!(err.to_string(), "mcp server gh: environment variable NOPE is not set");
/// ```
pub fn interpolate(
    server: &str,
    text: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<String, McpError> {
    loopwright_types::util::expand_vars(text, lookup).map_err(|unset| McpError::MissingVariable {
        server: server.to_string(),
        variable: unset.name,
    })
}

/// Interpolate every value of a map (env or headers).
pub(crate) fn interpolate_map(
    server: &str,
    map: &BTreeMap<String, String>,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<BTreeMap<String, String>, McpError> {
    map.iter()
        .map(|(k, v)| Ok((k.clone(), interpolate(server, v, lookup)?)))
        .collect()
}

/// The process environment as a lookup function.
pub(crate) fn process_lookup(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// The full environment of a stdio server: [`SAFE_BASE_ENV`] taken from the
/// host (when set) overlaid with the server's own, already resolved, `env`.
///
/// ```
/// use std::collections::BTreeMap;
/// let lookup = |name: &str| match name {
///     "PATH" => Some("/bin".to_string()),
///     "OPENAI_API_KEY" => Some("sk-secret".to_string()),
///     _ => None,
/// };
/// let own = BTreeMap::from([("DEBUG".to_string(), "1".to_string())]);
/// let env = loopwright_mcp::scoped_env(&own, &lookup);
/// assert_eq!(env.get("PATH").map(String::as_str), Some("/bin"));
/// assert_eq!(env.get("DEBUG").map(String::as_str), Some("1"));
/// assert!(!env.contains_key("OPENAI_API_KEY"));
/// ```
pub fn scoped_env(
    own: &BTreeMap<String, String>,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> BTreeMap<String, String> {
    let mut env: BTreeMap<String, String> = SAFE_BASE_ENV
        .iter()
        .filter_map(|name| lookup(name).map(|v| ((*name).to_string(), v)))
        .collect();
    env.extend(own.iter().map(|(k, v)| (k.clone(), v.clone())));
    env
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    fn lookup(name: &str) -> Option<String> {
        match name {
            "A" => Some("alpha".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    #[test]
    fn missing_variable_names_server_and_variable() {
        match interpolate("srv", "a ${MISSING} b", &lookup) {
            Err(McpError::MissingVariable { server, variable }) => {
                assert_eq!((server.as_str(), variable.as_str()), ("srv", "MISSING"));
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn scoped_env_keeps_only_base_and_own() {
        let host = |name: &str| match name {
            "HOME" => Some("/home/u".to_string()),
            "AWS_SECRET_ACCESS_KEY" => Some("x".to_string()),
            _ => None,
        };
        let own = BTreeMap::from([("HOME".to_string(), "/srv".to_string())]);
        let env = scoped_env(&own, &host);
        assert_eq!(env.len(), 1);
        assert_eq!(env["HOME"], "/srv");
    }
}
