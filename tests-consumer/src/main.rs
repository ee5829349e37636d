//! An application's view of loopwright: its own reqwest client goes to a
//! provider, its own rmcp is loopwright's, and the README's install snippet
//! compiles (`readme.rs`, checked against README.md by the facade's tests).

#[allow(dead_code)]
mod readme;

use loopwright::providers::OpenAiChatModel;

fn main() {
    // The application's own client (reqwest 0.13 on rustls, as loopwright's).
    let client = reqwest::Client::builder()
        .user_agent("consumer-check")
        .build()
        .expect("a reqwest client");
    let model = OpenAiChatModel::openai("gpt-4.1-mini")
        .api_key("sk-test")
        .client(client)
        .build()
        .expect("a model with the application's client");
    let _agent = loopwright::Agent::builder(std::sync::Arc::new(model)).build();

    // rmcp's types are loopwright's: the application's `rmcp = "3"` is the
    // same crate as `loopwright::mcp::rmcp`.
    let same: fn(rmcp::model::Implementation) -> loopwright::mcp::rmcp::model::Implementation = |x| x;
    let _ = same;
    println!("ok: loopwright with the application's reqwest client and rmcp 3.x");
}
