//! Tokens for agents with no person (the client-credentials extension,
//! `io.modelcontextprotocol/oauth-client-credentials`): the client
//! authenticates itself with its secret (`client_secret_basic` or
//! `client_secret_post`, as the authorization server's metadata says; rmcp's)
//! or with a JWT assertion (RFC 7523, `private_key_jwt`) signed here with
//! ring (ES256 or RS256 from a PKCS#8 PEM key).
//!
//! Invariants: the assertion's `iss` and `sub` are the client id, its `aud`
//! the authorization server's issuer, it expires after
//! [`ASSERTION_LIFETIME`] and carries a random `jti`; every token request
//! names the resource (RFC 8707); the assertion is posted to the metadata's
//! token endpoint only (a redirect is refused, not followed), the answer
//! read up to [`MAX_TOKEN_RESPONSE_BYTES`] within [`TOKEN_REQUEST_TIMEOUT`]
//! (rmcp bounds the secret's exchange alike); a token's `expires_in`, however
//! large, never overflows the clock; neither the secret, the key nor the
//! token appears in an error.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use ring::rand::{SecureRandom, SystemRandom};
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, RSA_PKCS1_SHA256, RsaKeyPair};
use rmcp::transport::auth::{AuthorizationManager, ClientCredentialsConfig, OAuthTokenResponse};
use serde_json::{Value, json};

use super::{JwtAlgorithm, OAuthConfig};

/// How long a signed client assertion is valid.
pub const ASSERTION_LIFETIME: Duration = Duration::from_secs(300);
/// The longest token endpoint answer read (as rmcp reads its own).
///
/// ```
/// assert_eq!(loopwright_mcp::oauth::MAX_TOKEN_RESPONSE_BYTES, 1024 * 1024);
/// ```
pub const MAX_TOKEN_RESPONSE_BYTES: usize = 1024 * 1024;
/// How long a token request may take (as rmcp's own).
///
/// ```
/// assert_eq!(loopwright_mcp::oauth::TOKEN_REQUEST_TIMEOUT.as_secs(), 30);
/// ```
pub const TOKEN_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// An access token and when it stops being usable.
#[derive(Clone)]
pub(crate) struct MachineToken {
    pub(crate) access_token: String,
    pub(crate) expires_at: Option<SystemTime>,
}

impl std::fmt::Debug for MachineToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MachineToken")
            .field("access_token", &crate::REDACTED)
            .field("expires_at", &self.expires_at)
            .finish()
    }
}

impl MachineToken {
    /// Usable for at least another minute.
    pub(crate) fn fresh(&self) -> bool {
        self.expires_at
            .is_none_or(|at| at > SystemTime::now() + Duration::from_secs(60))
    }
}

/// Get a token for `url` with the client credentials of `config`,
/// discovering the authorization server from `challenge` (the 401's
/// `WWW-Authenticate`).
pub(crate) async fn obtain(
    url: &str,
    config: &OAuthConfig,
    challenge: Option<&str>,
) -> Result<MachineToken, String> {
    let client_id = config
        .client_id
        .clone()
        .ok_or("the client-credentials grant needs a `clientId`")?;
    crate::http::ensure_crypto_provider();
    let mut manager = AuthorizationManager::new(url).await.map_err(|e| e.to_string())?;
    let metadata = super::endpoint::checked_metadata(&manager, url, challenge, false).await?;
    let resource = resource_of(url);
    let token = if let Some(pem) = private_key(config).await? {
        let issuer = metadata
            .issuer
            .clone()
            .ok_or("the authorization server's metadata names no issuer, the audience of a JWT assertion")?;
        let assertion = sign_assertion(&client_id, &issuer, &pem, config.signing_algorithm)?;
        jwt_exchange(&metadata.token_endpoint, &assertion, &resource, &config.scopes).await?
    } else {
        let client_secret = config
            .client_secret
            .clone()
            .ok_or("the client-credentials grant needs a `clientSecret` or a `privateKey`")?;
        manager.set_metadata(metadata);
        let credentials = ClientCredentialsConfig::ClientSecret {
            client_id,
            client_secret,
            scopes: config.scopes.clone(),
            resource: Some(resource),
        };
        manager
            .validate_client_credentials_metadata(&credentials)
            .and_then(|()| manager.configure_client_credentials(&credentials))
            .map_err(|e| e.to_string())?;
        manager
            .exchange_client_credentials(&credentials)
            .await
            .map_err(|e| e.to_string())?
    };
    machine_token(&token)
}

