//! [`OAuthConfig`]: a server entry's `"oauth": {...}`.
//!
//! Every key is optional; string values may hold `${VAR}` references,
//! resolved when the server is connected (a secret never sits in the file).
//! Unknown keys and values of the wrong type are errors naming the key.

use loopwright_types::util::InvalidValue;
use serde_json::{Map, Value};

/// Keys an `oauth` object may hold.
///
/// ```
/// assert!(loopwright_mcp::OAUTH_KEYS.contains(&"clientMetadataUrl"));
/// ```
pub const OAUTH_KEYS: &[&str] = &[
    "clientId",
    "clientSecret",
    "scopes",
    "redirectPort",
    "clientMetadataUrl",
    "clientName",
    "grant",
    "privateKey",
    "privateKeyFile",
    "signingAlgorithm",
];

/// How this client gets its tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum OAuthGrant {
    /// A person signs in in a browser (`loopwright mcp login NAME`), with
    /// PKCE; tokens are refreshed from then on. The default.
    #[default]
    AuthorizationCode,
    /// No person: the client authenticates itself (the client-credentials
    /// extension), with its secret or a signed JWT assertion
    /// (`privateKey`); for agents running unattended, e.g. under `serve`.
    ClientCredentials,
}

/// The signing algorithm of a JWT client assertion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum JwtAlgorithm {
    /// ECDSA P-256 with SHA-256 (the default).
    #[default]
    Es256,
    /// RSASSA-PKCS1-v1_5 with SHA-256.
    Rs256,
}

impl JwtAlgorithm {
    /// The JOSE name (`ES256`, `RS256`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Es256 => "ES256",
            Self::Rs256 => "RS256",
        }
    }

    /// Parse a JOSE name.
    ///
    /// ```
    /// use loopwright_mcp::oauth::JwtAlgorithm;
    /// assert_eq!(JwtAlgorithm::parse("RS256"), Some(JwtAlgorithm::Rs256));
    /// assert_eq!(JwtAlgorithm::parse("HS256"), None);
    /// ```
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "ES256" => Some(Self::Es256),
            "RS256" => Some(Self::Rs256),
            _ => None,
        }
    }
}

/// OAuth settings of one server (all optional).
///
/// ```
/// let v = serde_json::json!({"clientId": "my-app", "clientSecret": "${APP_SECRET}", "scopes": "read write", "redirectPort": 8765});
/// let c = loopwright_mcp::OAuthConfig::from_json(&v).unwrap();
/// assert_eq!(c.client_id.as_deref(), Some("my-app"));
/// assert_eq!(c.scopes, ["read", "write"]);
/// assert_eq!(c.redirect_port, Some(8765));
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct OAuthConfig {
    /// A client registered with the authorization server beforehand; with
    /// none, a client metadata document (`client_metadata_url`) or dynamic
    /// registration is used, whichever the server offers.
    pub client_id: Option<String>,
    /// The pre-registered client's secret (use `${VAR}`).
    pub client_secret: Option<String>,
    /// Scopes to ask for; when empty, those the server's challenge names,
    /// else those its metadata supports, else none.
    pub scopes: Vec<String>,
    /// The loopback port of the login flow's redirect
    /// (`http://127.0.0.1:PORT/callback`); a free one when unset.
    pub redirect_port: Option<u16>,
    /// The HTTPS URL of this client's metadata document (a client ID
    /// metadata document, used where the server supports them).
    pub client_metadata_url: Option<String>,
    /// The client name given in dynamic registration.
    pub client_name: Option<String>,
    /// How tokens are obtained.
    pub grant: OAuthGrant,
    /// The PEM (PKCS#8) private key of a JWT client assertion
    /// (client credentials; use `${VAR}`).
    pub private_key: Option<String>,
    /// A file holding that key.
    pub private_key_file: Option<std::path::PathBuf>,
    /// The assertion's signing algorithm.
    pub signing_algorithm: JwtAlgorithm,
}

