//! The spans a run makes: names, kinds, nesting across spawned tasks and
//! sub-agents, and the GenAI attributes, recorded by a `tracing` layer of
//! the test's own (what an OpenTelemetry layer would export).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use common::{counted_tool, tools};
use loopwright_core::{Agent, ExitReason, ModelError};
use loopwright_testing::{ScriptedModel, ScriptedStep};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

/// One recorded span: its fields (as text) and its parent's index.
#[derive(Debug, Clone, Default)]
struct Recorded {
    fields: HashMap<String, String>,
    parent: Option<usize>,
}

impl Recorded {
    fn name(&self) -> &str {
        self.fields.get("otel.name").map_or("", String::as_str)
    }
    fn get(&self, key: &str) -> Option<&str> {
        self.fields.get(key).map(String::as_str)
    }
}

#[derive(Clone, Default)]
struct Spans(Arc<Mutex<Vec<Recorded>>>);

struct Fields<'a>(&'a mut HashMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name().to_owned(), format!("i64:{value}"));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().to_owned(), format!("u64:{value}"));
    }
}

/// The index of a span in `Spans`, kept in its extensions.
struct Index(usize);

impl<S: tracing::Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Spans {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let span = ctx.span(id).unwrap();
        let parent = span
            .parent()
            .and_then(|p| p.extensions().get::<Index>().map(|i| i.0));
        let mut recorded = Recorded {
            parent,
            ..Recorded::default()
        };
        attrs.record(&mut Fields(&mut recorded.fields));
        let mut all = self.0.lock().unwrap();
        all.push(recorded);
        span.extensions_mut().insert(Index(all.len() - 1));
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let span = ctx.span(id).unwrap();
        let Some(i) = span.extensions().get::<Index>().map(|i| i.0) else {
            return;
        };
        values.record(&mut Fields(&mut self.0.lock().unwrap()[i].fields));
    }
}

impl Spans {
    fn all(&self) -> Vec<Recorded> {
        self.0.lock().unwrap().clone()
    }
}

fn named<'a>(spans: &'a [Recorded], name: &str) -> Vec<(usize, &'a Recorded)> {
    spans
        .iter()
        .enumerate()
        .filter(|(_, s)| s.name() == name)
        .collect()
}

/// The only span with this name.
fn one<'a>(spans: &'a [Recorded], name: &str) -> (usize, &'a Recorded) {
    let found = named(spans, name);
    assert_eq!(found.len(), 1, "one {name} span expected in {spans:#?}");
    found[0]
}