/// The resource indicator of a server URL: the URL without its fragment.
fn resource_of(url: &str) -> String {
    url.split('#').next().unwrap_or(url).to_owned()
}

/// The PEM key of the config (inline, or read from its file).
async fn private_key(config: &OAuthConfig) -> Result<Option<String>, String> {
    if let Some(pem) = &config.private_key {
        return Ok(Some(pem.clone()));
    }
    let Some(path) = config.private_key_file.clone() else {
        return Ok(None);
    };
    // A regular file only (a FIFO would block, a device never end), as
    // every file a person names.
    let read = {
        let path = path.clone();
        tokio::task::spawn_blocking(move || {
            loopwright_types::named_file::read_text(&path, loopwright_types::named_file::MAX_TEXT_FILE_BYTES)
        })
    };
    read.await
        .map_err(|e| e.to_string())
        .and_then(|read| read.map_err(|e| e.to_string()))
        .map(Some)
        .map_err(|e| format!("cannot read the private key {}: {e}", path.display()))
}

/// The DER bytes of a PEM block.
fn pem_der(pem: &str) -> Result<Vec<u8>, String> {
    let body: String = pem
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("-----"))
        .collect();
    STANDARD
        .decode(body)
        .map_err(|_| "the private key is not PEM (base64 between BEGIN and END lines)".to_owned())
}

/// Sign a client assertion (see the module docs).
pub(crate) fn sign_assertion(
    client_id: &str,
    audience: &str,
    pem: &str,
    algorithm: JwtAlgorithm,
) -> Result<String, String> {
    let rng = SystemRandom::new();
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_err(|e| e.to_string())?
        .as_secs();
    let mut jti = [0u8; 16];
    rng.fill(&mut jti)
        .map_err(|_| "no randomness for the assertion's jti")?;
    let header = json!({"alg": algorithm.name(), "typ": "JWT"});
    let claims = json!({
        "iss": client_id, "sub": client_id, "aud": audience,
        "iat": now, "exp": now + ASSERTION_LIFETIME.as_secs(),
        "jti": jti.iter().map(|b| format!("{b:02x}")).collect::<String>(),
    });
    let input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let der = pem_der(pem)?;
    let bad_key = |what: &str| format!("the private key is not a PKCS#8 {what} key");
    let signature = match algorithm {
        JwtAlgorithm::Es256 => EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &der, &rng)
            .map_err(|_| bad_key("P-256"))?
            .sign(&rng, input.as_bytes())
            .map_err(|_| "signing the assertion failed")?
            .as_ref()
            .to_vec(),
        JwtAlgorithm::Rs256 => {
            let key = RsaKeyPair::from_pkcs8(&der).map_err(|_| bad_key("RSA"))?;
            let mut out = vec![0; key.public().modulus_len()];
            key.sign(&RSA_PKCS1_SHA256, &rng, input.as_bytes(), &mut out)
                .map_err(|_| "signing the assertion failed")?;
            out
        }
    };
    Ok(format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature)))
}

/// The token request with a JWT assertion (no client id in the body: the
/// assertion names the client).
async fn jwt_exchange(
    token_endpoint: &str,
    assertion: &str,
    resource: &str,
    scopes: &[String],
) -> Result<OAuthTokenResponse, String> {
    let body = {
        let mut form = url::form_urlencoded::Serializer::new(String::new());
        form.append_pair("grant_type", "client_credentials")
            .append_pair(
                "client_assertion_type",
                "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
            )
            .append_pair("client_assertion", assertion)
            .append_pair("resource", resource);
        if !scopes.is_empty() {
            form.append_pair("scope", &scopes.join(" "));
        }
        form.finish()
    };
    let (status, bytes) = post_form(token_endpoint, body).await?;
    let body: Value = serde_json::from_slice(&bytes)
        .map_err(|e| format!("the token endpoint answered {status} with no JSON: {e}"))?;
    if !status.is_success() {
        let error = body
            .get("error")
            .and_then(Value::as_str)
            .unwrap_or("unknown error");
        return Err(format!(
            "the token endpoint refused the assertion ({status}): {error}"
        ));
    }
    serde_json::from_value(body)
        .map_err(|e| format!("the token endpoint's answer is not a token response: {e}"))
}

