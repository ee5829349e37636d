//! Running one step's tool calls: validation, bounded concurrency, timeouts,
//! panics, cancellation and truncation.
//!
//! Invariant: every call passed in gets exactly one [`ToolResult`], returned
//! in the order of the calls, whatever happens to the call or the run;
//! except a call that paused for a person (its approval deferred, or a
//! sub-agent that paused): it gets no result now and is returned as a
//! [`Pause`] instead, to be answered when the run is resumed.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::account::{Accountant, millis};
use super::admit::{admit, client_call, gate_request, pass_gate, slot};
use super::emit::Emitter;
use super::events::AgentEvent;
use super::gate;
use super::guard::ResultsGate;
use super::guardrail::ResultGuard;
use super::hooks::ToolResultContext;
use super::options::AgentOptions;
use super::resume::SharedDecisions;
use super::state::{PendingCall, RunState, SuspendedCall};
use super::sub_agent::SubAgentEnd;
use crate::accounting::{AccountingEntry, EntryStatus, ToolEntry};
use crate::approval::{ApprovalRequest, Approvals};
use crate::durable::DurableError;
use crate::guardrail::{Guardrails, Trip};
use crate::telemetry;
use loopwright_types::budget::{BUDGET_EXCEEDED_RESULT, BudgetFigures};
use loopwright_types::tool::ProgressQueue;
use loopwright_types::tool::{OWN_TIMEOUT_GRACE, ProgressReporter, ToolContext, ToolError, ToolOutput};
use loopwright_types::toolset::{ExposedTool, ToolCatalog};
use loopwright_types::truncate_output;
use loopwright_types::util::rfc3339_now;
use loopwright_types::{ToolCall, ToolResult};

/// After a run is cancelled, how long running tools get to notice their
/// cancellation token and return before their tasks are aborted.
pub const CANCEL_GRACE: Duration = Duration::from_millis(500);

/// Characters of a failed call's output kept in its accounting entry.
const MAX_ERROR_CHARS: usize = 500;

/// Unknown-tool errors list at most this many available names.
pub(super) const MAX_NAMES_LISTED: usize = 50;

/// Calls a step asked for, and what to do with them.
pub(crate) struct Batch<'a> {
    /// The loop's step these calls are of (part of their idempotency keys).
    pub step: u32,
    pub calls: &'a [ToolCall],
    /// Calls whose arguments were not JSON: (call id, parse error).
    pub bad_json: &'a [(String, String)],
    pub catalog: &'a Arc<ToolCatalog>,
    /// Exposed names offered this step, when a hook narrowed them.
    pub offered: Option<&'a HashSet<String>>,
    /// Run none of the calls: each gets this as its error result (the
    /// concluding step).
    pub refuse: Option<&'a str>,
    /// Calls already answered (the final-answer tool), by call id: not run,
    /// and their results reported like any other.
    pub answered: &'a HashMap<String, ToolOutput>,
    /// Calls a decision answered (a resumed run's, or a durable run's
    /// decided before the step): not run; a denial's error, or the output
    /// given in the call's place, is their result.
    pub decided: &'a HashMap<String, super::gate::Refusal>,
    /// Calls a guardrail rejected, by call id: not run, the message is
    /// their error result.
    pub rejected: &'a HashMap<String, String>,
    /// The guards of the calls' results.
    pub result_guards: Option<Arc<Guardrails>>,
    pub options: &'a AgentOptions,
    pub cancel: &'a CancellationToken,
    pub emit: &'a Emitter,
    pub accountant: &'a Accountant,
    /// The run's place in its tree, for the tools' contexts.
    pub scope: &'a super::scope::SharedScope,
    /// Admits results while the context window has room.
    pub gate: Option<&'a ResultsGate>,
    /// The calls were approved already (a resumed run): no gate.
    pub pre_approved: bool,
    /// Paused calls to continue ([`Tool::resume`](crate::Tool::resume)),
    /// by call id, with the run tree's decisions.
    pub resumes: Option<(&'a HashMap<String, Box<RunState>>, &'a SharedDecisions)>,
    /// The run's journal: a durable run journals each call (see
    /// [`Journal::calls`](super::journal::Journal::calls)).
    pub journal: Option<&'a super::journal::Journal>,
    /// The calls' `tool_call` events went out already (a resumed step's).
    pub announced: bool,
}

