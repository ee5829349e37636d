//! README.md's install snippet, line for line (tests/readme.rs checks it).

use loopwright::{Agent, providers::Providers};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let model = Providers::from_env()?.model("anthropic/claude-sonnet-4-5")?; // ANTHROPIC_API_KEY
    let result = Agent::builder(model).system("Be brief.").build().run("Hello!").await?;
    println!("{}", result.text);
    Ok(())
}
