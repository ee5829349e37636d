//! A tool of your own that carries state: a struct implementing `TypedTool`.
//! The argument type gives the JSON schema (schemars), the loop validates
//! every call against it, and `call` gets a parsed value; its error type is
//! yours (the model sees its text).
//!
//! ```sh
//! ANTHROPIC_API_KEY=... cargo run --example custom_tool -- "What is the shipping cost of 3 kg to Lisbon?"
//! ```
//!
//! The model comes from the environment as in the quickstart
//! (`LOOPWRIGHT_MODEL`, a provider key, or a local server).

use std::collections::HashMap;

use loopwright::{Agent, ToolContext, tool::ToolAnnotations, tool::TypedTool};

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

/// What a shipment costs, from a rate table the tool owns.
struct ShippingCost {
    /// Base fee per destination, in euros.
    base: HashMap<String, f64>,
    /// Euros per kilogram.
    per_kg: f64,
}

impl TypedTool for ShippingCost {
    type Args = Shipment;
    type Output = String;
    type Error = String;

    fn name(&self) -> &str {
        "shipping_cost"
    }

    fn description(&self) -> &str {
        "Shipping cost in euros for a parcel."
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::default().read_only(true).idempotent(true)
    }

    async fn call(&self, s: Shipment, _ctx: ToolContext) -> Result<String, String> {
        if s.kg <= 0.0 {
            return Err(format!("weight must be positive, got {}", s.kg));
        }
        let base = self
            .base
            .get(&s.city.to_lowercase())
            .ok_or_else(|| format!("no rate for {}; known: {:?}", s.city, self.base.keys()))?;
        Ok(format!(
            "Shipping {} kg to {} costs {:.2} EUR.",
            s.kg,
            s.city,
            base + self.per_kg * s.kg
        ))
    }
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

    let rates = ShippingCost {
        base: [("lisbon".to_string(), 4.5), ("porto".to_string(), 5.0)].into(),
        per_kg: 2.25,
    };
    let agent = Agent::builder(model)
        .tool(rates)
        .system("Answer briefly.")
        .build();
    let ok = print::print_run(agent.run(prompt)).await.is_ok();
    std::process::exit(if ok { 0 } else { 1 });
}
