//! `loopwright dev`: `loopwright serve` with REST and the pages on one
//! loopback address (`--listen`, default 127.0.0.1:4111), runs kept in the
//! default SQLite store unless one is named, and, with `--token`, a new
//! random key asked of every request and put in the printed address.
//!
//! Invariant: it is a preset of `loopwright serve`, never a second server:
//! whatever `serve` checks (the Host and Origin of a loopback bind, the
//! keys, the limits) `dev` checks alike.

use std::io::Read;

use clap::ArgAction;

use crate::args::{AgentArgs, ServeArgs, parse_addr};
use crate::exit::Failure;
use crate::serve::{Dev, serve_as};

/// `loopwright dev`: where it listens, whether it asks for a key, then the
/// agents' settings.
#[derive(Debug, clap::Args)]
pub struct DevArgs {
    /// Where the pages and the REST surface listen: PORT (on 127.0.0.1) or
    /// HOST:PORT [default: 4111].
    #[arg(long, value_name = "ADDR", value_parser = parse_addr)]
    pub listen: Option<std::net::SocketAddr>,

    /// Ask every request for a key: a new random one, printed in the
    /// address to open (`#token=...`, which the page keeps in its tab).
    #[arg(long)]
    pub token: bool,

    /// Also serve OpenAI Chat Completions and Responses at http://ADDR/v1.
    #[arg(long, value_name = "ADDR", value_parser = parse_addr, action = ArgAction::Append)]
    pub openai: Vec<std::net::SocketAddr>,

    /// Offer this model too (PROVIDER/MODEL, repeatable) in the
    /// playground's model list, beside each agent's own models.
    #[arg(long, value_name = "MODEL", action = ArgAction::Append)]
    pub offer_model: Vec<String>,

    /// The agents' settings, as for `loopwright` (no prompt).
    #[command(flatten)]
    pub run: AgentArgs,
}

/// Where `loopwright dev` listens when not told.
pub const DEV_PORT: u16 = 4111;

/// Serve the agents with the pages until stopped.
pub async fn run(args: DevArgs) -> u8 {
    let token = match args.token.then(random_token).transpose() {
        Ok(token) => token,
        Err(failure) => {
            eprintln!("loopwright dev: {}", failure.message);
            return failure.status;
        }
    };
    let listen = args
        .listen
        .unwrap_or_else(|| std::net::SocketAddr::from(([127, 0, 0, 1], DEV_PORT)));
    serve_as(serve_args(args, listen), Some(Dev { token })).await
}

/// The `serve` flags `dev` stands for.
fn serve_args(args: DevArgs, listen: std::net::SocketAddr) -> ServeArgs {
    ServeArgs {
        openai: args.openai,
        anthropic: Vec::new(),
        mcp_http: Vec::new(),
        mcp_stdio: false,
        rest: vec![listen],
        a2a: Vec::new(),
        ui: true,
        offer_model: args.offer_model,
        concurrency: None,
        queue: None,
        run_lease: None,
        retention: None,
        restate_admin: None,
        restate_ingress: None,
        restate_listen: None,
        restate_advertise: None,
        restate_suspend_after: None,
        max_connections: None,
        header_read_timeout: None,
        idle_timeout: None,
        body_limit: None,
        item_limit: None,
        mcp_sessions: None,
        mcp_session_idle: None,
        api_key_env: Vec::new(),
        allowed_hosts: Vec::new(),
        shutdown_grace: None,
        run: args.run,
    }
}

/// 128 bits from the system's randomness, in hex (no randomness, no key:
/// a guessable key would be worse than the refusal).
fn random_token() -> Result<String, Failure> {
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(|e| Failure::usage(format!("--token: cannot read /dev/urandom for a key: {e}")))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}