#[tokio::test(flavor = "current_thread")]
async fn a_run_with_a_sub_agent_and_a_tool_makes_the_span_tree_of_the_conventions() {
    let spans = Spans::default();
    let _guard = tracing::subscriber::set_default(tracing_subscriber::registry().with(spans.clone()));
    // With one dispatcher registered, tracing-core asks the registering
    // thread's default, so a callsite another test's thread hits first is
    // cached "never" for this subscriber. A second live dispatcher makes it
    // ask every registered one.
    let _second = tracing::Dispatch::new(tracing_subscriber::registry());

    let (lookup, _) = counted_tool("lookup", "42");
    let researcher = Agent::builder(Arc::new(ScriptedModel::new(vec![
        ScriptedStep::tool_calls(&[("r1", "lookup", "{}")]),
        ScriptedStep::text("found 42"),
    ])))
    .name("researcher")
    .tools(tools(vec![lookup]))
    .build();
    let lead = Agent::builder(Arc::new(ScriptedModel::new(vec![
        ScriptedStep::tool_calls(&[("c1", "agent__researcher", r#"{"prompt": "find it"}"#)]),
        ScriptedStep::text("It is 42."),
    ])))
    .name("lead")
    .temperature(0.5)
    .sub_agent(researcher.as_tool().description("Finds things."))
    .build();
    let result = lead.run("what is it?").await.unwrap();
    assert_eq!(result.text, "It is 42.");

    let all = spans.all();
    let (lead_i, lead_span) = one(&all, "invoke_agent lead");
    assert_eq!(lead_span.parent, None);
    assert_eq!(lead_span.get("otel.kind"), Some("internal"));
    assert_eq!(lead_span.get("gen_ai.operation.name"), Some("invoke_agent"));
    assert_eq!(lead_span.get("gen_ai.agent.name"), Some("lead"));
    assert_eq!(lead_span.get("gen_ai.provider.name"), Some("scripted"));
    // The run's own usage: two model calls of 10 in / 5 out.
    assert_eq!(lead_span.get("gen_ai.usage.input_tokens"), Some("i64:20"));
    assert_eq!(lead_span.get("gen_ai.usage.output_tokens"), Some("i64:10"));
    assert_eq!(lead_span.get("error.type"), None);

    let chats = named(&all, "chat scripted-test-model");
    assert_eq!(chats.len(), 4, "two model calls per agent");
    let lead_chats: Vec<_> = chats.iter().filter(|(_, s)| s.parent == Some(lead_i)).collect();
    assert_eq!(lead_chats.len(), 2);
    let (_, first) = lead_chats[0];
    assert_eq!(first.get("otel.kind"), Some("client"));
    assert_eq!(first.get("gen_ai.request.model"), Some("scripted-test-model"));
    assert_eq!(first.get("gen_ai.response.model"), Some("scripted-test-model"));
    assert_eq!(first.get("gen_ai.request.temperature"), Some("0.5"));
    assert_eq!(first.get("gen_ai.response.finish_reasons"), Some("tool_calls"));
    assert_eq!(first.get("gen_ai.usage.input_tokens"), Some("i64:10"));
    assert_eq!(
        lead_chats[1].1.get("gen_ai.response.finish_reasons"),
        Some("stop")
    );

    // execute_tool under the lead's run, the researcher's run under it, and
    // the researcher's own tool under that.
    let (call_i, call) = one(&all, "execute_tool agent__researcher");
    assert_eq!(call.parent, Some(lead_i));
    assert_eq!(call.get("gen_ai.tool.call.id"), Some("c1"));
    assert_eq!(call.get("gen_ai.tool.name"), Some("agent__researcher"));
    let (child_i, child) = one(&all, "invoke_agent researcher");
    assert_eq!(child.parent, Some(call_i));
    assert_eq!(chats.iter().filter(|(_, s)| s.parent == Some(child_i)).count(), 2);
    let (_, lookup_span) = one(&all, "execute_tool lookup");
    assert_eq!(lookup_span.parent, Some(child_i));
    assert_eq!(lookup_span.get("gen_ai.tool.call.id"), Some("r1"));
    assert_eq!(lookup_span.get("error.type"), None);
}

#[tokio::test(flavor = "current_thread")]
async fn failures_mark_their_spans_with_an_error_type() {
    let spans = Spans::default();
    let _guard = tracing::subscriber::set_default(tracing_subscriber::registry().with(spans.clone()));
    // With one dispatcher registered, tracing-core asks the registering
    // thread's default, so a callsite another test's thread hits first is
    // cached "never" for this subscriber. A second live dispatcher makes it
    // ask every registered one.
    let _second = tracing::Dispatch::new(tracing_subscriber::registry());
    let model = ScriptedModel::new(vec![
        ScriptedStep::tool_calls(&[("c1", "broken", "{}")]),
        ScriptedStep::fail(ModelError::authentication(Some(401), "bad key")),
    ]);
    let broken = common::TestTool::new("broken", common::object_schema(), |_, _| async {
        Err(loopwright_core::ToolError::execution("disk on fire"))
    });
    let agent = Agent::builder(Arc::new(model)).tools(tools(vec![broken])).build();
    let outcome = agent
        .run("x")
        .await
        .or_else(loopwright_core::RunError::into_result)
        .unwrap();
    assert_eq!(outcome.exit(), ExitReason::ModelError);

    let all = spans.all();
    let (_, run) = one(&all, "invoke_agent agent");
    assert_eq!(run.get("error.type"), Some("model_error"));
    assert_eq!(run.get("otel.status_code"), Some("error"));
    let (_, tool) = one(&all, "execute_tool broken");
    assert_eq!(tool.get("error.type"), Some("tool_error"));
    assert_eq!(tool.get("otel.status_code"), Some("error"));
    let chats = named(&all, "chat scripted-test-model");
    assert_eq!(chats[1].1.get("error.type"), Some("authentication"));
    assert_eq!(chats[1].1.get("otel.status_code"), Some("error"));
}

/// Notes, when the run's `invoke_agent` span closes, whether the reader had
/// already seen the run end. It waits up to `WAIT` for the reader there
/// (a reader that could see the end would have by then); a run whose span
/// closes before its events end keeps the reader waiting meanwhile.
#[derive(Clone, Default)]
struct CloseOrder {
    reader_done: Arc<std::sync::atomic::AtomicBool>,
    seen_at_close: Arc<Mutex<Option<bool>>>,
}

impl<S: tracing::Subscriber + for<'a> LookupSpan<'a>> Layer<S> for CloseOrder {
    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        const WAIT: std::time::Duration = std::time::Duration::from_millis(300);
        use std::sync::atomic::Ordering::SeqCst;
        if ctx.span(&id).is_none_or(|span| span.name() != "invoke_agent") {
            return;
        }
        let deadline = std::time::Instant::now() + WAIT;
        while !self.reader_done.load(SeqCst) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        *self.seen_at_close.lock().unwrap() = Some(self.reader_done.load(SeqCst));
    }
}

/// A reader that saw a run end (and then flushes its telemetry, as the CLI
/// does before it exits) finds the run's span already ended: the events
/// close after it. On a multi-thread runtime, where the reader runs beside
/// the run's task; it failed before the fix, with `Some(true)`.
#[test]
fn the_run_span_ends_before_the_run_events_do() {
    let order = CloseOrder::default();
    let dispatch = tracing::Dispatch::new(tracing_subscriber::registry().with(order.clone()));
    let _second = tracing::Dispatch::new(tracing_subscriber::registry());
    let _guard = tracing::dispatcher::set_default(&dispatch);
    let workers = dispatch.clone();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .on_thread_start(move || {
            // The runtime's threads report to the test's subscriber for
            // their whole life.
            std::mem::forget(tracing::dispatcher::set_default(&workers));
        })
        .build()
        .unwrap();
    let agent = Agent::builder(Arc::new(ScriptedModel::new(vec![ScriptedStep::text("hi")]))).build();
    let result = rt.block_on(async { agent.run("hello").await.unwrap() });
    order.reader_done.store(true, std::sync::atomic::Ordering::SeqCst);
    assert_eq!(result.text, "hi");
    drop(rt);
    assert_eq!(
        *order.seen_at_close.lock().unwrap(),
        Some(false),
        "the reader saw the run end before its span closed"
    );
}
