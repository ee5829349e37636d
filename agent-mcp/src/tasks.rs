//! The Tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663): a
//! server may answer `tools/call` with a task handle instead of the result;
//! the call then follows the task to its end.
//!
//! Invariants:
//! - the task is polled with `tasks/get` at the server's `pollIntervalMs`
//!   (clamped to [`MIN_POLL_INTERVAL`]..[`MAX_POLL_INTERVAL`],
//!   [`DEFAULT_POLL_INTERVAL`] when it gives none), each poll through the
//!   source's request path;
//! - a changed status message is reported as progress (a `tool_progress`
//!   event of the run);
//! - input the task asks for is answered as a multi-round-trip request's
//!   is ([`mrtr`](crate::mrtr)) and delivered with `tasks/update`;
//! - the call ends with the task's result, its error, or, when the call is
//!   cancelled or the task's deadline passes (the server config's
//!   `taskTimeout`, else the call's own deadline), after `tasks/cancel` was
//!   sent: a task is never left running unobserved by a call that gave up.

use std::time::Duration;

use loopwright_types::ToolContext;
use rmcp::model::{
    CallToolResult, CancelTaskParams, CancelTaskRequest, ClientRequest, CreateTaskResult, GetTaskParams,
    GetTaskRequest, InputRequiredResult, ServerResult, TaskPayload, UpdateTaskParams, UpdateTaskRequest,
};
use tokio::time::Instant;

use crate::request::RequestError;
use crate::source::SourceInner;
use crate::trace::What;

/// Poll interval when the server gives none.
pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_secs(1);
/// Shortest poll interval honoured (a server asking for 0 ms must not spin us).
pub const MIN_POLL_INTERVAL: Duration = Duration::from_millis(10);
/// Longest poll interval honoured, so a finished task is seen in time.
pub const MAX_POLL_INTERVAL: Duration = Duration::from_secs(30);

/// How long `tasks/cancel` may take when the call gives up.
const CANCEL_TIMEOUT: Duration = Duration::from_secs(2);

impl SourceInner {
    /// Follow the task `created` of the call `ctx` (see the module docs);
    /// its outcome as a `tools/call` result.
    pub(crate) async fn follow_task(
        &self,
        created: CreateTaskResult,
        started: Instant,
        ctx: &ToolContext,
    ) -> Result<ServerResult, RequestError> {
        let id = created.task.task_id.clone();
        let deadline = match (self.config.task_timeout, ctx.deadline()) {
            (Some(limit), Some(call)) => Some((started + limit).min(call)),
            (Some(limit), None) => Some(started + limit),
            (None, call) => call,
        };
        let mut interval = poll_interval(created.task.poll_interval_ms);
        let mut last_message = created.task.status_message;
        let mut reports = 0u32;
        loop {
            let wake = Instant::now() + interval;
            if deadline.is_some_and(|d| wake >= d) {
                self.cancel_task(&id).await;
                return Err(RequestError::TimedOut(format!(
                    "task {id} did not finish within the call's deadline; it was cancelled"
                )));
            }
            tokio::select! {
                () = tokio::time::sleep_until(wake) => {}
                () = ctx.cancellation().cancelled() => {
                    self.cancel_task(&id).await;
                    return Err(RequestError::Cancelled);
                }
            }
            let get = || ClientRequest::GetTaskRequest(GetTaskRequest::new(GetTaskParams::new(id.clone())));
            let detailed = match self.request(What::Task("tasks/get"), &get, ctx).await {
                Ok(ServerResult::GetTaskResult(got)) => got.task,
                Ok(other) => {
                    return Err(RequestError::Failed(format!(
                        "unexpected answer to tasks/get: {other:?}"
                    )));
                }
                Err(RequestError::Cancelled) => {
                    self.cancel_task(&id).await;
                    return Err(RequestError::Cancelled);
                }
                Err(e) => return Err(e),
            };
            interval = poll_interval(detailed.task.poll_interval_ms);
            if detailed.task.status_message.is_some() && detailed.task.status_message != last_message {
                last_message.clone_from(&detailed.task.status_message);
                reports += 1;
                ctx.progress()
                    .report(f64::from(reports), None, last_message.clone());
            }
            match detailed.payload {
                TaskPayload::Working => {}
                TaskPayload::InputRequired { input_requests } => {
                    let asked = InputRequiredResult::from_input_requests(input_requests);
                    let round = self.fulfil(asked, ctx).await?;
                    let responses = round.input_responses.unwrap_or_default();
                    let update = || {
                        ClientRequest::UpdateTaskRequest(UpdateTaskRequest::new(UpdateTaskParams::new(
                            id.clone(),
                            responses.clone(),
                        )))
                    };
                    self.request(What::Task("tasks/update"), &update, ctx).await?;
                }
                TaskPayload::Completed { result } => {
                    return serde_json::from_value::<CallToolResult>(serde_json::Value::Object(result))
                        .map(ServerResult::CallToolResult)
                        .map_err(|e| {
                            RequestError::Failed(format!(
                                "task {id} completed with an unreadable result: {e}"
                            ))
                        });
                }
                TaskPayload::Failed { error } => {
                    let message = error
                        .get("message")
                        .and_then(serde_json::Value::as_str)
                        .map_or_else(
                            || serde_json::Value::Object(error.clone()).to_string(),
                            str::to_owned,
                        );
                    return Err(RequestError::Server(format!("task {id} failed: {message}")));
                }
                TaskPayload::Cancelled => {
                    return Err(RequestError::Server(format!(
                        "task {id} was cancelled by the server"
                    )));
                }
                // A status this version does not know: keep polling until a known end.
                #[allow(unreachable_patterns)]
                _ => {}
            }
        }
    }

    /// Send `tasks/cancel` for `id`, bounded; a failure is logged (the call
    /// is ending either way).
    async fn cancel_task(&self, id: &str) {
        let Some(conn) = self.current() else { return };
        let request = ClientRequest::CancelTaskRequest(CancelTaskRequest::new(CancelTaskParams::new(id)));
        let options = rmcp::service::PeerRequestOptions::with_timeout(CANCEL_TIMEOUT);
        let sent = async {
            conn.peer
                .send_request_with_option(request, options)
                .await?
                .await_response()
                .await
        };
        if let Err(e) = sent.await {
            tracing::warn!(server = %self.config.name, task = %id, error = %e, "tasks/cancel failed");
        }
    }
}

/// The server's poll interval, clamped (see the module docs).
fn poll_interval(ms: Option<u64>) -> Duration {
    ms.map_or(DEFAULT_POLL_INTERVAL, Duration::from_millis)
        .clamp(MIN_POLL_INTERVAL, MAX_POLL_INTERVAL)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poll_intervals_are_clamped() {
        assert_eq!(poll_interval(None), DEFAULT_POLL_INTERVAL);
        assert_eq!(poll_interval(Some(0)), MIN_POLL_INTERVAL);
        assert_eq!(poll_interval(Some(250)), Duration::from_millis(250));
        assert_eq!(poll_interval(Some(u64::MAX)), MAX_POLL_INTERVAL);
    }
}
