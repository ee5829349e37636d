//! A background run approved over HTTP: the shape of a service where the
//! agent works on its own and a person (or another program) decides its
//! risky calls through the REST routes.
//!
//! The example serves agent `notes` over REST, then plays the client: it
//! starts a background run, waits until the run asks for approval, posts a
//! decision, reads the run's whole event stream from the store's event log
//! and prints the answer. Each request is printed as the `curl` line that
//! does the same, so the routes can be tried by hand against
//! `cargo run --example serve`-like servers.
//!
//! ```sh
//! ANTHROPIC_API_KEY=... cargo run --features store --example background_approval -- "Note that the build is green"
//! cargo run --features store --example background_approval -- --deny "Note that the build is green"
//! ```
//!
//! The runs live in `LOOPWRIGHT_STORE` (`sqlite:PATH`, or `postgres://...`
//! with the `postgres` feature) when it is set, else in memory; notes go to `notes.txt` in the current
//! directory. The model comes from the environment as in the quickstart
//! (`LOOPWRIGHT_MODEL`, a provider key, or a local server).

use std::time::Duration;

use loopwright::serve::{Serve, ServedAgent, Surface};
use loopwright::{Agent, Approvals};
use serde_json::{Value, json};

#[path = "common/events.rs"]
mod events;
#[path = "common/model.rs"]
mod model;
#[path = "common/notes.rs"]
mod notes;

/// How often the client reads the run while it works.
const POLL: Duration = Duration::from_millis(50);
/// How long the client waits for the run to ask or end.
const PATIENCE: Duration = Duration::from_secs(120);

#[tokio::main]
async fn main() {
    std::process::exit(run().await);
}

async fn run() -> i32 {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let approve = match args.first().map(String::as_str) {
        Some("--deny") => {
            args.remove(0);
            false
        }
        _ => true,
    };
    let task = args.join(" ");
    if task.trim().is_empty() {
        eprintln!("usage: background_approval [--deny] TASK...");
        return 2;
    }
    let (model, selector) = match model::model_from_env().await {
        Ok(found) => found,
        Err(help) => {
            eprintln!("{help}");
            return 2;
        }
    };
    eprintln!("model {selector}");
    let mut serve = Serve::new()
        .agent(ServedAgent::new(notes_agent(model)))
        .rest(([127, 0, 0, 1], 0).into());
    if let Ok(url) = std::env::var("LOOPWRIGHT_STORE") {
        match loopwright::store::open(&url).await {
            Ok(store) => serve = serve.store(store),
            Err(e) => {
                eprintln!("store {url}: {e}");
                return 2;
            }
        }
    }
    let running = match serve.start().await {
        Ok(running) => running,
        Err(e) => {
            eprintln!("cannot serve: {e}");
            return 2;
        }
    };
    let Some(address) = running.address(Surface::Rest) else {
        eprintln!("the REST surface did not start");
        return 2;
    };
    let code = match client(&format!("http://{address}"), &task, approve).await {
        Ok(answer) => {
            println!("{answer}");
            0
        }
        Err(why) => {
            eprintln!("{why}");
            1
        }
    };
    running.shutdown().await;
    code
}

/// The agent: a tool that appends a note (it changes a file, so it needs
/// approval) and approvals deferred to whoever answers over HTTP.
fn notes_agent(model: std::sync::Arc<dyn loopwright::LanguageModel>) -> Agent {
    Agent::builder(model)
        .name("notes")
        .tool(notes::append_note())
        .approvals(Approvals::defer())
        .system("You keep notes with the append_note tool, then say in one short sentence what you did.")
        .build()
}

/// Start the run, decide its pending calls, read its events; its answer.
async fn client(base: &str, task: &str, approve: bool) -> Result<String, String> {
    loopwright::providers::install_tls_provider();
    let http = reqwest::Client::new();
    let started = call(
        &http,
        "POST",
        &format!("{base}/v1/agents/notes/runs"),
        Some(json!({"prompt": task})),
    )
    .await?;
    let id = started["id"]
        .as_str()
        .ok_or(format!("no run id in {started}"))?
        .to_owned();
    let run_url = format!("{base}/v1/runs/{id}");
    let mut view = wait_while_running(&http, &run_url).await?;
    if view["status"] == "awaiting_approval" {
        let decisions: Vec<Value> = view["pending_approvals"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|pending| {
                eprintln!(
                    "pending: {} {} {}",
                    pending["call_id"], pending["tool"], pending["arguments"]
                );
                if approve {
                    json!({"call_id": pending["call_id"], "approve": true})
                } else {
                    json!({"call_id": pending["call_id"], "approve": false, "reason": "not today"})
                }
            })
            .collect();
        call(
            &http,
            "POST",
            &format!("{run_url}/approvals"),
            Some(json!({"decisions": decisions})),
        )
        .await?;
        view = wait_while_running(&http, &run_url).await?;
    }
    events::print_events(&http, &run_url).await?;
    match view["status"].as_str() {
        Some("completed") => Ok(view["result"]["text"].as_str().unwrap_or_default().to_owned()),
        other => Err(format!(
            "the run ended {}: {}",
            other.unwrap_or("?"),
            view["error"]
        )),
    }
}

/// Read the run until it is no longer `running`.
async fn wait_while_running(http: &reqwest::Client, run_url: &str) -> Result<Value, String> {
    eprintln!("$ curl {run_url}   # until its status is not running");
    let waited = tokio::time::timeout(PATIENCE, async {
        loop {
            let view: Value = http
                .get(run_url)
                .send()
                .await
                .map_err(|e| format!("{run_url}: {e}"))?
                .json()
                .await
                .map_err(|e| format!("{run_url}: {e}"))?;
            if view["status"] != "running" {
                eprintln!("status {}", view["status"]);
                return Ok(view);
            }
            tokio::time::sleep(POLL).await;
        }
    });
    waited
        .await
        .map_err(|_| format!("{run_url} still running after {PATIENCE:?}"))?
}

/// One request, printed as its `curl` line; its JSON answer.
async fn call(http: &reqwest::Client, method: &str, url: &str, body: Option<Value>) -> Result<Value, String> {
    let mut request = match method {
        "POST" => http.post(url),
        _ => http.get(url),
    };
    match &body {
        Some(body) => {
            eprintln!("$ curl -X {method} {url} -H 'content-type: application/json' -d '{body}'");
            request = request.json(body);
        }
        None => eprintln!("$ curl -X {method} {url}"),
    }
    let response = request.send().await.map_err(|e| format!("{url}: {e}"))?;
    let status = response.status();
    let answer: Value = response.json().await.unwrap_or(Value::Null);
    eprintln!("{} {answer}", status.as_u16());
    if status.is_success() {
        Ok(answer)
    } else {
        Err(format!("{method} {url}: {status} {answer}"))
    }
}
