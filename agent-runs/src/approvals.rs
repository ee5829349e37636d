//! Who decides a run's calls that need a person: a background run pauses
//! for them ([`background_approvals`]); a request that waits for its answer
//! cannot, and denies them with a reason the model reads
//! ([`foreground_approvals`]).
//!
//! Invariant: an approver the application gave decides as it does anywhere;
//! only the calls that would ask a person through events, or pause, are
//! rerouted.

use loopwright_core::{ApprovalDecision, agent::AgentOptions, approval::ApprovalRequest, approval::Approver};

/// Refuses, on a surface that cannot pause, the calls a person would be
/// asked about.
struct NobodyToAsk;

/// What the model is told when a call needed a person on a surface that
/// cannot pause.
pub(crate) const NOBODY_TO_ASK: &str = "this call needs a person's approval, and this request cannot wait for one \
     (start a background run, POST /v1/agents/{name}/runs, to have calls approved)";

#[async_trait::async_trait]
impl Approver for NobodyToAsk {
    async fn decide(&self, _request: &ApprovalRequest) -> ApprovalDecision {
        ApprovalDecision::deny(NOBODY_TO_ASK)
    }
}

/// A background run's approvals: calls that would ask a person through
/// events (nobody reads them here) pause the run instead; an approver the
/// application gave decides as it does anywhere.
pub(crate) fn background_approvals(mut options: AgentOptions) -> AgentOptions {
    if let Some(approvals) = options.approvals.take() {
        options.approvals = Some(if approvals.is_via_events() {
            approvals.deferred()
        } else {
            approvals
        });
    }
    options
}

/// A synchronous request's approvals: calls that would pause or ask
/// through events are denied, with a reason the model reads.
///
/// ```
/// use loopwright_core::agent::AgentOptions;
/// let options = loopwright_runs::shared::foreground_approvals(AgentOptions::default());
/// assert!(options.approvals.is_none());
/// ```
pub fn foreground_approvals(mut options: AgentOptions) -> AgentOptions {
    if let Some(approvals) = options.approvals.take() {
        options.approvals = Some(if approvals.is_deferred() || approvals.is_via_events() {
            approvals.route_to(NobodyToAsk)
        } else {
            approvals
        });
    }
    options
}
