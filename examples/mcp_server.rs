//! A small MCP server of our own, written with rmcp's server side (the code
//! is in `examples/common/demo_server.rs`, which every example can become).
//!
//! ```sh
//! cargo run --example mcp_server                # stdio
//! cargo run --example mcp_server -- --http 3001 # streamable HTTP at http://127.0.0.1:3001/mcp
//! ```
//!
//! Tools: `current_time` (UTC), `word_count`, `add`, `echo`. In HTTP mode it
//! prints `listening on URL` on stdout once it accepts connections (port 0
//! picks a free one).

#[path = "common/demo_server.rs"]
mod demo_server;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    match args
        .iter()
        .position(|a| a == "--http")
        .and_then(|i| args.get(i + 1))
    {
        Some(port) => demo_server::serve_http(port.parse()?).await,
        None => demo_server::serve_stdio().await,
    }
}
