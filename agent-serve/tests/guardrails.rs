//! A guardrail on every served surface: no byte of what a guard stopped or
//! redacted reaches a client (each raw body is read whole), and each
//! surface reports a trip in its own shape. The agent's model is a real
//! provider against the local model server, whose answer streams in two
//! chunks that cut the secret in two.

use std::sync::Arc;

use loopwright_core::Agent;
use loopwright_core::guardrail::{Guardrails, Pattern, Pii};
use loopwright_providers::OpenAiChatModel;
use loopwright_serve::{Running, Serve, ServedAgent, Surface};
use loopwright_test_support::model_server::{ModelServer, sse};
use serde_json::{Value, json};

use crate::common::{self, Mcp};

/// One raw body per surface and mode, named.
struct Bodies(Vec<(&'static str, String)>);

impl Bodies {
    fn get(&self, name: &str) -> &str {
        &self.0.iter().find(|(n, _)| *n == name).unwrap().1
    }

    fn json(&self, name: &str) -> Value {
        serde_json::from_str(self.get(name)).unwrap()
    }

    fn assert_none_contains(&self, needle: &str) {
        for (name, body) in &self.0 {
            assert!(!body.contains(needle), "{name} carries {needle:?}: {body}");
        }
    }
}

async fn serve(answer: &str, rails: Guardrails) -> (Running, ModelServer) {
    common::install_tls();
    let server = ModelServer::start(vec![sse::answer(answer).into()]).await;
    let model = OpenAiChatModel::openai("gpt-4.1-nano")
        .base_url(server.base_url())
        .api_key("sk-test")
        .build()
        .unwrap();
    let agent = Agent::builder(Arc::new(model))
        .name("assistant")
        .guardrails(rails)
        .build();
    let local = || "127.0.0.1:0".parse().unwrap();
    let running = Serve::new()
        .agent(ServedAgent::new(agent))
        .openai(local())
        .anthropic(local())
        .rest(local())
        .mcp_http(local())
        .start()
        .await
        .unwrap();
    (running, server)
}

async fn raw(url: String, body: Value) -> String {
    let response = common::http().post(url).json(&body).send().await.unwrap();
    response.text().await.unwrap()
}

/// Every surface, streamed and not, asked the same question.
async fn ask_everywhere(running: &Running) -> Bodies {
    let at = |surface: Surface, path: &str| format!("http://{}{path}", running.address(surface).unwrap());
    let user = json!([{"role": "user", "content": "The code?"}]);
    let mut bodies = Vec::new();
    for stream in [false, true] {
        let chat = json!({"model": "assistant", "messages": user, "stream": stream});
        let responses = json!({"model": "assistant", "input": "The code?", "stream": stream});
        let messages = json!({"model": "assistant", "max_tokens": 100, "messages": user, "stream": stream});
        let rest = json!({"prompt": "The code?", "stream": stream});
        let names: [&'static str; 4] = if stream {
            [
                "chat stream",
                "responses stream",
                "anthropic stream",
                "rest stream",
            ]
        } else {
            ["chat", "responses", "anthropic", "rest"]
        };
        bodies.push((
            names[0],
            raw(at(Surface::OpenAi, "/v1/chat/completions"), chat).await,
        ));
        bodies.push((
            names[1],
            raw(at(Surface::OpenAi, "/v1/responses"), responses).await,
        ));
        bodies.push((
            names[2],
            raw(at(Surface::Anthropic, "/v1/messages"), messages).await,
        ));
        bodies.push((
            names[3],
            raw(at(Surface::Rest, "/v1/agents/assistant"), rest).await,
        ));
    }
    let mut mcp = Mcp::new(running.address(Surface::McpHttp).unwrap());
    assert_eq!(mcp.initialize().await, 200);
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "assistant", "arguments": {"prompt": "The code?"}, "_meta": {"progressToken": 1}}});
    let (_, messages, _) = mcp.post(call).await;
    bodies.push(("mcp", serde_json::to_string(&messages).unwrap()));
    Bodies(bodies)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocked_answer_reaches_no_surface_and_each_says_so_in_its_own_shape() {
    let guard = Pattern::block("launch-codes", r"ZEBRA-\d+").unwrap();
    let (running, _server) = serve(
        "The launch code is ZEBRA-7731. Keep it safe.",
        Guardrails::new().guard(guard),
    )
    .await;
    let bodies = ask_everywhere(&running).await;
    bodies.assert_none_contains("7731");
    bodies.assert_none_contains("ZEBRA-");

    let chat = bodies.json("chat");
    assert_eq!(chat["choices"][0]["finish_reason"], "content_filter", "{chat}");
    let refusal = chat["choices"][0]["message"]["refusal"].as_str().unwrap();
    assert!(
        refusal.contains("guardrail launch-codes stopped the run at output"),
        "{refusal}"
    );
    let stream = bodies.get("chat stream");
    assert!(stream.contains(r#""finish_reason":"content_filter""#), "{stream}");
    assert!(
        stream.contains(r#""refusal":"guardrail launch-codes"#),
        "{stream}"
    );
    assert!(stream.trim_end().ends_with("data: [DONE]"), "{stream}");

    let response = bodies.json("responses");
    assert_eq!(response["status"], "incomplete", "{response}");
    assert_eq!(response["incomplete_details"]["reason"], "content_filter");
    assert!(bodies.get("responses stream").contains("response.incomplete"));

    assert_eq!(bodies.json("anthropic")["stop_reason"], "refusal");
    assert!(
        bodies
            .get("anthropic stream")
            .contains(r#""stop_reason":"refusal""#)
    );

    let rest = bodies.json("rest");
    assert_eq!(rest["exit"], "tripped", "{rest}");
    assert_eq!(rest["trip"]["guard"], "launch-codes");
    assert_eq!(rest["trip"]["point"], "output");
    let rest_stream = bodies.get("rest stream");
    assert!(
        rest_stream.contains(r#""type":"guardrail_tripped""#),
        "{rest_stream}"
    );
    assert!(rest_stream.contains(r#""exit":"tripped""#), "{rest_stream}");

    let mcp: Vec<Value> = serde_json::from_str(bodies.get("mcp")).unwrap();
    let result = &Mcp::response(&mcp, 1)["result"];
    assert_eq!(result["isError"], true, "{result}");
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("guardrail launch-codes stopped the run"), "{text}");
    running.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redacted_answer_reaches_every_surface_redacted() {
    let (running, _server) = serve(
        "Your card 4111 1111 1111 1111 is on file.",
        Guardrails::new().guard(Pii::redact()),
    )
    .await;
    let bodies = ask_everywhere(&running).await;
    bodies.assert_none_contains("4111");
    bodies.assert_none_contains("1111 1111");
    for (name, body) in &bodies.0 {
        assert!(body.contains("[REDACTED card]"), "{name}: {body}");
    }
    assert_eq!(bodies.json("chat")["choices"][0]["finish_reason"], "stop");
    assert_eq!(bodies.json("responses")["status"], "completed");
    assert_eq!(bodies.json("anthropic")["stop_reason"], "end_turn");
    assert_eq!(bodies.json("rest")["exit"], "completed");
    running.shutdown().await;
}
