//! The approval gate a call passes before it runs (see [`crate::approval`]).

use tokio_util::sync::CancellationToken;

use super::emit::Emitter;
use super::events::AgentEvent;
use crate::approval::{
    ApprovalChannel, ApprovalDecision, ApprovalRequest, ApprovalResponder, ApprovalTier, Approvals,
};

/// Why a call may not run.
pub(crate) struct Refusal {
    /// The result text the model gets.
    pub message: String,
    /// For accounting: `denied` or `cancelled`.
    pub details: &'static str,
}

/// Ask for approval when the call's tier requires it. `Ok` means run it.
pub(crate) async fn pass(
    approvals: &Approvals,
    emit: &Emitter,
    request: ApprovalRequest,
    cancel: &CancellationToken,
) -> Result<(), Refusal> {
    if request.tier == ApprovalTier::Auto
        || (request.tier == ApprovalTier::Session && approvals.session.is_approved(&request.tool))
    {
        return Ok(());
    }
    let (responder, answer) = ApprovalResponder::new();
    // A closed receiver means nobody listens; then only an approver (or the
    // timeout) can answer.
    let _ = emit
        .send(AgentEvent::ApprovalRequested {
            call_id: request.call_id.clone(),
            tool: request.tool.clone(),
            input: request.input.clone(),
            responder: responder.clone(),
        })
        .await;
    let from_approver = async {
        match &approvals.channel {
            ApprovalChannel::Approver(approver) => approver.decide(&request).await,
            ApprovalChannel::Events => std::future::pending().await,
        }
    };
    let from_events = async {
        match answer.await {
            Ok(decision) => decision,
            // Every responder was dropped unanswered: wait for the timeout.
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
            return Err(Refusal {
                message: "The tool call was cancelled while waiting for approval.".into(),
                details: "cancelled",
            });
        }
        d = from_approver => d,
        d = from_events => d,
        _ = tokio::time::sleep(timeout) => ApprovalDecision::Deny {
            reason: format!("no answer within {timeout:?}"),
        },
    };
    // The event's responder is now moot; a late answer is ignored.
    drop(responder);
    let (approved, reason) = match &decision {
        ApprovalDecision::Approve => (true, None),
        ApprovalDecision::ApproveForSession => {
            approvals.session.approve(&request.tool);
            (true, None)
        }
        ApprovalDecision::Deny { reason } => (false, Some(reason.clone())),
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
        Some(reason) => Err(Refusal {
            message: format!(
                "The user denied this call to {}: {reason}. It was not run. Do not retry it unless the user \
                 asks; continue without it or ask the user.",
                request.tool
            ),
            details: "denied",
        }),
    }
}
