//! A typed tool of your own in a few lines: the argument type gives the JSON
//! schema (schemars), the loop validates every call against it, and the
//! closure gets a parsed value.
//!
//! ```sh
//! ANTHROPIC_API_KEY=... cargo run --example custom_tool -- "What is the shipping cost of 3 kg to Lisbon?"
//! ```
//!
//! The model comes from the environment as in the quickstart
//! (`AGENT_MODEL`, a provider key, or a local server).

use agent_sdk::{Agent, StaticToolSource, ToolSet, tool_fn};

#[path = "common/model.rs"]
mod model;
#[path = "common/print.rs"]
mod print;

/// The tool's input: field docs become the schema's descriptions.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Shipment {
    /// Destination city.
    city: String,
    /// Weight in kilograms.
    kg: f64,
}

#[tokio::main]
async fn main() {
    let prompt = std::env::args().skip(1).collect::<Vec<_>>().join(" ");
    let prompt = if prompt.trim().is_empty() {
        "How much does it cost to ship 3 kg to Lisbon?".to_string()
    } else {
        prompt
    };
    let (model, selector) = match model::model_from_env().await {
        Ok(found) => found,
        Err(help) => {
            eprintln!("{help}");
            std::process::exit(2);
        }
    };
    eprintln!("model {selector}");

    let shipping = tool_fn(
        "shipping_cost",
        "Shipping cost in euros for a parcel.",
        |s: Shipment| async move {
            if s.kg <= 0.0 {
                return Err(format!("weight must be positive, got {}", s.kg));
            }
            Ok(format!(
                "Shipping {} kg to {} costs {:.2} EUR.",
                s.kg,
                s.city,
                4.5 + 2.25 * s.kg
            ))
        },
    );
    let tools = ToolSet::builder()
        .source(StaticToolSource::native("shop").with_tool(shipping))
        .build();

    let agent = Agent::builder(model)
        .tools(tools)
        .system("Answer briefly.")
        .build();
    let ok = print::print_run(agent.prompt(prompt))
        .await
        .is_some_and(|r| r.completed());
    std::process::exit(if ok { 0 } else { 1 });
}
