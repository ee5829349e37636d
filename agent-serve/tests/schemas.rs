//! A client's JSON Schema can be hostile: an output format whose levels
//! each say `anyOf`/`oneOf`/`allOf` of two references to the next made
//! validating any answer visit 2^depth branches (depth 24 took 24 GB and
//! the server). Each surface refuses such a schema with a 400 in its own
//! shape, naming what is wrong, before a run starts; a schema within the
//! limits still works, and the server answers others meanwhile.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;

use common::post;
use loopwright_core::Agent;
use loopwright_serve::{Serve, ServedAgent, Surface};
use loopwright_testing::{ScriptedModel, ScriptedStep};
use serde_json::{Map, Value, json};

/// `depth` levels that each apply `keyword` of two references to the
/// next, ending in `false` (nothing matches: every branch is visited).
fn exponential(keyword: &str, depth: usize) -> Value {
    ending(keyword, depth, json!(false))
}

fn ending(keyword: &str, depth: usize, last: Value) -> Value {
    let mut defs = Map::new();
    for i in 0..depth {
        let next = json!({"$ref": format!("#/$defs/l{}", i + 1)});
        defs.insert(format!("l{i}"), json!({keyword: [next.clone(), next]}));
    }
    defs.insert(format!("l{depth}"), last);
    json!({"type": "object", "properties": {"answer": {"$ref": "#/$defs/l0"}}, "$defs": defs})
}

async fn serve(model: ScriptedModel) -> loopwright_serve::Running {
    let agent = Agent::builder(Arc::new(model)).name("assistant").build();
    Serve::new()
        .agent(ServedAgent::new(agent))
        .openai("127.0.0.1:0".parse().unwrap())
        .anthropic("127.0.0.1:0".parse().unwrap())
        .start()
        .await
        .unwrap()
}

/// Answers through the final-answer tool (the scripted model has no
/// native structured output).
fn answering() -> ScriptedModel {
    ScriptedModel::new(
        (0..8)
            .map(|_| ScriptedStep::tool_calls(&[("c1", "final_answer", r#"{"answer": 1}"#)]))
            .collect(),
    )
}

fn assert_refused(status: u16, body: &Value, keyword: &str) {
    assert_eq!(status, 400, "{keyword}: {body}");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("too complex"), "{keyword}: {message}");
    assert!(
        message.contains("4096"),
        "{keyword}: the limit is named: {message}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_surface_refuses_an_output_schema_that_multiplies() {
    let running = serve(answering()).await;
    let openai = format!("http://{}", running.address(Surface::OpenAi).unwrap());
    let anthropic = format!("http://{}", running.address(Surface::Anthropic).unwrap());
    for keyword in ["anyOf", "oneOf", "allOf"] {
        let schema = exponential(keyword, 16);
        let (status, body) = post(
            &format!("{openai}/v1/responses"),
            json!({"model": "assistant", "input": "hi",
                   "text": {"format": {"type": "json_schema", "name": "out", "schema": schema}}}),
        )
        .await;
        assert_refused(status, &body, keyword);
        let (status, body) = post(
            &format!("{openai}/v1/chat/completions"),
            json!({"model": "assistant", "messages": [{"role": "user", "content": "hi"}],
                   "response_format": {"type": "json_schema", "json_schema": {"name": "out", "schema": schema}}}),
        )
        .await;
        assert_refused(status, &body, keyword);
        let (status, body) = post(
            &format!("{anthropic}/v1/messages"),
            json!({"model": "assistant", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}],
                   "output_config": {"format": {"type": "json_schema", "schema": schema}}}),
        )
        .await;
        assert_refused(status, &body, keyword);
    }
    // A schema within the limits is still a structured answer.
    let (status, body) = post(
        &format!("{openai}/v1/chat/completions"),
        json!({"model": "assistant", "messages": [{"role": "user", "content": "hi"}],
               "response_format": {"type": "json_schema", "json_schema": {"name": "out",
                   "schema": ending("anyOf", 4, json!({"type": "integer"}))}}}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["choices"][0]["message"]["content"], r#"{"answer":1}"#);
    running.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reference_to_another_document_or_a_cycle_is_refused_by_name() {
    let running = serve(answering()).await;
    let openai = format!("http://{}", running.address(Surface::OpenAi).unwrap());
    let cases = [
        (
            json!({"$ref": "https://example.com/s.json"}),
            "names another document",
        ),
        (
            json!({"$ref": "#/$defs/a", "$defs": {"a": {"anyOf": [{"$ref": "#/$defs/a"}]}}}),
            "leads back to itself",
        ),
    ];
    for (schema, said) in cases {
        let (status, body) = post(
            &format!("{openai}/v1/responses"),
            json!({"model": "assistant", "input": "hi",
                   "text": {"format": {"type": "json_schema", "name": "out", "schema": schema}}}),
        )
        .await;
        assert_eq!(status, 400, "{body}");
        let message = body["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(said), "{message}");
    }
    running.shutdown().await;
}
