//! Admitting a tool call: whether it may run (answered already, refused,
//! denied, not offered, unknown, bad JSON, arguments against the schema),
//! the approval it asks for first, its concurrency slot, and the messages
//! that tell the model what to fix.
//!
//! Invariant: a call that is not admitted gets its one result here (an
//! error result saying why), and is never run.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use super::emit::Emitter;
use super::exec::{Batch, MAX_NAMES_LISTED, Outcome, Pause, error_outcome, paused_outcome, refused_outcome};
use super::gate;
use super::state::{PendingCall, PendingKind};
use crate::approval::{ApprovalRequest, Approvals};
use loopwright_types::ToolCall;
use loopwright_types::toolset::{ExposedTool, ToolCatalog};

/// Whether call `call` may run: the tool it names, or the outcome it gets
/// instead (already answered, refused, denied, not offered, unknown, bad
/// JSON); [`admit`] checks its arguments too.
pub(super) fn check<'b>(
    batch: &Batch<'b>,
    call: &ToolCall,
    bad_json: &HashMap<&str, &str>,
) -> Result<&'b ExposedTool, Box<Outcome>> {
    if let Some(output) = batch.answered.get(&call.id) {
        return Err(Box::new(Outcome {
            output: output.clone(),
            duration: Duration::ZERO,
            details: Some("final_answer"),
            budget: None,
            paused: None,
            trip: None,
        }));
    }
    if let Some(reason) = batch.refuse {
        return Err(Box::new(error_outcome(reason, "not_run")));
    }
    if let Some(refusal) = batch.decided.get(&call.id) {
        return Err(Box::new(super::exec::refused_outcome(refusal.clone())));
    }
    if let Some(message) = batch.rejected.get(&call.id) {
        return Err(Box::new(error_outcome(message.clone(), "guardrail")));
    }
    if let Some(offered) = batch.offered
        && !offered.contains(&call.name)
    {
        return Err(Box::new(error_outcome(
            not_offered_message(&call.name, offered, batch.catalog),
            "unknown_tool",
        )));
    }
    let Some(exposed) = batch.catalog.get(&call.name) else {
        return Err(Box::new(error_outcome(
            unknown_tool_message(&call.name, batch.catalog),
            "unknown_tool",
        )));
    };
    if let Some(err) = bad_json.get(call.id.as_str()) {
        return Err(Box::new(error_outcome(
            format!(
                "The arguments for tool {} are not valid JSON ({err}). Call the tool again with a JSON object \
             matching its input schema.",
                call.name
            ),
            "invalid_input",
        )));
    }
    Ok(exposed)
}

/// [`check`], then the call's arguments against the tool's input schema
/// (off the async workers when that could be slow).
pub(super) async fn admit<'b>(
    batch: &Batch<'b>,
    call: &ToolCall,
    bad_json: &HashMap<&str, &str>,
) -> Result<&'b ExposedTool, Box<Outcome>> {
    let exposed = check(batch, call, bad_json)?;
    if let Err(message) = exposed.validate_async(&call.input).await {
        return Err(Box::new(error_outcome(
            format!(
                "Invalid arguments for tool {}: {message}. The tool was not called; fix the arguments and call \
             it again.",
                call.name
            ),
            "invalid_input",
        )));
    }
    Ok(exposed)
}

/// The approval request of a call that passes the gate first (approvals
/// installed and the batch not approved already).
pub(super) fn gate_request(
    batch: &Batch<'_>,
    call: &ToolCall,
    exposed: &ExposedTool,
) -> Option<(Approvals, ApprovalRequest)> {
    // A client tool asks no approval here: its client decides whether to
    // run it.
    if super::client_tool::is_client_tool(exposed.tool.as_ref()) {
        return None;
    }
    let approvals = batch.options.approvals.clone().filter(|_| !batch.pre_approved)?;
    let request = ApprovalRequest {
        call_id: call.id.clone(),
        tool: exposed.name.clone(),
        source: exposed.source.clone(),
        original_name: exposed.original_name.clone(),
        input: call.input.clone(),
        tier: approvals
            .policy
            .tier_for(&exposed.name, &exposed.tool.definition().annotations),
    };
    Some((approvals, request))
}

