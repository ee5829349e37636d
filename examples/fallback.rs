//! Models tried in order as one: when the first fails (auth or quota: it is
//! skipped; rate limit, timeout, 5xx: the next is tried), the step starts
//! over on the next one and the application sees a `model_fallback` event.
//!
//! ```sh
//! AGENT_MODELS=openai/gpt-4.1,anthropic/claude-sonnet-4-5 cargo run --example fallback -- "Say hello"
//! ```
//!
//! `AGENT_MODELS` is a comma-separated fallback order; without it, every
//! provider whose API key is set is used, in the order of
//! `loopwright_providers::DEFAULT_MODELS`.

use std::sync::Arc;

use loopwright::providers::{DEFAULT_MODELS, Providers};
use loopwright::{Agent, FallbackModel, LanguageModel};

#[path = "common/print.rs"]
mod print;

#[tokio::main]
async fn main() {
    std::process::exit(run().await);
}

async fn run() -> i32 {
    let prompt = std::env::args().skip(1).collect::<Vec<_>>().join(" ");
    let prompt = if prompt.trim().is_empty() {
        "Say hello in one short sentence.".into()
    } else {
        prompt
    };
    let providers = match Providers::from_env() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("provider configuration: {e}");
            return 2;
        }
    };
    let selectors: Vec<String> = match std::env::var("AGENT_MODELS") {
        Ok(list) => list
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect(),
        Err(_) => DEFAULT_MODELS
            .iter()
            .map(|(provider, model)| format!("{provider}/{model}"))
            .filter(|s| providers.model(s).is_ok())
            .collect(),
    };
    if selectors.is_empty() {
        eprintln!(
            "No model. Set AGENT_MODELS=provider/model,provider/model or at least one provider's API key."
        );
        return 2;
    }
    let mut models: Vec<Arc<dyn LanguageModel>> = Vec::new();
    for selector in &selectors {
        match providers.model(selector) {
            Ok(model) => models.push(model),
            Err(e) => {
                eprintln!("model {selector}: {e}");
                return 2;
            }
        }
    }
    eprintln!("fallback order: {}", selectors.join(" -> "));
    let agent = Agent::builder(Arc::new(FallbackModel::new(models))).build();
    match print::print_run(agent.run(prompt)).await {
        Ok(_) => 0,
        Err(_) => 3,
    }
}
