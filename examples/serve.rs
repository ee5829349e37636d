//! An agent served to other programs: as an OpenAI-compatible model, as an
//! MCP server's tool and over REST, each behind its own concurrency limit,
//! until Ctrl-C (or SIGTERM) stops it cleanly.
//!
//! ```sh
//! ANTHROPIC_API_KEY=... cargo run --example serve            # ports 8080 (OpenAI), 8081 (MCP), 8082 (REST)
//! cargo run --example serve -- 0                             # any free ports
//! ```
//!
//! Then, from any OpenAI client:
//!
//! ```python
//! from openai import OpenAI
//! client = OpenAI(base_url="http://127.0.0.1:8080/v1", api_key="unused")
//! print(client.chat.completions.create(model="counter", messages=[{"role": "user", "content": "Count the words of 'to be or not to be'"}]).choices[0].message.content)
//! ```
//!
//! The model comes from the environment as in the quickstart
//! (`LOOPWRIGHT_MODEL`, a provider key, or a local server).

use std::net::SocketAddr;

use loopwright::serve::{Serve, ServedAgent};
use loopwright::{Agent, tool_fn};

#[path = "common/model.rs"]
mod model;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Text {
    /// The text to count the words of.
    text: String,
}

#[tokio::main]
async fn main() {
    std::process::exit(run().await);
}

async fn run() -> i32 {
    let stop = stop_requested();
    let base: u16 = std::env::args()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(8080);
    let port = |offset: u16| SocketAddr::from(([127, 0, 0, 1], if base == 0 { 0 } else { base + offset }));
    let (model, selector) = match model::model_from_env().await {
        Ok(found) => found,
        Err(help) => {
            eprintln!("{help}");
            return 2;
        }
    };
    let words = tool_fn("word_count", "Count the words of a text.", |t: Text| async move {
        Ok(t.text.split_whitespace().count().to_string())
    });
    let agent = Agent::builder(model)
        .name("counter")
        .tool(words)
        .system("You count words with the word_count tool. Answer with the number and a short sentence.")
        .build();
    let running = Serve::new()
        .agent(ServedAgent::new(agent).with_description("Counts the words of a text."))
        .openai(port(0))
        .mcp_http(port(1))
        .rest(port(2))
        .concurrency(4)
        .start()
        .await;
    let running = match running {
        Ok(running) => running,
        Err(e) => {
            eprintln!("cannot serve: {e}");
            return 2;
        }
    };
    eprintln!("model {selector}");
    for bound in running.addresses() {
        eprintln!("{} on {}", bound.surface, bound.url());
    }
    stop.await;
    eprintln!("stopping");
    running.shutdown().await;
    0
}

/// Resolves on Ctrl-C or SIGTERM (what a service manager or `docker stop`
/// sends). The handlers are installed when this is called, not when it is
/// awaited: a signal that comes while the server starts stops it cleanly
/// instead of killing the process.
#[cfg(unix)]
fn stop_requested() -> impl std::future::Future<Output = ()> {
    use tokio::signal::unix::{SignalKind, signal};
    let handlers = (signal(SignalKind::interrupt()), signal(SignalKind::terminate()));
    async move {
        match handlers {
            (Ok(mut interrupt), Ok(mut terminate)) => {
                tokio::select! {
                    _ = interrupt.recv() => {}
                    _ = terminate.recv() => {}
                }
            }
            (Err(e), _) | (_, Err(e)) => {
                eprintln!("signals cannot be handled ({e}); stopping on Ctrl-C alone");
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
}

#[cfg(not(unix))]
fn stop_requested() -> impl std::future::Future<Output = ()> {
    async {
        let _ = tokio::signal::ctrl_c().await;
    }
}
