//! OAuth 2.1 for remote (streamable HTTP) servers, on rmcp's `auth` module.
//!
//! A hosted server that answers 401 with a `WWW-Authenticate` challenge is
//! signed in to: by a person in a browser ([`login`], `loopwright mcp
//! login NAME`), or, for agents with no person, with client credentials
//! ([`machine`]). The credentials are kept in a [`TokenStore`] (by default
//! [`FileTokenStore`], a 0600 file under the user's config directory) and
//! used, and refreshed, by every later session ([`session`]).
//!
//! - [`config`]: a server entry's `"oauth": {...}`;
//! - [`store`]: where tokens live;
//! - [`login`]: the browser flow through a loopback redirect;
//! - [`machine`]: client credentials (secret or JWT assertion);
//! - [`session`]: the session's HTTP client, 401 and 403 handling;
//! - `endpoint`: which endpoints may receive credentials (https, or http
//!   on loopback for a server on loopback).
pub mod config;
mod endpoint;
pub mod login;
pub mod machine;
mod private_file;
pub mod session;
pub mod store;

pub use config::{JwtAlgorithm, OAUTH_KEYS, OAuthConfig, OAuthGrant};
pub use login::{
    Browser, CALLBACK_PATH, CALLBACK_READ_TIMEOUT, DEFAULT_CLIENT_NAME, LOGIN_TIMEOUT,
    MAX_CALLBACK_CONNECTIONS, MAX_CALLBACK_REQUEST_BYTES,
};
pub use machine::{ASSERTION_LIFETIME, MAX_TOKEN_RESPONSE_BYTES, TOKEN_REQUEST_TIMEOUT};
pub use session::MAX_STEP_UPS;
pub use store::{
    FileTokenStore, MAX_TOKEN_FILE_BYTES, MemoryTokenStore, TOKEN_FILE, TokenStore, TokenStoreError,
};
