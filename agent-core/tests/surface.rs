//! The surface a new user meets first: how a run ends (`?` on a failed run),
//! the builder's setters composing, tools added one at a time or as a set,
//! typed tools with state or context, and cancellation from outside.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::{HANG_GUARD, TestTool, object_schema, results_by_id};
use futures::StreamExt;
use loopwright_core::{
    Agent, AgentBuilder, CancellationToken, ContextBudget, ExitReason, ModelError, RunError, ToolChoice,
    ToolContext, ToolError, ToolSet, tool::TypedTool, tool_fn, tool_fn_with_context,
    toolset::StaticToolSource,
};
use loopwright_testing::{ScriptedModel, ScriptedStep};

fn agent(steps: Vec<ScriptedStep>) -> (Agent, ScriptedModel) {
    let model = ScriptedModel::new(steps);
    (Agent::builder(Arc::new(model.clone())).build(), model)
}

#[tokio::test]
async fn a_401_is_an_error_of_the_run_not_an_empty_answer() {
    let (agent, _) = agent(vec![ScriptedStep::fail(ModelError::authentication(
        Some(401),
        "invalid x-api-key",
    ))]);
    let err = tokio::time::timeout(HANG_GUARD, agent.run("hi"))
        .await
        .unwrap()
        .expect_err("a model that refused the key must not look like an answer");
    match &err {
        RunError::Model { error, result } => {
            assert_eq!(error.kind(), "authentication");
            assert_eq!(error.message(), "invalid x-api-key");
            assert_eq!(result.exit(), ExitReason::ModelError);
            assert!(result.text.is_empty() && result.messages.is_empty());
        }
        other => panic!("{other:?}"),
    }
    // Said once, whether printed alone or with its causes.
    assert_eq!(
        err.to_string(),
        "the model failed: authentication failed (status 401): invalid x-api-key"
    );
    assert_eq!(loopwright_core::util::error_chain(&err), err.to_string());
    // A cause of the model error is the run error's source.
    let io = std::io::Error::other("connection reset by peer");
    let (cut, _) = self::agent(vec![ScriptedStep::fail(
        ModelError::stream_cut("body broke").with_source(io),
    )]);
    let err = cut.run("hi").await.unwrap_err();
    assert_eq!(
        std::error::Error::source(&err).unwrap().to_string(),
        "connection reset by peer"
    );
}

#[tokio::test]
async fn a_failed_run_carries_what_it_did_before() {
    let agent = with_tool_t(
        ScriptedStep::fail(ModelError::server(Some(503), "overloaded")),
        |b: AgentBuilder| b,
    );
    let err = agent.run("go").await.unwrap_err();
    let partial = err.result().expect("a model error keeps the partial result");
    assert_eq!(partial.steps.len() as u32, 1);
    assert_eq!(partial.messages.len(), 2, "the call and its result are kept");
    assert!(!results_by_id(partial)["c1"].0);
    assert_eq!(err.model_error().unwrap().status(), Some(503));
    // The same run's outcome, however it ended, for applications that want it.
    let model = ScriptedModel::new(vec![ScriptedStep::fail(ModelError::server(
        Some(503),
        "overloaded",
    ))]);
    let agent = Agent::builder(Arc::new(model)).build();
    let outcome = agent
        .run("go")
        .await
        .or_else(loopwright_core::RunError::into_result)
        .unwrap();
    assert_eq!(outcome.exit(), ExitReason::ModelError);
}

#[tokio::test]
async fn token_limit_and_cancellation_are_errors_too() {
    // A request that can never fit the window.
    let model = ScriptedModel::new(vec![ScriptedStep::text("never asked")]);
    let agent = Agent::builder(Arc::new(model.clone()))
        .budget(ContextBudget::new(50).buffer_tokens(0))
        .system("a system prompt that overflows a fifty-token window on its own ".repeat(10))
        .build();
    let err = agent.run("hi").await.unwrap_err();
    assert!(matches!(err, RunError::TokenLimit { .. }), "{err:?}");
    assert!(model.requests().is_empty());

    let (agent, _) = agent_with_hang();
    let run = agent.run("hi");
    run.cancel();
    let err = tokio::time::timeout(HANG_GUARD, run).await.unwrap().unwrap_err();
    assert!(matches!(err, RunError::Cancelled { .. }), "{err:?}");
}