/// The calls of `batch` that would ask for approval before they run (those
/// that pass every other check), with the approval settings.
pub(crate) async fn approval_requests(batch: &Batch<'_>) -> Vec<(Approvals, ApprovalRequest)> {
    let bad_json: HashMap<&str, &str> = batch
        .bad_json
        .iter()
        .map(|(id, e)| (id.as_str(), e.as_str()))
        .collect();
    let mut requests = Vec::new();
    for call in batch.calls {
        if let Ok(exposed) = admit(batch, call, &bad_json).await
            && let Some(request) = gate_request(batch, call, exposed)
        {
            requests.push(request);
        }
    }
    requests
}

fn unknown_tool_message(name: &str, catalog: &ToolCatalog) -> String {
    let names = catalog.names();
    if names.is_empty() {
        return format!("Unknown tool {name}: no tools are available. Answer without tools.");
    }
    let mut listed = names
        .iter()
        .take(MAX_NAMES_LISTED)
        .copied()
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > MAX_NAMES_LISTED {
        listed.push_str(&format!(" (and {} more)", names.len() - MAX_NAMES_LISTED));
    }
    format!("Unknown tool {name}. Available tools: {listed}.")
}

/// For a call to a tool a hook did not offer this step: the tools it did
/// offer that exist.
fn not_offered_message(name: &str, offered: &HashSet<String>, catalog: &ToolCatalog) -> String {
    let mut names: Vec<&str> = offered
        .iter()
        .map(String::as_str)
        .filter(|n| catalog.get(n).is_some())
        .collect();
    names.sort_unstable();
    let listed = if names.is_empty() {
        "none; answer without tools".to_owned()
    } else {
        names.join(", ")
    };
    format!("Tool {name} is not available in this step. Available tools: {listed}.")
}

/// A concurrency slot for a call (none if the semaphore were closed: the
/// call then runs unbounded), or its cancelled outcome when the run was
/// cancelled first: a cancelled run starts no tool.
pub(super) async fn slot(
    token: &CancellationToken,
    semaphore: Arc<Semaphore>,
) -> Result<Option<tokio::sync::OwnedSemaphorePermit>, Outcome> {
    let permit = tokio::select! {
        biased;
        _ = token.cancelled() => return Err(error_outcome("The tool call was cancelled.", "cancelled")),
        permit = semaphore.acquire_owned() => permit.ok(),
    };
    if token.is_cancelled() {
        return Err(error_outcome("The tool call was cancelled.", "cancelled"));
    }
    Ok(permit)
}

/// A client tool's call: paused until the client's output comes.
pub(super) fn client_call(
    call_id: String,
    tool: String,
    arguments: serde_json::Value,
    scope: &super::scope::SharedScope,
) -> Outcome {
    paused_outcome(Pause::Deferred(super::client_tool::pending(
        call_id,
        tool,
        arguments,
        &scope.path,
    )))
}

/// Ask call's approval gate: `None` when the call may run, else its
/// outcome (refused, or paused until a person decides).
pub(super) async fn pass_gate(
    approvals: Approvals,
    request: ApprovalRequest,
    emit: Emitter,
    token: &CancellationToken,
    scope: &super::scope::SharedScope,
) -> Option<Outcome> {
    match gate::pass(&approvals, &emit, request, token).await {
        gate::Verdict::Run => None,
        gate::Verdict::Refused(refusal) => Some(refused_outcome(refusal)),
        gate::Verdict::Deferred(request) => Some(paused_outcome(Pause::Deferred(PendingCall {
            kind: PendingKind::ToolCall,
            call_id: request.call_id,
            tool: request.tool,
            arguments: request.input,
            tier: request.tier,
            agent_path: scope.path.clone(),
        }))),
    }
}
