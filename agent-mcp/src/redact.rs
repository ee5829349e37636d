//! Credentials carried in a server's URL or arguments, and keeping them out
//! of error texts.
//!
//! Invariant: no error this crate reports (a connect failure, a tool's error
//! result, which the model reads) contains the password of a server URL's
//! user info or the value of a query parameter whose name looks secret
//! (`?api_key=`, `?token=`): transport errors quote the URL they failed on,
//! and these are replaced by [`REDACTED`].

use crate::{McpServerConfig, McpTransport};

/// What a credential is replaced with.
pub const REDACTED: &str = "[REDACTED]";

/// Whether a variable, header, parameter or flag name says it holds a
/// credential (`*_KEY`, `*TOKEN*`, `*SECRET*`, `*PASSWORD*`, `*AUTH*`,
/// `*APIKEY*`, `*COOKIE*`; case and `-`/`_` do not matter).
///
/// ```
/// use loopwright_mcp::looks_secret;
/// assert!(looks_secret("OPENAI_API_KEY") && looks_secret("Authorization") && looks_secret("X-Api-Key"));
/// assert!(looks_secret("apikey") && looks_secret("Cookie") && looks_secret("access_token"));
/// assert!(!looks_secret("HOME") && !looks_secret("Accept") && !looks_secret("page"));
/// ```
pub fn looks_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase().replace('-', "_");
    upper.ends_with("_KEY")
        || upper == "KEY"
        || [
            "TOKEN", "SECRET", "PASSWORD", "AUTH", "API_KEY", "APIKEY", "COOKIE",
        ]
        .iter()
        .any(|word| upper.contains(word))
}

/// The credentials inside a URL: the password of its user info and the
/// values of query parameters whose names look secret.
///
/// ```
/// use loopwright_mcp::url_secrets;
/// assert_eq!(url_secrets("https://me:pw-123@h/mcp?api_key=k-456&x=1"), ["pw-123", "k-456"]);
/// assert!(url_secrets("https://h/mcp?page=2").is_empty());
/// ```
pub fn url_secrets(url: &str) -> Vec<String> {
    let mut out = Vec::new();
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if let Some((user_info, _)) = authority.rsplit_once('@')
        && let Some((_, password)) = user_info.split_once(':')
        && !password.is_empty()
    {
        out.push(password.to_owned());
    }
    if let Some((_, query)) = url.split_once('?') {
        let query = query.split('#').next().unwrap_or_default();
        out.extend(
            query
                .split('&')
                .filter_map(|pair| pair.split_once('='))
                .filter(|(name, value)| looks_secret(name) && !value.is_empty())
                .map(|(_, value)| value.to_owned()),
        );
    }
    out
}

/// The credentials among a command's arguments: the value after a flag
/// whose name looks secret (`--api-key abc`, `--token=abc`) and the value of
/// a `NAME=value` argument whose name does.
///
/// ```
/// use loopwright_mcp::arg_secrets;
/// let args = ["--api-key", "k-1", "--token=t-2", "GITHUB_TOKEN=g-3", "--verbose", "dir"].map(String::from);
/// assert_eq!(arg_secrets(&args), ["k-1", "t-2", "g-3"]);
/// ```
pub fn arg_secrets(args: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut args = args.iter().peekable();
    while let Some(arg) = args.next() {
        if let Some((name, value)) = arg.split_once('=') {
            if looks_secret(name.trim_start_matches('-')) && !value.is_empty() {
                out.push(value.to_owned());
            }
        } else if arg.starts_with('-')
            && looks_secret(arg.trim_start_matches('-'))
            && let Some(value) = args.next_if(|next| !next.starts_with('-'))
        {
            out.push(value.clone());
        }
    }
    out
}

/// `text` with each of `secrets` replaced by [`REDACTED`].
///
/// ```
/// let secrets = vec!["k-456".to_string()];
/// assert_eq!(loopwright_mcp::redact("GET /mcp?api_key=k-456 failed", &secrets), "GET /mcp?api_key=[REDACTED] failed");
/// ```
pub fn redact(text: &str, secrets: &[String]) -> String {
    let mut out = text.to_owned();
    for secret in secrets.iter().filter(|s| !s.is_empty()) {
        if out.contains(secret.as_str()) {
            out = out.replace(secret.as_str(), REDACTED);
        }
    }
    out
}

impl McpServerConfig {
    /// The credentials in this server's URL or arguments (see the module
    /// docs); errors about this server never contain them.
    ///
    /// ```
    /// let servers = loopwright_mcp::parse_mcp_servers(&serde_json::json!({
    ///     "remote": {"url": "https://h/mcp?token=t-123"}
    /// })).unwrap();
    /// assert_eq!(servers[0].inline_secrets(), ["t-123"]);
    /// ```
    pub fn inline_secrets(&self) -> Vec<String> {
        match &self.transport {
            McpTransport::Stdio(stdio) => arg_secrets(&stdio.args),
            McpTransport::Http(remote) | McpTransport::Sse(remote) | McpTransport::WebSocket(remote) => {
                url_secrets(&remote.url)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flag_followed_by_another_flag_has_no_value() {
        let args = ["--no-auth", "--port", "80"].map(String::from);
        assert!(arg_secrets(&args).is_empty());
    }

    #[test]
    fn fragments_and_empty_values_are_not_secrets() {
        assert_eq!(url_secrets("wss://h/ws?token=&key=k-9#frag"), ["k-9"]);
        assert!(url_secrets("https://user@h/mcp").is_empty());
    }
}