/// A call that paused for a person instead of getting its result.
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) enum Pause {
    /// Its approval waits ([`Approvals::defer`](crate::Approvals::defer)).
    Deferred(PendingCall),
    /// It is a sub-agent's, paused on its own questions.
    Suspended(SuspendedCall),
}

/// What a batch produced.
pub(super) struct Executed {
    /// One per call that did not pause, in call order.
    pub results: Vec<ToolResult>,
    /// The calls that paused, in call order.
    pub paused: Vec<Pause>,
    /// False when the event receiver went away.
    #[allow(dead_code)]
    pub attached: bool,
    /// A result was replaced because the context window would overflow.
    pub over_budget: bool,
    /// A durable run's engine could not journal the calls (the run stops).
    pub journal_error: Option<DurableError>,
    /// A result guard stopped the run (the first, in call order).
    pub trip: Option<Trip>,
}

/// Settle call `i`'s outcome: the `on_tool_result` hook, then the context
/// budget (true when the result had to be replaced).
fn settle(batch: &Batch<'_>, i: usize, outcome: &mut Outcome) -> bool {
    if let Some(hook) = &batch.options.hooks.on_tool_result {
        let call = &batch.calls[i];
        let exposed = batch.catalog.get(&call.name);
        let ctx = ToolResultContext {
            call,
            source: exposed.map(|t| t.source.as_str()),
            original_name: exposed.map(|t| t.original_name.as_str()),
        };
        outcome.output = hook(&ctx, std::mem::take(&mut outcome.output));
    }
    let Some(gate) = batch.gate else {
        return false;
    };
    let cut = truncate_output(outcome.output.clone(), batch.options.max_tool_output_bytes);
    match gate.admit(&cut.parts) {
        Ok(()) => false,
        Err(figures) => {
            outcome.output = ToolOutput::error(BUDGET_EXCEEDED_RESULT);
            outcome.details = Some("budget_exceeded");
            outcome.budget = Some(figures);
            true
        }
    }
}

/// How a finished call turned out, before truncation.
pub(super) struct Outcome {
    pub(super) output: ToolOutput,
    pub(super) duration: Duration,
    /// Why it failed or did not run, for accounting.
    pub(super) details: Option<&'static str>,
    /// The budget figures when the result was replaced.
    pub(super) budget: Option<BudgetFigures>,
    /// The call paused instead of finishing.
    pub(super) paused: Option<Pause>,
    /// A guard of its result stopped the run.
    pub(super) trip: Option<Trip>,
}

pub(super) fn error_outcome(message: impl Into<String>, details: &'static str) -> Outcome {
    Outcome {
        output: ToolOutput::error(message),
        duration: Duration::ZERO,
        details: Some(details),
        budget: None,
        paused: None,
        trip: None,
    }
}

/// The outcome of a call a decision answered: its refusal's output.
pub(super) fn refused_outcome(refusal: gate::Refusal) -> Outcome {
    Outcome {
        output: refusal.output,
        ..error_outcome("", refusal.details)
    }
}

pub(super) fn paused_outcome(pause: Pause) -> Outcome {
    Outcome {
        paused: Some(pause),
        ..error_outcome("", "paused")
    }
}

/// What the `details` of a journaled outcome can be (journaled as text,
/// read back as these).
const DETAILS: &[&str] = &[
    "cancelled",
    "timeout",
    "panic",
    "paused",
    "denied",
    gate::ANSWERED,
    "client_tool",
    "not_run",
    "final_answer",
    "unknown_tool",
    "invalid_input",
    "budget_exceeded",
    "guardrail",
];

/// A call's outcome as a durable run journals it: before the
/// `on_tool_result` hook and the budget, which apply again on replay.
#[derive(serde::Serialize)]
struct JournaledRef<'a> {
    output: &'a ToolOutput,
    duration_ms: u64,
    details: Option<&'a str>,
    paused: Option<&'a Pause>,
    #[serde(skip_serializing_if = "Option::is_none")]
    trip: Option<&'a Trip>,
}

/// [`JournaledRef`], read back.
#[derive(serde::Deserialize)]
struct Journaled {
    output: ToolOutput,
    #[serde(default)]
    duration_ms: u64,
    #[serde(default)]
    details: Option<String>,
    #[serde(default)]
    paused: Option<Pause>,
    #[serde(default)]
    trip: Option<Trip>,
}