/// An agent whose model calls tool `t` (answering "ok"), then plays `then`.
fn with_tool_t(then: ScriptedStep, options: impl FnOnce(AgentBuilder) -> AgentBuilder) -> Agent {
    let tool = TestTool::new("t", object_schema(), |_, _| async {
        Ok(loopwright_core::ToolOutput::text("ok"))
    });
    let model = ScriptedModel::new(vec![ScriptedStep::tool_calls(&[("c1", "t", "{}")]), then]);
    options(Agent::builder(Arc::new(model)).tool(tool)).build()
}

fn agent_with_hang() -> (Agent, ScriptedModel) {
    agent(vec![ScriptedStep::events(vec![]).then_hang()])
}

#[tokio::test]
async fn the_step_limit_conclusion_is_an_answer() {
    let agent = with_tool_t(ScriptedStep::text("What I found so far."), |b: AgentBuilder| {
        b.max_steps(1)
    });
    let result = agent.run("go").await.unwrap();
    assert_eq!(result.exit(), ExitReason::MaxSteps);
    assert_eq!(result.text, "What I found so far.");
}

#[tokio::test]
async fn builder_setters_compose_in_any_order() {
    let model = ScriptedModel::new(vec![ScriptedStep::text("a"), ScriptedStep::text("b")]);
    // `options` after `system` used to replace the options, dropping the prompt.
    let first = Agent::builder(Arc::new(model.clone()))
        .system("Be brief.")
        .max_steps(3)
        .temperature(0.5)
        .build();
    assert_eq!(first.options().system.as_deref(), Some("Be brief."));
    assert_eq!(first.options().max_steps, 3);
    let second = Agent::builder(Arc::new(model.clone()))
        .system("From options.")
        .temperature(0.1)
        .top_p(0.9)
        .max_output_tokens(77)
        .tool_choice(ToolChoice::Required)
        .parallel_tool_calls(false)
        .build();
    let _ = first.run("one").await.unwrap();
    let _ = second.run("two").await.unwrap();
    let requests = model.requests();
    assert_eq!(requests[0].system.as_deref(), Some("Be brief."));
    assert_eq!(requests[0].temperature, Some(0.5));
    let r = &requests[1];
    assert_eq!(r.system.as_deref(), Some("From options."));
    assert_eq!(
        (r.temperature, r.top_p, r.max_output_tokens),
        (Some(0.1), Some(0.9), Some(77))
    );
    assert_eq!(r.tool_choice, ToolChoice::Required);
    assert_eq!(r.parallel_tool_calls, Some(false));
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Key {
    /// The key to look up.
    key: String,
}

/// A typed tool that carries state, its name among it.
struct Store {
    name: String,
    values: std::collections::HashMap<String, u32>,
    lookups: AtomicUsize,
}

impl TypedTool for Store {
    fn description(&self) -> &str {
        "Look a key up."
    }

    fn name(&self) -> &str {
        &self.name
    }

    type Args = Key;
    type Output = u32;
    type Error = String;

    async fn call(&self, args: Key, _ctx: ToolContext) -> Result<u32, String> {
        self.lookups.fetch_add(1, Ordering::SeqCst);
        self.values
            .get(&args.key)
            .copied()
            .ok_or_else(|| format!("no key {}", args.key))
    }
}

#[tokio::test]
async fn tools_one_at_a_time_and_as_a_set_join_one_catalog() {
    let set = ToolSet::builder()
        .source(
            StaticToolSource::native("lib")
                .with_tool(tool_fn("ping", "Pong.", |_: Key| async { Ok("pong") })),
        )
        .build();
    let seen = Arc::new(std::sync::Mutex::new(None));
    let s = seen.clone();
    let with_ctx = tool_fn_with_context("whoami", "The call id.", move |_: Key, ctx: ToolContext| {
        let s = s.clone();
        async move {
            *s.lock().unwrap() = Some((ctx.call_id().to_owned(), ctx.deadline().is_some()));
            Ok(ctx.call_id().to_owned())
        }
    });
    let store = Store {
        name: "lookup".into(),
        values: [("a".to_string(), 7)].into(),
        lookups: AtomicUsize::new(0),
    };
    let model = ScriptedModel::new(vec![
        ScriptedStep::tool_calls(&[
            ("c1", "lookup", r#"{"key":"a"}"#),
            ("c2", "lookup", r#"{"key":"zz"}"#),
            ("c3", "whoami", r#"{"key":"x"}"#),
            ("c4", "ping", r#"{"key":"x"}"#),
        ]),
        ScriptedStep::text("done"),
    ]);
    let agent = Agent::builder(Arc::new(model.clone()))
        .tools(set)
        .tool(store)
        .tool(with_ctx)
        .build();
    let result = agent.run("go").await.unwrap();
    let mut names: Vec<String> = model.requests()[0].tools.iter().map(|d| d.name.clone()).collect();
    names.sort();
    assert_eq!(names, ["lookup", "ping", "whoami"]);
    let results = results_by_id(&result);
    assert_eq!(results["c1"], (false, "7".to_string()));
    assert!(results["c2"].0);
    assert!(results["c2"].1.contains("no key zz"), "{}", results["c2"].1);
    assert_eq!(results["c3"], (false, "c3".to_string()));
    assert_eq!(results["c4"], (false, "pong".to_string()));
    assert_eq!(*seen.lock().unwrap(), Some(("c3".to_string(), true)));
    // The schema came from the argument type.
    let lookup = model.requests()[0]
        .tools
        .iter()
        .find(|d| d.name == "lookup")
        .unwrap()
        .clone();
    assert_eq!(lookup.input_schema["required"], serde_json::json!(["key"]));
}

#[tokio::test]
async fn a_tool_body_uses_question_mark_on_any_error() {
    let tool = tool_fn("parse", "Parse a number.", |k: Key| async move {
        let n: u32 = k.key.parse()?; // ParseIntError -> ToolError
        if n == 0 {
            return Err(ToolError::invalid_input("must not be zero"));
        }
        Ok(n * 2)
    });
    let model = ScriptedModel::new(vec![
        ScriptedStep::tool_calls(&[
            ("c1", "parse", r#"{"key":"x"}"#),
            ("c2", "parse", r#"{"key":"21"}"#),
        ]),
        ScriptedStep::text("done"),
    ]);
    let agent = Agent::builder(Arc::new(model)).tool(tool).build();
    let results = results_by_id(&agent.run("go").await.unwrap());
    assert!(results["c1"].0);
    assert!(results["c1"].1.contains("invalid digit"), "{}", results["c1"].1);
    assert_eq!(results["c2"], (false, "42".to_string()));
}

#[tokio::test]
async fn a_parent_token_cancels_every_run_and_a_run_never_cancels_its_parent() {
    let shutdown = CancellationToken::new();
    let model = ScriptedModel::new(vec![
        ScriptedStep::text("first"),
        ScriptedStep::events(vec![]).then_hang(),
        ScriptedStep::events(vec![]).then_hang(),
    ]);
    let agent = Agent::builder(Arc::new(model))
        .cancellation(shutdown.clone())
        .build();
    // Cancelling (or dropping) one run leaves the parent alone.
    let first = agent.run("a").await.unwrap();
    assert_eq!(first.text, "first");
    let dropped = agent.run("b");
    dropped.cancel();
    drop(dropped);
    assert!(!shutdown.is_cancelled());
    // The parent cancels a run in progress.
    let mut run = agent.run("c");
    let waiter = tokio::spawn(async move {
        while run.next().await.is_some() {}
        run.await
            .or_else(loopwright_core::RunError::into_result)
            .unwrap()
            .exit()
    });
    tokio::time::sleep(Duration::from_millis(20)).await;
    shutdown.cancel();
    let exit = tokio::time::timeout(HANG_GUARD, waiter).await.unwrap().unwrap();
    assert_eq!(exit, ExitReason::Cancelled);
}

#[tokio::test]
async fn with_cancellation_scopes_one_agent_copy_to_a_token() {
    let (agent, _) = agent_with_hang();
    let request = CancellationToken::new();
    let scoped = agent.to_builder().cancellation(request.clone()).build();
    let run = scoped.run("hi");
    request.cancel();
    let err = tokio::time::timeout(HANG_GUARD, run).await.unwrap().unwrap_err();
    assert!(matches!(err, RunError::Cancelled { .. }));
    assert!(
        agent.options().cancellation.is_empty(),
        "the original agent is untouched"
    );
}

#[tokio::test]
async fn a_scoped_agent_keeps_the_tokens_it_had() {
    let shutdown = CancellationToken::new();
    let model = ScriptedModel::new(vec![ScriptedStep::events(vec![]).then_hang()]);
    let agent = Agent::builder(Arc::new(model))
        .cancellation(shutdown.clone())
        .build();
    let request = CancellationToken::new();
    let run = agent.to_builder().cancellation(request.clone()).build().run("hi");
    // The application-wide token still cancels the request-scoped run.
    shutdown.cancel();
    let err = tokio::time::timeout(HANG_GUARD, run).await.unwrap().unwrap_err();
    assert!(matches!(err, RunError::Cancelled { .. }));
    assert!(!request.is_cancelled(), "a run never cancels its parents");
}

#[tokio::test]
async fn fallback_skips_a_model_that_refused_the_request_and_never_resends_it() {
    use loopwright_core::FallbackModel;
    let bad = || ScriptedStep::fail(ModelError::invalid_request(Some(400), "unknown parameter"));
    let a = ScriptedModel::new(vec![bad(), bad(), bad()]);
    let b = ScriptedModel::new(vec![bad(), bad(), bad()]);
    let model = FallbackModel::new(vec![Arc::new(a.clone()), Arc::new(b.clone())]).retries(2);
    let agent = Agent::builder(Arc::new(model)).build();
    let err = agent.run("go").await.unwrap_err();
    assert_eq!(err.model_error().unwrap().kind(), "invalid_request");
    assert_eq!(
        (a.requests().len(), b.requests().len()),
        (1, 1),
        "a 400 is sent to each model once, not once per cycle"
    );

    // A context-length error moves on to the next model at once.
    let small = ScriptedModel::new(vec![ScriptedStep::fail(ModelError::invalid_request(
        Some(400),
        "This model's maximum context length is 8192 tokens.",
    ))]);
    let large = ScriptedModel::new(vec![ScriptedStep::text("fits")]);
    let model = FallbackModel::new(vec![Arc::new(small.clone()), Arc::new(large.clone())]);
    let agent = Agent::builder(Arc::new(model)).build();
    assert_eq!(agent.run("go").await.unwrap().text, "fits");
    assert_eq!((small.requests().len(), large.requests().len()), (1, 1));
}

#[tokio::test]
async fn a_result_serialises_for_the_application_to_keep() {
    let (agent, _) = agent(vec![ScriptedStep::fail(ModelError::network(
        "connection refused",
    ))]);
    let outcome = agent
        .run("hi")
        .await
        .or_else(loopwright_core::RunError::into_result)
        .unwrap();
    let json = serde_json::to_value(&outcome).unwrap();
    assert_eq!(json["exit"], "model_error");
    assert_eq!(json["error"], "network error: connection refused");
    assert!(json["messages"].as_array().unwrap().is_empty());
}
