//! A conversation kept across turns and across restarts: after each turn it
//! is saved as JSON, and the next turn starts from the file, as an
//! application that serves one turn per request would.
//!
//! ```sh
//! ANTHROPIC_API_KEY=... cargo run --example conversation -- [FILE]
//! ```
//!
//! FILE (default: `conversation.json` in the temporary directory) holds the
//! conversation; the example starts it afresh. The model comes from the
//! environment as in the quickstart (`LOOPWRIGHT_MODEL`, a provider key, or a
//! local server).

use std::path::{Path, PathBuf};

use loopwright::{Agent, Conversation};

#[path = "common/model.rs"]
mod model;

/// The three turns.
const TURNS: [&str; 3] = [
    "My name is Ada and I like green tea. Say hello in one line.",
    "Suggest one drink for my afternoon, in one line.",
    "What is my name? Answer with the name only.",
];

fn save(chat: &Conversation, path: &Path) -> std::io::Result<()> {
    let json = serde_json::to_string_pretty(chat).map_err(std::io::Error::other)?;
    // Written whole, then renamed: a crash never leaves half a conversation.
    let partial = path.with_extension("json.partial");
    std::fs::write(&partial, json)?;
    std::fs::rename(partial, path)
}

fn load(path: &Path) -> std::io::Result<Conversation> {
    let json = std::fs::read_to_string(path)?;
    serde_json::from_str(&json).map_err(std::io::Error::other)
}

#[tokio::main]
async fn main() {
    std::process::exit(run().await);
}

async fn run() -> i32 {
    let path = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("conversation.json"));
    let (model, selector) = match model::model_from_env().await {
        Ok(found) => found,
        Err(help) => {
            eprintln!("{help}");
            return 2;
        }
    };
    eprintln!("model {selector}, conversation in {}", path.display());
    let agent = Agent::builder(model).system("Answer in one short line.").build();

    if let Err(e) = save(&Conversation::new(), &path) {
        eprintln!("error: {}: {e}", path.display());
        return 1;
    }
    for prompt in TURNS {
        // Each turn starts from what was saved, as after a restart.
        let mut chat = match load(&path) {
            Ok(chat) => chat,
            Err(e) => {
                eprintln!("error: {}: {e}", path.display());
                return 1;
            }
        };
        println!("> {prompt}");
        match chat.send(&agent, prompt).await {
            Ok(answer) => println!("{}\n", answer.text.trim()),
            Err(e) => {
                // The conversation keeps whatever the turn did (a tool that
                // ran); nothing at all when the model never answered.
                eprintln!("error: {e}");
                let _ = save(&chat, &path);
                return 1;
            }
        }
        if let Err(e) = save(&chat, &path) {
            eprintln!("error: {}: {e}", path.display());
            return 1;
        }
    }
    match load(&path) {
        Ok(chat) => {
            let usage = chat.usage();
            eprintln!(
                "{} turns, {} messages, {} tokens in, {} out",
                chat.turns(),
                chat.messages().len(),
                usage.input_tokens.unwrap_or(0),
                usage.output_tokens.unwrap_or(0)
            );
            0
        }
        Err(e) => {
            eprintln!("error: {}: {e}", path.display());
            1
        }
    }
}