impl Outcome {
    fn to_journal(&self) -> serde_json::Value {
        serde_json::to_value(JournaledRef {
            output: &self.output,
            duration_ms: u64::try_from(self.duration.as_millis()).unwrap_or(u64::MAX),
            details: self.details,
            paused: self.paused.as_ref(),
            trip: self.trip.as_ref(),
        })
        .unwrap_or_default()
    }

    fn from_journal(value: serde_json::Value) -> Self {
        match serde_json::from_value::<Journaled>(value) {
            Ok(journaled) => Outcome {
                output: journaled.output,
                duration: Duration::from_millis(journaled.duration_ms),
                details: journaled
                    .details
                    .and_then(|d| DETAILS.iter().find(|known| **known == d).copied()),
                budget: None,
                paused: journaled.paused,
                trip: journaled.trip,
            },
            Err(e) => error_outcome(
                format!("The journaled result of this call cannot be read: {e}"),
                "panic",
            ),
        }
    }
}

/// What running (some of) a batch's calls produced.
struct Ran {
    outcomes: Vec<Option<Outcome>>,
    attached: bool,
    over_budget: bool,
}

/// Run a step's calls and return one result per call, in call order. A
/// durable run journals each call's outcome in call order, and runs only
/// the calls its journal does not hold yet (the rest of the batch from the
/// first one missing), their outcomes replayed for the others.
pub(crate) async fn execute(batch: Batch<'_>) -> Executed {
    let n = batch.calls.len();
    let Some(calls) = batch.journal.and_then(|j| j.calls(batch.step, n)) else {
        let ran = run_calls(&batch, 0, Vec::new()).await;
        return assemble(&batch, ran, None);
    };
    let senders: Vec<Option<_>> = calls.values.into_iter().map(Some).collect();
    let runner = async {
        // Dropped unsent: every call is journaled (or the engine failed).
        let first = calls.start.await.ok()?;
        batch.emit.release().await;
        Some(run_calls(&batch, first, senders).await)
    };
    let ((journaled, journal_error), ran) = tokio::join!(calls.driver, runner);
    let ran_any = ran.is_some();
    let mut ran = ran.unwrap_or(Ran {
        outcomes: (0..n).map(|_| None).collect(),
        attached: true,
        over_budget: false,
    });
    for (i, value) in journaled.into_iter().enumerate() {
        if let Some(value) = value {
            let mut outcome = Outcome::from_journal(value);
            if outcome.paused.is_none() {
                ran.over_budget |= settle(&batch, i, &mut outcome);
            }
            ran.outcomes[i] = Some(outcome);
        }
    }
    if !ran_any && journal_error.is_none() {
        // The whole batch came from the journal: its events went out then.
        batch.emit.discard_held();
    }
    assemble(&batch, ran, journal_error)
}

/// Send call `i`'s outcome to its journal sender, once.
fn journal_outcome(
    senders: &mut [Option<tokio::sync::oneshot::Sender<serde_json::Value>>],
    i: usize,
    outcome: &Outcome,
) {
    if let Some(sender) = senders.get_mut(i).and_then(Option::take) {
        let _ = sender.send(outcome.to_journal());
    }
}