/// POST `body` (a form) to the token endpoint: its status and answer,
/// read up to [`MAX_TOKEN_RESPONSE_BYTES`]; a redirect is an error (the
/// assertion goes to the endpoint the metadata names and nowhere else).
async fn post_form(token_endpoint: &str, body: String) -> Result<(reqwest::StatusCode, Vec<u8>), String> {
    crate::http::ensure_crypto_provider();
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(TOKEN_REQUEST_TIMEOUT)
        .build()
        .map_err(|e| format!("no HTTP client for the token request: {e}"))?;
    let mut response = client
        .post(token_endpoint)
        .header("content-type", "application/x-www-form-urlencoded")
        .header("accept", "application/json")
        .body(body)
        .send()
        .await
        .map_err(|e| format!("token request to {token_endpoint} failed: {e}"))?;
    let status = response.status();
    if status.is_redirection() {
        return Err(format!(
            "the token endpoint {token_endpoint} answered {status} (a redirect): not followed"
        ));
    }
    let mut bytes = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| format!("reading the token endpoint's answer failed: {e}"))?
    {
        if bytes.len() + chunk.len() > MAX_TOKEN_RESPONSE_BYTES {
            return Err(format!(
                "the token endpoint's answer is larger than {} KiB, the most read",
                MAX_TOKEN_RESPONSE_BYTES / 1024
            ));
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok((status, bytes))
}

/// The token and its expiry out of a token response.
fn machine_token(token: &OAuthTokenResponse) -> Result<MachineToken, String> {
    let value = serde_json::to_value(token).map_err(|e| e.to_string())?;
    let access_token = value
        .get("access_token")
        .and_then(Value::as_str)
        .ok_or("the token response has no access_token")?
        .to_owned();
    // An absurd lifetime (u64::MAX seconds) would overflow the clock: such
    // a token is taken as having no known expiry, and is replaced when the
    // server refuses it (a 401 gets a new one).
    let expires_at = value
        .get("expires_in")
        .and_then(Value::as_u64)
        .and_then(|s| SystemTime::now().checked_add(Duration::from_secs(s)));
    Ok(MachineToken {
        access_token,
        expires_at,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use ring::signature::{ECDSA_P256_SHA256_FIXED, KeyPair, UnparsedPublicKey};

    use super::*;

    #[test]
    fn an_es256_assertion_verifies_and_names_the_client() {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        let pem = format!(
            "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
            STANDARD.encode(pkcs8.as_ref())
        );
        let jwt = sign_assertion("client-7", "https://as.example", &pem, JwtAlgorithm::Es256).unwrap();
        let parts: Vec<&str> = jwt.split('.').collect();
        assert_eq!(parts.len(), 3);
        let claims: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
        assert_eq!(
            (claims["iss"].as_str(), claims["sub"].as_str()),
            (Some("client-7"), Some("client-7"))
        );
        assert_eq!(claims["aud"], "https://as.example");
        let key = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng).unwrap();
        let public = UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, key.public_key().as_ref().to_vec());
        let signed = format!("{}.{}", parts[0], parts[1]);
        public
            .verify(signed.as_bytes(), &URL_SAFE_NO_PAD.decode(parts[2]).unwrap())
            .unwrap();
    }

    #[test]
    fn a_bad_key_is_an_error_without_the_key() {
        let e = sign_assertion(
            "c",
            "a",
            "-----BEGIN PRIVATE KEY-----\nc2VjcmV0\n-----END PRIVATE KEY-----",
            JwtAlgorithm::Es256,
        )
        .unwrap_err();
        assert!(e.contains("PKCS#8") && !e.contains("c2VjcmV0"), "{e}");
    }
}
