//! The approval gate a call passes before it runs (see [`crate::approval`]).

use loopwright_types::ToolOutput;
use tokio_util::sync::CancellationToken;

use super::emit::Emitter;
use super::events::AgentEvent;
use crate::approval::{
    ApprovalChannel, ApprovalDecision, ApprovalRequest, ApprovalResponder, ApprovalTier, Approvals,
};

/// The denial reason when the `approval_requested` event was dropped without
/// an answer and no approver is installed.
pub(crate) const NOBODY_ANSWERS: &str = "nobody can answer: the approval request was dropped unanswered (answer \
each approval_requested event through its responder, or install an Approver)";

/// Why a call does not run, and the result it gets instead.
#[derive(Debug, Clone)]
pub(crate) struct Refusal {
    /// The result the model gets: why it was refused (an error), or the
    /// output given in its place ([`ApprovalDecision::Output`]).
    pub output: ToolOutput,
    /// For accounting: `denied`, `cancelled` or `answered`.
    pub details: &'static str,
}

impl Refusal {
    /// An error result saying why.
    pub(crate) fn error(message: impl Into<String>, details: &'static str) -> Self {
        Self {
            output: ToolOutput::error(message),
            details,
        }
    }

    /// The output a decision gave in the call's place.
    pub(crate) fn answered(output: ToolOutput) -> Self {
        Self {
            output,
            details: ANSWERED,
        }
    }
}

/// The accounting `details` of a call answered by a decision's output.
pub(crate) const ANSWERED: &str = "answered";

/// What the gate says of a call.
pub(crate) enum Verdict {
    /// Run it.
    Run,
    /// Do not run it: the model is told why.
    Refused(Refusal),
    /// Nobody is asked now ([`Approvals::defer`]): the run pauses.
    Deferred(ApprovalRequest),
}

/// Ask for approval when the call's tier requires it.
pub(crate) async fn pass(
    approvals: &Approvals,
    emit: &Emitter,
    request: ApprovalRequest,
    cancel: &CancellationToken,
) -> Verdict {
    if !needs_asking(approvals, &request) {
        return Verdict::Run;
    }
    if approvals.is_deferred() {
        return Verdict::Deferred(request);
    }
    match ask(approvals, emit, request, cancel).await {
        Ok(()) => Verdict::Run,
        Err(refusal) => Verdict::Refused(refusal),
    }
}

/// The `approval_requested` event of `request`, answered through
/// `responder`.
pub(crate) fn requested(request: &ApprovalRequest, responder: ApprovalResponder) -> AgentEvent {
    AgentEvent::ApprovalRequested {
        call_id: request.call_id.clone(),
        tool: request.tool.clone(),
        input: request.input.clone(),
        responder,
    }
}

/// Whether the call's tier asks (not auto, nor a tool approved for the
/// session).
pub(crate) fn needs_asking(approvals: &Approvals, request: &ApprovalRequest) -> bool {
    !(request.tier == ApprovalTier::Auto
        || (request.tier == ApprovalTier::Session && approvals.session.is_approved(&request.tool)))
}

/// Ask through the channel and wait for the answer (or the timeout).
async fn ask(
    approvals: &Approvals,
    emit: &Emitter,
    request: ApprovalRequest,
    cancel: &CancellationToken,
) -> Result<(), Refusal> {
    // The event holds the only responder: once every copy of the event is
    // dropped unanswered (the run awaited without reading its events, or a
    // reader that ignores it), the answer channel closes and nobody can
    // answer any more. An event still waiting unread in the channel keeps
    // its responder, so the call waits for the reader (or the timeout).
    let (responder, answer) = ApprovalResponder::new();
    let _ = emit.send(requested(&request, responder)).await;
    let events_only = matches!(approvals.channel, ApprovalChannel::Events);
    let from_approver = async {
        match &approvals.channel {
            ApprovalChannel::Approver(approver) => approver.decide(&request).await,
            ApprovalChannel::Events | ApprovalChannel::Deferred => std::future::pending().await,
        }
    };
    let from_events = async {
        match answer.await {
            Ok(decision) => decision,
            // Every responder was dropped unanswered: with no approver
            // either, nobody can answer, so deny now rather than at the
            // timeout.
            Err(_) if events_only => ApprovalDecision::Deny {
                reason: NOBODY_ANSWERS.into(),
            },
            Err(_) => std::future::pending().await,
        }
    };
    let timeout = approvals.timeout;
    let decision = tokio::select! {
        biased;
        _ = cancel.cancelled() => {
            // Close the application's prompt: nothing will answer it now.
            let _ = emit
                .send(AgentEvent::ApprovalResolved {
                    call_id: request.call_id.clone(),
                    approved: false,
                    reason: Some("cancelled".into()),
                })
                .await;
            return Err(Refusal::error("The tool call was cancelled while waiting for approval.", "cancelled"));
        }
        d = from_approver => d,
        d = from_events => d,
        _ = tokio::time::sleep(timeout) => ApprovalDecision::Deny {
            reason: format!("no answer within {timeout:?}"),
        },
    };
    resolve(approvals, emit, &request, decision).await
}

/// Apply a decision: remember a session approval, send `approval_resolved`,
/// and refuse a denied call (or one answered by its output).
pub(crate) async fn resolve(
    approvals: &Approvals,
    emit: &Emitter,
    request: &ApprovalRequest,
    decision: ApprovalDecision,
) -> Result<(), Refusal> {
    let (approved, reason) = match &decision {
        ApprovalDecision::Approve => (true, None),
        ApprovalDecision::ApproveForSession => {
            approvals.session.approve(&request.tool);
            (true, None)
        }
        ApprovalDecision::Deny { reason } => (false, Some(reason.clone())),
        ApprovalDecision::Output { output } => {
            let _ = emit
                .send(AgentEvent::ApprovalResolved {
                    call_id: request.call_id.clone(),
                    approved: false,
                    reason: Some("answered in the tool's place".into()),
                })
                .await;
            return Err(Refusal::answered(output.clone()));
        }
    };
    let _ = emit
        .send(AgentEvent::ApprovalResolved {
            call_id: request.call_id.clone(),
            approved,
            reason: reason.clone(),
        })
        .await;
    match reason {
        None => Ok(()),
        Some(reason) => Err(denied(&request.tool, &reason)),
    }
}

/// The refusal of a call a person denied.
pub(crate) fn denied(tool: &str, reason: &str) -> Refusal {
    Refusal::error(
        format!(
            "The user denied this call to {tool}: {reason}. It was not run. Do not retry it unless the user \
             asks; continue without it or ask the user."
        ),
        "denied",
    )
}