/// Run calls `start..` of the batch (the ones before it come from the
/// journal), sending each outcome to its journal sender (when any) as soon
/// as it is known.
async fn run_calls(
    batch: &Batch<'_>,
    start: usize,
    mut senders: Vec<Option<tokio::sync::oneshot::Sender<serde_json::Value>>>,
) -> Ran {
    let n = batch.calls.len();
    let mut running = Running {
        outcomes: (0..n).map(|_| None).collect(),
        attached: true,
        over_budget: false,
        tasks: JoinSet::new(),
        task_index: HashMap::new(),
        aborts: HashMap::new(),
        progress: Arc::new(ProgressQueue::default()),
    };
    let bad_json: HashMap<&str, &str> = batch
        .bad_json
        .iter()
        .map(|(id, e)| (id.as_str(), e.as_str()))
        .collect();
    let semaphore = Arc::new(Semaphore::new(batch.options.tool_concurrency.max(1)));
    for (i, call) in batch.calls.iter().enumerate().skip(start) {
        let exposed = batch.catalog.get(&call.name);
        // A call a policy answered (the final-answer tool) is not shown: its
        // answer is the `output` event.
        if !batch.announced && !batch.answered.contains_key(&call.id) {
            running.attached &= batch
                .emit
                .send(AgentEvent::ToolCall {
                    call_id: call.id.clone(),
                    tool: call.name.clone(),
                    source: exposed.map(|t| t.source.clone()),
                    original_name: exposed.map(|t| t.original_name.clone()),
                    input: call.input.clone(),
                })
                .await
                .is_ok();
        }
        match admit(batch, call, &bad_json).await {
            Ok(exposed) => {
                let task = CallTask::new(batch, i, exposed, &semaphore, &running);
                let arguments = batch.options.trace_content.then_some(&call.input);
                let span = telemetry::execute_tool(
                    &exposed.name,
                    &call.id,
                    &exposed.source,
                    &exposed.original_name,
                    arguments,
                );
                let handle = running.tasks.spawn(task.run().instrument(span));
                running.task_index.insert(handle.id(), i);
                running.aborts.insert(i, handle);
            }
            Err(outcome) => {
                journal_outcome(&mut senders, i, &outcome);
                running.outcomes[i] = Some(*outcome);
            }
        }
    }
    // Results not run (unknown, bad JSON, invalid) are reported at once.
    for i in 0..n {
        if let Some(outcome) = running.outcomes[i].as_mut() {
            running.over_budget |= settle(batch, i, outcome);
            running.attached &= report(batch, i, outcome).await;
        }
    }
    running.join(batch, &mut senders).await;
    // Every call run here has an outcome, journaled.
    for (i, outcome) in running.outcomes.iter_mut().enumerate().skip(start) {
        let outcome =
            outcome.get_or_insert_with(|| error_outcome("The tool call was cancelled.", "cancelled"));
        journal_outcome(&mut senders, i, outcome);
    }
    Ran {
        outcomes: running.outcomes,
        attached: running.attached,
        over_budget: running.over_budget,
    }
}

/// A batch's calls while they run.
struct Running {
    outcomes: Vec<Option<Outcome>>,
    attached: bool,
    over_budget: bool,
    tasks: JoinSet<Outcome>,
    /// The call of each task.
    task_index: HashMap<tokio::task::Id, usize>,
    /// Each running call's task, to abort it.
    aborts: HashMap<usize, tokio::task::AbortHandle>,
    progress: Arc<ProgressQueue>,
}