impl OAuthConfig {
    /// Parse an `oauth` object (see [`OAUTH_KEYS`]); the error names the
    /// key that is wrong.
    ///
    /// ```
    /// let bad = loopwright_mcp::OAuthConfig::from_json(&serde_json::json!({"clientid": "x"})).unwrap_err();
    /// assert_eq!(bad.path, "clientid");
    /// assert!(bad.to_string().contains("unknown key (known: "), "{bad}");
    /// ```
    pub fn from_json(value: &Value) -> Result<Self, InvalidValue> {
        let obj = value
            .as_object()
            .ok_or_else(|| InvalidValue::new("", "must be an object"))?;
        if let Some(unknown) = obj.keys().find(|k| !OAUTH_KEYS.contains(&k.as_str())) {
            return Err(InvalidValue::new(
                unknown.as_str(),
                format!("unknown key (known: {})", OAUTH_KEYS.join(", ")),
            ));
        }
        let grant = match string(obj, "grant")?.as_deref() {
            None | Some("authorization_code") => OAuthGrant::AuthorizationCode,
            Some("client_credentials") => OAuthGrant::ClientCredentials,
            Some(other) => {
                return Err(InvalidValue::new(
                    "grant",
                    format!("expected \"authorization_code\" or \"client_credentials\", got \"{other}\""),
                ));
            }
        };
        let signing_algorithm = match string(obj, "signingAlgorithm")? {
            None => JwtAlgorithm::default(),
            Some(name) => JwtAlgorithm::parse(&name).ok_or_else(|| {
                InvalidValue::new("signingAlgorithm", format!("expected ES256 or RS256, got {name}"))
            })?,
        };
        let redirect_port = match obj.get("redirectPort") {
            None | Some(Value::Null) => None,
            Some(v) => Some(v.as_u64().and_then(|p| u16::try_from(p).ok()).ok_or_else(|| {
                InvalidValue::new("redirectPort", format!("expected a port number, got {v}"))
            })?),
        };
        let scopes = match obj.get("scopes") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::String(s)) => s.split_whitespace().map(str::to_string).collect(),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| {
                    v.as_str()
                        .map(str::to_string)
                        .ok_or_else(|| InvalidValue::new("scopes", "expected strings"))
                })
                .collect::<Result<_, _>>()?,
            Some(other) => {
                return Err(InvalidValue::new(
                    "scopes",
                    format!("expected a string or an array, got {other}"),
                ));
            }
        };
        Ok(Self {
            client_id: string(obj, "clientId")?,
            client_secret: string(obj, "clientSecret")?,
            scopes,
            redirect_port,
            client_metadata_url: string(obj, "clientMetadataUrl")?,
            client_name: string(obj, "clientName")?,
            grant,
            private_key: string(obj, "privateKey")?,
            private_key_file: string(obj, "privateKeyFile")?.map(Into::into),
            signing_algorithm,
        })
    }

    /// The same settings with every `${VAR}` resolved by `lookup`.
    pub(crate) fn resolved(
        &self,
        server: &str,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, crate::McpError> {
        let resolve = |value: &Option<String>| {
            value
                .as_deref()
                .map(|v| crate::interpolate(server, v, lookup))
                .transpose()
        };
        Ok(Self {
            client_id: resolve(&self.client_id)?,
            client_secret: resolve(&self.client_secret)?,
            client_metadata_url: resolve(&self.client_metadata_url)?,
            private_key: resolve(&self.private_key)?,
            ..self.clone()
        })
    }

    /// The secrets this config holds (never in an error or a log).
    pub(crate) fn secrets(&self) -> Vec<String> {
        [&self.client_secret, &self.private_key]
            .into_iter()
            .flatten()
            .filter(|s| !s.is_empty())
            .cloned()
            .collect()
    }
}

fn string(obj: &Map<String, Value>, key: &str) -> Result<Option<String>, InvalidValue> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(InvalidValue::new(key, format!("expected a string, got {other}"))),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use serde_json::json;

    use super::*;

    #[test]
    fn every_key_parses_and_secrets_resolve() {
        let c = OAuthConfig::from_json(&json!({
            "clientId": "id", "clientSecret": "${S}", "scopes": ["a", "b"], "redirectPort": 9,
            "clientMetadataUrl": "https://c.example/meta.json", "clientName": "n",
            "grant": "client_credentials", "privateKeyFile": "/k.pem", "signingAlgorithm": "RS256"
        }))
        .unwrap();
        assert_eq!(c.grant, OAuthGrant::ClientCredentials);
        assert_eq!(c.signing_algorithm, JwtAlgorithm::Rs256);
        let r = c.resolved("s", &|_| Some("sec".into())).unwrap();
        assert_eq!(r.client_secret.as_deref(), Some("sec"));
        assert_eq!(r.secrets(), ["sec"]);
    }

    #[test]
    fn wrong_types_name_the_key() {
        for (v, key) in [
            (json!({"redirectPort": 70000}), "redirectPort"),
            (json!({"scopes": 3}), "scopes"),
            (json!({"grant": "password"}), "grant"),
            (json!({"clientId": 1}), "clientId"),
        ] {
            let e = OAuthConfig::from_json(&v).unwrap_err();
            assert_eq!(e.path, key, "{e}");
        }
    }
}
