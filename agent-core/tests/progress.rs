//! Tool progress is bounded: a tool (or a remote server) that reports faster
//! than the application reads never blocks and never grows memory without
//! bound, the newest report of a call survives, and no report of a call
//! follows its result.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::{TestTool, object_schema, run, tools};
use loopwright_core::tool::PROGRESS_BUFFER;
use loopwright_core::{AgentBuilder, AgentEvent, ToolOutput};
use loopwright_testing::ScriptedStep;

const REPORTS: usize = 10_000;

#[tokio::test]
async fn a_flood_of_progress_is_coalesced_and_never_follows_the_result() {
    // Reports in a burst without yielding: the loop cannot drain between
    // them, so only the buffer's worth survives, newest last.
    let flood = TestTool::new("flood", object_schema(), |_, ctx| async move {
        for i in 1..=REPORTS {
            ctx.progress().report(i as f64, Some(REPORTS as f64), None);
        }
        Ok(ToolOutput::text("flooded"))
    });
    let (events, result, _) = run(
        vec![
            ScriptedStep::tool_calls(&[("c1", "flood", "{}")]),
            ScriptedStep::text("done"),
        ],
        tools(vec![flood]),
        |b: AgentBuilder| b,
    )
    .await;
    assert_eq!(result.text, "done");
    let progress: Vec<f64> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolProgress { progress, .. } => Some(*progress),
            _ => None,
        })
        .collect();
    assert!(
        !progress.is_empty() && progress.len() <= PROGRESS_BUFFER,
        "{} progress events for a buffer of {PROGRESS_BUFFER}",
        progress.len()
    );
    assert_eq!(
        progress.last().copied(),
        Some(REPORTS as f64),
        "the newest report survives"
    );
    assert!(progress.windows(2).all(|w| w[0] < w[1]), "reports stay in order");
    let result_at = events
        .iter()
        .position(|e| matches!(e, AgentEvent::ToolResult { .. }))
        .unwrap();
    assert!(
        !events[result_at..]
            .iter()
            .any(|e| matches!(e, AgentEvent::ToolProgress { .. })),
        "a progress event followed its call's result"
    );
}

/// A call's report made after its result (from a task it left behind, or a
/// server's late notification) is dropped, even while a sibling call of the
/// same step still runs. The `on_tool_result` hook marks the moment the
/// first call's result is settled.
#[tokio::test]
async fn a_report_after_the_result_is_dropped() {
    use std::sync::Arc;
    use tokio::sync::Notify;
    let (settled, reported) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
    let (s, r) = (settled.clone(), reported.clone());
    let fast = TestTool::new("fast", object_schema(), move |_, ctx| {
        let (s, r) = (s.clone(), r.clone());
        async move {
            tokio::spawn(async move {
                s.notified().await;
                ctx.progress().report(9.0, None, Some("too late".into()));
                r.notify_one();
            });
            Ok(ToolOutput::text("fast"))
        }
    });
    let r = reported.clone();
    let slow = TestTool::new("slow", object_schema(), move |_, ctx| {
        let r = r.clone();
        async move {
            ctx.progress().report(1.0, None, Some("in time".into()));
            r.notified().await;
            Ok(ToolOutput::text("slow"))
        }
    });
    let options = |b: AgentBuilder| {
        b.on_tool_result(move |ctx, output| {
            if ctx.call.name == "fast" {
                settled.notify_one();
            }
            output
        })
    };
    let (events, _, _) = run(
        vec![
            ScriptedStep::tool_calls(&[("c1", "fast", "{}"), ("c2", "slow", "{}")]),
            ScriptedStep::text("done"),
        ],
        tools(vec![fast, slow]),
        options,
    )
    .await;
    let notes: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolProgress { message: Some(m), .. } => Some(m.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        notes,
        ["in time"],
        "a report made after its call's result reached the application"
    );
}