impl Running {
    /// Wait for the calls' tasks: report each outcome as it comes, and
    /// after a cancellation's grace give the calls still running their
    /// cancelled result (their tasks are aborted; one stuck in blocking
    /// code ends when it can, without the batch).
    async fn join(
        &mut self,
        batch: &Batch<'_>,
        senders: &mut [Option<tokio::sync::oneshot::Sender<serde_json::Value>>],
    ) {
        let mut cancelled_at: Option<Instant> = None;
        while !self.aborts.is_empty() {
            let grace_over = async {
                match cancelled_at {
                    Some(at) => tokio::time::sleep_until(at + CANCEL_GRACE).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                biased;
                joined = self.tasks.join_next_with_id() => {
                    let Some(joined) = joined else { break };
                    let (id, outcome) = match joined {
                        Ok((id, outcome)) => (id, outcome),
                        Err(e) => {
                            let id = e.id();
                            let outcome = if e.is_panic() {
                                error_outcome(format!("The tool panicked: {}", panic_message(e.into_panic())), "panic")
                            } else {
                                error_outcome("The tool call was cancelled.", "cancelled")
                            };
                            (id, outcome)
                        }
                    };
                    if let Some(i) = self.task_index.remove(&id) {
                        self.settle(batch, senders, i, outcome).await;
                    }
                }
                () = self.progress.notified() => {
                    self.attached &= emit_progress(batch, &self.progress).await;
                }
                _ = batch.cancel.cancelled(), if cancelled_at.is_none() => {
                    cancelled_at = Some(Instant::now());
                }
                () = grace_over => {
                    let left: Vec<usize> = self.aborts.keys().copied().collect();
                    for i in left {
                        self.settle(batch, senders, i, error_outcome("The tool call was cancelled.", "cancelled")).await;
                    }
                }
            }
        }
    }

    /// Call `i` ended with `outcome` (its task is aborted if it still runs).
    async fn settle(
        &mut self,
        batch: &Batch<'_>,
        senders: &mut [Option<tokio::sync::oneshot::Sender<serde_json::Value>>],
        i: usize,
        mut outcome: Outcome,
    ) {
        let Some(task) = self.aborts.remove(&i) else {
            return;
        };
        task.abort();
        journal_outcome(senders, i, &outcome);
        // Progress reported before the result goes first; later reports of
        // this call are dropped.
        self.attached &= emit_progress(batch, &self.progress).await;
        self.progress.finish(&batch.calls[i].id);
        if outcome.paused.is_none() {
            self.over_budget |= settle(batch, i, &mut outcome);
            self.attached &= report(batch, i, &outcome).await;
        }
        self.outcomes[i] = Some(outcome);
    }
}

/// One call's task: approval, a concurrency slot, then the tool under its
/// deadline.
struct CallTask {
    tool: Arc<dyn loopwright_types::tool::Tool>,
    input: serde_json::Value,
    token: CancellationToken,
    timeout: Duration,
    progress: ProgressReporter,
    semaphore: Arc<Semaphore>,
    call_id: String,
    scope: super::scope::SharedScope,
    step: u32,
    resume: Option<(Box<RunState>, SharedDecisions)>,
    exposed_name: String,
    approval: Option<(Approvals, ApprovalRequest, Emitter)>,
    /// The guards of its result.
    guard: Option<ResultGuard>,
    /// Its result goes into its span ([`AgentOptions::trace_content`]).
    trace_content: bool,
}

impl CallTask {
    fn new(
        batch: &Batch<'_>,
        i: usize,
        exposed: &ExposedTool,
        semaphore: &Arc<Semaphore>,
        running: &Running,
    ) -> Self {
        let call = &batch.calls[i];
        let tool = exposed.tool.clone();
        let timeout = tool
            .timeout_for(&call.input)
            .map_or(batch.options.tool_timeout, |own| own + OWN_TIMEOUT_GRACE);
        Self {
            tool,
            input: call.input.clone(),
            token: batch.cancel.child_token(),
            timeout,
            progress: ProgressReporter::to_queue(call.id.clone(), running.progress.clone()),
            semaphore: semaphore.clone(),
            call_id: call.id.clone(),
            scope: batch.scope.clone(),
            step: batch.step,
            resume: batch
                .resumes
                .and_then(|(states, decisions)| states.get(&call.id).map(|s| (s.clone(), decisions.clone()))),
            exposed_name: exposed.name.clone(),
            approval: gate_request(batch, call, exposed).map(|(a, r)| (a, r, batch.emit.clone())),
            guard: batch.result_guards.clone().map(|rails| ResultGuard {
                rails,
                accountant: batch.accountant.clone(),
                call: call.clone(),
                step: batch.step,
            }),
            trace_content: batch.options.trace_content,
        }
    }

    async fn run(self) -> Outcome {
        let CallTask {
            tool,
            input,
            token,
            timeout,
            progress,
            semaphore,
            call_id,
            scope,
            step,
            resume,
            exposed_name,
            approval,
            guard,
            trace_content,
        } = self;
        // A client tool runs in the client: the run pauses for its output.
        if super::client_tool::is_client_tool(tool.as_ref()) {
            return client_call(call_id, exposed_name, input, &scope);
        }
        // Waiting for approval holds no concurrency slot and does not
        // count against the tool's timeout.
        // (Boxed, like a sub-agent's run below: the rare paths stay out of
        // every call task's future, which the executor moves whole.)
        if let Some((approvals, request, emit)) = approval
            && let Some(refused) = Box::pin(pass_gate(approvals, request, emit, &token, &scope)).await
        {
            return refused;
        }
        let _permit = match slot(&token, semaphore).await {
            Ok(permit) => permit,
            Err(cancelled) => return cancelled,
        };
        let started = Instant::now();
        let deadline = started + timeout;
        let scope: Arc<dyn loopwright_types::RunScope> = scope;
        let ctx = ToolContext::new(call_id.clone())
            .with_step(step)
            .with_cancellation(token.clone())
            .with_deadline(deadline)
            .with_progress(progress)
            .with_scope(scope);
        let (output, details) = tokio::select! {
            ended = call_or_delegate(tool.as_ref(), input, resume, ctx) => match ended {
                SubAgentEnd::Done(Ok(output)) => (output, None),
                SubAgentEnd::Done(Err(ToolError::Cancelled)) => {
                    (ToolOutput::error("The tool call was cancelled."), Some("cancelled"))
                }
                SubAgentEnd::Done(Err(e)) => (ToolOutput::error(format!("Tool error: {e}")), None),
                SubAgentEnd::Paused(state) => {
                    return paused_outcome(Pause::Suspended(SuspendedCall {
                        call_id,
                        tool: exposed_name,
                        state,
                    }));
                }
            },
            _ = tokio::time::sleep_until(deadline) => {
                token.cancel();
                let message = format!("tool execution timed out after {}", format_duration(timeout));
                (ToolOutput::error(message), Some("timeout"))
            }
        };
        let (output, details, trip) = ResultGuard::check_if_any(guard, output, details).await;
        telemetry::record_tool(&tracing::Span::current(), &output, details, trace_content);
        Outcome {
            output,
            duration: started.elapsed(),
            details,
            budget: None,
            paused: None,
            trip,
        }
    }
}

/// One result per call, in call order (a call without an outcome, which the
/// journal failed to give, was not run), and the calls that paused.
fn assemble(batch: &Batch<'_>, ran: Ran, journal_error: Option<DurableError>) -> Executed {
    let Ran {
        outcomes,
        attached,
        over_budget,
    } = ran;
    let mut results = Vec::with_capacity(outcomes.len());
    let mut paused = Vec::new();
    let mut trip = None;
    for (call, outcome) in batch.calls.iter().zip(outcomes) {
        let mut outcome =
            outcome.unwrap_or_else(|| error_outcome("The tool call was cancelled.", "cancelled"));
        if trip.is_none() {
            trip = outcome.trip.take();
        }
        if let Some(pause) = outcome.paused {
            paused.push(pause);
            continue;
        }
        let output = truncate_output(outcome.output, batch.options.max_tool_output_bytes);
        results.push(ToolResult {
            call_id: call.id.clone(),
            parts: output.parts,
            is_error: output.is_error,
        });
    }
    Executed {
        results,
        paused,
        attached,
        over_budget,
        journal_error,
        trip,
    }
}

fn format_duration(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{} ms", d.as_millis())
    }
}

fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(no message)".to_owned()
    }
}

/// Send the progress reports waiting; false when the receiver is gone.
async fn emit_progress(batch: &Batch<'_>, queue: &ProgressQueue) -> bool {
    let mut attached = true;
    for p in queue.drain() {
        attached &= batch
            .emit
            .send(AgentEvent::ToolProgress {
                call_id: p.call_id,
                progress: p.progress,
                total: p.total,
                message: p.message,
            })
            .await
            .is_ok();
    }
    attached
}

async fn report(batch: &Batch<'_>, i: usize, outcome: &Outcome) -> bool {
    let call = &batch.calls[i];
    let output = truncate_output(outcome.output.clone(), batch.options.max_tool_output_bytes);
    let text = output.as_text();
    let exposed = batch.catalog.get(&call.name);
    let status = match (output.is_error, outcome.details) {
        (_, Some("cancelled")) => EntryStatus::Cancelled,
        (true, _) => EntryStatus::Error,
        (false, _) => EntryStatus::Ok,
    };
    batch
        .accountant
        .record(AccountingEntry::Tool(ToolEntry {
            timestamp: rfc3339_now(),
            status,
            tool: call.name.clone(),
            source: exposed.map(|t| t.source.clone()).unwrap_or_default(),
            original_name: exposed.map_or_else(|| call.name.clone(), |t| t.original_name.clone()),
            latency_ms: millis(outcome.duration),
            characters_in: call.input.to_string().chars().count() as u64,
            characters_out: text.chars().count() as u64,
            error: output
                .is_error
                .then(|| text.chars().take(MAX_ERROR_CHARS).collect()),
            details: outcome.details.map(str::to_owned),
            budget: outcome.budget,
            agent_path: None,
        }))
        .await;
    if batch.answered.contains_key(&call.id) {
        return true;
    }
    batch
        .emit
        .send(AgentEvent::ToolResult {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            is_error: output.is_error,
            output: output.parts,
            duration_ms: millis(outcome.duration),
        })
        .await
        .is_ok()
}

/// Call `tool`, or run the sub-agent it is (the loop runs those itself:
/// one may pause its caller).
async fn call_or_delegate(
    tool: &dyn loopwright_types::tool::Tool,
    input: serde_json::Value,
    resume: Option<(Box<RunState>, SharedDecisions)>,
    ctx: ToolContext,
) -> SubAgentEnd {
    match super::sub_agent::sub_agent(tool) {
        Some(sub) => Box::pin(sub.run(input, resume, ctx)).await,
        None => SubAgentEnd::Done(tool.call(input, ctx).await),
    }
}
